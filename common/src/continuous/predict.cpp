// The continuous solver, stage 3: predict_events, and predict, which the
// event loop calls after each velocity change.
//
// Reads:  the bodies in loop order, the grid, the neighbours found by queries.
// Writes: the neighbour lists (row_, col_), each body's earliest event
//         (Cold::ev_*), then the calendar (calendar.cpp).
//
// Determinism: the grid's pairs are found in parallel over fixed blocks of
// bodies; a block updates only its own bodies and defers the rest, applied
// after in block order. A body's event is the minimum under the strict total
// order (time, key), and every time of impact is computed from the lower
// id's side, so neither the order of the offers nor that of a neighbour list
// can change it.

#include <algorithm>
#include <cmath>

#include "continuous/shared.hpp"
#include "continuous/solver.hpp"
#include "parallel.hpp"

namespace carom::detail {
namespace {

// How far ahead along the row above the grid's pair search asks for bodies
// (see predict_events).
constexpr std::uint32_t kRowAhead = 8;

}  // namespace

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
    const TorusHash torus = grid_.hash;
    const std::size_t ng = grid_.count;
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
        const double x = grid_.x[k], y = grid_.y[k], e = grid_.ext[k];
        if (!clear_of_walls(cold_[k])) walls(hot_[k], dt_, [&](double t, std::uint32_t code) { offer(k, t, code); });
        // Overlapping candidates first, without a branch per candidate.
        std::size_t nhits = 0;
        auto scan = [&](std::uint32_t q0, std::uint32_t q1) {
          if (hits.size() < nhits + (q1 - q0)) hits.resize(2 * hits.size() + (q1 - q0));
          std::uint32_t* w = hits.data();
          for (std::uint32_t q = q0; q < q1; ++q) {
            w[nhits] = q;
            nhits += static_cast<std::size_t>(discs_overlap(x, y, e, grid_.x[q], grid_.y[q], grid_.ext[q]));
          }
        };
        const std::int64_t cx = cell_coord(x, grid_.inv), cy = cell_coord(y, grid_.inv);
        // The row above is met again a row of bodies later, long out of
        // cache: ask for the bodies a little ahead there.
        {
          const std::uint32_t ahead = grid_.start[torus(0, cx - 1, cy + 1)] + kRowAhead;
          if (ahead + 1 < ng) {
            prefetch(&hot_[ahead]);
            prefetch(&hot_[ahead + 1]);
            prefetch(&cold_[ahead]);
            prefetch(&cold_[ahead + 1]);
          }
        }
        // Own cell (later bodies) and east, then the row above (scan_row).
        scan_row(torus, grid_.start.data(), 0, cx, cx + 1, cy, true, k + 1, scan);
        scan_row(torus, grid_.start.data(), 0, cx - 1, cx + 1, cy + 1, false, k + 1, scan);
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
  size_calendar();
  // One pass over the bodies: their neighbour rows, the earliest event of
  // those with neighbours found by queries (the grid's pairs and the walls
  // are done above; everybody's counter is still 0, as ev_pcount says), and
  // the bucket of each event.
  const bool grid_pairs = !all_pairs_ && n >= 2;
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      const auto me = static_cast<std::uint32_t>(i);
      Cold& c = cold_[i];
      if (grid_pairs) {
        c.row_begin = row_[i];
        c.row_end = row_[i + 1];
        if (i >= grid_.count || c.extra != kNone)
          predict_with(me, 0.0, true, [&](auto&& found, auto&& limit) {
            for (std::uint32_t e = cold_[me].extra; e != kNone; e = extra_[e].second)
              found(extra_[e].first, pair_time(me, extra_[e].first, limit()));
          });
      }
      calendar_.first[i] = c.ev_t != kInf ? static_cast<std::uint32_t>(calendar_.bucket_of(c.ev_t)) : kNone;
    }
  });
  fill_calendar();
}

}  // namespace carom::detail
