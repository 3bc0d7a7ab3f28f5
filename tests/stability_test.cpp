// Stability: a 10k-body pile under gravity settles with the default 4
// substeps, for both solvers, without NaNs, escapes, energy gain or visible
// overlap; once settled it stays put; and the Verlet solver never explodes at
// any setting a user can choose.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "carom/measure.hpp"
#include "carom/world.hpp"
#include "stages.hpp"
#include "support/scenes.hpp"

namespace carom {
namespace {

constexpr double kGravity = 10.0;

// A 52-row pile of 10 000 bodies of radius 0.45..0.55 m on a grid of pitch 1.2.
std::vector<BodyDesc> tall_pile(Bounds* box) {
  test::PileSpec spec;
  spec.n = 10000;
  spec.columns = 160;
  spec.rmin = 0.45;
  spec.rmax = 0.55;
  spec.pitch = 1.2;
  return test::make_pile(spec, box);
}

class Pile : public testing::TestWithParam<Solver> {};

TEST_P(Pile, SettlesInsideTheBoxWithoutOverlapAtTheDefaultSettings) {
  Bounds box;
  const std::vector<BodyDesc> bodies = tall_pile(&box);
  Params p;  // the default substeps and iterations
  p.solver = GetParam();
  p.bounds = box;
  p.gravity = {0.0, -kGravity};
  p.restitution = 0.3;
  World w({.max_bodies = 1u << 24, .threads = 2}, p);
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  ASSERT_EQ(w.size(), 10000u);

  // Everything the pile can ever turn into motion: its kinetic energy plus its
  // potential energy above the floor.
  const double e0 = w.stats().kinetic_energy + test::potential_energy(w, kGravity, box.min.y);
  ASSERT_GT(e0, 0.0);
  double peak = 0.0;
  constexpr int kSteps = 600;  // the fall takes about 150, the rest settles
  for (int s = 0; s < kSteps; ++s) {
    w.step();
    const double ke = w.stats().kinetic_energy;
    ASSERT_TRUE(std::isfinite(ke)) << "step " << s;
    ASSERT_LE(ke, e0) << "kinetic energy above the initial total at step " << s;
    peak = std::max(peak, ke);
    if (s % 50 == 0 || s + 1 == kSteps) {
      ASSERT_TRUE(test::all_finite(w)) << "step " << s;
      ASSERT_EQ(test::count_outside(w, box), 0u) << "step " << s;
    }
  }
  const double ke_end = w.stats().kinetic_energy;
  const OverlapStats overlap = measure_overlap(w.bodies());
  std::printf("  solver %s, %d substeps x %d: E0 %.6g, peak KE %.6g, final KE %.6g, overlap max %.3g%% mean %.3g%%\n",
              to_string(p.solver), p.substeps, p.iterations, e0, peak, ke_end, 100.0 * overlap.max,
              100.0 * overlap.mean);

  // The fall really happened, then died down: settled.
  EXPECT_GT(peak, 0.1 * e0);
  EXPECT_LT(ke_end, 1e-3 * e0);
  // At rest the pile must not visibly sink into itself (measured: 1.52% and
  // 0.16% for the discrete solver's soft contacts on 2026-12-06, 1.99% when
  // this bar was set; 2.43% at one soft pass a substep; most
  // pairs below 1%: the floor row under the whole pile's weight; 6.5% and
  // 0.63% for Verlet's push passes, short of the 2% issue 13 asks of it too).
  const bool discrete = GetParam() == Solver::kDiscrete;
  EXPECT_LT(overlap.max, discrete ? 0.02 : 0.07) << "max overlap " << 100.0 * overlap.max << "% of the smaller radius";
  EXPECT_LT(overlap.mean, discrete ? 0.002 : 0.01);
}

// A body resting on another under a load that the one soft spring lets sink
// in by about 0.22 r (gravity 10 000 m/s^2 stands in for the rows of a tall
// pile above a bottom corner). A deep contact is stiffer: omega times
// s = depth / 0.05 r, up to 2, so at rest depth * s^2 is about the one
// spring's depth, depth about (0.22 r (0.05 r)^2)^(1/3) = 0.08 r (0.09 r
// measured). Beside it the same stack with the stiffening off
// (allow_deep_stiffening). Both come to rest and stay there.
TEST(DeepContact, AHeavilyLoadedContactSinksInLessThanHalfAsFar) {
  auto settle = [](bool stiffen, double* depth, double* drift, double* ke) {
    detail::allow_deep_stiffening(stiffen);
    constexpr double r = 0.25;
    Params p;  // the default 4 substeps x 2 iterations
    p.bounds = {true, {0.0, 0.0}, {2.0, 4.0}};
    p.gravity = {0.0, -10000.0};
    p.restitution = 0.0;
    World w({.threads = 1}, p);
    ASSERT_TRUE(w.add_body({.id = 1, .position = {1.0, r}, .velocity = {0.0, 0.0}, .radius = r, .mass = 1.0}).ok());
    ASSERT_TRUE(w.add_body({.id = 2, .position = {1.0, 3.0 * r}, .velocity = {0.0, 0.0}, .radius = r, .mass = 1.0}).ok());
    auto gap = [&] {
      BodyState a, b;
      EXPECT_TRUE(w.body(1, &a).ok());
      EXPECT_TRUE(w.body(2, &b).ok());
      return (2.0 * r - std::hypot(b.position.x - a.position.x, b.position.y - a.position.y)) / r;
    };
    for (int s = 0; s < 300; ++s) w.step();
    const double at300 = gap();
    for (int s = 0; s < 100; ++s) w.step();
    *depth = gap();
    *drift = std::abs(*depth - at300);
    *ke = w.stats().kinetic_energy;
  };
  double soft = 0, soft_drift = 0, soft_ke = 0, stiff = 0, stiff_drift = 0, stiff_ke = 0;
  settle(false, &soft, &soft_drift, &soft_ke);
  settle(true, &stiff, &stiff_drift, &stiff_ke);
  detail::allow_deep_stiffening(true);
  std::printf("  one spring: depth %.4f r; stiffened: %.4f r\n", soft, stiff);
  EXPECT_GT(soft, 0.15) << "the load must sink the one spring deep enough to test the stiffening";
  EXPECT_LT(stiff, 0.5 * soft);
  EXPECT_GT(stiff, 0.05) << "deeper than where the stiffening starts: still a soft contact";
  for (double d : {soft_drift, stiff_drift}) EXPECT_LT(d, 1e-6) << "the stack still moves";
  for (double e : {soft_ke, stiff_ke}) EXPECT_LT(e, 1e-6) << "the stack is not at rest";
}

// A settled pile is at rest: over 1000 more steps (17 s) no body creeps,
// the pile neither boils nor drifts sideways. (A frictionless pile takes
// about 1500 steps to settle: it flows like a fluid until level.) The
// discrete solver's warm-started soft contacts only: Verlet's pile keeps
// simmering at a few cm/s (its energy bounded, see below).
TEST(PileAtRest, ASettledPileStaysPut) {
  test::PileSpec spec;
  spec.n = 3000;
  spec.columns = 60;
  spec.rmin = 0.45;
  spec.rmax = 0.55;
  spec.pitch = 1.2;
  Bounds box;
  const std::vector<BodyDesc> bodies = test::make_pile(spec, &box);
  Params p;
  p.bounds = box;
  p.gravity = {0.0, -kGravity};
  p.restitution = 0.3;
  World w({.max_bodies = 1u << 24, .threads = 2}, p);
  ASSERT_TRUE(w.add_bodies(bodies).ok());
  for (int s = 0; s < 1600; ++s) w.step();
  const std::vector<double> x0(w.bodies().x.begin(), w.bodies().x.end());
  const std::vector<double> y0(w.bodies().y.begin(), w.bodies().y.end());
  double ke_max = 0.0;
  for (int s = 0; s < 1000; ++s) {
    w.step();
    ke_max = std::max(ke_max, w.stats().kinetic_energy);
  }
  const BodiesView v = w.bodies();
  // Rattlers on the floor: a body on the floor that nothing rests on (every
  // body above it clear of it) is held by the floor alone, and a
  // frictionless floor lets it slide about its cage at mm/s (it kept what
  // settling left it). Physics, not creep: they count for the largest
  // move only.
  std::vector<bool> rattler(v.size(), false);
  std::size_t rattlers = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (y0[i] - v.radius[i] > box.min.y + 1e-3 * v.radius[i]) continue;
    bool loaded = false;
    for (std::size_t j = 0; j < v.size() && !loaded; ++j)
      loaded = y0[j] > y0[i] + 0.5 * v.radius[i] &&
               std::hypot(x0[j] - x0[i], y0[j] - y0[i]) < v.radius[i] + v.radius[j];
    rattler[i] = !loaded;
    rattlers += loaded ? 0 : 1;
  }
  std::vector<double> moved;
  double drift_x = 0.0, moved_max = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double m = std::hypot(v.x[i] - x0[i], v.y[i] - y0[i]) / v.radius[i];
    moved_max = std::max(moved_max, m);
    if (!rattler[i]) moved.push_back(m);
    drift_x += (v.x[i] - x0[i]) / static_cast<double>(v.size());
  }
  std::sort(moved.begin(), moved.end());
  const double moved_p999 = moved[moved.size() * 999 / 1000];
  std::printf("  most moved %.3g radii (99.9th percentile of the %zu bodies that are not rattlers on the floor %.3g; "
              "%zu rattlers), mean sideways drift %.3g m, peak KE %.3g J over 1000 steps\n",
              moved_max, moved.size(), moved_p999, rattlers, drift_x, ke_max);
  // The bulk does not creep (its 99.9th percentile 2e-5 and 9e-5 r in two
  // realizations, measured 2026-11-28, where the floor's 9 and 14 rattlers
  // moved up to 0.22 and 0.10 r; with them the percentile had been 0.026
  // and 0.064 r).
  EXPECT_LT(rattlers, v.size() / 100) << "a pile with so many loose bodies on its floor has not settled";
  EXPECT_LT(moved[moved.size() / 2], 1e-3) << "the pile creeps";
  EXPECT_LT(moved_p999, 0.005) << "the pile creeps";
  EXPECT_LT(moved_max, 0.25) << "a body crept " << moved_max << " radii";
  EXPECT_LT(std::abs(drift_x), 1e-3);
  // Boiling: 3000 bodies of ~0.8 kg at 1 cm/s would hold 0.12 J.
  EXPECT_LT(ke_max, 0.12);
}

