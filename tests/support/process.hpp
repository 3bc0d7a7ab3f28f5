#pragma once
// Real processes for the end-to-end suites: a child process with its output
// in files (Child), and carom-server itself on a free port (ServerProcess),
// the one way every C++ end-to-end test starts a server. Header-only: each
// suite passes its own binary path (CAROM_SERVER_BIN).

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace carom::test {

/// Descriptors this process has open (leak checks).
inline std::size_t open_fds() {
  std::size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/// This process's resident memory, bytes.
inline std::size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/// The whole of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A child process: argv[0] run with stdin from /dev/null, stdout and stderr
/// into files, the environment plus `env` ("NAME=value" entries override),
/// every other descriptor closed but `keep_fd`. Killed (SIGKILL) when
/// destroyed while running.
class Child {
 public:
  Child() = default;
  Child(std::vector<std::string> args, const std::filesystem::path& out, const std::filesystem::path& err,
        std::vector<std::string> env = {}, int keep_fd = -1)
      : out_(out), err_(err) {
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      const bool overridden = std::any_of(env.begin(), env.end(),
                                          [&](const std::string& x) { return x.substr(0, x.find('=')) == name; });
      if (!overridden) environment.push_back(entry);
    }
    environment.insert(environment.end(), env.begin(), env.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      for (int fd = 3; fd < 1024; ++fd)
        if (fd != keep_fd) ::close(fd);
      std::vector<char*> argv, envp;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      for (auto& v : environment) envp.push_back(v.data());
      envp.push_back(nullptr);
      ::execve(argv[0], argv.data(), envp.data());
      std::_Exit(127);
    }
  }
  Child(Child&& other) noexcept { *this = std::move(other); }
  Child& operator=(Child&& other) noexcept {
    std::swap(pid_, other.pid_);
    std::swap(status_, other.status_);
    std::swap(out_, other.out_);
    std::swap(err_, other.err_);
    return *this;
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  /// Exit status (128 + signal when killed); -1, and the child killed, when
  /// it did not exit within `seconds`.
  int wait(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }
  /// False once it has exited (its status kept for wait()).
  bool running() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) != pid_) return pid_ > 0;
    pid_ = -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::filesystem::path out_, err_;
};

/// carom-server (`binary`) with `args` plus --port PORT (0: any free one)
/// --port-file, its output in `dir`; the constructor waits (up to 10 s) until
/// it listens, unless `wait_listen` is false (a server expected to refuse
/// its command line). port() is 0 when it never listened.
class ServerProcess {
 public:
  ServerProcess(const std::string& binary, const std::filesystem::path& dir, std::vector<std::string> args,
                std::uint16_t port = 0, bool wait_listen = true) {
    const int n = counter_++;
    port_file_ = dir / ("server-port-" + std::to_string(n));
    std::filesystem::remove(port_file_);
    std::vector<std::string> argv{binary};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--port", std::to_string(port), "--port-file", port_file_.string()});
    child_ = Child(argv, dir / ("server-" + std::to_string(n) + ".out"), dir / ("server-" + std::to_string(n) + ".err"));
    if (!wait_listen) return;
    for (int i = 0; i < 400 && !std::filesystem::exists(port_file_) && child_.running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::ifstream(port_file_) >> port_;
  }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Child& child() { return child_; }
  /// What it wrote to stderr (its log).
  std::string log() const { return child_.err(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path port_file_;
  Child child_;
  std::uint16_t port_ = 0;
};

}  // namespace carom::test
