// Broad phase: find_pairs, and PairAnchors (when the list is rebuilt).
//
// Reads:  positions and radii in storage (id) order; the margin (half the skin).
// Writes: the candidate pair list, pairs (a, b) of storage indices with a < b
//         whose extents (radius + margin) overlap, as per-block lists; the
//         anchors and skin the list was built from.
//
// Each body lives in one cell of one level of a uniform grid; level k has cells
// of side s0 * 2^k and holds the bodies with 2 * extent <= s_k, so the cell
// size follows the radii and bodies spanning 100x in radius stay cheap. All
// levels share one hash table of buckets, filled by a parallel counting sort.
// A body looks for partners in its own cell (later sorted positions only), in
// four of its eight neighbouring cells (the i < j rule on cells), and in the
// 3x3 cells around it on every coarser occupied level (small finds large, never
// the reverse): each pair is met exactly once. The hash keeps neighbouring
// cells in neighbouring buckets, so those cells are read as contiguous runs.
//
// Memory: the sorted copies of the positions are floats, relative to the
// middle of the bodies' bounding box, off by at most `delta` each. Cells and
// levels are computed from those floats everywhere, with delta added to every
// extent when sizing them, so partners are still never more than one cell
// apart. The distance test decides from the floats when they are clear by the
// rounding bound either way, and from the exact doubles in the thin band
// between: the pair list is exactly what the double predicate gives.
//
// Determinism: buckets are sorted by storage index after the scatter, so the
// sorted order is a function of the input only; pairs are written per fixed
// block of sorted positions and concatenated in block order.

#include "broad_phase.hpp"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "parallel.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 512;
constexpr int kMaxLevels = 16;
// Below this many bodies the counting sort runs on one thread (find_pairs_of;
// tests change it: set_serial_sort_below).
std::atomic<std::size_t> serial_sort_below{std::size_t{1} << 17};
// The grid's levels; cells are clamped (cell_coord), and all levels share one
// TorusHash of buckets (see carom/spatial_hash.hpp).
using Grid = CellLevels<kMaxLevels>;

// What the pair search reads. Each block takes it by value: reached through
// the captures of nested lambdas, every pointer was reloaded from memory after
// each pair was stored (the store might have changed it, as far as the
// compiler could tell), which cost the search a third of its time.
template <class T>
struct SearchInput {
  const float* sx;  // sorted positions, relative to the origin, rounded to float
  const float* sy;
  const double* se;  // sorted extents; unused when all are equal (emin)
  const std::uint8_t* slevel;  // sorted levels; unused with a single level
  const std::uint32_t* sorted;
  const std::uint32_t* bucket_start;
  const T* x;  // exact positions (the anchors: double, or float) and radii, storage order, for the band
  const T* y;
  const double* radius;
  double margin;
  double emin;
  double band;  // bound on |distance from the floats - exact distance|
  const std::uint8_t* coarse;  // per bucket: 1 when it holds a body above the lowest level; unused with one level
  std::uint32_t levels;  // bit k set when level k holds a body
  std::uint32_t level0;  // the lowest occupied level
  TorusHash hash;
  const Grid* grid;
};

// The predicate itself, for the rare pair whose rounded distance is too close
// to call (kept out of line: the search loop stays small).
template <class T>
[[gnu::noinline, gnu::cold]] bool exact_overlap(const SearchInput<T>& in, std::uint32_t i, std::uint32_t j) {
  return discs_overlap(in.x[i], in.y[i], in.radius[i] + in.margin, in.x[j], in.y[j], in.radius[j] + in.margin);
}

