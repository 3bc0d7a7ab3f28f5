// The continuous solver: exact times of impact, events in time order within
// each step. Textbook outcomes, no tunnelling (where the discrete solver
// misses), conservation over a million collisions, determinism with exactly
// simultaneous impacts, the collapse guard on an inelastic pile, the event
// budget, and the all-pairs reference giving the same bits.

#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "carom/world.hpp"
#include "continuous/time_of_impact.hpp"
#include "support/scenes.hpp"

namespace carom {
namespace {

using test::Rng;

Params continuous_params(bool walled = false) {
  Params p = test::open_params();
  p.solver = Solver::kContinuous;
  p.bounds.walled = walled;
  return p;
}

BodyDesc desc(BodyId id, Vec2 p, Vec2 v, double r = 0.5, double m = 1.0) {
  BodyDesc d;
  d.id = id;
  d.position = p;
  d.velocity = v;
  d.radius = r;
  d.mass = m;
  return d;
}

BodyState state(const World& w, BodyId id) {
  BodyState s;
  EXPECT_TRUE(w.body(id, &s).ok());
  return s;
}

double kinetic(const World& w) {
  const BodiesView v = w.bodies();
  long double ke = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    ke += 0.5L * v.mass[i] *
          (static_cast<long double>(v.vx[i]) * v.vx[i] + static_cast<long double>(v.vy[i]) * v.vy[i]);
  return static_cast<double>(ke);
}

struct Momentum {
  long double x = 0, y = 0, scale = 0;  // scale: sum of m |v|
};
Momentum momentum(const World& w) {
  const BodiesView v = w.bodies();
  Momentum p;
  for (std::size_t i = 0; i < v.size(); ++i) {
    p.x += static_cast<long double>(v.mass[i]) * v.vx[i];
    p.y += static_cast<long double>(v.mass[i]) * v.vy[i];
    p.scale += static_cast<long double>(v.mass[i]) * std::hypot(v.vx[i], v.vy[i]);
  }
  return p;
}

// Worst overlap over every pair, as a fraction of the smaller radius (0 if
// none), brute force.
double worst_overlap(const World& w) {
  const BodiesView v = w.bodies();
  double worst = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j) {
      const double d = std::hypot(v.x[j] - v.x[i], v.y[j] - v.y[i]);
      const double depth = v.radius[i] + v.radius[j] - d;
      if (depth > 0) worst = std::max(worst, depth / std::min(v.radius[i], v.radius[j]));
    }
  return worst;
}

TEST(Continuous, SelectedByNameAndParams) {
  Solver s = Solver::kDiscrete;
  ASSERT_TRUE(parse_solver("continuous", &s));
  EXPECT_EQ(s, Solver::kContinuous);
  EXPECT_STREQ(to_string(Solver::kContinuous), "continuous");
  World w({}, Params{});
  Params p = w.params();
  p.solver = Solver::kContinuous;
  ASSERT_TRUE(w.set_params(p).ok());
  EXPECT_EQ(w.params().solver, Solver::kContinuous);
}

// --- time of impact -------------------------------------------------------------

TEST(Continuous, TimeOfImpactMatchesAnalytic) {
  using detail::time_of_impact;
  // Head on: gap 9 closing at 2.
  EXPECT_EQ(time_of_impact(10.0, 0.0, -2.0, 0.0, 1.0), 4.5);
  // Offset by h: contact when the x distance is sqrt(sigma^2 - h^2).
  EXPECT_NEAR(time_of_impact(10.0, 0.6, -2.0, 0.0, 1.0), (10.0 - 0.8) / 2.0, 1e-15);
  // Touching or overlapping and approaching: now. Separating or missing: never.
  EXPECT_EQ(time_of_impact(1.0, 0.0, -1.0, 0.0, 1.0), 0.0);
  EXPECT_EQ(time_of_impact(0.5, 0.0, -1.0, 0.0, 1.0), 0.0);
  EXPECT_EQ(time_of_impact(1.0, 0.0, 1.0, 0.0, 1.0), -1.0);
  EXPECT_EQ(time_of_impact(10.0, 1.5, -2.0, 0.0, 1.0), -1.0);
  EXPECT_EQ(time_of_impact(10.0, 0.0, 0.0, 0.0, 1.0), -1.0);

  // Random impacts built backwards from a known contact: relative position
  // sigma (cos a, sin a) at time T, an approaching relative velocity; the
  // first root must be T to 1e-12 relative, including nearly grazing and
  // nearly touching starts and huge scale differences.
  Rng rng(5);
  double worst = 0.0;
  for (int k = 0; k < 100000; ++k) {
    const double sigma = std::pow(10.0, rng.uniform(-5.0, 5.0));
    const double a = rng.uniform(0.0, 2.0 * std::numbers::pi);
    const double nx = std::cos(a), ny = std::sin(a);
    const double speed = std::pow(10.0, rng.uniform(-3.0, 6.0));
    // Approach angle to the normal up to 89.9 degrees (nearly grazing).
    const double off = rng.uniform(-1.569, 1.569);
    const double dvx = -speed * (nx * std::cos(off) - ny * std::sin(off));
    const double dvy = -speed * (nx * std::sin(off) + ny * std::cos(off));
    const double t = sigma / speed * std::pow(10.0, rng.uniform(-6.0, 3.0));
    const double dpx = sigma * nx - dvx * t, dpy = sigma * ny - dvy * t;
    const double got = time_of_impact(dpx, dpy, dvx, dvy, sigma);
    ASSERT_GE(got, 0.0) << k;
    // The start itself is rounded (by eps |dp|): the time is determined no
    // better than that over the normal approach speed. Within that, and
    // within 1e-12 of the time, whatever the conditioning.
    const double eps = std::numeric_limits<double>::epsilon();
    const double given = eps * std::hypot(dpx, dpy) / (speed * std::cos(off));
    worst = std::max(worst, std::abs(got - t) / (1e-12 * t + 4.0 * given));
  }
  EXPECT_LT(worst, 1.0);
}

TEST(Continuous, TimeOfImpactInTheWorldMatchesAnalytic) {
  // Two bodies head on and one oblique: where they end after one step gives
  // the time of impact; compare with the analytic value.
  Rng rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const double dt = 1.0 / 60.0;
    const double gap = rng.uniform(0.01, 1.0), v = rng.uniform(150.0, 300.0), h = rng.uniform(0.0, 0.9);
    World w({.max_bodies = 16, .threads = 1}, continuous_params());
    ASSERT_TRUE(w.add_body(desc(1, {0.0, 0.0}, {v, 0.0})).ok());
    ASSERT_TRUE(w.add_body(desc(2, {1.0 + gap, h}, {0.0, 0.0})).ok());
    w.step();
    ASSERT_EQ(w.stats().collisions, 1u);
    // Contact when body 1 has moved x = 1 + gap - sqrt(1 - h^2).
    const double toi = (1.0 + gap - std::sqrt(1.0 - h * h)) / v;
    ASSERT_LT(toi, dt);
    const BodyState b = state(w, 2);
    // Body 2 leaves the contact at toi along the normal: it has moved
    // |v2| (dt - toi); reconstruct toi from where it ended.
    const double moved = std::hypot(b.position.x - (1.0 + gap), b.position.y - h);
    const double got = dt - moved / std::hypot(b.velocity.x, b.velocity.y);
    EXPECT_NEAR(got, toi, 1e-12 * dt) << "trial " << trial;
  }
}

