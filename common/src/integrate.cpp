// Integration stages: integrate_velocities, integrate_positions (discrete),
// predict_positions and finish_verlet (Verlet), walls.
//
// Reads/writes: each body's own slots only, so any split over threads gives the
// same bits. The displacement maximum is an exact max, grouped per fixed block.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

// Per-body loops: any split gives the same bits (the maximum is exact), so
// the block only trades balance (small worlds want small blocks on 2 threads)
// against per-task overhead (large worlds want few tasks).
inline std::size_t block_for(std::size_t n) { return std::max<std::size_t>(2048, n / 8); }

template <class Fn>
double max_over_blocks(std::size_t n, Fn&& per_block) {
  const std::size_t block = block_for(n);
  std::vector<double> part(block_count(n, block), 0.0);
  for_blocks(n, block, [&](std::size_t i0, std::size_t i1, std::size_t blk) { part[blk] = per_block(i0, i1); });
  double m = 0.0;
  for (double v : part) m = std::max(m, v);
  return m;
}

// Inside means min + r <= x <= max - r, written exactly as the clamp writes it.
// A body past a wall is put back on it, its velocity into the wall reflected
// with restitution (stopped at or below the resting speed).
inline void wall_axis(double& x, double& v, double r, double lo, double hi, double e, double resting) {
  if (x <= lo + r) {
    x = lo + r;
    if (v < 0) v = (-v > resting) ? -e * v : 0.0;
  } else if (x >= hi - r) {
    x = hi - r;
    if (v > 0) v = (v > resting) ? -e * v : 0.0;
  }
}

// The lanes' versions of the loops below, four bodies at a time (where the
// processor has AVX2: simd_in_use): the same operations on the same values,
// so the same bits; a body that meets a wall is left to the one-at-a-time
// code. These loops are a sixth of a gas's step on one thread.

// The box's walls in lanes, and which of four bodies (x, y, r) wall_axis
// would act on: x <= lo + r or x >= hi - r on either axis.
struct WallLanes {
  __m256d xlo, xhi, ylo, yhi;
};
[[gnu::target("avx2"), gnu::always_inline]] inline WallLanes wall_lanes(const Bounds& box) {
  return {_mm256_set1_pd(box.min.x), _mm256_set1_pd(box.max.x), _mm256_set1_pd(box.min.y),
          _mm256_set1_pd(box.max.y)};
}
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d at_wall(__m256d x, __m256d y, __m256d r,
                                                                  const WallLanes& w) {
  return _mm256_or_pd(_mm256_or_pd(_mm256_cmp_pd(x, _mm256_add_pd(w.xlo, r), _CMP_LE_OQ),
                                   _mm256_cmp_pd(x, _mm256_sub_pd(w.xhi, r), _CMP_GE_OQ)),
                      _mm256_or_pd(_mm256_cmp_pd(y, _mm256_add_pd(w.ylo, r), _CMP_LE_OQ),
                                   _mm256_cmp_pd(y, _mm256_sub_pd(w.yhi, r), _CMP_GE_OQ)));
}

// Bodies [i0, i1): four_lanes(i) handles bodies from i four at a time and
// returns where it stopped (a four it leaves to one at a time, the tail, or
// i1); those four go through one(i) one at a time, and the lanes go on.
// Without lanes, one(i) for all.
template <class Lanes, class One>
void four_then_one(bool lanes, std::size_t i0, std::size_t i1, Lanes&& four_lanes, One&& one) {
  for (std::size_t i = i0; i < i1;) {
    if (lanes) {
      i = four_lanes(i);
      if (i == i1) break;
    }
    const std::size_t end = lanes ? std::min(i1, i + 4) : i1;
    for (; i < end; ++i) one(i);
  }
}

// The largest (scaled) squared distance from their anchors of bodies
// [i0, i1) taken four at a time, into m (the maximum is exact: any order gives
// it); returns the first body of the tail under four, which the caller takes
// one at a time.
[[gnu::target("avx2")]] std::size_t moved_avx2(const double* xs, const double* ys, const float* xbs,
                                              const float* ybs, const float* scale, std::size_t i0,
                                              std::size_t i1, double& m) {
  __m256d m4 = _mm256_setzero_pd();
  std::size_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(xs + i), _mm256_cvtps_pd(_mm_loadu_ps(xbs + i)));
    const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(ys + i), _mm256_cvtps_pd(_mm_loadu_ps(ybs + i)));
    __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    if (scale) d2 = _mm256_mul_pd(d2, _mm256_cvtps_pd(_mm_loadu_ps(scale + i)));
    m4 = _mm256_max_pd(m4, d2);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, m4);
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  m = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  return i;
}