// The pairs of sorted positions [p0, p1) with their partners (see the file
// comment for which cells are scanned), appended to `local` in order.
template <bool Uniform, bool OneLevel, class T>
void search_block(const SearchInput<T> in, std::size_t p0, std::size_t p1, std::vector<Pair>& local) {
  const float* const sx = in.sx;
  const float* const sy = in.sy;
  const double* const se = in.se;
  const std::uint8_t* const slevel = in.slevel;
  const std::uint32_t* const sorted = in.sorted;
  const std::uint32_t* const bucket_start = in.bucket_start;
  const TorusHash hash = in.hash;
  const Grid& g = *in.grid;
  const double band = in.band;
  auto extent_at = [&](std::uint32_t p) { return Uniform ? in.emin : se[p]; };
  // Squared distances from the floats below lo2 are overlaps for sure, at or
  // above hi2 are not (the bound, widened by the double rounding of d^2).
  auto bounds_for = [band](double reach, double& lo2, double& hi2) {
    lo2 = reach > band ? (reach - band) * (reach - band) * (1.0 - 1e-14) : -1.0;
    hi2 = (reach + band) * (reach + band) * (1.0 + 1e-14);
  };
  double uniform_lo2 = 0.0, uniform_hi2 = 0.0;
  if (Uniform) bounds_for(2.0 * in.emin, uniform_lo2, uniform_hi2);
  // Partners of p among sorted positions [q0, end) on level `level`.
  //
  // Only the level is checked, not the cell: a body of that level in these
  // buckets is either in the scanned cells or in a cell that shares their
  // buckets, W or H cells away, which the distance test rejects. The scanned
  // bucket runs of one body never overlap (W >= 8), so nothing is met twice.
  auto scan = [&](std::uint32_t p, std::uint32_t q0, std::uint32_t end, std::uint32_t level) __attribute__((always_inline)) {
    if (q0 >= end) return;
    const double px = sx[p], py = sy[p], pe = extent_at(p);
    const std::uint32_t i = sorted[p];
    // First the positions that may be partners, without a branch per
    // position (most fail the test, in no pattern a branch predictor could
    // learn), then those one at a time, in order.
    constexpr std::uint32_t kBatch = 32;
    std::uint32_t near[kBatch];
    double near_d2[kBatch];
    for (std::uint32_t b0 = q0; b0 < end; b0 += kBatch) {
      const std::uint32_t b1 = std::min(end, b0 + kBatch);
      std::uint32_t found = 0;
      for (std::uint32_t q = b0; q < b1; ++q) {
        const double dx = static_cast<double>(sx[q]) - px, dy = static_cast<double>(sy[q]) - py;
        const double d2 = dx * dx + dy * dy;
        double lo2 = uniform_lo2, hi2 = uniform_hi2;
        if (!Uniform) bounds_for(pe + extent_at(q), lo2, hi2);
        near[found] = q;
        near_d2[found] = d2;
        found += (d2 < hi2) & (OneLevel || slevel[q] == level) ? 1 : 0;
      }
      for (std::uint32_t f = 0; f < found; ++f) {
        const std::uint32_t q = near[f];
        const double d2 = near_d2[f];
        double lo2 = uniform_lo2, hi2 = uniform_hi2;
        if (!Uniform) bounds_for(pe + extent_at(q), lo2, hi2);
        const std::uint32_t j = sorted[q];
        // In the band: the exact predicate, on the exact positions.
        if (d2 >= lo2 && !exact_overlap(in, i, j)) continue;
        // Full: grow by an eighth, not by doubling. While a gas heats up its
        // blocks outgrow their room at nearly every rebuild, and doubling left
        // the list's memory at up to twice its size.
        if (local.size() == local.capacity()) [[unlikely]]
          local.reserve(local.capacity() + local.capacity() / 8 + 16);
        local.push_back(Pair{std::min(i, j), std::max(i, j)});
      }
    }
  };
  // A row of cells cx_lo..cx_hi (scan_row: one run when the buckets do not
  // wrap). `after` limits the first cell to positions after p.
  auto row = [&](std::uint32_t p, std::uint32_t level, std::int64_t cx_lo, std::int64_t cx_hi, std::int64_t cy,
                 bool after) {
    scan_row(hash, bucket_start, level, cx_lo, cx_hi, cy, after, p + 1,
             [&](std::uint32_t q, std::uint32_t end) __attribute__((always_inline)) { scan(p, q, end, level); });
  };
  for (std::size_t pp = p0; pp < p1; ++pp) {
    const auto p = static_cast<std::uint32_t>(pp);
    const std::uint32_t k = OneLevel ? in.level0 : slevel[p];
    // The same cell the hash put p in (the same function of the same values).
    const std::int64_t cx = cell_coord(sx[p], g.inv[k]);
    const std::int64_t cy = cell_coord(sy[p], g.inv[k]);
    // Same level: own cell (later positions) and east; then the three cells
    // of the row above. The other four neighbours find p themselves.
    row(p, k, cx, cx + 1, cy, true);
    row(p, k, cx - 1, cx + 1, cy + 1, false);
    if (OneLevel) continue;
    for (std::uint32_t up = in.levels & ~((2u << k) - 1); up != 0; up &= up - 1) {
      const std::uint32_t l = static_cast<std::uint32_t>(std::countr_zero(up));
      const std::int64_t ux = cell_coord(sx[p], g.inv[l]);
      const std::int64_t uy = cell_coord(sy[p], g.inv[l]);
      for (std::int64_t dy = -1; dy <= 1; ++dy) {
        // A row whose buckets hold no body above the lowest level has none
        // of level l: every body there would fail the level test. (Deep in
        // a pile with landing bodies above it, that is nearly every row.)
        if (!in.coarse[hash(l, ux - 1, uy + dy)] && !in.coarse[hash(l, ux, uy + dy)] &&
            !in.coarse[hash(l, ux + 1, uy + dy)])
          continue;
        row(p, l, ux - 1, ux + 1, uy + dy, false);
      }
    }
  }
}

}  // namespace

std::size_t set_serial_sort_below(std::size_t bodies) {
  return serial_sort_below.exchange(bodies, std::memory_order_relaxed);
}

namespace {
std::atomic<std::uint64_t> next_generation{1};
}  // namespace

void PairBlocks::renew() {
  generation = next_generation.fetch_add(1, std::memory_order_relaxed);
  base = generation;
}

void PairBlocks::extend() { generation = next_generation.fetch_add(1, std::memory_order_relaxed); }

std::vector<Pair> PairBlocks::flatten() const {
  std::vector<Pair> all;
  all.reserve(count);
  for (const auto& b : blocks) all.insert(all.end(), b.begin(), b.end());
  return all;
}

template <class T>
BodyRange body_range_of(std::span<const T> x, std::span<const T> y, std::span<const double> radius) {
  const std::size_t nb = block_count(x.size(), kBlock);
  std::vector<BodyRange> ranges(nb);
  for_blocks(x.size(), kBlock, [&](std::size_t b0, std::size_t b1, std::size_t blk) {
    BodyRange r;
    for (std::size_t i = b0; i < b1; ++i) r.add(x[i], y[i], radius[i]);
    ranges[blk] = r;
  });
  BodyRange all;
  for (const BodyRange& r : ranges) all.merge(r);
  return all;
}

