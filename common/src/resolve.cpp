// Contact resolution: colour_pairs, solve_contacts and relax_contacts
// (discrete), push_contacts and restitute_contacts (Verlet), record_events,
// and the warm values' trip across a rebuild of the pair list.
//
// Reads:  the contacts and wall contacts of the narrow phase, in colour order.
// Writes: velocities (discrete, and Verlet's restitution pass) and positions
//         (Verlet's push) of the two bodies of each contact; each contact's
//         accumulated values.
//
// Order (the deterministic ordering rule): walls first (each wall contact
// touches one body; a body's wall contacts sit in one block, in wall order),
// then the contacts colour by colour. Contacts of one colour share no body, so
// they run in parallel in any split with the same bits; colours come from the
// candidate list (colour_pairs: greedy, in candidate order) or, where it was
// left uncoloured (a gas), from the substep's contacts by the same rule
// (collide), a function of the ids and of the anchors the list was built
// from (which a saved world carries, with which way it was coloured). So the result is the same whatever the thread count and the
// insertion order, and a restored world continues bit for bit.
//
// Discrete: Box2D v3's soft step, with impacts kept as whole two-body
// collisions. Changing the relative normal velocity u = u_b - u_a by du moves
// u_a by -share_a du and u_b by +share_b du (share_a = m_b / (m_a + m_b)), so
// momentum is unchanged and equal masses share by exactly 1/2. Per substep:
//  1. Impacts. A contact approaching faster than the resting speed that meets
//     within the substep (gap + u h <= 0) collides as an isolated pair would:
//     u becomes -e u. Passes repeat until none fires (after the first, only
//     contacts of bodies an impact changed are looked at). Each impact is a
//     whole two-body collision, so with e = 1 each conserves kinetic energy,
//     and so does any cluster of them (a blow passes down a row as in Newton's
//     cradle). Relaxing a cluster as one inelastic block and bouncing after
//     (Box2D's way) cools an elastic gas by a third in half a minute. A pair
//     still apart meets after t = gap / -u: its first impact also moves the
//     bodies by (old - new velocity) t, so the substep ends where a bounce at
//     the moment of contact puts them (nothing is reflected early).
//  2. Warm start: every contact starts from what it carried last substep
//     (what lets a pile carry its weight with few passes).
//  3. Soft passes with bias: a separated (speculative) contact may close its
//     gap within the substep and no more; an overlapping one is a stiff,
//     heavily damped spring (Box2D's soft contact) pushing apart at most
//     max_push. The accumulated change stays >= 0.
//  4. (integrate_positions moves the bodies.)
//  5. Relax passes (two more than the soft passes) without the bias: what
//     the contact carries is taken back
//     as far as it is not needed to stop an approach, so overlap is removed
//     through positions without adding kinetic energy. A contact that carries
//     nothing is left alone here: after the move, a pair that meets now is
//     the next substep's impact, and relaxing it would make it inelastic
//     (Box2D's relax does, and cools an elastic gas).
//  6. What each contact carries warm-starts the next substep.
// The velocity passes (warm start, soft, relax) run four contacts of a colour
// at a time in AVX2 lanes where the processor has them (run_avx2), and so
// does the impact passes' test (may_fire): the same operations in the same
// order as one contact at a time, so the same bits (a test compares the two
// after every step). Where contacts are many, the passes work on a copy of
// the velocities with a body's two components side by side
// (with_velocities); where they are shared among threads, the copy is in the
// broad phase's order and each thread takes the same share of every colour
// (run_passes), so the threads do not write each other's cache lines.
// Verlet: position passes push overlapping pairs fully apart along their
// normal at the start of the substep (never through each other), a wall
// holding what it clamps; velocities follow from the motion, and then
// velocity passes give each pushed pair the normal velocity restitution
// gives it (-e times its approach before the push, 0 below the resting
// speed), so the push-apart does not turn into energy.

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <numbers>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

constexpr std::uint32_t kOverflow = kColours - 1;  // pairs that found every other colour taken
constexpr std::size_t kPairBlock = 4096;          // candidates per block of the coloured list
constexpr std::size_t kGrain = 512;               // contacts per parallel task, at least
// The same for the passes in AVX2 lanes (for_colour_runs), which take a
// contact in about half the time: twice 512 was 1.02-1.04x on the 10k pile
// and the default world, four times 0.98x on the pile.
constexpr std::size_t kLaneGrain = 1024;
// From this many contacts the impact cascade's index is made on another
// thread beside the first impact pass (solve_with); below, a task costs
// about what the index does.
constexpr std::size_t kIndexBesideFrom = 256;
// A colour of this many contacts or more is shared among the threads in
// the velocity passes (run_passes; where contacts are kSharedPassesFrom or
// more), even below kLaneGrain a thread.
constexpr std::size_t kSplitFrom = 256;
// Verlet: more passes than asked for while a pair overlaps by more than this
// share of its smaller radius, up to this many passes in all.
constexpr double kDeepOverlap = 0.5;
// A pair that carries nothing and leaves fast enough to undo this share of
// its overlap within a substep is not pushed (soft_accum): half what the push
// of the stiffness of two passes once was (0.4 of the substep rate).
constexpr double kLeaving = 0.055;
constexpr int kDeepPasses = 32;
// Deep contacts (deeper than kStiffFrom of r_a + r_b, stages.hpp) get a
// spring up to kStiffMax times omega, pushing at most kStiffPush of max_push
// (deep_softness), while at most 1 contact in kStiffAtMost is deep, or at most
// kStiffFew are (a few are never a jam; see solve_contacts).
constexpr double kStiffMax = 2.0;
constexpr double kStiffPush = 0.6;
constexpr std::size_t kStiffAtMost = 20;
constexpr std::size_t kStiffFew = 64;
// Where the velocity passes are shared (slotted), the impact passes after
// the first are shared among the threads too (ImpactPass::shared) when the
// first pass fired at least this many contacts: the 100k pile 1.16x over
// 500 steps (its landing, contacts under a quarter of the bodies: the sweeps
// forked for every colour of every pass), the 1M gas 1.02x. From 4 096 down
// to 1 024: the 100k pile 1.05x more (300 steps, 4 rounds, each better),
// because a landing's cascade runs to its 16 passes with about 5 000 impacts
// in each whatever its first pass fired (three cascades in four started
// under 4 096 and ran on one thread). Below, the colours' stages are too
// short for two threads to gain on one (they wait for each other at every
// colour): the 10k pile, its landing 4 000 impacts a substep, 0.98x shared
// at any, 1.00x with this. Tests change it (set_shared_impacts_from).
std::atomic<std::size_t> shared_impacts_from{1024};
std::atomic<std::uint64_t> shared_impact_runs{0};
// Bodies per parallel block when the velocities are copied (with_velocities).
constexpr std::size_t kCopyBlock = std::size_t{1} << 16;

// How each colour is cut into chunks where the passes are shared among the
// arena's threads: the velocity passes (run_passes) and the shared impact
// passes (ImpactPass::shared) cut alike, so a thread's chunk of a colour
// touches the same stretch of the velocity copy in both. One chunk for a
// small colour and the overflow colour, else at least one a thread.
struct ColourChunks {
  const Contacts& cs;
  std::size_t threads = static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  std::size_t count(std::uint32_t c) const {
    const std::size_t size = cs.colour_begin[c + 1] - cs.colour_begin[c];
    if (size == 0) return 0;  // colours between the last and the overflow colour (repairs)
    if (c == kOverflow || size < kSplitFrom) return 1;
    return std::max(size / kLaneGrain, std::min(threads, size / (kSplitFrom / 2)));
  }
  // Chunk j's contacts [first, second).
  std::pair<std::size_t, std::size_t> range(std::uint32_t c, std::size_t j) const {
    const std::size_t c0 = cs.colour_begin[c], size = cs.colour_begin[c + 1] - c0, n = count(c);
    return {c0 + size * j / n, c0 + size * (j + 1) / n};
  }
};

// Runs fn(k0, k1, independent) for runs of contacts that together are every
// contact, colour by colour; a colour's runs in parallel, kGrainOf contacts
// or more each (a colour under twice that runs as one). `independent`: the
// contacts of the run share no body (false for the overflow colour, which
// must run in order, on this thread).
template <std::size_t kGrainOf = kLaneGrain, class Fn>
void for_colour_runs(const Contacts& cs, Fn&& fn) {
  const std::uint32_t colours = cs.colours();
  for (std::uint32_t c = 0; c < colours; ++c) {
    const std::size_t k0 = cs.colour_begin[c], k1 = cs.colour_begin[c + 1];
    if (c == kOverflow || k1 - k0 < 2 * kGrainOf) {
      fn(k0, k1, c != kOverflow);
      continue;
    }
    // The same share of every colour on the same thread (see run_passes).
    tbb::parallel_for(tbb::blocked_range<std::size_t>(k0, k1, kGrainOf),
                      [&](const tbb::blocked_range<std::size_t>& r) { fn(r.begin(), r.end(), true); },
                      tbb::static_partitioner());
  }
}

// Runs one(k) for every contact k, colour by colour; the contacts of a
// colour in parallel (they share no body: any split, same bits), the runs
// that share no body four contacts at a time in lanes (lanes(k0, k1, done):
// the same results; it says in `done` how many it took) where the processor
// has them. The overflow colour runs in order on one thread, one at a time.
// Returns the sum of the results.
template <class One, class Lanes>
std::uint64_t for_colours_lanes(const Contacts& cs, One&& one, Lanes&& lanes) {
  std::atomic<std::uint64_t> sum{0};
  const bool simd = simd_in_use();
  for_colour_runs<kGrain>(cs, [&](std::size_t k0, std::size_t k1, bool independent) {
    std::uint64_t count = 0;
    std::size_t k = k0;
    if (simd && independent) {
      std::size_t done = 0;
      count += lanes(k0, k1, done);
      k += done;
    }
    for (; k < k1; ++k) count += one(k);
    if (count) sum.fetch_add(count, std::memory_order_relaxed);
  });
  return sum.load(std::memory_order_relaxed);
}
// The same, one contact at a time only.
template <class Fn>
std::uint64_t for_colours(const Contacts& cs, Fn&& fn) {
  return for_colours_lanes(cs, fn, [](std::size_t, std::size_t, std::size_t&) -> std::uint64_t { return 0; });
}

// Runs fn(wall contact) for every wall contact, blocks in parallel (a body's
// wall contacts are in one block, in wall order); on this thread when they are
// few (a TBB fork costs more than a few hundred walls). Returns the sum.
template <class Fn>
std::uint64_t for_walls(WallContacts& walls, Fn&& fn) {
  std::size_t total = 0;
  for (const auto& block : walls.blocks) total += block.size();
  if (total < 2 * kGrain) {
    std::uint64_t count = 0;
    for (auto& block : walls.blocks)
      for (WallContact& w : block) count += fn(w);
    return count;
  }
  std::atomic<std::uint64_t> sum{0};
  for_blocks(walls.blocks.size(), 1, [&](std::size_t blk, std::size_t, std::size_t) {
    std::uint64_t count = 0;
    for (WallContact& w : walls.blocks[blk]) count += fn(w);
    if (count) sum.fetch_add(count, std::memory_order_relaxed);
  });
  return sum.load(std::memory_order_relaxed);
}

// --- pairs ---------------------------------------------------------------

// Velocities, as the body store keeps them (an array for each component)...
struct Vel {
  double* vx;
  double* vy;
  double& x(std::uint32_t i) const { return vx[i]; }
  double& y(std::uint32_t i) const { return vy[i]; }
};
// ... or the solver's copy, the two components of a body side by side: one
// cache line and one load for both (with_velocities).
struct VelPairs {
  double* w;
  double& x(std::uint32_t i) const { return w[2 * i]; }
  double& y(std::uint32_t i) const { return w[2 * i + 1]; }
};
struct Pos {
  double* x;
  double* y;
};

// Where a contact's two bodies' velocities are: in the body store, at their
// storage indices; in the solver's copy, at their slots.
inline Pair velocity_pair(Vel, Pair p, const ContactRef&) { return p; }
inline Pair velocity_pair(VelPairs, Pair, const ContactRef& c) { return {c.va, c.vb}; }

