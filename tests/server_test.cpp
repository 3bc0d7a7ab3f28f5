// The real carom-server (the Server object main() runs) over real loopback
// TCP on ephemeral ports, driven by the real client library.

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "support/commands.hpp"
#include "support/process.hpp"

#include "carom/client/connection.hpp"
#include "carom/client/names.hpp"
#include "carom/proto/compact.hpp"
#include "convert.hpp"
#include "server.hpp"
#include "sim_state.hpp"
#include "snapshot.hpp"
#include "tick_times.hpp"
#include <spdlog/spdlog.h>

namespace carom {
namespace {

using client::Connection;
using Clock = std::chrono::steady_clock;

using test::open_fds;
using test::rss_bytes;
v1::Command spawn_grid(std::uint32_t columns, std::uint32_t rows, double vx = 1.0, double spacing = 1.0) {
  v1::Command c;
  v1::GridGenerator& g = *c.mutable_spawn()->add_generators()->mutable_grid();
  g.mutable_origin()->set_x(2.0);
  g.mutable_origin()->set_y(2.0);
  g.set_columns(columns);
  g.set_rows(rows);
  g.set_spacing(spacing);
  g.set_radius(0.25);
  g.mutable_velocity()->set_x(vx);
  g.mutable_velocity()->set_y(0.5 * vx);
  return c;
}

using test::spawn_body;

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }
  void start(server::ServerOptions o = {}) {
    o.port = 0;
    o.threads = o.threads == 0 ? 1 : o.threads;
    server_ = std::make_unique<server::Server>(o);
    const Status s = server_->start();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void TearDown() override {
    if (server_) server_->stop("test over");
  }
  client::Address address() const { return {"127.0.0.1", server_->port()}; }

  ::testing::AssertionResult connect(Connection& c, v1::Role role, const std::string& token = {},
                                     const v1::SnapshotWishes* wishes = nullptr) {
    v1::Hello hello;
    hello.set_role(role);
    hello.set_token(token);
    hello.set_client_name("server_test");
    if (wishes != nullptr) *hello.mutable_wishes() = *wishes;
    if (!c.connect(address(), hello)) return ::testing::AssertionFailure() << c.error();
    return ::testing::AssertionSuccess();
  }

  // The next snapshot (skipping other messages).
  static ::testing::AssertionResult next_snapshot(Connection& c, v1::Snapshot* out, double timeout = 5.0) {
    v1::ServerMessage m;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    while (Clock::now() < deadline) {
      if (!c.receive(&m, timeout)) return ::testing::AssertionFailure() << c.error();
      if (m.has_snapshot()) {
        *out = std::move(*m.mutable_snapshot());
        return ::testing::AssertionSuccess();
      }
    }
    return ::testing::AssertionFailure() << "no snapshot in time";
  }

  v1::CommandResult call(Connection& c, v1::Command command) {
    v1::CommandResult r;
    EXPECT_TRUE(c.call(std::move(command), &r)) << c.error();
    return r;
  }

  static v1::Command command_of(void (*set)(v1::Command&)) {
    v1::Command c;
    set(c);
    return c;
  }

  // The server's current state hash and tick, through a fresh controller.
  std::pair<std::uint64_t, std::uint32_t> world_hash_and_size() {
    Connection c;
    EXPECT_TRUE(connect(c, v1::ROLE_CONTROLLER));
    v1::Command get;
    get.mutable_get_world();
    const v1::CommandResult r = call(c, get);
    EXPECT_EQ(r.code(), v1::OK) << r.message();
    return {r.world().state_hash(), static_cast<std::uint32_t>(r.world().id_size())};
  }

  std::unique_ptr<server::Server> server_;
};

TEST_F(ServerTest, EightViewersSeeIncreasingTicksAndTheSameHashPerTick) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(20, 20)).code(), v1::OK);

  constexpr int kViewers = 8;
  std::vector<Connection> viewers(kViewers);
  for (auto& v : viewers) ASSERT_TRUE(connect(v, v1::ROLE_VIEWER));
  std::map<std::uint64_t, std::uint64_t> hash_at;  // tick -> hash, from whoever saw it first
  for (auto& v : viewers) {
    std::uint64_t last = 0;
    for (int i = 0; i < 30; ++i) {
      v1::Snapshot s;
      ASSERT_TRUE(next_snapshot(v, &s));
      EXPECT_GT(s.tick(), last);
      last = s.tick();
      EXPECT_EQ(s.id_size(), 400);
      const auto [it, fresh] = hash_at.emplace(s.tick(), s.state_hash());
      EXPECT_EQ(it->second, s.state_hash()) << "tick " << s.tick();
    }
  }
  // The viewers overlapped in time, so ticks were seen by several of them.
  EXPECT_LT(hash_at.size(), static_cast<std::size_t>(kViewers * 30));
}

TEST_F(ServerTest, SpawnAppearsInTheSnapshotOfTheReportedTick) {
  start();
  Connection viewer, ctl;
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER));
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  const v1::CommandResult r = call(ctl, spawn_body(50, 60, 2.0));
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  ASSERT_EQ(r.spawned().ids_size(), 1);
  const std::uint32_t id = r.spawned().ids(0);
  for (;;) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(viewer, &s));
    const bool present = std::find(s.id().begin(), s.id().end(), id) != s.id().end();
    if (s.tick() < r.tick()) {
      EXPECT_FALSE(present) << "tick " << s.tick() << " is before the reported tick " << r.tick();
      continue;
    }
    ASSERT_EQ(s.tick(), r.tick()) << "the snapshot of the reported tick was not seen";
    EXPECT_TRUE(present);
    break;
  }
}

TEST_F(ServerTest, PauseStepResumeAdvanceExactlyNTicksAndSaveLoadKeepsTheHash) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(10, 10, 3.0)).code(), v1::OK);
  v1::Command pause;
  pause.mutable_pause();
  const v1::CommandResult paused = call(ctl, pause);
  ASSERT_EQ(paused.code(), v1::OK);
  // While paused, ticks stand still.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  v1::Command stats;
  stats.mutable_get_stats();
  const std::uint64_t t0 = call(ctl, stats).stats().tick();
  EXPECT_EQ(t0, paused.tick());
  v1::Command step;
  step.mutable_step()->set_count(7);
  const v1::CommandResult stepped = call(ctl, step);
  ASSERT_EQ(stepped.code(), v1::OK) << stepped.message();
  EXPECT_EQ(stepped.tick(), t0 + 7);
  EXPECT_EQ(call(ctl, stats).stats().tick(), t0 + 7);

  v1::Command save;
  save.mutable_save_world();
  const v1::CommandResult saved = call(ctl, save);
  ASSERT_EQ(saved.code(), v1::OK);
  ASSERT_EQ(saved.world().id_size(), 100);
  // Change the world, then load the save back: the same hash.
  step.mutable_step()->set_count(5);
  ASSERT_EQ(call(ctl, step).code(), v1::OK);
  EXPECT_NE(world_hash_and_size().first, saved.world().state_hash());
  v1::Command load;
  *load.mutable_load_world()->mutable_world() = saved.world();
  const v1::CommandResult loaded = call(ctl, load);
  ASSERT_EQ(loaded.code(), v1::OK) << loaded.message();
  EXPECT_EQ(world_hash_and_size().first, saved.world().state_hash());

  v1::Command resume;
  resume.mutable_resume();
  ASSERT_EQ(call(ctl, resume).code(), v1::OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GT(call(ctl, stats).stats().tick(), t0 + 12);
  // Step is refused while running.
  step.mutable_step()->set_count(1);
  EXPECT_EQ(call(ctl, step).code(), v1::FAILED_PRECONDITION);
}