template <class T>
void find_pairs_of(std::span<const T> x, std::span<const T> y, std::span<const double> radius, double margin,
                   const BodyRange& range, BroadPhase& bp, PairBlocks& out) {
  const std::size_t n = x.size();
  // The last list goes first (its blocks may be the colouring's, whose sizes
  // say nothing of the search's): at a million bodies two lists at once are
  // the peak of memory.
  out.blocks.clear();
  out.count = 0;
  out.renew();
  if (n < 2) return;
  auto extent_of = [&](std::size_t i) { return radius[i] + margin; };

  const std::size_t nb = block_count(n, kBlock);
  // min(r_i + margin) = min(r_i) + margin exactly: rounding is monotone.
  const double emin = range.rmin + margin, emax = range.rmax + margin;

  // Positions are kept relative to the middle of the bounding box, rounded to
  // float: |x - ox| <= reach, so rounding x - ox (2^-53, in double) and then
  // to float (2^-24, relative) is off by at most delta (the tiny absolute
  // term covers subnormal floats). All cells come from these rounded values.
  const double ox = 0.5 * range.xmin + 0.5 * range.xmax, oy = 0.5 * range.ymin + 0.5 * range.ymax;
  const double reach = std::max({range.xmax - ox, ox - range.xmin, range.ymax - oy, oy - range.ymin});
  const double delta = 6.0e-8 * reach * (1.0 + 1e-9) + 1e-40;
  auto fx = [&](std::size_t i) { return static_cast<float>(x[i] - ox); };
  auto fy = [&](std::size_t i) { return static_cast<float>(y[i] - oy); };

  // Cells are sized for extents grown by delta: two bodies whose exact
  // extents overlap have rounded centres closer than e_i + e_j + 2 delta,
  // which is at most the cell side of the coarser one's level. A hair of
  // slack keeps that strict after the rounding of x / cell, so partners are
  // never more than one cell apart.
  double s0 = 2.0 * (emin + delta) * (1.0 + 1e-9);
  const double top = std::ldexp(s0, kMaxLevels - 1);
  if (2.0 * (emax + delta) > top) s0 = 2.0 * (emax + delta) * (1.0 + 1e-9) / std::ldexp(1.0, kMaxLevels - 1);
  Grid g;
  g.set(s0);
  const bool uniform = emin == emax;  // equal radii, as in a gas: no per-body extent
  const std::uint32_t uniform_level = g.level_of(emin + delta);
  auto level_at = [&](std::size_t i) { return uniform ? uniform_level : g.level_of(extent_of(i) + delta); };

  const TorusHash hash = TorusHash::for_bodies(n);
  const std::uint32_t buckets = hash.buckets();
  auto bucket_of = [&](std::size_t i, std::uint32_t k) {
    return hash(k, cell_coord(fx(i), g.inv[k]), cell_coord(fy(i), g.inv[k]));
  };

  bp.bucket_start.assign(buckets + 1, 0);
  bp.sorted.resize(n);
  bp.sx.resize(n);
  bp.sy.resize(n);
  if (uniform) {
    bp.se = {};
  } else {
    bp.se.resize(n);
  }

  // Small worlds sort on this thread, in storage order: a stable counting
  // sort leaves each bucket in storage order already, with no atomics and no
  // sort per bucket, and spread over threads the few microseconds of work
  // cost more in moving the data between cores than they saved (the 10k gas
  // rebuilds its list every other step). The same sorted order either way.
  const bool serial = n < serial_sort_below.load(std::memory_order_relaxed);
  std::uint32_t levels = 0;  // bit k set when level k holds a body
  if (serial) {
    // 1-3. Each body's bucket, the histogram, its scan and the scatter.
    std::vector<std::uint32_t>& bucket = bp.bucket_scratch;
    bucket.resize(n);
    std::uint32_t* const count = bp.bucket_start.data();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t k = level_at(i);
      levels |= 1u << k;
      bucket[i] = bucket_of(i, k);
      ++count[bucket[i] + 1];
    }
    std::uint32_t sum = 0;
    for (std::size_t h = 0; h < buckets; ++h) {
      const std::uint32_t c = count[h + 1];
      count[h + 1] = sum;
      sum += c;
    }
  } else {
    // 1. Bucket of every body and the bucket histogram.
    std::vector<std::uint32_t> block_levels(nb, 0);
    for_blocks(n, kBlock, [&](std::size_t b0, std::size_t b1, std::size_t blk) {
      std::uint32_t lv = 0;
      for (std::size_t i = b0; i < b1; ++i) {
        const std::uint32_t k = level_at(i);
        lv |= 1u << k;
        std::atomic_ref<std::uint32_t>(bp.bucket_start[bucket_of(i, k) + 1]).fetch_add(1, std::memory_order_relaxed);
      }
      block_levels[blk] = lv;
    });
    for (auto lv : block_levels) levels |= lv;

    // 2. Exclusive scan: bucket_start[h + 1] becomes the start of bucket h.
    //    Two passes over fixed blocks (block sums, then offsets); integer sums,
    //    so the grouping cannot change the result.
    const std::size_t scan_block = 1 << 15;
    std::vector<std::uint32_t> block_sum(block_count(buckets, scan_block) + 1, 0);
    for_blocks(buckets, scan_block, [&](std::size_t h0, std::size_t h1, std::size_t blk) {
      std::uint32_t sum = 0;
      for (std::size_t h = h0; h < h1; ++h) sum += bp.bucket_start[h + 1];
      block_sum[blk + 1] = sum;
    });
    for (std::size_t b = 1; b < block_sum.size(); ++b) block_sum[b] += block_sum[b - 1];
    for_blocks(buckets, scan_block, [&](std::size_t h0, std::size_t h1, std::size_t blk) {
      std::uint32_t sum = block_sum[blk];
      for (std::size_t h = h0; h < h1; ++h) {
        const std::uint32_t c = bp.bucket_start[h + 1];
        bp.bucket_start[h + 1] = sum;
        sum += c;
      }
    });

    // 3. Scatter. The cursor bucket_start[h + 1] walks bucket h's start to its
    //    end, which is the start of bucket h + 1: no copy of the starts. The
    //    bucket is recomputed rather than stored: 4 bytes a body matter at 1M.
    for_blocks(n, kBlock, [&](std::size_t b0, std::size_t b1, std::size_t) {
      for (std::size_t i = b0; i < b1; ++i) {
        const std::uint32_t slot = std::atomic_ref<std::uint32_t>(bp.bucket_start[bucket_of(i, level_at(i)) + 1])
                                       .fetch_add(1, std::memory_order_relaxed);
        bp.sorted[slot] = static_cast<std::uint32_t>(i);
      }
    });
  }
  const bool one_level = std::has_single_bit(levels);
  // A single occupied level (equal radii) needs no per-body level.
  if (one_level) {
    bp.slevel = {};
    bp.coarse = {};
  } else {
    bp.slevel.resize(n);
    bp.coarse.resize(buckets);
  }
  const auto lowest = static_cast<std::uint32_t>(std::countr_zero(levels));  // the lowest occupied level
  // Body i's sorted copies at position p (what the pair search reads); 1 when
  // it is above the lowest level (the bucket's `coarse` flag).
  const auto copy_sorted = [&](std::uint32_t p, std::size_t i) -> std::uint8_t {
    bp.sx[p] = fx(i);
    bp.sy[p] = fy(i);
    if (!uniform) bp.se[p] = extent_of(i);
    if (one_level) return 0;
    const auto k = static_cast<std::uint8_t>(level_at(i));
    bp.slevel[p] = k;
    return k != lowest ? 1 : 0;
  };

  if (serial) {
    // 3-4. The scatter, in storage order (so each bucket is in storage order),
    //      writing the sorted copies the pair search reads as it goes.
    std::uint32_t* const cursor = bp.bucket_start.data() + 1;
    const std::uint32_t* const bucket = bp.bucket_scratch.data();
    if (!one_level) std::fill(bp.coarse.begin(), bp.coarse.end(), std::uint8_t{0});
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t h = bucket[i];
      const std::uint32_t p = cursor[h]++;
      bp.sorted[p] = static_cast<std::uint32_t>(i);
      const std::uint8_t coarse = copy_sorted(p, i);
      if (!one_level) bp.coarse[h] |= coarse;
    }
  } else {
    // 4. Arrival order inside a bucket is a race: sort each bucket by storage
    //    index, then gather the sorted copies the pair search reads.
    const std::size_t bucket_block = 1 << 11;
    for_blocks(buckets, bucket_block, [&](std::size_t h0, std::size_t h1, std::size_t) {
      for (std::size_t h = h0; h < h1; ++h) {
        const std::uint32_t begin = bp.bucket_start[h];
        const std::uint32_t end = bp.bucket_start[h + 1];
        if (end - begin > 1) std::sort(bp.sorted.begin() + begin, bp.sorted.begin() + end);
        std::uint8_t coarse = 0;
        for (std::uint32_t p = begin; p < end; ++p) coarse |= copy_sorted(p, bp.sorted[p]);
        if (!one_level) bp.coarse[h] = coarse;
      }
    });
  }

  // 5. Pair search over fixed blocks of sorted positions. With equal
  //    extents no extent is read, with a single occupied level no level.
  out.blocks.resize(nb);
  // |rounded distance - exact distance| <= |rounding of (dx, dy)| <= 2 sqrt(2) delta.
  const double band = 2.0 * 1.4142135623730951 * delta * (1.0 + 1e-9);
  const SearchInput<T> in{bp.sx.data(), bp.sy.data(), bp.se.data(), bp.slevel.data(), bp.sorted.data(),
                       bp.bucket_start.data(), x.data(), y.data(), radius.data(), margin, emin, band,
                       bp.coarse.data(), levels, lowest, hash, &g};
  for_blocks(n, kBlock, [&](std::size_t p0, std::size_t p1, std::size_t blk) {
    std::vector<Pair>& local = out.blocks[blk];
    // Room for a little more than last time, allocated once: growing by
    // doubling would hold up to twice the list (and both copies while it
    // moves) at the moment memory peaks. The list changes little from one
    // rebuild to the next; a block that outgrows this grows by an eighth.
    const std::size_t last = blk < bp.block_size.size() ? bp.block_size[blk] : 0;
    local.reserve(last + last / 32 + 16);
    if (uniform && one_level) {
      search_block<true, true>(in, p0, p1, local);
    } else if (one_level) {
      search_block<false, true>(in, p0, p1, local);
    } else {
      search_block<false, false>(in, p0, p1, local);
    }
  });

  bp.block_size.resize(nb);
  for (std::size_t blk = 0; blk < nb; ++blk) {
    bp.block_size[blk] = out.blocks[blk].size();
    out.count += out.blocks[blk].size();
  }
}

