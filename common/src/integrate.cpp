// Integration stages: integrate_velocities, integrate_positions (discrete),
// predict_positions and finish_verlet (Verlet), walls.
//
// Reads/writes: each body's own slots only, so any split over threads gives the
// same bits. The displacement maximum is an exact max, grouped per fixed block.

#include <algorithm>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 8192;

template <class Fn>
double max_over_blocks(std::size_t n, Fn&& per_block) {
  std::vector<double> part(block_count(n, kBlock), 0.0);
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) { part[blk] = per_block(i0, i1); });
  double m = 0.0;
  for (double v : part) m = std::max(m, v);
  return m;
}

// Inside means min + r <= x <= max - r, written exactly as the clamp writes it.
inline void wall_axis(double& x, double& v, double r, double lo, double hi, double e) {
  if (x < lo + r) {
    x = lo + r;
    if (v < 0) v = -e * v;
  } else if (x > hi - r) {
    x = hi - r;
    if (v > 0) v = -e * v;
  }
}

}  // namespace

void integrate_velocities(BodyStore& b, Vec2 g, double damping, double h) {
  const double gx = g.x * h, gy = g.y * h;
  double* vx = b.vx.data();
  double* vy = b.vy.data();
  for_blocks(b.size(), kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      vx[i] = vx[i] * damping + gx;
      vy[i] = vy[i] * damping + gy;
    }
  });
}

double integrate_positions(BodyStore& b, const Params& p, double h, std::span<const double> xb,
                           std::span<const double> yb) {
  const Bounds box = p.bounds;
  const double e = p.restitution;
  return max_over_blocks(b.size(), [&](std::size_t i0, std::size_t i1) {
    double m = 0.0;
    for (std::size_t i = i0; i < i1; ++i) {
      double x = b.x[i] + b.vx[i] * h;
      double y = b.y[i] + b.vy[i] * h;
      if (box.walled) {
        wall_axis(x, b.vx[i], b.r[i], box.min.x, box.max.x, e);
        wall_axis(y, b.vy[i], b.r[i], box.min.y, box.max.y, e);
      }
      b.x[i] = x;
      b.y[i] = y;
      const double dx = x - xb[i], dy = y - yb[i];
      m = std::max(m, dx * dx + dy * dy);
    }
    return m;
  });
}

double predict_positions(BodyStore& b, double h, std::span<double> px, std::span<double> py,
                         std::span<const double> xb, std::span<const double> yb) {
  return max_over_blocks(b.size(), [&](std::size_t i0, std::size_t i1) {
    double m = 0.0;
    for (std::size_t i = i0; i < i1; ++i) {
      px[i] = b.x[i];
      py[i] = b.y[i];
      const double x = b.x[i] + b.vx[i] * h;
      const double y = b.y[i] + b.vy[i] * h;
      b.x[i] = x;
      b.y[i] = y;
      const double dx = x - xb[i], dy = y - yb[i];
      m = std::max(m, dx * dx + dy * dy);
    }
    return m;
  });
}

void finish_verlet(BodyStore& b, const Params& p, double h, std::span<const double> px,
                   std::span<const double> py) {
  const Bounds box = p.bounds;
  const double e = p.restitution;
  const double inv_h = 1.0 / h;
  for_blocks(b.size(), kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      double x = b.x[i], y = b.y[i];
      // Velocity the motion implies before the walls; walls reflect it.
      double vx = (x - px[i]) * inv_h;
      double vy = (y - py[i]) * inv_h;
      if (box.walled) {
        wall_axis(x, vx, b.r[i], box.min.x, box.max.x, e);
        wall_axis(y, vy, b.r[i], box.min.y, box.max.y, e);
      }
      b.x[i] = x;
      b.y[i] = y;
      b.vx[i] = vx;
      b.vy[i] = vy;
    }
  });
}

}  // namespace carom::detail
