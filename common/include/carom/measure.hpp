#pragma once
/// \file Measurements of a world's quality, for tests, carom-bench and tools.

#include <cstdint>

#include "carom/body.hpp"

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

}  // namespace carom
