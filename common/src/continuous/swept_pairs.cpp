// The continuous solver, stage 2 (find_swept_pairs) and the queries of a
// body that leaves its swept disc (moved).
//
// Reads:  positions, velocities (already kicked by gravity and damped for the
//         whole step), radii and masses, in storage (id) order.
// Writes: the bodies in loop order (hot_, cold_), the grid, the neighbours
//         found by queries (extra_), the disc hash.
//
// Candidates. A body's path for the rest of the step lies in its registered
// disc: centre c, extent E = r + s (dt - t0), s >= its speed. Bodies whose
// discs overlap are neighbours; two bodies whose paths meet always are.
//  - At the start of the step s = max(|v|, v_floor), v_floor a little above
//    the 90th percentile of the speeds. A spatial hash (one cell per body,
//    cells twice the largest extent it holds) takes every body but the few
//    fastest or largest (extent above the 95th percentile); each of those
//    finds its neighbours by a query of the hash and of the discs placed
//    before it.
//  - After a velocity change a body whose new path leaves its disc (it got
//    faster than s) registers a new disc at its position, to the end of the
//    step, and queries for the discs that overlap it: the hash (as of the
//    start of the step) and a small multi-level hash of the discs placed
//    since (DiscHash). Nothing can tunnel, whatever the speeds.
//
// Determinism: the speeds and extents are per fixed block (exact maxima); the
// loop order is a function of the positions alone and only decides memory
// layout; a body's neighbours are a set (queries stamp what they met), and
// nothing downstream depends on their order.

#include <algorithm>
#include <cmath>

#include "continuous/shared.hpp"
#include "continuous/solver.hpp"
#include "parallel.hpp"

