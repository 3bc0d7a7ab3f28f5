#pragma once
/// \file Hub: what the network threads and the simulation thread share —
/// the registry of sessions, the command queue, and the public facts a
/// Welcome needs. Every member is thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "carom/v1/protocol.pb.h"
#include "options.hpp"
#include "scenario_list.hpp"
#include "snapshot.hpp"

namespace carom::server {

class Session;

/// A command waiting for the next tick boundary.
struct PendingCommand {
  std::uint64_t sequence = 0;  ///< arrival order: commands apply in this order
  std::weak_ptr<Session> from;
  v1::Command command;
};

/// What a Welcome says about the world, refreshed by the simulation thread.
struct PublicState {
  v1::WorldParams params;
  double tick_hz = 60.0;
  std::uint64_t tick = 0;
  bool paused = false;
};

class Hub {
 public:
  explicit Hub(const ServerOptions& options) : options_(options), scenarios_(options.scenario_dir) {}
  const ServerOptions& options() const { return options_; }
  /// The scenario directory's listing, for ListScenarios (network threads).
  ScenarioCatalog& scenarios() { return scenarios_; }

  /// Registers a new connection; false when --max-clients are connected.
  bool add(const std::shared_ptr<Session>& session, std::uint64_t* id);
  /// After a Hello: which snapshot variant the session wants (-1 = none),
  /// and its key (stream_key: the compact chain, the events' threshold).
  void subscribe(std::uint64_t id, int variant, const StreamKey& key = {});
  void remove(std::uint64_t id);
  std::size_t clients() const;
  /// Waits until no session is registered or `timeout` passes; true when none is.
  bool wait_until_empty(std::chrono::steady_clock::duration timeout);
  /// Bit mask of the snapshot variants some session wants.
  unsigned needed_variants() const;
  /// The keyed variants some session wants (SnapshotFrames::is_keyed), each
  /// with its key, once each; *unkeyed (when given) = the bit mask of the
  /// variants some session wants without a key.
  std::vector<std::pair<int, StreamKey>> needed_keyed(unsigned* unkeyed = nullptr) const;
  /// Sessions that want snapshots.
  std::size_t subscribers() const;
  /// Hands a tick's frames (and the body table, to the sessions that use
  /// tables) to every subscribed session (latest wins there). Snapshot thread.
  void broadcast(const SnapshotFrames& frames);
  /// Hands one frame to every session's stream slot (heartbeats).
  void broadcast_stream(const std::shared_ptr<const std::string>& frame);
  /// Goodbye to every session, which then closes; later connections are
  /// refused (add() returns false and shutting_down() is true).
  void goodbye_all(const std::string& reason);
  bool shutting_down() const { return closing_.load(); }
  /// True once after a session subscribed (it needs a snapshot even while paused).
  bool take_resend() { return resend_.exchange(false); }

  /// Queues a command for the simulation thread.
  void submit(const std::shared_ptr<Session>& from, v1::Command command);
  /// Waits until a command is queued, `deadline` passes or wake() is called;
  /// then moves the queue into *out (in arrival order).
  void wait_commands(std::chrono::steady_clock::time_point deadline, std::vector<PendingCommand>* out);
  void wake();

  void set_public(PublicState state);
  PublicState get_public() const;

  std::atomic<std::uint64_t> snapshots_skipped{0};
  std::atomic<std::uint64_t> connections_total{0};

 private:
  struct Entry {
    std::weak_ptr<Session> session;
    int variant = -1;
    StreamKey key;
  };
  ServerOptions options_;
  ScenarioCatalog scenarios_;
  std::atomic<bool> closing_{false};
  std::atomic<bool> resend_{false};
  mutable std::mutex sessions_mutex_;
  std::condition_variable empty_cv_;  // notified when the last session leaves
  std::map<std::uint64_t, Entry> sessions_;
  std::uint64_t next_session_ = 1;

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::vector<PendingCommand> queue_;
  std::uint64_t next_sequence_ = 0;
  bool woken_ = false;

  mutable std::mutex public_mutex_;
  PublicState public_;
};

}  // namespace carom::server
