// carom-fuzz-seeds: writes the seed corpora of the fuzz targets from the
// project itself, so that no binary blob is checked in and the seeds follow
// the protocol as it changes.
//
// Usage: carom-fuzz-seeds OUT_DIR SCENARIO_DIR
// Writes OUT_DIR/corpus/{frame,scenario,saved_world,commands}/seed-*.bin and
// OUT_DIR/dict/scenario.dict (every field and enum value name a scenario can
// hold, for libFuzzer's -dict). Seeds:
// - frame: real client streams (Hello, then commands) under each frame limit;
// - scenario: every file of SCENARIO_DIR as it is, and each cut down to at
//   most a few dozen bodies so that it loads under the fuzz limit, and a
//   scenario whose script holds every command;
// - saved_world: the worlds of those scenarios after some ticks (warm starts,
//   wall contacts, anchors) under each solver, paused and running, walled
//   and unbounded;
// - commands: hand-written sequences (every command kind, every error, the
//   issue 18 world that left its loader's domain) and random sequences like
//   tests/sim_state_test.cpp's property test;
// - compact: the C++ encoder's frames of a small moving world (key frames,
//   deltas across spawns and removals, positions and velocities, values at
//   the clamp) and its events against those positions.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "carom/proto/compact.hpp"
#include "carom/proto/framing.hpp"
#include "carom/proto/text.hpp"
#include "carom/random.hpp"
#include "carom/v1/protocol.pb.h"
#include "compact_input.hpp"
#include "fuzz_support.hpp"
#include "sim_state.hpp"

namespace fs = std::filesystem;
namespace gp = google::protobuf;
namespace v1 = carom::v1;
using carom::server::SimState;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "carom-fuzz-seeds: " << what << "\n";
  std::exit(1);
}

class Corpus {
 public:
  Corpus(const fs::path& root, const std::string& target) : dir_(root / "corpus" / target) {
    fs::create_directories(dir_);
  }
  void add(const std::string& bytes) {
    char name[32];
    std::snprintf(name, sizeof name, "seed-%04d.bin", count_++);
    std::ofstream out(dir_ / name, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out) die("cannot write " + (dir_ / name).string());
  }
  int count() const { return count_; }

 private:
  fs::path dir_;
  int count_ = 0;
};

template <class Message>
Message parse(const std::string& text) {
  Message m;
  if (!gp::TextFormat::ParseFromString(text, &m)) die("seed text does not parse: " + text);
  return m;
}

using Rng = carom::SplitMix64;  // the same stream as the property test

