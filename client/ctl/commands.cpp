// carom-ctl commands: one connection, one request (or a script), one result.
// Command errors go to stderr as "carom-ctl: COMMAND: CODE: message" (or
// "FILE:LINE: CODE: message" when the request came from a scenario file) and
// exit 1; a connection that cannot be made or breaks exits 2.

#include "commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>

#include "carom/client/connection.hpp"
#include "carom/client/names.hpp"
#include "carom/proto/framing.hpp"
#include "carom/proto/text.hpp"
#include "output.hpp"
#include "values.hpp"

namespace carom::ctl {

namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

/// SIGINT / SIGTERM set g_interrupted. No SA_RESTART: a blocked poll()
/// returns, and the receive loops look at the flag at least every 250 ms.
void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void print_error(const std::string& what) { std::fprintf(stderr, "carom-ctl: %s\n", what.c_str()); }

// Follows a snapshot stream: the newest tick and whether the world is paused.
// False (after saying why) when the server ended the session.
bool follow(const char* command, const v1::ServerMessage& message, std::uint64_t* tick, bool* paused) {
  if (message.has_snapshot()) {
    *tick = std::max(*tick, message.snapshot().tick());
    *paused = message.snapshot().paused();
  } else if (message.has_heartbeat()) {
    *tick = std::max(*tick, message.heartbeat().tick());
    *paused = true;
  } else if (message.has_goodbye()) {
    print_error(std::string(command) + ": the server said goodbye: " + message.goodbye().reason());
    return false;
  } else if (message.has_error()) {
    print_error(std::string(command) + ": " + client::code_name(message.error().code()) + ": " +
                message.error().message());
    return false;
  }
  return true;
}

/// One controller connection.
class Session {
 public:
  explicit Session(const Globals& g) : g_(g) {}

  /// Connects and says Hello (as a controller unless `role` says otherwise);
  /// prints why not and returns false.
  bool open(const v1::SnapshotWishes* wishes = nullptr, v1::Role role = v1::ROLE_CONTROLLER) {
    client::Address address;
    std::string error;
    if (!client::parse_address(g_.server, &address, &error)) {
      print_error(error);
      return false;
    }
    v1::Hello hello;
    hello.set_role(role);
    hello.set_client_name("carom-ctl");
    hello.set_token(g_.token);
    if (wishes != nullptr) *hello.mutable_wishes() = *wishes;
    if (!connection_.connect(address, std::move(hello), g_.timeout_s)) {
      print_error(connection_.error());
      return false;
    }
    return true;
  }

  /// Sends `command` and waits for its result (extra_s on top of the
  /// timeout); prints why not and returns false when no result came.
  bool call(v1::Command command, v1::CommandResult* result, double extra_s = 0.0) {
    command.clear_request_id();
    const std::string name = command_name(command);
    if (!connection_.call(std::move(command), result, g_.timeout_s + extra_s)) {
      print_error(name + ": " + connection_.error());
      return false;
    }
    return true;
  }

  client::Connection& connection() { return connection_; }
  const v1::Welcome& welcome() const { return connection_.welcome(); }