// --- textbook outcomes -------------------------------------------------------------

TEST(Continuous, TwoBodiesHeadOnMatchTextbook) {
  Rng rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const double ma = rng.uniform(0.1, 10.0), mb = rng.uniform(0.1, 10.0);
    const double va = rng.uniform(15.0, 50.0), vb = rng.uniform(-50.0, 0.0);
    const double e = trial % 2 ? 1.0 : rng.uniform(0.0, 1.0);
    Params p = continuous_params();
    p.restitution = e;
    World w({.max_bodies = 16, .threads = 1}, p);
    ASSERT_TRUE(w.add_body(desc(1, {0.0, 0.0}, {va, 0.0}, 0.5, ma)).ok());
    ASSERT_TRUE(w.add_body(desc(2, {1.2, 0.0}, {vb, 0.0}, 0.5, mb)).ok());
    w.step();
    ASSERT_EQ(w.stats().collisions, 1u);
    const double u = vb - va;  // < 0
    const double want_a = va + (1.0 + e) * mb / (ma + mb) * u;
    const double want_b = vb - (1.0 + e) * ma / (ma + mb) * u;
    const BodyState a = state(w, 1), b = state(w, 2);
    EXPECT_NEAR(a.velocity.x, want_a, 1e-13 * (std::abs(va) + std::abs(vb)));
    EXPECT_NEAR(b.velocity.x, want_b, 1e-13 * (std::abs(va) + std::abs(vb)));
    EXPECT_EQ(a.velocity.y, 0.0);
    EXPECT_EQ(b.velocity.y, 0.0);
  }
  // Equal masses, elastic: the velocities swap exactly.
  World w({.max_bodies = 16, .threads = 1}, continuous_params());
  ASSERT_TRUE(w.add_body(desc(1, {0.0, 0.0}, {3.0, 0.0})).ok());
  ASSERT_TRUE(w.add_body(desc(2, {1.02, 0.0}, {-1.0, 0.0})).ok());
  w.step();
  EXPECT_EQ(state(w, 1).velocity.x, -1.0);
  EXPECT_EQ(state(w, 2).velocity.x, 3.0);
}