// One command of every kind, with values that succeed on the worlds the
// sequences build, and some that fail.
const std::vector<std::string> kCommands = {
    "ping {}",
    "spawn { bodies { position { x: 5 y: 5 } velocity { x: 3 y: 0 } radius: 0.5 } }",
    "spawn { bodies { id: 40 position { x: 8 y: 5 } velocity { x: -3 y: 0.5 } radius: 0.5 mass: 2 } "
    "bodies { position { x: 9.2 y: 5.1 } radius: 0.4 } }",
    "spawn { generators { grid { origin { x: 1 y: 0.6 } columns: 5 rows: 3 spacing: 1.1 radius: 0.5 } } }",
    "spawn { generators { random_box { min { x: 1 y: 1 } max { x: 40 y: 40 } count: 12 radius { min: 0.3 max: 0.8 } "
    "speed { min: 0 max: 8 } seed: 3 } } }",
    "spawn { generators { random_disc { center { x: 60 y: 60 } disc_radius: 10 count: 8 radius { min: 0.2 max: 0.6 } "
    "speed { min: 0 max: 4 } seed: 9 mass: 3 } } }",
    "spawn { bodies { position { x: 1e9 y: 5 } radius: 0.5 } }",
    "spawn { bodies { position { x: 5 y: 5 } radius: -1 } }",
    "spawn { bodies { position { x: 50 y: 50 } velocity { x: nan y: 0 } radius: 1 } }",
    "spawn { generators { grid { columns: 100000 rows: 100000 spacing: 1 radius: 0.1 } } }",
    "remove { ids: 1 }",
    "remove { ids: 2 ids: 3 }",
    "remove { all: true }",
    "remove { ids: 999 }",
    "set_body { id: 1 position { x: 20 y: 20 } velocity { x: 0 y: -4 } }",
    "set_body { id: 2 velocity { x: 1e9 y: -1e9 } }",
    "set_body { id: 1 position { x: -5 y: 20 } }",
    "apply_impulse { id: 1 impulse { x: 10 y: 2 } }",
    "apply_impulse { id: 3 impulse { x: 1e300 y: 0 } }",
    "set_params { params { gravity { x: 0 y: -10 } restitution: 0.3 substeps: 8 iterations: 3 } }",
    "set_params { params { solver: SOLVER_VERLET } }",
    "set_params { params { solver: SOLVER_CONTINUOUS } }",
    "set_params { params { solver: SOLVER_DISCRETE linear_damping: 0.6 density: 2 } }",
    "set_params { params { bounds { walled: false } } }",
    "set_params { params { bounds { walled: true min { x: 0 y: 0 } max { x: 100 y: 100 } } } }",
    "set_params { params { bounds { walled: true min { x: 0 y: 0 } max { x: 2 y: 2 } } } }",
    "set_params { params { dt: 1 tick_hz: 1000 } }",
    "set_params { params { dt: 0 } }",
    "set_params { params { substeps: 65 } }",
    "set_params { params { mutual { enabled: true g: 1 softening: 0.1 method: GRAVITY_DIRECT } } }",
    "set_params { params { mutual { enabled: true g: 50 softening: 0 method: GRAVITY_TREE theta: 0.7 } "
    "gravity { x: 0 y: 0 } } }",
    "set_params { params { mutual { enabled: true method: GRAVITY_AUTO theta: 1.5 } bounds { walled: false } } }",
    "set_params { params { mutual { enabled: false } } }",
    "set_params { params { mutual { g: 0 } } }",
    "spawn { generators { random_disc { center { x: 50 y: 50 } disc_radius: 20 inner_radius: 10 orbit_mass: 1000 "
    "velocity { x: 1 y: 0 } count: 12 radius { min: 0.2 max: 0.4 } speed { min: 0 max: 0.5 } seed: 4 } } }",
    "pause {}",
    "step { count: 3 }",
    "step { count: 0 }",
    "resume {}",
    "reset {}",
    "load_scenario { name: \"billiards\" }",
    "load_scenario { name: \"newtons_cradle\" }",
    "load_scenario { name: \"gas\" }",
    "load_scenario { name: \"../etc/passwd\" }",
    "load_scenario { scenario { params { gravity { x: 0 y: -10 } } bodies { position { x: 10 y: 10 } radius: 1 } "
    "script { tick: 1 command { apply_impulse { id: 1 impulse { x: 5 y: 0 } } } } "
    "script { tick: 2 command { spawn { bodies { position { x: 14 y: 10 } radius: 1 } } } } "
    "script { tick: 3 command { reset {} } } } }",
    "save_world {}",
    "get_world {}",
    "get_stats { reset_timing: true }",
    "load_world { world { format: 2 } }",
    "",
};

v1::Command command(const std::string& text, std::uint64_t ticks_after) {
  v1::Command c = parse<v1::Command>(text);
  c.set_request_id(ticks_after);
  return c;
}

std::string stream(const std::vector<v1::Command>& commands) {
  std::string out;
  for (const v1::Command& c : commands) carom::proto::append_frame(c, &out);
  return out;
}

// A scenario cut down so that it loads under the fuzz body limit.
v1::Scenario cut_down(v1::Scenario s) {
  // At most a quarter of the limit from the bodies and from each of two
  // generators.
  const std::uint32_t per = carom::fuzz::kMaxBodies / 4;
  if (s.bodies_size() > static_cast<int>(per)) s.mutable_bodies()->DeleteSubrange(per, s.bodies_size() - per);
  for (v1::Generator& g : *s.mutable_generators()) {
    if (g.has_grid()) {
      g.mutable_grid()->set_columns(std::min<std::uint32_t>(g.grid().columns(), 4));
      g.mutable_grid()->set_rows(std::min<std::uint32_t>(g.grid().rows(), per / 4));
    }
    if (g.has_random_box()) g.mutable_random_box()->set_count(std::min<std::uint32_t>(g.random_box().count(), per));
    if (g.has_random_disc())
      g.mutable_random_disc()->set_count(std::min<std::uint32_t>(g.random_disc().count(), per));
  }
  if (s.generators_size() > 2) s.mutable_generators()->DeleteSubrange(2, s.generators_size() - 2);
  return s;
}