 private:
  const Globals& g_;
  client::Connection connection_;
};

/// Prints a result: JSON with --json, else `print_ok` on success; command
/// errors go to stderr. Returns the exit status.
int finish(const Globals& g, const std::string& name, const v1::CommandResult& result,
           const std::function<void()>& print_ok) {
  if (g.json) std::printf("%s\n", to_json(result).c_str());
  if (result.code() != v1::OK) {
    print_error(name + ": " + client::code_name(result.code()) + ": " + result.message());
    return kExitCommandError;
  }
  if (!g.json) print_ok();
  return kExitOk;
}

/// Connect, send one command, print the result.
int run_one(const Globals& g, v1::Command command, const std::function<void(const v1::CommandResult&)>& print_ok,
            double extra_s = 0.0) {
  Session session(g);
  if (!session.open()) return kExitUsage;
  const std::string name = command_name(command);
  v1::CommandResult result;
  if (!session.call(std::move(command), &result, extra_s)) return kExitUsage;
  return finish(g, name, result, [&] { print_ok(result); });
}

unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

/// The line in a parsed scenario that a result's field (CommandResult.field)
/// points at: the deepest located part of the path, tried as given and under
/// each prefix in `prefixes` (so "bodies[3].radius" and
/// "spawn.bodies[3].radius" both land). 0 when nothing matches.
int line_for_field(const v1::Scenario& scenario, const proto::TextLocations& locations, const std::string& field,
                   const std::vector<std::string>& prefixes) {
  std::string path = field;
  for (const char* strip : {"load_scenario.", "scenario."}) {
    if (path.rfind(strip, 0) == 0) path.erase(0, std::strlen(strip));
  }
  int line = 0;
  for (const auto& prefix : prefixes) {
    const std::string full = path.empty() ? prefix : (prefix.empty() ? path : prefix + "." + path);
    if (!full.empty()) line = std::max(line, locations.line_of(scenario, full));
  }
  return line;
}

/// "FILE:LINE: CODE: message" (or "FILE: ..." when the line is unknown).
void print_located(const std::string& file, int line, const v1::CommandResult& result) {
  const std::string where = line > 0 ? file + ":" + std::to_string(line) : file;
  std::fprintf(stderr, "%s: %s: %s\n", where.c_str(), client::code_name(result.code()).c_str(),
               result.message().c_str());
}

bool is_text_name(const std::string& file) {
  for (const char* ext : {".txtpb", ".textproto", ".txt", ".pbtxt"}) {
    if (file.size() >= std::strlen(ext) && file.compare(file.size() - std::strlen(ext), std::string::npos, ext) == 0) {
      return true;
    }
  }
  return false;
}

/// Extra seconds to wait for the result of a Step of `count` ticks.
double step_allowance(std::uint64_t count, double tick_hz) {
  return static_cast<double>(count) / std::max(tick_hz, 1.0) * 1.5;
}

}  // namespace

int run_ping(const Globals& g) {
  Session session(g);
  if (!session.open()) return kExitUsage;
  v1::Command command;
  command.mutable_ping();
  v1::CommandResult result;
  const auto start = Clock::now();
  if (!session.call(command, &result)) return kExitUsage;
  const double rtt_ms = seconds_since(start) * 1e3;
  if (g.json) {
    auto json = nlohmann::ordered_json::parse(to_json(result));
    json["rtt_ms"] = rtt_ms;
    std::printf("%s\n", json.dump().c_str());
  }
  if (result.code() != v1::OK) {
    print_error("ping: " + client::code_name(result.code()) + ": " + result.message());
    return kExitCommandError;
  }
  if (!g.json) {
    std::printf("pong from %s (%s): %.3f ms, tick %llu\n", g.server.c_str(),
                session.welcome().server_version().c_str(), rtt_ms, ull(result.tick()));
  }
  return kExitOk;
}

int run_spawn(const Globals& g, const v1::Command& command) {
  return run_one(g, command, [](const v1::CommandResult& r) {
    const auto& ids = r.spawned().ids();
    if (ids.size() <= 20) {
      std::printf("spawned %d bod%s:", ids.size(), ids.size() == 1 ? "y" : "ies");
      for (const auto id : ids) std::printf(" %u", id);
      std::printf("\n");
    } else {
      const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
      std::printf("spawned %d bodies (ids %u..%u)\n", ids.size(), *lo, *hi);
    }
  });
}

int run_remove(const Globals& g, const v1::Command& command) {
  const v1::Remove& remove = command.remove();
  return run_one(g, command, [&](const v1::CommandResult& r) {
    if (remove.all()) {
      std::printf("removed all bodies (tick %llu)\n", ull(r.tick()));
    } else {
      std::printf("removed %d bod%s (tick %llu)\n", remove.ids_size(), remove.ids_size() == 1 ? "y" : "ies",
                  ull(r.tick()));
    }
  });
}

int run_set(const Globals& g, const v1::Command& command) {
  const std::uint32_t id = command.set_body().id();
  return run_one(g, command,
                 [&](const v1::CommandResult& r) { std::printf("body %u set (tick %llu)\n", id, ull(r.tick())); });
}

int run_impulse(const Globals& g, const v1::Command& command) {
  const std::uint32_t id = command.apply_impulse().id();
  return run_one(g, command, [&](const v1::CommandResult& r) {
    std::printf("impulse applied to body %u (tick %llu)\n", id, ull(r.tick()));
  });
}