BodyRange body_range(std::span<const double> x, std::span<const double> y, std::span<const double> radius) {
  return body_range_of(x, y, radius);
}
BodyRange body_range(std::span<const float> x, std::span<const float> y, std::span<const double> radius) {
  return body_range_of(x, y, radius);
}

void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, BroadPhase& bp, PairBlocks& out) {
  find_pairs_of(x, y, radius, margin, body_range(x, y, radius), bp, out);
}

void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, const BodyRange& range, BroadPhase& bp, PairBlocks& out) {
  find_pairs_of(x, y, radius, margin, range, bp, out);
}

void find_pairs(std::span<const float> x, std::span<const float> y, std::span<const double> radius, double margin,
                const BodyRange& range, BroadPhase& bp, PairBlocks& out) {
  find_pairs_of(x, y, radius, margin, range, bp, out);
}

std::vector<Pair> find_pairs_brute_force(std::span<const double> x, std::span<const double> y,
                                         std::span<const double> radius, double margin) {
  std::vector<Pair> pairs;
  const auto n = static_cast<std::uint32_t>(x.size());
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = i + 1; j < n; ++j)
      if (discs_overlap(x[i], y[i], radius[i] + margin, x[j], y[j], radius[j] + margin)) pairs.push_back({i, j});
  return pairs;
}


// --- when to rebuild: PairAnchors ---------------------------------------------

namespace {

// The skin is at least this many smallest radii.
constexpr double kMinSkin = 0.05;

// Rounding to float is off by at most 2^-24 of a value (to nearest); with
// room to spare, and for subnormals. `xmax`: the largest |coordinate|.
double anchor_error(double xmax) { return 6e-8 * xmax + 1e-30; }

}  // namespace

void PairAnchors::begin_step(std::size_t n) {
  grid_.valid = false;
  if (restored_ && restored_->x.size() == n) {
    // The anchors of the build with the repairs since made: the original's
    // anchors and skins, and its rounding bound, the largest of the build's
    // and each repair's (move).
    x_ = restored_->x;
    y_ = restored_->y;
    skin_ = restored_->skin;
    body_skin_ = restored_->body_skin;
    contact_colours_ = restored_->contact_colours;
    double xmax = 0.0;
    for (std::size_t i = 0; i < x_.size(); ++i)
      xmax = std::max({xmax, std::abs(static_cast<double>(x_[i])), std::abs(static_cast<double>(y_[i]))});
    error_ = x_.empty() ? 0.0 : anchor_error(xmax);
    per_body_limits();  // the build's least skin
    if (!restored_->repairs.empty()) {
      skins_per_body();
      for (const Repair& repair : restored_->repairs)
        for (const Moved& m : repair) place(m);
      per_body_limits(true);
    }
  }
  if (x_.size() != n) {
    // Bodies were added or removed: the list is rebuilt anyway, which
    // refills the anchors; until then only their size matters.
    x_.resize(n);
    y_.resize(n);
    body_skin_.clear();
    scale_.clear();
    stale_ = true;
  }
}

bool PairAnchors::far(double moved) const {
  if (scale_.empty()) {
    const double half_skin = 0.5 * skin_ * 0.99;
    return moved_at_most(moved, error_) > half_skin * half_skin;
  }
  return always_ || moved > 1.0;
}

bool PairAnchors::needs_rebuild(double moved) {
  const bool gone = far(moved);
  if (gone) restored_.reset();
  return stale_ || gone;
}

