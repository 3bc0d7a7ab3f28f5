// Mutual gravity: direct summation and a Barnes-Hut quadtree.
//
// Reads:  positions and masses.
// Writes: one acceleration per body, and the potential energy.
//
// Determinism: each body's acceleration is a sum in an order fixed by the
// positions alone (direct: every other body in storage order; tree: the
// nodes and leaf bodies its walk accepts, in depth-first order of a tree
// built from the Morton order of the positions, ties broken by storage
// index). Bodies are split over threads in fixed blocks, and the potential
// energy is summed per fixed block, then in block order. So the forces are
// the same bits for any thread count and any insertion order.
//
// The tree has no fixed root box: the root is the bounding square of the
// bodies, however spread (quantized to 2^32 cells a side; bodies closer than
// that share a leaf and are summed directly). A node is accepted as its mass
// at its centre of mass plus its quadrupole when the body is farther than size / theta + delta
// from it (delta: the centre of mass's distance from the cell's centre, which
// bounds the error for lopsided cells) and the body is not inside it.
//
// Precision: a group's far field (the expansions) and near field (bodies)
// are summed in float, with twice the SIMD lanes of double, where float
// loses nothing that matters (sum_single says when); positions, the tree's
// moments and the accelerations handed back are double.
//
// Coincident bodies without softening exert no force on each other (the
// pair's direction is undefined); with softening eps > 0 every pair is finite.

#include "gravity.hpp"

#include <oneapi/tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "parallel.hpp"

