// carom-relay end to end: real carom-server and carom-relay processes over
// real TCP. A viewer through two chained relays sees the direct viewer's
// state hashes (and quantized positions) tick for tick; a relay whose
// upstream dies keeps its viewers and resumes when a server is back on the
// port; control through a relay needs the relay's token.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "carom/client/connection.hpp"
#include "support/process.hpp"

namespace carom {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path dir() {
  const fs::path d = fs::temp_directory_path() / ("carom-relay-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// carom-server or carom-relay (same --port and --port-file) on a free port
// or the one given.
struct Process : test::ServerProcess {
  Process(const std::string& binary, std::vector<std::string> args, std::uint16_t port = 0)
      : test::ServerProcess(binary, dir(), std::move(args), port) {}
};

Process server(std::vector<std::string> args = {}, std::uint16_t port = 0) {
  args.insert(args.end(), {"--threads", "1", "--scenario", std::string(CAROM_SCENARIOS) + "/pile.txtpb"});
  return Process(CAROM_SERVER_BIN, std::move(args), port);
}

Process relay(const std::string& upstream, std::vector<std::string> args = {}) {
  args.insert(args.end(), {"--upstream", upstream, "--reconnect-max", "0.5"});
  return Process(CAROM_RELAY_BIN, std::move(args));
}

// A viewer, asking for positions to `position_quantum` (0: the default).
client::Connection viewer(std::uint16_t port, double position_quantum = 0.0) {
  client::Connection c;
  v1::Hello hello;
  hello.set_role(v1::ROLE_VIEWER);
  hello.set_client_name("relay_test");
  hello.mutable_wishes()->set_position_quantum(position_quantum);
  EXPECT_TRUE(c.connect({"127.0.0.1", port}, hello)) << c.error();
  return c;
}

struct Seen {
  std::uint64_t hash = 0;
  std::vector<float> x, y;
};

// What `c` receives for `seconds`: (*out)[tick] = what(snapshot).
template <class T, class What>
void collect_by_tick(client::Connection& c, double seconds, std::map<std::uint64_t, T>* out, What&& what) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  v1::ServerMessage m;
  while (Clock::now() < end) {
    ASSERT_TRUE(c.receive(&m, 5.0)) << c.error();
    if (m.has_snapshot()) (*out)[m.snapshot().tick()] = what(m.snapshot());
  }
}

// The snapshots of `c` for `seconds`, by tick.
void collect(client::Connection& c, double seconds, std::map<std::uint64_t, Seen>* out) {
  collect_by_tick(c, seconds, out, [](const v1::Snapshot& s) {
    return Seen{s.state_hash(), {s.x().begin(), s.x().end()}, {s.y().begin(), s.y().end()}};
  });
}

// Reads `direct` and `relayed` in turns, `rounds` times for `seconds` each, so
// that neither falls behind and skips much; their snapshots by tick.
void collect_in_turns(client::Connection& direct, client::Connection& relayed, int rounds, double seconds,
                      std::map<std::uint64_t, Seen>* a, std::map<std::uint64_t, Seen>* b) {
  for (int round = 0; round < rounds; ++round) {
    collect(direct, seconds, a);
    collect(relayed, seconds, b);
  }
}

// Calls check(tick, relayed, direct) for each tick both saw; returns how many.
template <class T, class Check>
int for_common_ticks(const std::map<std::uint64_t, T>& direct, const std::map<std::uint64_t, T>& relayed,
                     Check&& check) {
  int common = 0;
  for (const auto& [tick, seen] : relayed) {
    const auto it = direct.find(tick);
    if (it == direct.end()) continue;
    ++common;
    check(tick, seen, it->second);
  }
  return common;
}

TEST(Relay, TwoChainedRelaysShowTheDirectViewersHashesTickForTick) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  Process r1 = relay(s.address());
  ASSERT_NE(r1.port(), 0) << r1.log();
  Process r2 = relay(r1.address());
  ASSERT_NE(r2.port(), 0) << r2.log();
  client::Connection direct = viewer(s.port());
  client::Connection relayed = viewer(r2.port());
  std::map<std::uint64_t, Seen> a, b;
  collect_in_turns(direct, relayed, 20, 0.05, &a, &b);
  const int common = for_common_ticks(a, b, [](std::uint64_t tick, const Seen& seen, const Seen& there) {
    EXPECT_EQ(seen.hash, there.hash) << "tick " << tick;
    EXPECT_EQ(seen.x, there.x) << "tick " << tick;
    EXPECT_EQ(seen.y, there.y) << "tick " << tick;
  });
  EXPECT_GT(common, 20) << a.size() << " direct, " << b.size() << " relayed snapshots";
  EXPECT_GT(b.size(), 30u);
}

// Events: (a, b, point) of each event in a snapshot, by tick.
using Events = std::map<std::uint64_t, std::vector<std::tuple<std::uint32_t, std::uint32_t, float, float>>>;

void collect_events(client::Connection& c, double seconds, Events* out) {
  collect_by_tick(c, seconds, out, [](const v1::Snapshot& s) {
    Events::mapped_type events;
    for (const v1::CollisionEvent& e : s.events()) events.emplace_back(e.a(), e.b(), e.point().x(), e.point().y());
    return events;
  });
}

// A viewer that wants events: all of them, or those at `min_event_speed` or
// more, at most `max_events` a snapshot (0: no cap).
client::Connection event_viewer(std::uint16_t port, double min_event_speed = 0.0, std::uint32_t max_events = 0) {
  client::Connection c;
  v1::Hello hello;
  hello.set_role(v1::ROLE_VIEWER);
  hello.mutable_wishes()->set_events(true);
  hello.mutable_wishes()->set_min_event_speed(min_event_speed);
  hello.mutable_wishes()->set_max_events(max_events);
  EXPECT_TRUE(c.connect({"127.0.0.1", port}, hello)) << c.error();
  return c;
}

TEST(Relay, AViewerWantingEventsGetsTheServersEvents) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address());
  ASSERT_NE(r.port(), 0) << r.log();
  // The relay asks for events upstream once a viewer here wants them.
  client::Connection relayed = event_viewer(r.port());
  v1::ServerMessage m;
  bool events = false;
  for (const auto end = Clock::now() + std::chrono::seconds(10); !events && Clock::now() < end;) {
    ASSERT_TRUE(relayed.receive(&m, 5.0)) << relayed.error();
    events = m.has_snapshot() && m.snapshot().events_size() > 0;
  }
  ASSERT_TRUE(events) << r.log();
  client::Connection direct = event_viewer(s.port());
  Events a, b;
  for (int round = 0; round < 20; ++round) {
    collect_events(direct, 0.05, &a);
    collect_events(relayed, 0.05, &b);
  }
  int with_events = 0;
  const int common = for_common_ticks(a, b, [&](std::uint64_t tick, const auto& list, const auto& there) {
    with_events += list.empty() ? 0 : 1;
    EXPECT_EQ(list, there) << "tick " << tick;
  });
  EXPECT_GT(common, 20);
  EXPECT_GT(with_events, 5);
}