// Moves bodies [i0, i1) by v h, four at a time; returns the first body of
// the first four that meet a wall (or i1, or the tail under four), from
// which the caller goes on one at a time.
[[gnu::target("avx2")]] std::size_t move_avx2(double* xs, double* ys, const double* vxs, const double* vys,
                                             const double* rs, const Bounds& box, double h, std::size_t i0,
                                             std::size_t i1) {
  const __m256d h4 = _mm256_set1_pd(h);
  const WallLanes walls = wall_lanes(box);
  std::size_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    const __m256d x = _mm256_add_pd(_mm256_loadu_pd(xs + i), _mm256_mul_pd(_mm256_loadu_pd(vxs + i), h4));
    const __m256d y = _mm256_add_pd(_mm256_loadu_pd(ys + i), _mm256_mul_pd(_mm256_loadu_pd(vys + i), h4));
    if (box.walled && _mm256_movemask_pd(at_wall(x, y, _mm256_loadu_pd(rs + i), walls)) != 0) break;
    _mm256_storeu_pd(xs + i, x);
    _mm256_storeu_pd(ys + i, y);
  }
  _mm256_zeroupper();  // as in moved_avx2
  return i;
}

// The largest (scaled) squared distance of bodies [i0, i1) from their
// anchors (xb, yb; none: 0): four at a time in lanes, the tail one at a time.
double moved_in(const BodyStore& b, std::span<const float> xb, std::span<const float> yb,
                std::span<const float> scale, bool lanes, std::size_t i0, std::size_t i1) {
  if (xb.empty()) return 0.0;
  const double* const xs = b.x.data();
  const double* const ys = b.y.data();
  const float* const xbs = xb.data();
  const float* const ybs = yb.data();
  double m = 0.0;
  std::size_t i = i0;
  if (lanes) i = moved_avx2(xs, ys, xbs, ybs, scale.empty() ? nullptr : scale.data(), i0, i1, m);
  for (; i < i1; ++i) {
    const double dx = xs[i] - xbs[i], dy = ys[i] - ybs[i];
    const double d2 = (dx * dx + dy * dy) * (scale.empty() ? 1.0 : static_cast<double>(scale[i]));
    m = d2 > m ? d2 : m;
  }
  return m;
}

}  // namespace

double integrate_velocities(BodyStore& b, Vec2 g, double damping, double h, std::span<const float> xb,
                            std::span<const float> yb, std::span<const float> scale) {
  const double gx = g.x * h, gy = g.y * h;
  // No gravity and no damping (a gas): v * 1 + 0 is v, but for -0, which
  // it makes +0.
  const bool still = damping == 1.0 && gx == 0.0 && gy == 0.0;
  if (still && xb.empty()) return 0.0;
  const bool lanes = simd_in_use();
  return max_over_blocks(b.size(), [&](std::size_t i0, std::size_t i1) {
    double* const vxs = b.vx.data();
    double* const vys = b.vy.data();
    if (!still) {
      for (std::size_t i = i0; i < i1; ++i) {
        vxs[i] = vxs[i] * damping + gx;
        vys[i] = vys[i] * damping + gy;
      }
    }
    return moved_in(b, xb, yb, scale, lanes, i0, i1);
  });
}

double integrate_positions(BodyStore& b, const Params& p, double h, double resting, std::span<const float> xb,
                           std::span<const float> yb, std::span<const float> scale) {
  const Bounds box = p.bounds;
  const double e = p.restitution;
  const bool lanes = simd_in_use();
  return max_over_blocks(b.size(), [&](std::size_t i0, std::size_t i1) {
    // Local pointers: kept in registers across the loop (through the
    // BodyStore reference they were reloaded for every body).
    double* const xs = b.x.data();
    double* const ys = b.y.data();
    double* const vxs = b.vx.data();
    double* const vys = b.vy.data();
    const double* const rs = b.r.data();
    // Four at a time up to four that meet a wall, those one at a time, and on.
    four_then_one(
        lanes, i0, i1, [&](std::size_t i) { return move_avx2(xs, ys, vxs, vys, rs, box, h, i, i1); },
        [&](std::size_t i) {
          double x = xs[i] + vxs[i] * h;
          double y = ys[i] + vys[i] * h;
          if (box.walled) {
            wall_axis(x, vxs[i], rs[i], box.min.x, box.max.x, e, resting);
            wall_axis(y, vys[i], rs[i], box.min.y, box.max.y, e, resting);
          }
          xs[i] = x;
          ys[i] = y;
        });
    // While the block is in the cache: how far its bodies now are from
    // their anchors (the next substep's rebuild test).
    return moved_in(b, xb, yb, scale, lanes, i0, i1);
  });
}

