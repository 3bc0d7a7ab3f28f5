// Mutual gravity: orbits, conservation, the tree against direct summation,
// determinism, bad parameters.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "body_store.hpp"
#include "carom/measure.hpp"
#include "carom/world.hpp"
#include "gravity.hpp"

namespace carom {
namespace {

Params nbody_params(GravityMethod method, double softening) {
  Params p;
  p.bounds.walled = false;
  p.gravity = {0.0, 0.0};
  p.mutual.enabled = true;
  p.mutual.g = 1.0;
  p.mutual.softening = softening;
  p.mutual.method = method;
  p.record_events = false;
  return p;
}

// Bodies uniform in a disc of radius R, tiny (they do not collide), mass 1.
std::vector<BodyDesc> disc(std::size_t n, double radius, std::uint32_t seed, double speed = 0.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<BodyDesc> out(n);
  for (auto& b : out) {
    const double r = radius * std::sqrt(u(rng)), phi = 2.0 * std::numbers::pi * u(rng);
    b.position = {r * std::cos(phi), r * std::sin(phi)};
    b.velocity = {speed * (2.0 * u(rng) - 1.0), speed * (2.0 * u(rng) - 1.0)};
    b.radius = 1e-4;
    b.mass = 1.0;
  }
  return out;
}

detail::BodyStore store_of(const std::vector<BodyDesc>& bodies) {
  detail::BodyStore s;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    s.id.push_back(static_cast<BodyId>(i + 1));
    s.x.push_back(bodies[i].position.x);
    s.y.push_back(bodies[i].position.y);
    s.vx.push_back(0.0);
    s.vy.push_back(0.0);
    s.r.push_back(bodies[i].radius);
    s.m.push_back(bodies[i].mass);
  }
  return s;
}

struct ForceError {
  double p50 = 0, p99 = 0, max = 0;
};

// The tree's accelerations against direct summation, relative per body.
ForceError tree_error(const std::vector<BodyDesc>& bodies, double theta, double softening) {
  const detail::BodyStore s = store_of(bodies);
  MutualGravity g;
  g.enabled = true;
  g.softening = softening;
  g.theta = theta;
  detail::GravityScratch scratch;
  std::vector<double> dx, dy, tx, ty;
  g.method = GravityMethod::kDirect;
  detail::mutual_accelerations(s, g, scratch, dx, dy, nullptr);
  g.method = GravityMethod::kTree;
  detail::mutual_accelerations(s, g, scratch, tx, ty, nullptr);
  std::vector<double> err(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i)
    err[i] = std::hypot(tx[i] - dx[i], ty[i] - dy[i]) / std::hypot(dx[i], dy[i]);
  std::sort(err.begin(), err.end());
  return {err[err.size() / 2], err[err.size() * 99 / 100], err.back()};
}

TEST(Gravity, TwoEqualBodiesKeepACircularOrbit) {
  // Two unit masses 2 m apart, G = 1: each circles the centre at radius 1
  // with speed 1/2, period 4 pi; 100 orbits.
  Params p = nbody_params(GravityMethod::kDirect, 0.0);
  p.substeps = 1;
  p.dt = 1.0 / 600.0;
  World w({.threads = 2}, p);
  const std::vector<BodyDesc> two = {{kAutoId, {-1.0, 0.0}, {0.0, -0.5}, 0.01, 1.0},
                                     {kAutoId, {1.0, 0.0}, {0.0, 0.5}, 0.01, 1.0}};
  ASSERT_TRUE(w.add_bodies(two).ok());
  const double period = 4.0 * std::numbers::pi;
  constexpr int kOrbits = 100;
  const auto steps = static_cast<long>(std::llround(kOrbits * period / p.dt));
  double worst_radius = 0.0;
  for (long s = 0; s < steps; ++s) {
    w.step();
    if (s % 97 == 0) {
      const BodiesView v = w.bodies();
      worst_radius = std::max(worst_radius, std::abs(0.5 * std::hypot(v.x[1] - v.x[0], v.y[1] - v.y[0]) - 1.0));
    }
  }
  const BodiesView v = w.bodies();
  std::printf("  worst radius error over %d orbits: %.2e\n", kOrbits, worst_radius);
  // Leapfrog keeps the orbit (its error is of order (omega dt)^2 ~ 7e-7 here,
  // no drift).
  EXPECT_LT(worst_radius, 1e-6);
  // After a hundred periods each body is where the exact orbit puts it at
  // that time (angle pi + t / 2 for the first): the period is right to 1e-6
  // when the phase is off by at most 1e-6 of the 628 radians travelled (a
  // distance of that many radii; measured 1.5e-4, leapfrog's 2.3e-7 a radian).
  const double travelled = 0.5 * static_cast<double>(steps) * p.dt;
  const double angle = std::numbers::pi + travelled;
  const double tolerance = 1e-6 * travelled;
  EXPECT_NEAR(v.x[0], std::cos(angle), tolerance);
  EXPECT_NEAR(v.y[0], std::sin(angle), tolerance);
  EXPECT_NEAR(v.x[1], -std::cos(angle), tolerance);
  EXPECT_NEAR(v.y[1], -std::sin(angle), tolerance);
  // The potential energy of the pair: -G m m / d.
  EXPECT_NEAR(w.stats().potential_energy, -0.5, 1e-5);
}

// A light body on a Kepler ellipse (eccentricity 0.5) about a heavy one,
// direct summation, 30 orbits at 2000 steps an orbit: leapfrog keeps the
// angular momentum of a central pair force to round-off, and its energy
// error oscillates over each orbit without drifting.
TEST(Gravity, AKeplerEllipseKeepsItsEnergyAndAngularMomentum) {
  Params p = nbody_params(GravityMethod::kDirect, 0.0);
  p.substeps = 1;
  constexpr double kHeavy = 1000.0, kLight = 1e-3, kE = 0.5, kPerihelion = 1.0;
  const double gm = p.mutual.g * (kHeavy + kLight);
  const double a = kPerihelion / (1.0 - kE);
  const double period = 2.0 * std::numbers::pi * std::sqrt(a * a * a / gm);
  p.dt = period / 2000.0;
  World w({.threads = 2}, p);
  // Perihelion speed, both bodies about their centre of mass at rest.
  const double v = std::sqrt(gm * (1.0 + kE) / kPerihelion);
  const double share = kLight / (kHeavy + kLight);
  const std::vector<BodyDesc> two = {
      {kAutoId, {-share * kPerihelion, 0.0}, {0.0, -share * v}, 0.05, kHeavy},
      {kAutoId, {(1.0 - share) * kPerihelion, 0.0}, {0.0, (1.0 - share) * v}, 0.01, kLight}};
  ASSERT_TRUE(w.add_bodies(two).ok());
  auto angular = [&w] {
    const BodiesView b = w.bodies();
    double l = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i) l += b.mass[i] * (b.x[i] * b.vy[i] - b.y[i] * b.vx[i]);
    return l;
  };
  w.step();
  const double l0 = angular();
  const double e0 = w.stats().kinetic_energy + w.stats().potential_energy;
  double first_orbit = 0.0, later = 0.0, worst_l = 0.0;
  for (int s = 1; s < 30 * 2000; ++s) {
    w.step();
    const double e = w.stats().kinetic_energy + w.stats().potential_energy;
    const double rel = std::abs((e - e0) / e0);
    (s < 2000 ? first_orbit : later) = std::max(s < 2000 ? first_orbit : later, rel);
    worst_l = std::max(worst_l, std::abs((angular() - l0) / l0));
  }
  std::printf("  energy error: first orbit %.2e, orbits 2-30 %.2e; angular momentum %.2e\n", first_orbit, later,
              worst_l);
  EXPECT_LT(worst_l, 1e-11);
  EXPECT_LT(first_orbit, 1e-4);
  // Bounded: the later orbits' error is the first orbit's oscillation, not
  // a drift on top of it.
  EXPECT_LT(later, 1.5 * first_orbit);
}