TEST(Continuous, ObliqueImpactKeepsTangentMomentumAndEnergy) {
  Rng rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    const double ma = rng.uniform(0.5, 5.0), mb = rng.uniform(0.5, 5.0);
    World w({.max_bodies = 16, .threads = 1}, continuous_params());
    const Vec2 va{rng.uniform(60.0, 120.0), rng.uniform(-5.0, 5.0)};
    ASSERT_TRUE(w.add_body(desc(1, {0.0, 0.0}, va, 0.5, ma)).ok());
    ASSERT_TRUE(w.add_body(desc(2, {1.1, rng.uniform(-0.8, 0.8)}, {0.0, 0.0}, 0.5, mb)).ok());
    const double ke0 = kinetic(w);
    w.step();
    if (w.stats().collisions == 0) continue;
    const BodyState a = state(w, 1), b = state(w, 2);
    EXPECT_NEAR(ma * a.velocity.x + mb * b.velocity.x, ma * va.x, 1e-12 * ma * 120);
    EXPECT_NEAR(ma * a.velocity.y + mb * b.velocity.y, ma * va.y, 1e-12 * ma * 120);
    EXPECT_NEAR(kinetic(w), ke0, 1e-12 * ke0);
    // b moves off along the contact normal only; a keeps its tangent part.
    const double len = std::hypot(b.velocity.x, b.velocity.y);
    const Vec2 n{b.velocity.x / len, b.velocity.y / len};
    EXPECT_NEAR(a.velocity.x * -n.y + a.velocity.y * n.x, va.x * -n.y + va.y * n.x, 1e-12 * 120);
  }
}

TEST(Continuous, NewtonsCradlePassesTheVelocityDownTheRow) {
  // Five touching balls and a sixth fired into them: the last one leaves with
  // its velocity, the others stop; exactly, for equal masses.
  for (const double gap : {0.0, 1e-3}) {
    World w({.max_bodies = 16, .threads = 2}, continuous_params());
    ASSERT_TRUE(w.add_body(desc(1, {-1.05, 0.0}, {6.0, 0.0})).ok());
    for (BodyId k = 0; k < 5; ++k)
      ASSERT_TRUE(w.add_body(desc(k + 2, {static_cast<double>(k) * (1.0 + gap), 0.0}, {0.0, 0.0})).ok());
    w.step();
    EXPECT_EQ(w.stats().collisions, 5u) << "gap " << gap;
    for (BodyId k = 1; k <= 5; ++k) EXPECT_EQ(state(w, k).velocity.x, 0.0) << "body " << k << " gap " << gap;
    EXPECT_EQ(state(w, 6).velocity.x, 6.0);
    EXPECT_EQ(worst_overlap(w), 0.0);
  }
}

