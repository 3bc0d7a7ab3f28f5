// The continuous solver, stages 4 and 5: process_events (the event loop)
// and finish_step.
//
// Reads:  the calendar, the bodies in loop order.
// Writes: velocities and positions of the bodies of each event (in loop
//         order), collision events, the step's counters; then positions and
//         velocities back to the body store, in storage order.
//
// Determinism: events are applied one at a time in the strict total order
// (time, lower id, higher id), walls after bodies; an impact's response is
// computed from the lower id's side.
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
//    impact, nor a body resting on a wall (predict.cpp). Rounding left by a
//    rest then never starts a new cascade.
//  - A budget of events per step (WorldConfig::continuous_events_per_body):
//    past it the step ends where the events stopped, every body at that
//    instant, and StepStats::events_capped says so.
// A pile under gravity settles to a jitter of the order of |g| dt: each kick
// sends the pile down by |g| dt, the floor and the rests take it out.

#include <algorithm>
#include <cmath>

#include "continuous/shared.hpp"
#include "continuous/solver.hpp"
#include "parallel.hpp"

namespace carom::detail {
namespace {

// The collapse guard: slow impacts a body may take with restitution 0 in one
// step; its later slow impacts in the step are elastic in normal.
constexpr std::uint8_t kDissipative = 2;

}  // namespace

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
