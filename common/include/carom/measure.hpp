#pragma once
/// \file Measurements of a world's quality, for tests, carom-bench and tools.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "carom/body.hpp"
#include "carom/params.hpp"

namespace carom {

/// How deep bodies sink into each other: over every pair that overlaps
/// (d < r_a + r_b), the overlap r_a + r_b - d relative to the smaller radius of
/// the pair.
struct OverlapStats {
  double max = 0.0;         ///< largest relative overlap (0 when none overlap)
  double mean = 0.0;        ///< mean over overlapping pairs (0 when none)
  std::uint64_t pairs = 0;  ///< overlapping pairs
};

/// Measures every overlapping pair of `bodies` with the broad phase (the one
/// checked against its brute-force reference). O(n) for a world of similar
/// radii. Any thread; runs its parallel loops on the calling thread's oneTBB
/// arena.
OverlapStats measure_overlap(const BodiesView& bodies);

/// Mutual gravity's acceleration of every body, as the world computes it
/// with `gravity` (its method resolved for this many bodies).
std::vector<Vec2> mutual_accelerations(const BodiesView& bodies, const MutualGravity& gravity);
/// The same for body `index` alone by direct summation (O(n)): the reference
/// a tree is checked against.
Vec2 mutual_acceleration_direct(const BodiesView& bodies, const MutualGravity& gravity, std::size_t index);

}  // namespace carom