std::size_t PairAnchors::beyond(std::span<const double> x, std::span<const double> y, std::size_t most,
                                std::vector<std::uint32_t>& out) const {
  out.clear();
  if (!scale_.empty() && always_) return most + 1;
  const double half_skin = 0.5 * skin_ * 0.99;
  // With one skin, bodies well inside it are passed over without a square
  // root: moved_at_most(d2) <= (sqrt(d2) + 1.42 error)^2 (1 + 1e-15).
  const double clear = std::max(0.0, 0.999 * half_skin - 1.42 * error_);
  const double inside = clear * clear * (1.0 - 1e-9);
  // The integrate stage's squared distance (moved_in), body by body; in
  // fixed blocks, in parallel, where the bodies are many (the lists joined
  // in order: storage order either way).
  const auto gone = [&](std::size_t i) {
    const double dx = x[i] - x_[i], dy = y[i] - y_[i];
    const double d2 = dx * dx + dy * dy;
    return scale_.empty() ? d2 > inside && moved_at_most(d2, error_) > half_skin * half_skin
                          : d2 * static_cast<double>(scale_[i]) > 1.0;
  };
  const std::size_t n = x_.size();
  constexpr std::size_t kBeyondBlock = 16384;
  if (n < 4 * kBeyondBlock) {
    for (std::size_t i = 0; i < n && out.size() <= most; ++i)
      if (gone(i)) out.push_back(static_cast<std::uint32_t>(i));
    return out.size();
  }
  std::vector<std::vector<std::uint32_t>> lists(block_count(n, kBeyondBlock));
  for_blocks(n, kBeyondBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    for (std::size_t i = i0; i < i1 && lists[blk].size() <= most; ++i)
      if (gone(i)) lists[blk].push_back(static_cast<std::uint32_t>(i));
  });
  for (const auto& list : lists)
    for (std::size_t k = 0; k < list.size() && out.size() <= most; ++k) out.push_back(list[k]);
  return out.size();
}

void PairAnchors::skins_per_body() {
  // A list with one skin gets one per body: the common one, also its least.
  if (!body_skin_.empty()) return;
  body_skin_.assign(x_.size(), static_cast<float>(skin_));
  least_body_skin_ = static_cast<float>(skin_);
}

void PairAnchors::place(const Moved& m) {
  if (grid_.valid && grid_.displaced[m.index] == 0) {
    grid_.displaced[m.index] = 1;
    grid_.displaced_list.push_back(m.index);
  }
  x_[m.index] = m.x;
  y_[m.index] = m.y;
  body_skin_[m.index] = m.skin;
  error_ = std::max(error_, anchor_error(std::max(std::abs(static_cast<double>(m.x)), std::abs(static_cast<double>(m.y)))));
}

void PairAnchors::move(const Repair& bodies) {
  const double error_before = error_;
  const bool one_skin = body_skin_.empty();
  skins_per_body();
  for (const Moved& m : bodies) {
    // Where the build had it (kept from its first repair).
    built_.emplace(m.index, Moved{m.index, x_[m.index], y_[m.index], body_skin_[m.index]});
    max_skin_ = std::max(max_skin_, m.skin);
    place(m);
  }
  repaired_bodies_ += bodies.size();
  repairs_.push_back(bodies);
  // The limits of the bodies moved (skins only grow: no limit falls below
  // the rounding bound that was not already), all of them where the
  // rounding bound grew or there were none per body.
  if (one_skin || error_ != error_before || always_) {
    per_body_limits(true);
  } else {
    for (const Moved& m : bodies) scale_[m.index] = limit_scale(m.skin);
  }
}

void PairAnchors::built_from(std::vector<float>& x, std::vector<float>& y, std::vector<float>& skin) const {
  // The skins of the build: none per body where it had one skin (the
  // repairs' own are in repairs()).
  x.assign(x_.begin(), x_.end());
  y.assign(y_.begin(), y_.end());
  skin.clear();
  if (built_skins_) skin.assign(body_skin_.begin(), body_skin_.end());
  for (const auto& [i, m] : built_) {
    x[i] = m.x;
    y[i] = m.y;
    if (built_skins_) skin[i] = m.skin;
  }
}

namespace {

// What partners() reads: the anchors, radii and skins (null: one skin).
struct PartnerInput {
  const float* x;
  const float* y;
  const double* r;
  const float* skin;
  double least;
  double margin;
};

// find_pairs' extent of body j (PairAnchors::extents) grown by the margin.
inline double grown(const PartnerInput& in, std::size_t j) {
  return (in.skin ? in.r[j] + 0.5 * (static_cast<double>(in.skin[j]) - in.least) : in.r[j]) + in.margin;
}

}  // namespace

namespace {
// floor(t) clamped to [0, last]: truncation, which is floor from 0 up (no
// call to floor; NaN goes to 0).
inline std::int64_t cell_clamped(double t, std::int64_t last) {
  if (!(t > 0.0)) return 0;
  return t < static_cast<double>(last) ? static_cast<std::int64_t>(t) : last;
}
}  // namespace

std::int64_t PairAnchors::AnchorGrid::cx(double x) const { return cell_clamped((x - x0) * inv, w - 1); }
std::int64_t PairAnchors::AnchorGrid::cy(double y) const { return cell_clamped((y - y0) * inv, h - 1); }

void PairAnchors::grid_anchors(double cell) {
  AnchorGrid& g = grid_;
  const std::size_t n = x_.size();
  double x0 = std::numeric_limits<double>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
  for (std::size_t i = 0; i < n; ++i) {
    x0 = std::min(x0, static_cast<double>(x_[i]));
    x1 = std::max(x1, static_cast<double>(x_[i]));
    y0 = std::min(y0, static_cast<double>(y_[i]));
    y1 = std::max(y1, static_cast<double>(y_[i]));
  }
  // Not many more cells than bodies (a cell at most doubles the bodies a
  // query looks at: its cells still cover the same disc).
  const auto cells_of = [&](double c) { return ((x1 - x0) / c + 1.0) * ((y1 - y0) / c + 1.0); };
  while (cells_of(cell) > static_cast<double>(n) + 1024.0) cell *= 2.0;
  g.x0 = x0;
  g.y0 = y0;
  g.inv = 1.0 / cell;
  g.w = static_cast<std::int64_t>((x1 - x0) * g.inv) + 1;
  g.h = static_cast<std::int64_t>((y1 - y0) * g.inv) + 1;
  const auto cells = static_cast<std::size_t>(g.w * g.h);
  g.start.assign(cells + 1, 0);
  std::vector<std::uint32_t> at(n);
  for (std::size_t i = 0; i < n; ++i) {
    at[i] = static_cast<std::uint32_t>(g.cy(y_[i]) * g.w + g.cx(x_[i]));
    ++g.start[at[i] + 1];
  }
  for (std::size_t c = 0; c < cells; ++c) g.start[c + 1] += g.start[c];
  g.body.resize(n);
  std::vector<std::uint32_t> fill(g.start.begin(), g.start.end() - 1);
  for (std::size_t i = 0; i < n; ++i) g.body[fill[at[i]]++] = static_cast<std::uint32_t>(i);
  g.displaced.assign(n, 0);
  g.displaced_list.clear();
  g.valid = true;
}