// A cut-down scenario's world after some ticks, less a few bodies (retired
// ids; the rest keep their contacts and warm starts), under each solver.
std::vector<v1::SavedWorld> worlds_of(const v1::Scenario& scenario) {
  const carom::server::SimOptions options = carom::fuzz::sim_options();
  SimState sim(options);
  if (const carom::Status st = sim.load_scenario(scenario); !st.ok()) die("a cut-down scenario: " + st.message());
  for (int k = 0; k < 5; ++k) sim.step();
  std::vector<std::uint32_t> remove;
  const carom::BodiesView bodies = sim.world().bodies();
  for (std::size_t i = 0; i < bodies.id.size(); i += 7) remove.push_back(bodies.id[i]);
  if (!remove.empty()) {
    v1::Command rm;
    rm.mutable_remove()->mutable_ids()->Assign(remove.begin(), remove.end());
    v1::CommandResult r;
    sim.apply(rm, &r);
    if (r.code() != v1::OK) die("cannot cut a world down: " + r.message());
  }
  std::vector<v1::SavedWorld> out;
  const char* solvers[] = {nullptr, "SOLVER_DISCRETE", "SOLVER_VERLET", "SOLVER_CONTINUOUS"};
  for (const char* solver : solvers) {
    SimState copy(options);
    v1::SavedWorld saved;
    sim.save(&saved);
    if (!copy.load_saved(saved).ok()) die("a scenario's world does not load");
    if (solver != nullptr) {
      v1::CommandResult r;
      copy.apply(parse<v1::Command>(std::string("set_params { params { solver: ") + solver + " } }"), &r);
    }
    for (int k = 0; k < 4; ++k) copy.step();
    copy.save(&out.emplace_back());
  }
  out.back().set_paused(true);
  return out;
}

void write_dict(const fs::path& root) {
  std::set<std::string> words = {"{", "}", ":", "true", "false", "nan", "inf", "-inf", "1e9", "-1e9", "1e300",
                                 "0.5", "-1", "4294967295", "18446744073709551615", "#", "\"", "<", ">", "[", "]"};
  std::vector<const gp::Descriptor*> todo = {v1::Scenario::descriptor()};
  std::set<const gp::Descriptor*> seen;
  while (!todo.empty()) {
    const gp::Descriptor* d = todo.back();
    todo.pop_back();
    if (!seen.insert(d).second) continue;
    for (int f = 0; f < d->field_count(); ++f) {
      const gp::FieldDescriptor* field = d->field(f);
      words.insert(field->name());
      if (field->message_type() != nullptr) todo.push_back(field->message_type());
      if (field->enum_type() != nullptr)
        for (int e = 0; e < field->enum_type()->value_count(); ++e) words.insert(field->enum_type()->value(e)->name());
    }
  }
  fs::create_directories(root / "dict");
  std::ofstream out(root / "dict" / "scenario.dict", std::ios::trunc);
  out << "# carom-fuzz-seeds: the words of a carom.v1.Scenario in text format\n";
  for (const std::string& w : words) {
    out << '"';
    for (char c : w) out << (c == '"' || c == '\\' ? "\\" : "") << c;
    out << "\"\n";
  }
  if (!out) die("cannot write the dictionary");
}

}  // namespace