// Every field of each event in a snapshot, by tick.
using FullEvents = std::map<std::uint64_t, std::vector<std::string>>;

void collect_full_events(client::Connection& c, double seconds, FullEvents* out) {
  collect_by_tick(c, seconds, out, [](const v1::Snapshot& s) {
    FullEvents::mapped_type events;
    for (const v1::CollisionEvent& e : s.events()) events.push_back(e.ShortDebugString());
    return events;
  });
}

// The relay knows no masses: it asks upstream for the events of the lowest
// threshold and the largest cap its viewers wish, each with the speed the
// server computed, and gives each viewer what its own wishes let through.
TEST(Relay, EventThresholdsThroughARelayGiveWhatADirectViewerGets) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address());
  ASSERT_NE(r.port(), 0) << r.log();
  // Two wishes: a threshold that keeps some of the pile's contacts, and a
  // lower one with a cap (the relay asks upstream for speed >= 0.1, no cap).
  constexpr double kHigh = 0.3, kLow = 0.1;
  constexpr std::uint32_t kCap = 4;
  client::Connection relayed_high = event_viewer(r.port(), kHigh, 0);
  client::Connection relayed_low = event_viewer(r.port(), kLow, kCap);
  client::Connection direct_high = event_viewer(s.port(), kHigh, 0);
  client::Connection direct_low = event_viewer(s.port(), kLow, kCap);
  // The relay reconnects upstream for each new need (within 0.1 s); what
  // came before that is not compared.
  FullEvents drained;
  for (int round = 0; round < 10; ++round)
    for (client::Connection* c : {&relayed_high, &relayed_low, &direct_high, &direct_low})
      collect_full_events(*c, 0.03, &drained);
  FullEvents rh, rl, dh, dl;
  for (int round = 0; round < 25; ++round) {
    collect_full_events(direct_high, 0.03, &dh);
    collect_full_events(relayed_high, 0.03, &rh);
    collect_full_events(direct_low, 0.03, &dl);
    collect_full_events(relayed_low, 0.03, &rl);
  }
  int common = 0, with_events = 0, differ = 0;
  for (const auto& [tick, high] : rh) {
    const auto d_high = dh.find(tick), d_low = dl.find(tick), r_low = rl.find(tick);
    if (d_high == dh.end() || d_low == dl.end() || r_low == rl.end()) continue;
    ++common;
    with_events += high.empty() ? 0 : 1;
    differ += high != r_low->second ? 1 : 0;
    EXPECT_EQ(high, d_high->second) << "tick " << tick << ", speed >= " << kHigh;
    EXPECT_EQ(r_low->second, d_low->second) << "tick " << tick << ", speed >= " << kLow << ", at most " << kCap;
    EXPECT_LE(r_low->second.size(), kCap);
  }
  EXPECT_GT(common, 20) << r.log();
  EXPECT_GT(with_events, 5) << "the threshold left too few events to compare";
  EXPECT_GT(differ, 0) << "the two wishes never gave different events";
}