TEST_F(ServerTest, StoppedViewerDoesNotSlowTheTickOrOtherViewersAndMemoryStaysBounded) {
  server::ServerOptions o;
  o.tick_hz = 60;
  start(o);
  Connection ctl, fast;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(100, 60, 2.0, 0.9)).code(), v1::OK);  // 6000 bodies: ~100 kB snapshots
  // The stalled viewer: a Hello, then never reads again.
  Connection stalled;
  ASSERT_TRUE(connect(stalled, v1::ROLE_VIEWER));
  const int small = 4096;
  setsockopt(stalled.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_TRUE(connect(fast, v1::ROLE_VIEWER));
  v1::Command stats;
  stats.mutable_get_stats()->set_reset_timing(true);
  const v1::Stats before = call(ctl, stats).stats();
  const std::size_t rss_before = rss_bytes();
  const auto t_start = Clock::now();
  std::uint64_t first = 0, last = 0, received = 0;
  double worst_gap = 0;
  auto previous = Clock::now();
  v1::Snapshot s;
  while (Clock::now() - t_start < std::chrono::seconds(10)) {
    ASSERT_TRUE(next_snapshot(fast, &s));
    const auto now = Clock::now();
    if (received > 0) worst_gap = std::max(worst_gap, std::chrono::duration<double>(now - previous).count());
    previous = now;
    if (first == 0) first = s.tick();
    last = s.tick();
    ++received;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  stats.mutable_get_stats()->set_reset_timing(false);
  const v1::Stats after = call(ctl, stats).stats();
  const double rate = static_cast<double>(after.tick() - before.tick()) / seconds;
  EXPECT_NEAR(rate, 60.0, 60.0 * 0.02) << "tick rate with a stalled viewer";
  EXPECT_EQ(after.late_ticks(), 0u);
  // The fast viewer saw (nearly) every tick, with no long gap.
  EXPECT_GE(received, static_cast<std::uint64_t>(0.95 * static_cast<double>(last - first + 1)));
  EXPECT_LT(worst_gap, 0.25);
  // The stalled viewer's frames were replaced, not queued: ~600 snapshots of
  // ~100 kB would be 60 MB.
  EXPECT_GT(after.snapshots_skipped(), 100u);
  EXPECT_LT(rss_bytes(), rss_before + (16u << 20));
  // Snapshots carry the window's figures (at most a second old).
  EXPECT_GT(s.stats().ticks_measured(), 480u);
  EXPECT_LE(s.stats().ticks_measured(), after.ticks_measured());
  EXPECT_GT(s.stats().tick_p99_seconds(), 0.0);
  EXPECT_GE(s.stats().tick_max_seconds(), s.stats().tick_p99_seconds());
}

// The documented rule for a viewer that stops reading: below --stall-timeout
// it only skips frames, and when it reads again it gets the current world
// quickly; past the timeout it is disconnected (and counted out).
TEST_F(ServerTest, AStalledViewerSkipsFramesThenIsDisconnectedAtTheStallTimeout) {
  server::ServerOptions o;
  o.tick_hz = 60;
  o.stall_timeout_s = 3.0;
  start(o);
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(100, 60, 2.0, 0.9)).code(), v1::OK);  // ~100 kB snapshots
  const int small = 4096;
  Connection brief, gone;
  brief.set_compact(false);  // plain frames: a still grid must still fill the buffers
  gone.set_compact(false);
  ASSERT_TRUE(connect(brief, v1::ROLE_VIEWER));
  ASSERT_TRUE(connect(gone, v1::ROLE_VIEWER));
  setsockopt(gone.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  v1::Command stats;
  stats.mutable_get_stats();
  EXPECT_EQ(call(ctl, stats).stats().clients(), 3u);
  // `brief` stops reading for 1.5 s (its kernel buffers fill, then its frames
  // are replaced), then reads: past what the buffers held, a snapshot of the
  // current tick comes within half a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::uint64_t tick_now = call(ctl, stats).stats().tick();
  const auto resumed = Clock::now();
  v1::Snapshot s;
  do {
    ASSERT_TRUE(next_snapshot(brief, &s));
  } while (s.tick() < tick_now && Clock::now() - resumed < std::chrono::seconds(2));
  EXPECT_GE(s.tick(), tick_now);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - resumed).count(), 0.5);
  // `gone` never reads: after the 3 s timeout the server lets it go.
  const auto deadline = Clock::now() + std::chrono::seconds(6);
  std::uint32_t clients = 3;
  while (Clock::now() < deadline && clients == 3) {
    ASSERT_TRUE(next_snapshot(brief, &s));  // `brief` keeps reading meanwhile
    clients = call(ctl, stats).stats().clients();
  }
  EXPECT_EQ(clients, 2u) << "the stalled viewer was not disconnected";
  v1::ServerMessage m;
  bool closed = false;
  for (int k = 0; k < 100000 && !closed; ++k) closed = !gone.receive(&m, 2.0);
  EXPECT_TRUE(closed);
}

