#pragma once
// Mutual (n-body) gravity: Newton's law with Plummer softening,
//   a_i = G sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2),
// by direct summation or a Barnes-Hut quadtree. Both are functions of the
// positions and masses alone, each body's sum in a fixed order, so the result
// is bit-identical for any thread count (and a restored world recomputes
// exactly what the original had).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "body_store.hpp"
#include "carom/params.hpp"

namespace carom::detail {

/// Scratch reused from call to call.
struct GravityScratch {
  // The tree: bodies in Morton order (positions and masses copied), nodes in
  // an order where each node's children are consecutive (in quadrant order).
  struct Node {
    double mass = 0, cx = 0, cy = 0;  // total mass and centre of mass
    double qxx = 0, qxy = 0, qyy = 0;  // quadrupole about the centre of mass, sum m (3 d d^T - d^2 I) in the plane
    double i2 = 0;                     // sum m |d|^2 about the centre of mass (softening's share of the quadrupole)
    double open2 = 0;                 // a body closer than sqrt(open2) to the centre of mass opens it
    std::uint32_t first = 0, count = 0;  // bodies [first, first + count) in Morton order
    std::uint32_t child = 0;             // first child (0: a leaf)
    std::uint32_t children = 0;
  };
  std::vector<Node> nodes;
  std::vector<std::uint32_t> order;  // Morton position -> storage index
  std::vector<double> sx, sy;        // positions in Morton order
  // Masses in Morton order, in float (4 bytes a body at a million: masses
  // lie in [1e-30, 1e30], and 7 digits of a mass are far below the tree's
  // 1e-3).
  std::vector<float> sm;
  std::vector<std::uint32_t> groups;  // nodes whose bodies walk the tree together
  std::vector<double> group_potential;  // per group: sum of m phi over its bodies, in order
  /// Gives the tree's memory back.
  void release() {
    std::vector<Node>().swap(nodes);
    std::vector<std::uint32_t>().swap(order);
    std::vector<double>().swap(sx);
    std::vector<double>().swap(sy);
    std::vector<float>().swap(sm);
    std::vector<std::uint32_t>().swap(groups);
    std::vector<double>().swap(group_potential);
  }
  /// The quantization of positions the Morton keys come from: 2^32 cells a
  /// side over the bounding square (x0, y0, side).
  struct Grid {
    double x0 = 0, y0 = 0, side = 1;
    std::uint32_t x_cell(double x) const { return cell(x, x0); }
    std::uint32_t y_cell(double y) const { return cell(y, y0); }
    std::uint32_t cell(double v, double lo) const {
      constexpr double kCells = 4294967296.0;
      const double c = std::floor((v - lo) / side * kCells);
      return static_cast<std::uint32_t>(std::clamp(c, 0.0, kCells - 1.0));
    }
  } grid;
};

/// One body's pull towards mass m at (cx, cy): adds to (ax, ay) and phi
/// (without G, which multiplies the sums once).
inline void pull(double xi, double yi, double cx, double cy, double m, double eps2, double& ax, double& ay,
                 double& phi) {
  const double dx = cx - xi, dy = cy - yi;
  const double r2 = dx * dx + dy * dy + eps2;
  if (!(r2 > 0.0)) return;  // coincident, unsoftened: no direction
  const double r = std::sqrt(r2);
  const double inv_r = 1.0 / r;
  const double inv_r3 = inv_r / r2;
  ax += m * dx * inv_r3;
  ay += m * dy * inv_r3;
  phi -= m * inv_r;
}

/// The method the world uses for n bodies (kAuto resolved).
GravityMethod resolve_method(const MutualGravity& g, std::size_t n);

/// Accelerations of every body (ax, ay resized), and the potential energy
/// 1/2 sum_i m_i phi_i when `potential` is not null.
void mutual_accelerations(const BodyStore& b, const MutualGravity& g, GravityScratch& scratch, std::vector<double>& ax,
                          std::vector<double>& ay, double* potential);

/// Below this many bodies `auto` sums directly (the tree does not pay).
/// Measured with carom-bench --scene nbody --threads 1, gravity time per
/// step, direct vs tree: 16 bodies 1.5 vs 1.4 us, 32: 5.7 vs 3.2, 128: 90 vs
/// 32, 1000: 5200 vs 490.
inline constexpr std::size_t kAutoTreeFrom = 32;

}  // namespace carom::detail