namespace carom::detail {
namespace {

constexpr int kBits = 32;                 // quantization per axis: 4e9 cells, so a world 1e6 times wider than its clusters still resolves them
constexpr std::uint32_t kLeafSize = 8;    // bodies a leaf holds before it splits
constexpr std::uint32_t kGroup = 128;     // bodies that walk the tree together (with the float kernels, 128 against 64: gravity time at 10^6 -37%, 10^5 -10%, 10^4 -5%; 256 no better)
constexpr std::size_t kBlock = 1024;      // bodies per parallel task
constexpr std::size_t kReleaseTreeAt = std::size_t{1} << 17;  // from this many bodies the tree is freed after each use

// A node's pull: the Taylor expansion of the Plummer potential about its
// centre of mass to second order,
//   phi = -G [M / s + (1/2) d^T Q d / s^5 - (1/2) eps^2 I / s^5],
//   a = G [M d / s^3 - Q d / s^5 + (5/2) (d^T Q d - eps^2 I) d / s^7],
// d = com - x, s^2 = |d|^2 + eps^2, Q = sum m (3 e e^T - |e|^2 1) and
// I = sum m |e|^2 over the node's bodies' offsets e from the centre of mass.
//
// The group kernels: one source (a node's expansion, or a body) pulling
// each of a group's `count` bodies, the bodies in the lanes (each lane the
// same IEEE operations, in the same order, as one body alone: no fused
// multiply-add, so any vector width gives the same bits). Compiled for AVX2
// too and picked at load time where the CPU has it.
constexpr std::uint32_t kNoSelf = ~std::uint32_t{0};
using Grid = GravityScratch::Grid;

// The kernels' bodies, for double and for float (one source, so both sum
// the same expression in the same order).
template <class T>
[[gnu::always_inline]] inline void node_kernel(const T* __restrict gx, const T* __restrict gy, std::uint32_t count,
                                               const T (&n)[7], T eps2, T* __restrict ox, T* __restrict oy,
                                               T* __restrict op) {
  const T cx = n[0], cy = n[1], mass = n[2], qxx = n[3], qxy = n[4], qyy = n[5], i2 = n[6];
  for (std::uint32_t b = 0; b < count; ++b) {
    const T dx = cx - gx[b], dy = cy - gy[b];
    const T r2 = dx * dx + dy * dy + eps2;
    const T inv_r = T(1) / std::sqrt(r2);
    const T inv_r2 = inv_r * inv_r;
    const T inv_r3 = inv_r * inv_r2;
    const T inv_r5 = inv_r3 * inv_r2;
    const T qdx = qxx * dx + qxy * dy, qdy = qxy * dx + qyy * dy;
    const T quad = dx * qdx + dy * qdy - eps2 * i2;
    const T radial = mass * inv_r3 + T(2.5) * quad * inv_r5 * inv_r2;
    ox[b] += radial * dx - qdx * inv_r5;
    oy[b] += radial * dy - qdy * inv_r5;
    op[b] -= mass * inv_r + T(0.5) * quad * inv_r5;
  }
}

// A coincident body without softening adds m = 0 (x + 0 is x). Lowers each
// lane's `closest` to the softened squared distance it met (lane by lane, so
// it vectorizes as the sums do).
template <class T>
[[gnu::always_inline]] inline void body_kernel(const T* __restrict gx, const T* __restrict gy, std::uint32_t b0,
                                               std::uint32_t b1, T qx, T qy, T qm, T eps2, T* __restrict ox,
                                               T* __restrict oy, T* __restrict op, T* __restrict closest) {
  for (std::uint32_t b = b0; b < b1; ++b) {
    const T dx = qx - gx[b], dy = qy - gy[b];
    const T r2 = dx * dx + dy * dy + eps2;
    const T rs = r2 > T(0) ? r2 : T(1);
    const T m = r2 > T(0) ? qm : T(0);
    const T inv_r = T(1) / std::sqrt(rs);
    const T inv_r3 = inv_r / rs;
    ox[b] += m * dx * inv_r3;
    oy[b] += m * dy * inv_r3;
    op[b] -= m * inv_r;
    closest[b] = r2 < closest[b] ? r2 : closest[b];
  }
}

[[gnu::target_clones("avx2", "default")]] void sum_node(const double* gx, const double* gy, std::uint32_t count,
                                                         const double (&n)[7], double eps2, double* ox, double* oy,
                                                         double* op) {
  node_kernel(gx, gy, count, n, eps2, ox, oy, op);
}
[[gnu::target_clones("avx2", "default")]] void sum_node(const float* gx, const float* gy, std::uint32_t count,
                                                         const float (&n)[7], float eps2, float* ox, float* oy,
                                                         float* op) {
  node_kernel(gx, gy, count, n, eps2, ox, oy, op);
}
[[gnu::target_clones("avx2", "default")]] void sum_body_range(const double* gx, const double* gy, std::uint32_t b0,
                                                               std::uint32_t b1, double qx, double qy, double qm,
                                                               double eps2, double* ox, double* oy, double* op,
                                                               double* closest) {
  body_kernel(gx, gy, b0, b1, qx, qy, qm, eps2, ox, oy, op, closest);
}
[[gnu::target_clones("avx2", "default")]] void sum_body_range(const float* gx, const float* gy, std::uint32_t b0,
                                                               std::uint32_t b1, float qx, float qy, float qm,
                                                               float eps2, float* ox, float* oy, float* op,
                                                               float* closest) {
  body_kernel(gx, gy, b0, b1, qx, qy, qm, eps2, ox, oy, op, closest);
}

// A body's pull on every body of a group but itself (lane `self`, or none).
template <class T>
void sum_body(const T* gx, const T* gy, std::uint32_t count, std::uint32_t self, T qx, T qy, T qm, T eps2, T* ox, T* oy,
              T* op, T* closest) {
  if (self >= count) {
    sum_body_range(gx, gy, 0, count, qx, qy, qm, eps2, ox, oy, op, closest);
    return;
  }
  sum_body_range(gx, gy, 0, self, qx, qy, qm, eps2, ox, oy, op, closest);
  sum_body_range(gx, gy, self + 1, count, qx, qy, qm, eps2, ox, oy, op, closest);
}

inline std::uint64_t spread_bits(std::uint32_t v) {
  std::uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  x = (x | (x << 1)) & 0x5555555555555555ull;
  return x;
}

struct Keyed {
  std::uint64_t key;
  std::uint32_t index;
  friend bool operator<(const Keyed& a, const Keyed& b) {
    return a.key != b.key ? a.key < b.key : a.index < b.index;
  }
};

// Sums the potential energy 1/2 G sum m_i phi_i per fixed block, in order.
double potential_of(const BodyStore& b, const std::vector<double>& phi, double g) {
  const std::size_t n = b.size();
  std::vector<double> part(block_count(n, kBlock), 0.0);
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    double s = 0.0;
    for (std::size_t i = i0; i < i1; ++i) s += b.m[i] * phi[i];
    part[blk] = s;
  });
  double total = 0.0;
  for (const double s : part) total += s;
  return 0.5 * g * total;
}