// Two unit masses (radius 0.5) let go 10 m apart fall together under their
// own gravity, G = 1, no softening, and collide with restitution 0.5. Energy
// gives the approach speed at contact: 1/4 u^2 = 1 - 1/10, u = sqrt(3.6); the
// bounce leaves at 0.5 u and climbs to the separation d1 with
// 1/4 (0.5 u)^2 = 1 - 1/d1, d1 = 1/0.775 = 1.2903. Every solver.
TEST(Gravity, TwoBodiesFallTogetherAndBounceAsTheTextbookSays) {
  for (const Solver solver : {Solver::kDiscrete, Solver::kVerlet, Solver::kContinuous}) {
    SCOPED_TRACE(to_string(solver));
    Params p = nbody_params(GravityMethod::kDirect, 0.0);
    p.solver = solver;
    p.restitution = 0.5;
    p.substeps = 4;
    p.dt = 1.0 / 600.0;
    World w({.threads = 1}, p);
    const std::vector<BodyDesc> two = {{kAutoId, {-5.0, 0.0}, {}, 0.5, 1.0}, {kAutoId, {5.0, 0.0}, {}, 0.5, 1.0}};
    ASSERT_TRUE(w.add_bodies(two).ok());
    double closest = 10.0, fastest = 0.0, after = 0.0;
    bool bounced = false;
    for (int s = 0; s < 60000; ++s) {
      w.step();
      const BodiesView v = w.bodies();
      const double d = v.x[1] - v.x[0], u = v.vx[1] - v.vx[0];
      closest = std::min(closest, d);
      if (!bounced) {
        fastest = std::max(fastest, -u);
        if (u > 0.0) bounced = true;
      } else {
        after = std::max(after, d);
        if (u < 0.0) break;  // at the top of the bounce
      }
    }
    ASSERT_TRUE(bounced);
    EXPECT_NEAR(fastest, std::sqrt(3.6), 2e-3) << "approach speed at contact";
    EXPECT_NEAR(after, 1.0 / 0.775, 5e-3) << "height of the bounce";
    EXPECT_GT(closest, 1.0 - 0.02) << "the bodies sank into each other";
  }
}