int run_params(const Globals& g, const v1::Command& command) {
  // Every WorldParams field has presence: an option given, even as 0, is
  // serialized.
  if (command.set_params().params().ByteSizeLong() > 0) {
    return run_one(g, command,
                   [](const v1::CommandResult& r) { std::printf("parameters set (tick %llu)\n", ull(r.tick())); });
  }
  Session session(g);
  if (!session.open()) return kExitUsage;
  const auto& welcome = session.welcome();
  if (g.json) {
    std::printf("%s\n", to_json(welcome.params()).c_str());
  } else {
    print_params(stdout, welcome.params());
    std::printf("tick          %llu (%s)\n", ull(welcome.tick()), welcome.paused() ? "paused" : "running");
  }
  return kExitOk;
}

int run_pause(const Globals& g) {
  v1::Command command;
  command.mutable_pause();
  return run_one(g, command, [](const v1::CommandResult& r) { std::printf("paused at tick %llu\n", ull(r.tick())); });
}

int run_resume(const Globals& g) {
  v1::Command command;
  command.mutable_resume();
  return run_one(g, command, [](const v1::CommandResult& r) { std::printf("resumed at tick %llu\n", ull(r.tick())); });
}

int run_reset(const Globals& g) {
  v1::Command command;
  command.mutable_reset();
  return run_one(g, command, [](const v1::CommandResult& r) { std::printf("reset at tick %llu\n", ull(r.tick())); });
}

int run_step(const Globals& g, const v1::Command& command) {
  Session session(g);
  if (!session.open()) return kExitUsage;
  const std::uint64_t count = command.step().count();
  v1::CommandResult result;
  if (!session.call(command, &result, step_allowance(count, session.welcome().tick_hz()))) return kExitUsage;
  return finish(g, "step", result, [&] {
    std::printf("stepped %llu tick%s, now at tick %llu\n", ull(count), count == 1 ? "" : "s", ull(result.tick()));
  });
}

int run_load(const Globals& g, const std::string& name_or_file) {
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(name_or_file, ec);
  v1::Command command;
  v1::Scenario scenario;
  proto::TextLocations locations;
  if (is_file) {
    std::string error;
    if (!proto::parse_text_file(name_or_file, &scenario, &error, &locations)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return kExitCommandError;
    }
    *command.mutable_load_scenario()->mutable_scenario() = scenario;
  } else if (name_or_file.find('/') != std::string::npos || is_text_name(name_or_file)) {
    // Looks like a path, not a scenario name: the file is missing.
    std::fprintf(stderr, "%s: no such file\n", name_or_file.c_str());
    return kExitCommandError;
  } else {
    command.mutable_load_scenario()->set_name(name_or_file);
  }
  Session session(g);
  if (!session.open()) return kExitUsage;
  v1::CommandResult result;
  if (!session.call(command, &result)) return kExitUsage;
  if (g.json) std::printf("%s\n", to_json(result).c_str());
  if (result.code() != v1::OK) {
    if (is_file) {
      print_located(name_or_file, line_for_field(scenario, locations, result.field(), {""}), result);
    } else {
      print_error("load: " + client::code_name(result.code()) + ": " + result.message());
    }
    return kExitCommandError;
  }
  if (!g.json) {
    const std::string name = is_file ? scenario.name() : name_or_file;
    std::printf("loaded scenario '%s'%s at tick %llu\n", name.c_str(),
                is_file ? (" from " + name_or_file).c_str() : "", ull(result.tick()));
  }
  return kExitOk;
}

int run_save(const Globals& g, const std::string& file) {
  Session session(g);
  if (!session.open()) return kExitUsage;
  v1::Command command;
  command.mutable_save_world();
  v1::CommandResult result;
  if (!session.call(command, &result)) return kExitUsage;
  if (result.code() == v1::OK && !result.has_world()) {
    print_error("save: the server's result has no world");
    return kExitCommandError;
  }
  std::string bytes;
  if (result.code() == v1::OK) {
    result.world().SerializeToString(&bytes);
    std::string error;
    if (!proto::write_file_atomically(file, bytes, &error)) {
      print_error("save: " + error);
      return kExitCommandError;
    }
  }
  // The world itself is in FILE; --json prints the result without it.
  v1::CommandResult summary = result;
  summary.clear_world();
  return finish(g, "save", summary, [&] {
    std::printf("saved %d bodies at tick %llu to %s (%zu bytes)\n", result.world().id_size(),
                ull(result.world().tick()), file.c_str(), bytes.size());
  });
}

