// The continuous (a priori) solver: find_swept_pairs, predict_events,
// process_events, finish_step.
//
// Reads:  positions, velocities (already kicked by gravity and damped for the
//         whole step), radii and masses, in storage (id) order.
// Writes: positions and velocities at the end of the step; collision events.
//
// Within a step every body moves in a straight line between events. Each body
// keeps one predicted event, its earliest: a collision with a neighbour or a
// wall impact, found with the exact time of impact. Events are taken in the
// strict total order (time, lower id, higher id) (storage order is id order;
// walls sort after every body) from a calendar: equal-length time buckets
// over the step, the bucket being processed a small binary heap. Taking an
// event: if the partner's velocity changed since the prediction (per-body
// counters) the event is stale and only its owner is predicted again;
// otherwise the impact is applied and only its two bodies are predicted
// again. A body that a stale event pointed at gets its turn when that event
// comes up. Bodies are advanced lazily (each keeps its own time) and all
// drift to the end of the step at the end.
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
//    since. Nothing can tunnel, whatever the speeds.
//
// Memory. Events come in time order, so the bodies they touch are spread
// over the whole body array (13 MB at 100k bodies, far more than the cache
// holds): every body line, neighbour list and neighbour would be a wait on
// memory. Opening a calendar bucket therefore asks, in stages, for what the
// events a few buckets ahead will read (prefetch_ahead), so that an event
// finds its bodies in cache; the start of the step reads and writes its
// arrays in order, or asks a little ahead where it cannot. Hints only: no
// result depends on them.
//
// Determinism: the hash, the pairs and the first predictions run in parallel
// over fixed blocks, each writing only its own slots (and deferring the rest,
// applied after in block order); events are then applied one by one in the
// total order, so the result is the same for any thread count and any
// insertion order. A body's earliest event is a minimum under that order and
// every time of impact is computed from the lower id's side, so nothing
// depends on the order of a neighbour list, on extra neighbours, or on the
// memory layout (bodies are kept in the hash's spatial order): the all-pairs
// reference gives the same bits.
//
// Inelastic collapse (restitution < 1). Inelastic bodies can collide
// infinitely often in finite time (a ball between a wall and another ball, a
// column resting on the floor, a cluster closing in). Three rules keep every
// step finite:
//  - Slow impacts (approach no faster than the slow speed: 2 |g| dt, the
//    speed gravity gives in two steps, at least 1e-9 of the fastest body)
//    rest in contact (restitution 0) for a body's first kDissipative of them
//    in a step, and are elastic in normal after that (both bodies must have
//    rests left). Faster impacts use Params::restitution; with restitution 1
//    every impact is elastic. Elastic hard discs collide finitely often, so a
//    cascade of slow impacts ends.
//  - Resting contact: a pair within a hair of contact (kTouchGap) approaching
//    no faster than a rounding-level speed (1e-9 of the slow speed) is not an
//    impact, nor a body resting on a wall. Rounding left by a rest then
//    never starts a new cascade.
//  - A budget of events per step (WorldConfig::continuous_events_per_body):
//    past it the step ends where the events stopped, every body at that
//    instant, and StepStats::events_capped says so.
// A pile under gravity settles to a jitter of the order of |g| dt: each kick
// sends the pile down by |g| dt, the floor and the rests take it out.

#include "continuous.hpp"

#include <algorithm>
#include <cstdlib>
#include <bit>
#include <cmath>
#include <limits>

#include "parallel.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 4096;
constexpr double kInf = std::numeric_limits<double>::infinity();
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
// The collapse guard: slow impacts a body may take with restitution 0 in one
// step; its later slow impacts in the step are elastic in normal.
constexpr std::uint8_t kDissipative = 2;
// Prefetching (see prefetch_ahead): the calendar buckets between the stages
// of the event loop's pipeline (about one event per bucket), and how far
// ahead along the row above the grid's pair search asks for bodies.
constexpr std::size_t kPrefetchLead = 2;
constexpr std::uint32_t kRowAhead = 8;

// A prefetch hint that the optimiser keeps: GCC deletes a loop whose only
// effect is __builtin_prefetch.
[[gnu::always_inline]] inline void prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