// Memory per connection is small until a session earns more: 1000 idle
// connections (no Hello yet) and 3000 refused past the cap leave the server's
// memory within 16 MiB of where it started once they are closed.
TEST_F(ServerTest, IdleAndRefusedConnectionsCostLittleMemory) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  getrlimit(RLIMIT_NOFILE, &lim);
  // Each idle connection holds two descriptors here (client and server side),
  // each refused one up to two while the server lingers on it.
  const std::size_t room = lim.rlim_cur > 600 ? static_cast<std::size_t>(lim.rlim_cur) - 400 : 200;
  const std::size_t idle_n = std::min<std::size_t>(1000, room / 6), refused_n = std::min<std::size_t>(3000, room / 3);
  server::ServerOptions o;
  o.max_clients = static_cast<std::uint32_t>(idle_n + 1);
  o.handshake_timeout_s = 120;
  start(o);
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  const std::size_t rss0 = rss_bytes();
  auto raw_connect = [&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  };
  std::vector<int> idle;
  for (std::size_t k = 0; k < idle_n; ++k) idle.push_back(raw_connect());
  v1::Command stats;
  stats.mutable_get_stats();
  for (int k = 0; k < 200 && call(ctl, stats).stats().clients() < idle_n + 1; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(call(ctl, stats).stats().clients(), idle_n + 1);
  for (std::size_t k = 0; k < refused_n; ++k) {
    const int fd = raw_connect();
    char buf[256];
    (void)::recv(fd, buf, sizeof buf, 0);  // the SERVER_FULL error
    ::close(fd);
  }
  for (const int fd : idle) ::close(fd);
  // The server notices the closes and the refused sessions' grace ends.
  for (int k = 0; k < 500 && call(ctl, stats).stats().clients() > 1; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::size_t rss1 = rss_bytes();
  std::printf("  %zu idle + %zu refused connections: RSS %+.1f MiB after they closed\n", idle_n, refused_n,
              (static_cast<double>(rss1) - static_cast<double>(rss0)) / (1 << 20));
  EXPECT_LT(rss1, rss0 + (16u << 20));
}

TEST_F(ServerTest, BadInputIsRefusedAndNothingElseChanges) {
  server::ServerOptions o;
  o.token = "sesame";
  start(o);
  Connection ctl, watcher;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER, "sesame"));
  ASSERT_TRUE(connect(watcher, v1::ROLE_VIEWER));
  ASSERT_EQ(call(ctl, spawn_grid(10, 10)).code(), v1::OK);
  v1::Command pause;
  pause.mutable_pause();
  ASSERT_EQ(call(ctl, pause).code(), v1::OK);
  v1::Command get;
  get.mutable_get_world();
  const std::uint64_t hash = call(ctl, get).world().state_hash();

  // Each raw attack on a fresh connection: an Error naming the problem, then close.
  const auto expect_error = [&](const std::string& bytes, v1::ErrorCode code, const std::string& words) {
    Connection raw;
    v1::Hello hello;
    hello.set_role(v1::ROLE_VIEWER);
    ASSERT_TRUE(raw.connect(address(), hello)) << raw.error();
    ASSERT_TRUE(raw.send_raw(bytes));
    v1::ServerMessage m;
    bool got_error = false;
    while (raw.receive(&m, 5.0)) {
      if (m.has_error()) {
        got_error = true;
        EXPECT_EQ(m.error().code(), code) << m.error().message();
        EXPECT_NE(m.error().message().find(words), std::string::npos) << m.error().message();
        EXPECT_EQ(m.error().field(), "") << "framing is about no field";
      }
    }
    EXPECT_TRUE(got_error) << "no Error for " << words;
    EXPECT_FALSE(raw.connected()) << "connection stayed open after " << words;
  };
  expect_error(std::string("\x05garbage\xff\xff\xff\xff", 12), v1::MALFORMED_FRAME, "not a ClientMessage");
  expect_error(std::string("\xff\xff\xff\xff\x0f", 5), v1::FRAME_TOO_LARGE, "over the limit");
  expect_error(std::string("\xff\xff\xff\xff\xff\xff", 6), v1::MALFORMED_FRAME, "varint32");
  {
    // A second Hello.
    v1::ClientMessage again;
    again.mutable_hello()->set_protocol_version(1);
    expect_error(proto::encode_frame(again), v1::PROTOCOL_VIOLATION, "second Hello");
  }
  {
    // A truncated frame, then the client leaves: nothing to answer, server fine.
    Connection raw;
    v1::Hello hello;
    hello.set_role(v1::ROLE_VIEWER);
    ASSERT_TRUE(raw.connect(address(), hello));
    ASSERT_TRUE(raw.send_raw(std::string("\x40\x12\x03", 3)));
    raw.close();
  }
  // Wrong version, wrong token, no token.
  for (const auto& [version, role, token, code] :
       {std::tuple{2u, v1::ROLE_VIEWER, "", v1::UNSUPPORTED_VERSION},
        std::tuple{1u, v1::ROLE_CONTROLLER, "open", v1::UNAUTHENTICATED},
        std::tuple{1u, v1::ROLE_CONTROLLER, "", v1::UNAUTHENTICATED}}) {
    Connection c;
    v1::Hello hello;
    hello.set_protocol_version(version);
    hello.set_role(role);
    hello.set_token(token);
    EXPECT_FALSE(c.connect(address(), hello));
    EXPECT_NE(c.error().find(client::code_name(code)), std::string::npos) << c.error();
  }
  // A snapshot rate that is no rate: refused with the field named (it was
  // silently "every snapshot").
  for (const double rate : {std::numeric_limits<double>::quiet_NaN(), -5.0, std::numeric_limits<double>::infinity()}) {
    Connection c;
    v1::Hello hello;
    hello.set_role(v1::ROLE_VIEWER);
    hello.mutable_wishes()->set_max_rate_hz(rate);
    EXPECT_FALSE(c.connect(address(), hello)) << rate;
    EXPECT_NE(c.error().find("INVALID_ARGUMENT"), std::string::npos) << c.error();
    EXPECT_NE(c.error().find("hello.wishes.max_rate_hz: must be finite and >= 0"), std::string::npos) << c.error();
  }
  // A refused Hello's Error names the field in `field` (the message starts
  // with it); one about no field (framing) leaves it empty.
  const auto hello_error = [&](const v1::Hello& hello) {
    Connection raw;
    EXPECT_TRUE(raw.open(address())) << raw.error();
    v1::ClientMessage m;
    *m.mutable_hello() = hello;
    EXPECT_TRUE(raw.send(m)) << raw.error();
    v1::ServerMessage reply;
    while (raw.receive(&reply, 5.0))
      if (reply.has_error()) return reply.error();
    ADD_FAILURE() << "no Error for " << hello.ShortDebugString();
    return v1::Error();
  };
  {
    v1::Hello hello;
    hello.set_protocol_version(1);
    hello.set_role(static_cast<v1::Role>(7));
    v1::Error e = hello_error(hello);
    EXPECT_EQ(e.code(), v1::INVALID_ARGUMENT) << e.message();
    EXPECT_EQ(e.field(), "hello.role");
    EXPECT_EQ(e.message(), "hello.role: must be ROLE_VIEWER or ROLE_CONTROLLER, got 7");
    hello.set_role(v1::ROLE_VIEWER);
    hello.mutable_wishes()->set_max_rate_hz(-1.0);
    e = hello_error(hello);
    EXPECT_EQ(e.field(), "hello.wishes.max_rate_hz") << e.message();
    hello.clear_wishes();
    hello.set_protocol_version(2);
    e = hello_error(hello);
    EXPECT_EQ(e.code(), v1::UNSUPPORTED_VERSION) << e.message();
    EXPECT_EQ(e.field(), "hello.protocol_version") << e.message();
  }
  // A viewer's command is refused but the viewer stays connected.
  {
    v1::Command spawn = spawn_grid(2, 2);
    spawn.set_request_id(5);
    v1::CommandResult r;
    ASSERT_TRUE(watcher.call(spawn, &r)) << watcher.error();
    EXPECT_EQ(r.code(), v1::PERMISSION_DENIED);
    EXPECT_EQ(r.field(), "") << "about the session, no field";
    EXPECT_NE(r.message().find("read-only"), std::string::npos);
  }
  // Bad commands: error results, connection open.
  v1::CommandResult r = call(ctl, spawn_body(std::numeric_limits<double>::quiet_NaN(), 0, 1));
  EXPECT_EQ(r.code(), v1::INVALID_ARGUMENT);
  EXPECT_EQ(r.field(), "spawn.bodies[0].position.x") << r.message();
  v1::Command huge;
  v1::RandomBoxGenerator& g = *huge.mutable_spawn()->add_generators()->mutable_random_box();
  g.mutable_max()->set_x(100);
  g.mutable_max()->set_y(100);
  g.set_count(1000000000);
  g.mutable_radius()->set_min(0.1);
  g.mutable_radius()->set_max(0.1);
  const auto t = Clock::now();
  r = call(ctl, huge);
  EXPECT_EQ(r.code(), v1::RESOURCE_EXHAUSTED) << r.message();
  EXPECT_EQ(r.field(), "spawn.generators[0].random_box.count") << r.message();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t).count(), 1.0);
  v1::Command bad_solver;
  bad_solver.mutable_set_params()->mutable_params()->set_solver(static_cast<v1::Solver>(42));
  r = call(ctl, bad_solver);
  EXPECT_EQ(r.code(), v1::INVALID_ARGUMENT);
  EXPECT_EQ(r.field(), "set_params.params.solver") << r.message();
  v1::Command overflow;
  overflow.mutable_step()->set_count(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(call(ctl, overflow).code(), v1::OUT_OF_RANGE);
  v1::Command unknown;
  unknown.mutable_remove()->add_ids(999999);
  r = call(ctl, unknown);
  EXPECT_EQ(r.code(), v1::NOT_FOUND);
  EXPECT_EQ(r.field(), "remove.ids[0]") << r.message();

  // The world is as it was, and the other clients are still served.
  EXPECT_EQ(call(ctl, get).world().state_hash(), hash);
  v1::Command ping;
  ping.mutable_ping();
  EXPECT_EQ(call(ctl, ping).code(), v1::OK);
  v1::Command resume;
  resume.mutable_resume();
  ASSERT_EQ(call(ctl, resume).code(), v1::OK);
  v1::Snapshot s;
  EXPECT_TRUE(next_snapshot(watcher, &s));
}