INSTANTIATE_TEST_SUITE_P(BothSolvers, Pile, testing::Values(Solver::kDiscrete, Solver::kVerlet),
                         [](const testing::TestParamInfo<Solver>& info) { return std::string(to_string(info.param)); });

struct Setting {
  int substeps, iterations;
};
void PrintTo(const Setting& s, std::ostream* os) { *os << s.substeps << " x " << s.iterations; }

// Every substep and pass count a user can choose below 8 x 4, for both solvers.
auto every_setting() {
  return testing::Values(Setting{1, 1}, Setting{1, 2}, Setting{1, 4}, Setting{2, 1}, Setting{2, 2}, Setting{2, 4},
                         Setting{4, 1}, Setting{4, 2}, Setting{4, 4}, Setting{8, 1}, Setting{8, 2}, Setting{8, 4});
}
std::string setting_name(const testing::TestParamInfo<Setting>& info) {
  return std::to_string(info.param.substeps) + "x" + std::to_string(info.param.iterations);
}

// A 2000-body, 34-row pile falling into its box at a setting: the world, and
// everything it can ever turn into motion (kinetic plus potential energy
// above the floor).
struct SmallPile {
  Bounds box;  // members in this order: make() sets the box the world is made with
  std::vector<BodyDesc> bodies;
  World world;
  double energy0 = 0.0;
  SmallPile(Solver solver, Setting setting, double restitution, double jitter_speed, std::uint64_t seed = 7)
      : bodies(make(jitter_speed, seed, &box)), world({.threads = 2}, params(solver, setting, restitution, box)) {
    EXPECT_TRUE(world.add_bodies(bodies).ok());
    energy0 = energy();
  }
  double energy() const { return world.stats().kinetic_energy + test::potential_energy(world, kGravity, box.min.y); }