inline std::uint64_t pair_key(std::uint32_t i, std::uint32_t j) {
  return i < j ? (std::uint64_t{i} << 32 | j) : (std::uint64_t{j} << 32 | i);
}

// `reach` is the largest |coordinate| of the step: the same hair for every
// body, so that bodies of one radius and speed share one extent exactly.
inline double extent_of(double r, double speed, double span, double reach) {
  return (r + speed * span) * (1.0 + kExtentSlack) + kCoordinateSlack * reach;
}

// `horizon`: the caller needs no impact later than this (s); answering -1
// for one that is surely later saves the root. "Surely": the pair is still
// closing at the horizon and its squared distance there exceeds sigma^2 by
// more than rounding could explain, so the root is past it.
[[gnu::always_inline]] inline double impact_time(double dpx, double dpy, double dvx, double dvy, double sigma,
                                                double resting, double horizon = kInf) {
  const double b = dpx * dvx + dpy * dvy;
  if (!(b < 0.0)) return -1.0;
  const double c = dpx * dpx + dpy * dpy - sigma * sigma;
  if (c <= 2.0 * kTouchGap * sigma * sigma) {
    // In contact: an impact only when approaching faster than `resting`.
    if (resting > 0.0 && -b <= resting * std::sqrt(dpx * dpx + dpy * dpy)) return -1.0;
    if (c <= 0.0) return 0.0;
  }
  const double a = dvx * dvx + dvy * dvy;
  if (a * horizon + b < 0.0) {
    const double f = (a * horizon + 2.0 * b) * horizon + c;
    if (f > 1e-9 * (c + (a * horizon - 2.0 * b) * horizon)) return -1.0;
  }
  const double cross = dpx * dvy - dpy * dvx;
  const double disc = a * sigma * sigma - cross * cross;
  if (disc < 0.0) return -1.0;
  return c / (-b + std::sqrt(disc));
}
}  // namespace

double time_of_impact(double dpx, double dpy, double dvx, double dvy, double sigma, double resting) {
  return impact_time(dpx, dpy, dvx, dvy, sigma, resting);
}

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
  grid_e_ = quantile(sample, 19, 20);
  grid_inv_ = 1.0 / (2.0 * grid_e_ * (1.0 + kExtentSlack));
  discs_.reset(2.0 * grid_e_ * (1.0 + kExtentSlack));
  // The grid's cells wrap onto a torus of buckets, as in the broad phase (one
  // level): a row of three cells is one run of the sorted bodies.
  grid_hash_ = TorusHash::for_bodies(n);
  const TorusHash torus = grid_hash_;
  const std::uint32_t buckets = torus.buckets();
  grid_start_.assign(buckets + 1, 0);
  cell_.resize(n);
  std::size_t ng = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (all_pairs_ || ext_[i] > grid_e_) {
      cell_[i] = kNone;
      continue;
    }
    cell_[i] = torus(0, cell_coord(b.x[i], grid_inv_), cell_coord(b.y[i], grid_inv_));
    ++grid_start_[cell_[i] + 1];
    ++ng;
  }
  for (std::uint32_t h = 0; h < buckets; ++h) grid_start_[h + 1] += grid_start_[h];
  // The loop order: bodies by bucket (a spatial order; by storage index inside
  // a bucket), then the others by the bucket their centre falls in (so that
  // their neighbours, found by queries, are visited in about memory order).
  // Memory layout only: no result depends on it.
  {
    fill_.assign(grid_start_.begin(), grid_start_.end() - 1);
    rest_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (cell_[i] != kNone) {
        order_[fill_[cell_[i]]++] = static_cast<std::uint32_t>(i);
      } else {
        const std::uint64_t h = torus(0, cell_coord(b.x[i], grid_inv_), cell_coord(b.y[i], grid_inv_));
        rest_.push_back(h << 32 | i);
      }
    }
    std::sort(rest_.begin(), rest_.end());
    for (std::size_t k = 0; k < rest_.size(); ++k) order_[ng + k] = static_cast<std::uint32_t>(rest_[k]);
    for (std::size_t k = 0; k < n; ++k) loop_of_[order_[k]] = static_cast<std::uint32_t>(k);
  }
  grid_count_ = ng;
  gx_.resize(ng);
  gy_.resize(ng);
  ge_.resize(ng);
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
        gx_[k] = b.x[i];
        gy_[k] = b.y[i];
        ge_[k] = ext_[i];
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