// --- no tunnelling ------------------------------------------------------------------

struct Bullet {
  Params params;
  std::vector<BodyDesc> bodies;
  BodyId bullet = 0;
  BodyId first_in_path = 0;  // 0: the path is clear to the wall
};

// A crowd of radius-0.5 bodies at rest in a 100 x 40 box, and a body of
// radius 0.05 at the left fired right at 10^6 radii per step along a random
// line; the body its path meets first, found analytically.
Bullet make_bullet(std::uint64_t seed, Solver solver) {
  Rng rng(seed);
  Bullet s;
  s.params = continuous_params(true);
  s.params.solver = solver;
  s.params.bounds = {true, {0.0, 0.0}, {100.0, 40.0}};
  s.params.restitution = 0.0;
  BodyId id = 1;
  for (int cx = 0; cx < 12; ++cx)
    for (int cy = 0; cy < 14; ++cy) {
      const Vec2 p{40.0 + cx * 2.5 + rng.uniform(-0.5, 0.5), 3.0 + cy * 2.5 + rng.uniform(-0.5, 0.5)};
      s.bodies.push_back(desc(id++, p, {0.0, 0.0}, 0.5, 1.0));
    }
  const double r = 0.05, y0 = rng.uniform(1.0, 39.0);
  s.bullet = id;
  // Light: it knocks what it hits at a few m/s, not at its own speed.
  s.bodies.push_back(desc(id, {5.0, y0}, {1e6 * r * 60.0, 0.0}, r, 1e-6));
  double first = std::numeric_limits<double>::infinity();
  for (const BodyDesc& d : s.bodies) {
    if (d.id == s.bullet) continue;
    const double h = d.position.y - y0, reach = d.radius + r;
    if (std::abs(h) >= reach) continue;
    const double x = d.position.x - std::sqrt(reach * reach - h * h);
    if (x < first) {
      first = x;
      s.first_in_path = d.id;
    }
  }
  return s;
}

TEST(Continuous, FastBodyHitsWhatIsInItsWayEveryTime) {
  int clear = 0, blocked = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const Bullet s = make_bullet(seed, Solver::kContinuous);
    World w({.max_bodies = 1024, .threads = 2}, s.params);
    ASSERT_TRUE(w.add_bodies(s.bodies).ok());
    w.step();
    const StepStats& st = w.stats();
    ASSERT_FALSE(st.events_capped);
    // The bullet's first collision is with the body its path meets first.
    const CollisionEvent* first = nullptr;
    for (const CollisionEvent& e : w.events())
      if (e.a == s.bullet || e.b == s.bullet) {
        first = &e;
        break;
      }
    if (s.first_in_path == 0) {
      ++clear;
      EXPECT_GT(st.wall_collisions, 0u) << "seed " << seed << ": a clear path ends on the wall";
    } else {
      ++blocked;
      ASSERT_NE(first, nullptr) << "seed " << seed << ": the bullet went through body " << s.first_in_path;
      EXPECT_EQ(first->a == s.bullet ? first->b : first->a, s.first_in_path) << "seed " << seed;
    }
    EXPECT_LT(worst_overlap(w), 1e-9) << "seed " << seed;
    EXPECT_EQ(test::count_outside(w, s.params.bounds), 0u);
    // A few more steps: the scattered crowd stays out of each other.
    for (int k = 0; k < 5; ++k) w.step();
    EXPECT_LT(worst_overlap(w), 1e-9) << "seed " << seed;
    EXPECT_TRUE(test::all_finite(w));
  }
  EXPECT_GT(blocked, 30);
  EXPECT_GT(clear, 0);
}