// A small ring of colliding particles around a heavy body under mutual
// gravity: with the continuous solver no two bodies ever overlap (it sees the
// drift between the kicks, which is straight); with the discrete one they
// overlap no more than its speculative contacts allow.
TEST(Gravity, ARingOfCollidingParticlesKeepsEveryBodyOutOfEveryOther) {
  for (const Solver solver : {Solver::kContinuous, Solver::kDiscrete}) {
    SCOPED_TRACE(to_string(solver));
    Params p = nbody_params(GravityMethod::kTree, 0.05);
    p.solver = solver;
    p.restitution = 0.5;
    World w({.threads = 2}, p);
    std::vector<BodyDesc> bodies = {{kAutoId, {0.0, 0.0}, {}, 2.0, 5000.0}};
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    // A dense annulus 12..16 m on circular orbits, radii 0.2: spaced on a
    // polar grid so none overlaps at the start.
    for (int ring = 0; ring < 8; ++ring) {
      const double r = 12.0 + 0.5 * ring;
      const int n = static_cast<int>(2.0 * std::numbers::pi * r / 0.5);
      for (int k = 0; k < n; ++k) {
        const double phi = 2.0 * std::numbers::pi * (k + 0.5 * (ring % 2)) / n;
        const double v = std::sqrt(5000.0 / r) * (1.0 + 0.02 * (u(rng) - 0.5));
        bodies.push_back({kAutoId, {r * std::cos(phi), r * std::sin(phi)}, {-v * std::sin(phi), v * std::cos(phi)},
                          0.2, 0.1});
      }
    }
    ASSERT_TRUE(w.add_bodies(bodies).ok());
    double worst = 0.0;
    std::uint64_t collisions = 0;
    for (int s = 0; s < 240; ++s) {
      w.step();
      collisions += w.stats().collisions;
      if (s % 10 == 9) worst = std::max(worst, measure_overlap(w.bodies()).max);
    }
    std::printf("  %s: %llu collisions, worst overlap %.3g r\n", to_string(solver),
                static_cast<unsigned long long>(collisions), worst);
    EXPECT_GT(collisions, 100u) << "the ring's particles should collide";
    EXPECT_EQ(w.size(), bodies.size());
    EXPECT_LT(worst, solver == Solver::kContinuous ? 1e-6 : 0.1);
  }
}

TEST(Gravity, DirectSummationConservesMomentumAndEnergy) {
  // A cold disc starting to collapse, with a step short enough for its
  // closest encounters (softening 0.2 m; at dt 1/60 and softening 0.05 the
  // collapse's encounters cost leapfrog its accuracy, not its stability).
  Params p = nbody_params(GravityMethod::kDirect, 0.2);
  p.substeps = 1;
  p.dt = 1.0 / 600.0;
  World w({.threads = 2}, p);
  ASSERT_TRUE(w.add_bodies(disc(400, 20.0, 7, 0.1)).ok());
  const Vec2 p0 = w.stats().momentum;
  const double e0 = w.stats().kinetic_energy + w.stats().potential_energy;
  ASSERT_LT(w.stats().potential_energy, 0.0);
  double worst = 0.0;
  for (int s = 0; s < 1200; ++s) {
    w.step();
    const double e = w.stats().kinetic_energy + w.stats().potential_energy;
    worst = std::max(worst, std::abs(e - e0) / std::abs(e0));
  }
  EXPECT_EQ(w.stats().collisions, 0u);
  // Momentum: each pair's forces are equal and opposite up to rounding.
  EXPECT_LT(std::abs(w.stats().momentum.x - p0.x), 1e-10);
  EXPECT_LT(std::abs(w.stats().momentum.y - p0.y), 1e-10);
  // Energy: leapfrog's bounded oscillation, no drift.
  EXPECT_LT(worst, 1e-4) << "relative total energy error";
}