// A relay re-quantizes what it decoded for each viewer: exact for a viewer
// whose quantum is the upstream's, so a relay whose viewers all ask for 4 mm
// asks the upstream for 4 mm, and they get the server's own 4 mm integers
// (decoded through 1 mm first, some would be a quantum off).
TEST(Relay, ViewersAtACoarserQuantumGetTheServersOwnRounding) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address());
  ASSERT_NE(r.port(), 0) << r.log();
  client::Connection relayed = viewer(r.port(), 0.004);
  client::Connection direct = viewer(s.port(), 0.004);
  std::map<std::uint64_t, Seen> drained;
  for (int round = 0; round < 10; ++round)
    for (client::Connection* c : {&relayed, &direct}) collect(*c, 0.03, &drained);
  std::map<std::uint64_t, Seen> a, b;
  collect_in_turns(direct, relayed, 20, 0.03, &a, &b);
  const int common = for_common_ticks(a, b, [](std::uint64_t tick, const Seen& seen, const Seen& there) {
    ASSERT_FALSE(seen.x.empty());
    EXPECT_EQ(seen.x, there.x) << "tick " << tick;
    EXPECT_EQ(seen.y, there.y) << "tick " << tick;
  });
  EXPECT_GT(common, 20) << r.log();
  EXPECT_NE(r.log().find("quanta 0.004 m"), std::string::npos) << r.log();
}