TEST(Continuous, DiscreteSolverMissesTheSameBullet) {
  int blocked = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const Bullet s = make_bullet(seed, Solver::kDiscrete);
    if (s.first_in_path == 0) continue;
    ++blocked;
    World w({.max_bodies = 1024, .threads = 2}, s.params);
    ASSERT_TRUE(w.add_bodies(s.bodies).ok());
    w.step();
    for (const CollisionEvent& e : w.events())
      EXPECT_FALSE(e.a == s.bullet || e.b == s.bullet) << "seed " << seed << ": the discrete solver caught it";
    EXPECT_EQ(state(w, s.first_in_path).velocity, (Vec2{0.0, 0.0})) << "seed " << seed;
  }
  EXPECT_GT(blocked, 30);
}

// --- conservation ----------------------------------------------------------------------

// An elastic gas without walls (a dense cluster that slowly spreads): kinetic
// energy and momentum stay what they were, to rounding, over a million
// collisions.
TEST(Continuous, ElasticGasConservesEnergyAndMomentumOverAMillionCollisions) {
  test::GasSpec spec;
  spec.n = 20000;
  spec.rmin = spec.rmax = 0.25;
  spec.spacing = 0.627;  // area fraction 0.5
  spec.speed = 5.0;
  spec.seed = 17;
  std::vector<BodyDesc> bodies = test::make_gas(spec, nullptr);
  for (BodyDesc& d : bodies) d.mass = 1.0;
  World w({.max_bodies = 1u << 16, .threads = 2}, continuous_params(false));
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  const double ke0 = kinetic(w);
  const Momentum p0 = momentum(w);
  std::uint64_t collisions = 0;
  int steps = 0;
  while (collisions < 1000000 && steps < 2000) {
    w.step();
    collisions += w.stats().collisions;
    ++steps;
    ASSERT_FALSE(w.stats().events_capped);
  }
  ASSERT_GE(collisions, 1000000u);
  const Momentum p1 = momentum(w);
  const double ke1 = kinetic(w);
  EXPECT_LT(std::abs(ke1 - ke0) / ke0, 1e-12) << "after " << collisions << " collisions, " << steps << " steps";
  EXPECT_LT(static_cast<double>(std::abs(p1.x - p0.x) / p0.scale), 1e-13);
  EXPECT_LT(static_cast<double>(std::abs(p1.y - p0.y) / p0.scale), 1e-13);
  char drift[96];
  std::snprintf(drift, sizeof drift, "energy %.3g, momentum %.3g", std::abs(ke1 - ke0) / ke0,
                static_cast<double>(std::max(std::abs(p1.x - p0.x), std::abs(p1.y - p0.y)) / p0.scale));
  RecordProperty("collisions", std::to_string(collisions));
  RecordProperty("relative_drift", drift);
}

// Pressure on the walls of an elastic gas: the hard-disk equation of state
// (Henderson), P = (N kT / A) (1 + eta^2 / 8) / (1 - eta)^2 with kT = KE / N.
TEST(Continuous, WallPressureMatchesTheHardDiskEquationOfState) {
  test::GasSpec spec;
  spec.n = 4000;
  spec.rmin = spec.rmax = 0.25;
  spec.spacing = 1.0;
  spec.seed = 23;
  Params p = continuous_params(true);
  const std::vector<BodyDesc> bodies = test::make_gas(spec, &p.bounds);
  World w({.max_bodies = 1u << 14, .threads = 2}, p);
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  for (int k = 0; k < 60; ++k) w.step();  // let it forget the grid
  double impulse = 0.0;
  const int steps = 600;
  for (int k = 0; k < steps; ++k) {
    w.step();
    impulse += w.stats().wall_impulse;
  }
  const double side = p.bounds.max.x - p.bounds.min.x;
  const double area = side * side, perimeter = 4.0 * side;
  const double measured = impulse / (steps * p.dt * perimeter);
  const double n = static_cast<double>(w.size());
  const double eta = n * std::numbers::pi * 0.25 * 0.25 / area;
  const double kt = kinetic(w) / n;
  const double want = n * kt / area * (1.0 + eta * eta / 8.0) / ((1.0 - eta) * (1.0 - eta));
  EXPECT_NEAR(measured, want, 0.05 * want) << "eta " << eta;
}

// --- determinism ------------------------------------------------------------------------

