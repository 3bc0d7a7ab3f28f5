#pragma once
/// \file The spatial hash: how carom finds discs near a disc. One module for
/// every user: the broad phase (a bucket-sorted multi-level grid), the
/// continuous solver (its swept grid and the hash of the discs it places during
/// a step) and the server's generators (placing random bodies without
/// overlap). Everything here is inline: the pair searches call it in their
/// innermost loops.
///
/// Threading: values and pure functions, callable from any thread. A DiscHash
/// is one thread's while it inserts; const queries may run side by side.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace carom {

/// The disc-overlap predicate every search decides with: the discs of
/// extent (radius) ei and ej around (xi, yi) and (xj, yj) overlap strictly,
/// |c_j - c_i| < e_i + e_j, on squared distances. The same bits with the two
/// discs swapped (negation and addition are exact or commutative).
[[gnu::always_inline]] inline bool discs_overlap(double xi, double yi, double ei, double xj, double yj, double ej) {
  const double dx = xj - xi, dy = yj - yi, reach = ei + ej;
  return dx * dx + dy * dy < reach * reach;
}

/// Cell coordinates are clamped to +-2^28. Clamping is monotone and moves
/// neighbours at most together, so bodies closer than a cell stay at most one
/// cell apart; far-away bodies may share edge cells (slower, still exact: the
/// distance test decides).
inline constexpr double kCellClamp = 268435456.0;

/// The cell of coordinate v (m) in a grid of cells 1 / inv wide: floor(v inv)
/// clamped to +-kCellClamp, without a library call (truncate, then step down
/// below zero).
[[gnu::always_inline]] inline std::int64_t cell_coord(double v, double inv) {
  const double q = std::clamp(v * inv, -kCellClamp, kCellClamp);
  const auto t = static_cast<std::int64_t>(q);
  return t - (q < static_cast<double>(t) ? 1 : 0);
}

/// The cells of a grid (of several levels) wrapped onto a W x H torus of
/// buckets, W H a power of two: neighbouring cells are neighbouring buckets, so
/// a row of cells is one contiguous run of an array sorted by bucket. Cells W
/// or H apart share a bucket, as may cells of different levels; the caller's
/// exact test tells them apart.
struct TorusHash {
  std::uint32_t mask = 0;   ///< buckets - 1
  std::uint32_t width = 1;  ///< W

  /// About one bucket per body (at least 64), W the square root rounded up to
  /// a power of two.
  static TorusHash for_bodies(std::size_t n) {
    const auto buckets = std::bit_ceil(static_cast<std::uint32_t>(std::max<std::size_t>(n, 64)));
    return {buckets - 1, 1u << ((std::countr_zero(buckets) + 1) / 2)};
  }
  std::uint32_t buckets() const { return mask + 1; }
  /// The bucket of cell (cx, cy) of `level` (0 for a single-level grid).
  std::uint32_t operator()(std::uint32_t level, std::int64_t cx, std::int64_t cy) const {
    return (static_cast<std::uint32_t>(cy) * width + static_cast<std::uint32_t>(cx) + level * 0x9E3779B1u) & mask;
  }
};

/// Calls scan(begin, end) over the positions of an array sorted by bucket
/// that hold cells lo..hi of row cy on `level` (bucket h holds positions
/// [start[h], start[h + 1])): one run when those buckets are consecutive, else
/// one run per cell. With `after` the run of cell lo starts at `from` instead
/// (a body scanning its own cell looks only at the positions after its own).
/// The scanned runs of a row never overlap as long as hi - lo < W.
template <class Scan>
[[gnu::always_inline]] inline void scan_row(TorusHash hash, const std::uint32_t* start, std::uint32_t level,
                                            std::int64_t lo, std::int64_t hi, std::int64_t cy, bool after,
                                            std::uint32_t from, Scan&& scan) {
  const std::uint32_t h0 = hash(level, lo, cy), h1 = hash(level, hi, cy);
  if (h1 >= h0 && h1 - h0 == hi - lo) {
    scan(after ? from : start[h0], start[h1 + 1]);
    return;
  }
  for (std::int64_t cx = lo; cx <= hi; ++cx) {
    const std::uint32_t h = hash(level, cx, cy);
    scan((after && cx == lo) ? from : start[h], start[h + 1]);
  }
}

/// The levels of a multi-level grid: level k has square cells of side
/// s0 2^k (m) and holds the discs with 2 e <= s0 2^k (the top level: the
/// rest), so a disc overlaps only discs of its own or a coarser level within
/// one cell of that level, or finer ones that find it.
template <std::size_t N>
struct CellLevels {
  double size[N];  ///< cell side of each level, m
  double inv[N];   ///< 1 / size

  /// Sets the finest cell side s0 (m).
  void set(double s0) {
    for (std::size_t k = 0; k < N; ++k) {
      size[k] = std::ldexp(s0, static_cast<int>(k));
      inv[k] = 1.0 / size[k];
    }
  }
  /// The level of a disc of extent e (m): the lowest whose cells are at
  /// least its diameter.
  std::uint32_t level_of(double e) const {
    std::uint32_t k = 0;
    while (k + 1 < N && 2.0 * e > size[k]) ++k;
    return k;
  }
};

