#pragma once
/// \file Snapshot encoding: the one place that turns World state into
/// Snapshot bytes. Each variant a viewer can ask for (velocities, events,
/// bodies or not) is encoded at most once per tick and shared by every
/// session that wants it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"
#include "sim_state.hpp"

namespace carom::server {

/// Variant index of a set of wishes: velocities | events << 1 | omit_bodies << 2.
inline constexpr int kSnapshotVariants = 8;
int snapshot_variant(const v1::SnapshotWishes& wishes);

/// One tick's snapshot frames (delimited ServerMessage bytes), by variant;
/// null where nobody asked for that variant.
struct SnapshotFrames {
  std::uint64_t tick = 0;
  std::array<std::shared_ptr<const std::string>, kSnapshotVariants> frames;
};

/// What goes into a snapshot besides the world.
struct SnapshotExtras {
  const std::vector<v1::CollisionEvent>* events = nullptr;  ///< since the last snapshot
  std::uint64_t events_dropped = 0;
  const v1::Stats* stats = nullptr;
  std::int64_t server_time_ns = 0;
};

/// Encodes the variants whose bit is set in `needed`. Simulation thread.
void encode_snapshots(const SimState& sim, const SnapshotExtras& extras, unsigned needed, SnapshotFrames* out);

/// CLOCK_MONOTONIC in nanoseconds (the clock of server_time_ns).
using proto::monotonic_ns;

}  // namespace carom::server