TEST(Relay, ViewersStayThroughAnUpstreamRestartAndResume) {
  auto first = std::make_unique<Process>(server());
  const std::uint16_t port = first->port();
  ASSERT_NE(port, 0) << first->log();
  Process r = relay(first->address());
  ASSERT_NE(r.port(), 0) << r.log();
  client::Connection c = viewer(r.port());
  std::map<std::uint64_t, Seen> before;
  collect(c, 0.5, &before);
  ASSERT_FALSE(before.empty());

  first->child().signal(SIGKILL);
  ASSERT_NE(first->child().wait(10), -1);
  first.reset();
  // Upstream gone: the viewer stays connected and hears heartbeats.
  int heartbeats = 0;
  v1::ServerMessage m;
  const auto quiet_end = Clock::now() + std::chrono::milliseconds(2500);
  while (Clock::now() < quiet_end) {
    ASSERT_TRUE(c.receive(&m, 3.0)) << c.error();
    ASSERT_FALSE(m.has_goodbye() || m.has_error()) << m.DebugString();
    heartbeats += m.has_heartbeat() ? 1 : 0;
  }
  EXPECT_GE(heartbeats, 1);

  Process second = server({}, port);
  ASSERT_EQ(second.port(), port) << second.log();
  // The new server's stream comes through the same viewer connection; its
  // ticks start again from the scenario.
  client::Connection direct = viewer(port);
  std::map<std::uint64_t, Seen> after, reference;
  for (int round = 0; round < 40 && after.size() < 20; ++round) {
    collect(c, 0.1, &after);
    collect(direct, 0.05, &reference);
  }
  ASSERT_GE(after.size(), 20u) << r.log();
  int common = 0;
  for (const auto& [tick, seen] : after) {
    const auto it = reference.find(tick);
    if (it == reference.end()) continue;
    ++common;
    EXPECT_EQ(seen.hash, it->second.hash) << "tick " << tick;
  }
  EXPECT_GT(common, 5);
}

TEST(Relay, AViewerJoiningWhilePausedGetsTheCurrentTick) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  client::Connection ctl;
  v1::Hello hello;
  hello.set_role(v1::ROLE_CONTROLLER);
  ASSERT_TRUE(ctl.connect({"127.0.0.1", s.port()}, hello)) << ctl.error();
  v1::Command pause;
  pause.mutable_pause();
  v1::CommandResult result;
  ASSERT_TRUE(ctl.call(pause, &result)) << ctl.error();
  ASSERT_EQ(result.code(), v1::OK) << result.message();
  Process r = relay(s.address());
  ASSERT_NE(r.port(), 0) << r.log();
  // Paused, the server sends nothing new: each viewer's snapshot is the
  // relay's re-send of the tick it has.
  std::uint64_t tick = 0, hash = 0;
  for (int i = 0; i < 2; ++i) {
    client::Connection v = viewer(r.port());
    v1::ServerMessage m;
    do {
      ASSERT_TRUE(v.receive(&m, 3.0)) << v.error() << r.log();
    } while (!m.has_snapshot());
    EXPECT_TRUE(m.snapshot().paused());
    if (i == 0) {
      tick = m.snapshot().tick();
      hash = m.snapshot().state_hash();
    } else {
      EXPECT_EQ(m.snapshot().tick(), tick);
      EXPECT_EQ(m.snapshot().state_hash(), hash);
      EXPECT_TRUE(m.snapshot().events().empty());
    }
  }
}

v1::Command spawn_one(double x) {
  v1::Command c;
  v1::Body& b = *c.mutable_spawn()->add_bodies();
  b.set_id(900001);
  b.mutable_position()->set_x(x);
  b.mutable_position()->set_y(50);
  b.set_radius(0.5);
  return c;
}

// A controller Hello to port with `token`; the Error when refused.
bool control(std::uint16_t port, const std::string& token, client::Connection* c) {
  v1::Hello hello;
  hello.set_role(v1::ROLE_CONTROLLER);
  hello.set_token(token);
  return c->connect({"127.0.0.1", port}, hello);
}