template <class V>
inline double normal_velocity(V v, Pair p, const ContactRef& c) {
  const Pair q = velocity_pair(v, p, c);
  return (v.x(q.b) - v.x(q.a)) * c.nx + (v.y(q.b) - v.y(q.a)) * c.ny;
}

template <class V>
inline void push_velocity(V v, Pair p, const ContactRef& c, double du) {
  const Pair q = velocity_pair(v, p, c);
  v.x(q.a) -= c.share_a * du * c.nx;
  v.y(q.a) -= c.share_a * du * c.ny;
  v.x(q.b) += c.share_b * du * c.nx;
  v.y(q.b) += c.share_b * du * c.ny;
}

// An impact: u becomes -e u, the textbook 1D result (u_a' = u_a + (1 + e)
// share_a u), for a pair approaching faster than the resting speed that meets
// within the substep.
// A pair still apart (speculative) meets after t = gap / -u: until then it
// moves at the old velocities, so each body is moved by (old - new velocity)
// t, and the substep ends where the collision at the moment of contact puts it.
template <class V>
inline bool impact(V v, Pos x, Pair p, const ContactRef& c, std::uint8_t& collided, const SolveContext& ctx) {
  const double un = normal_velocity(v, p, c);
  if (!(un < -ctx.resting) || !(c.sep + un * ctx.h <= 0.0)) return false;
  const double du = -(1.0 + ctx.restitution) * un;
  push_velocity(v, p, c, du);
  if (c.sep > 0.0 && c.bounce == 0.0) {
    const double moved = du * (c.sep / -un);
    x.x[p.a] += c.share_a * moved * c.nx;
    x.y[p.a] += c.share_a * moved * c.ny;
    x.x[p.b] -= c.share_b * moved * c.nx;
    x.y[p.b] -= c.share_b * moved * c.ny;
  }
  c.bounce += du;
  collided = 1;
  return true;
}

// A pair's soft spring where it overlaps deeper than kStiffFrom of its reach
// (r_a + r_b), unless it carries nothing and already leaves (an elastic gas's
// pair after its impact: stiffening those cost the bench gas 7e-5 of its
// energy in 2 000 steps). Omega times
// s = depth / (kStiffFrom reach), at most kStiffMax. The stiffness (omega^2)
// grows as s^2, so at rest a contact sinks in about as far as depth s^2 =
// the one spring's depth, which keeps the mean overlap of a pile (its
// contacts are shallower) and halves a deep one: a body wedged in a bottom
// corner of the 100k pile under the pile's sideways push held 0.174 r with
// the one spring, 0.070 r with this. The deep push is at most kStiffPush of
// max_push (with the full push the 10k pile kept more kinetic energy at
// step 600: over 12 seeds a geometric mean of 1.3e-5 J a body, against 2.9e-6
// with this and 4.4e-6 with the one spring), and never below the one
// spring's. `rate` is
// mass_scale * bias_rate, as the passes use them. The same operations as
// the lanes'.
struct DeepSoft {
  double rate, mass_scale, impulse_scale;
};
inline DeepSoft deep_softness(double gap, double reach, const Softness& sf, const SolveContext& ctx) {
  const double m = gap / (-kStiffFrom * reach);
  const double s = std::min(m, kStiffMax);
  const double hw = sf.h_omega * s;
  const double a1 = sf.two_zeta + hw;
  const double a2 = hw * a1;
  const double a3 = 1.0 / (1.0 + a2);
  return {hw * hw * a3 * ctx.inv_h, a2 * a3, a3};
}

// One soft pass (Box2D v3's solve with bias, or its relax without) in
// relative velocity units: from the normal velocity `un`, the current `gap`
// and what the contact carries, the new accumulated change (>= 0). Pairs and
// walls alike.
inline double soft_accum(double un, double gap, double accum, const Softness& sf, bool use_bias,
                         const SolveContext& ctx, double reach = 0.0) {
  // The relax pass (no bias) only takes back what the contact carries: it
  // comes after the positions moved, so a pair that meets now is the next
  // substep's impact, which relaxing it here would make inelastic (Box2D's
  // relax does, and cools an elastic gas).
  if (accum == 0.0 && !use_bias) return accum;
  double bias = 0.0, mass_scale = 1.0, impulse_scale = 0.0;
  if (gap > 0.0) {
    // Speculative: may close the gap within the substep, no more. Unless it
    // carries nothing and, in an elastic world, approaches as an impact
    // would: a push after the impact passes (a neighbour's soft contact)
    // made it meet within the substep, and stopping it here would make that
    // impact inelastic (the 100k elastic gas lost 8.6e-6 of its energy in
    // 200 steps so). It meets, and the next substep's impact pass takes it
    // whole. (Below e = 1 the blow is taken here: a pile left those to the
    // next substep's impacts kept 200 times the kinetic energy at rest.)
    if (use_bias && accum == 0.0 && un < -ctx.unseen_impact) return accum;
    bias = gap * ctx.inv_h;
  } else if (use_bias) {
    // A pair that carries nothing and already leaves fast enough to undo
    // kLeaving of its overlap within the substep (an elastic gas's pair after
    // its impact) is left to leave: pushing it, its neighbours' relax could
    // take back more than the push, and the gas would lose energy. Slower
    // ones are pushed, else two bodies overlapping at rest would part only as
    // fast as they drift. (The bar was half the push; with stiffer contacts
    // that pushed more leaving pairs, and an elastic gas lost 3e-4 of its
    // energy in 400 steps.)
    const bool departing = accum == 0.0 && un > ctx.resting;
    if (departing && un >= std::min(-kLeaving * gap * ctx.inv_h, 0.5 * ctx.max_push)) return accum;
    bias = std::max(sf.mass_scale * sf.bias_rate * gap, -ctx.max_push);
    mass_scale = sf.mass_scale;
    impulse_scale = sf.impulse_scale;
    if (ctx.stiffen_deep && !departing && reach > 0.0 && gap < -kStiffFrom * reach) {  // pairs only (walls pass no reach)
      const DeepSoft d = deep_softness(gap, reach, sf, ctx);
      bias = std::min(bias, std::max(d.rate * gap, -kStiffPush * ctx.max_push));
      mass_scale = d.mass_scale;
      impulse_scale = d.impulse_scale;
    }
  }
  return std::max(accum - (mass_scale * un + bias) - impulse_scale * accum, 0.0);
}

// Returns whether it changed anything.
template <class V>
inline bool soft(V v, Pair p, const ContactRef& c, double& carried, double gap, const Softness& sf, bool use_bias,
                 const SolveContext& ctx) {
  const double accum = soft_accum(normal_velocity(v, p, c), gap, carried, sf, use_bias, ctx, c.reach);
  const double change = accum - carried;
  if (change == 0.0) return false;
  carried = accum;
  push_velocity(v, p, c, change);
  return true;
}

// The velocity passes over contacts [k0, k1) that share no body, four at a
// time in AVX2 lanes: the same operations in the same order as the scalar
// code (warm start: push_velocity by what the contact carries; soft and
// relax: soft() with and without the bias, relax measuring the gap first),
// so the same bits. The velocities are loaded and stored lane by lane (AVX2
// gathers were slower here), the contacts transposed from their cache lines.
enum class Pass { kWarm, kSoft, kRelaxMeasure, kRelax };

// The same passes one contact at a time, in order. Both return whether they
// changed any velocity (run_passes stops the passes where one did not).
template <Pass kPass, class V>
bool run_scalar(V v, const Pair* pairs, ContactFields geo, double* acc, std::size_t k0, std::size_t k1,
                const BodyStore& b, const SolveContext& ctx) {
  bool changed = false;
  for (std::size_t k = k0; k < k1; ++k) {
    const ContactRef c = geo[k];
    const Pair p = pairs[k];
    if constexpr (kPass == Pass::kWarm) {
      if (acc[k] > 0.0) {
        push_velocity(v, p, c, acc[k]);
        changed = true;
      }
    } else {
      if constexpr (kPass == Pass::kRelaxMeasure)
        c.sep = (b.x[p.b] - b.x[p.a]) * c.nx + (b.y[p.b] - b.y[p.a]) * c.ny - c.reach;
      changed |= soft(v, p, c, acc[k], c.sep, ctx.pair_soft, kPass == Pass::kSoft, ctx);
    }
  }
  return changed;
}

// Four contacts of one colour in lanes: their geometry (a load a field where
// they are consecutive) and their bodies' velocities, loaded lane by lane
// (AVX2 gathers were slower).
struct Quad {
  Pair p[4];   // the bodies' storage indices (positions)
  Pair vp[4];  // where their velocities are (velocity_pair)
  __m256d nx, ny, sep, reach, share_a, share_b;
  __m256d vax, vay, vbx, vby;
};
// a[i0], a[i1], a[i2], a[i3] in lanes.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d lanes_of(const double* a, std::uint32_t i0, std::uint32_t i1,
                                                                   std::uint32_t i2, std::uint32_t i3) {
  return _mm256_setr_pd(a[i0], a[i1], a[i2], a[i3]);
}
// Four bodies' velocities in lanes (x0 x1 x2 x3, y0 y1 y2 y3), and back.
[[gnu::target("avx2"), gnu::always_inline]] inline void load_lanes(Vel v, std::uint32_t i0, std::uint32_t i1,
                                                                  std::uint32_t i2, std::uint32_t i3, __m256d& x,
                                                                  __m256d& y) {
  x = lanes_of(v.vx, i0, i1, i2, i3);
  y = lanes_of(v.vy, i0, i1, i2, i3);
}
[[gnu::target("avx2"), gnu::always_inline]] inline void load_lanes(VelPairs v, std::uint32_t i0, std::uint32_t i1,
                                                                  std::uint32_t i2, std::uint32_t i3, __m256d& x,
                                                                  __m256d& y) {
  const __m256d b02 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(v.w + 2 * std::size_t{i0})),
                                           _mm_loadu_pd(v.w + 2 * std::size_t{i2}), 1);  // x0 y0 x2 y2
  const __m256d b13 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(v.w + 2 * std::size_t{i1})),
                                           _mm_loadu_pd(v.w + 2 * std::size_t{i3}), 1);  // x1 y1 x3 y3
  x = _mm256_unpacklo_pd(b02, b13);
  y = _mm256_unpackhi_pd(b02, b13);
}
[[gnu::target("avx2"), gnu::always_inline]] inline void store_lanes(Vel v, std::uint32_t i0, std::uint32_t i1,
                                                                   std::uint32_t i2, std::uint32_t i3, __m256d x,
                                                                   __m256d y) {
  alignas(32) double out[2][4];
  _mm256_store_pd(out[0], x);
  _mm256_store_pd(out[1], y);
  const std::uint32_t i[4] = {i0, i1, i2, i3};
  for (int l = 0; l < 4; ++l) {
    v.vx[i[l]] = out[0][l];
    v.vy[i[l]] = out[1][l];
  }
}
[[gnu::target("avx2"), gnu::always_inline]] inline void store_lanes(VelPairs v, std::uint32_t i0, std::uint32_t i1,
                                                                   std::uint32_t i2, std::uint32_t i3, __m256d x,
                                                                   __m256d y) {
  const __m256d b02 = _mm256_unpacklo_pd(x, y), b13 = _mm256_unpackhi_pd(x, y);
  _mm_storeu_pd(v.w + 2 * std::size_t{i0}, _mm256_castpd256_pd128(b02));
  _mm_storeu_pd(v.w + 2 * std::size_t{i1}, _mm256_castpd256_pd128(b13));
  _mm_storeu_pd(v.w + 2 * std::size_t{i2}, _mm256_extractf128_pd(b02, 1));
  _mm_storeu_pd(v.w + 2 * std::size_t{i3}, _mm256_extractf128_pd(b13, 1));
}