namespace {

// Appends the pair of each body i of `moved` with every body j of `over`
// (every body where `over` is null; `count` of them) whose grown extents
// overlap at the anchors (a pair may be listed twice): one pass over `over`
// against a grid of the moved bodies, in fixed blocks (in parallel).
// `reach_any`: no body's grown extent is larger.
void partners_by_pass(const PartnerInput& in, std::span<const std::uint32_t> moved, const std::uint32_t* over,
                      std::size_t count, double reach_any, std::vector<Pair>& out) {
  // Cells at least as wide as any moved body's grown extent plus any
  // body's: a partner is at most one cell away. Over the moved bodies' box,
  // grown by a cell each side.
  double reach_moved = 0.0, x0 = std::numeric_limits<double>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
  for (const std::uint32_t i : moved) {
    reach_moved = std::max(reach_moved, grown(in, i));
    x0 = std::min(x0, static_cast<double>(in.x[i]));
    x1 = std::max(x1, static_cast<double>(in.x[i]));
    y0 = std::min(y0, static_cast<double>(in.y[i]));
    y1 = std::max(y1, static_cast<double>(in.y[i]));
  }
  double cell = (reach_moved + reach_any) * (1.0 + 1e-6);
  // Not many more cells than bodies looked at (moved bodies far apart get
  // wider cells).
  const auto cells_of = [&](double c) {
    return ((x1 - x0) / c + 6.0) * ((y1 - y0) / c + 6.0);
  };
  while (cells_of(cell) > 2.0 * static_cast<double>(count + moved.size()) + 1024.0) cell *= 2.0;
  // Two cells of room on each side: moved bodies' cells are from 2 to
  // (x1 - x0) / cell + 2, their partners' at most one further, and each of
  // those has its 3 x 3 inside (a cell more at the far end for rounding).
  const double inv = 1.0 / cell;
  const auto w = static_cast<std::int64_t>((x1 - x0) * inv) + 6, h = static_cast<std::int64_t>((y1 - y0) * inv) + 6;
  x0 -= 2.0 * cell;
  y0 -= 2.0 * cell;
  const auto cell_of = [&](std::int64_t cx, std::int64_t cy) { return static_cast<std::size_t>(cy * w + cx); };
  // The moved bodies by cell (counting sort), and which cells have one in
  // their 3 x 3.
  std::vector<std::uint32_t> start(static_cast<std::size_t>(w * h) + 1, 0), in_cell(moved.size());
  std::vector<std::uint8_t> near(static_cast<std::size_t>(w * h), 0);
  const auto cx_of = [&](double x) { return static_cast<std::int64_t>(std::floor((x - x0) * inv)); };
  const auto cy_of = [&](double y) { return static_cast<std::int64_t>(std::floor((y - y0) * inv)); };
  std::vector<std::size_t> moved_cell(moved.size());
  for (std::size_t k = 0; k < moved.size(); ++k) {
    const std::uint32_t i = moved[k];
    const std::int64_t cx = std::clamp<std::int64_t>(cx_of(in.x[i]), 1, w - 2),
                       cy = std::clamp<std::int64_t>(cy_of(in.y[i]), 1, h - 2);
    moved_cell[k] = cell_of(cx, cy);
    ++start[moved_cell[k] + 1];
    for (std::int64_t dy = -1; dy <= 1; ++dy)
      for (std::int64_t dx = -1; dx <= 1; ++dx) near[cell_of(cx + dx, cy + dy)] = 1;
  }
  for (std::size_t c = 0; c + 1 < start.size(); ++c) start[c + 1] += start[c];
  {
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < moved.size(); ++k) in_cell[fill[moved_cell[k]]++] = moved[k];
  }
  // Every body against the moved ones in the 3 x 3 cells around it. A
  // partner's cell is from 1 to w - 3 (h - 3): others are skipped before
  // their cell is taken (truncation is floor from 1 up).
  const double ux = static_cast<double>(w - 2), uy = static_cast<double>(h - 2);
  constexpr std::size_t kPartnerBlock = 2048;
  std::vector<std::vector<Pair>> found(block_count(count, kPartnerBlock));
  for_blocks(count, kPartnerBlock, [&](std::size_t k0, std::size_t k1, std::size_t blk) {
    const float* const xs = in.x;
    const float* const ys = in.y;
    std::vector<Pair>& mine = found[blk];
    for (std::size_t k = k0; k < k1; ++k) {
      const std::size_t j = over ? over[k] : k;
      const double xj = xs[j], yj = ys[j];
      const double u = (xj - x0) * inv, v = (yj - y0) * inv;
      if (!(u >= 1.0 && u < ux && v >= 1.0 && v < uy)) continue;
      const auto cx = static_cast<std::int64_t>(u), cy = static_cast<std::int64_t>(v);
      if (near[cell_of(cx, cy)] == 0) continue;
      const double ej = grown(in, j);
      for (std::int64_t dy = -1; dy <= 1; ++dy)
        for (std::int64_t dx = -1; dx <= 1; ++dx) {
          const std::size_t c = cell_of(cx + dx, cy + dy);
          for (std::uint32_t q = start[c]; q < start[c + 1]; ++q) {
            const std::uint32_t i = in_cell[q];
            if (i != j && discs_overlap(xs[i], ys[i], grown(in, i), xj, yj, ej))
              mine.push_back(j < i ? Pair{static_cast<std::uint32_t>(j), i} : Pair{i, static_cast<std::uint32_t>(j)});
          }
        }
    }
  });
  for (const std::vector<Pair>& mine : found) out.insert(out.end(), mine.begin(), mine.end());
}

}  // namespace