// Clusters whose members hit a centre body at the same instant: squares (four
// from the axes: exactly simultaneous), triangles (three at 120 degrees) and
// head-on pairs meeting a third at rest; many of them, in a walled box, so
// the predictions split into parallel blocks.
std::vector<BodyDesc> make_clusters(Bounds* box) {
  std::vector<BodyDesc> out;
  BodyId id = 1;
  const int side = 46;
  for (int gx = 0; gx < side; ++gx)
    for (int gy = 0; gy < side; ++gy) {
      const Vec2 c{10.0 + gx * 10.0, 10.0 + gy * 10.0};
      out.push_back(desc(id++, c, {0.0, 0.0}));
      const int kind = (gx + gy) % 3;
      const double d = 2.0 + 0.25 * (gx % 4), v = 30.0;
      if (kind == 0) {
        for (const Vec2 u : {Vec2{1, 0}, Vec2{-1, 0}, Vec2{0, 1}, Vec2{0, -1}})
          out.push_back(desc(id++, c + d * u, -v * u));
      } else if (kind == 1) {
        for (int k = 0; k < 3; ++k) {
          const double a = 2.0 * std::numbers::pi * k / 3.0 + 0.5;
          const Vec2 u{std::cos(a), std::sin(a)};
          out.push_back(desc(id++, c + d * u, -v * u));
        }
      } else {
        out.push_back(desc(id++, c + Vec2{-d, 1.0}, {v, 0.0}));
        out.push_back(desc(id++, c + Vec2{d, 1.0}, {-v, 0.0}));
        out.push_back(desc(id++, c + Vec2{0.0, 1.0 + d}, {0.0, -v}));
      }
    }
  *box = {true, {0.0, 0.0}, {20.0 + side * 10.0, 20.0 + side * 10.0}};
  return out;
}

struct ClusterRun {
  std::uint64_t hash = 0, collisions = 0, processed = 0;
  double ke = 0;
  std::vector<CollisionEvent> events;
};

ClusterRun run_clusters(const std::vector<BodyDesc>& bodies, const Params& p, int threads, int steps) {
  World w({.max_bodies = 1u << 16, .threads = threads}, p);
  EXPECT_TRUE(w.add_bodies(bodies).ok());
  EXPECT_EQ(w.threads(), threads);
  ClusterRun r;
  for (int s = 0; s < steps; ++s) {
    w.step();
    r.events.insert(r.events.end(), w.events().begin(), w.events().end());
    r.collisions += w.stats().collisions;
    r.processed += w.stats().events_processed;
  }
  r.hash = w.state_hash();
  r.ke = w.stats().kinetic_energy;
  return r;
}

TEST(Continuous, SimultaneousImpactsGiveTheSameBitsForAnyThreadCountAndOrder) {
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 8);
  Params p = continuous_params(true);
  p.restitution = 0.7;
  std::vector<BodyDesc> bodies = make_clusters(&p.bounds);
  ASSERT_GT(bodies.size(), 8000u);
  const ClusterRun ref = run_clusters(bodies, p, 1, 40);
  EXPECT_GT(ref.collisions, bodies.size());
  ASSERT_EQ(ref.events.size(), ref.collisions);
  for (const int threads : {2, 4, 8}) {
    const ClusterRun r = run_clusters(bodies, p, threads, 40);
    EXPECT_EQ(r.hash, ref.hash) << threads << " threads";
    EXPECT_EQ(r.collisions, ref.collisions);
    EXPECT_EQ(r.processed, ref.processed);
    EXPECT_EQ(std::memcmp(&r.ke, &ref.ke, sizeof(double)), 0);
    ASSERT_EQ(r.events.size(), ref.events.size());
    for (std::size_t k = 0; k < r.events.size(); ++k)
      ASSERT_TRUE(r.events[k].a == ref.events[k].a && r.events[k].b == ref.events[k].b &&
                  r.events[k].point == ref.events[k].point && r.events[k].impulse == ref.events[k].impulse)
          << "event " << k << ", " << threads << " threads";
  }
  Rng rng(99);
  for (std::size_t i = bodies.size(); i > 1; --i) std::swap(bodies[i - 1], bodies[rng.below(i)]);
  const ClusterRun shuffled = run_clusters(bodies, p, 4, 40);
  EXPECT_EQ(shuffled.hash, ref.hash) << "shuffled insertion";
  EXPECT_EQ(shuffled.collisions, ref.collisions);
}