 private:
  static std::vector<BodyDesc> make(double jitter_speed, std::uint64_t seed, Bounds* box) {
    test::PileSpec spec;
    spec.n = 2000;
    spec.columns = 60;
    spec.rmin = 0.45;
    spec.rmax = 0.55;
    spec.pitch = 1.2;
    spec.jitter_speed = jitter_speed;
    spec.seed = seed;
    return test::make_pile(spec, box);
  }
  static Params params(Solver solver, Setting setting, double restitution, const Bounds& box) {
    Params p;
    p.solver = solver;
    p.substeps = setting.substeps;
    p.iterations = setting.iterations;
    p.bounds = box;
    p.gravity = {0.0, -kGravity};
    p.restitution = restitution;
    return p;
  }
};

class VerletAtEverySetting : public testing::TestWithParam<Setting> {};

// The Verlet solver at every setting: it may be loose at low settings, but the
// pile never gains energy and no two bodies ever come closer than half a
// radius (stacked on each other).
TEST_P(VerletAtEverySetting, NeverExplodesOrStacksBodies) {
  SmallPile pile(Solver::kVerlet, GetParam(), 0.5, 3.0);
  World& w = pile.world;
  double worst = 0.0;
  for (int s = 0; s < 300; ++s) {
    w.step();
    ASSERT_LE(pile.energy(), pile.energy0 * (1.0 + 1e-9)) << "energy gained at step " << s;
    if (s % 20 == 19) worst = std::max(worst, measure_overlap(w.bodies()).max);
  }
  std::printf("  verlet %d x %d: worst overlap %.3g of the smaller radius, final KE %.3g J\n", GetParam().substeps,
              GetParam().iterations, worst, w.stats().kinetic_energy);
  EXPECT_LT(worst, 1.5) << "two bodies closer than half a radius";
  // Issue 13's bar for the default substeps at a single pass.
  if (GetParam().substeps == 4 && GetParam().iterations == 1) {
    EXPECT_LE(worst, 0.25);
  }
}