TEST_F(ServerTest, HandshakeTimeoutAndConnectionCapAreExplicit) {
  server::ServerOptions o;
  o.max_clients = 2;
  o.handshake_timeout_s = 0.3;
  start(o);
  Connection a, b;
  ASSERT_TRUE(connect(a, v1::ROLE_VIEWER));
  ASSERT_TRUE(connect(b, v1::ROLE_VIEWER));
  Connection c;
  v1::Hello hello;
  hello.set_role(v1::ROLE_VIEWER);
  EXPECT_FALSE(c.connect(address(), hello));
  EXPECT_NE(c.error().find("SERVER_FULL"), std::string::npos) << c.error();
  b.close();
  // A slot frees up once the server notices b left.
  bool joined = false;
  for (int i = 0; i < 250 && !joined; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    joined = c.connect(address(), hello);
  }
  EXPECT_TRUE(joined) << c.error();
  // A client that never says Hello is told why and dropped (once the server
  // has noticed that c left and a slot is free again).
  c.close();
  v1::ServerMessage m;
  for (int i = 0; i < 250; ++i) {
    Connection silent;
    ASSERT_TRUE(silent.open(address())) << silent.error();
    ASSERT_TRUE(silent.receive(&m, 3.0)) << silent.error();
    ASSERT_TRUE(m.has_error());
    if (m.error().code() != v1::SERVER_FULL) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(m.error().code(), v1::TIMEOUT) << m.error().message();
}

TEST_F(ServerTest, EventWishesGetCollisionsAndAViewerJoiningWhilePausedSeesTheWorld) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  // Two bodies flying at each other: one collision within a few ticks.
  v1::Command spawn;
  for (double x : {40.0, 60.0}) {
    v1::Body& b = *spawn.mutable_spawn()->add_bodies();
    b.mutable_position()->set_x(x);
    b.mutable_position()->set_y(50);
    b.mutable_velocity()->set_x(x < 50 ? 300.0 : -300.0);
    b.set_radius(1.0);
  }
  v1::SnapshotWishes events_only;
  events_only.set_events(true);
  events_only.set_omit_bodies(true);
  Connection viewer;
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER, {}, &events_only));
  ASSERT_EQ(call(ctl, spawn).code(), v1::OK);
  bool collided = false;
  for (int i = 0; i < 60 && !collided; ++i) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(viewer, &s));
    EXPECT_EQ(s.id_size(), 0) << "omit_bodies";
    for (const auto& e : s.events()) collided = collided || (e.a() < e.b() && e.tick() <= s.tick());
  }
  EXPECT_TRUE(collided);
  v1::Command pause;
  pause.mutable_pause();
  ASSERT_EQ(call(ctl, pause).code(), v1::OK);
  Connection late;
  ASSERT_TRUE(connect(late, v1::ROLE_VIEWER));
  v1::Snapshot s;
  ASSERT_TRUE(next_snapshot(late, &s, 2.0));
  EXPECT_TRUE(s.paused());
  EXPECT_EQ(s.id_size(), 2);
}

// One name per solver everywhere: the library's (carom-bench, scenarios'
// logs), the wire's through the server's mapping, and carom-ctl's (read from
// the .proto) agree, and every solver has one.
TEST(Names, SolverNamesAgreeBetweenTheLibraryTheWireAndTheClients) {
  EXPECT_EQ(client::solver_names().size(), carom::kSolvers.size());
  for (const carom::Solver s : carom::kSolvers) {
    carom::Params p;
    p.solver = s;
    v1::WorldParams wire;
    server::params_to_proto(p, 60.0, &wire);
    EXPECT_EQ(client::solver_name(wire.solver()), carom::to_string(s));
    v1::Solver parsed{};
    ASSERT_TRUE(client::parse_solver(carom::to_string(s), &parsed)) << carom::to_string(s);
    EXPECT_EQ(parsed, wire.solver());
  }
  v1::Solver unused{};
  EXPECT_FALSE(client::parse_solver("unspecified", &unused));
  EXPECT_FALSE(client::parse_solver("Discrete", &unused));
  EXPECT_EQ(client::solver_name(static_cast<v1::Solver>(42)), "unspecified");
  for (const carom::GravityMethod m : carom::kGravityMethods) {
    carom::Params p;
    p.mutual.method = m;
    v1::WorldParams wire;
    server::params_to_proto(p, 60.0, &wire);
    EXPECT_EQ(client::gravity_method_name(wire.mutual().method()), carom::to_string(m));
  }
  EXPECT_EQ(client::gravity_method_names(), (std::vector<std::string>{"auto", "direct", "tree"}));
}

TEST(SnapshotHash, TheSnapshotThreadsHashOfACaptureIsTheWorldsStateHash) {
  // The snapshot thread hashes a copy of the bodies: it must agree with
  // World::state_hash bit for bit, for any bodies.
  server::SimState sim(server::SimOptions{});
  v1::CommandResult r;
  v1::Command spawn = spawn_grid(30, 20, 1.7, 1.1);
  v1::RandomBoxGenerator& g = *spawn.mutable_spawn()->add_generators()->mutable_random_box();
  g.mutable_min()->set_x(50);
  g.mutable_min()->set_y(50);
  g.mutable_max()->set_x(95);
  g.mutable_max()->set_y(95);
  g.set_count(300);
  g.mutable_radius()->set_min(0.1);
  g.mutable_radius()->set_max(0.4);
  g.mutable_speed()->set_max(5.0);
  g.set_seed(7);
  ASSERT_TRUE(sim.apply(spawn, &r));
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  server::SnapshotCapture capture;
  for (int tick = 0; tick < 5; ++tick) {
    capture_snapshot(sim, 1, &capture);
    ASSERT_EQ(capture.id.size(), 900u);
    EXPECT_EQ(server::hash_bodies(capture), sim.world().state_hash()) << "tick " << tick;
    sim.step();
  }
  server::SnapshotCapture empty;
  server::SimState none(server::SimOptions{});
  capture_snapshot(none, 1, &empty);
  EXPECT_EQ(server::hash_bodies(empty), none.world().state_hash());
  // The hash covers every bit of every field of every body: one ulp in any
  // field of the first, middle or last body, or an id off by one, or a
  // body fewer, changes it (a capture that dropped or mangled a field would
  // still hash like itself, but not like the world).
  const std::uint64_t h = server::hash_bodies(capture);
  for (std::size_t at : {std::size_t{0}, capture.id.size() / 2, capture.id.size() - 1}) {
    for (std::vector<double>* field : {&capture.x, &capture.y, &capture.vx, &capture.vy, &capture.radius, &capture.mass}) {
      const double keep = (*field)[at];
      (*field)[at] = std::nextafter(keep, 1e300);
      EXPECT_NE(server::hash_bodies(capture), h) << "body " << at;
      (*field)[at] = keep;
    }
    capture.id[at] += 1;
    EXPECT_NE(server::hash_bodies(capture), h) << "body " << at;
    capture.id[at] -= 1;
  }
  EXPECT_EQ(server::hash_bodies(capture), h);
  for (std::vector<double>* field : {&capture.x, &capture.y, &capture.vx, &capture.vy, &capture.radius, &capture.mass})
    field->pop_back();
  capture.id.pop_back();
  EXPECT_NE(server::hash_bodies(capture), h);
}

TEST(TickTimes, TheSnapshotThreadsMirrorOfTheWindowGivesTheSameFigures) {
  // Samples travel to the mirror in batches of any size, two batches may be
  // folded into one (a skipped capture), the window may be reset, and long
  // gaps (no viewers) overflow it: the figures must stay those of the window.
  server::TickTimes sim;
  server::TickWindow mirror;
  std::uint64_t generation = 0;
  std::uint64_t seed = 12345;
  const auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(seed >> 11) * 0x1.0p-53;
  };
  const auto figures = [](const v1::Stats& s) {
    return std::vector<double>{static_cast<double>(s.ticks_measured()), static_cast<double>(s.late_ticks()),
                               s.tick_p50_seconds(), s.tick_p99_seconds(), s.tick_max_seconds(),
                               s.step_p50_seconds(), s.step_p99_seconds()};
  };
  int checks = 0;
  for (const std::size_t batch : {1ul, 7ul, 1000ul, 70000ul, 140000ul, 3ul, 20000ul}) {
    for (int round = 0; round < 3; ++round) {
      server::TickSamples first, second;
      for (std::size_t i = 0; i < batch; ++i) sim.add(next(), next());
      sim.late += 1;
      sim.take_fresh(&first);
      if (round == 1) {  // a skipped capture: its samples go with the next one
        for (std::size_t i = 0; i < batch / 2 + 1; ++i) sim.add(next(), next());
        sim.take_fresh(&second);
        first.append(second);
      }
      first.apply_to(&mirror, &generation);
      v1::Stats expected, got;
      sim.fill(&expected);
      mirror.fill(first.late, &got);
      EXPECT_EQ(figures(got), figures(expected)) << "batch " << batch << " round " << round;
      ++checks;
      if (round == 2) sim.reset();
    }
  }
  EXPECT_EQ(checks, 21);
}

