#pragma once
/// \file What the fuzz targets and the seed writer share: the SimState
/// configuration the targets run with, the byte form of a whole SimState
/// (for "a refused command changes nothing"), the command-stream format of
/// the commands target, and the check that stops the run on a broken
/// invariant (libFuzzer reports the trap as a crash and keeps the input).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "carom/proto/framing.hpp"
#include "sim_state.hpp"

namespace carom::fuzz {

/// Bodies a fuzzed world may hold. Small on purpose: stepping is the costly
/// part, and the targets must reach 10^6 executions in `scripts/fuzz 600` on
/// 2 cores. Bugs of the solver are found on small worlds as well; carom's
/// tests and benchmarks cover the large ones.
inline constexpr std::uint32_t kMaxBodies = 32;

/// Continuous solver: events per body and step (plus 4096) before the step
/// ends early. With the server's 256 one execution could process tens of
/// thousands of events (inelastic collapse under strong gravity reaches the
/// budget every step); a smaller budget keeps executions cheaper and reaches
/// the capped path more often.
inline constexpr std::uint32_t kContinuousEventsPerBody = 16;

/// The server's SimOptions (its defaults) with the fuzz limits and one
/// thread: results never depend on the thread count, and one thread keeps an
/// execution cheap and reproducible.
inline server::SimOptions sim_options(const std::string& scenario_dir = {}) {
  server::SimOptions o;
  o.config.max_bodies = kMaxBodies;
  o.config.continuous_events_per_body = kContinuousEventsPerBody;
  o.config.threads = 1;
  o.tick_hz = 60.0;
  o.scenario_dir = scenario_dir;
  return o;
}

/// Everything a command could change, as bytes: the saved world (bodies,
/// parameters, ids, solver state, tick, paused) and the bits of the tick rate.
/// One message is reused: its repeated fields keep their capacity, which
/// spares most of the allocations of a state taken before every command.
inline void state_of(const server::SimState& sim, std::string* out) {
  static v1::SavedWorld saved;
  saved.Clear();
  sim.save(&saved);
  out->clear();
  saved.AppendToString(out);
  const double hz = sim.tick_hz();
  out->append(reinterpret_cast<const char*>(&hz), sizeof hz);
}
inline std::string state_of(const server::SimState& sim) {
  std::string out;
  state_of(sim, &out);
  return out;
}

/// For a failure report: where two states first differ, as text lines.
inline std::string difference(const server::SimState& a, const server::SimState& b) {
  v1::SavedWorld sa, sb;
  a.save(&sa);
  b.save(&sb);
  const std::string ta = sa.DebugString() + "tick_hz: " + std::to_string(a.tick_hz()) + "\n";
  const std::string tb = sb.DebugString() + "tick_hz: " + std::to_string(b.tick_hz()) + "\n";
  std::size_t line = 0, at = 0;
  while (at < ta.size() && at < tb.size() && ta[at] == tb[at]) {
    if (ta[at] == '\n') line = at + 1;
    ++at;
  }
  if (at == ta.size() && at == tb.size()) return "same text (bytes differ)";
  auto lines = [&](const std::string& t) { return t.substr(line, std::min<std::size_t>(400, t.size() - line)); };
  return "first difference at text line " + std::to_string(std::count(ta.begin(), ta.begin() + line, '\n') + 1) +
         ":\n--- first\n" + lines(ta) + "\n--- second\n" + lines(tb);
}

/// The commands target's input: protobuf-delimited v1::Command messages (the
/// server's own framing), each followed by `request_id % kMaxTicksPerCommand`
/// ticks of the loop (script, then a step when one is due). At most
/// kMaxCommandsPerInput frames are read and kMaxTicksPerInput ticks run:
/// stepping is most of an execution's cost.
inline constexpr std::uint64_t kMaxTicksPerCommand = 4;
inline constexpr int kMaxTicksPerInput = 3;
inline constexpr int kMaxCommandsPerInput = 12;

/// For LLVMFuzzerInitialize: protobuf's log lines (invalid UTF-8 in a string
/// field, ...) describe inputs the code refuses anyway; thousands of them a
/// second only slow the run and bury libFuzzer's own report.
inline void quiet_protobuf() { google::protobuf::SetLogHandler(nullptr); }

[[noreturn]] inline void fail(const char* condition, const std::string& detail) {
  std::fprintf(stderr, "carom fuzz: invariant broken: %s\n  %s\n", condition, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace carom::fuzz

/// Stops the run (a crash libFuzzer reports, with the input kept) when
/// `cond` is false; `detail` (a std::string expression) is built only then.
#define CAROM_FUZZ_CHECK(cond, detail)                   \
  do {                                                   \
    if (!(cond)) ::carom::fuzz::fail(#cond, (detail));   \
  } while (0)