// The square: the centre is hit by four at the same instant; ordered by
// (time, lower id, higher id), the outcome is the same every time.
TEST(Continuous, FourAtOnceAreOrderedByIds) {
  for (int repeat = 0; repeat < 3; ++repeat) {
    World w({.max_bodies = 16, .threads = 1 + repeat}, continuous_params());
    ASSERT_TRUE(w.add_body(desc(1, {0.0, 0.0}, {0.0, 0.0})).ok());
    const Vec2 dirs[] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    for (BodyId k = 0; k < 4; ++k) ASSERT_TRUE(w.add_body(desc(k + 2, 2.0 * dirs[k], -100.0 * dirs[k])).ok());
    w.step();
    const auto ev = w.events();
    ASSERT_GE(ev.size(), 4u);
    // All four first contacts are at the same instant; the first processed is
    // the lowest id pair.
    EXPECT_EQ(ev[0].a, 1u);
    EXPECT_EQ(ev[0].b, 2u);
    EXPECT_LT(worst_overlap(w), 1e-12);
  }
}

// The all-pairs reference (every body a candidate of every other) gives the
// same bits as the swept-extent neighbour lists, requeries included: a bullet
// through a crowd, a mixed gas with fast bodies, a pile.
TEST(Continuous, NeighbourListsGiveTheSameBitsAsAllPairs) {
  auto compare = [](const Params& p, const std::vector<BodyDesc>& bodies, int steps, const char* what) {
    WorldConfig fast{.max_bodies = 1u << 16, .threads = 2};
    WorldConfig all = fast;
    all.continuous_all_pairs = true;
    World a(fast, p), b(all, p);
    ASSERT_TRUE(a.add_bodies(bodies).ok());
    ASSERT_TRUE(b.add_bodies(bodies).ok());
    std::uint64_t collisions = 0;
    for (int s = 0; s < steps; ++s) {
      a.step();
      b.step();
      ASSERT_EQ(a.state_hash(), b.state_hash()) << what << ": step " << s;
      ASSERT_EQ(a.stats().events_processed, b.stats().events_processed) << what;
      collisions += a.stats().collisions;
    }
    EXPECT_GT(collisions, 0u) << what;
  };
  std::uint64_t seed = 1;
  while (make_bullet(seed, Solver::kContinuous).first_in_path == 0) ++seed;
  const Bullet bullet = make_bullet(seed, Solver::kContinuous);
  compare(bullet.params, bullet.bodies, 20, "bullet");

  test::GasSpec spec;
  spec.n = 1500;
  spec.rmin = 0.1;
  spec.rmax = 0.8;
  spec.speed = 6.0;
  spec.seed = 31;
  Params p = continuous_params(true);
  std::vector<BodyDesc> gas = test::make_gas(spec, &p.bounds);
  for (std::size_t k = 0; k < gas.size(); k += 97) gas[k].velocity = {400.0, -150.0};  // a few very fast ones
  p.restitution = 0.9;
  p.gravity = {0.0, -3.0};
  compare(p, gas, 40, "mixed gas");

  test::PileSpec pile;
  pile.n = 400;
  pile.columns = 20;
  Params q = continuous_params(true);
  const std::vector<BodyDesc> piled = test::make_pile(pile, &q.bounds);
  q.gravity = {0.0, -10.0};
  q.restitution = 0.5;
  compare(q, piled, 60, "pile");
}

// --- the collapse guard and the budget ------------------------------------------------------