TEST_F(ServerTest, BodyTablesGiveTheSameSnapshotsInFewerBytesAndFollowSpawnsAndRemovals) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(40, 25)).code(), v1::OK);  // 1000 bodies
  Connection tables, full;  // the same viewer, with and without body tables
  full.set_body_tables(false);
  tables.set_compact(false);
  ASSERT_TRUE(connect(tables, v1::ROLE_VIEWER));
  ASSERT_TRUE(connect(full, v1::ROLE_VIEWER));
  std::map<std::uint64_t, v1::Snapshot> seen;  // tick -> the full viewer's snapshot
  for (int i = 0; i < 20; ++i) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(full, &s));
    EXPECT_EQ(s.body_table(), 0u);
    seen.emplace(s.tick(), std::move(s));
  }
  int compared = 0;
  for (int i = 0; i < 20; ++i) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(tables, &s));
    EXPECT_NE(s.body_table(), 0u);
    ASSERT_EQ(s.id_size(), 1000);
    ASSERT_EQ(s.radius_size(), 1000);
    const auto it = seen.find(s.tick());
    if (it == seen.end()) continue;
    const v1::Snapshot& f = it->second;
    ++compared;
    EXPECT_EQ(s.state_hash(), f.state_hash());
    EXPECT_TRUE(std::equal(s.id().begin(), s.id().end(), f.id().begin(), f.id().end()));
    EXPECT_TRUE(std::equal(s.x().begin(), s.x().end(), f.x().begin(), f.x().end()));
    EXPECT_TRUE(std::equal(s.y().begin(), s.y().end(), f.y().begin(), f.y().end()));
    EXPECT_TRUE(std::equal(s.radius().begin(), s.radius().end(), f.radius().begin(), f.radius().end()));
  }
  EXPECT_GT(compared, 0) << "the two viewers saw no tick in common";
  // One table while nothing was added, removed or resized.
  EXPECT_EQ(tables.body_tables_received(), 1u);
  EXPECT_LT(static_cast<double>(tables.bytes_received()), 0.8 * static_cast<double>(full.bytes_received()));

  // A spawn: a new table, from the snapshot of the reported tick on.
  const v1::CommandResult spawned = call(ctl, spawn_body(80, 80, 1.5));
  ASSERT_EQ(spawned.code(), v1::OK) << spawned.message();
  const std::uint32_t id = spawned.spawned().ids(0);
  for (;;) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(tables, &s));
    if (s.tick() < spawned.tick()) continue;
    ASSERT_EQ(s.id_size(), 1001);
    ASSERT_EQ(s.id(1000), id);
    EXPECT_FLOAT_EQ(s.radius(1000), 1.5f);
    EXPECT_NEAR(s.x(1000), 80.0, 0.5);
    break;
  }
  EXPECT_EQ(tables.body_tables_received(), 2u);
  // A removal: another table.
  v1::Command remove;
  remove.mutable_remove()->add_ids(1);
  const v1::CommandResult removed = call(ctl, remove);
  ASSERT_EQ(removed.code(), v1::OK) << removed.message();
  for (;;) {
    v1::Snapshot s;
    ASSERT_TRUE(next_snapshot(tables, &s));
    if (s.tick() < removed.tick()) continue;
    ASSERT_EQ(s.id_size(), 1000);
    EXPECT_EQ(s.id(0), 2u);
    break;
  }
  EXPECT_EQ(tables.body_tables_received(), 3u);
}

TEST_F(ServerTest, SnapshotHashOfAPausedTickIsTheSavedWorldsHash) {
  start();
  Connection ctl, viewer;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(10, 10, 3.0)).code(), v1::OK);
  v1::Command pause;
  pause.mutable_pause();
  const v1::CommandResult paused = call(ctl, pause);
  ASSERT_EQ(paused.code(), v1::OK);
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER));
  v1::Snapshot s;
  do {
    ASSERT_TRUE(next_snapshot(viewer, &s));
  } while (s.tick() < paused.tick());
  EXPECT_EQ(s.tick(), paused.tick());
  EXPECT_EQ(s.state_hash(), world_hash_and_size().first);
}

TEST_F(ServerTest, ManyConnectCyclesLeakNoDescriptor) {
  start();
  {
    Connection warm;
    ASSERT_TRUE(connect(warm, v1::ROLE_VIEWER));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::size_t before = open_fds();
  for (int i = 0; i < 200; ++i) {
    Connection c;
    ASSERT_TRUE(connect(c, i % 2 == 0 ? v1::ROLE_VIEWER : v1::ROLE_CONTROLLER)) << "cycle " << i;
  }
  // The server closes its side as it notices each departure.
  std::size_t after = open_fds();
  for (int i = 0; i < 100 && after > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = open_fds();
  }
  EXPECT_LE(after, before);
}

// Commands of one tick boundary name the snapshot that first shows them: a
// spawn and a pause in one write both name the current tick, which is
// re-sent (paused) with the body in it, not the next tick, which would only
// come after a resume. (Slow ticks: both frames arrive well inside one tick.)
// A spawn then a pause, in one write or in two 50 ms apart (the pause then
// arrives in a later wake-up of the simulation thread, at a 2 Hz tick almost
// always before the next step): both results name the tick whose snapshot
// shows the body, and that snapshot comes.
class SpawnPauseTest : public ServerTest {
 protected:
  void run(bool two_writes) {
    server::ServerOptions o;
    o.tick_hz = 2.0;
    start(o);
    Connection ctl;
    v1::SnapshotWishes wishes;
    ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER, {}, &wishes));
    v1::ClientMessage spawn, pause;
    *spawn.mutable_command() = spawn_body(10, 10, 0.5);
    spawn.mutable_command()->set_request_id(1);
    pause.mutable_command()->mutable_pause();
    pause.mutable_command()->set_request_id(2);
    if (two_writes) {
      ASSERT_TRUE(ctl.send_raw(proto::encode_frame(spawn)));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ASSERT_TRUE(ctl.send_raw(proto::encode_frame(pause)));
    } else {
      ASSERT_TRUE(ctl.send_raw(proto::encode_frame(spawn) + proto::encode_frame(pause)));
    }
    std::map<std::uint64_t, std::uint64_t> tick_of;  // request id -> result tick
    v1::Snapshot shown;
    bool seen = false;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline && !(tick_of.size() == 2 && seen)) {
      v1::ServerMessage m;
      ASSERT_TRUE(ctl.receive(&m, 5.0)) << ctl.error();
      if (m.has_result()) {
        EXPECT_EQ(m.result().code(), v1::OK) << m.result().message();
        tick_of[m.result().request_id()] = m.result().tick();
      }
      if (m.has_snapshot() && m.snapshot().id_size() == 1 && !seen) {
        shown = m.snapshot();
        seen = true;
      }
    }
    ASSERT_EQ(tick_of.size(), 2u);
    ASSERT_TRUE(seen) << "no snapshot with the body";
    // Two writes 50 ms apart: one time in ten a step falls between them, and
    // the body first shows in that running tick, which both results name.
    if (!two_writes) {
      EXPECT_TRUE(shown.paused());
    }
    EXPECT_EQ(tick_of[1], shown.tick()) << "the spawn names the snapshot that shows it";
    EXPECT_EQ(tick_of[2], shown.tick());
  }
};

