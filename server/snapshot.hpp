#pragma once
/// \file Snapshot encoding: the one place that turns World state into
/// Snapshot bytes, in two halves. capture_snapshot (simulation thread) copies
/// what a snapshot needs out of the World; encode_snapshots (the snapshot
/// thread, see publisher.hpp) hashes the copy and encodes each variant a
/// viewer can ask for (velocities, events, bodies or not, body tables or not)
/// at most once per tick, shared by every session that wants it.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carom/proto/framing.hpp"
#include "carom/stats.hpp"
#include "carom/v1/protocol.pb.h"
#include "compact_stream.hpp"
#include "sim_state.hpp"
#include "tick_times.hpp"

namespace carom::server {

class Session;

/// Variant index of a set of wishes: the sum of its bits
/// (body_tables and compact are dropped when omit_bodies is set: there is
/// nothing to index or code; compact implies body_tables).
inline constexpr int kVariantVelocities = 1, kVariantEvents = 2, kVariantOmitBodies = 4, kVariantBodyTables = 8,
                     kVariantCompact = 16;
inline constexpr int kSnapshotVariants = 32;
int snapshot_variant(const v1::SnapshotWishes& wishes);
/// Bit mask (over variant indices) of the variants that carry events.
inline constexpr unsigned kEventVariants = [] {
  unsigned mask = 0;
  for (int v = 0; v < kSnapshotVariants; ++v)
    if ((v & kVariantEvents) != 0) mask |= 1u << v;
  return mask;
}();
static_assert(kEventVariants == 0xccccccccu);

/// A collision event and the tick it happened in (events accumulate between
/// snapshots when --snapshot-hz is below the tick rate).
struct TickEvent {
  CollisionEvent event;
  std::uint64_t tick = 0;
  /// |impulse| (1/m_a + 1/m_b), m/s: how much the impact changed the pair's
  /// relative normal velocity (wishes.min_event_speed is compared with it).
  double speed = 0.0;
};

/// The speed of `event` for TickEvent, from the masses in `bodies` (sorted by
/// id) right after the step that produced it; +infinity when a body is gone
/// (never filtered out).
double event_speed(const BodiesView& bodies, const CollisionEvent& event);

/// What a session's snapshot bytes depend on besides the tick and its
/// variant: the compact chain (compact variants) and the events' threshold
/// (event variants). Normalized: the parts a variant does not use are
/// default, so sessions that get the same bytes have equal keys.
struct StreamKey {
  CompactKey compact;
  double min_event_speed = 0.0;  ///< m/s, >= 0
  std::uint32_t max_events = 0;  ///< the hardest this many (0: all)
  bool compact_events = false;   ///< events in Snapshot.compact_events (compact variants)
  bool event_speeds = false;     ///< each event with its speed (wishes.event_speeds)
  bool operator==(const StreamKey&) const = default;
};
/// The key for `variant` from what a session asked for.
StreamKey stream_key(int variant, const CompactKey& compact, const v1::SnapshotWishes& wishes);

/// Everything a tick's snapshots are made of, copied out of the World on the
/// simulation thread so that hashing and encoding can run elsewhere. Buffers
/// are reused from tick to tick (see SnapshotPublisher).
struct SnapshotCapture {
  unsigned needed = 0;  ///< bit mask of the variants to encode
  std::uint64_t tick = 0;
  double time = 0.0;
  std::int64_t server_time_ns = 0;  ///< CLOCK_MONOTONIC at the end of the tick
  bool paused = false;
  Bounds bounds;
  v1::Stats stats;  ///< all but the timing window figures (see `timing`)
  /// The bodies in id order, full precision: the state hash is taken over
  /// exactly these bits, the snapshot sends them as floats.
  std::vector<std::uint32_t> id;
  std::vector<double> x, y, vx, vy, radius, mass;
  /// The keyed variants wanted (compact ones, and plain ones with an events
  /// threshold), each with its key: their frames are made per key, not in
  /// `needed`.
  std::vector<std::pair<int, StreamKey>> keyed;
  /// The state hash to send, when the bodies are not the world's own (a
  /// relay's are the upstream's quantized ones, which would hash otherwise);
  /// unset: hash_bodies of this capture.
  std::optional<std::uint64_t> state_hash;
  std::vector<TickEvent> events;  ///< since the last snapshot
  std::uint64_t events_dropped = 0;
  /// Tick-time samples taken since the previous capture, for the snapshot
  /// thread's mirror of the window (the figures in Stats come from it).
  TickSamples timing;
  /// Results to send once this snapshot is on its way (a finished Step: its
  /// result names this tick, so the snapshot goes first, as it always did).
  std::vector<std::pair<std::weak_ptr<Session>, v1::CommandResult>> after;