TEST(Gravity, TreeForcesMatchDirectSummation) {
  // Uniform disc.
  ForceError e = tree_error(disc(20000, 100.0, 3), 0.5, 0.05);
  std::printf("  uniform disc: p50 %.2e p99 %.2e max %.2e\n", e.p50, e.p99, e.max);
  EXPECT_LE(e.p50, 1e-3);
  EXPECT_LE(e.p99, 1e-2);
  // Clustered: two dense clumps far apart and a sparse halo.
  std::vector<BodyDesc> clumps = disc(8000, 1.0, 4);
  for (auto& b : clumps) b.position.x += 50.0;
  std::vector<BodyDesc> other = disc(8000, 2.0, 5);
  for (auto& b : other) b.position.x -= 50.0;
  clumps.insert(clumps.end(), other.begin(), other.end());
  std::vector<BodyDesc> halo = disc(4000, 200.0, 6);
  clumps.insert(clumps.end(), halo.begin(), halo.end());
  e = tree_error(clumps, 0.5, 0.05);
  std::printf("  clumps + halo: p50 %.2e p99 %.2e max %.2e\n", e.p50, e.p99, e.max);
  // (Bodies inside a dense clump feel nearly cancelling pulls, so their
  // relative errors are larger; measured 7.7e-4 / 1.05e-2.)
  EXPECT_LE(e.p50, 1e-3);
  EXPECT_LE(e.p99, 1.5e-2);
  // Very spread: a tight cluster and a few bodies a million times farther,
  // one of them alone far from everything; two coincident bodies (softened).
  std::vector<BodyDesc> spread = disc(5000, 1.0, 8);
  spread.push_back({kAutoId, {1e6, 0.0}, {}, 1e-4, 1.0});
  spread.push_back({kAutoId, {-3e5, 8e5}, {}, 1e-4, 1.0});
  spread.push_back({kAutoId, {0.25, 0.25}, {}, 1e-4, 1.0});
  spread.push_back({kAutoId, {0.25, 0.25}, {}, 1e-4, 1.0});
  e = tree_error(spread, 0.5, 0.05);
  std::printf("  spread 1e6:1: p50 %.2e p99 %.2e max %.2e\n", e.p50, e.p99, e.max);
  // (The cluster is 5000 bodies in a unit disc; measured 1.1e-3 / 1.7e-2.)
  EXPECT_LE(e.p50, 1.5e-3);
  EXPECT_LE(e.p99, 2.5e-2);
  // The tree sums in float where it can: extreme units (a disc 1e8 m wide of
  // 1e29 kg bodies, unsoftened) and pairs closer than float can tell apart
  // (which send their group to double) must still match direct summation.
  std::vector<BodyDesc> huge = disc(4000, 1e8, 12);
  for (auto& b : huge) b.mass = 1e29;
  huge.push_back({kAutoId, {3e7, 1e7}, {}, 1e-4, 1e29});
  huge.push_back({kAutoId, {3e7 + 1e-3, 1e7}, {}, 1e-4, 1e29});
  e = tree_error(huge, 0.5, 0.0);
  std::printf("  1e8 m, 1e29 kg, a pair 1e-3 m apart: p50 %.2e p99 %.2e max %.2e\n", e.p50, e.p99, e.max);
  EXPECT_LE(e.p50, 1e-3);
  EXPECT_LE(e.p99, 1e-2);
  EXPECT_TRUE(std::isfinite(e.max));
  std::vector<BodyDesc> tiny = disc(4000, 1e-6, 13);
  for (auto& b : tiny) b.mass = 1e-20;
  e = tree_error(tiny, 0.5, 0.0);
  std::printf("  1e-6 m, 1e-20 kg: p50 %.2e p99 %.2e max %.2e\n", e.p50, e.p99, e.max);
  EXPECT_LE(e.p50, 1e-3);
  EXPECT_LE(e.p99, 1e-2);
  // A smaller opening angle is more accurate.
  EXPECT_LT(tree_error(disc(5000, 100.0, 9), 0.3, 0.05).p99, tree_error(disc(5000, 100.0, 9), 0.7, 0.05).p99);
}