void direct(const BodyStore& b, const MutualGravity& g, std::vector<double>& ax, std::vector<double>& ay,
            std::vector<double>& phi) {
  const std::size_t n = b.size();
  const double eps2 = g.softening * g.softening;
  const double* const x = b.x.data();
  const double* const y = b.y.data();
  const double* const m = b.m.data();
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      double sx = 0.0, sy = 0.0, sp = 0.0;
      const double xi = x[i], yi = y[i];
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        pull(xi, yi, x[j], y[j], m[j], eps2, sx, sy, sp);
      }
      ax[i] = g.g * sx;
      ay[i] = g.g * sy;
      phi[i] = sp;
    }
  });
}

// A node's square cell: lower corner and side.
struct Cell {
  double x0 = 0, y0 = 0, size = 0;
};

// The quadrant runs of Morton positions [first, first + count) at `depth`
// (the bodies are sorted by key, so each quadrant is a run): edge[q] ..
// edge[q + 1]. The keys are not kept (8 bytes a body at a million bodies):
// the two bits a level needs are quantized again from the positions, by the
// very expression the sort's keys came from.
std::array<std::uint32_t, 5> quadrants(const GravityScratch& t, std::uint32_t first, std::uint32_t count, int depth) {
  const int shift = kBits - 1 - depth;
  const Grid grid = t.grid;
  auto quadrant = [&](std::uint32_t p) {
    return ((grid.x_cell(t.sx[p]) >> shift) & 1u) | (((grid.y_cell(t.sy[p]) >> shift) & 1u) << 1);
  };
  std::array<std::uint32_t, 5> edge{};
  edge[0] = first;
  // A binary search over positions (std::ranges::partition_point over an
  // iota view would say it, but the fuzz build's clang 14 cannot compile
  // libstdc++ 12's ranges).
  for (std::uint32_t q = 1; q < 4; ++q) {
    std::uint32_t lo = edge[q - 1], hi = first + count;
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (quadrant(mid) < q) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    edge[q] = lo;
  }
  edge[4] = first + count;
  return edge;
}

inline bool is_leaf(std::uint32_t count, int depth) { return count <= kLeafSize || depth == kBits; }

inline Cell child_cell(const Cell& c, int q) {
  const double half = 0.5 * c.size;
  return {c.x0 + ((q & 1) ? half : 0.0), c.y0 + ((q & 2) ? half : 0.0), half};
}

// Appends the children of nodes[at] (its quadrant runs, in order).
void add_children(std::vector<GravityScratch::Node>& nodes, std::uint32_t at, const std::array<std::uint32_t, 5>& edge) {
  std::uint32_t children = 0;
  for (int q = 0; q < 4; ++q) children += edge[q + 1] > edge[q] ? 1u : 0u;
  const auto child = static_cast<std::uint32_t>(nodes.size());
  nodes.resize(nodes.size() + children);
  nodes[at].child = child;
  nodes[at].children = children;
}

