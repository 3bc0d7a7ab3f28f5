#pragma once
/// \file The network side of carom-view: one background thread owns the
/// connection to carom-server, receives snapshots (blocking, with short
/// timeouts), keeps the newest few in a small ring for the render thread, sends
/// the commands the render thread queues, and reconnects with exponential
/// backoff when the server is unreachable or goes away.
///
/// Threading: construct, start() and stop() on one thread; every other public
/// function may be called from any thread.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "carom/client/connection.hpp"
#include "carom/v1/protocol.pb.h"

namespace carom::view {

/// One snapshot as it arrived, with what the renderer needs precomputed.
struct Frame {
  v1::Snapshot snapshot;
  std::int64_t arrival_ns = 0;   ///< local CLOCK_MONOTONIC when it was read
  std::uint64_t sequence = 0;    ///< 1, 2, 3... in arrival order, across reconnects
  std::uint64_t connection = 0;  ///< which connection it came on (1, 2, ... per reconnect)
  std::vector<float> speed;      ///< |v| per body in m/s; empty when the snapshot has no velocities
  float speed_scale = 0.0f;      ///< about the 95th percentile of `speed`, m/s (0 when unknown)
};

/// How the feed stands, for the heads-up line and the status message.
struct FeedStatus {
  bool connected = false;
  bool control = false;          ///< this session may send commands
  std::string problem;           ///< why nothing is flowing ("" when all is well)
  std::string note;              ///< the last command refusal or control refusal, for a few seconds
  double snapshots_per_s = 0.0;  ///< over the last second
  double kbytes_per_s = 0.0;     ///< received, kB (1000 bytes) per second, over the last second
  /// What the stream costs: bytes received per body per snapshot, over the
  /// last second and since the start (every message counted; 0 without bodies).
  double bytes_per_body = 0.0;
  double bytes_per_body_all = 0.0;
  std::uint64_t connection = 0;  ///< increases on every successful connect
  std::string server_version;
};

struct FeedOptions {
  client::Address address;
  std::string token;             ///< controller token ("" = none)
  bool want_control = true;      ///< connect as a controller when the server allows it
  double max_rate_hz = 0.0;      ///< SnapshotWishes.max_rate_hz (0 = every snapshot)
  std::string client_name = "carom-view";
  bool log = true;               ///< print connection problems on stderr
};

class Feed {
 public:
  /// How many snapshots the ring keeps (the interpolation needs 2-4).
  static constexpr std::size_t kRing = 8;

  explicit Feed(FeedOptions options);
  ~Feed();
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;

  /// Starts the network thread. Owner thread.
  void start();
  /// Stops it and closes the connection. Owner thread; also done by the destructor.
  void stop();

  /// The newest snapshots, oldest first (at most kRing). Any thread.
  std::vector<std::shared_ptr<const Frame>> frames() const;
  /// Waits until at least one snapshot arrived, at most timeout_s. Any thread.
  bool wait_for_snapshot(double timeout_s) const;
  FeedStatus status() const;
  /// Queues `command` for the server; `what` names it in a refusal note
  /// ("pause", "spawn"). Dropped (with a note) without control. Any thread.
  void send(v1::Command command, std::string what);

 private:
  void run();
  bool connect_once(client::Connection* connection);
  void serve(client::Connection* connection);
  void push(v1::Snapshot&& snapshot);
  void set_problem(std::string problem);
  void set_note(std::string note);
  void sleep_for(double seconds);

  FeedOptions options_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<std::shared_ptr<const Frame>> ring_;
  FeedStatus status_;
  std::int64_t note_until_ns_ = 0;
  std::vector<std::pair<v1::Command, std::string>> outbox_;

  // Network thread only.
  std::uint64_t sequence_ = 0;
  std::uint64_t connection_ = 0;
  std::uint64_t next_request_ = 1;
  std::vector<std::pair<std::uint64_t, std::string>> pending_;  // request id, what
  std::deque<std::int64_t> snapshot_times_;                     // arrivals in the last second
  struct ByteMark {
    std::int64_t time;
    std::uint64_t bytes, bodies;  // totals so far
  };
  std::deque<ByteMark> byte_marks_;
  std::uint64_t bytes_before_ = 0;    // bytes of earlier connections
  std::uint64_t bodies_received_ = 0;  // bodies of every snapshot so far, summed
};

}  // namespace carom::view