int run_load_world(const Globals& g, const std::string& file) {
  std::string bytes;
  if (!proto::read_file(file, &bytes)) {
    std::fprintf(stderr, "%s: cannot read the file\n", file.c_str());
    return kExitCommandError;
  }
  v1::Command command;
  auto* world = command.mutable_load_world()->mutable_world();
  const bool text = is_text_name(file);
  if (text || !world->ParseFromString(bytes)) {
    std::string error;
    world->Clear();
    if (!proto::parse_text(bytes, file, world, &error)) {
      std::fprintf(stderr, "%s\n",
                   text ? error.c_str() : (file + ": neither a binary nor a text-format SavedWorld").c_str());
      return kExitCommandError;
    }
  }
  const int bodies = world->id_size();
  if (const std::size_t size = command.ByteSizeLong(); size > proto::kDefaultMaxClientFrame) {
    std::fprintf(stderr,
                 "carom-ctl: note: this world is %zu bytes, over the server's default frame limit of %zu "
                 "(carom-server --max-frame-bytes)\n",
                 size, proto::kDefaultMaxClientFrame);
  }
  return run_one(g, command, [&](const v1::CommandResult& r) {
    std::printf("loaded world from %s: %d bodies (tick %llu)\n", file.c_str(), bodies, ull(r.tick()));
  });
}

int run_get_world(const Globals& g, WorldFormat format) {
  Session session(g);
  if (!session.open()) return kExitUsage;
  v1::Command command;
  command.mutable_get_world();
  v1::CommandResult result;
  if (!session.call(command, &result)) return kExitUsage;
  if (format == WorldFormat::kJson && !g.json) {
    if (result.code() != v1::OK) return finish(g, "get_world", result, [] {});
    std::printf("%s\n", to_json(result.world()).c_str());
    return kExitOk;
  }
  return finish(g, "get_world", result, [&] {
    if (format == WorldFormat::kText) {
      std::string text;
      google::protobuf::TextFormat::PrintToString(result.world(), &text);
      std::fputs(text.c_str(), stdout);
    } else {
      print_world_table(stdout, result.world());
    }
  });
}

int run_stats(const Globals& g, bool reset_timing) {
  v1::Command command;
  command.mutable_get_stats()->set_reset_timing(reset_timing);
  return run_one(g, command, [](const v1::CommandResult& r) { print_stats(stdout, r.stats()); });
}

int run_scenarios(const Globals& g) {
  // As a viewer (listing is read-only): no token needed, and the snapshots a
  // viewer always gets are kept to one a second without bodies.
  Session session(g);
  v1::SnapshotWishes wishes;
  wishes.set_omit_bodies(true);
  wishes.set_max_rate_hz(1.0);
  if (!session.open(&wishes, v1::ROLE_VIEWER)) return kExitUsage;
  v1::Command command;
  command.mutable_list_scenarios();
  v1::CommandResult result;
  if (!session.call(command, &result)) return kExitUsage;
  return finish(g, "list_scenarios", result, [&] {
    const auto& list = result.scenarios().scenarios();
    std::size_t width = 4;
    for (const v1::ScenarioInfo& s : list) width = std::max(width, s.name().size());
    std::printf("%-*s %9s  %s\n", static_cast<int>(width), "name", "bodies", "description");
    for (const v1::ScenarioInfo& s : list) {
      if (s.error().empty()) {
        std::printf("%-*s %9llu  %s\n", static_cast<int>(width), s.name().c_str(), ull(s.bodies()),
                    s.description().c_str());
      } else {
        std::printf("%-*s %9s  (does not parse: %s)\n", static_cast<int>(width), s.name().c_str(), "-",
                    s.error().c_str());
      }
    }
    if (result.scenarios().truncated()) std::printf("(the first %d by name: the directory holds more)\n", list.size());
  });
}