// Mass, centre of mass, quadrupole and opening distance of nodes[at], from
// its bodies (a leaf) or its finished children, in order.
void finish(GravityScratch::Node* nodes, const GravityScratch& t, std::uint32_t at, const Cell& cell, double theta) {
  GravityScratch::Node& node = nodes[at];
  const std::uint32_t first = node.first, count = node.count;
  double mass = 0.0, mx = 0.0, my = 0.0;
  if (node.children == 0) {
    for (std::uint32_t p = first; p < first + count; ++p) {
      mass += t.sm[p];
      mx += t.sm[p] * t.sx[p];
      my += t.sm[p] * t.sy[p];
    }
  } else {
    for (std::uint32_t c = node.child; c < node.child + node.children; ++c) {
      mass += nodes[c].mass;
      mx += nodes[c].mass * nodes[c].cx;
      my += nodes[c].mass * nodes[c].cy;
    }
  }
  node.mass = mass;
  node.cx = mass > 0.0 ? mx / mass : cell.x0 + 0.5 * cell.size;
  node.cy = mass > 0.0 ? my / mass : cell.y0 + 0.5 * cell.size;
  // Quadrupole about the centre of mass: the bodies' (leaf) or the children's
  // own plus their masses' offsets (parallel axes).
  double qxx = 0.0, qxy = 0.0, qyy = 0.0, i2 = 0.0;
  const auto add = [&](double m, double dx, double dy) {
    qxx += m * (2.0 * dx * dx - dy * dy);
    qyy += m * (2.0 * dy * dy - dx * dx);
    qxy += m * 3.0 * dx * dy;
    i2 += m * (dx * dx + dy * dy);
  };
  if (node.children == 0) {
    for (std::uint32_t p = first; p < first + count; ++p) add(t.sm[p], t.sx[p] - node.cx, t.sy[p] - node.cy);
  } else {
    for (std::uint32_t c = node.child; c < node.child + node.children; ++c) {
      const GravityScratch::Node& ch = nodes[c];
      qxx += ch.qxx;
      qxy += ch.qxy;
      qyy += ch.qyy;
      i2 += ch.i2;
      add(ch.mass, ch.cx - node.cx, ch.cy - node.cy);
    }
  }
  node.qxx = qxx;
  node.qxy = qxy;
  node.qyy = qyy;
  node.i2 = i2;
  const double delta = std::hypot(node.cx - (cell.x0 + 0.5 * cell.size), node.cy - (cell.y0 + 0.5 * cell.size));
  const double open = cell.size / theta + delta;
  node.open2 = open * open;
}

// Where build() puts nodes: a growing list (children appended at its end),
// or a list already sized (children taken from `next` on).
struct GrowingNodes {
  std::vector<GravityScratch::Node>& list;
  GravityScratch::Node* data() { return list.data(); }
  void add_children(std::uint32_t at, const std::array<std::uint32_t, 5>& edge) { detail::add_children(list, at, edge); }
};
struct SizedNodes {
  GravityScratch::Node* base;
  std::uint32_t next;
  GravityScratch::Node* data() { return base; }
  void add_children(std::uint32_t at, const std::array<std::uint32_t, 5>& edge) {
    std::uint32_t children = 0;
    for (int q = 0; q < 4; ++q) children += edge[q + 1] > edge[q] ? 1u : 0u;
    base[at].child = next;
    base[at].children = children;
    next += children;
  }
};

// Builds the subtree over Morton positions [first, first + count) of `cell`
// at `depth` into nodes[at]; its children are allocated before its
// grandchildren (each node's children consecutive, in quadrant order).
template <class Nodes>
void build(Nodes& nodes, const GravityScratch& t, std::uint32_t at, std::uint32_t first, std::uint32_t count, int depth,
           const Cell& cell, double theta) {
  nodes.data()[at].first = first;
  nodes.data()[at].count = count;
  if (!is_leaf(count, depth)) {
    const auto edge = quadrants(t, first, count, depth);
    nodes.add_children(at, edge);
    std::uint32_t c = nodes.data()[at].child;
    for (int q = 0; q < 4; ++q) {
      if (edge[q + 1] == edge[q]) continue;
      build(nodes, t, c++, edge[q], edge[q + 1] - edge[q], depth + 1, child_cell(cell, q), theta);
    }
  }
  finish(nodes.data(), t, at, cell, theta);
}

// The nodes build() makes for a subtree: the shape alone, no moments.
std::uint32_t count_nodes(const GravityScratch& t, std::uint32_t first, std::uint32_t count, int depth) {
  if (is_leaf(count, depth)) return 1;
  const auto edge = quadrants(t, first, count, depth);
  std::uint32_t total = 1;
  for (int q = 0; q < 4; ++q)
    if (edge[q + 1] > edge[q]) total += count_nodes(t, edge[q], edge[q + 1] - edge[q], depth + 1);
  return total;
}

// A large tree is built in parallel: the top, down to nodes of at most
// `limit` bodies, on this thread; those nodes' subtrees as tasks, each
// counted first, then built in place, one after another below the top, in
// order; then the top's moments, children first. The nodes keep the order a
// sequential build gives each node's children (consecutive, in quadrant
// order), so the walks, and the forces, are the same bits; and the list is
// never held twice (memory at a million bodies).
struct Subtree {
  std::uint32_t at, first, count;
  int depth;
  Cell cell;
  std::uint32_t size = 0;  // nodes, its root included
};

