#pragma once
/// \file The compact stream on the server (wishes.compact; docs/protocol.md,
/// "The compact stream"). A chain per (velocities or not, position quantum,
/// velocity quantum) keeps the canonical tracks of the last tick it was
/// encoded for. Each tick, on the snapshot thread, a chain advances once and
/// makes its delta frame against that previous tick once, shared by every
/// session that received it; the key frame (for a session that joined,
/// skipped a frame or changed its wishes) is made at most once per tick and
/// variant, by the first session that needs it, on its own thread.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "carom/proto/compact.hpp"

namespace carom::server {

struct SnapshotCapture;

/// The range a client's quantum may take (wishes.position_quantum and
/// velocity_quantum, in m and m/s; 0 asks for the default 0.001).
inline constexpr double kMinQuantum = 1e-9, kMaxQuantum = 1e6;

/// What a compact session's bodies depend on besides the tick.
struct CompactKey {
  bool velocities = false;
  double position_quantum = 0.001;  ///< m per unit, > 0
  double velocity_quantum = 0.001;  ///< m/s per unit, > 0
  bool operator==(const CompactKey&) const = default;
};

/// One chain's bodies at one tick: the canonical tracks, and the delta
/// residuals against the chain's previous tick (when there was one).
struct CompactBodies {
  std::uint64_t chain = 0;     ///< the chain's number, unique for the server's life
  std::uint64_t serial = 0;    ///< this tick's number in the chain, from 1
  std::uint64_t baseline = 0;  ///< serial of the frame the delta is against (0: no delta)
  std::uint64_t tick = 0;           ///< the tick these bodies are of
  std::uint64_t baseline_tick = 0;  ///< the tick of the baseline (CompactBodies.baseline_tick on the wire)
  CompactKey key;
  proto::Track positions, velocities;
  std::string delta_positions, delta_velocities;
};

/// A compact snapshot of one variant: the Snapshot without bodies (its
/// serialized fields) and the chain's bodies. Immutable once made but for
/// the key frame, which is made once, thread-safely, on first use.
class CompactSnapshot {
 public:
  CompactSnapshot(std::string header, std::shared_ptr<const CompactBodies> bodies);
  /// The frame (delimited ServerMessage) for a session whose last compact
  /// snapshot was `serial` of `chain`: the shared delta when that is this
  /// one's baseline, else the key frame. Any thread.
  std::shared_ptr<const std::string> frame_after(std::uint64_t chain, std::uint64_t serial) const;
  std::uint64_t chain() const { return bodies_->chain; }
  std::uint64_t serial() const { return bodies_->serial; }

 private:
  std::shared_ptr<const std::string> make_frame(bool key) const;

  std::string header_;
  std::shared_ptr<const CompactBodies> bodies_;
  std::shared_ptr<const std::string> delta_;
  mutable std::once_flag key_once_;
  mutable std::shared_ptr<const std::string> key_;
};

/// The chains. Snapshot thread only.
class CompactChains {
 public:
  /// The bodies of `capture` for `key`: the chain advanced to this tick (once
  /// per tick: a second call in the same tick returns the same bodies).
  std::shared_ptr<const CompactBodies> advance(const CompactKey& key, const SnapshotCapture& capture);
  /// Ends a tick: chains not advanced for kIdleTicks encoded ticks are dropped
  /// (a session that comes back to one gets a key frame from a new chain).
  void end_tick();

  static constexpr std::uint64_t kIdleTicks = 600;

 private:
  struct Chain {
    CompactKey key;
    std::uint64_t id = 0;
    std::shared_ptr<const CompactBodies> last;
    std::uint64_t advanced_at = 0;  // generation_ when last advanced
  };
  std::vector<Chain> chains_;
  std::uint64_t next_chain_ = 1;
  std::uint64_t generation_ = 1;
  std::vector<std::int64_t> qx_, qy_;
};

}  // namespace carom::server
