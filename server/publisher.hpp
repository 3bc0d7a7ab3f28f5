#pragma once
/// \file SnapshotPublisher: the snapshot thread. The simulation thread hands
/// it each tick's capture (a copy of the bodies and the figures, see
/// snapshot.hpp) and goes back to simulating; this thread hashes and encodes
/// the capture and hands the frames to the sessions, so that neither the
/// encoding nor the wake-ups of the network threads fall inside a tick.
///
/// One capture waits at most: when the encoder falls behind, a newer capture
/// replaces the waiting one (its events and results are folded into the newer
/// one, nothing is lost but the skipped frame, counted in snapshots_skipped).
///
/// shared/design.md's "one encoded snapshot per tick" is, here, one frame per
/// variant that some session wants (snapshot.hpp: velocities, events, body
/// tables...), each shared by every session that wants that variant, and
/// encoded here rather than in the tick, so that encoding a large world never
/// lengthens one.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "carom/v1/protocol.pb.h"
#include "snapshot.hpp"
#include "tick_times.hpp"

namespace carom::server {

class Hub;

class SnapshotPublisher {
 public:
  /// Collision events a capture keeps (the rest are counted as dropped).
  static constexpr std::size_t kMaxEvents = std::size_t{1} << 16;

  explicit SnapshotPublisher(Hub& hub) : hub_(hub) {}
  ~SnapshotPublisher() { stop(); }
  SnapshotPublisher(const SnapshotPublisher&) = delete;
  SnapshotPublisher& operator=(const SnapshotPublisher&) = delete;

  /// Starts the snapshot thread. Once.
  void start();
  /// Publishes what is waiting, then ends the thread. Not from the snapshot thread.
  void stop();

  /// An empty capture, with buffers kept from earlier ticks. Simulation thread.
  std::unique_ptr<SnapshotCapture> buffer();
  /// Hands a capture over and returns at once. Simulation thread.
  void publish(std::unique_ptr<SnapshotCapture> capture);

 private:
  void run();
  void refresh_timing(std::uint64_t late);

  Hub& hub_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::unique_ptr<SnapshotCapture> pending_;
  std::vector<std::unique_ptr<SnapshotCapture>> spare_;
  bool stopping_ = false;
  std::thread thread_;

  // Snapshot thread only.
  SnapshotEncoder encoder_;
  TickWindow window_;  // mirror of the simulation thread's tick-time window
  std::uint64_t window_generation_ = 0;
  v1::Stats timing_;   // its figures, worked out about once a second
  std::chrono::steady_clock::time_point timing_at_{};
};

}  // namespace carom::server