void build_top(GravityScratch& t, std::uint32_t at, std::uint32_t first, std::uint32_t count, int depth,
               const Cell& cell, std::uint32_t limit, std::vector<Cell>& cells, std::vector<Subtree>& tasks) {
  auto& nodes = t.nodes;
  nodes[at].first = first;
  nodes[at].count = count;
  if (cells.size() <= at) cells.resize(at + 1);
  cells[at] = cell;
  if (count <= limit || is_leaf(count, depth)) {
    tasks.push_back({at, first, count, depth, cell});
    return;
  }
  const auto edge = quadrants(t, first, count, depth);
  add_children(nodes, at, edge);
  std::uint32_t c = nodes[at].child;
  for (int q = 0; q < 4; ++q) {
    if (edge[q + 1] == edge[q]) continue;
    build_top(t, c++, edge[q], edge[q + 1] - edge[q], depth + 1, child_cell(cell, q), limit, cells, tasks);
  }
}

void build_tree(GravityScratch& t, std::uint32_t n, const Cell& root, double theta) {
  constexpr std::uint32_t kTaskBodies = 4096;
  t.nodes.clear();
  t.nodes.emplace_back();
  if (n < 4 * kTaskBodies) {
    t.nodes.reserve(n / 2 + 16);
    GrowingNodes nodes{t.nodes};
    build(nodes, t, 0, 0, n, 0, root, theta);
    return;
  }
  std::vector<Cell> cells;
  std::vector<Subtree> tasks;
  build_top(t, 0, 0, n, 0, root, std::max(kTaskBodies, n / 64), cells, tasks);
  const auto top = static_cast<std::uint32_t>(t.nodes.size());
  for_blocks(tasks.size(), 1, [&](std::size_t k, std::size_t, std::size_t) {
    tasks[k].size = count_nodes(t, tasks[k].first, tasks[k].count, tasks[k].depth);
  });
  // Subtree k's nodes but its root (which is in the top) go after the top
  // and subtrees 0 .. k - 1.
  std::vector<std::uint32_t> base(tasks.size() + 1, top);
  for (std::size_t k = 0; k < tasks.size(); ++k) base[k + 1] = base[k] + tasks[k].size - 1;
  t.nodes.resize(base[tasks.size()]);
  for_blocks(tasks.size(), 1, [&](std::size_t k, std::size_t, std::size_t) {
    const Subtree& s = tasks[k];
    SizedNodes nodes{t.nodes.data(), base[k]};
    build(nodes, t, s.at, s.first, s.count, s.depth, s.cell, theta);
  });
  // The top's moments, children (higher indices) before parents.
  for (std::uint32_t at = top; at-- > 0;)
    if (t.nodes[at].children > 0 && t.nodes[at].child < top) finish(t.nodes.data(), t, at, cells[at], theta);
}

// A node's expansion as the kernels take it.
inline void expansion_into(const GravityScratch::Node& n, double (&out)[7]) {
  out[0] = n.cx;
  out[1] = n.cy;
  out[2] = n.mass;
  out[3] = n.qxx;
  out[4] = n.qxy;
  out[5] = n.qyy;
  out[6] = n.i2;
}
struct Expansion {
  double v[7];
};
inline Expansion expansion(const GravityScratch::Node& n) {
  Expansion e;
  expansion_into(n, e.v);
  return e;
}
inline void sum_node(const double* gx, const double* gy, std::uint32_t count, const Expansion& e, double eps2, double* ox,
                     double* oy, double* op) {
  sum_node(gx, gy, count, e.v, eps2, ox, oy, op);
}

struct SingleScratch {
  std::vector<float> gx, gy, sx, sy, sp, closest;
};
struct Box {
  double xmin, ymin, xmax, ymax;
};

