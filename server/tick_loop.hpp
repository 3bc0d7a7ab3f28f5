#pragma once
/// \file TickLoop: the simulation thread. It alone touches the SimState while
/// it runs: it sleeps until the next tick is due (or a command comes),
/// applies the queued commands at the tick boundary in arrival order, runs
/// the scenario script, steps, and hands each tick's capture to the snapshot
/// thread (publisher.hpp). While paused it re-sends the tick when the world
/// is edited or a viewer joins, and sends a heartbeat about once a second.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "carom/v1/protocol.pb.h"
#include "hub.hpp"
#include "options.hpp"
#include "snapshot.hpp"
#include "tick_times.hpp"

namespace carom::server {

class SimState;
class Session;
class SnapshotPublisher;

class TickLoop {
 public:
  /// The references must outlive the loop; `sim` is the loop's alone from
  /// start() to stop().
  TickLoop(SimState& sim, Hub& hub, SnapshotPublisher& publisher, const ServerOptions& options);
  ~TickLoop() { stop(); }
  TickLoop(const TickLoop&) = delete;
  TickLoop& operator=(const TickLoop&) = delete;

  /// Starts the simulation thread. Once.
  void start();
  /// Ends the simulation thread after the tick in progress and joins it.
  /// Not from the simulation thread.
  void stop();

 private:
  using Clock = std::chrono::steady_clock;

  void run();
  Clock::time_point wake_time() const;
  Clock::duration period() const;
  // One pass of the loop, a step each.
  void on_commands(std::vector<PendingCommand>& commands, Clock::time_point now);
  void apply_commands(std::vector<PendingCommand>& commands);
  void on_tick(Clock::time_point woke, bool running);
  void collect_events();
  bool take_paused_changes();
  void on_paused_change();
  void on_heartbeat();
  void save_if_due();
  // What goes out.
  void publish_snapshot(std::optional<v1::CommandResult> after = std::nullopt);
  void publish_public();
  void fill_stats(v1::Stats* out);
  void update_rate();

  SimState& sim_;
  Hub& hub_;
  SnapshotPublisher& publisher_;
  const ServerOptions& options_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;

  // Simulation thread only.
  TickTimes tick_times_;
  std::vector<TickEvent> events_;  // since the last snapshot
  std::uint64_t events_dropped_ = 0;
  std::uint64_t snapshot_every_ = 1;
  std::weak_ptr<Session> step_waiter_;  // who sent the Step in progress
  // Results of commands applied while the world ran, held until the tick
  // that shows them is known: the next step's, or the current tick re-sent
  // if a pause comes first (see apply_commands).
  std::vector<std::pair<std::weak_ptr<Session>, v1::CommandResult>> unanswered_;
  void answer(std::uint64_t tick);
  double tick_hz_ = 0.0;                // the rate the schedule follows
  Clock::time_point next_{};            // when the next tick is due
  Clock::time_point last_stream_{};     // the last snapshot or heartbeat
  Clock::time_point last_save_{};
  bool was_running_ = false;
};

}  // namespace carom::server