namespace carom::detail {
namespace {

// Registered extents are widened by this fraction and by a hair of the
// coordinates, so the hash's rounding never drops a pair whose paths
// meet; a path counts as inside its disc only with room to spare.
constexpr double kExtentSlack = 1e-9;
constexpr double kCoordinateSlack = 1e-12;
constexpr double kContainSlack = 1e-10;
// The swept speed floor: this many times the 90th percentile of the speeds.
constexpr double kFloorFactor = 1.25;
// A requery covering more grid cells than this scans every body instead.
constexpr std::size_t kMaxQueryCells = 4096;

// `reach` is the largest |coordinate| of the step: the same hair for every
// body, so that bodies of one radius and speed share one extent exactly.
inline double extent_of(double r, double speed, double span, double reach) {
  return (r + speed * span) * (1.0 + kExtentSlack) + kCoordinateSlack * reach;
}

}  // namespace

void ContinuousSolver::find_swept_pairs(const BodyStore& b, const Params& p, const ContinuousOptions& o) {
  const std::size_t n = b.size();
  box_ = p.bounds;
  restitution_ = p.restitution;
  all_pairs_ = o.all_pairs;
  dt_ = p.dt;
  hot_.resize(n);
  cold_.resize(n);
  impacts_.assign(n, 0);
  ext_.resize(n);
  order_.resize(n);
  loop_of_.resize(n);
  extra_.clear();
  stamp_.assign(n, 0);
  stamp_now_ = 0;

  // Speeds: the fastest and the largest |coordinate| (exact maxima per block),
  // and from a fixed sample a floor for the swept speed, so that a body sped
  // up by a collision seldom leaves its disc while one very fast body does not
  // widen everybody's.
  const std::size_t nb = block_count(n, kBlock);
  std::vector<double> block_vmax(nb, 0.0), block_reach(nb, 0.0);
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    double vmax = 0.0, reach = 0.0;
    for (std::size_t i = i0; i < i1; ++i) {
      vmax = std::max(vmax, std::sqrt(b.vx[i] * b.vx[i] + b.vy[i] * b.vy[i]));
      reach = std::max(reach, std::abs(b.x[i]) + std::abs(b.y[i]));
    }
    block_vmax[blk] = vmax;
    block_reach[blk] = reach;
  });
  double vmax = 0.0;
  reach_ = 0.0;
  for (std::size_t k = 0; k < nb; ++k) {
    vmax = std::max(vmax, block_vmax[k]);
    reach_ = std::max(reach_, block_reach[k]);
  }
  const std::size_t stride = std::max<std::size_t>(1, n / 4096);
  auto quantile = [](std::vector<double>& v, std::size_t num, std::size_t den) {
    if (v.empty()) return 0.0;
    auto q = v.begin() + static_cast<std::ptrdiff_t>(v.size() * num / den);
    std::nth_element(v.begin(), q, v.end());
    return *q;
  };
  std::vector<double> sample;
  for (std::size_t i = 0; i < n; i += stride) sample.push_back(std::sqrt(b.vx[i] * b.vx[i] + b.vy[i] * b.vy[i]));
  v_floor_ = kFloorFactor * quantile(sample, 9, 10);
  slow_speed_ = std::max(2.0 * std::sqrt(dot(p.gravity, p.gravity)) * p.dt, 1e-9 * vmax);
  resting_speed_ = 1e-9 * slow_speed_;
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      const double speed = std::sqrt(b.vx[i] * b.vx[i] + b.vy[i] * b.vy[i]);
      ext_[i] = extent_of(b.r[i], std::max(speed, v_floor_), p.dt, reach_);
    }
  });

  // The grid holds the bodies whose extent is at most e_grid, a high quantile
  // of the extents (with equal radii: every body no faster than the floor);
  // its cells are 2 e_grid wide, so partners in it are at most one cell apart.
  // The others (faster or much larger, a few percent) find their partners by
  // queries below.
  sample.clear();
  for (std::size_t i = 0; i < n; i += stride) sample.push_back(ext_[i]);
  grid_.e = quantile(sample, 19, 20);
  grid_.inv = 1.0 / (2.0 * grid_.e * (1.0 + kExtentSlack));
  discs_.reset(2.0 * grid_.e * (1.0 + kExtentSlack));
  // The grid's cells wrap onto a torus of buckets, as in the broad phase (one
  // level): a row of three cells is one run of the sorted bodies.
  grid_.hash = TorusHash::for_bodies(n);
  const TorusHash torus = grid_.hash;
  const std::uint32_t buckets = torus.buckets();
  grid_.start.assign(buckets + 1, 0);
  cell_.resize(n);
  std::size_t ng = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (all_pairs_ || ext_[i] > grid_.e) {
      cell_[i] = kNone;
      continue;
    }
    cell_[i] = torus(0, cell_coord(b.x[i], grid_.inv), cell_coord(b.y[i], grid_.inv));
    ++grid_.start[cell_[i] + 1];
    ++ng;
  }
  for (std::uint32_t h = 0; h < buckets; ++h) grid_.start[h + 1] += grid_.start[h];
  // The loop order: bodies by bucket (a spatial order; by storage index inside
  // a bucket), then the others by the bucket their centre falls in (so that
  // their neighbours, found by queries, are visited in about memory order).
  // Memory layout only: no result depends on it.
  {
    fill_.assign(grid_.start.begin(), grid_.start.end() - 1);
    rest_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (cell_[i] != kNone) {
        order_[fill_[cell_[i]]++] = static_cast<std::uint32_t>(i);
      } else {
        const std::uint64_t h = torus(0, cell_coord(b.x[i], grid_.inv), cell_coord(b.y[i], grid_.inv));
        rest_.push_back(h << 32 | i);
      }
    }
    std::sort(rest_.begin(), rest_.end());
    for (std::size_t k = 0; k < rest_.size(); ++k) order_[ng + k] = static_cast<std::uint32_t>(rest_[k]);
    for (std::size_t k = 0; k < n; ++k) loop_of_[order_[k]] = static_cast<std::uint32_t>(k);
  }
  grid_.count = ng;
  grid_.x.resize(ng);
  grid_.y.resize(ng);
  grid_.ext.resize(ng);
  // Written in loop order, read from the body store a little ahead.
  for_blocks(n, kBlock, [&](std::size_t k0, std::size_t k1, std::size_t) {
    constexpr std::size_t kAhead = 16;
    for (std::size_t k = k0; k < k1; ++k) {
      if (k + kAhead < k1) {
        const std::uint32_t a = order_[k + kAhead];
        prefetch(&b.x[a]);
        prefetch(&b.y[a]);
        prefetch(&b.vx[a]);
        prefetch(&b.vy[a]);
        prefetch(&b.r[a]);
        prefetch(&b.m[a]);
        prefetch(&ext_[a]);
      }
      const std::uint32_t i = order_[k];
      hot_[k] = {b.x[i], b.y[i], b.vx[i], b.vy[i], 0.0, b.r[i], 0, kNone, 0, i};
      cold_[k] = {b.m[i], b.x[i], b.y[i], ext_[i], kInf, kNone, 0, 0, kNone, 0, 0};
      if (k < ng) {
        grid_.x[k] = b.x[i];
        grid_.y[k] = b.y[i];
        grid_.ext[k] = ext_[i];
      }
    }
  });

  if (all_pairs_ || n < 2) return;
  // The others: each finds the grid's bodies and the others placed before it,
  // then is placed itself.
  for (std::size_t k = ng; k < n; ++k) {
    find_neighbours(static_cast<std::uint32_t>(k));
    discs_.insert(static_cast<std::uint32_t>(k), cold_[k].cx, cold_[k].cy, cold_[k].ext);
  }
}