// A group's sums in single precision: twice the SIMD lanes, and float's
// seven digits are far below the tree's 1e-3. Lengths are in units of the
// root's side and masses of the total mass, about the centre of the group's
// box, so every value is a small number whatever the world's units. Returns
// false, having added nothing, where float could lose what matters: a far
// node closer than 1e-6 of the root's side, softening beyond 1e6 of it, or a
// near pair closer (softened) than 2e-3 of the near field's extent (float's
// rounding of the offsets would then reach 1e-4 of the pair's pull, which is
// at most its mass over that distance squared); the caller sums
// that group in double. Which groups do is a function of the positions, so
// the result is still the same for any thread count.
bool sum_single(const GravityScratch& t, const std::vector<std::uint32_t>& far, const std::vector<std::uint32_t>& near,
                std::uint32_t first, std::uint32_t count, const Box& box, double eps2, SingleScratch& f,
                std::vector<double>& sx, std::vector<double>& sy, std::vector<double>& sp) {
  const double inv_s = 1.0 / t.grid.side, inv_s2 = inv_s * inv_s;
  const double mass = t.nodes[0].mass, inv_m = 1.0 / mass;
  const double eps2_s = eps2 * inv_s2;
  if (eps2_s > 1e12) return false;
  const double ox = 0.5 * (box.xmin + box.xmax), oy = 0.5 * (box.ymin + box.ymax);
  const std::uint32_t last = first + count;
  f.gx.resize(count);
  f.gy.resize(count);
  double extent = 0.0;
  for (std::uint32_t b = 0; b < count; ++b) {
    const double dx = (t.sx[first + b] - ox) * inv_s, dy = (t.sy[first + b] - oy) * inv_s;
    f.gx[b] = static_cast<float>(dx);
    f.gy[b] = static_cast<float>(dy);
    extent = std::max({extent, std::abs(dx), std::abs(dy)});
  }
  f.sx.assign(count, 0.0f);
  f.sy.assign(count, 0.0f);
  f.sp.assign(count, 0.0f);
  const auto feps2 = static_cast<float>(eps2_s);
  for (const std::uint32_t k : far) {
    const GravityScratch::Node& n = t.nodes[k];
    const double dx = std::max({box.xmin - n.cx, 0.0, n.cx - box.xmax});
    const double dy = std::max({box.ymin - n.cy, 0.0, n.cy - box.ymax});
    if ((dx * dx + dy * dy) * inv_s2 + eps2_s < 1e-12) return false;
    const double q = inv_m * inv_s2;
    const float e[7] = {static_cast<float>((n.cx - ox) * inv_s), static_cast<float>((n.cy - oy) * inv_s),
                        static_cast<float>(n.mass * inv_m),      static_cast<float>(n.qxx * q),
                        static_cast<float>(n.qxy * q),           static_cast<float>(n.qyy * q),
                        static_cast<float>(n.i2 * q)};
    sum_node(f.gx.data(), f.gy.data(), count, e, feps2, f.sx.data(), f.sy.data(), f.sp.data());
  }
  f.closest.assign(count, std::numeric_limits<float>::infinity());
  for (const std::uint32_t q : near) {
    const double dx = (t.sx[q] - ox) * inv_s, dy = (t.sy[q] - oy) * inv_s;
    extent = std::max({extent, std::abs(dx), std::abs(dy)});
    const std::uint32_t self = q >= first && q < last ? q - first : kNoSelf;
    sum_body(f.gx.data(), f.gy.data(), count, self, static_cast<float>(dx), static_cast<float>(dy),
             static_cast<float>(t.sm[q] * inv_m), feps2, f.sx.data(), f.sy.data(), f.sp.data(), f.closest.data());
  }
  const double near_floor = std::max(4e-6 * extent * extent, 1e-12);
  for (const float d2 : f.closest)
    if (!(static_cast<double>(d2) >= near_floor)) return false;
  const double acc = mass * inv_s2, pot = mass * inv_s;
  for (std::uint32_t b = 0; b < count; ++b) {
    sx[b] = acc * static_cast<double>(f.sx[b]);
    sy[b] = acc * static_cast<double>(f.sy[b]);
    sp[b] = pot * static_cast<double>(f.sp[b]);
  }
  return true;
}