double predict_positions(BodyStore& b, double h, std::span<double> px, std::span<double> py,
                         std::span<const float> xb, std::span<const float> yb, std::span<const float> scale) {
  const bool lanes = simd_in_use();
  return max_over_blocks(b.size(), [&](std::size_t i0, std::size_t i1) {
    double* const xs = b.x.data();
    double* const ys = b.y.data();
    const double* const vxs = b.vx.data();
    const double* const vys = b.vy.data();
    for (std::size_t i = i0; i < i1; ++i) {
      px[i] = xs[i];
      py[i] = ys[i];
      xs[i] += vxs[i] * h;
      ys[i] += vys[i] * h;
    }
    // While the block is in the cache: how far its bodies now are from
    // their anchors (the rebuild test), in lanes.
    return moved_in(b, xb, yb, scale, lanes, i0, i1);
  });
}

namespace {

// finish_verlet for bodies [i0, i1), four at a time in AVX2 lanes with the
// same operations, so the same bits, up to four of which one's push is past
// max_push or one is at a wall (wall_axis would act): returns the first body
// of those four (or i1, or the tail under four), from which the caller goes
// on one at a time.
[[gnu::target("avx2")]] std::size_t finish_avx2(double* xs, double* ys, const double* pxs, const double* pys,
                                               double* vxs, double* vys, const double* rs, const Bounds& box,
                                               double inv_h, double max_push, std::size_t i0, std::size_t i1) {
  const __m256d ih = _mm256_set1_pd(inv_h), most = _mm256_set1_pd(max_push * max_push);
  const WallLanes walls = wall_lanes(box);
  std::size_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    const __m256d x = _mm256_loadu_pd(xs + i), y = _mm256_loadu_pd(ys + i);
    const __m256d vx = _mm256_mul_pd(_mm256_sub_pd(x, _mm256_loadu_pd(pxs + i)), ih);
    const __m256d vy = _mm256_mul_pd(_mm256_sub_pd(y, _mm256_loadu_pd(pys + i)), ih);
    const __m256d pushx = _mm256_sub_pd(vx, _mm256_loadu_pd(vxs + i));
    const __m256d pushy = _mm256_sub_pd(vy, _mm256_loadu_pd(vys + i));
    const __m256d push2 = _mm256_add_pd(_mm256_mul_pd(pushx, pushx), _mm256_mul_pd(pushy, pushy));
    __m256d odd = _mm256_cmp_pd(push2, most, _CMP_GT_OQ);
    if (box.walled) odd = _mm256_or_pd(odd, at_wall(x, y, _mm256_loadu_pd(rs + i), walls));
    if (_mm256_movemask_pd(odd) != 0) break;
    _mm256_storeu_pd(vxs + i, vx);
    _mm256_storeu_pd(vys + i, vy);
  }
  _mm256_zeroupper();  // as in moved_avx2
  return i;
}

}  // namespace

void finish_verlet(BodyStore& b, const Params& p, double h, double resting, double max_push,
                   std::span<const double> px, std::span<const double> py) {
  const Bounds box = p.bounds;
  const double e = p.restitution;
  const double inv_h = 1.0 / h;
  const bool lanes = simd_in_use();
  for_blocks(b.size(), block_for(b.size()), [&](std::size_t i0, std::size_t i1, std::size_t) {
    double* const xs = b.x.data();
    double* const ys = b.y.data();
    double* const vxs = b.vx.data();
    double* const vys = b.vy.data();
    const double* const rs = b.r.data();
    // Four at a time up to four of which one is pushed hard or at a wall,
    // those one at a time, and on.
    four_then_one(
        lanes, i0, i1,
        [&](std::size_t i) {
          return finish_avx2(xs, ys, px.data(), py.data(), vxs, vys, rs, box, inv_h, max_push, i, i1);
        },
        [&](std::size_t i) {
          double x = xs[i], y = ys[i];
          // Velocity the motion implies. On an axis where a wall clamps the body,
          // the wall answers the velocity the body brought (still in v: the
          // pushes moved positions only) with restitution, not the push's: a body
          // pushed into a wall by its neighbours must not bounce off it.
          // The pushes' share of it, (x - (px + v h)) / h, at most max_push:
          // a deep push (a tall pile at one substep) must not launch the body.
          double vx = (x - px[i]) * inv_h;
          double vy = (y - py[i]) * inv_h;
          const double pushx = vx - vxs[i], pushy = vy - vys[i];
          const double push2 = pushx * pushx + pushy * pushy;
          if (push2 > max_push * max_push) {
            const double scale = max_push / std::sqrt(push2);
            vx = vxs[i] + pushx * scale;
            vy = vys[i] + pushy * scale;
          }
          if (box.walled) {
            double ux = vxs[i], uy = vys[i];
            const double x0 = x, y0 = y;
            wall_axis(x, ux, rs[i], box.min.x, box.max.x, e, resting);
            wall_axis(y, uy, rs[i], box.min.y, box.max.y, e, resting);
            if (x != x0) vx = ux;
            if (y != y0) vy = uy;
          }
          xs[i] = x;
          ys[i] = y;
          vxs[i] = vx;
          vys[i] = vy;
        });
  });
}

}  // namespace carom::detail