// --- queries: the neighbours of a body's (new) swept disc ---------------------

void ContinuousSolver::add_neighbours(std::uint32_t i, std::uint32_t j) {
  // Once per pair: a body whose disc is queried again after each of its
  // events would otherwise get the same neighbours appended every time, and
  // predicting it walks the whole list (found by fuzzing: a 21-body world
  // took 3 s for one step). The lists are kept in pairs, so i's list holding
  // j means j's holds i.
  for (std::uint32_t e = cold_[i].extra; e != kNone; e = extra_[e].second)
    if (extra_[e].first == j) return;
  extra_.push_back({j, cold_[i].extra});
  cold_[i].extra = static_cast<std::uint32_t>(extra_.size() - 1);
  extra_.push_back({i, cold_[j].extra});
  cold_[j].extra = static_cast<std::uint32_t>(extra_.size() - 1);
}

void ContinuousSolver::find_neighbours(std::uint32_t i) {
  if (++stamp_now_ == 0) {  // wrapped: clear the stamps
    std::fill(stamp_.begin(), stamp_.end(), 0);
    stamp_now_ = 1;
  }
  stamp_[i] = stamp_now_;
  const double qx = cold_[i].cx, qy = cold_[i].cy, qe = cold_[i].ext;
  auto visit = [&](std::uint32_t j) {
    if (stamp_[j] == stamp_now_) return;
    const Cold& c = cold_[j];
    if (!discs_overlap(qx, qy, qe, c.cx, c.cy, c.ext)) return;
    stamp_[j] = stamp_now_;
    add_neighbours(i, j);
  };
  // The grid holds the discs of its bodies as at the start of the step (a
  // body of extent <= e_grid overlapping the disc has its centre within
  // e + e_grid); discs placed since are in the disc hash. Too large a disc:
  // every body.
  const double reach = qe + grid_.e;
  const double fx0 = std::floor((qx - reach) * grid_.inv), fx1 = std::floor((qx + reach) * grid_.inv);
  const double fy0 = std::floor((qy - reach) * grid_.inv), fy1 = std::floor((qy + reach) * grid_.inv);
  if (grid_.count == 0 || (fx1 - fx0 + 1.0) * (fy1 - fy0 + 1.0) > static_cast<double>(kMaxQueryCells)) {
    const auto n = static_cast<std::uint32_t>(hot_.size());
    for (std::uint32_t j = 0; j < n; ++j) visit(j);
    return;
  }
  const std::int64_t x0 = cell_coord(qx - reach, grid_.inv), x1 = cell_coord(qx + reach, grid_.inv);
  const std::int64_t y0 = cell_coord(qy - reach, grid_.inv), y1 = cell_coord(qy + reach, grid_.inv);
  for (std::int64_t cy = y0; cy <= y1; ++cy)
    for (std::int64_t cx = x0; cx <= x1; ++cx) {
      const std::uint32_t h = grid_.hash(0, cx, cy);
      for (std::uint32_t q = grid_.start[h]; q < grid_.start[h + 1]; ++q) visit(q);
    }
  discs_.query(qx, qy, qe, visit);
}

void ContinuousSolver::moved(std::uint32_t i, double now) {
  if (all_pairs_ || hot_.size() < 2) return;
  const Hot& bi = hot_[i];
  Cold& c = cold_[i];
  const double rest = dt_ - now;
  const double ex = bi.x + bi.vx * rest, ey = bi.y + bi.vy * rest;
  const double ax = bi.x - c.cx, ay = bi.y - c.cy, bx = ex - c.cx, by = ey - c.cy;
  // The rest of the path is a segment: inside the disc when both ends are
  // (with room for the radius).
  const double room = c.ext * (1.0 - kContainSlack) - kCoordinateSlack * 0.5 * reach_ - bi.r;
  if (room > 0.0 && std::max(ax * ax + ay * ay, bx * bx + by * by) <= room * room) return;
  // Faster than its disc allows: a new disc from here to the end of the step.
  const double speed = std::sqrt(bi.vx * bi.vx + bi.vy * bi.vy);
  c.cx = bi.x;
  c.cy = bi.y;
  c.ext = extent_of(bi.r, std::max(speed, v_floor_), rest, std::max(reach_, std::abs(bi.x) + std::abs(bi.y)));
  find_neighbours(i);
  discs_.insert(i, c.cx, c.cy, c.ext);
}

}  // namespace carom::detail