std::uint64_t ContinuousSolver::key_of(std::uint32_t i, std::uint32_t partner) const {
  // order_ holds the ids (storage indices) compactly: no body's line is read.
  if (partner >= kWallCodeMinX) return std::uint64_t{order_[i]} << 32 | partner;  // a wall, or kNone
  return pair_key(order_[i], order_[partner]);
}

[[gnu::always_inline]] inline double ContinuousSolver::pair_time(std::uint32_t i, std::uint32_t j,
                                                                 double limit) const {
  // Always from the lower id, so that both bodies compute the same bits.
  const bool lower = hot_[i].id < hot_[j].id;
  const Hot& a = hot_[lower ? i : j];
  const Hot& c = hot_[lower ? j : i];
  const double t0 = std::max(a.t, c.t);
  const double ha = t0 - a.t, hc = t0 - c.t;
  const double dpx = (c.x + c.vx * hc) - (a.x + a.vx * ha);
  const double dpy = (c.y + c.vy * hc) - (a.y + a.vy * ha);
  const double s = impact_time(dpx, dpy, c.vx - a.vx, c.vy - a.vy, a.r + c.r, resting_speed_, limit - t0);
  return s < 0.0 ? -1.0 : t0 + s;
}

// Wall impacts: the gap to the clamp position over the approach speed,
// skipped without a division when later than `limit`.
template <class Consider>
void ContinuousSolver::walls(const Hot& bi, double limit, Consider&& consider) const {
  if (!box_.walled) return;
  auto wall = [&](double pos, double vel, double bound, std::uint32_t code, bool low) {
    if (bi.last == code) return;
    if (low ? !(vel < 0.0) : !(vel > 0.0)) return;
    const double gap = low ? pos - bound : bound - pos;
    const double speed = std::abs(vel);
    if (gap <= kTouchGap * bi.r && speed <= resting_speed_) return;  // resting on it
    if (gap > (limit - bi.t) * speed * (1.0 + 1e-12)) return;
    consider(bi.t + (gap <= 0.0 ? 0.0 : gap / speed), code);
  };
  wall(bi.x, bi.vx, box_.min.x + bi.r, kWallCodeMinX, true);
  wall(bi.x, bi.vx, box_.max.x - bi.r, kWallCodeMaxX, false);
  wall(bi.y, bi.vy, box_.min.y + bi.r, kWallCodeMinY, true);
  wall(bi.y, bi.vy, box_.max.y - bi.r, kWallCodeMaxY, false);
}

// The body's path for the rest of the step lies in its registered disc (the
// solver keeps it so, except for the all-pairs reference and a lone body); a
// disc that stays clear of every wall by its own extent (which is more than
// the radius plus the path, so far more than rounding) cannot give a wall
// impact this step: walls() would find none, and is skipped.
inline bool ContinuousSolver::clear_of_walls(const Cold& c) const {
  if (!box_.walled) return true;
  if (all_pairs_ || hot_.size() < 2) return false;
  const double m = 2.0 * c.ext;
  return c.cx - m > box_.min.x && c.cx + m < box_.max.x && c.cy - m > box_.min.y && c.cy + m < box_.max.y;
}

template <class Partners>
void ContinuousSolver::predict_with(std::uint32_t i, double now, bool keep, Partners&& partners) {
  const Hot& bi = hot_[i];
  double best_t = keep ? cold_[i].ev_t : kInf;
  std::uint32_t best = keep ? cold_[i].ev_partner : kNone;
  // Keys only break ties of time (a finite time ties only with a set best).
  auto consider = [&](double t, std::uint32_t partner) {
    if (t > dt_) return;
    t = std::max(t, now);
    if (t < best_t || (t == best_t && key_of(i, partner) < key_of(i, best))) {
      best_t = t;
      best = partner;
    }
  };
  // Impacts later than the best so far (or the step) need no exact time.
  partners([&](std::uint32_t j, double t) {
    if (t >= 0.0) consider(t, j);
  }, [&] { return std::min(best_t, dt_); });
  if (!clear_of_walls(cold_[i])) walls(bi, std::min(best_t, dt_), consider);
  Cold& c = cold_[i];
  c.ev_t = best_t;
  c.ev_partner = best;
  c.ev_pcount = best < kWallCodeMinX ? hot_[best].count : 0;
  ++c.version;
}