void PairAnchors::partners(std::span<const double> radius, double speculative, std::span<const std::uint32_t> moved,
                           std::vector<Pair>& out) {
  if (moved.empty()) return;
  // find_pairs' extents (extents()) grown by margin(), its predicate.
  const PartnerInput in{x_.data(), y_.data(), radius.data(), body_skin_.empty() ? nullptr : body_skin_.data(),
                        least_skin(), margin(speculative)};
  const std::size_t n = x_.size();
  // No body's grown extent is larger (rmax_ and the largest skin, max_skin_).
  const double reach_any = rmax_ + 0.5 * (static_cast<double>(max_skin_) - in.least) + in.margin;
  // The first repair after a build looks at every body; the second makes
  // the grid of the anchors (a pass over the bodies too), which the later
  // ones use (a list that is rebuilt after one repair pays for no grid).
  if (!grid_.valid || grid_.displaced.size() != n) {
    if (repairs_.size() < 2) return partners_by_pass(in, moved, nullptr, n, reach_any, out);
    grid_anchors(reach_any);
  }
  const AnchorGrid& g = grid_;
  const float* const xs = x_.data();
  const float* const ys = y_.data();
  // Each moved body against the bodies in the grid's cells within its
  // grown extent plus any body's (a little more: the cells are taken from
  // rounded coordinates), less those repairs moved since the grid was made
  // (below), in fixed blocks of moved bodies (in parallel; the caller sorts
  // what they find).
  constexpr std::size_t kMovedBlock = 32;
  std::vector<std::vector<Pair>> found(block_count(moved.size(), kMovedBlock));
  for_blocks(moved.size(), kMovedBlock, [&](std::size_t k0, std::size_t k1, std::size_t blk) {
    std::vector<Pair>& mine = found[blk];
    for (std::size_t k = k0; k < k1; ++k) {
      const std::uint32_t i = moved[k];
      const double xi = xs[i], yi = ys[i], ei = grown(in, i);
      const double reach = (ei + reach_any) * (1.0 + 1e-6) + 1e-12 * std::max(std::abs(xi), std::abs(yi));
      const std::int64_t cx0 = g.cx(xi - reach), cx1 = g.cx(xi + reach);
      const std::int64_t cy0 = g.cy(yi - reach), cy1 = g.cy(yi + reach);
      for (std::int64_t cy = cy0; cy <= cy1; ++cy) {
        const std::size_t row = static_cast<std::size_t>(cy * g.w);
        for (std::uint32_t q = g.start[row + static_cast<std::size_t>(cx0)];
             q < g.start[row + static_cast<std::size_t>(cx1) + 1]; ++q) {
          const std::uint32_t j = g.body[q];
          if (j == i || g.displaced[j] != 0) continue;
          if (discs_overlap(xi, yi, ei, xs[j], ys[j], grown(in, j)))
            mine.push_back(j < i ? Pair{j, i} : Pair{i, j});
        }
      }
    }
  });
  for (const std::vector<Pair>& mine : found) out.insert(out.end(), mine.begin(), mine.end());
  // The bodies moved since the grid was made (the moved among them).
  if (!g.displaced_list.empty())
    partners_by_pass(in, moved, g.displaced_list.data(), g.displaced_list.size(), reach_any, out);
}

bool PairAnchors::built_pair(std::span<const double> radius, double speculative, Pair p) const {
  // The anchors and skins of the build (before the first repair of either).
  const auto at_build = [&](std::uint32_t i) {
    const auto it = built_.find(i);
    if (it != built_.end()) return it->second;
    return Moved{i, x_[i], y_[i], body_skin_.empty() ? 0.0f : body_skin_[i]};
  };
  const Moved a = at_build(p.a), b = at_build(p.b);
  const double margin = this->margin(speculative), least = least_skin();
  // extents() of the build: the radius where it had one skin.
  const auto grown_at_build = [&](const Moved& m) {
    return (built_skins_ ? radius[m.index] + 0.5 * (static_cast<double>(m.skin) - least) : radius[m.index]) + margin;
  };
  return discs_overlap(a.x, a.y, grown_at_build(a), b.x, b.y, grown_at_build(b));
}

void PairAnchors::per_body_limits(bool keep_least) {
  scale_.clear();
  always_ = false;
  if (body_skin_.empty()) return;
  const std::size_t n = body_skin_.size();
  scale_.resize(n);
  // Body i may move t_i = 0.99 s_i / 2 less the rounding bound (see
  // moved_at_most): the rebuild comes when d2 > t_i^2, that is when
  // d2 * scale_i > 1. The float scale is off by 2^-24 of itself, far inside
  // the 1% kept back (limit_scale; 0 where t_i <= 0: skins are at most
  // 8e6 m, so a positive t_i never rounds to a zero scale). Per fixed block,
  // in parallel (min and or are exact).
  constexpr std::size_t kBlock = 4096;
  std::vector<std::pair<float, std::uint8_t>> block_least(block_count(n, kBlock));
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    float least = std::numeric_limits<float>::infinity();
    std::uint8_t always = 0;
    for (std::size_t i = i0; i < i1; ++i) {
      least = std::min(least, body_skin_[i]);
      scale_[i] = limit_scale(body_skin_[i]);
      always |= scale_[i] > 0.0f ? 0 : 1;
    }
    block_least[blk] = {least, always};
  });
  float least = std::numeric_limits<float>::infinity();
  for (const auto& [l, a] : block_least) {
    least = std::min(least, l);
    always_ = always_ || a != 0;
  }
  // The least skin is the build's: repairs only grow skins, and the
  // extents (and so the pairs a repair adds) must not move under them.
  if (!keep_least) least_body_skin_ = least;
}

float PairAnchors::limit_scale(float skin) const {
  const double t = 0.5 * static_cast<double>(skin) * 0.99 - 1.4142135623730951 * error_;
  return t > 0.0 ? static_cast<float>(1.0 / (t * t)) : 0.0f;
}