int run_watch(const Globals& g, double seconds, bool bodies, bool plain) {
  Session session(g);
  v1::SnapshotWishes wishes;
  wishes.set_omit_bodies(!bodies);
  session.connection().set_compact(!plain);
  if (!session.open(&wishes)) return kExitUsage;
  catch_interrupts();
  auto& connection = session.connection();

  const auto start = Clock::now();
  auto window_start = start;
  auto last_message = start;
  std::uint64_t window_bytes = connection.bytes_received();
  std::uint64_t window_snapshots = 0;
  std::uint64_t window_bodies = 0;  // summed over the window's snapshots
  v1::Stats stats;
  std::uint64_t tick = session.welcome().tick();
  bool paused = session.welcome().paused();

  while (g_interrupted == 0) {
    double wait = std::min(0.25, std::max(0.0, 1.0 - seconds_since(window_start)));
    if (seconds > 0) wait = std::min(wait, seconds - seconds_since(start));
    v1::ServerMessage message;
    if (connection.receive(&message, std::max(wait, 0.001))) {
      last_message = Clock::now();
      if (message.has_snapshot()) {
        stats = message.snapshot().stats();
        ++window_snapshots;
        window_bodies += static_cast<std::uint64_t>(message.snapshot().id_size());
      }
      if (!follow("watch", message, &tick, &paused)) return kExitUsage;
    } else if (!connection.connected()) {
      print_error("watch: " + connection.error());
      return kExitUsage;
    }
    if (!paused && seconds_since(last_message) > std::max(g.timeout_s, 3.0)) {
      print_error(fmt::format("watch: nothing from the server for {:.1f} s", seconds_since(last_message)));
      return kExitUsage;
    }
    // poll() counts whole milliseconds, so a window may end a little early.
    const double window = seconds_since(window_start);
    if (window >= 0.995) {
      if (window_snapshots == 0) {
        // No snapshot flows while paused: ask for the stats instead.
        v1::Command command;
        command.mutable_get_stats();
        v1::CommandResult result;
        if (!session.call(command, &result)) return kExitUsage;
        if (result.code() == v1::OK && result.has_stats()) {
          stats = result.stats();
          tick = stats.tick();
          paused = stats.paused();
        }
        last_message = Clock::now();
      }
      const double snapshots_per_s = static_cast<double>(window_snapshots) / window;
      const auto bytes = static_cast<double>(connection.bytes_received() - window_bytes);
      const double kb_per_s = bytes / window / 1e3;
      // What a snapshot cost as received; with the bodies, per body (a
      // paused window also holds the get_stats reply: its few bytes count).
      const double per_snapshot = window_snapshots > 0 ? bytes / static_cast<double>(window_snapshots) : 0.0;
      const double per_body = window_bodies > 0 ? bytes / static_cast<double>(window_bodies) : 0.0;
      if (g.json) {
        nlohmann::ordered_json line = {{"tick", tick},
                               {"bodies", stats.bodies()},
                               {"contacts", stats.contacts()},
                               {"kinetic_energy", stats.kinetic_energy()},
                               {"potential_energy", stats.potential_energy()},
                               {"step_ms", stats.step_seconds() * 1e3},
                               {"step_threads", stats.step_threads()},
                               {"snapshots_per_s", snapshots_per_s},
                               {"kb_per_s", kb_per_s},
                               {"bytes_per_snapshot", per_snapshot},
                               {"paused", paused}};
        if (bodies) {
          line["bytes_per_body"] = per_body;
          line["compact"] = !plain;
        }
        std::printf("%s\n", line.dump().c_str());
      } else {
        const std::string cost = bodies ? fmt::format("  {:.0f} B/snap  {:.2f} B/body{}", per_snapshot, per_body,
                                                      plain ? " (plain)" : "")
                                        : fmt::format("  {:.0f} B/snap", per_snapshot);
        std::printf("tick %llu  bodies %u  contacts %llu  KE %.5g J  step %.2f ms  %.1f snap/s  %.1f kB/s%s%s\n",
                    ull(tick), stats.bodies(), ull(stats.contacts()), stats.kinetic_energy(),
                    stats.step_seconds() * 1e3, snapshots_per_s, kb_per_s, cost.c_str(), paused ? "  paused" : "");
      }
      std::fflush(stdout);
      window_start = Clock::now();
      window_bytes = connection.bytes_received();
      window_snapshots = 0;
      window_bodies = 0;
    }
    if (seconds > 0 && seconds_since(start) >= seconds - 0.005) break;
  }
  return kExitOk;
}