TEST_F(SpawnPauseTest, InOneWriteNameTheTickThatShowsThem) { run(false); }
TEST_F(SpawnPauseTest, InTwoWritesNameTheTickThatShowsThem) { run(true); }

TEST_F(ServerTest, StopSaysGoodbyeToEveryClient) {
  start();
  std::vector<Connection> clients(3);
  for (auto& c : clients) ASSERT_TRUE(connect(c, v1::ROLE_VIEWER));
  std::thread stopper([&] { server_->stop("maintenance"); });
  for (auto& c : clients) {
    v1::ServerMessage m;
    bool goodbye = false;
    while (c.receive(&m, 5.0)) {
      if (m.has_goodbye()) {
        goodbye = true;
        EXPECT_EQ(m.goodbye().reason(), "maintenance");
      }
    }
    EXPECT_TRUE(goodbye) << c.error();
  }
  stopper.join();
}

// ListScenarios: the NAME.txtpb files of --scenario-dir that LoadScenario
// would take, sorted, each with its description's first line and its body
// count (listed bodies plus generated ones); a file that does not parse is
// listed with the parser's message. Viewers may ask. A changed file is read
// again. A server without a directory, or with one that is gone, says
// NOT_FOUND and why.
TEST_F(ServerTest, ListScenariosNamesTheLoadableFilesToViewersAndControllers) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("carom-list-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub.txtpb");  // a directory: not listed
  auto write = [&](const std::string& file, const std::string& text) { std::ofstream(dir / file) << text; };
  write("b_pair.txtpb",
        "description: \"Two bodies\\nand a grid of six\"\n"
        "bodies { position { x: 1 y: 1 } radius: 0.5 }\n"
        "bodies { position { x: 3 y: 1 } radius: 0.5 }\n"
        "generators { grid { origin { x: 5 y: 5 } columns: 3 rows: 2 spacing: 1 radius: 0.2 } }\n");
  write("a-broken.txtpb", "bodies { radius: }\n");
  write("empty.txtpb", "");
  write("bad name.txtpb", "");     // LoadScenario would refuse the name
  write("notes.txt", "");          // not a scenario file
  write(".txtpb", "");             // no name at all

  server::ServerOptions o;
  o.scenario_dir = dir.string();
  start(o);
  auto list = [&](Connection& c) {
    v1::Command command;
    command.mutable_list_scenarios();
    return call(c, command);
  };
  Connection viewer;
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER));
  v1::CommandResult r = list(viewer);
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  ASSERT_EQ(r.scenarios().scenarios_size(), 3);
  EXPECT_FALSE(r.scenarios().truncated());
  const v1::ScenarioInfo& broken = r.scenarios().scenarios(0);
  EXPECT_EQ(broken.name(), "a-broken");
  EXPECT_NE(broken.error().find("a-broken.txtpb:1"), std::string::npos) << broken.error();
  EXPECT_EQ(broken.bodies(), 0u);
  const v1::ScenarioInfo& pair = r.scenarios().scenarios(1);
  EXPECT_EQ(pair.name(), "b_pair");
  EXPECT_EQ(pair.description(), "Two bodies");
  EXPECT_EQ(pair.bodies(), 8u);
  EXPECT_EQ(pair.error(), "");
  EXPECT_EQ(r.scenarios().scenarios(2).name(), "empty");
  EXPECT_EQ(r.scenarios().scenarios(2).bodies(), 0u);

  // What is listed loads, and with the listed number of bodies.
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  v1::Command load;
  load.mutable_load_scenario()->set_name(pair.name());
  const v1::CommandResult loaded = call(ctl, load);
  ASSERT_EQ(loaded.code(), v1::OK) << loaded.message();
  EXPECT_EQ(world_hash_and_size().second, pair.bodies());

  // A file that changes (here: its size) is read again; one removed goes.
  write("b_pair.txtpb", "description: \"Now one\"\nbodies { position { x: 1 y: 1 } radius: 0.5 }\n");
  fs::remove(dir / "empty.txtpb");
  r = list(ctl);
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  ASSERT_EQ(r.scenarios().scenarios_size(), 2);
  EXPECT_EQ(r.scenarios().scenarios(1).description(), "Now one");
  EXPECT_EQ(r.scenarios().scenarios(1).bodies(), 1u);

  // The directory gone: NOT_FOUND, naming it; the connection stays.
  fs::remove_all(dir);
  r = list(viewer);
  EXPECT_EQ(r.code(), v1::NOT_FOUND);
  EXPECT_NE(r.message().find("list_scenarios: cannot read the scenario directory " + dir.string()), std::string::npos)
      << r.message();
  EXPECT_FALSE(r.has_scenarios());
  EXPECT_EQ(list(viewer).code(), v1::NOT_FOUND);
}

TEST_F(ServerTest, ListScenariosWithoutAScenarioDirectoryIsNotFound) {
  start();
  Connection viewer;
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER));
  v1::Command command;
  command.set_request_id(5);
  command.mutable_list_scenarios();
  const v1::CommandResult r = call(viewer, command);
  EXPECT_EQ(r.code(), v1::NOT_FOUND);
  EXPECT_EQ(r.message(), "list_scenarios: the server has no scenario directory (--scenario-dir)");
  EXPECT_EQ(r.field(), "");
  // Still connected, and a viewer still may not command.
  v1::CommandResult refused = call(viewer, command_of([](v1::Command& c) { c.mutable_pause(); }));
  EXPECT_EQ(refused.code(), v1::PERMISSION_DENIED);
}

}  // namespace
}  // namespace carom