BodyRange PairAnchors::anchor(const BodyStore& b, double dt, std::span<const std::uint8_t> held,
                              bool may_colour_contacts) {
  const std::size_t n = b.size();
  constexpr std::size_t kAnchorBlock = 2048;
  // A restored world's anchors and skins are already in place (begin_step).
  const bool restored = restored_.has_value() && restored_->x.size() == n;
  x_.resize(n);
  y_.resize(n);
  // One pass: the anchors, the fastest speed, the radius sum, and the range.
  // Exact max/min per block; the radius sum is per fixed block, in order.
  const std::size_t nb = block_count(n, kAnchorBlock);
  std::vector<double> block_v2(nb, 0.0), block_rsum(nb, 0.0);
  std::vector<BodyRange> block_range(nb);
  std::vector<std::size_t> block_held(nb, 0);
  // A restored list is built from the anchors of its build; its repairs
  // are made again after (DiscreteSolver::rebuild_pairs).
  if (restored) {
    x_ = restored_->x;
    y_ = restored_->y;
    body_skin_ = restored_->body_skin;
  }
  repairs_.clear();
  built_.clear();
  repaired_bodies_ = 0;
  grid_.valid = false;
  for_blocks(n, kAnchorBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    const double* const xs = b.x.data();
    const double* const ys = b.y.data();
    const double* const vxs = b.vx.data();
    const double* const vys = b.vy.data();
    const double* const rs = b.r.data();
    float* const xbs = x_.data();
    float* const ybs = y_.data();
    double v2 = 0.0, rsum = 0.0;
    std::size_t holding = 0;
    BodyRange range;
    for (std::size_t i = i0; i < i1; ++i) {
      if (!restored) {
        xbs[i] = static_cast<float>(xs[i]);
        ybs[i] = static_cast<float>(ys[i]);
      }
      v2 = std::max(v2, vxs[i] * vxs[i] + vys[i] * vys[i]);
      range.add(xbs[i], ybs[i], rs[i]);
      rsum += rs[i];
      if (held.size() == n) holding += held[i];
    }
    block_v2[blk] = v2;
    block_range[blk] = range;
    block_rsum[blk] = rsum;
    block_held[blk] = holding;
  });
  double vmax2 = 0.0, rsum = 0.0;
  std::size_t holding = 0;
  BodyRange range;
  for (std::size_t k = 0; k < nb; ++k) {
    vmax2 = std::max(vmax2, block_v2[k]);
    range.merge(block_range[k]);
    rsum += block_rsum[k];
    holding += block_held[k];
  }
  const double rmin = n > 0 ? range.rmin : 1.0;
  const double rmean = n > 0 ? rsum / static_cast<double>(n) : 1.0;
  // So that one very fast body cannot make every body a candidate of every
  // other, the skin stops at 4 mean radii. Where a quarter of the bodies or
  // more rest on others (held: they get skins of their own, below), the few
  // that move get room for 3 steps instead of 1.5: every rebuild costs a pass
  // over all the bodies, and the movers alone set it off.
  const double steps = held.size() == n && 4 * holding >= n && n > 0 ? 6.0 : 3.0;
  if (!restored)
    skin_ = std::clamp(steps * std::sqrt(vmax2) * dt, kMinSkin * rmin, std::max(kMinSkin * rmin, 4.0 * rmean));
  const double xmax = n > 0 ? std::max({std::abs(range.xmin), std::abs(range.xmax), std::abs(range.ymin),
                                        std::abs(range.ymax)})
                            : 0.0;
  error_ = n > 0 ? anchor_error(xmax) : 0.0;
  // Where no body carried load (a gas), contacts are a few percent of the
  // candidates and none lasts: each substep colours its own contacts instead
  // of the list being coloured at its build. Saved with the anchors, so a
  // restored world decides the same.
  if (!restored) contact_colours_ = may_colour_contacts && held.size() != n;
  if (!restored) {
    // Held bodies: a skin for their own speed, at least the smallest radius
    // (in a pile of equal discs a skin below one radius keeps the candidates
    // to the touching ring), at most the common skin; floats, as saved. When
    // no body's is below the common skin, there are none per body.
    body_skin_.clear();
    if (held.size() == n && rmin < skin_) {
      body_skin_.resize(n);
      const auto common = static_cast<float>(skin_);
      std::vector<std::uint8_t> block_lower(nb, 0);
      for_blocks(n, kAnchorBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
        const double* const vxs = b.vx.data();
        const double* const vys = b.vy.data();
        std::uint8_t lower = 0;
        for (std::size_t i = i0; i < i1; ++i) {
          float s = common;
          if (held[i]) {
            const double own = 3.0 * std::sqrt(vxs[i] * vxs[i] + vys[i] * vys[i]) * dt;
            s = std::min(static_cast<float>(std::clamp(own, rmin, skin_)), common);
          }
          body_skin_[i] = s;
          lower |= s < common ? 1 : 0;
        }
        block_lower[blk] = lower;
      });
      if (std::find(block_lower.begin(), block_lower.end(), 1) == block_lower.end()) body_skin_.clear();
    }
  }
  built_skins_ = !body_skin_.empty();
  rmax_ = n > 0 ? range.rmax : 0.0;
  max_skin_ = static_cast<float>(skin_);  // no body's is larger at a build
  per_body_limits();
  restored_.reset();
  stale_ = false;
  return range;
}

std::span<const double> PairAnchors::extents(std::span<const double> radius, std::vector<double>& scratch,
                                             BodyRange& range) const {
  if (body_skin_.empty()) return radius;
  const std::size_t n = radius.size();
  scratch.resize(n);
  const double least = least_skin();
  constexpr std::size_t kBlock = 4096;
  std::vector<std::pair<double, double>> block_lohi(block_count(n, kBlock));
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
    for (std::size_t i = i0; i < i1; ++i) {
      const double e = radius[i] + 0.5 * (static_cast<double>(body_skin_[i]) - least);
      scratch[i] = e;
      lo = std::min(lo, e);
      hi = std::max(hi, e);
    }
    block_lohi[blk] = {lo, hi};
  });
  range.rmin = std::numeric_limits<double>::infinity();
  range.rmax = 0.0;
  for (const auto& [lo, hi] : block_lohi) {
    range.rmin = std::min(range.rmin, lo);
    range.rmax = std::max(range.rmax, hi);
  }
  return scratch;
}

}  // namespace carom::detail