// The four bodies' velocities of the contacts in q's lanes (q.p, q.vp).
template <class V>
[[gnu::target("avx2"), gnu::always_inline]] inline void load_velocities(V v, Quad& q) {
  const Pair* p = q.vp;
  load_lanes(v, p[0].a, p[1].a, p[2].a, p[3].a, q.vax, q.vay);
  load_lanes(v, p[0].b, p[1].b, p[2].b, p[3].b, q.vbx, q.vby);
}
// Contacts k0..k3 (any four sharing no body) in lanes.
template <class V>
[[gnu::target("avx2"), gnu::always_inline]] inline Quad load_quad_at(V v, const Pair* pairs, ContactFields geo,
                                                                     std::size_t k0, std::size_t k1, std::size_t k2,
                                                                     std::size_t k3) {
  Quad q;
  q.nx = _mm256_setr_pd(geo.nx[k0], geo.nx[k1], geo.nx[k2], geo.nx[k3]);
  q.ny = _mm256_setr_pd(geo.ny[k0], geo.ny[k1], geo.ny[k2], geo.ny[k3]);
  q.sep = _mm256_setr_pd(geo.sep[k0], geo.sep[k1], geo.sep[k2], geo.sep[k3]);
  q.reach = _mm256_setr_pd(geo.reach[k0], geo.reach[k1], geo.reach[k2], geo.reach[k3]);
  q.share_a = _mm256_setr_pd(geo.share_a[k0], geo.share_a[k1], geo.share_a[k2], geo.share_a[k3]);
  q.share_b = _mm256_setr_pd(geo.share_b[k0], geo.share_b[k1], geo.share_b[k2], geo.share_b[k3]);
  const std::size_t k[4] = {k0, k1, k2, k3};
  for (int j = 0; j < 4; ++j) {
    q.p[j] = pairs[k[j]];
    q.vp[j] = velocity_pair(v, q.p[j], geo[k[j]]);
  }
  load_velocities(v, q);
  return q;
}
// Four consecutive contacts k.. of one colour in lanes: each field one load.
template <class V>
[[gnu::target("avx2"), gnu::always_inline]] inline Quad load_quad(V v, const Pair* pairs, ContactFields geo,
                                                                  std::size_t k) {
  Quad q;
  q.nx = _mm256_loadu_pd(geo.nx + k);
  q.ny = _mm256_loadu_pd(geo.ny + k);
  q.sep = _mm256_loadu_pd(geo.sep + k);
  q.reach = _mm256_loadu_pd(geo.reach + k);
  q.share_a = _mm256_loadu_pd(geo.share_a + k);
  q.share_b = _mm256_loadu_pd(geo.share_b + k);
  for (std::size_t j = 0; j < 4; ++j) {
    q.p[j] = pairs[k + j];
    q.vp[j] = velocity_pair(v, q.p[j], geo[k + j]);
  }
  load_velocities(v, q);
  return q;
}

// normal_velocity in lanes.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d normal_velocity(const Quad& q) {
  return _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(q.vbx, q.vax), q.nx),
                       _mm256_mul_pd(_mm256_sub_pd(q.vby, q.vay), q.ny));
}

template <Pass kPass, class V>
[[gnu::target("avx2")]] bool run_avx2(V v, const Pair* pairs, ContactFields geo, double* acc, std::size_t k0,
                                      std::size_t k1, const BodyStore& b, const SolveContext& ctx) {
  const __m256d zero = _mm256_setzero_pd();
  const __m256d inv_h = _mm256_set1_pd(ctx.inv_h);
  const Softness& sf = ctx.pair_soft;
  const __m256d mass_scale = _mm256_set1_pd(sf.mass_scale), impulse_scale = _mm256_set1_pd(sf.impulse_scale);
  const __m256d rate = _mm256_set1_pd(sf.mass_scale * sf.bias_rate), least = _mm256_set1_pd(-ctx.max_push);
  const __m256d leaving = _mm256_set1_pd(-kLeaving), half_push = _mm256_set1_pd(0.5 * ctx.max_push);
  const __m256d resting = _mm256_set1_pd(ctx.resting), impact_bar = _mm256_set1_pd(-ctx.unseen_impact);
  const __m256d stiff_from = _mm256_set1_pd(-kStiffFrom);
  const bool stiffen = ctx.stiffen_deep;
  const __m256d h_omega = _mm256_set1_pd(sf.h_omega), two_zeta = _mm256_set1_pd(sf.two_zeta);
  const __m256d one = _mm256_set1_pd(1.0), stiff_max = _mm256_set1_pd(kStiffMax);
  const __m256d stiff_least = _mm256_set1_pd(-kStiffPush * ctx.max_push);
  const double* const x = b.x.data();
  const double* const y = b.y.data();
  bool changed = false;
  std::size_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    const Quad q = load_quad(v, pairs, geo, k);
    const Pair* const p = q.p;
    const __m256d nx = q.nx, ny = q.ny, share_a = q.share_a, share_b = q.share_b;
    const __m256d accum = _mm256_loadu_pd(acc + k);
    const __m256d vax = q.vax, vay = q.vay, vbx = q.vbx, vby = q.vby;
    __m256d sep = q.sep;
    if constexpr (kPass == Pass::kRelaxMeasure) {
      // The gap now: (x_b - x_a) . n - (r_a + r_b).
      const __m256d dx = _mm256_sub_pd(lanes_of(x, p[0].b, p[1].b, p[2].b, p[3].b),
                                       lanes_of(x, p[0].a, p[1].a, p[2].a, p[3].a));
      const __m256d dy = _mm256_sub_pd(lanes_of(y, p[0].b, p[1].b, p[2].b, p[3].b),
                                       lanes_of(y, p[0].a, p[1].a, p[2].a, p[3].a));
      sep = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(dx, nx), _mm256_mul_pd(dy, ny)), q.reach);
      _mm256_storeu_pd(geo.sep + k, sep);
    }
    __m256d fresh, change, moves;
    if constexpr (kPass == Pass::kWarm) {
      fresh = accum;
      change = accum;
      moves = _mm256_cmp_pd(accum, zero, _CMP_GT_OQ);
    } else {
      const __m256d un = normal_velocity(q);
      // soft_accum. max(0, x) and max(b, a) return their second operand when
      // the two compare equal, as std::max(x, 0.0) and std::max(a, b) do.
      const __m256d speculative = _mm256_cmp_pd(sep, zero, _CMP_GT_OQ);
      if constexpr (kPass == Pass::kSoft) {
        const __m256d carries_nothing = _mm256_cmp_pd(accum, zero, _CMP_EQ_OQ);
        // An impact the impact passes did not see: left to the next substep's.
        const __m256d unseen = _mm256_and_pd(carries_nothing, _mm256_cmp_pd(un, impact_bar, _CMP_LT_OQ));
        const __m256d closing = _mm256_andnot_pd(
            unseen, _mm256_max_pd(zero, _mm256_sub_pd(accum, _mm256_add_pd(un, _mm256_mul_pd(sep, inv_h)))));
        const __m256d departing = _mm256_and_pd(carries_nothing, _mm256_cmp_pd(un, resting, _CMP_GT_OQ));
        __m256d bias = _mm256_max_pd(least, _mm256_mul_pd(rate, sep));
        __m256d lane_mass_scale = mass_scale, lane_impulse_scale = impulse_scale;
        const __m256d deep =
            stiffen ? _mm256_andnot_pd(departing, _mm256_cmp_pd(sep, _mm256_mul_pd(stiff_from, q.reach), _CMP_LT_OQ))
                    : zero;
        if (stiffen && _mm256_movemask_pd(deep) != 0) [[unlikely]] {
          // deep_softness in the deep lanes.
          const __m256d m = _mm256_div_pd(sep, _mm256_mul_pd(stiff_from, q.reach));
          const __m256d s = _mm256_min_pd(m, stiff_max);
          const __m256d hw = _mm256_mul_pd(h_omega, s);
          const __m256d a1 = _mm256_add_pd(two_zeta, hw);
          const __m256d a2 = _mm256_mul_pd(hw, a1);
          const __m256d a3 = _mm256_div_pd(one, _mm256_add_pd(one, a2));
          const __m256d lane_rate = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(hw, hw), a3), inv_h);
          bias = _mm256_blendv_pd(bias, _mm256_min_pd(bias, _mm256_max_pd(stiff_least, _mm256_mul_pd(lane_rate, sep))), deep);
          lane_mass_scale = _mm256_blendv_pd(mass_scale, _mm256_mul_pd(a2, a3), deep);
          lane_impulse_scale = _mm256_blendv_pd(impulse_scale, a3, deep);
        }
        const __m256d pushed = _mm256_max_pd(
            zero, _mm256_sub_pd(_mm256_sub_pd(accum, _mm256_add_pd(_mm256_mul_pd(lane_mass_scale, un), bias)),
                                _mm256_mul_pd(lane_impulse_scale, accum)));
        const __m256d bar = _mm256_min_pd(half_push, _mm256_mul_pd(_mm256_mul_pd(leaving, sep), inv_h));
        const __m256d leaves = _mm256_and_pd(departing, _mm256_cmp_pd(un, bar, _CMP_GE_OQ));
        fresh = _mm256_blendv_pd(_mm256_blendv_pd(pushed, accum, leaves), closing, speculative);
        change = _mm256_sub_pd(fresh, accum);
        moves = _mm256_cmp_pd(change, zero, _CMP_NEQ_UQ);
      } else {
        const __m256d bias = _mm256_and_pd(speculative, _mm256_mul_pd(sep, inv_h));
        fresh = _mm256_max_pd(zero, _mm256_sub_pd(accum, _mm256_add_pd(un, bias)));
        change = _mm256_sub_pd(fresh, accum);
        // A contact that carries nothing is left alone by relax.
        moves = _mm256_and_pd(_mm256_cmp_pd(accum, zero, _CMP_NEQ_UQ), _mm256_cmp_pd(change, zero, _CMP_NEQ_UQ));
      }
    }
    if (_mm256_movemask_pd(moves) == 0) continue;
    changed = true;
    const __m256d da = _mm256_mul_pd(share_a, change), db = _mm256_mul_pd(share_b, change);
    _mm256_storeu_pd(acc + k, _mm256_blendv_pd(accum, fresh, moves));
    store_lanes(v, q.vp[0].a, q.vp[1].a, q.vp[2].a, q.vp[3].a,
                _mm256_blendv_pd(vax, _mm256_sub_pd(vax, _mm256_mul_pd(da, nx)), moves),
                _mm256_blendv_pd(vay, _mm256_sub_pd(vay, _mm256_mul_pd(da, ny)), moves));
    store_lanes(v, q.vp[0].b, q.vp[1].b, q.vp[2].b, q.vp[3].b,
                _mm256_blendv_pd(vbx, _mm256_add_pd(vbx, _mm256_mul_pd(db, nx)), moves),
                _mm256_blendv_pd(vby, _mm256_add_pd(vby, _mm256_mul_pd(db, ny)), moves));
  }
  // The scalar code after the lanes (the tail here, and whatever runs next
  // on this thread) is not AVX: leave the registers' upper halves clean.
  // GCC does not always do it on this path (the constants above dirty them
  // even when no quad runs), and SSE code after dirty upper halves ran up to
  // four times slower on this machine (an AMD EPYC): the pair search, the
  // velocity update, everything.
  _mm256_zeroupper();
  const bool tail = run_scalar<kPass>(v, pairs, geo, acc, k, k1, b, ctx);
  return changed || tail;
}

// impact()'s test in lanes (approaching faster than the resting speed and
// meeting within the substep), with the same operations: a bit per lane that
// may fire.
[[gnu::target("avx2"), gnu::always_inline]] inline unsigned may_fire(const Quad& q, const SolveContext& ctx) {
  const __m256d un = normal_velocity(q);
  const __m256d fires =
      _mm256_and_pd(_mm256_cmp_pd(un, _mm256_set1_pd(-ctx.resting), _CMP_LT_OQ),
                    _mm256_cmp_pd(_mm256_add_pd(q.sep, _mm256_mul_pd(un, _mm256_set1_pd(ctx.h))), _mm256_setzero_pd(),
                                  _CMP_LE_OQ));
  return static_cast<unsigned>(_mm256_movemask_pd(fires));
}