// A few bodies moving at constant velocity in quanta, some at rest, two at
// the clamp; a spawn and a removal on the way. Per frame: each channel's key
// frame and its delta against the previous frame (whose key frame is the
// baseline section), and the frame's events against its positions.
void write_compact_seeds(Corpus* out) {
  using carom::fuzz::CompactInput;
  namespace cp = carom::proto;
  constexpr std::int64_t kMax = cp::kMaxQuantized;
  struct Body {
    std::uint32_t id;
    std::int64_t x, y, vx, vy;
  };
  std::vector<Body> bodies;
  for (std::int64_t i = 0; i < 12; ++i)
    bodies.push_back({static_cast<std::uint32_t>(3 * i + 1), 1000 * i - 5000, 700 - 90 * i, i % 3 == 0 ? 0 : 40 - 7 * i, 3});
  bodies[4].x = kMax, bodies[4].vx = 0;
  bodies[5].y = -kMax, bodies[5].vy = 0;
  cp::Track previous[2];
  std::vector<std::uint32_t> previous_ids;
  for (int frame = 0; frame < 5; ++frame) {
    if (frame == 2) bodies.insert(bodies.begin() + 3, Body{9, 17, -17, 250, -250});  // between two old ids
    if (frame == 3) bodies.erase(bodies.begin() + 7);
    std::vector<std::uint32_t> ids;
    std::vector<std::int64_t> q[4];
    for (Body& b : bodies) {
      b.x = std::clamp(b.x + b.vx, -kMax, kMax);
      b.y = std::clamp(b.y + b.vy, -kMax, kMax);
      ids.push_back(b.id);
      for (int k = 0; k < 4; ++k) q[k].push_back(k == 0 ? b.x : k == 1 ? b.y : k == 2 ? b.vx : b.vy);
    }
    const auto tick = static_cast<std::uint16_t>(100 + frame);
    for (int c = 0; c < 2; ++c) {
      const cp::Channel channel = c == 0 ? cp::Channel::kPosition : cp::Channel::kVelocity;
      const std::uint8_t flags = c == 0 ? 0 : CompactInput::kVelocity;
      cp::Track current;
      cp::advance_track(channel, frame > 0 ? &previous[c] : nullptr, ids, q[2 * c], q[2 * c + 1], &current);
      std::string key;
      cp::encode_track(channel, nullptr, current, &key);
      out->add(CompactInput::make(flags, tick, {}, ids, {}, key));
      if (frame > 0) {
        std::string base, delta;
        cp::encode_track(channel, nullptr, previous[c], &base);
        cp::encode_track(channel, &previous[c], current, &delta);
        out->add(CompactInput::make(flags, tick, previous_ids, ids, base, delta));
      }
      if (c == 0) {
        // Events between neighbours, some of an earlier tick, one with a body
        // that is gone (predicted from the previous point), one of no impulse.
        std::vector<cp::CompactEvent> events;
        for (std::size_t i = 0; i + 1 < ids.size(); i += 2) {
          cp::CompactEvent e;
          e.tick = tick - (i % 3 == 0 ? 1 : 0);
          e.a = ids[i];
          e.b = i == 6 ? 1000 : ids[i + 1];
          e.x = (current.x[i] + current.x[i + 1]) / 2 + static_cast<std::int64_t>(i);
          e.y = (current.y[i] + current.y[i + 1]) / 2 - 3;
          e.ix = cp::to_bfloat16(i == 4 ? 0.0 : 0.25 * static_cast<double>(i));
          e.iy = cp::to_bfloat16(-1.5);
          events.push_back(e);
        }
        std::sort(events.begin(), events.end(), [](const cp::CompactEvent& a, const cp::CompactEvent& b) {
          return a.tick < b.tick;
        });
        std::string tokens, impulses, key_positions;
        cp::encode_events(events, tick, current, &tokens, &impulses);
        cp::encode_track(channel, nullptr, current, &key_positions);
        out->add(CompactInput::make(CompactInput::kEvents, tick, ids, {}, key_positions, tokens, impulses));
      }
      previous[c] = std::move(current);
    }
    previous_ids = ids;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) die("usage: carom-fuzz-seeds OUT_DIR SCENARIO_DIR");
  const fs::path root = argv[1];
  const fs::path scenario_dir = argv[2];
  for (const char* target : {"frame", "scenario", "saved_world", "commands", "compact"}) {
    // Only the seeds are replaced; what the fuzzers found stays.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root / "corpus" / target, ec))
      if (e.path().filename().string().rfind("seed-", 0) == 0) fs::remove(e.path());
  }
  write_dict(root);

  // Scenarios: the shipped files and their cut-down versions.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(scenario_dir))
    if (e.path().extension() == ".txtpb") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) die("no .txtpb file in " + scenario_dir.string());
  Corpus scenarios(root, "scenario");
  Corpus worlds(root, "saved_world");
  std::vector<v1::Scenario> small;
  for (const std::string& name : names) {
    const std::string path = (scenario_dir / (name + ".txtpb")).string();
    std::string text, error;
    if (!carom::proto::read_file(path, &text)) die(path + ": cannot read");
    scenarios.add(text);
    v1::Scenario s;
    if (!carom::proto::parse_text(text, path, &s, &error)) die(error);
    small.push_back(cut_down(s));
    std::string printed;
    gp::TextFormat::PrintToString(small.back(), &printed);
    scenarios.add(printed);
    for (const v1::SavedWorld& w : worlds_of(small.back())) worlds.add(w.SerializeAsString());
  }
  {
    v1::Scenario every;
    every.set_name("every_command");
    every.mutable_params()->set_solver(v1::SOLVER_VERLET);
    for (std::size_t k = 0; k < kCommands.size(); ++k) {
      v1::TimedCommand* t = every.add_script();
      t->set_tick(k % 3);
      *t->mutable_command() = command(kCommands[k].empty() ? "ping {}" : kCommands[k], 0);
    }
    std::string printed;
    gp::TextFormat::PrintToString(every, &printed);
    scenarios.add(printed);
  }
  {
    SimState empty(carom::fuzz::sim_options());
    v1::SavedWorld saved;
    empty.save(&saved);
    worlds.add(saved.SerializeAsString());
  }

  // Command sequences.
  Corpus commands(root, "commands");
  std::vector<v1::Command> all;
  for (std::size_t k = 0; k < kCommands.size(); ++k)
    all.push_back(command(kCommands[k], k % carom::fuzz::kMaxTicksPerCommand));
  commands.add(stream(all));
  const v1::Command grid =
      command("spawn { generators { grid { origin { x: 1 y: 0.6 } columns: 5 rows: 3 spacing: 1.1 radius: 0.5 } } }", 1);
  const v1::Command one = command("spawn { bodies { position { x: 5 y: 5 } velocity { x: 3 y: 0 } radius: 0.5 } }", 0);
  const v1::Command push = command("apply_impulse { id: 1 impulse { x: 10 y: 2 } }", 1);
  for (const std::string& text : kCommands) {
    // Bodies to act on, then the command.
    commands.add(stream({grid, one, command(text, 2)}));
  }
  // The issue 18 world: legal commands that once saved a world its loader refused.
  commands.add(stream({command("set_params { params { bounds { walled: false } gravity { x: 0 y: -1e9 } dt: 1 } }", 0),
                       command("spawn { bodies { position { x: 0 y: 0 } radius: 1 } }", 3),
                       command("ping {}", 3)}));
  // A saved world loaded by command, then edited.
  for (std::size_t w = 0; w < small.size(); ++w) {
    v1::Command load;
    *load.mutable_load_scenario()->mutable_scenario() = small[w];
    load.set_request_id(2);
    v1::Command save = command("save_world {}", 1);
    commands.add(stream({load, push, command("pause {}", 0), command("step { count: 5 }", 3), save}));
  }
  {
    SimState sim(carom::fuzz::sim_options());
    v1::CommandResult r;
    sim.apply(parse<v1::Command>("spawn { generators { random_box { min { x: 1 y: 1 } max { x: 40 y: 40 } count: 12 "
                                 "radius { min: 0.3 max: 0.8 } speed { min: 0 max: 8 } seed: 3 } } }"),
              &r);
    for (int k = 0; k < 10; ++k) sim.step();
    v1::Command load;
    sim.save(load.mutable_load_world()->mutable_world());
    load.set_request_id(3);
    commands.add(stream({load, push, command("pause {}", 0), command("step { count: 2 }", 3)}));
  }
  // Random sequences, as the property test draws them.
  Rng rng{2026};
  const char* solvers[] = {"SOLVER_DISCRETE", "SOLVER_VERLET", "SOLVER_CONTINUOUS"};
  for (int s = 0; s < 24; ++s) {
    std::vector<v1::Command> seq;
    if (s % 2 == 0) seq.push_back(command("pause {}", 0));
    for (int k = 0; k < 12; ++k) {
      char cmd[512];
      switch (rng.below(7)) {
        case 0:
          std::snprintf(cmd, sizeof cmd,
                        "spawn { bodies { position { x: %.17g y: %.17g } velocity { x: %.17g y: %.17g } radius: %.17g } }",
                        rng.uniform(-20, 120), rng.uniform(-20, 120), rng.uniform(-50, 50), rng.uniform(-50, 50),
                        rng.uniform(-0.5, 3));
          break;
        case 1:
          std::snprintf(cmd, sizeof cmd,
                        "spawn { generators { random_box { min { x: 1 y: 1 } max { x: 99 y: 99 } count: %u "
                        "radius { min: 0.3 max: 0.9 } speed { min: 0 max: %.17g } seed: %u } } }",
                        static_cast<unsigned>(rng.below(20)), rng.uniform(0, 30),
                        static_cast<unsigned>(rng.below(1000)));
          break;
        case 2:
          std::snprintf(cmd, sizeof cmd,
                        "set_params { params { gravity { x: %.17g y: %.17g } restitution: %.17g solver: %s "
                        "substeps: %u iterations: %u dt: %.17g } }",
                        rng.uniform(-10, 10), rng.below(5) == 0 ? -1e9 : rng.uniform(-20, 0), rng.uniform(-0.2, 1.2),
                        solvers[rng.below(3)], static_cast<unsigned>(rng.below(10)),
                        static_cast<unsigned>(rng.below(6)), rng.below(5) == 0 ? 1.0 : rng.uniform(0.001, 0.05));
          break;
        case 3:
          std::snprintf(cmd, sizeof cmd,
                        "set_params { params { bounds { walled: %s min { x: 0 y: 0 } max { x: 100 y: 100 } } } }",
                        rng.below(2) == 0 ? "true" : "false");
          break;
        case 4:
          std::snprintf(cmd, sizeof cmd, "apply_impulse { id: %u impulse { x: %.17g y: %.17g } }",
                        static_cast<unsigned>(rng.below(40)), rng.uniform(-1e3, 1e3), rng.uniform(-1e3, 1e3));
          break;
        case 5:
          std::snprintf(cmd, sizeof cmd, "remove { ids: %u }", static_cast<unsigned>(rng.below(40)));
          break;
        default:
          std::snprintf(cmd, sizeof cmd, "step { count: %u }", static_cast<unsigned>(1 + rng.below(20)));
          break;
      }
      seq.push_back(command(cmd, 1 + rng.below(3)));
    }
    commands.add(stream(seq));
  }

  // Frames: byte 0 picks the frame limit, byte 1 the cutting of the stream.
  Corpus frames(root, "frame");
  v1::ClientMessage viewer = parse<v1::ClientMessage>(
      "hello { protocol_version: 1 role: ROLE_VIEWER client_name: \"fuzz\" wishes { max_rate_hz: 30 velocities: true "
      "events: true body_tables: true } }");
  v1::ClientMessage controller =
      parse<v1::ClientMessage>("hello { protocol_version: 1 role: ROLE_CONTROLLER token: \"secret\" }");
  for (int limit = 0; limit < 6; ++limit) {
    std::string s{static_cast<char>(limit), static_cast<char>(limit * 37)};
    carom::proto::append_frame(viewer, &s);
    frames.add(s);
  }
  for (std::size_t k = 0; k < kCommands.size(); k += 3) {
    std::string s{'\0', static_cast<char>(k)};
    carom::proto::append_frame(controller, &s);
    for (std::size_t j = k; j < std::min(k + 3, kCommands.size()); ++j) {
      v1::ClientMessage m;
      *m.mutable_command() = command(kCommands[j], j);
      carom::proto::append_frame(m, &s);
    }
    frames.add(s);
  }
  frames.add(std::string("\0\0\xff\xff\xff\xff\x7f", 7));  // a prefix over any limit
  frames.add(std::string("\0\0\xff\xff\xff\xff\xff\x01", 8));  // not a varint32
  frames.add(std::string("\0\0\x05\x0a\x03\x08\x01", 7));  // a truncated frame

  Corpus compact(root, "compact");
  write_compact_seeds(&compact);

  std::cout << "carom-fuzz-seeds: " << frames.count() << " frame, " << scenarios.count() << " scenario, "
            << worlds.count() << " saved_world, " << commands.count() << " commands, " << compact.count()
            << " compact seeds in " << (root / "corpus").string() << "\n";
  return 0;
}