  /// Folds an older, never encoded capture into this newer one: its events
  /// and results go first. Returns how many events were dropped for the cap.
  void absorb(SnapshotCapture& older, std::size_t max_events);
};

/// Fills *out (needed, tick, time, bodies, bounds, paused) from the world.
/// Simulation thread. The caller sets stats, events, timing and after.
void capture_snapshot(const SimState& sim, unsigned needed, SnapshotCapture* out);

/// World::state_hash over captured bodies (carom::state_hash; tests pin the
/// two together).
std::uint64_t hash_bodies(const SnapshotCapture& bodies);

/// A BodyTable frame and its epoch.
struct BodyTableFrame {
  std::uint64_t epoch = 0;
  std::shared_ptr<const std::string> frame;  ///< delimited ServerMessage{body_table}
};

/// One tick's snapshot frames (delimited ServerMessage bytes), by variant;
/// null where nobody asked for that variant. Variants with body_tables refer
/// to `table`, which a session sends first unless it already has.
struct SnapshotFrames {
  std::uint64_t tick = 0;
  std::array<std::shared_ptr<const std::string>, kSnapshotVariants> frames;
  std::shared_ptr<const BodyTableFrame> table;
  /// Keyed variants: one per (variant, key) in capture.keyed; a compact
  /// snapshot for compact variants, a frame for the others.
  struct Keyed {
    int variant = 0;
    StreamKey key;
    std::shared_ptr<const std::string> frame;
    std::shared_ptr<const CompactSnapshot> snapshot;
  };
  std::vector<Keyed> keyed;
  /// The entry for a session's variant and key, or null.
  const Keyed* keyed_for(int variant, const StreamKey& key) const {
    for (const Keyed& k : keyed)
      if (k.variant == variant && k.key == key) return &k;
    return nullptr;
  }
  /// Whether a session of `variant` with `key` is served from `keyed`.
  static bool is_keyed(int variant, const StreamKey& key) {
    return (variant & kVariantCompact) != 0 || key.min_event_speed > 0.0 || key.max_events > 0 || key.event_speeds;
  }
};

/// The snapshot thread's encoder: keeps the current body table (a new epoch
/// whenever the ids or the radii, as sent, change) between ticks.
class SnapshotEncoder {
 public:
  /// Encodes the variants in capture.needed. `timing` holds the window
  /// figures to put in each snapshot's Stats. One thread at a time.
  void encode(const SnapshotCapture& capture, const v1::Stats& timing, SnapshotFrames* out);

 private:
  std::shared_ptr<const BodyTableFrame> table_for(const SnapshotCapture& capture);
  // header_ = the variant's Snapshot without bodies; its events those of at
  // least min_event_speed, coded against `compact` when that is given.
  void make_header(const SnapshotCapture& c, const v1::Stats& timing, std::uint64_t state_hash, int variant,
                   const StreamKey& key, const CompactBodies* compact, std::uint64_t table_epoch);
  // selected_ = the indices in c.events of the events `key` lets through.
  void select_events(const SnapshotCapture& c, const StreamKey& key);
  // A plain variant's frame: header_ and the body arrays.
  std::shared_ptr<const std::string> plain_frame(const SnapshotCapture& c, int variant, std::size_t id_payload) const;

  CompactChains chains_;
  std::uint64_t next_epoch_ = 1;
  std::vector<std::uint32_t> table_id_;
  std::vector<float> table_radius_, radius_scratch_;
  std::shared_ptr<const BodyTableFrame> table_;
  std::string header_;
  std::vector<proto::CompactEvent> compact_events_;
  std::vector<std::uint32_t> selected_;
};

/// CLOCK_MONOTONIC in nanoseconds (the clock of server_time_ns).
using proto::monotonic_ns;

}  // namespace carom::server
