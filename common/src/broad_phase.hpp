#pragma once
// Broad phase: spatial hash buckets over a multi-level uniform grid.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "carom/spatial_hash.hpp"

namespace carom::detail {

/// A candidate pair of storage indices, a < b (so id(a) < id(b)).
struct Pair {
  std::uint32_t a;
  std::uint32_t b;
  friend bool operator==(Pair, Pair) = default;
  friend auto operator<=>(Pair, Pair) = default;
};

/// The pair list, kept as the per-block lists the search wrote (joining them
/// would double the peak memory). The list is the blocks in order.
struct PairBlocks {
  std::vector<std::vector<Pair>> blocks;
  std::size_t count = 0;  // pairs in all blocks
  /// The whole list in order (tests, tools).
  std::vector<Pair> flatten() const;
  /// Candidate index of each block's first pair, and the count at the end
  /// (blocks.size() + 1 values).
  std::vector<std::uint32_t> starts() const {
    std::vector<std::uint32_t> out(blocks.size() + 1, 0);
    for (std::size_t k = 0; k < blocks.size(); ++k) out[k + 1] = out[k] + static_cast<std::uint32_t>(blocks[k].size());
    return out;
  }
};

/// Scratch buffers reused from call to call (no allocation in steady state).
struct BroadPhase {
  std::vector<std::uint32_t> bucket_start;  // bucket h: sorted positions [bucket_start[h], bucket_start[h + 1])
  std::vector<std::uint32_t> sorted;      // sorted position -> storage index
  std::vector<float> sx, sy;              // sorted positions relative to the bounding box's middle, as float
  std::vector<double> se;                 // sorted extents (empty when all are equal)
  std::vector<std::uint8_t> slevel;       // sorted grid levels (empty with a single level)
  std::vector<std::size_t> block_size;    // pairs each search block found last time (its next reserve)
  /// Gives back the per-body arrays (kept: block_size). A large world calls
  /// this after each search: they would otherwise sit beside the colouring
  /// at the moment memory peaks.
  void release() {
    std::vector<std::uint32_t>().swap(bucket_start);
    std::vector<std::uint32_t>().swap(sorted);
    std::vector<float>().swap(sx);
    std::vector<float>().swap(sy);
    std::vector<double>().swap(se);
    std::vector<std::uint8_t>().swap(slevel);
  }
};

/// Exact minima and maxima over the bodies: radius and bounding box.
struct BodyRange {
  double rmin = std::numeric_limits<double>::infinity(), rmax = 0.0;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -std::numeric_limits<double>::infinity();
  double ymin = std::numeric_limits<double>::infinity(), ymax = -std::numeric_limits<double>::infinity();
  void add(double x, double y, double r) {
    rmin = std::min(rmin, r);
    rmax = std::max(rmax, r);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
  }
  void merge(const BodyRange& o) {
    rmin = std::min(rmin, o.rmin);
    rmax = std::max(rmax, o.rmax);
    xmin = std::min(xmin, o.xmin);
    xmax = std::max(xmax, o.xmax);
    ymin = std::min(ymin, o.ymin);
    ymax = std::max(ymax, o.ymax);
  }
};

/// The range of the bodies, one parallel pass.
BodyRange body_range(std::span<const double> x, std::span<const double> y, std::span<const double> radius);
BodyRange body_range(std::span<const float> x, std::span<const float> y, std::span<const double> radius);

/// All pairs i < j whose extents r_i + margin and r_j + margin overlap
/// (discs_overlap), each exactly once, in an order that depends only on the
/// inputs (never on the thread count). Call from inside the World's arena.
void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, BroadPhase& scratch, PairBlocks& out);
/// The same with the bodies' range already known (the world measures it in
/// a pass it makes anyway): saves a pass over the bodies.
void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, const BodyRange& range, BroadPhase& scratch, PairBlocks& out);
/// The same over positions rounded to float (the world's anchors, which a
/// saved world carries, so a restored world builds the very same list).
void find_pairs(std::span<const float> x, std::span<const float> y, std::span<const double> radius,
                double margin, const BodyRange& range, BroadPhase& scratch, PairBlocks& out);

/// The O(n^2) reference: same predicate, pairs in (a, b) order. For tests.
std::vector<Pair> find_pairs_brute_force(std::span<const double> x, std::span<const double> y,
                                         std::span<const double> radius, double margin);

}  // namespace carom::detail
