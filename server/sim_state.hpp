#pragma once
/// \file SimState: the authoritative world plus what the tick loop keeps beside
/// it (tick counter, paused flag, tick rate, the reset point, a running
/// scenario script), and the one function that applies a protocol Command.
///
/// Threading: only the simulation thread touches a SimState. Network threads
/// never see it; they hand commands to the loop's queue.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carom/proto/text.hpp"
#include "carom/v1/protocol.pb.h"
#include "carom/world.hpp"

namespace carom::server {

/// Fixed at start-up.
struct SimOptions {
  WorldConfig config;             ///< max_bodies, threads
  double tick_hz = 60.0;          ///< initial tick rate (a scenario or set-params may change it)
  std::string scenario_dir;       ///< where LoadScenario{name} looks for NAME.txtpb ("" = nowhere)
};

/// Largest Step.count accepted.
inline constexpr std::uint64_t kMaxStepCount = 100000;
/// Tick rate limits (Hz).
inline constexpr double kMinTickHz = 1.0, kMaxTickHz = 1000.0;

/// carom::StatusCode -> protocol ErrorCode (same meanings).
v1::ErrorCode to_error_code(StatusCode code);

class SimState {
 public:
  explicit SimState(const SimOptions& options);

  /// Replaces the world with a scenario (parameters: defaults overridden by
  /// the scenario's; bodies; generators), makes it the reset point and starts
  /// its script at the current tick (a Reset command starts it again). On
  /// error the world is unchanged and the Status names the field
  /// ("bodies[3].radius", index 3). With a filename or `locations` the
  /// message is prefixed by "FILE:LINE: " (the line found from the field)
  /// and the Status names no field: the file is no part of a request.
  Status load_scenario(const v1::Scenario& scenario, const std::string& filename = {},
                       const proto::TextLocations* locations = nullptr);

  /// Replaces the world with a saved one (bit-exact: same state hash, and the
  /// same trajectory afterwards). Becomes the reset point.
  /// Also takes the saved paused flag and tick rate; moves the tick counter
  /// forward to saved.tick if it is behind (ticks never go back) and ends any running script. Fields
  /// start "world." ("world.state_hash", "world.radius[3]").
  Status load_saved(const v1::SavedWorld& saved);
  /// The complete state (bodies, parameters incl. tick_hz, tick, paused, ids,
  /// solver state, hash).
  void save(v1::SavedWorld* out) const;

  /// Applies one command at the current tick boundary and fills *result
  /// (request_id, code, field at fault as a path in the Command, message
  /// "FIELD: REASON", payload, and tick = the
  /// tick whose snapshot first shows the effect: tick() + 1 while running,
  /// tick() while paused, when the loop re-sends that tick's snapshot). Returns false only for an
  /// accepted Step: its result is completed by step() when the last of its
  /// ticks is done (see take_finished_step).
  bool apply(const v1::Command& command, v1::CommandResult* result);

  /// Sends the script commands that are due at this tick (results dropped,
  /// errors counted in script_errors()).
  void run_script();

  /// True when the loop should step now: running, or paused with steps pending.
  bool should_step() const;
  /// One tick: World::step, tick + 1, pending step count - 1.
  void step();
  /// After step(): the result of a Step command whose last tick just ran.
  std::optional<v1::CommandResult> take_finished_step();

  /// True (once) when the world or the paused flag changed other than by
  /// step() since the last call: while paused the loop then re-sends a
  /// snapshot of the same tick so viewers see the edit.
  bool take_edited();

  /// Stats message fields that SimState knows (bodies, contacts, collisions,
  /// energy, momentum, step seconds, paused, tick, tick_hz).
  void fill_stats(v1::Stats* out) const;
  /// Full parameters incl. tick_hz.
  void fill_params(v1::WorldParams* out) const;

  const World& world() const { return world_; }
  std::uint64_t tick() const { return tick_; }
  bool paused() const { return paused_; }
  /// The tick whose snapshot first shows what was applied now: the next one
  /// while running, the current one (re-sent) while paused.
  std::uint64_t shown_tick() const { return paused_ ? tick_ : tick_ + 1; }
  double tick_hz() const { return tick_hz_; }
  std::uint64_t script_errors() const { return script_errors_; }

 private:
  // What a failed command reports: a protocol code (some, like
  // FAILED_PRECONDITION, have no carom::StatusCode), the field at fault
  // (a path in the Command, "" for none) and the message, "FIELD: REASON".
  struct Failure {
    Failure() = default;
    Failure(v1::ErrorCode c, const std::string& path, const std::string& reason)
        : code(c), field(path), message(field_message(path, reason)) {}
    explicit Failure(const Status& st)
        : code(to_error_code(st.code())), field(st.field()), message(st.message()) {}
    v1::ErrorCode code = v1::OK;
    std::string field;
    std::string message;
  };
  Failure apply_kind(const v1::Command& command, v1::CommandResult* result, bool* accepted_step);
  Failure load_named_scenario(const std::string& name);
  // Replaces world_ with the reset point and starts its script again (the
  // paused flag and the tick are kept).
  Status restore_reset_point();
  void start_script(const std::vector<v1::TimedCommand>& script);

  SimOptions options_;
  World world_;
  std::uint64_t tick_ = 0;
  std::uint64_t escaped_total_ = 0;  // bodies removed for leaving the limits since start
  bool paused_ = false;
  double tick_hz_ = 60.0;
  v1::SavedWorld reset_point_;
  // Running script: commands of the last loaded scenario, relative to script_start_.
  std::vector<v1::TimedCommand> script_;
  std::size_t script_next_ = 0;
  std::uint64_t script_start_ = 0;
  std::uint64_t script_errors_ = 0;
  std::vector<v1::TimedCommand> reset_script_;  // the script that reset starts again
  std::uint64_t script_generation_ = 0;         // + 1 whenever script_ is replaced
  bool in_script_ = false;                      // apply() called by run_script()
  bool edited_ = true;
  // Step command in progress.
  std::uint64_t pending_steps_ = 0;
  std::optional<v1::CommandResult> step_result_;
  bool step_finished_ = false;
  bool step_from_script_ = false;  // nobody waits for its result
};

}  // namespace carom::server