int run_play(const Globals& g, const std::string& file, bool load) {
  v1::Scenario scenario;
  proto::TextLocations locations;
  std::string error;
  if (!proto::parse_text_file(file, &scenario, &error, &locations)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return kExitCommandError;
  }
  Session session(g);
  v1::SnapshotWishes wishes;
  wishes.set_omit_bodies(true);
  if (!session.open(&wishes)) return kExitUsage;
  catch_interrupts();
  auto& connection = session.connection();
  std::uint64_t tick = session.welcome().tick();
  bool paused = session.welcome().paused();
  const double tick_hz = session.welcome().tick_hz();

  if (load) {
    v1::Command command;
    auto* inline_scenario = command.mutable_load_scenario()->mutable_scenario();
    *inline_scenario = scenario;
    inline_scenario->clear_script();
    v1::CommandResult result;
    if (!session.call(command, &result)) return kExitUsage;
    if (g.json) std::printf("%s\n", to_json(result).c_str());
    if (result.code() != v1::OK) {
      print_located(file, line_for_field(scenario, locations, result.field(), {""}), result);
      return kExitCommandError;
    }
    if (!g.json) std::printf("%s: loaded scenario '%s' at tick %llu\n", file.c_str(), scenario.name().c_str(), ull(result.tick()));
    tick = std::max(tick, result.tick());
  } else {
    // The tick at which play starts: the newest the server has shown.
    v1::ServerMessage message;
    if (connection.receive(&message, std::min(g.timeout_s, 1.5))) {
      if (message.has_snapshot()) tick = message.snapshot().tick();
      if (message.has_heartbeat()) tick = message.heartbeat().tick();
    }
  }
  const std::uint64_t start = tick;

  // Script order: by tick, then as written.
  std::vector<int> order(static_cast<std::size_t>(scenario.script_size()));
  for (int i = 0; i < scenario.script_size(); ++i) order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return scenario.script(a).tick() < scenario.script(b).tick(); });

  auto last_message = Clock::now();
  bool told_paused = false;
  for (const int i : order) {
    const auto& timed = scenario.script(i);
    const std::uint64_t due = start + timed.tick();
    while (tick < due) {
      if (g_interrupted != 0) {
        print_error("play: interrupted");
        return kExitCommandError;
      }
      v1::ServerMessage message;
      if (connection.receive(&message, 0.25)) {
        last_message = Clock::now();
        if (!follow("play", message, &tick, &paused)) return kExitUsage;
      } else if (!connection.connected()) {
        print_error("play: " + connection.error());
        return kExitUsage;
      }
      if (paused && !told_paused) {
        std::fprintf(stderr, "carom-ctl: play: the world is paused at tick %llu; waiting for tick %llu\n", ull(tick),
                     ull(due));
        told_paused = true;
      }
      if (!paused && seconds_since(last_message) > std::max(g.timeout_s, 3.0)) {
        print_error(fmt::format("play: nothing from the server for {:.1f} s", seconds_since(last_message)));
        return kExitUsage;
      }
    }
    v1::Command command = timed.command();
    const std::string name = command_name(command);
    const double extra = command.has_step() ? step_allowance(command.step().count(), tick_hz) : 0.0;
    v1::CommandResult result;
    if (!session.call(command, &result, extra)) return kExitUsage;
    last_message = Clock::now();
    const std::string index = "script[" + std::to_string(i) + "]";
    const int line = std::max(locations.line_of(scenario, index), 1);
    if (g.json) std::printf("%s\n", to_json(result).c_str());
    if (result.code() != v1::OK) {
      const int at = line_for_field(scenario, locations, result.field(),
                                    {index, index + ".command", index + ".command." + name});
      print_located(file, std::max(at, line), result);
      return kExitCommandError;
    }
    tick = std::max(tick, result.tick());
    told_paused = false;
    if (!g.json) {
      std::printf("%s:%d: +%llu %s: OK (tick %llu)\n", file.c_str(), line, ull(timed.tick()), name.c_str(),
                  ull(result.tick()));
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace carom::ctl