TEST(Relay, ControlNeedsTheRelaysTokenAndReachesTheServer) {
  Process s = server({"--token", "server-secret"});
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address(), {"--token", "relay-secret", "--upstream-token", "server-secret"});
  ASSERT_NE(r.port(), 0) << r.log();
  Process open = relay(s.address());  // no tokens: forwards nothing
  ASSERT_NE(open.port(), 0) << open.log();

  client::Connection c;
  EXPECT_FALSE(control(r.port(), "", &c));
  EXPECT_NE(c.error().find("UNAUTHENTICATED"), std::string::npos) << c.error();
  EXPECT_FALSE(control(r.port(), "server-secret", &c));
  EXPECT_NE(c.error().find("UNAUTHENTICATED"), std::string::npos) << c.error();
  EXPECT_FALSE(control(open.port(), "relay-secret", &c));
  EXPECT_NE(c.error().find("PERMISSION_DENIED"), std::string::npos) << c.error();

  // A viewer of the relay may not command either.
  client::Connection v = viewer(r.port());
  v1::CommandResult result;
  ASSERT_TRUE(v.call(spawn_one(30), &result)) << v.error();
  EXPECT_EQ(result.code(), v1::PERMISSION_DENIED);

  // Wait until the relay is connected upstream (a Welcome with the tick).
  client::Connection ctl;
  ASSERT_TRUE(control(r.port(), "relay-secret", &ctl)) << ctl.error();
  EXPECT_TRUE(ctl.welcome().control());
  v1::Command spawn = spawn_one(30);
  spawn.set_request_id(77);
  for (int attempt = 0; attempt < 50; ++attempt) {
    ASSERT_TRUE(ctl.call(spawn, &result)) << ctl.error();
    if (result.code() != v1::FAILED_PRECONDITION) break;  // upstream not yet connected
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(result.request_id(), 77u);
  ASSERT_EQ(result.code(), v1::OK) << result.message();
  ASSERT_EQ(result.spawned().ids_size(), 1);
  EXPECT_EQ(result.spawned().ids(0), 900001u);
  // The server has it: a second spawn of that id, straight to the server, is refused.
  client::Connection direct;
  ASSERT_TRUE(control(s.port(), "server-secret", &direct)) << direct.error();
  ASSERT_TRUE(direct.call(spawn_one(40), &result)) << direct.error();
  EXPECT_EQ(result.code(), v1::ALREADY_EXISTS) << result.message();
  // And the relay's viewers see it.
  v1::ServerMessage m;
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    ASSERT_TRUE(v.receive(&m, 5.0)) << v.error();
    if (!m.has_snapshot()) continue;
    for (std::uint32_t id : m.snapshot().id()) seen = seen || id == 900001u;
  }
  EXPECT_TRUE(seen);
}

TEST(Relay, AnUpstreamTokenTheServerRefusesStillRelaysTheStream) {
  Process s = server({"--token", "server-secret"});
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address(), {"--token", "relay-secret", "--upstream-token", "not-the-servers"});
  ASSERT_NE(r.port(), 0) << r.log();
  client::Connection v = viewer(r.port());
  std::map<std::uint64_t, Seen> seen;
  collect(v, 1.0, &seen);
  EXPECT_GT(seen.size(), 10u) << r.log();
  // Control is taken here, and refused upstream: the relay is a viewer there.
  client::Connection ctl;
  ASSERT_TRUE(control(r.port(), "relay-secret", &ctl)) << ctl.error();
  v1::CommandResult result;
  ASSERT_TRUE(ctl.call(spawn_one(30), &result)) << ctl.error();
  EXPECT_EQ(result.code(), v1::PERMISSION_DENIED) << result.message();
  EXPECT_NE(r.log().find("refused control"), std::string::npos) << r.log();
}

// A relay has no scenarios of its own: a viewer's ListScenarios goes
// upstream, through a relay that forwards no control, and comes back as the
// server's own answer (the server lists the directory of its --scenario).
TEST(Relay, AViewerListsTheServersScenariosThroughARelay) {
  Process s = server();
  ASSERT_NE(s.port(), 0) << s.log();
  Process r = relay(s.address());
  ASSERT_NE(r.port(), 0) << r.log();
  v1::Command list;
  list.set_request_id(9);
  list.mutable_list_scenarios();
  client::Connection direct = viewer(s.port());
  v1::CommandResult want;
  ASSERT_TRUE(direct.call(list, &want)) << direct.error();
  ASSERT_EQ(want.code(), v1::OK) << want.message();
  ASSERT_GT(want.scenarios().scenarios_size(), 0);
  client::Connection v = viewer(r.port());
  v1::CommandResult got;
  for (int attempt = 0; attempt < 50; ++attempt) {
    ASSERT_TRUE(v.call(list, &got)) << v.error();
    if (got.code() != v1::FAILED_PRECONDITION) break;  // upstream not yet connected
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(got.code(), v1::OK) << got.message();
  EXPECT_EQ(got.request_id(), 9u);
  EXPECT_EQ(got.scenarios().SerializeAsString(), want.scenarios().SerializeAsString());
}

}  // namespace
}  // namespace carom