// Calls look(k) for each contact of [k0, k1) (sharing no body), in order,
// that impact() may fire for: four at a time, the lanes compute its test, and
// a lane that fails it is not looked at (impact() would return false and
// change nothing).
template <class V, class Look>
[[gnu::target("avx2")]] void may_fire_avx2(V v, const Pair* pairs, ContactFields geo, std::size_t k0,
                                           std::size_t k1, const SolveContext& ctx, Look&& look) {
  std::size_t k = k0;
  for (; k + 4 <= k1; k += 4)
    for (unsigned bits = may_fire(load_quad(v, pairs, geo, k), ctx); bits != 0; bits &= bits - 1)
      look(k + static_cast<std::size_t>(std::countr_zero(bits)));
  _mm256_zeroupper();  // as in run_avx2
  for (; k < k1; ++k) look(k);
}

// The same for the contacts ks[0..n) (ascending, sharing no body).
template <class V, class Look>
[[gnu::target("avx2")]] void may_fire_list_avx2(V v, const Pair* pairs, ContactFields geo, const std::uint32_t* ks,
                                                std::size_t n, const SolveContext& ctx, Look&& look) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (unsigned bits = may_fire(load_quad_at(v, pairs, geo, ks[i], ks[i + 1], ks[i + 2], ks[i + 3]), ctx);
         bits != 0; bits &= bits - 1)
      look(ks[i + static_cast<std::size_t>(std::countr_zero(bits))]);
  _mm256_zeroupper();  // as in run_avx2
  for (; i < n; ++i) look(ks[i]);
}

// Appends to `out` the k in [k, min(k + 32, end)) whose flag is set, in
// order; returns how many. (Flags another thread may set meanwhile belong to
// other colours' contacts, never these.)
[[gnu::target("avx2")]] inline std::size_t marked_avx2(const std::uint8_t* flag, std::size_t k, std::size_t end,
                                                       std::uint32_t* out) {
  std::uint32_t bits = 0;
  if (k + 32 <= end) {
    const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(flag + k));
    bits = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(f, _mm256_setzero_si256())));
  } else {
    for (std::size_t e = k; e < end; ++e) bits |= (flag[e] != 0 ? 1u : 0u) << (e - k);
  }
  std::size_t n = 0;
  for (; bits != 0; bits &= bits - 1)
    out[n++] = static_cast<std::uint32_t>(k + static_cast<std::size_t>(std::countr_zero(bits)));
  return n;
}

std::atomic<bool> simd_allowed{true};
std::atomic<bool> copy_allowed{true};
// Tests: whether deep contacts may be stiffened (allow_deep_stiffening).
std::atomic<bool> stiffening_allowed{true};
// Tests and measurements: whether solve_with may index the contacts by body
// on another thread while the first impact pass runs, and how often it has.
std::atomic<bool> index_beside_allowed{true};
std::atomic<std::uint64_t> index_beside_runs{0};
std::atomic<std::uint64_t> copies{0};
// (A static initializer may run before the runtime's own CPU detection.)
const bool kHaveAvx2 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}();

// --- walls ---------------------------------------------------------------

// Inside the box exactly as the walls write it: min + r <= x <= max - r.
inline void clamp_into(double& x, double& y, double r, const Bounds& box) {
  x = std::clamp(x, box.min.x + r, box.max.x - r);
  y = std::clamp(y, box.min.y + r, box.max.y - r);
}

// The body's velocity component along wall w's normal: in the body store
// (or its positions, as a Vel) at its storage index, in the solver's copy at
// its slot.
inline double& wall_velocity(Vel v, const WallContact& w) {
  const std::uint32_t i = w.entry >> 2;
  return (w.entry & 2u) ? v.y(i) : v.x(i);
}
inline double& wall_velocity(VelPairs v, const WallContact& w) {
  return (w.entry & 2u) ? v.y(w.slot) : v.x(w.slot);
}
// The inward normal of wall w (0 min x, 1 max x, 2 min y, 3 max y) is +1 or -1
// along x (w < 2) or y.
inline double wall_sign(std::uint32_t entry) { return (entry & 1u) ? -1.0 : 1.0; }

template <class V>
inline bool wall_impact(V v, Pos x, WallContact& w, const SolveContext& ctx) {
  double& vel = wall_velocity(v, w);
  const double s = wall_sign(w.entry);
  const double un = s * vel;
  if (!(un < -ctx.resting) || !(w.sep + un * ctx.h <= 0.0)) return false;
  const double du = -(1.0 + ctx.restitution) * un;
  vel += s * du;
  if (w.sep > 0.0 && w.bounce == 0.0) wall_velocity(Vel{x.x, x.y}, w) -= s * du * (w.sep / -un);  // as impact()
  w.bounce += du;
  return true;
}

template <class V>
inline bool wall_soft(V v, WallContact& w, double gap, bool use_bias, const SolveContext& ctx) {
  double& vel = wall_velocity(v, w);
  const double s = wall_sign(w.entry);
  const double accum = soft_accum(s * vel, gap, w.accum, ctx.wall_soft, use_bias, ctx);
  const double change = accum - w.accum;
  if (change == 0.0) return false;
  w.accum = accum;
  vel += s * change;
  return true;
}

// The gap to wall `entry` now (positions moved since detection).
inline double wall_gap(const BodyStore& b, std::uint32_t entry, const Bounds& box) {
  const std::uint32_t i = entry >> 2;
  switch (entry & 3u) {
    case 0: return b.x[i] - b.r[i] - box.min.x;
    case 1: return box.max.x - b.r[i] - b.x[i];
    case 2: return b.y[i] - b.r[i] - box.min.y;
    default: return box.max.y - b.r[i] - b.y[i];
  }
}

}  // namespace

void allow_simd(bool allowed) { simd_allowed.store(allowed, std::memory_order_relaxed); }
bool simd_in_use() { return kHaveAvx2 && simd_allowed.load(std::memory_order_relaxed); }
void allow_velocity_copy(bool allowed) { copy_allowed.store(allowed, std::memory_order_relaxed); }
std::size_t set_shared_impacts_from(std::size_t impacts) {
  return shared_impacts_from.exchange(impacts, std::memory_order_relaxed);
}
std::uint64_t shared_impact_passes() { return shared_impact_runs.load(std::memory_order_relaxed); }
std::uint64_t velocity_copies() { return copies.load(std::memory_order_relaxed); }
void allow_deep_stiffening(bool allowed) { stiffening_allowed.store(allowed, std::memory_order_relaxed); }
void allow_index_beside(bool allowed) { index_beside_allowed.store(allowed, std::memory_order_relaxed); }
std::uint64_t indexes_beside() { return index_beside_runs.load(std::memory_order_relaxed); }

void colour_pairs(std::size_t bodies, PairBlocks& pairs, Colouring& out, bool low_memory) {
  pairs.renew();
  out.used.assign(bodies, 0);
  out.colour.resize(pairs.count);
  std::vector<std::uint32_t> count(kColours, 0);
  out.per_contact = false;
  // Greedy, in candidate order: the first colour free at both bodies.
  std::uint64_t* const used = out.used.data();
  std::uint8_t* const colour = out.colour.data();
  std::size_t k = 0;
  for (const auto& block : pairs.blocks) {
    for (const Pair p : block) {
      const std::uint32_t c = take_colour(used, p);
      colour[k++] = static_cast<std::uint8_t>(c);
      ++count[c];
    }
  }
  std::uint32_t colours = 0;
  for (std::uint32_t c = 0; c < kColours; ++c)
    if (count[c]) colours = c + 1;
  std::vector<std::uint64_t>().swap(out.used);
  // Blocks of one colour each, colours in order, candidates in order within.
  out.begin.assign(colours + 1, 0);
  out.block_begin.assign(colours + 1, 0);
  std::vector<std::size_t> first_block(colours + 1, 0);
  for (std::uint32_t c = 0; c < colours; ++c) {
    out.begin[c + 1] = out.begin[c] + count[c];
    first_block[c + 1] = first_block[c] + block_count(count[c], kPairBlock);
    out.block_begin[c + 1] = static_cast<std::uint32_t>(first_block[c + 1]);
  }
  std::vector<std::vector<Pair>> blocks(first_block[colours]);
  if (low_memory) {
    // Memory peaks here at a million bodies: the per-body colour masks went
    // before the coloured list is made, and each searched block goes as soon
    // as its pairs are placed, so the list is never held twice.
    std::vector<std::size_t> fill(colours, 0);
    k = 0;
    for (auto& block : pairs.blocks) {
      for (const Pair p : block) {
        const std::uint32_t c = colour[k++];
        auto& dst = blocks[first_block[c] + fill[c] / kPairBlock];
        if (fill[c] % kPairBlock == 0) dst.reserve(std::min<std::size_t>(kPairBlock, count[c] - fill[c]));
        dst.push_back(p);
        ++fill[c];
      }
      std::vector<Pair>().swap(block);
    }
  } else {
    // A parallel counting sort: each searched block counts its pairs per
    // colour, the counts in block order give each its first slot per colour.
    const std::size_t nsrc = pairs.blocks.size();
    const std::vector<std::uint32_t> src_first = pairs.starts();
    std::vector<std::uint32_t> at(nsrc * colours, 0);
    for_blocks(nsrc, 1, [&](std::size_t blk, std::size_t, std::size_t) {
      std::uint32_t* const mine = at.data() + blk * colours;
      for (std::size_t q = src_first[blk]; q < src_first[blk + 1]; ++q) ++mine[colour[q]];
    });
    for (std::uint32_t c = 0; c < colours; ++c) {
      std::uint32_t sum = 0;
      for (std::size_t blk = 0; blk < nsrc; ++blk) {
        const std::uint32_t here = at[blk * colours + c];
        at[blk * colours + c] = sum;
        sum += here;
      }
    }
    for_blocks(blocks.size(), 1, [&](std::size_t d, std::size_t, std::size_t) {
      const std::uint32_t c = static_cast<std::uint32_t>(
          std::upper_bound(first_block.begin(), first_block.end(), d) - first_block.begin() - 1);
      const std::size_t rank0 = (d - first_block[c]) * kPairBlock;
      blocks[d].resize(std::min<std::size_t>(kPairBlock, count[c] - rank0));
    });
    for_blocks(nsrc, 1, [&](std::size_t blk, std::size_t, std::size_t) {
      std::uint32_t* const next = at.data() + blk * colours;
      std::size_t q = src_first[blk];
      for (const Pair p : pairs.blocks[blk]) {
        const std::uint32_t c = colour[q++];
        const std::uint32_t r = next[c]++;
        blocks[first_block[c] + r / kPairBlock][r % kPairBlock] = p;
      }
    });
  }
  pairs.blocks = std::move(blocks);
}

void leave_uncoloured(const PairBlocks& pairs, Colouring& out) {
  out.per_contact = true;
  out.begin.assign({0, static_cast<std::uint32_t>(pairs.count)});
  out.block_begin.assign({0, static_cast<std::uint32_t>(pairs.blocks.size())});
  std::vector<std::uint64_t>().swap(out.used);
  std::vector<std::uint8_t>().swap(out.colour);
}

namespace {

// The impact cascade's index of each body's contacts, in contact order (a
// counting sort), unless it was made for these very contacts (collide
// refreshed them). Reads only the contacts' pairs: solve_with may make it on
// another thread while the first impact pass runs.
void index_by_body(Contacts& cs, std::size_t n) {
  if (cs.by_body_current) return;
  const Pair* const pairs = cs.pairs.data();
  const std::size_t nc = cs.size();
  auto& start = cs.by_body_start;
  auto& list = cs.by_body;
  start.assign(n + 1, 0);
  for (std::size_t k = 0; k < nc; ++k) {
    ++start[pairs[k].a + 1];
    ++start[pairs[k].b + 1];
  }
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  list.resize(2 * nc);
  std::vector<std::uint32_t>& fill = cs.by_body_fill;
  fill.assign(start.begin(), start.end() - 1);
  for (std::size_t k = 0; k < nc; ++k) {
    list[fill[pairs[k].a]++] = static_cast<std::uint32_t>(k);
    list[fill[pairs[k].b]++] = static_cast<std::uint32_t>(k);
  }
  cs.by_body_current = true;
}

// What the impact passes after the first read and write.
template <class V>
struct ImpactPass {
  V v;
  Pos pos;
  ContactFields geo;
  const Pair* pairs;
  std::uint8_t* collided;
  std::uint8_t* fired_in;  // per body, 1 + the pass an impact last changed it in
  ImpactPass(V vel, BodyStore& b, Contacts& cs)
      : v(vel),
        pos{b.x.data(), b.y.data()},
        geo(cs.geometry.data()),
        pairs(cs.pairs.data()),
        collided(cs.collided.data()),
        fired_in(cs.fired.data()) {}