void ContinuousSolver::predict(std::uint32_t i, double now) {
  predict_with(i, now, false, [&](auto&& found, auto&& limit) {
    const Hot& bi = hot_[i];
    auto partner = [&](std::uint32_t j) {
      // Neither body changed velocity since their last impact with each other:
      // they are separating (or sliding), and cannot meet again in straight
      // lines.
      const Hot& bj = hot_[j];
      if ((bi.last == j && bi.last_count == bj.count) || (bj.last == i && bj.last_count == bi.count)) return;
      found(j, pair_time(i, j, limit()));
    };
    if (all_pairs_) {
      const auto n = static_cast<std::uint32_t>(hot_.size());
      for (std::uint32_t j = 0; j < n; ++j)
        if (j != i) partner(j);
    } else {
      // The neighbours are near in memory but rarely in cache: ask for all of
      // them at once.
      const std::uint32_t r0 = cold_[i].row_begin, r1 = cold_[i].row_end;
      for (std::uint32_t k = r0; k < r1; ++k) prefetch(&hot_[col_[k]]);
      for (std::uint32_t k = r0; k < r1; ++k) partner(col_[k]);
      for (std::uint32_t e = cold_[i].extra; e != kNone; e = extra_[e].second) partner(extra_[e].first);
    }
  });
}

// --- the calendar ------------------------------------------------------------
//
// Buckets of equal length over the step hold (body, version) entries in
// lists; the bucket being processed is a binary heap of due events ordered by
// (time, key). A body's event lives in the bucket of its time; predicting the
// body again bumps its version, so older entries are skipped when met. The
// order of popping is exactly (time, key): bucket index is monotone in time,
// and entries for a bucket already open go straight into the heap.

namespace {
inline bool later(double ta, std::uint64_t ka, double tb, std::uint64_t kb) {
  return ta > tb || (ta == tb && ka > kb);
}
}  // namespace

void ContinuousSolver::schedule(std::uint32_t i) {
  const Cold& c = cold_[i];
  if (c.ev_t == kInf) return;
  const Due d{c.ev_t, key_of(i, c.ev_partner), i, c.version, c.ev_partner, 0};
  const auto b = std::min(bucket_head_.size() - 1, static_cast<std::size_t>(c.ev_t * bucket_scale_));
  if (b <= bucket_now_) {
    due_.push_back(d);
    std::push_heap(due_.begin(), due_.end(),
                   [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); });
    return;
  }
  entries_.push_back({d, bucket_head_[b]});
  bucket_head_[b] = static_cast<std::uint32_t>(entries_.size() - 1);
}

bool ContinuousSolver::next_event(Due* out) {
  auto cmp = [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); };
  for (;;) {
    while (!due_.empty()) {
      std::pop_heap(due_.begin(), due_.end(), cmp);
      const Due d = due_.back();
      due_.pop_back();
      if (cold_[d.body].version != d.version) continue;  // predicted again since
      *out = d;
      return true;
    }
    // Open the next bucket that has entries.
    if (++bucket_now_ >= bucket_head_.size()) return false;
    prefetch_ahead(bucket_now_);
    due_.insert(due_.end(), initial_.begin() + bucket_start_[bucket_now_],
                initial_.begin() + bucket_start_[bucket_now_ + 1]);
    for (std::uint32_t e = bucket_head_[bucket_now_]; e != kNone; e = entries_[e].next)
      due_.push_back(entries_[e].due);
    bucket_head_[bucket_now_] = kNone;
    std::make_heap(due_.begin(), due_.end(), cmp);
  }
}

