// The carom-server binary itself: command line, SIGTERM with Goodbye, the
// state file surviving a restart, refusing an open bind without a token.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "carom/client/connection.hpp"
#include "support/process.hpp"

namespace carom {
namespace {

namespace fs = std::filesystem;

// carom-server with `args` on a free port (tests/support/process.hpp), its
// files in this process's own temporary directory.
class ServerProcess : public test::ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args, bool expect_listen = true)
      : test::ServerProcess(CAROM_SERVER_BIN, dir(), std::move(args), 0, expect_listen) {}
  void signal(int sig) { child().signal(sig); }
  /// Exit status, or -1 (and the server killed) when it did not exit in time.
  int wait_exit(double seconds) { return child().wait(seconds); }

 private:
  static fs::path dir() {
    const fs::path d = fs::temp_directory_path() / ("carom-server-process-test-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }
};

client::Connection connect(std::uint16_t port, v1::Role role) {
  client::Connection c;
  v1::Hello hello;
  hello.set_role(role);
  hello.set_client_name("server_process_test");
  EXPECT_TRUE(c.connect({"127.0.0.1", port}, hello)) << c.error();
  return c;
}

v1::CommandResult call(client::Connection& c, v1::Command command) {
  v1::CommandResult r;
  EXPECT_TRUE(c.call(std::move(command), &r)) << c.error();
  EXPECT_EQ(r.code(), v1::OK) << r.message();
  return r;
}

TEST(ServerProcess, SigtermSaysGoodbyeSavesAndTheStateComesBack) {
  const fs::path state = fs::temp_directory_path() / ("carom-state-" + std::to_string(::getpid()) + ".pb");
  fs::remove(state);
  std::uint64_t hash = 0;
  {
    ServerProcess server({"--state", state.string(), "--threads", "1"});
    ASSERT_NE(server.port(), 0) << server.log();
    client::Connection ctl = connect(server.port(), v1::ROLE_CONTROLLER);
    v1::Command spawn;
    v1::RandomBoxGenerator& g = *spawn.mutable_spawn()->add_generators()->mutable_random_box();
    g.mutable_min()->set_x(5);
    g.mutable_min()->set_y(5);
    g.mutable_max()->set_x(95);
    g.mutable_max()->set_y(95);
    g.set_count(500);
    g.mutable_radius()->set_min(0.3);
    g.mutable_radius()->set_max(0.8);
    g.mutable_speed()->set_min(1);
    g.mutable_speed()->set_max(5);
    g.set_seed(7);
    call(ctl, spawn);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // some ticks with motion
    v1::Command pause;
    pause.mutable_pause();
    call(ctl, pause);
    v1::Command get;
    get.mutable_get_world();
    hash = call(ctl, get).world().state_hash();
    ASSERT_NE(hash, 0u);
    client::Connection viewer = connect(server.port(), v1::ROLE_VIEWER);
    server.signal(SIGTERM);
    v1::ServerMessage m;
    bool goodbye = false;
    while (viewer.receive(&m, 5.0)) goodbye = goodbye || m.has_goodbye();
    EXPECT_TRUE(goodbye) << viewer.error();
    EXPECT_EQ(server.wait_exit(10.0), 0) << server.log();
    EXPECT_NE(server.log().find("saved the world"), std::string::npos) << server.log();
  }
  ASSERT_TRUE(fs::exists(state));
  // What a save killed half-way leaves: a temporary of a process that is gone
  // (removed at start), and one of a live process (left alone).
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const fs::path dead_tmp = state.string() + ".tmp." + std::to_string(gone);
  const fs::path live_tmp = state.string() + ".tmp." + std::to_string(::getpid());
  for (const fs::path& p : {dead_tmp, live_tmp}) std::ofstream(p) << "half a save";
  ServerProcess again({"--state", state.string(), "--threads", "2"});
  ASSERT_NE(again.port(), 0) << again.log();
  EXPECT_FALSE(fs::exists(dead_tmp)) << again.log();
  EXPECT_TRUE(fs::exists(live_tmp));
  EXPECT_NE(again.log().find("left by an interrupted save"), std::string::npos) << again.log();
  fs::remove(live_tmp);
  client::Connection ctl = connect(again.port(), v1::ROLE_CONTROLLER);
  EXPECT_TRUE(ctl.welcome().paused());
  v1::Command get;
  get.mutable_get_world();
  const v1::CommandResult r = call(ctl, get);
  EXPECT_EQ(r.world().state_hash(), hash);
  EXPECT_EQ(r.world().id_size(), 500);
  fs::remove(state);
}

// A state file that does not load never costs the user the file: by default
// the server refuses to start and leaves it untouched; with
// --state-on-error empty it keeps it aside, says why, and starts without it.
TEST(ServerProcess, AStateFileThatDoesNotLoadIsKeptAndTheLogSaysWhy) {
  const fs::path dir = fs::temp_directory_path() / ("carom-bad-state-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path state = dir / "world.pb";
  const std::string garbage = "this is not a saved world";
  std::ofstream(state) << garbage;
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  {
    ServerProcess refused({"--state", state.string()}, false);
    EXPECT_EQ(refused.wait_exit(10.0), 1);
    EXPECT_NE(refused.log().find("world.pb: not a carom SavedWorld file"), std::string::npos) << refused.log();
    EXPECT_EQ(read(state), garbage);
  }
  {
    ServerProcess started({"--state", state.string(), "--state-on-error", "empty"});
    ASSERT_NE(started.port(), 0) << started.log();
    EXPECT_NE(started.log().find("not a carom SavedWorld file; kept as"), std::string::npos) << started.log();
    fs::path aside;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("world.pb.failed-", 0) == 0) aside = e.path();
    ASSERT_FALSE(aside.empty()) << started.log();
    EXPECT_EQ(read(aside), garbage);
    // The next save writes a good world beside it; the failed one stays.
    started.signal(SIGTERM);
    EXPECT_EQ(started.wait_exit(10.0), 0) << started.log();
    EXPECT_TRUE(fs::exists(state));
    EXPECT_EQ(read(aside), garbage);
  }
  ServerProcess again({"--state", state.string()});
  EXPECT_NE(again.port(), 0) << again.log();
  EXPECT_NE(again.log().find("loaded"), std::string::npos) << again.log();
  fs::remove_all(dir);
}

TEST(ServerProcess, RefusesAnOpenBindWithoutAToken) {
  ServerProcess server({"--bind", "0.0.0.0"}, false);
  EXPECT_EQ(server.wait_exit(10.0), 1);
  EXPECT_NE(server.log().find("--token"), std::string::npos) << server.log();
}

TEST(ServerProcess, ScenarioErrorsNameFileAndLine) {
  const fs::path bad = fs::temp_directory_path() / ("carom-bad-" + std::to_string(::getpid()) + ".txtpb");
  std::ofstream(bad) << "name: \"bad\"\n"
                        "bodies { position { x: 1 y: 1 } radius: 0.5 }\n"
                        "bodies { position { x: 5 y: 5 } radius: -2 }\n";
  ServerProcess server({"--scenario", bad.string()}, false);
  EXPECT_EQ(server.wait_exit(10.0), 1);
  const std::string log = server.log();
  EXPECT_NE(log.find(bad.string() + ":3"), std::string::npos) << log;
  EXPECT_NE(log.find("radius"), std::string::npos) << log;
  fs::remove(bad);
}

// The field at fault travels as data, end to end: a bad body of a spawn over
// real TCP comes back with its path in CommandResult.field, which the
// message starts with, and the connection stays open.
TEST(ServerProcess, ARefusedSpawnNamesTheBodysField) {
  ServerProcess server({"--threads", "1"});
  ASSERT_NE(server.port(), 0) << server.log();
  client::Connection ctl = connect(server.port(), v1::ROLE_CONTROLLER);
  v1::Command spawn;
  for (const double radius : {0.5, 0.5, 0.5, -1.0}) {
    v1::Body& b = *spawn.mutable_spawn()->add_bodies();
    b.mutable_position()->set_x(10.0 + 5.0 * spawn.spawn().bodies_size());
    b.mutable_position()->set_y(10.0);
    b.set_radius(radius);
  }
  spawn.set_request_id(7);
  v1::CommandResult r;
  ASSERT_TRUE(ctl.call(spawn, &r)) << ctl.error();
  EXPECT_EQ(r.code(), v1::INVALID_ARGUMENT) << r.message();
  EXPECT_EQ(r.field(), "spawn.bodies[3].radius");
  EXPECT_EQ(r.message(), "spawn.bodies[3].radius: must be finite and > 0, got -1");
  // A generated body has no path of its own: its generator is named.
  v1::Command grid;
  v1::GridGenerator& g = *grid.mutable_spawn()->add_generators()->mutable_grid();
  g.mutable_origin()->set_x(10);
  g.mutable_origin()->set_y(10);
  g.set_columns(2);
  g.set_rows(2);
  g.set_spacing(2);
  g.set_radius(0.5);
  g.set_mass(-3);
  ASSERT_TRUE(ctl.call(grid, &r)) << ctl.error();
  EXPECT_EQ(r.code(), v1::INVALID_ARGUMENT) << r.message();
  EXPECT_EQ(r.field(), "spawn.generators[0].grid");
  v1::Command ping;
  ping.mutable_ping();
  EXPECT_EQ(call(ctl, ping).field(), "");
}

// --fixed-threads keeps every step on the workers. Without it the world
// now and then runs a few steps on one thread to time them (from its 33rd
// step or so, two steps at least each time), or runs there for good: a
// server asked for its stats every 5 ms for 2.5 s (150 ticks) shows steps
// on one thread without the flag and none with it.
TEST(ServerProcess, FixedThreadsKeepEveryStepOnTheWorkers) {
  for (const bool fixed : {true, false}) {
    std::vector<std::string> args{"--threads", "2"};
    if (fixed) args.push_back("--fixed-threads");
    ServerProcess server(args);
    ASSERT_NE(server.port(), 0) << server.log();
    client::Connection ctl = connect(server.port(), v1::ROLE_CONTROLLER);
    v1::Command spawn;
    v1::GridGenerator& g = *spawn.mutable_spawn()->add_generators()->mutable_grid();
    g.mutable_origin()->set_x(5);
    g.mutable_origin()->set_y(5);
    g.set_columns(20);
    g.set_rows(20);
    g.set_spacing(1.2);
    g.set_radius(0.5);
    ASSERT_EQ(call(ctl, spawn).code(), v1::OK);
    v1::Command stats;
    stats.mutable_get_stats();
    std::uint64_t last_tick = 0;
    int on_one = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const v1::CommandResult r = call(ctl, stats);
      ASSERT_EQ(r.code(), v1::OK) << r.message();
      if (r.stats().tick() == last_tick) continue;  // no new step
      last_tick = r.stats().tick();
      ASSERT_GE(r.stats().step_threads(), 1u) << "tick " << last_tick;
      ASSERT_LE(r.stats().step_threads(), 2u) << "tick " << last_tick;
      on_one += r.stats().step_threads() == 1 ? 1 : 0;
    }
    EXPECT_GT(last_tick, 100u) << "the server stepped too little to tell";
    if (fixed) {
      EXPECT_EQ(on_one, 0) << "steps on one thread with --fixed-threads";
    } else {
      EXPECT_GT(on_one, 0) << "no step on one thread seen without --fixed-threads";
    }
  }
}

}  // namespace
}  // namespace carom