  // A later pass's look at contact k: where it fires, its bodies are
  // stamped and, given the per-body index (start, list), others(j) is
  // called for every other contact j of either body. Returns 0 (it did not
  // fire), 1, or 2 (it fired, and had not collided yet this substep).
  template <class Others>
  int look_at(std::size_t k, std::uint8_t stamp, const SolveContext& ctx, const std::uint32_t* start,
              const std::uint32_t* list, Others&& others) {
    const Pair p = pairs[k];
    const bool before = collided[k] != 0;
    if (!impact(v, pos, p, geo[k], collided[k], ctx)) return 0;
    for (const std::uint32_t i : {p.a, p.b}) {
      fired_in[i] = stamp;
      if (start == nullptr) continue;
      for (std::uint32_t e = start[i]; e < start[i + 1]; ++e)
        if (list[e] != k) others(list[e]);
    }
    return before ? 1 : 2;
  }
  // A later pass's walls, in order: those of bodies changed last pass or
  // this one; mark_all(i) for each body i an impact changed. Returns the
  // impacts.
  template <class MarkAll>
  std::uint64_t wall_looks(WallContacts& walls, std::uint8_t recent, std::uint8_t stamp, const SolveContext& ctx,
                           MarkAll&& mark_all) {
    std::uint64_t fires = 0;
    for (auto& block : walls.blocks)
      for (WallContact& w : block) {
        const std::uint32_t i = w.entry >> 2;
        if (fired_in[i] < recent || !wall_impact(v, pos, w, ctx)) continue;
        ++fires;
        fired_in[i] = stamp;
        mark_all(i);
      }
    return fires;
  }

  // Passes 2.. through a per-body index of the contacts (`share`: on every
  // thread, see shared), or by sweeps (see below). Return the contacts that
  // collided for the first time in them.
  std::uint64_t cascade(BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx, int passes,
                        bool share);
  std::uint64_t sweeps(Contacts& cs, WallContacts& walls, const SolveContext& ctx, int passes);
  // cascade's passes shared among the threads, once its index is made.
  // (`indexed`; else sweeps' passes, shared the same way.)
  std::uint64_t shared(std::size_t bodies, Contacts& cs, WallContacts& walls, const SolveContext& ctx, int passes,
                       bool indexed);
};

// Impact passes 2.. (see solve_contacts): the bodies stamped 1 in `fired`
// changed in the first pass. Returns the contacts that collided for the first
// time in these passes.
template <class V>
std::uint64_t ImpactPass<V>::cascade(BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx,
                                     int passes, bool share) {
  const std::size_t n = b.size(), nc = cs.size();
  // Each body's contacts (made already where solve_with made it beside the
  // first pass).
  index_by_body(cs, n);
  const auto& start = cs.by_body_start;
  const auto& list = cs.by_body;
  if (share) return shared(b.size(), cs, walls, ctx, passes, true);
  // The contacts to look at, as bits in contact order: this pass's (`todo`)
  // and the next one's (`next`). A look at a contact that does not fire
  // changes nothing, and a contact can only start to fire once a body of it
  // changed after its last look: so each impact marks its bodies' contacts
  // that come after it for this pass and those before it for the next one
  // (those after it get their look this pass, after the change). Pass 2
  // looks at every contact of the bodies the first pass changed.
  auto& todo = cs.todo;
  auto& next = cs.todo_next;
  todo.assign((nc + 63) / 64, 0);
  next.assign(todo.size(), 0);
  auto& marked = cs.marked;
  const std::uint32_t colours = cs.colours();
  const bool lanes = simd_in_use();
  const auto mark = [](std::vector<std::uint64_t>& bits, std::uint32_t k) {
    bits[k >> 6] |= std::uint64_t{1} << (k & 63);
  };
  const auto mark_all = [&](std::uint32_t i) {
    for (std::uint32_t q = start[i]; q < start[i + 1]; ++q) mark(todo, list[q]);
  };
  for (std::size_t i = 0; i < n; ++i)
    if (fired_in[i]) mark_all(static_cast<std::uint32_t>(i));
  std::uint64_t count = 0;
  for (int it = 1; it < passes; ++it) {
    const auto stamp = static_cast<std::uint8_t>(it + 1);
    const auto recent = static_cast<std::uint8_t>(it);  // last pass or this one
    // Walls come first in a pass: a body they change has every contact looked at.
    std::uint64_t fired = wall_looks(walls, recent, stamp, ctx, mark_all);
    const auto look = [&](std::size_t k) {
      const int fire = look_at(k, stamp, ctx, start.data(), list.data(),
                               [&](std::uint32_t j) { mark(j > k ? todo : next, j); });
      fired += fire != 0 ? 1 : 0;
      count += fire == 2 ? 1 : 0;
    };
    // Colour by colour: an impact marks contacts of later colours only (a
    // colour's contacts share no body), so a colour's marked contacts are
    // known when it starts, and where lanes run, four at a time are checked
    // first and only those that may fire are looked at again. The overflow
    // colour's contacts may share bodies: one at a time, bit by bit.
    for (std::uint32_t c = 0; c < colours; ++c) {
      const std::size_t k0 = cs.colour_begin[c], k1 = cs.colour_begin[c + 1];
      marked.clear();
      for (std::size_t word = k0 >> 6; word < ((k1 + 63) >> 6); ++word) {
        const std::size_t lo = std::max(k0, word << 6), hi = std::min(k1, (word + 1) << 6);
        const std::uint64_t in = (hi - lo == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (hi - lo)) - 1))
                                 << (lo & 63);
        if (c == kOverflow) {
          while ((todo[word] & in) != 0) {
            const std::uint64_t bits = todo[word] & in;
            const std::size_t k = (word << 6) + static_cast<std::size_t>(std::countr_zero(bits));
            todo[word] &= ~(bits & -bits);
            look(k);
          }
          continue;
        }
        for (std::uint64_t bits = todo[word] & in; bits != 0; bits &= bits - 1)
          marked.push_back(static_cast<std::uint32_t>((word << 6) + static_cast<std::size_t>(std::countr_zero(bits))));
        todo[word] &= ~in;
      }
      if (lanes) {
        may_fire_list_avx2(v, pairs, geo, marked.data(), marked.size(), ctx, look);
      } else {
        for (const std::uint32_t k : marked) look(k);
      }
    }
    if (fired == 0) break;
    // Every bit of `todo` was taken by its colour: it is all zeros.
    std::swap(todo, next);
  }
  return count;
}

// cascade's passes as one run of stages (run_stages), each pass a stage for
// the walls and one for each colour, where the colour's contacts are cut
// among the threads as the velocity passes cut them (run_passes: each thread
// keeps its stretch of the velocities). A colour's contacts share no body,
// and an impact marks contacts of other colours only (the overflow colour,
// one chunk, aside), so a colour's marks are all made when its stage starts
// and its chunks only read them: the same contacts are looked at, in an
// order that changes nothing (same bits). The marks are a byte a contact,
// set by plain stores (atomic ORs on shared words cost more than the
// threads saved), and a pass's are cleared at the start of the pass after
// it. The run ends after a pass in which nothing fired. Not `indexed`:
// sweeps' passes instead (no marks, no index), each colour's chunk looking at
// its contacts with a body changed last pass or this one.
template <class V>
std::uint64_t ImpactPass<V>::shared(std::size_t bodies, Contacts& cs, WallContacts& walls, const SolveContext& ctx,
                                    int passes, bool indexed) {
  shared_impact_runs.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t* const start = cs.by_body_start.data();
  const std::uint32_t* const list = cs.by_body.data();
  const std::size_t nc = cs.size();
  const std::uint32_t colours = cs.colours();
  const std::size_t per_pass = 1 + colours;
  const std::size_t later = static_cast<std::size_t>(std::max(passes - 1, 0));
  // Pass q (0: the second impact pass) looks at flags[q & 1] and marks for
  // the pass after it in flags[(q + 1) & 1] (indexed).
  cs.look_now.assign(indexed ? nc : 0, 0);
  cs.look_next.assign(indexed ? nc : 0, 0);
  std::uint8_t* const flags[2] = {cs.look_now.data(), cs.look_next.data()};
  const auto mark = [](std::uint8_t* f, std::uint32_t k) {
    std::atomic_ref<std::uint8_t>(f[k]).store(1, std::memory_order_relaxed);
  };
  for (std::size_t i = 0; indexed && i < bodies; ++i)
    if (fired_in[i])
      for (std::uint32_t e = start[i]; e < start[i + 1]; ++e) flags[0][list[e]] = 1;
  const std::unique_ptr<std::atomic<std::uint64_t>[]> fired(new std::atomic<std::uint64_t>[later + 1]);
  for (std::size_t q = 0; q <= later; ++q) fired[q].store(0, std::memory_order_relaxed);
  std::atomic<std::uint64_t> first_time{0};
  const bool lanes = simd_in_use();
  const ColourChunks chunks{cs};
  run_stages(
      later * per_pass,
      [&](std::size_t s) -> std::size_t {
        const std::size_t at = s % per_pass;
        return at == 0 ? 1 : chunks.count(static_cast<std::uint32_t>(at - 1));
      },
      [&](std::size_t s, std::size_t j) {
        const std::size_t q = s / per_pass, at = s % per_pass;
        const int it = static_cast<int>(q) + 1;
        const auto stamp = static_cast<std::uint8_t>(it + 1);
        const auto recent = static_cast<std::uint8_t>(it);  // last pass or this one
        std::uint8_t* const now = flags[q & 1];
        std::uint8_t* const next = flags[(q + 1) & 1];
        std::uint64_t fires = 0, new_ones = 0;
        const auto look = [&](std::size_t k) {
          const int fire = look_at(k, stamp, ctx, indexed ? start : nullptr, list,
                                   [&](std::uint32_t other) { mark(other > k ? now : next, other); });
          fires += fire != 0 ? 1 : 0;
          new_ones += fire == 2 ? 1 : 0;
        };
        if (at == 0) {
          // The walls, on this thread, after the last pass's marks are
          // cleared (every stage of that pass is done).
          if (indexed && q > 0) std::fill(next, next + nc, std::uint8_t{0});
          fires += wall_looks(walls, recent, stamp, ctx, [&](std::uint32_t i) {
            if (indexed)
              for (std::uint32_t e = start[i]; e < start[i + 1]; ++e) mark(now, list[e]);
          });
        } else {
          const auto c = static_cast<std::uint32_t>(at - 1);
          const std::pair<std::size_t, std::size_t> chunk = chunks.range(c, j);
          const std::size_t k0 = chunk.first, k1 = chunk.second;
          if (!indexed) {
            // A sweep: the contacts with a body changed last pass or this one.
            for (std::size_t k = k0; k < k1; ++k)
              if (fired_in[pairs[k].a] >= recent || fired_in[pairs[k].b] >= recent) look(k);
          } else if (c == kOverflow || !lanes) {
            // The overflow colour's contacts may share bodies: an impact
            // may mark a later one of its own, which this scan then meets.
            for (std::size_t k = k0; k < k1; ++k)
              if (std::atomic_ref<std::uint8_t>(now[k]).load(std::memory_order_relaxed) != 0) look(k);
          } else {
            // The marked contacts, a batch at a time, in order.
            constexpr std::size_t kBatch = 256;
            std::uint32_t batch[kBatch + 32];
            std::size_t held = 0;
            for (std::size_t k = k0; k < k1;) {
              held += marked_avx2(now, k, k1, batch + held);
              k = std::min(k1, k + 32);
              if (held >= kBatch || k == k1) {
                may_fire_list_avx2(v, pairs, geo, batch, held, ctx, look);
                held = 0;
              }
            }
          }
        }
        if (fires) fired[q].fetch_add(fires, std::memory_order_relaxed);
        if (new_ones) first_time.fetch_add(new_ones, std::memory_order_relaxed);
      },
      [&](std::size_t s) {
        // A pass after one in which nothing fired would look at nothing.
        const std::size_t q = s / per_pass;
        return s % per_pass != 0 || q == 0 || fired[q - 1].load(std::memory_order_relaxed) != 0;
      });
  return first_time.load(std::memory_order_relaxed);
}