// Tree gravity; the potential energy, when wanted, as 1/2 G times the sum of
// the groups' sums of m phi, in group order (no array of phi: 8 bytes a body).
void tree(const BodyStore& b, const MutualGravity& g, GravityScratch& t, std::vector<double>& ax,
          std::vector<double>& ay, double* potential) {
  const std::size_t n = b.size();
  // The bounding square (exact minima and maxima: order does not matter).
  double xmin = b.x[0], xmax = b.x[0], ymin = b.y[0], ymax = b.y[0];
  for (std::size_t i = 1; i < n; ++i) {
    xmin = std::min(xmin, b.x[i]);
    xmax = std::max(xmax, b.x[i]);
    ymin = std::min(ymin, b.y[i]);
    ymax = std::max(ymax, b.y[i]);
  }
  double side = std::max(xmax - xmin, ymax - ymin);
  if (!(side > 0.0)) side = 1.0;
  // Slightly larger, so the largest coordinate quantizes inside.
  side *= 1.0 + 1e-9;
  t.grid = Grid{xmin, ymin, side};
  const Grid grid = t.grid;
  std::vector<Keyed> keyed(n);
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i)
      keyed[i] = {spread_bits(grid.x_cell(b.x[i])) | (spread_bits(grid.y_cell(b.y[i])) << 1),
                  static_cast<std::uint32_t>(i)};
  });
  tbb::parallel_sort(keyed.begin(), keyed.end());  // a total order: the same for any split
  // The order first, and the keys (16 bytes a body) given back before the
  // sorted copies are made: memory peaks here at a million bodies.
  t.order.resize(n);
  for_blocks(n, kBlock, [&](std::size_t p0, std::size_t p1, std::size_t) {
    for (std::size_t p = p0; p < p1; ++p) t.order[p] = keyed[p].index;
  });
  std::vector<Keyed>().swap(keyed);
  t.sx.resize(n);
  t.sy.resize(n);
  t.sm.resize(n);
  for_blocks(n, kBlock, [&](std::size_t p0, std::size_t p1, std::size_t) {
    for (std::size_t p = p0; p < p1; ++p) {
      const std::uint32_t i = t.order[p];
      t.sx[p] = b.x[i];
      t.sy[p] = b.y[i];
      t.sm[p] = static_cast<float>(b.m[i]);
    }
  });
  build_tree(t, static_cast<std::uint32_t>(n), Cell{xmin, ymin, side}, g.theta);
  // Single precision needs every mass within 1e-20 of the total (in units of
  // the total mass they then stay far from float's smallest numbers).
  double lightest = t.sm[0];
  for (std::size_t p = 1; p < n; ++p) lightest = std::min<double>(lightest, t.sm[p]);
  const bool single = t.nodes[0].mass > 0.0 && lightest >= 1e-20 * t.nodes[0].mass;

  // The walk, group by group: the nodes of at most kGroup bodies (in Morton
  // order, so each is a compact patch of space) walk the tree once for all
  // their bodies. A node farther from the group's bounding box than its
  // opening distance goes on the group's expansion list, a leaf that is not
  // goes on its body list, the group's own bodies too; then every body of the
  // group sums the expansions, then the bodies, in list order. The lists are
  // a function of the group alone, so each body's sum is a fixed sequence.
  // The sums run across the group's bodies in the inner loop (independent
  // accumulators, no reassociation): the compiler may use SIMD lanes, with
  // the same IEEE results.
  const double eps2 = g.softening * g.softening;
  const GravityScratch::Node* const nodes = t.nodes.data();
  auto& groups = t.groups;
  groups.clear();
  {
    std::vector<std::uint32_t> stack{0};
    while (!stack.empty()) {
      const std::uint32_t k = stack.back();
      stack.pop_back();
      const GravityScratch::Node& node = nodes[k];
      if (node.count <= kGroup || node.children == 0) {
        groups.push_back(k);
        continue;
      }
      for (std::uint32_t c = node.children; c-- > 0;) stack.push_back(node.child + c);
    }
  }
  t.group_potential.assign(groups.size(), 0.0);
  for_blocks(groups.size(), 8, [&](std::size_t g0, std::size_t g1, std::size_t) {
    std::array<std::uint32_t, 4 * (kBits + 2)> stack;
    std::vector<std::uint32_t> far, near;  // expansion nodes, bodies (Morton positions)
    std::vector<double> gx, gy, sx, sy, sp;
    SingleScratch single_scratch;
    std::vector<double> closest;  // the double sums' lane minima (unused)
    for (std::size_t gi = g0; gi < g1; ++gi) {
      const GravityScratch::Node& grp = nodes[groups[gi]];
      const std::uint32_t first = grp.first, count = grp.count, last = first + count;
      double xmin = t.sx[first], xmax = xmin, ymin = t.sy[first], ymax = ymin;
      for (std::uint32_t p = first + 1; p < last; ++p) {
        xmin = std::min(xmin, t.sx[p]);
        xmax = std::max(xmax, t.sx[p]);
        ymin = std::min(ymin, t.sy[p]);
        ymax = std::max(ymax, t.sy[p]);
      }
      far.clear();
      near.clear();
      std::size_t top = 0;
      stack[top++] = 0;
      while (top > 0) {
        const std::uint32_t k = stack[--top];
        const GravityScratch::Node& node = nodes[k];
        const bool holds_group = node.first <= first && last <= node.first + node.count;
        if (!holds_group) {
          const double dx = std::max({xmin - node.cx, 0.0, node.cx - xmax});
          const double dy = std::max({ymin - node.cy, 0.0, node.cy - ymax});
          if (dx * dx + dy * dy > node.open2) {
            far.push_back(k);
            continue;
          }
        }
        if (node.children == 0 || k == groups[gi]) {
          for (std::uint32_t q = node.first; q < node.first + node.count; ++q) near.push_back(q);
          continue;
        }
        for (std::uint32_t c = node.children; c-- > 0;) stack[top++] = node.child + c;
      }
      // sum_single writes every lane when it succeeds; the double sums that
      // stand in for it start from zero.
      sx.resize(count);
      sy.resize(count);
      sp.resize(count);
      if (!single || !sum_single(t, far, near, first, count, {xmin, ymin, xmax, ymax}, eps2, single_scratch, sx, sy, sp)) {
        gx.assign(t.sx.begin() + first, t.sx.begin() + last);
        gy.assign(t.sy.begin() + first, t.sy.begin() + last);
        sx.assign(count, 0.0);
        sy.assign(count, 0.0);
        sp.assign(count, 0.0);
        closest.assign(count, 0.0);
        for (const std::uint32_t k : far) sum_node(gx.data(), gy.data(), count, expansion(nodes[k]), eps2, sx.data(), sy.data(), sp.data());
        for (const std::uint32_t q : near) {
          const std::uint32_t self = q >= first && q < last ? q - first : kNoSelf;
          sum_body(gx.data(), gy.data(), count, self, t.sx[q], t.sy[q], double{t.sm[q]}, eps2, sx.data(), sy.data(), sp.data(),
                   closest.data());
        }
      }
      double mphi = 0.0;
      for (std::uint32_t b = 0; b < count; ++b) {
        const std::uint32_t i = t.order[first + b];
        ax[i] = g.g * sx[b];
        ay[i] = g.g * sy[b];
        mphi += t.sm[first + b] * sp[b];
      }
      t.group_potential[gi] = mphi;
    }
  });
  if (potential) {
    double total = 0.0;
    for (const double v : t.group_potential) total += v;
    *potential = 0.5 * g.g * total;
  }
  // A large world gives the tree back (about 45 bytes a body at a million)
  // rather than hold it through the collisions of the next step's drift,
  // where memory would otherwise peak with both; a small one keeps it (no
  // allocation per step).
  if (n >= kReleaseTreeAt) t.release();
}

}  // namespace

GravityMethod resolve_method(const MutualGravity& g, std::size_t n) {
  if (g.method != GravityMethod::kAuto) return g.method;
  return n < kAutoTreeFrom ? GravityMethod::kDirect : GravityMethod::kTree;
}

void mutual_accelerations(const BodyStore& b, const MutualGravity& g, GravityScratch& scratch, std::vector<double>& ax,
                          std::vector<double>& ay, double* potential) {
  const std::size_t n = b.size();
  ax.assign(n, 0.0);
  ay.assign(n, 0.0);
  if (potential) *potential = 0.0;
  if (n < 2) return;
  if (resolve_method(g, n) == GravityMethod::kDirect) {
    std::vector<double> phi(n, 0.0);
    direct(b, g, ax, ay, phi);
    if (potential) *potential = potential_of(b, phi, g.g);
  } else {
    tree(b, g, scratch, ax, ay, potential);
  }
}

}  // namespace carom::detail