TEST(Gravity, SameBitsForAnyThreadCountAndInsertionOrder) {
  for (const GravityMethod method : {GravityMethod::kDirect, GravityMethod::kTree}) {
    std::vector<BodyDesc> bodies = disc(3000, 60.0, 11, 0.1);
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      bodies[i].id = static_cast<BodyId>(i + 1);
      bodies[i].radius = 0.25;
    }
    std::vector<std::uint64_t> hashes;
    for (const int threads : {1, 2, 3, 8}) {
      std::vector<BodyDesc> order = bodies;
      if (threads == 3) std::shuffle(order.begin(), order.end(), std::mt19937(5));
      World w({.threads = threads}, nbody_params(method, 0.05));
      ASSERT_TRUE(w.add_bodies(order).ok());
      for (int s = 0; s < 30; ++s) w.step();
      hashes.push_back(w.state_hash());
    }
    for (const std::uint64_t h : hashes) EXPECT_EQ(h, hashes[0]) << to_string(method);
  }
}

// From 16 384 bodies the tree is built in parallel (its top on one thread,
// the subtrees as tasks): still the same bits for any thread count.
TEST(Gravity, ALargeTreeBuiltInParallelGivesTheSameBits) {
  std::vector<BodyDesc> bodies = disc(20000, 141.0, 21, 0.1);
  for (auto& b : bodies) b.radius = 0.25;
  std::vector<std::uint64_t> hashes;
  for (const int threads : {1, 3, 8}) {
    World w({.threads = threads}, nbody_params(GravityMethod::kTree, 0.05));
    ASSERT_TRUE(w.add_bodies(bodies).ok());
    for (int s = 0; s < 3; ++s) w.step();
    hashes.push_back(w.state_hash());
  }
  EXPECT_EQ(hashes[1], hashes[0]);
  EXPECT_EQ(hashes[2], hashes[0]);
}

TEST(Gravity, BadParametersAreRefusedWithTheFieldNamed) {
  World w({.threads = 1}, nbody_params(GravityMethod::kTree, 0.05));
  ASSERT_TRUE(w.add_bodies(disc(10, 5.0, 1)).ok());
  const std::uint64_t before = w.state_hash();
  struct Case {
    void (*edit)(Params&);
    const char* field;
  };
  const Case cases[] = {
      {[](Params& p) { p.mutual.g = std::nan(""); }, "mutual.g"},
      {[](Params& p) { p.mutual.g = 0.0; }, "mutual.g"},
      {[](Params& p) { p.mutual.g = 2e6; }, "mutual.g"},
      {[](Params& p) { p.mutual.softening = -1.0; }, "mutual.softening"},
      {[](Params& p) { p.mutual.softening = INFINITY; }, "mutual.softening"},
      {[](Params& p) { p.mutual.theta = 0.0; }, "mutual.theta"},
      {[](Params& p) { p.mutual.theta = 1.6; }, "mutual.theta"},
      {[](Params& p) { p.mutual.method = static_cast<GravityMethod>(7); }, "mutual.method"},
  };
  for (const Case& c : cases) {
    Params p = w.params();
    c.edit(p);
    const Status st = w.set_params(p);
    EXPECT_FALSE(st.ok()) << c.field;
    EXPECT_NE(st.message().find(c.field), std::string::npos) << st.message();
  }
  EXPECT_EQ(w.params().mutual.theta, 0.5);
  EXPECT_EQ(w.state_hash(), before);
  GravityMethod m{};
  EXPECT_TRUE(parse_gravity_method("tree", &m));
  EXPECT_EQ(m, GravityMethod::kTree);
  EXPECT_FALSE(parse_gravity_method("fmm", &m));
  // auto: direct below the measured crossover, the tree from it.
  MutualGravity g;
  EXPECT_EQ(detail::resolve_method(g, detail::kAutoTreeFrom - 1), GravityMethod::kDirect);
  EXPECT_EQ(detail::resolve_method(g, detail::kAutoTreeFrom), GravityMethod::kTree);
  g.method = GravityMethod::kDirect;
  EXPECT_EQ(detail::resolve_method(g, 1000000), GravityMethod::kDirect);
}

}  // namespace
}  // namespace carom