TEST(Continuous, InelasticPileUnderGravitySettlesWithBoundedEvents) {
  test::PileSpec spec;
  spec.n = 600;
  spec.columns = 30;
  spec.rmin = 0.45;
  spec.rmax = 0.55;
  spec.pitch = 1.15;
  spec.jitter_speed = 1.0;
  Params p = continuous_params(true);
  std::vector<BodyDesc> bodies = test::make_pile(spec, &p.bounds);
  p.bounds.max.y += 10.0;  // dropped from 5 m up
  for (BodyDesc& d : bodies) d.position.y += 5.0;
  p.gravity = {0.0, -10.0};
  p.restitution = 0.5;
  World w({.max_bodies = 1u << 12, .threads = 2}, p);
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  const double pe0 = test::potential_energy(w, 10.0, 0.0);
  const double n = static_cast<double>(w.size());
  std::uint64_t most = 0, late = 0;
  const int steps = 420;
  for (int s = 0; s < steps; ++s) {
    w.step();
    const StepStats& st = w.stats();
    ASSERT_FALSE(st.events_capped) << "step " << s;
    most = std::max(most, st.events_processed);
    if (s >= steps - 60) late += st.events_processed;
  }
  EXPECT_LT(static_cast<double>(most), 200.0 * n) << "events in the worst step";
  EXPECT_LT(static_cast<double>(late) / 60.0, 60.0 * n) << "events per step, settled";
  const double pe1 = test::potential_energy(w, 10.0, 0.0);
  const double ke = w.stats().kinetic_energy;
  // Settled: what is left moving is a jitter of the order of |g| dt per body,
  // against the energy the fall released.
  EXPECT_LT(ke, 1e-3 * (pe0 - pe1));
  const double gdt = 10.0 * p.dt;
  double mass = 0.0;
  for (const double m : w.bodies().mass) mass += m;
  EXPECT_LT(ke, 0.5 * mass * gdt * gdt) << "rms speed below |g| dt";
  EXPECT_TRUE(test::all_finite(w));
  EXPECT_EQ(test::count_outside(w, p.bounds), 0u);
  EXPECT_LT(worst_overlap(w), 1e-9);
}

TEST(Continuous, EventBudgetEndsTheStepAndIsReported) {
  test::GasSpec spec;
  spec.n = 2000;
  spec.rmin = spec.rmax = 0.25;
  spec.spacing = 0.627;
  spec.speed = 50.0;
  Params p = continuous_params(true);
  const std::vector<BodyDesc> bodies = test::make_gas(spec, &p.bounds);
  WorldConfig config{.max_bodies = 1u << 12, .threads = 2};
  config.continuous_events_per_body = 0;  // the budget is the fixed 4096
  World w(config, p);
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  w.step();
  EXPECT_TRUE(w.stats().events_capped);
  EXPECT_EQ(w.stats().events_processed, 4096u);
  EXPECT_EQ(w.stats().step, 1u);
  // Nothing overlaps, nothing left the box: the step ended where the events
  // stopped.
  EXPECT_LT(worst_overlap(w), 1e-9);
  EXPECT_EQ(test::count_outside(w, p.bounds), 0u);
  w.step();
  EXPECT_TRUE(test::all_finite(w));
}

// --- state ---------------------------------------------------------------------------------

// Nothing outlives a step: a world rebuilt from the bodies continues with
// the same bits.
TEST(Continuous, RebuiltWorldContinuesIdentically) {
  Params p = continuous_params(true);
  p.restitution = 0.8;
  p.gravity = {0.0, -4.0};
  p.linear_damping = 0.05;
  test::GasSpec spec;
  spec.n = 800;
  const std::vector<BodyDesc> bodies = test::make_gas(spec, &p.bounds);
  World a({.max_bodies = 1u << 12, .threads = 2}, p);
  ASSERT_TRUE(a.add_bodies(bodies).ok());
  for (int s = 0; s < 30; ++s) a.step();
  World b({.max_bodies = 1u << 12, .threads = 3}, p);
  const BodiesView v = a.bodies();
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_TRUE(b.add_body(desc(v.id[i], {v.x[i], v.y[i]}, {v.vx[i], v.vy[i]}, v.radius[i], v.mass[i])).ok());
  for (int s = 0; s < 60; ++s) {
    a.step();
    b.step();
    ASSERT_EQ(a.state_hash(), b.state_hash()) << "step " << s;
  }
}

}  // namespace
}  // namespace carom
