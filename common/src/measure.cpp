// Events and stats: measure_energy, hash_state; measure_overlap for tools.
//
// Reads: every body. Sums are taken per fixed block of the id-ordered storage
// and combined in block order, so they are bit-identical for any thread count
// and any insertion order; the hash walks bodies in id order.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "carom/measure.hpp"
#include "carom/world.hpp"
#include "broad_phase.hpp"
#include "gravity.hpp"
#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {
constexpr std::size_t kBlock = 8192;

struct Partial {
  double ke = 0, px = 0, py = 0;
  bool outside = false;
};

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}
}  // namespace

bool measure_energy(const BodyStore& b, StepStats& stats) {
  const std::size_t n = b.size();
  std::vector<Partial> part(block_count(n, kBlock));
  for_blocks(n, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    Partial s;
    bool inside = true;
    for (std::size_t i = i0; i < i1; ++i) {
      const double m = b.m[i], vx = b.vx[i], vy = b.vy[i];
      s.ke += 0.5 * m * (vx * vx + vy * vy);
      s.px += m * vx;
      s.py += m * vy;
      inside &= within_limits(b.x[i], b.y[i], vx, vy);
    }
    s.outside = !inside;
    part[blk] = s;
  });
  Partial t;
  for (const Partial& s : part) {
    t.ke += s.ke;
    t.px += s.px;
    t.py += s.py;
    t.outside = t.outside || s.outside;
  }
  stats.bodies = static_cast<std::uint32_t>(n);
  stats.kinetic_energy = t.ke;
  stats.momentum = {t.px, t.py};
  return t.outside;
}

std::uint64_t hash_state(const BodyStore& b) {
  return carom::state_hash(BodiesView{b.id, b.x, b.y, b.vx, b.vy, b.r, b.m});
}

}  // namespace carom::detail

namespace carom {

std::uint64_t state_hash(const BodiesView& b) {
  std::uint64_t h = 0xC0FFEE0123456789ull ^ b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    h = detail::mix(h, b.id[i]);
    for (double v : {b.x[i], b.y[i], b.vx[i], b.vy[i], b.radius[i], b.mass[i]})
      h = detail::mix(h, std::bit_cast<std::uint64_t>(v));
  }
  return h;
}

OverlapStats measure_overlap(const BodiesView& b) {
  OverlapStats out;
  detail::BroadPhase scratch;
  detail::PairBlocks pairs;
  detail::find_pairs(b.x, b.y, b.radius, 0.0, scratch, pairs);
  double sum = 0.0;
  for (const auto& block : pairs.blocks) {
    for (const detail::Pair p : block) {
      const double d = std::hypot(b.x[p.b] - b.x[p.a], b.y[p.b] - b.y[p.a]);
      const double overlap = b.radius[p.a] + b.radius[p.b] - d;
      if (!(overlap > 0.0)) continue;
      const double rel = overlap / std::min(b.radius[p.a], b.radius[p.b]);
      out.max = std::max(out.max, rel);
      sum += rel;
      ++out.pairs;
    }
  }
  out.mean = out.pairs > 0 ? sum / static_cast<double>(out.pairs) : 0.0;
  return out;
}

std::vector<Vec2> mutual_accelerations(const BodiesView& b, const MutualGravity& gravity) {
  detail::BodyStore s;
  s.id.assign(b.id.begin(), b.id.end());
  s.x.assign(b.x.begin(), b.x.end());
  s.y.assign(b.y.begin(), b.y.end());
  s.vx.assign(b.vx.begin(), b.vx.end());
  s.vy.assign(b.vy.begin(), b.vy.end());
  s.r.assign(b.radius.begin(), b.radius.end());
  s.m.assign(b.mass.begin(), b.mass.end());
  detail::GravityScratch scratch;
  std::vector<double> ax, ay;
  detail::mutual_accelerations(s, gravity, scratch, ax, ay, nullptr);
  std::vector<Vec2> out(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) out[i] = {ax[i], ay[i]};
  return out;
}

Vec2 mutual_acceleration_direct(const BodiesView& b, const MutualGravity& gravity, std::size_t index) {
  const double eps2 = gravity.softening * gravity.softening;
  double ax = 0.0, ay = 0.0, phi = 0.0;
  for (std::size_t j = 0; j < b.size(); ++j)
    if (j != index) detail::pull(b.x[index], b.y[index], b.x[j], b.y[j], b.mass[j], eps2, ax, ay, phi);
  return {gravity.g * ax, gravity.g * ay};
}

}  // namespace carom