// The same passes as cascade, each a sweep over every contact colour by
// colour that skips those with no body changed last pass or this one: cheaper
// than building the per-body index when contacts are few beside the bodies
// (a gas). Same contacts in the same order, so the same bits.
template <class V>
std::uint64_t ImpactPass<V>::sweeps(Contacts& cs, WallContacts& walls, const SolveContext& ctx, int passes) {
  std::uint64_t count = 0;
  for (int it = 1; it < passes; ++it) {
    const auto stamp = static_cast<std::uint8_t>(it + 1);
    const auto recent = static_cast<std::uint8_t>(it);  // last pass or this one
    std::atomic<std::uint64_t> first_time{0};
    const std::uint64_t fired =
        for_walls(walls, [&](WallContact& w) -> std::uint32_t {
          const std::uint32_t i = w.entry >> 2;
          if (fired_in[i] < recent || !wall_impact(v, pos, w, ctx)) return 0u;
          fired_in[i] = stamp;
          return 1u;
        }) +
        for_colours(cs, [&](std::size_t k) -> std::uint32_t {
          if (fired_in[pairs[k].a] < recent && fired_in[pairs[k].b] < recent) return 0u;
          const int fire = look_at(k, stamp, ctx, nullptr, nullptr, [](std::uint32_t) {});
          if (fire == 2) first_time.fetch_add(1, std::memory_order_relaxed);
          return fire != 0 ? 1u : 0u;
        });
    count += first_time.load(std::memory_order_relaxed);
    if (fired == 0) break;
  }
  return count;
}

// Runs body(v) on the bodies' velocities: where
// contacts are as many as the bodies or more (a pile), on the solver's copy
// with a body's two components side by side (the lanes load and store a
// body at once, and a body is one cache line instead of two), copied in
// before and back after; else (a gas) on the body store's own arrays. In
// the copy a body sits at its slot (Contacts::slot_of) where the passes are
// shared among threads (Contacts::slotted), else at its storage index. The
// same operations on the same values either way: the same bits.
template <class Body>
void with_velocities(BodyStore& b, Contacts& cs, Body&& body) {
  const std::size_t n = b.size();
  if (cs.size() < n || !copy_allowed.load(std::memory_order_relaxed)) {
    body(Vel{b.vx.data(), b.vy.data()});
    return;
  }
  copies.fetch_add(1, std::memory_order_relaxed);
  cs.velocity.resize(2 * n);
  double* const w = cs.velocity.data();
  double* const vx = b.vx.data();
  double* const vy = b.vy.data();
  const std::uint32_t* const slot = cs.slots().empty() ? nullptr : cs.slots().data();
  for_blocks(n, kCopyBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::size_t at = slot ? slot[i] : i;
      w[2 * at] = vx[i];
      w[2 * at + 1] = vy[i];
    }
  });
  body(VelPairs{w});
  for_blocks(n, kCopyBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::size_t at = slot ? slot[i] : i;
      vx[i] = w[2 * at];
      vy[i] = w[2 * at + 1];
    }
  });
}

// One pass's work on wall contact w; whether it changed the velocity.
template <Pass kPass, class V>
inline bool wall_one(V v, const BodyStore& b, WallContact& w, const SolveContext& ctx) {
  if constexpr (kPass == Pass::kWarm) {
    if (!(w.accum > 0.0)) return false;
    wall_velocity(v, w) += wall_sign(w.entry) * w.accum;
    return true;
  } else {
    if constexpr (kPass == Pass::kRelaxMeasure) w.sep = wall_gap(b, w.entry, ctx.bounds);
    // The soft passes read the gap at detection, the relax passes the gap now.
    return wall_soft(v, w, w.sep, kPass == Pass::kSoft, ctx);
  }
}

// One pass over the wall contacts of `block`.
template <Pass kPass, class V>
void wall_pass(V v, const BodyStore& b, std::vector<WallContact>& block, const SolveContext& ctx) {
  for (WallContact& w : block) wall_one<kPass>(v, b, w, ctx);
}

// One pass over contacts k0..k1 of one colour (`independent`: they share no
// body), four at a time in AVX2 lanes where the processor has them; whether
// it changed any velocity.
template <Pass kPass, class V>
bool contact_run(V v, const BodyStore& b, Contacts& cs, std::size_t k0, std::size_t k1, bool independent,
                 const SolveContext& ctx) {
  if (independent && simd_in_use())
    return run_avx2<kPass>(v, cs.pairs.data(), cs.geometry.data(), cs.accum.data(), k0, k1, b, ctx);
  return run_scalar<kPass>(v, cs.pairs.data(), cs.geometry.data(), cs.accum.data(), k0, k1, b, ctx);
}

// `passes` velocity passes, the first of kind `first` and the others of kind
// `rest`, each over the wall contacts and then the contacts colour by colour. Where the passes are shared among the
// threads (Contacts::slotted: many contacts, more than one thread), as one
// run of stages (run_stages): one fork for all of them, where a fork per
// colour cost 1.5-4 us, as much as half a colour's work. A colour of fewer
// than kSplitFrom contacts, the last colour and few walls are one chunk, on
// this thread; the others are cut into at least as many runs as threads, of
// about kLaneGrain, and each thread takes the same share of every colour
// first: contacts come in the broad phase's order within a colour, and the
// velocities in the same order (Contacts::slot_of), so a thread keeps its
// own stretch of them (lines written by both threads cost a relax pass of the
// 10k pile a third of its time). Contacts of a colour share no body and a
// body's wall contacts are in one block, so any split gives the same bits.
template <class V>
void run_passes(V v, const BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx, Pass first,
                Pass rest, std::size_t passes) {
  const auto dispatch = [](Pass pass, auto&& body) {
    switch (pass) {
      case Pass::kWarm: return body(std::integral_constant<Pass, Pass::kWarm>{});
      case Pass::kSoft: return body(std::integral_constant<Pass, Pass::kSoft>{});
      case Pass::kRelaxMeasure: return body(std::integral_constant<Pass, Pass::kRelaxMeasure>{});
      case Pass::kRelax: return body(std::integral_constant<Pass, Pass::kRelax>{});
    }
  };
  if (!cs.slotted) {
    // Not shared (few contacts, or one thread): pass after pass, the walls
    // (in parallel blocks where many), then colour by colour (a large
    // colour's runs in parallel). A pass is a function of the velocities,
    // what the contacts carry and their gaps, and changes only the first
    // two: one that changed nothing leaves the next pass of its kind the
    // very state it had, so that one, and every one after it, would change
    // nothing either (an elastic gas, whose contacts mostly leave apart or
    // collide as impacts). So the passes stop there; the bits are the same.
    // (Not after the warm start: the soft pass after it is another kind; the
    // relax passes after the first compute what it did from the gaps it
    // measured.)
    for (std::size_t at = 0; at < passes; ++at) {
      const Pass pass = at == 0 ? first : rest;
      std::atomic<bool> changed{false};
      dispatch(pass, [&](auto kind) {
        constexpr Pass kPass = decltype(kind)::value;
        if (for_walls(walls, [&](WallContact& w) { return wall_one<kPass>(v, b, w, ctx) ? 1u : 0u; }) != 0)
          changed.store(true, std::memory_order_relaxed);
        for_colour_runs(cs, [&](std::size_t k0, std::size_t k1, bool independent) {
          if (contact_run<kPass>(v, b, cs, k0, k1, independent, ctx)) changed.store(true, std::memory_order_relaxed);
        });
      });
      if (pass != Pass::kWarm && !changed.load(std::memory_order_relaxed)) return;
    }
    return;
  }
  const std::uint32_t colours = cs.colours();
  std::size_t wall_total = 0;
  for (const auto& block : walls.blocks) wall_total += block.size();
  const bool wall_blocks = wall_total >= 2 * kGrain;
  const std::size_t per_pass = 1 + colours;
  const ColourChunks chunks{cs};
  run_stages(
      passes * per_pass,
      [&](std::size_t s) -> std::size_t {
        const std::size_t at = s % per_pass;
        if (at == 0) return wall_blocks ? walls.blocks.size() : 1;
        return chunks.count(static_cast<std::uint32_t>(at - 1));
      },
      [&](std::size_t s, std::size_t j) {
        const std::size_t at = s % per_pass;
        const Pass pass = s < per_pass ? first : rest;
        if (at == 0) {
          dispatch(pass, [&](auto kind) {
            if (wall_blocks) return wall_pass<decltype(kind)::value>(v, b, walls.blocks[j], ctx);
            for (auto& block : walls.blocks) wall_pass<decltype(kind)::value>(v, b, block, ctx);
          });
          return;
        }
        const auto c = static_cast<std::uint32_t>(at - 1);
        const std::pair<std::size_t, std::size_t> chunk = chunks.range(c, j);
        const std::size_t k0 = chunk.first, k1 = chunk.second;
        dispatch(pass, [&](auto kind) { contact_run<decltype(kind)::value>(v, b, cs, k0, k1, c != kOverflow, ctx); });
      });
}

template <class V>
std::uint64_t solve_with(V v, BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx) {
  const Pos pos{b.x.data(), b.y.data()};
  const ContactFields geo = cs.geometry.data();
  const Pair* const pairs = cs.pairs.data();
  std::uint8_t* const collided = cs.collided.data();

  // 1. Impacts, until none fires. After the first pass only contacts with a
  // body whose velocity an impact changed (last pass, or this one in an
  // earlier colour) can fire. The first pass looks at every contact, colour
  // by colour in parallel; the later ones (a cascade down a pile: each pass
  // carries a blow about one contact further, up to 16 passes) look only at
  // the contacts of the bodies that changed: in a pile through a per-body
  // index of the contacts, in contact order on this thread (cascade), in a
  // gas by sweeping the few contacts (sweeps). Either visits the same
  // contacts in the same order, so the bits do not depend on which runs.
  // The pass in which an impact last changed each body, + 1 (0: none this
  // substep): one array stamped per pass instead of two cleared per pass.
  const int kImpactPasses = std::max(ctx.iterations, 16);
  // The later passes of a pile (contacts many beside the bodies) go through
  // the index of each body's contacts (ImpactPass::cascade). Where the
  // passes run on this thread (not slotted), the other threads are idle
  // until relax: one of them makes the index while the first pass runs (it
  // reads only the contacts' pairs, which nothing here writes). The same
  // index: the same bits. (The default world: 15 us of the 100 us these
  // passes take a substep.)
  const bool indexed = 4 * cs.size() >= b.size();
  std::optional<tbb::task_group> indexing;
  const bool index_beside = indexed && !cs.by_body_current && !cs.slotted && cs.size() >= kIndexBesideFrom &&
                            index_beside_allowed.load(std::memory_order_relaxed) &&
                            tbb::this_task_arena::max_concurrency() > 1;
  if (index_beside) indexing.emplace().run([&cs, n = b.size()] { index_by_body(cs, n); });
  cs.fired.assign(b.size(), 0);
  std::uint8_t* const fired_in = cs.fired.data();
  std::uint64_t count = 0;  // contacts that collided (once each)
  {
    std::atomic<std::uint64_t> first_time{0};
    const std::uint64_t walls_fired = for_walls(walls, [&](WallContact& w) -> std::uint32_t {
      if (!wall_impact(v, pos, w, ctx)) return 0u;
      fired_in[w.entry >> 2] = 1;
      return 1u;
    });
    // Every contact is looked at; where lanes run, four at a time are
    // checked first and only those that may fire are looked at again.
    const bool lanes = simd_in_use();
    for_colour_runs(cs, [&](std::size_t k0, std::size_t k1, bool independent) {
      std::uint64_t n = 0;
      const auto look = [&](std::size_t k) {
        const Pair p = pairs[k];
        if (!impact(v, pos, p, geo[k], collided[k], ctx)) return;
        fired_in[p.a] = fired_in[p.b] = 1;
        ++n;
      };
      if (independent && lanes) {
        may_fire_avx2(v, pairs, geo, k0, k1, ctx, look);
      } else {
        for (std::size_t k = k0; k < k1; ++k) look(k);
      }
      if (n) first_time.fetch_add(n, std::memory_order_relaxed);
    });
    count += first_time.load(std::memory_order_relaxed);
    const std::uint64_t fired = walls_fired + first_time.load(std::memory_order_relaxed);
    // The index costs a pass over the bodies: worth it where contacts are
    // many beside them (a pile), not in a gas. Where the passes are shared,
    // either runs as one run of stages (ImpactPass::shared), not a fork per
    // colour of every pass.
    const bool share = cs.slotted && fired >= shared_impacts_from.load(std::memory_order_relaxed);
    if (fired != 0 && kImpactPasses > 1) {
      // The later passes carry a blow on: below 1 restitution, only while
      // it is faster than cascade_resting (kCascadeResting).
      SolveContext blow = ctx;
      blow.resting = ctx.cascade_resting;
      ImpactPass<V> later(v, b, cs);
      if (index_beside) indexing->wait();
      if (indexed) {
        count += later.cascade(b, cs, walls, blow, kImpactPasses, share);
      } else {
        count += share ? later.shared(b.size(), cs, walls, blow, kImpactPasses, false)
                       : later.sweeps(cs, walls, blow, kImpactPasses);
      }
    }
  }
  // 2. Warm start (accum holds last substep's value since the narrow phase).
  // 3. Soft passes with bias, at the gaps of detection (positions have not moved).
  run_passes(v, b, cs, walls, ctx, Pass::kWarm, Pass::kSoft, 1 + static_cast<std::size_t>(std::max(ctx.iterations, 0)));
  // Where no impact fired, the index was not needed: it was made meanwhile
  // (and stays valid for these contacts).
  if (index_beside) {
    indexing->wait();
    index_beside_runs.fetch_add(1, std::memory_order_relaxed);
  }
  return count;
}