INSTANTIATE_TEST_SUITE_P(Substeps1To8, VerletAtEverySetting, every_setting(), setting_name);

class DiscreteAtEverySetting : public testing::TestWithParam<Setting> {};

// The discrete solver at every setting: a pile never gains energy, and it
// settles within 800 steps (a frictionless pile flows until level; these
// are at rest by step 700).
//
// Three piles (three seeds), because whether a few bodies of a frictionless
// pile still slide in its last 100 steps is chaos: measured 2026-11-28 over
// 8 seeds x these 12 settings, 5 of the 96 piles of the then solver (whose
// one pile, seed 7, passed at every setting) had a late slide of 2-9 J, and
// 1 to 7 of 96 for each variant of the cascade rule tried. One pile a
// setting made any change to the solver's bits fail here about half the
// time by luck. Boiling is not luck: it keeps every pile moving (15-1 700 J
// before the stiffness followed the passes; 8 x 2 then simmered at 1-8 J).
TEST_P(DiscreteAtEverySetting, SettlesWithoutBoiling) {
  int calm = 0;
  double worst = 0.0;
  for (const std::uint64_t seed : {7u, 8u, 9u}) {
    SmallPile pile(Solver::kDiscrete, GetParam(), 0.3, 0.1, seed);
    World& w = pile.world;
    std::vector<double> late;  // kinetic energy over the last 100 steps
    constexpr int kSteps = 800;
    for (int s = 0; s < kSteps; ++s) {
      w.step();
      ASSERT_LE(pile.energy(), pile.energy0 * (1.0 + 1e-9)) << "energy gained at step " << s << ", seed " << seed;
      if (s >= kSteps - 100) late.push_back(w.stats().kinetic_energy);
    }
    std::sort(late.begin(), late.end());
    const double late_median = late[late.size() / 2];
    const OverlapStats overlap = measure_overlap(w.bodies());
    std::printf("  discrete %d x %d, seed %d: KE over the last 100 steps median %.3g J, peak %.3g J, overlap max %.3g "
                "mean %.3g\n",
                GetParam().substeps, GetParam().iterations, static_cast<int>(seed), late_median, late.back(),
                overlap.max, overlap.mean);
    // Settled, not boiling: 2 J is 2000 bodies of ~0.8 kg at 5 cm/s.
    calm += late_median < 2.0 ? 1 : 0;
    worst = std::max(worst, late_median);
    EXPECT_LT(overlap.max, 0.5) << "seed " << seed;
  }
  EXPECT_GE(calm, 2) << "the piles boil: at most one of three may still slide in its last 100 steps";
  EXPECT_LT(worst, 10.0) << "a pile boils (late slides measured at most 9 J)";
}

INSTANTIATE_TEST_SUITE_P(Substeps1To8, DiscreteAtEverySetting, every_setting(), setting_name);

}  // namespace
}  // namespace carom