// The event loop waits on memory: the bodies of an event are spread over the
// whole body array. Opening a bucket asks for what the buckets a little ahead
// will read, in stages, each stage reading only what the previous one
// fetched: the calendar's list node; the owner's and partner's lines; their
// neighbour lists; the neighbours. Hints only: nothing here changes state.
void ContinuousSolver::prefetch_ahead(std::size_t now) {
  constexpr std::size_t kLead = kPrefetchLead;
  const std::size_t nb = bucket_head_.size();
  auto each = [&](std::size_t bp, auto&& f) {
    if (bp >= nb) return;
    for (std::uint32_t k = bucket_start_[bp]; k < bucket_start_[bp + 1]; ++k) f(initial_[k]);
    for (std::uint32_t e = bucket_head_[bp]; e != kNone; e = entries_[e].next) f(entries_[e].due);
  };
  auto rows = [&](std::uint32_t i, auto&& f) {
    const Cold& c = cold_[i];
    f(c.row_begin, c.row_end);
  };
  // Stage 3: the neighbours of both bodies.
  each(now + kLead, [&](const Due& d) {
    if (cold_[d.body].version != d.version) return;
    rows(d.body, [&](std::uint32_t r0, std::uint32_t r1) {
      for (std::uint32_t k = r0; k < r1; ++k) prefetch(&hot_[col_[k]]);
    });
    if (d.partner < kWallCodeMinX)
      rows(d.partner, [&](std::uint32_t r0, std::uint32_t r1) {
        for (std::uint32_t k = r0; k < r1; ++k) prefetch(&hot_[col_[k]]);
      });
  });
  // Stage 2: their neighbour lists.
  each(now + 2 * kLead, [&](const Due& d) {
    if (cold_[d.body].version != d.version) return;
    rows(d.body, [&](std::uint32_t r0, std::uint32_t r1) {
      if (r0 < r1) {
        prefetch(&col_[r0]);
        prefetch(&col_[r1 - 1]);
      }
    });
    if (d.partner < kWallCodeMinX)
      rows(d.partner, [&](std::uint32_t r0, std::uint32_t r1) {
        if (r0 < r1) {
          prefetch(&col_[r0]);
          prefetch(&col_[r1 - 1]);
        }
      });
  });
  // Stage 1: the two bodies.
  each(now + 3 * kLead, [&](const Due& d) {
    prefetch(&hot_[d.body]);
    prefetch(&cold_[d.body]);
    if (d.partner < kWallCodeMinX) {
      prefetch(&hot_[d.partner]);
      prefetch(&cold_[d.partner]);
    }
  });
  // Stage 0: the head of the bucket's list.
  const std::size_t b0 = now + 4 * kLead;
  if (b0 < nb && bucket_head_[b0] != kNone) prefetch(&entries_[bucket_head_[b0]]);
}

void ContinuousSolver::offer(std::uint32_t x, double t, std::uint32_t partner) {
  if (t > dt_) return;
  Cold& c = cold_[x];
  // Keys only break ties of time (a finite time ties only with a set event).
  if (t < c.ev_t || (t == c.ev_t && key_of(x, partner) < key_of(x, c.ev_partner))) {
    c.ev_t = t;
    c.ev_partner = partner;
  }
}