namespace carom {
namespace {

// What a compact viewer must show for a body: the server's quantization of
// its full-precision value, as the client library turns it into a float.
float quantized(double value, double quantum) {
  return static_cast<float>(static_cast<double>(proto::quantize(value, quantum)) * quantum);
}

class CompactTest : public ServerTest {};

// The compact stream end to end: every snapshot a compact viewer decodes is
// the server's own quantization of its full-precision state at that tick
// (get_world), through spawns, removals, a viewer that joins late and one
// that skips ticks (both then get key frames), with deltas in between.
TEST_F(CompactTest, ViewersDecodeExactlyWhatTheServerQuantized) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(30, 20, 2.0, 1.1)).code(), v1::OK);
  ASSERT_EQ(call(ctl, command_of([](v1::Command& c) { c.mutable_pause(); })).code(), v1::OK);
  v1::SnapshotWishes wishes;
  wishes.set_velocities(true);
  wishes.set_position_quantum(0.0005);
  wishes.set_velocity_quantum(0.002);
  v1::SnapshotWishes slow_wishes = wishes;
  slow_wishes.set_max_rate_hz(8.0);  // misses most steps: key frames
  Connection every, slow, late;
  ASSERT_TRUE(connect(every, v1::ROLE_VIEWER, {}, &wishes));
  ASSERT_TRUE(connect(slow, v1::ROLE_VIEWER, {}, &slow_wishes));
  // Every state the viewers may be shown, by state hash (a paused edit
  // re-sends its tick with the new state).
  std::map<std::uint64_t, v1::SavedWorld> worlds;
  std::uint64_t last = 0;
  auto record = [&] {
    const v1::CommandResult got = call(ctl, command_of([](v1::Command& c) { c.mutable_get_world(); }));
    ASSERT_EQ(got.code(), v1::OK);
    worlds[got.world().state_hash()] = got.world();
    last = got.world().tick();
  };
  struct Tally {
    int checked = 0, deltas = 0, keys = 0;
    std::uint64_t seen = 0;
  };
  std::map<Connection*, Tally> tally;
  // Reads one snapshot (false on timeout) and checks it against the state it shows.
  auto take = [&](Connection& viewer, double timeout) {
    v1::Snapshot s;
    if (!next_snapshot(viewer, &s, timeout)) return false;
    Tally& t = tally[&viewer];
    EXPECT_TRUE(s.has_compact());
    (s.compact().has_baseline_tick() ? t.deltas : t.keys) += 1;
    t.seen = std::max<std::uint64_t>(t.seen, s.tick());
    const auto it = worlds.find(s.state_hash());
    if (it == worlds.end()) return true;  // before the first step
    const v1::SavedWorld& w = it->second;
    EXPECT_EQ(s.tick(), w.tick());
    EXPECT_EQ(s.id_size(), w.id_size()) << "tick " << s.tick();
    if (s.id_size() != w.id_size()) return true;
    for (int i = 0; i < w.id_size(); ++i) {
      if (s.id(i) != w.id(i) || s.x(i) != quantized(w.x(i), 0.0005) || s.y(i) != quantized(w.y(i), 0.0005) ||
          s.vx(i) != quantized(w.vx(i), 0.002) || s.vy(i) != quantized(w.vy(i), 0.002)) {
        ADD_FAILURE() << "tick " << s.tick() << " body " << w.id(i) << ": (" << s.x(i) << ", " << s.y(i) << ") for ("
                      << w.x(i) << ", " << w.y(i) << ")";
        return true;
      }
    }
    ++t.checked;
    return true;
  };
  for (int k = 0; k < 90; ++k) {
    if (k == 20) {
      ASSERT_EQ(call(ctl, spawn_body(40.0, 30.0, 0.5)).code(), v1::OK);
      record();
    }
    if (k == 40) {
      v1::Command remove;
      remove.mutable_remove()->add_ids(3);
      remove.mutable_remove()->add_ids(200);
      ASSERT_EQ(call(ctl, remove).code(), v1::OK);
      record();
    }
    if (k == 50) {
      ASSERT_TRUE(connect(late, v1::ROLE_VIEWER, {}, &wishes));
    }
    if (k % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the slow viewer's turn
    v1::Command step;
    step.mutable_step()->set_count(1);
    const v1::CommandResult stepped = call(ctl, step);
    ASSERT_EQ(stepped.code(), v1::OK) << stepped.message();
    record();
    ASSERT_EQ(last, stepped.tick());
    // The every-tick viewers read as the world steps, so that however loaded
    // the machine, none falls behind and skips a frame.
    for (Connection* viewer : {&every, &late}) {
      if (!viewer->connected()) continue;
      while (tally[viewer].seen < last) ASSERT_TRUE(take(*viewer, 5.0)) << viewer->error();
    }
  }
  // Paused after the last step: nothing more comes once a viewer has read
  // all it was sent (the slow one may not get the last tick at all).
  for (Connection* viewer : {&every, &slow, &late}) {
    while (take(*viewer, 0.5)) {
    }
    EXPECT_TRUE(viewer->connected()) << viewer->error();
  }
  EXPECT_EQ(tally[&every].seen, last);
  EXPECT_GE(tally[&every].checked, 90);
  // Deltas all along, after the first key frame. Latest wins still holds: a
  // snapshot that finds the previous one unwritten in the slot (a paused edit
  // and the next step back to back, on a loaded machine) replaces it, and the
  // viewer then gets a key frame; every one of them decodes exactly (above).
  EXPECT_GE(tally[&every].keys, 1);
  EXPECT_LE(tally[&every].keys, 5);
  EXPECT_GE(tally[&every].deltas, 85);
  EXPECT_EQ(tally[&late].seen, last);
  EXPECT_GE(tally[&late].keys, 1);
  EXPECT_LE(tally[&late].keys, 5);
  EXPECT_GE(tally[&late].deltas, 30);
  EXPECT_GT(tally[&slow].checked, 0);
  EXPECT_GE(tally[&slow].keys, 2) << "a viewer that skips ticks gets key frames";
}

// What the compact stream is for: a world at rest costs almost nothing, a
// moving one a fraction of the plain snapshot; a bad quantum is refused.
TEST_F(CompactTest, AStillWorldCostsAlmostNothingAndABadQuantumIsRefused) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(40, 25, 0.0)).code(), v1::OK);  // 1000 bodies at rest, no gravity
  Connection compact, plain;
  plain.set_compact(false);
  ASSERT_TRUE(connect(compact, v1::ROLE_VIEWER));
  ASSERT_TRUE(connect(plain, v1::ROLE_VIEWER));
  v1::Snapshot s;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(next_snapshot(compact, &s));  // past the key frame
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(next_snapshot(plain, &s));
  const std::uint64_t compact0 = compact.bytes_received(), plain0 = plain.bytes_received();
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(next_snapshot(compact, &s));
    ASSERT_EQ(s.id_size(), 1000);
    EXPECT_FLOAT_EQ(s.x(0), 2.0f);
  }
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(next_snapshot(plain, &s));
  const double compact_bytes = static_cast<double>(compact.bytes_received() - compact0) / 30.0;
  const double plain_bytes = static_cast<double>(plain.bytes_received() - plain0) / 30.0;
  EXPECT_LT(compact_bytes, 0.2 * plain_bytes) << compact_bytes << " vs " << plain_bytes << " bytes a snapshot";
  std::printf("1000 still bodies: %.0f bytes a compact snapshot, %.0f plain\n", compact_bytes, plain_bytes);
  EXPECT_LT(compact_bytes, 600.0) << "the snapshot's own fields and a few bytes for 1000 still bodies";

  for (double bad : {-1.0, std::nan(""), 1e7, 1e-12}) {
    v1::SnapshotWishes w;
    w.set_position_quantum(bad);
    Connection refused;
    EXPECT_FALSE(connect(refused, v1::ROLE_VIEWER, {}, &w)) << bad;
    EXPECT_NE(refused.error().find("hello.wishes.position_quantum: must be 0"), std::string::npos) << refused.error();
  }
}

