#include "program.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace carom::server {

void use_stderr_logger(const std::string& name) {
  spdlog::set_default_logger(spdlog::stderr_color_mt(name));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

void write_port_file(const std::string& file, std::uint16_t port) {
  if (file.empty()) return;
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::filesystem::rename(tmp, file);
}

StopSignals::StopSignals() : signals_(io_, SIGINT, SIGTERM) {
  std::signal(SIGPIPE, SIG_IGN);
  signals_.async_wait([this](const boost::system::error_code& error, int number) {
    if (!error) signal_ = number;
  });
}

int StopSignals::wait() {
  io_.run();
  return signal_;
}

const char* StopSignals::name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

}  // namespace carom::server