/// Discs placed one at a time and queried by overlap while the set grows: a
/// multi-level grid (CellLevels) whose occupied cells are hashed into chained
/// buckets, twice as many buckets when the nodes reach twice their number.
/// Each disc sits in the cell of its centre on its level. The caller keeps
/// the discs (centre, extent) and decides overlap; the hash hands out ids.
class DiscHash {
 public:
  static constexpr std::uint32_t kLevels = 64;

  /// Empties the hash and sets the finest cell side s0 (m; the extent of the
  /// typical disc times two is a good choice).
  void reset(double s0) {
    levels_.set(s0);
    occupied_ = 0;
    head_.assign(1024, kNone);
    node_.clear();
    for (auto& ids : level_ids_) ids.clear();
  }

  /// Places disc `id`, centre (x, y), extent e (m).
  void insert(std::uint32_t id, double x, double y, double e) {
    const std::uint32_t level = levels_.level_of(e);
    const double inv = levels_.inv[level];
    const auto cx = static_cast<std::int64_t>(std::floor(x * inv));
    const auto cy = static_cast<std::int64_t>(std::floor(y * inv));
    if (node_.size() >= 2 * head_.size()) grow();
    const std::uint32_t h = bucket(level, cx, cy);
    node_.push_back({id, head_[h], level, cx, cy});
    head_[h] = static_cast<std::uint32_t>(node_.size() - 1);
    if (level_ids_.size() <= level) level_ids_.resize(level + 1);
    level_ids_[level].push_back(id);
    occupied_ |= std::uint64_t{1} << level;
  }

  /// Calls visit(id) for the placed discs that may overlap the disc (x, y, e):
  /// every one that does, and some that do not (the caller's predicate
  /// decides). A query may widen e by a hair to absorb the rounding of the
  /// cell arithmetic (the continuous solver's extents carry it already).
  /// visit may return bool: true ends the query, which then returns true.
  template <class Visit>
  bool query(double x, double y, double e, Visit&& visit) const {
    auto call = [&](std::uint32_t id) {
      if constexpr (std::is_same_v<std::invoke_result_t<Visit&, std::uint32_t>, bool>) {
        return visit(id);
      } else {
        visit(id);
        return false;
      }
    };
    for (std::uint64_t lv = occupied_; lv != 0; lv &= lv - 1) {
      const auto level = static_cast<std::uint32_t>(std::countr_zero(lv));
      const double inv = levels_.inv[level];
      // A disc of this level has 2 e_j <= s: its centre is within e + s / 2.
      const double reach = e + 0.5 / inv;
      const double fx0 = std::floor((x - reach) * inv), fx1 = std::floor((x + reach) * inv);
      const double fy0 = std::floor((y - reach) * inv), fy1 = std::floor((y + reach) * inv);
      const auto& ids = level_ids_[level];
      // More cells than discs on the level: every disc of the level.
      if ((fx1 - fx0 + 1.0) * (fy1 - fy0 + 1.0) > static_cast<double>(ids.size())) {
        for (const std::uint32_t id : ids)
          if (call(id)) return true;
        continue;
      }
      for (auto cy = static_cast<std::int64_t>(fy0); cy <= static_cast<std::int64_t>(fy1); ++cy)
        for (auto cx = static_cast<std::int64_t>(fx0); cx <= static_cast<std::int64_t>(fx1); ++cx)
          for (std::uint32_t k = head_[bucket(level, cx, cy)]; k != kNone; k = node_[k].next)
            if (node_[k].level == level && node_[k].cx == cx && node_[k].cy == cy && call(node_[k].id)) return true;
    }
    return false;
  }

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  struct Node {
    std::uint32_t id, next, level;
    std::int64_t cx, cy;
  };

  std::uint32_t bucket(std::uint32_t level, std::int64_t cx, std::int64_t cy) const {
    std::uint64_t h = static_cast<std::uint64_t>(cx) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<std::uint64_t>(cy) * 0xC2B2AE3D27D4EB4Full;
    h ^= std::uint64_t{level} * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return static_cast<std::uint32_t>(h) & static_cast<std::uint32_t>(head_.size() - 1);
  }
  // Rehashes every node into twice the buckets.
  void grow() {
    head_.assign(2 * head_.size(), kNone);
    for (std::uint32_t k = 0; k < node_.size(); ++k) {
      Node& d = node_[k];
      const std::uint32_t h = bucket(d.level, d.cx, d.cy);
      d.next = head_[h];
      head_[h] = k;
    }
  }

  CellLevels<kLevels> levels_{};
  std::uint64_t occupied_ = 0;  // bit l set when level l holds a disc
  std::vector<std::uint32_t> head_ = std::vector<std::uint32_t>(1024, kNone);
  std::vector<Node> node_;
  std::vector<std::vector<std::uint32_t>> level_ids_;
};

}  // namespace carom