template <class V>
void relax_with(V v, BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx) {
  // The passes change velocities only, so each sees the same gaps: the first
  // measures them into `sep` (the gap at detection is not needed again this
  // substep), the later ones read them there.
  run_passes(v, b, cs, walls, ctx, Pass::kRelaxMeasure, Pass::kRelax,
             static_cast<std::size_t>(std::max(ctx.relax_passes, 0)));
}

}  // namespace

std::uint64_t solve_contacts(BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx) {
  std::uint64_t collided = 0;
  // Deep contacts are stiffened only while they are few: a pile's wedges
  // (at most 1.3% of the 100k pile's contacts at any time). In a jam, a box
  // filled past what it holds, three quarters of the contacts are deep, and
  // no spring holds them apart: stiffer ones only made it boil (the bench's
  // default scene at 10 000 bodies: 10 times the kinetic energy, 0.8x speed).
  SolveContext here = ctx;
  // The soft passes read the gap at detection, so with no deep contact at
  // detection they skip the test.
  // Not with one soft pass: its stiffness is already the most it holds (the
  // 1 x 1 pile boiled).
  here.stiffen_deep = ctx.iterations >= 2 && cs.deep > 0 &&
                      (cs.deep <= kStiffFew || cs.deep * kStiffAtMost <= cs.size()) &&
                      stiffening_allowed.load(std::memory_order_relaxed);
  with_velocities(b, cs, [&](auto v) { collided = solve_with(v, b, cs, walls, here); });
  return collided;
}

Softness make_softness(double share, double zeta, double h) {
  if (share <= 0.0) return {0.0, 1.0, 0.0, 0.0, 2.0 * zeta};
  const double omega = 2.0 * std::numbers::pi * (share * (1.0 / h));
  const double a1 = 2.0 * zeta + h * omega;
  const double a2 = h * omega * a1;
  const double a3 = 1.0 / (1.0 + a2);
  return {omega / a1, a2 * a3, a3, 2.0 * std::numbers::pi * share, 2.0 * zeta};
}

void relax_contacts(BodyStore& b, Contacts& cs, WallContacts& walls, const SolveContext& ctx) {
  // Relax only takes back what contacts carry (soft_accum): where none
  // carries anything (a gas between its impacts), its passes would change
  // nothing, and the gaps they measure are not read again.
  const auto carries = [](double a) { return a > 0.0; };
  bool any = std::any_of(cs.accum.begin(), cs.accum.end(), carries);
  for (std::size_t k = 0; !any && k < walls.blocks.size(); ++k)
    any = std::any_of(walls.blocks[k].begin(), walls.blocks[k].end(), [](const WallContact& w) { return w.accum > 0.0; });
  if (any) with_velocities(b, cs, [&](auto v) { relax_with(v, b, cs, walls, ctx); });
  // What each contact carries warm-starts the next substep, where it is.
  cs.warm_in_contacts = true;
  walls.warm = true;
}

namespace {

// Verlet's push (push_contacts), one contact: 0 where the pair does not
// overlap along its normal, else 1, plus kDeepPush where it overlaps by more
// than kDeepOverlap of its smaller radius.
constexpr std::uint64_t kDeepPush = std::uint64_t{1} << 32;
struct PushInput {
  const Pair* pairs;
  ContactFields geo;
  std::uint8_t* collided;
  double* x;
  double* y;
  const double* r;
  const Bounds* box;  // null: unbounded
};
inline std::uint64_t push_one(const PushInput& in, std::size_t k) {
  double* const x = in.x;
  double* const y = in.y;
  const double* const r = in.r;
  const Pair p = in.pairs[k];
  const ContactRef c = in.geo[k];
  const double reach = r[p.a] + r[p.b];
  const double sep = (x[p.b] - x[p.a]) * c.nx + (y[p.b] - y[p.a]) * c.ny - reach;
  if (!(sep < 0.0)) return 0u;
  const std::uint64_t deep = sep < -kDeepOverlap * std::min(r[p.a], r[p.b]) ? kDeepPush : 0u;
  x[p.a] += c.share_a * sep * c.nx;
  y[p.a] += c.share_a * sep * c.ny;
  x[p.b] -= c.share_b * sep * c.nx;
  y[p.b] -= c.share_b * sep * c.ny;
  if (in.box) {
    // A wall holds a body it clamps: the other body takes that share
    // (else the wall would push it back into overlap after the passes).
    const Bounds& box = *in.box;
    const double xa = x[p.a], ya = y[p.a], xb = x[p.b], yb = y[p.b];
    clamp_into(x[p.a], y[p.a], r[p.a], box);
    clamp_into(x[p.b], y[p.b], r[p.b], box);
    const bool held_a = x[p.a] != xa || y[p.a] != ya, held_b = x[p.b] != xb || y[p.b] != yb;
    if (held_a != held_b) {
      const double rest = (x[p.b] - x[p.a]) * c.nx + (y[p.b] - y[p.a]) * c.ny - reach;
      if (rest < 0.0) {
        const std::uint32_t o = held_a ? p.b : p.a;
        const double shift = held_a ? -rest : rest;
        x[o] += shift * c.nx;
        y[o] += shift * c.ny;
        clamp_into(x[o], y[o], r[o], box);
      }
    }
  }
  in.collided[k] = 1;
  return 1u + deep;
}

// Whether a lane of v lies outside [lo, hi] (std::clamp would move it).
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d outside(__m256d v, __m256d lo, __m256d hi) {
  return _mm256_or_pd(_mm256_cmp_pd(v, lo, _CMP_LT_OQ), _mm256_cmp_pd(hi, v, _CMP_LT_OQ));
}

// push_one for contacts [k0, k0 + 4 floor((k1 - k0) / 4)) of one colour
// (they share no body), four at a time in AVX2 lanes with the same
// operations, so the same bits. Four of which a pushed body would meet a
// wall go one at a time (nothing of them is stored before). Returns the sum
// of push_one's results; `done` the contacts handled.
[[gnu::target("avx2")]] std::uint64_t push_avx2(const PushInput& in, std::size_t k0, std::size_t k1, std::size_t& done) {
  const ContactFields geo = in.geo;
  const Vel pos{in.x, in.y};
  const __m256d zero = _mm256_setzero_pd(), deep_share = _mm256_set1_pd(-kDeepOverlap);
  __m256d minx = zero, maxx = zero, miny = zero, maxy = zero;
  if (in.box) {
    minx = _mm256_set1_pd(in.box->min.x);
    maxx = _mm256_set1_pd(in.box->max.x);
    miny = _mm256_set1_pd(in.box->min.y);
    maxy = _mm256_set1_pd(in.box->max.y);
  }
  std::uint64_t sum = 0;
  std::size_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    const Pair* p = in.pairs + k;
    __m256d xa, ya, xb, yb;
    load_lanes(pos, p[0].a, p[1].a, p[2].a, p[3].a, xa, ya);
    load_lanes(pos, p[0].b, p[1].b, p[2].b, p[3].b, xb, yb);
    const __m256d ra = lanes_of(in.r, p[0].a, p[1].a, p[2].a, p[3].a);
    const __m256d rb = lanes_of(in.r, p[0].b, p[1].b, p[2].b, p[3].b);
    const __m256d nx = _mm256_loadu_pd(geo.nx + k), ny = _mm256_loadu_pd(geo.ny + k);
    const __m256d sep = _mm256_sub_pd(
        _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(xb, xa), nx), _mm256_mul_pd(_mm256_sub_pd(yb, ya), ny)),
        _mm256_add_pd(ra, rb));
    const __m256d over = _mm256_cmp_pd(sep, zero, _CMP_LT_OQ);
    const int pushed = _mm256_movemask_pd(over);
    if (pushed == 0) continue;
    // std::min(ra, rb) is rb < ra ? rb : ra: the same value as the lanes' min.
    const __m256d deep = _mm256_and_pd(
        over, _mm256_cmp_pd(sep, _mm256_mul_pd(deep_share, _mm256_min_pd(ra, rb)), _CMP_LT_OQ));
    const __m256d ta = _mm256_mul_pd(_mm256_loadu_pd(geo.share_a + k), sep);
    const __m256d tb = _mm256_mul_pd(_mm256_loadu_pd(geo.share_b + k), sep);
    const __m256d xa2 = _mm256_blendv_pd(xa, _mm256_add_pd(xa, _mm256_mul_pd(ta, nx)), over);
    const __m256d ya2 = _mm256_blendv_pd(ya, _mm256_add_pd(ya, _mm256_mul_pd(ta, ny)), over);
    const __m256d xb2 = _mm256_blendv_pd(xb, _mm256_sub_pd(xb, _mm256_mul_pd(tb, nx)), over);
    const __m256d yb2 = _mm256_blendv_pd(yb, _mm256_sub_pd(yb, _mm256_mul_pd(tb, ny)), over);
    if (in.box) {
      const __m256d walls = _mm256_or_pd(
          _mm256_or_pd(outside(xa2, _mm256_add_pd(minx, ra), _mm256_sub_pd(maxx, ra)),
                       outside(ya2, _mm256_add_pd(miny, ra), _mm256_sub_pd(maxy, ra))),
          _mm256_or_pd(outside(xb2, _mm256_add_pd(minx, rb), _mm256_sub_pd(maxx, rb)),
                       outside(yb2, _mm256_add_pd(miny, rb), _mm256_sub_pd(maxy, rb))));
      if (_mm256_movemask_pd(_mm256_and_pd(walls, over)) != 0) {
        for (std::size_t j = 0; j < 4; ++j) sum += push_one(in, k + j);
        continue;
      }
    }
    store_lanes(pos, p[0].a, p[1].a, p[2].a, p[3].a, xa2, ya2);
    store_lanes(pos, p[0].b, p[1].b, p[2].b, p[3].b, xb2, yb2);
    for (int j = 0; j < 4; ++j)
      if (pushed >> j & 1) in.collided[k + j] = 1;
    sum += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(pushed))) +
           kDeepPush * static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(_mm256_movemask_pd(deep))));
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in run_avx2)
  done = k - k0;
  return sum;
}