void ContinuousSolver::predict_events() {
  const std::size_t n = hot_.size();
  row_.assign(n + 1, 0);
  col_.clear();
  if (all_pairs_ || n < 2) {
    for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
      for (std::size_t i = i0; i < i1; ++i) predict(static_cast<std::uint32_t>(i), 0.0);
    });
    candidate_pairs_ = n < 2 ? 0 : std::uint64_t{n} * (n - 1) / 2;
  } else {
    // The grid's pairs, each met once (a body looks at later bodies in its
    // own cell, its east neighbour and the three cells of the row above; the
    // other four neighbours find it, as in the broad phase), each with its
    // time of impact, offered to both bodies' earliest event. Fixed blocks of
    // bodies in parallel: a block updates only its own bodies and defers the
    // rest, applied after in block order (a minimum: the order cannot matter).
    const TorusHash torus = grid_hash_;
    const std::size_t ng = grid_count_;
    const std::size_t gb = block_count(ng, kBlock);
    found_.resize(gb);
    deferred_.resize(gb);
    hits_.resize(gb);
    for_blocks(ng, kBlock, [&](std::size_t k0, std::size_t k1, std::size_t blk) {
      auto& out = found_[blk];
      auto& def = deferred_[blk];
      out.clear();
      def.clear();
      std::vector<std::uint32_t>& hits = hits_[blk];
      for (std::size_t kk = k0; kk < k1; ++kk) {
        const auto k = static_cast<std::uint32_t>(kk);
        const double x = gx_[k], y = gy_[k], e = ge_[k];
        if (!clear_of_walls(cold_[k])) walls(hot_[k], dt_, [&](double t, std::uint32_t code) { offer(k, t, code); });
        // Overlapping candidates first, without a branch per candidate.
        std::size_t nhits = 0;
        auto scan = [&](std::uint32_t q0, std::uint32_t q1) {
          if (hits.size() < nhits + (q1 - q0)) hits.resize(2 * hits.size() + (q1 - q0));
          std::uint32_t* w = hits.data();
          for (std::uint32_t q = q0; q < q1; ++q) {
            w[nhits] = q;
            nhits += static_cast<std::size_t>(discs_overlap(x, y, e, gx_[q], gy_[q], ge_[q]));
          }
        };
        const std::int64_t cx = cell_coord(x, grid_inv_), cy = cell_coord(y, grid_inv_);
        // The row above is met again a row of bodies later, long out of
        // cache: ask for the bodies a little ahead there.
        {
          const std::uint32_t ahead = grid_start_[torus(0, cx - 1, cy + 1)] + kRowAhead;
          if (ahead + 1 < ng) {
            prefetch(&hot_[ahead]);
            prefetch(&hot_[ahead + 1]);
            prefetch(&cold_[ahead]);
            prefetch(&cold_[ahead + 1]);
          }
        }
        // Own cell (later bodies) and east, then the row above (scan_row).
        scan_row(torus, grid_start_.data(), 0, cx, cx + 1, cy, true, k + 1, scan);
        scan_row(torus, grid_start_.data(), 0, cx - 1, cx + 1, cy + 1, false, k + 1, scan);
        for (std::size_t h = 0; h < nhits; ++h) {
          const std::uint32_t q = hits[h];
          out.push_back({k, q});
          const double t = pair_time(k, q, dt_);
          if (t < 0.0) continue;
          offer(k, t, q);
          if (q >= k0 && q < k1) {
            offer(q, t, k);
          } else {
            def.push_back({q, k, t});
          }
        }
      }
    });
    std::size_t pairs = 0;
    for (std::size_t blk = 0; blk < gb; ++blk) {
      for (const Deferred& d : deferred_[blk]) offer(d.body, d.t, d.partner);
      pairs += found_[blk].size();
      for (const auto& [a, c] : found_[blk]) {
        ++row_[a + 1];
        ++row_[c + 1];
      }
    }
    // Both directions, for the predictions during the step.
    for (std::size_t k = 0; k < n; ++k) row_[k + 1] += row_[k];
    col_.resize(row_[n]);
    fill_.assign(row_.begin(), row_.end() - 1);
    for (std::size_t blk = 0; blk < gb; ++blk)
      for (const auto& [a, c] : found_[blk]) {
        col_[fill_[a]++] = c;
        col_[fill_[c]++] = a;
      }
    candidate_pairs_ = pairs;
  }
  // About two bodies' events per bucket.
  const std::size_t buckets = std::clamp<std::size_t>(std::bit_ceil(std::max<std::size_t>(n, 1)) / 2, 64, 1u << 20);
  bucket_head_.assign(buckets, kNone);
  bucket_scale_ = dt_ > 0.0 ? static_cast<double>(buckets) / dt_ : 0.0;
  bucket_now_ = 0;
  entries_.clear();
  due_.clear();
  auto bucket_of = [&](double t) {
    return static_cast<std::uint32_t>(std::min(buckets - 1, static_cast<std::size_t>(t * bucket_scale_)));
  };
  // One pass over the bodies: their neighbour rows, the earliest event of
  // those with neighbours found by queries (the grid's pairs and the walls
  // are done above; everybody's counter is still 0, as ev_pcount says), and
  // the bucket of each event.
  first_bucket_.resize(n);
  const bool grid_pairs = !all_pairs_ && n >= 2;
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      const auto me = static_cast<std::uint32_t>(i);
      Cold& c = cold_[i];
      if (grid_pairs) {
        c.row_begin = row_[i];
        c.row_end = row_[i + 1];
        if (i >= grid_count_ || c.extra != kNone)
          predict_with(me, 0.0, true, [&](auto&& found, auto&& limit) {
            for (std::uint32_t e = cold_[me].extra; e != kNone; e = extra_[e].second)
              found(extra_[e].first, pair_time(me, extra_[e].first, limit()));
          });
      }
      first_bucket_[i] = c.ev_t != kInf ? bucket_of(c.ev_t) : kNone;
    }
  });
  // The start-of-step events by bucket: a counting sort in body order.
  bucket_start_.assign(buckets + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (first_bucket_[i] != kNone) ++bucket_start_[first_bucket_[i] + 1];
  for (std::size_t k = 0; k < buckets; ++k) bucket_start_[k + 1] += bucket_start_[k];
  initial_.resize(bucket_start_[buckets]);
  fill_.assign(bucket_start_.begin(), bucket_start_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (first_bucket_[i] == kNone) continue;
    const Cold& c = cold_[i];
    initial_[fill_[first_bucket_[i]]++] = {c.ev_t, key_of(static_cast<std::uint32_t>(i), c.ev_partner),
                                           static_cast<std::uint32_t>(i), c.version, c.ev_partner, 0};
  }
  due_.assign(initial_.begin(), initial_.begin() + bucket_start_[1]);
  std::make_heap(due_.begin(), due_.end(), [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); });
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
  const double reach = qe + grid_e_;
  const double fx0 = std::floor((qx - reach) * grid_inv_), fx1 = std::floor((qx + reach) * grid_inv_);
  const double fy0 = std::floor((qy - reach) * grid_inv_), fy1 = std::floor((qy + reach) * grid_inv_);
  if (grid_count_ == 0 || (fx1 - fx0 + 1.0) * (fy1 - fy0 + 1.0) > static_cast<double>(kMaxQueryCells)) {
    const auto n = static_cast<std::uint32_t>(hot_.size());
    for (std::uint32_t j = 0; j < n; ++j) visit(j);
    return;
  }
  const std::int64_t x0 = cell_coord(qx - reach, grid_inv_), x1 = cell_coord(qx + reach, grid_inv_);
  const std::int64_t y0 = cell_coord(qy - reach, grid_inv_), y1 = cell_coord(qy + reach, grid_inv_);
  for (std::int64_t cy = y0; cy <= y1; ++cy)
    for (std::int64_t cx = x0; cx <= x1; ++cx) {
      const std::uint32_t h = grid_hash_(0, cx, cy);
      for (std::uint32_t q = grid_start_[h]; q < grid_start_[h + 1]; ++q) visit(q);
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

// --- the event loop -----------------------------------------------------------

void ContinuousSolver::process_events(const ContinuousOptions& o, const BodyStore& b,
                                      std::vector<CollisionEvent>* events, std::size_t cap, StepStats& st) {
  const std::uint64_t budget = std::uint64_t{o.events_per_body} * hot_.size() + 4096;
  const double e = restitution_;
  double t_stop = dt_;
  auto advance = [](Hot& x, double t) {
    const double h = t - x.t;
    x.x += x.vx * h;
    x.y += x.vy * h;
    x.t = t;
  };
  // The collapse guard (see the top of the file): the restitution of a slow
  // impact. c = kNone: a wall.
  auto slow_impact = [&](std::uint32_t a, std::uint32_t c) {
    const bool dissipate = impacts_[a] < kDissipative && (c == kNone || impacts_[c] < kDissipative);
    if (!dissipate) return 1.0;
    ++impacts_[a];
    if (c != kNone) ++impacts_[c];
    return 0.0;
  };
  auto after_change = [&](std::uint32_t i, double t) {
    moved(i, t);
    predict(i, t);
    schedule(i);
  };

  Due due;
  while (next_event(&due)) {
    const std::uint32_t i = due.body;
    const double t = due.t;
    const Cold& ci = cold_[i];
    const std::uint32_t partner = ci.ev_partner;
    if (partner < kWallCodeMinX && hot_[partner].count != ci.ev_pcount) {
      predict(i, t);  // the partner moved on: only the owner is predicted again
      schedule(i);
      continue;
    }
    if (st.events_processed >= budget) {
      st.events_capped = true;
      t_stop = t;
      break;
    }
    ++st.events_processed;
    if (partner < kWallCodeMinX) {
      const bool lower = hot_[i].id < hot_[partner].id;
      const std::uint32_t lo = lower ? i : partner, hi = lower ? partner : i;
      Hot& a = hot_[lo];
      Hot& c = hot_[hi];
      advance(a, t);
      advance(c, t);
      const double dx = c.x - a.x, dy = c.y - a.y;
      const double d = std::sqrt(dx * dx + dy * dy);
      const double nx = d > 0.0 ? dx / d : 1.0, ny = d > 0.0 ? dy / d : 0.0;
      const double u = (c.vx - a.vx) * nx + (c.vy - a.vy) * ny;
      const double ma = cold_[lo].m, mc = cold_[hi].m;
      if (u < 0.0) {
        const double eff = (-u > slow_speed_ || e == 1.0) ? e : slow_impact(lo, hi);
        const double du = -(1.0 + eff) * u;
        const double fa = ma / (ma + mc), fc = mc / (ma + mc);
        a.vx -= fc * du * nx;
        a.vy -= fc * du * ny;
        c.vx += fa * du * nx;
        c.vy += fa * du * ny;
        ++st.collisions;
        if (events) {
          if (events->size() < cap) {
            const double impulse = mc * fa * du;
            CollisionEvent ev;
            ev.a = b.id[a.id];
            ev.b = b.id[c.id];
            ev.point = {(c.r * a.x + a.r * c.x) / (a.r + c.r), (c.r * a.y + a.r * c.y) / (a.r + c.r)};
            ev.impulse = {impulse * nx, impulse * ny};
            ev.substep = 0;
            events->push_back(ev);
          } else {
            ++st.events_dropped;
          }
        }
      }
      ++a.count;
      ++c.count;
      a.last = hi;
      a.last_count = c.count;
      c.last = lo;
      c.last_count = a.count;
      after_change(lo, t);
      after_change(hi, t);
    } else {
      Hot& a = hot_[i];
      advance(a, t);
      double* v = nullptr;
      double sign = 1.0;  // +1: the wall is on the low side
      switch (partner) {
        case kWallCodeMinX: a.x = box_.min.x + a.r; v = &a.vx; break;
        case kWallCodeMaxX: a.x = box_.max.x - a.r; v = &a.vx; sign = -1.0; break;
        case kWallCodeMinY: a.y = box_.min.y + a.r; v = &a.vy; break;
        default: a.y = box_.max.y - a.r; v = &a.vy; sign = -1.0; break;
      }
      const double into = -sign * *v;  // speed towards the wall
      if (into > 0.0) {
        const double eff = (into > slow_speed_ || e == 1.0) ? e : slow_impact(i, kNone);
        *v = -eff * *v;
        st.wall_impulse += cold_[i].m * (1.0 + eff) * into;
        ++st.wall_collisions;
      }
      ++a.count;
      a.last = partner;
      after_change(i, t);
    }
  }
  // On the budget the step ends where the events stopped: every body is
  // left at that instant (no overlap, nothing tunnelled) and the rest of the
  // step's motion is dropped.
  dt_ = t_stop;
}

void ContinuousSolver::finish_step(BodyStore& b) const {
  const Bounds box = box_;
  const double end = dt_;
  // In storage order (the body store is written in order); the bodies' lines
  // are asked for a little ahead.
  constexpr std::size_t kAhead = 16;
  const std::size_t n = hot_.size();
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      if (i + kAhead < i1) prefetch(&hot_[loop_of_[i + kAhead]]);
      const Hot& s = hot_[loop_of_[i]];
      double x = s.x + s.vx * (end - s.t);
      double y = s.y + s.vy * (end - s.t);
      if (box.walled) {
        // Rounding only: the wall events already turned every body around.
        x = std::clamp(x, box.min.x + s.r, box.max.x - s.r);
        y = std::clamp(y, box.min.y + s.r, box.max.y - s.r);
      }
      b.x[i] = x;
      b.y[i] = y;
      b.vx[i] = s.vx;
      b.vy[i] = s.vy;
    }
  });
}

}  // namespace carom::detail