// The events' threshold and their compact coding, end to end: in a pile under
// gravity with restitution (impacts and resting contacts both), a viewer with
// min_event_speed gets exactly the events of a viewer without it whose speed
// |impulse| (1/m_a + 1/m_b) is at least that, in the same order; a compact
// viewer decodes the same events with the points quantized and the impulses
// as bfloat16s; max_events keeps the hardest; with event_speeds (what a
// relay asks for) each event carries that speed, plain and compact; a bad
// threshold is refused.
TEST_F(CompactTest, EventThresholdSendsExactlyTheHardImpactsAndCompactEventsDecodeToThem) {
  start();
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  v1::Command load;
  v1::Scenario& sc = *load.mutable_load_scenario()->mutable_scenario();
  sc.set_name("pile");
  v1::WorldParams& p = *sc.mutable_params();
  p.mutable_bounds()->set_walled(true);
  p.mutable_bounds()->mutable_min()->set_x(0);
  p.mutable_bounds()->mutable_min()->set_y(0);
  p.mutable_bounds()->mutable_max()->set_x(30);
  p.mutable_bounds()->mutable_max()->set_y(30);
  p.mutable_gravity()->set_y(-9.81);
  p.set_restitution(0.8);
  v1::RandomBoxGenerator& g = *sc.add_generators()->mutable_random_box();
  g.mutable_min()->set_x(1);
  g.mutable_min()->set_y(1);
  g.mutable_max()->set_x(29);
  g.mutable_max()->set_y(20);
  g.set_count(250);
  g.mutable_radius()->set_min(0.3);
  g.mutable_radius()->set_max(0.6);
  g.mutable_speed()->set_min(0.0);
  g.mutable_speed()->set_max(4.0);
  g.set_seed(16);
  const v1::CommandResult loaded = call(ctl, load);
  ASSERT_EQ(loaded.code(), v1::OK) << loaded.message();
  ASSERT_EQ(call(ctl, command_of([](v1::Command& c) { c.mutable_pause(); })).code(), v1::OK);
  const v1::CommandResult got = call(ctl, command_of([](v1::Command& c) { c.mutable_get_world(); }));
  ASSERT_EQ(got.code(), v1::OK);
  std::map<std::uint32_t, double> mass;
  for (int i = 0; i < got.world().id_size(); ++i) mass[got.world().id(i)] = got.world().mass(i);

  constexpr double kThreshold = 2.0, kQuantum = 0.002;
  constexpr std::uint32_t kMax = 5;
  v1::SnapshotWishes all, hard, hard_compact, hardest;
  all.set_events(true);
  hard = all;
  hard.set_min_event_speed(kThreshold);
  hard_compact = hard;
  hard_compact.set_position_quantum(kQuantum);
  hard_compact.set_event_speeds(true);
  hardest = hard_compact;
  hardest.set_max_events(kMax);
  all.set_event_speeds(true);
  Connection v_all, v_hard, v_compact, v_hardest;
  v_all.set_compact(false);
  v_hard.set_compact(false);
  ASSERT_TRUE(connect(v_all, v1::ROLE_VIEWER, {}, &all));
  ASSERT_TRUE(connect(v_hard, v1::ROLE_VIEWER, {}, &hard));
  ASSERT_TRUE(connect(v_compact, v1::ROLE_VIEWER, {}, &hard_compact));
  ASSERT_TRUE(connect(v_hardest, v1::ROLE_VIEWER, {}, &hardest));
  std::map<std::uint64_t, v1::Snapshot> by_tick[4];
  Connection* viewers[4] = {&v_all, &v_hard, &v_compact, &v_hardest};
  for (int k = 0; k < 120; ++k) {
    v1::Command step;
    step.mutable_step()->set_count(1);
    ASSERT_EQ(call(ctl, step).code(), v1::OK);
    for (int v = 0; v < 4; ++v) {
      v1::Snapshot s;
      ASSERT_TRUE(next_snapshot(*viewers[v], &s)) << v;
      if (v >= 2) {
        ASSERT_TRUE(s.has_compact());
        ASSERT_EQ(s.events_size() > 0, s.has_compact_events());
      }
      const std::uint64_t tick = s.tick();
      by_tick[v][tick] = std::move(s);
    }
  }
  auto speed = [&](const v1::CollisionEvent& e) {
    return std::hypot(e.impulse().x(), e.impulse().y()) * (1.0 / mass.at(e.a()) + 1.0 / mass.at(e.b()));
  };
  std::size_t total = 0, kept = 0, resting = 0, compared = 0;
  for (const auto& [tick, plain] : by_tick[0]) {
    if (!by_tick[1].count(tick) || !by_tick[2].count(tick) || !by_tick[3].count(tick)) continue;
    ++compared;
    std::vector<const v1::CollisionEvent*> want;
    for (const v1::CollisionEvent& e : plain.events()) {
      ++total;
      const double sp = speed(e);
      if (sp < 0.5) ++resting;
      if (sp >= kThreshold) want.push_back(&e);
    }
    kept += want.size();
    const v1::Snapshot& h = by_tick[1].at(tick);
    const v1::Snapshot& c = by_tick[2].at(tick);
    ASSERT_EQ(static_cast<std::size_t>(h.events_size()), want.size()) << "tick " << tick;
    ASSERT_EQ(static_cast<std::size_t>(c.events_size()), want.size()) << "tick " << tick;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const v1::CollisionEvent& w = *want[i];
      const int k = static_cast<int>(i);
      ASSERT_TRUE(w.has_speed());
      EXPECT_EQ(w.speed(), speed(w)) << "tick " << tick << " event " << i;
      v1::CollisionEvent w_unweighed = w;
      w_unweighed.clear_speed();
      EXPECT_EQ(h.events(k).SerializeAsString(), w_unweighed.SerializeAsString()) << "tick " << tick << " event " << i;
      const v1::CollisionEvent& e = c.events(k);
      EXPECT_EQ(e.speed(), w.speed());
      EXPECT_EQ(e.a(), w.a());
      EXPECT_EQ(e.b(), w.b());
      EXPECT_EQ(e.tick(), w.tick());
      EXPECT_EQ(e.point().x(), static_cast<double>(proto::quantize(w.point().x(), kQuantum)) * kQuantum);
      EXPECT_EQ(e.point().y(), static_cast<double>(proto::quantize(w.point().y(), kQuantum)) * kQuantum);
      EXPECT_LE(std::abs(e.point().x() - w.point().x()), 0.5 * kQuantum + 1e-12);
      EXPECT_EQ(e.impulse().x(), proto::from_bfloat16(proto::to_bfloat16(w.impulse().x())));
      EXPECT_EQ(e.impulse().y(), proto::from_bfloat16(proto::to_bfloat16(w.impulse().y())));
      EXPECT_LE(std::abs(e.impulse().x() - w.impulse().x()), std::abs(w.impulse().x()) / 256.0);
    }
    // max_events: the kMax hardest of those, in their order.
    std::vector<std::size_t> order(want.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t i, std::size_t j) { return speed(*want[i]) > speed(*want[j]); });
    if (order.size() > kMax) order.resize(kMax);
    std::sort(order.begin(), order.end());
    const v1::Snapshot& m = by_tick[3].at(tick);
    ASSERT_EQ(static_cast<std::size_t>(m.events_size()), order.size()) << "tick " << tick;
    for (std::size_t i = 0; i < order.size(); ++i) {
      EXPECT_EQ(m.events(static_cast<int>(i)).a(), want[order[i]]->a());
      EXPECT_EQ(m.events(static_cast<int>(i)).b(), want[order[i]]->b());
      EXPECT_EQ(m.events(static_cast<int>(i)).speed(), want[order[i]]->speed());
    }
  }
  std::printf("events: %zu in %zu ticks, %zu at >= %g m/s, %zu below 0.5 m/s\n", total, compared, kept, kThreshold,
              resting);
  EXPECT_GE(compared, 100u);
  EXPECT_GT(kept, 20u) << "impacts above the threshold";
  EXPECT_GT(total - kept, 20u) << "events below it, filtered out";
  for (double value : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    v1::SnapshotWishes bad = hard;
    bad.set_min_event_speed(value);
    Connection refused;
    EXPECT_FALSE(connect(refused, v1::ROLE_VIEWER, {}, &bad));
    EXPECT_NE(refused.error().find("hello.wishes.min_event_speed: must be finite and >= 0"), std::string::npos)
        << refused.error();
  }
}

}  // namespace
}  // namespace carom

namespace carom {
namespace {

// A viewer with a rate wish still gets the snapshot a pause re-sends (its
// rate turned it away once; held, it goes out when nothing newer comes), so
// it never sits a tick behind, shown as running, while the world is paused.
TEST_F(ServerTest, ARateLimitedViewerSeesThePausedTick) {
  server::ServerOptions o;
  o.tick_hz = 60;
  start(o);
  Connection ctl;
  ASSERT_TRUE(connect(ctl, v1::ROLE_CONTROLLER));
  ASSERT_EQ(call(ctl, spawn_grid(5, 5)).code(), v1::OK);
  v1::SnapshotWishes wishes;
  wishes.set_max_rate_hz(4.0);
  Connection viewer;
  ASSERT_TRUE(connect(viewer, v1::ROLE_VIEWER, {}, &wishes));
  for (int round = 0; round < 4; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(130 + 70 * round));  // a different phase each time
    const v1::CommandResult paused = call(ctl, command_of([](v1::Command& c) { c.mutable_pause(); }));
    ASSERT_EQ(paused.code(), v1::OK);
    v1::Snapshot s;
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    do {
      ASSERT_TRUE(next_snapshot(viewer, &s, 3.0)) << "round " << round;
    } while (!(s.paused() && s.tick() == paused.tick()) && Clock::now() < deadline);
    EXPECT_TRUE(s.paused()) << "round " << round;
    EXPECT_EQ(s.tick(), paused.tick()) << "round " << round;
    ASSERT_EQ(call(ctl, command_of([](v1::Command& c) { c.mutable_resume(); })).code(), v1::OK);
  }
}

}  // namespace
}  // namespace carom