// Verlet's restitution (restitute_contacts), one contact: 1 where it changed
// the pair's velocities.
struct RestituteInput {
  Vel v;
  const Pair* pairs;
  ContactFields geo;
  const std::uint8_t* collided;
  double restitution, resting;
};
inline std::uint64_t restitute_one(const RestituteInput& in, std::size_t k) {
  if (!in.collided[k]) return 0u;
  const ContactRef c = in.geo[k];
  const double before = c.bounce;  // the approach before the push
  const double target = before < -in.resting ? -in.restitution * before : 0.0;
  const double un = normal_velocity(in.v, in.pairs[k], c);
  const double du = target - un;
  if (std::abs(du) <= 1e-12 * (std::abs(target) + std::abs(un))) return 0u;
  push_velocity(in.v, in.pairs[k], c, du);
  return 1u;
}

// restitute_one for contacts [k0, k0 + 4 floor((k1 - k0) / 4)) of one colour,
// four at a time in AVX2 lanes with the same operations (the same bits).
// Returns how many changed; `done` the contacts handled.
[[gnu::target("avx2")]] std::uint64_t restitute_avx2(const RestituteInput& in, std::size_t k0, std::size_t k1,
                                                     std::size_t& done) {
  const ContactFields geo = in.geo;
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d least = _mm256_set1_pd(-in.resting), e = _mm256_set1_pd(-in.restitution);
  const __m256d tiny = _mm256_set1_pd(1e-12);
  std::uint64_t sum = 0;
  std::size_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    std::uint32_t hit;
    std::memcpy(&hit, in.collided + k, 4);
    if (hit == 0) continue;
    const Pair* p = in.pairs + k;
    const __m256d mark = _mm256_castsi256_pd(_mm256_cmpgt_epi64(
        _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(static_cast<int>(hit))), _mm256_setzero_si256()));
    __m256d vax, vay, vbx, vby;
    load_lanes(in.v, p[0].a, p[1].a, p[2].a, p[3].a, vax, vay);
    load_lanes(in.v, p[0].b, p[1].b, p[2].b, p[3].b, vbx, vby);
    const __m256d nx = _mm256_loadu_pd(geo.nx + k), ny = _mm256_loadu_pd(geo.ny + k);
    const __m256d before = _mm256_loadu_pd(geo.bounce + k);
    const __m256d target =
        _mm256_and_pd(_mm256_cmp_pd(before, least, _CMP_LT_OQ), _mm256_mul_pd(e, before));
    const __m256d un =
        _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(vbx, vax), nx), _mm256_mul_pd(_mm256_sub_pd(vby, vay), ny));
    const __m256d du = _mm256_sub_pd(target, un);
    const __m256d small = _mm256_cmp_pd(
        _mm256_andnot_pd(sign, du),
        _mm256_mul_pd(tiny, _mm256_add_pd(_mm256_andnot_pd(sign, target), _mm256_andnot_pd(sign, un))), _CMP_LE_OQ);
    const __m256d act = _mm256_andnot_pd(small, mark);
    const int acted = _mm256_movemask_pd(act);
    if (acted == 0) continue;
    const __m256d ta = _mm256_mul_pd(_mm256_loadu_pd(geo.share_a + k), du);
    const __m256d tb = _mm256_mul_pd(_mm256_loadu_pd(geo.share_b + k), du);
    store_lanes(in.v, p[0].a, p[1].a, p[2].a, p[3].a,
                _mm256_blendv_pd(vax, _mm256_sub_pd(vax, _mm256_mul_pd(ta, nx)), act),
                _mm256_blendv_pd(vay, _mm256_sub_pd(vay, _mm256_mul_pd(ta, ny)), act));
    store_lanes(in.v, p[0].b, p[1].b, p[2].b, p[3].b,
                _mm256_blendv_pd(vbx, _mm256_add_pd(vbx, _mm256_mul_pd(tb, nx)), act),
                _mm256_blendv_pd(vby, _mm256_add_pd(vby, _mm256_mul_pd(tb, ny)), act));
    sum += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(acted)));
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in run_avx2)
  done = k - k0;
  return sum;
}

}  // namespace

std::uint64_t push_contacts(BodyStore& b, Contacts& cs, const Bounds& bounds, int iterations) {
  // The normals are from where the bodies were at the start of the substep
  // (collide, VerletStart): a pair that the predicted motion carried past
  // (or onto) each other is pushed back the way it came, never through.
  const PushInput in{cs.pairs.data(), cs.geometry.data(), cs.collided.data(), b.x.data(), b.y.data(), b.r.data(),
                     bounds.walled ? &bounds : nullptr};
  // The user's passes, then more (up to kDeepPasses in all) while a pass
  // still finds a pair overlapping by more than kDeepOverlap of its smaller
  // radius: at low settings a tall pile would otherwise sink into itself
  // (each pass carries a push about one layer down). A pass returns the
  // pairs it pushed, plus kDeepPush for each deep one.
  const int passes = std::max(iterations, kDeepPasses);
  cs.push_passes = 0;
  for (int it = 0; it < passes; ++it) {
    const std::uint64_t moved = for_colours_lanes(
        cs, [&](std::size_t k) { return push_one(in, k); },
        [&](std::size_t k0, std::size_t k1, std::size_t& done) { return push_avx2(in, k0, k1, done); });
    cs.push_passes = it + 1;
    if (moved == 0 || (it + 1 >= iterations && moved < kDeepPush)) break;
  }
  std::uint64_t count = 0;
  for (std::size_t k = 0; k < cs.size(); ++k) count += cs.collided[k];
  return count;
}

void restitute_contacts(BodyStore& b, Contacts& cs, double restitution, double resting, int iterations, bool events) {
  const RestituteInput in{Vel{b.vx.data(), b.vy.data()}, cs.pairs.data(), cs.geometry.data(), cs.collided.data(),
                          restitution, resting};
  // As many passes as the push made (it may have made more than asked for).
  const int passes = std::max(iterations, cs.push_passes);
  for (int it = 0; it < passes; ++it) {
    const std::uint64_t changed = for_colours_lanes(
        cs, [&](std::size_t k) { return restitute_one(in, k); },
        [&](std::size_t k0, std::size_t k1, std::size_t& done) { return restitute_avx2(in, k0, k1, done); });
    if (changed == 0) break;
  }
  const ContactFields geo = cs.geometry.data();
  const std::uint8_t* const collided = cs.collided.data();
  // The whole change of the substep, for the events (nothing else reads it:
  // the next collide writes every contact again). Each contact alone: no
  // colours.
  if (!events) return;
  for_blocks(cs.size(), 4096, [&](std::size_t k0, std::size_t k1, std::size_t) {
    for (std::size_t k = k0; k < k1; ++k) {
      if (!collided[k]) continue;
      const ContactRef c = geo[k];
      const double before = c.bounce;
      c.bounce = (before < -resting ? -restitution * before : 0.0) - before;
      cs.accum[k] = 0.0;
    }
  });
}

WarmByIds save_warm(const BodyStore& b, const PairBlocks& pairs, const Contacts& contacts) {
  WarmByIds saved;
  if (contacts.warm_bound() == 0) return saved;
  const std::vector<std::uint32_t> first = pairs.starts();
  contacts.for_each_warm([&](std::uint32_t cand, double value) {
    const std::size_t blk = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), cand) - first.begin()) - 1;
    const Pair p = pairs.blocks[blk][cand - first[blk]];
    saved.emplace_back(std::uint64_t{b.id[p.a]} << 32 | b.id[p.b], value);
  });
  std::sort(saved.begin(), saved.end());
  return saved;
}

namespace {

WarmTable table_of(std::size_t n, std::span<const std::pair<std::uint32_t, std::uint32_t>> lower,
                   std::span<const double> values) {
  WarmTable t;
  t.start.assign(n + 1, 0);
  for (const auto& [a, b] : lower) ++t.start[a + 1];
  for (std::size_t i = 0; i < n; ++i) t.start[i + 1] += t.start[i];
  t.entry.resize(lower.size());
  std::vector<std::uint32_t> fill(t.start.begin(), t.start.end() - 1);
  for (std::size_t k = 0; k < lower.size(); ++k) t.entry[fill[lower[k].first]++] = {lower[k].second, values[k]};
  return t;
}

}  // namespace

WarmTable warm_table(std::size_t bodies, const PairBlocks& pairs, const Contacts& contacts) {
  if (contacts.warm_bound() == 0) return {};
  // The warm values are in candidate order: walk the blocks beside them.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lower;
  std::vector<double> values;
  lower.reserve(contacts.warm_bound());
  values.reserve(contacts.warm_bound());
  std::size_t blk = 0, first = 0;
  contacts.for_each_warm([&](std::uint32_t cand, double value) {
    while (cand >= first + pairs.blocks[blk].size()) first += pairs.blocks[blk++].size();
    const Pair p = pairs.blocks[blk][cand - first];
    lower.emplace_back(p.a, p.b);
    values.push_back(value);
  });
  return table_of(bodies, lower, values);
}

WarmTable warm_table(const BodyStore& b, const WarmByIds& saved) {
  if (saved.empty()) return {};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lower;
  std::vector<double> values;
  lower.reserve(saved.size());
  values.reserve(saved.size());
  for (const auto& [key, value] : saved) {
    const std::size_t a = b.find(static_cast<BodyId>(key >> 32)), c = b.find(static_cast<BodyId>(key & 0xFFFFFFFFu));
    if (a == kNotFound || c == kNotFound) continue;
    lower.emplace_back(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(c));
    values.push_back(value);
  }
  return table_of(b.size(), lower, values);
}

void restore_warm(const PairBlocks& pairs, const WarmTable& table, Contacts& contacts) {
  contacts.forget_warm();
  if (table.entry.empty()) return;
  // Each block of candidates looks up its pairs (a lower body has a few
  // entries) into its own list; the lists joined in block order are in
  // candidate order.
  const std::size_t nb = pairs.blocks.size();
  const std::vector<std::uint32_t> first = pairs.starts();
  if (contacts.block_warm.size() < nb) contacts.block_warm.resize(nb);
  // The candidates' lower bodies are all over the table (a large world's
  // is beyond the caches): each lookup prefetches its body's place in the
  // table 32 candidates ahead and the entries there 16 ahead (as
  // colour_contacts does its masks). The 100k pile rebuilds its list about
  // once a step as it lands.
  constexpr std::size_t kStartAhead = 32, kEntryAhead = 16;
  const std::uint32_t* const start = table.start.data();
  const auto* const entry = table.entry.data();
  for_blocks(nb, 1, [&, start, entry](std::size_t blk, std::size_t, std::size_t) {
    auto& local = contacts.block_warm[blk];
    local.clear();
    std::uint32_t cand = first[blk];
    const Pair* const block = pairs.blocks[blk].data();
    const std::size_t size = pairs.blocks[blk].size();
    for (std::size_t k = 0; k < size; ++k) {
      if (k + kStartAhead < size) __builtin_prefetch(start + block[k + kStartAhead].a);
      if (k + kEntryAhead < size) __builtin_prefetch(entry + start[block[k + kEntryAhead].a]);
      const Pair p = block[k];
      for (std::uint32_t e = start[p.a]; e < start[p.a + 1]; ++e) {
        if (entry[e].first == p.b) {
          local.emplace_back(cand, entry[e].second);
          break;
        }
      }
      ++cand;
    }
  });
  for (std::size_t blk = 0; blk < nb; ++blk)
    for (const auto& [cand, value] : contacts.block_warm[blk]) {
      contacts.warm_candidate.push_back(cand);
      contacts.warm_value.push_back(value);
    }
}

std::uint64_t record_events(const BodyStore& b, const Contacts& contacts, std::uint32_t substep, std::size_t cap,
                            std::vector<CollisionEvent>& events) {
  std::uint64_t dropped = 0;
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    if (!contacts.collided[k]) continue;
    if (events.size() >= cap) {
      ++dropped;
      continue;
    }
    const Contact c = contacts.geometry.value(k);
    const Pair p = contacts.pairs[k];
    // Impulse on b: the reduced mass m_b share_b = m_a m_b / (m_a + m_b) times the
    // relative velocity change of the substep.
    const double impulse = b.m[p.b] * c.share_b * (c.bounce + contacts.accum[k]);
    CollisionEvent ev;
    ev.a = b.id[p.a];
    ev.b = b.id[p.b];
    ev.point = contacts.point[k];
    ev.impulse = {impulse * c.nx, impulse * c.ny};
    ev.substep = substep;
    events.push_back(ev);
  }
  return dropped;
}

}  // namespace carom::detail
