// Determinism: bit-identical worlds whatever the thread count and whatever
// the order bodies were added in, compared step by step (Jolt's determinism
// test) and against one golden hash (Box2D's test_determinism).

#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <optional>
#include <vector>

#include "carom/world.hpp"
#include "stages.hpp"
#include "support/scenes.hpp"

namespace carom {
namespace {

using test::Rng;

struct Gas {
  Params params;
  std::vector<BodyDesc> bodies;
};

// About 3000 bodies of mixed radii, fast, in a walled box, slightly
// inelastic, under some gravity: many collisions every step.
Gas make_gas_scene(Solver solver, std::uint32_t n = 3000, double rmin = 0.2, double spacing = 1.6) {
  test::GasSpec spec;
  spec.n = n;
  spec.rmin = rmin;
  spec.rmax = 0.7;
  spec.speed = 8.0;
  spec.spacing = spacing;
  spec.seed = 42;
  Gas g;
  g.bodies = test::make_gas(spec, &g.params.bounds);
  g.params.restitution = 0.9;
  g.params.gravity = {0.0, -2.0};
  g.params.solver = solver;
  g.params.substeps = 2;
  return g;
}

// 24 000 bodies of radius 0.45-0.55 in 200 columns, most neighbours
// overlapping, under gravity, restitution 0.5, 4 substeps: it bursts apart.
Gas make_compressed_pile() {
  test::PileSpec spec;
  spec.n = 24000;
  spec.columns = 200;
  spec.rmin = 0.45;
  spec.rmax = 0.55;
  spec.pitch = 0.98;  // most neighbours start overlapping
  Gas g;
  g.bodies = test::make_pile(spec, &g.params.bounds);
  g.params.gravity = {0.0, -10.0};
  g.params.restitution = 0.5;
  g.params.substeps = 4;
  return g;
}

// A world of `bodies` on `threads` threads (every step), stepped `steps` times from the start.
World stepped_world(const Params& params, const std::vector<BodyDesc>& bodies, int threads, std::uint64_t steps) {
  World w({.max_bodies = 1u << 16, .threads = threads, .adapt_threads = false}, params);
  EXPECT_TRUE(w.add_bodies(bodies).ok());
  for (std::uint64_t s = 0; s < steps; ++s) w.step();
  return w;
}

// Every step on `threads` (not one where one measures faster): these tests
// are of the parallel paths.
World make_world(const Gas& g, int threads) {
  World w({.max_bodies = 1u << 24, .threads = threads, .adapt_threads = false}, g.params);
  EXPECT_TRUE(w.add_bodies(g.bodies).ok());
  return w;
}

// A pile of n bodies (60 columns, radii in [rmin, rmax], `pitch` apart)
// falling into its box, e 0.5.
Gas make_falling_pile(std::size_t n, double rmin = 0.45, double rmax = 0.55, double pitch = 1.2) {
  test::PileSpec spec;
  spec.n = n;
  spec.columns = 60;
  spec.rmin = rmin;
  spec.rmax = rmax;
  spec.pitch = pitch;
  Gas g;
  g.bodies = test::make_pile(spec, &g.params.bounds);
  g.params.gravity = {0.0, -10.0};
  g.params.restitution = 0.5;
  return g;
}

// Whether two worlds recorded the same events of their last step, bit for bit.
testing::AssertionResult same_events(const World& a, const World& b) {
  const auto ea = a.events(), eb = b.events();
  if (ea.size() != eb.size())
    return testing::AssertionFailure() << ea.size() << " events against " << eb.size();
  for (std::size_t k = 0; k < ea.size(); ++k)
    if (!(ea[k].a == eb[k].a && ea[k].b == eb[k].b && ea[k].point == eb[k].point &&
          ea[k].impulse == eb[k].impulse && ea[k].substep == eb[k].substep))
      return testing::AssertionFailure() << "event " << k << " differs";
  return testing::AssertionSuccess();
}

struct Outcome {
  std::uint64_t hash = 0;
  std::uint64_t collisions = 0;
  double kinetic_energy = 0;
  Vec2 momentum;
};

Outcome run(World& w, int steps) {
  Outcome o;
  for (int s = 0; s < steps; ++s) {
    w.step();
    o.collisions += w.stats().collisions;
  }
  o.hash = w.state_hash();
  o.kinetic_energy = w.stats().kinetic_energy;
  o.momentum = w.stats().momentum;
  return o;
}

void expect_same(const Outcome& got, const Outcome& want, const std::string& what) {
  EXPECT_EQ(got.hash, want.hash) << what;
  EXPECT_EQ(got.collisions, want.collisions) << what;
  EXPECT_EQ(std::memcmp(&got.kinetic_energy, &want.kinetic_energy, sizeof(double)), 0) << what;
  EXPECT_EQ(got.momentum, want.momentum) << what;
}

// TBB caps workers at the hardware concurrency; lift the cap so that 8
// threads are 8 threads even on a 2-core machine.
class Determinism : public testing::TestWithParam<Solver> {
 protected:
  tbb::global_control allow_{tbb::global_control::max_allowed_parallelism, 8};
};

constexpr int kSteps = 500;

TEST_P(Determinism, HashIsIndependentOfThreadCount) {
  const Gas g = make_gas_scene(GetParam());
  World w1 = make_world(g, 1);
  const std::uint64_t start = w1.state_hash();
  const Outcome ref = run(w1, kSteps);
  // The run must have done something for the comparison to mean anything.
  EXPECT_NE(ref.hash, start);
  EXPECT_GT(ref.collisions, 10000u);
  for (const int threads : {2, 3, 4, 8}) {
    World w = make_world(g, threads);
    ASSERT_EQ(w.threads(), threads);
    EXPECT_EQ(w.state_hash(), start);
    expect_same(run(w, kSteps), ref, "threads " + std::to_string(threads));
  }
}

TEST_P(Determinism, HashIsIndependentOfInsertionOrder) {
  const Gas g = make_gas_scene(GetParam());
  World ordered = make_world(g, 2);
  const std::uint64_t start = ordered.state_hash();
  const Outcome ref = run(ordered, kSteps);

  std::vector<BodyDesc> shuffled = g.bodies;
  Rng rng(7);
  for (std::size_t i = shuffled.size(); i > 1; --i) std::swap(shuffled[i - 1], shuffled[rng.below(i)]);
  ASSERT_NE(shuffled[0].id, g.bodies[0].id);

  // One by one, in random order.
  World one_by_one({.max_bodies = 1u << 24, .threads = 2}, g.params);
  for (const BodyDesc& d : shuffled) ASSERT_TRUE(one_by_one.add_body(d).ok());
  EXPECT_EQ(one_by_one.state_hash(), start);
  EXPECT_EQ(one_by_one.next_id(), ordered.next_id());
  expect_same(run(one_by_one, kSteps), ref, "add_body in shuffled order");

  // One batch, in random order.
  World batch({.max_bodies = 1u << 24, .threads = 2}, g.params);
  ASSERT_TRUE(batch.add_bodies(shuffled).ok());
  EXPECT_EQ(batch.state_hash(), start);
  expect_same(run(batch, kSteps), ref, "add_bodies in shuffled order");
}

// 1 thread against 4 after every step, `steps` steps: the first step that
// differs is named (hash, stats, events). Counts the contacts the 4-thread
// world made while relax ran, and the most rounds of a substep.
struct Agreed {
  std::uint64_t ahead = 0;
  std::uint32_t most_rounds = 0;
};
void step_one_and_four(World& w1, World& w4, int steps, Agreed& out) {
  for (int s = 0; s < steps; ++s) {
    w1.step();
    const std::uint64_t before = detail::contacts_made_ahead(false) + detail::contacts_made_ahead(true);
    w4.step();
    out.ahead += detail::contacts_made_ahead(false) + detail::contacts_made_ahead(true) - before;
    ASSERT_EQ(w1.state_hash(), w4.state_hash()) << "first difference after step " << s + 1;
    const StepStats &a = w1.stats(), &b = w4.stats();
    ASSERT_EQ(a.contacts, b.contacts) << "step " << s + 1;
    ASSERT_EQ(a.collisions, b.collisions) << "step " << s + 1;
    ASSERT_EQ(a.candidate_pairs, b.candidate_pairs) << "step " << s + 1;
    ASSERT_EQ(a.rounds, b.rounds) << "step " << s + 1;
    ASSERT_EQ(a.pair_rebuilds, b.pair_rebuilds) << "step " << s + 1;
    ASSERT_EQ(a.momentum, b.momentum) << "step " << s + 1;
    ASSERT_EQ(std::memcmp(&a.kinetic_energy, &b.kinetic_energy, sizeof(double)), 0) << "step " << s + 1;
    ASSERT_TRUE(same_events(w1, w4)) << "at step " << s + 1;
    out.most_rounds = std::max(out.most_rounds, a.rounds);
  }
}

// On more than one thread a small world's next contacts are made while relax
// runs (World's step), and must carry the same warm values.
TEST_P(Determinism, OneAndFourThreadsAgreeAfterEveryStep) {
  const Gas g = make_gas_scene(GetParam());
  World w1 = make_world(g, 1), w4 = make_world(g, 4);
  Agreed run;
  step_one_and_four(w1, w4, 100, run);
  if (HasFatalFailure()) return;
  EXPECT_GT(w1.stats().collisions, 0u);
  if (GetParam() == Solver::kDiscrete) {
    EXPECT_GT(run.ahead, 20u) << "the 4-thread world seldom or never made its contacts while relax ran";
  } else {
    EXPECT_EQ(run.ahead, 0u) << "Verlet has no relax to overlap";
  }
}

// An elastic gas's narrow phase leaves out the speculative pairs that miss
// the substep, reading the velocities: so its next contacts are not made
// while relax (which writes them) runs. 1 thread against 4 after every
// step, with collisions that turn such pairs round (three and more bodies
// in a substep).
TEST(Determinism, ElasticGasLeavingMissesOutAgreesBetweenOneAndFourThreads) {
  Gas g = make_gas_scene(Solver::kDiscrete, 3000, 0.2, 1.45);
  g.params.restitution = 1.0;
  g.params.gravity = {0.0, 0.0};
  World w1 = make_world(g, 1), w4 = make_world(g, 4);
  Agreed run;
  step_one_and_four(w1, w4, 100, run);
  if (HasFatalFailure()) return;
  EXPECT_GT(run.most_rounds, 2u) << "no substep with bodies meeting three at a time";
  EXPECT_EQ(run.ahead, 0u) << "contacts made while relax wrote the velocities they read";
}

// A small pile settling, its pair list coloured (its bodies carry load): on
// four threads its next contacts are made while relax runs and take their
// warm values in candidate order (the repairs of its pair list made there
// too, before them), and the impact cascade's index of each body's contacts
// is made on another thread while the first impact pass runs; the same bits
// and warm values (events, contacts) as one thread after every step.
TEST(Determinism, SmallPileMakesItsContactsAheadWithTheBitsOfOneThread) {
  const Gas g = make_falling_pile(2000);
  World w1 = make_world(g, 1), w4 = make_world(g, 4);
  std::uint64_t ahead = 0, beside = 0, repairs = 0;
  for (int s = 0; s < 200; ++s) {
    const std::uint64_t index_before = detail::indexes_beside(), repairs_before = detail::repairs_made_ahead();
    w1.step();
    ASSERT_EQ(detail::indexes_beside(), index_before) << "one thread made an index on another";
    ASSERT_EQ(detail::repairs_made_ahead(), repairs_before) << "one thread repaired on another";
    const std::uint64_t before = detail::contacts_made_ahead(false);
    w4.step();
    ahead += detail::contacts_made_ahead(false) - before;
    beside += detail::indexes_beside() - index_before;
    repairs += detail::repairs_made_ahead() - repairs_before;
    ASSERT_EQ(w1.stats().pair_repairs, w4.stats().pair_repairs) << "step " << s + 1;
    ASSERT_EQ(w1.stats().pair_rebuilds, w4.stats().pair_rebuilds) << "step " << s + 1;
    ASSERT_EQ(w1.state_hash(), w4.state_hash()) << "first difference after step " << s + 1;
    ASSERT_EQ(w1.stats().contacts, w4.stats().contacts) << "step " << s + 1;
    ASSERT_EQ(w1.stats().collisions, w4.stats().collisions) << "step " << s + 1;
    ASSERT_EQ(w1.events().size(), w4.events().size()) << "step " << s + 1;
  }
  EXPECT_GT(ahead, 200u) << "the pile seldom or never made its contacts while relax ran";
  EXPECT_GT(beside, 100u) << "the pile's cascade index was seldom or never made beside the first impact pass";
  EXPECT_GT(repairs, 50u) << "the pile's pair list was seldom or never repaired while relax ran";
}

// A world that adapts its threads (WorldConfig::adapt_threads) runs a step on
// its threads or on one thread alone, as it measures; a pair list built in a
// step on one thread is used in steps on several and the other way round.
// Switched at every step here (detail::set_thread_turns), a landing pile whose
// passes are shared among the threads (over 8 192 contacts a substep) and a
// small one whose next contacts are made while relax runs keep the bits of
// one thread after every step, and the steps really alternate.
TEST(Determinism, StepsThatAlternateBetweenThreadsAndOneKeepTheBitsOfOneThread) {
  detail::set_thread_turns(detail::ThreadTurns::kAlternate);
  for (const std::size_t n : {std::size_t{10000}, std::size_t{2000}}) {
    const Gas g = make_falling_pile(n);
    World one = make_world(g, 1);
    World turns({.max_bodies = 1u << 24, .threads = 4}, g.params);
    ASSERT_TRUE(turns.add_bodies(g.bodies).ok());
    int on_one = 0, on_four = 0;
    std::uint64_t most_contacts = 0, ahead = 0;
    for (int s = 0; s < 120; ++s) {
      one.step();
      const std::uint64_t before = detail::contacts_made_ahead(false);
      turns.step();
      ahead += detail::contacts_made_ahead(false) - before;
      most_contacts = std::max(most_contacts, turns.stats().contacts);
      (turns.stats().threads == 1 ? on_one : on_four) += 1;
      ASSERT_EQ(one.state_hash(), turns.state_hash()) << n << " bodies, first difference after step " << s + 1;
      ASSERT_EQ(one.stats().contacts, turns.stats().contacts) << n << " bodies, step " << s + 1;
      ASSERT_EQ(one.stats().pair_rebuilds, turns.stats().pair_rebuilds) << n << " bodies, step " << s + 1;
      ASSERT_TRUE(same_events(one, turns)) << n << " bodies, at step " << s + 1;
    }
    EXPECT_EQ(on_one, 60) << n << " bodies";
    EXPECT_EQ(on_four, 60) << n << " bodies";
    if (n == 10000) {
      EXPECT_GE(most_contacts / g.params.substeps, 8192u) << "the passes were never shared";
    } else {
      EXPECT_GT(ahead, 20u) << "the small pile's contacts were seldom or never made while relax ran";
    }
  }
  // A world that does not adapt runs every step on its threads.
  detail::set_thread_turns(detail::ThreadTurns::kOne);
  const Gas g = make_falling_pile(500);
  World fixed = make_world(g, 4);
  World adapts({.threads = 4}, g.params);
  ASSERT_TRUE(adapts.add_bodies(g.bodies).ok());
  for (int s = 0; s < 5; ++s) {
    fixed.step();
    adapts.step();
    EXPECT_EQ(fixed.stats().threads, 4u);
    EXPECT_EQ(adapts.stats().threads, 1u);
  }
  detail::set_thread_turns(detail::ThreadTurns::kMeasured);
}

// A large, compressed pile: enough bodies and simultaneous contacts that every
// stage really splits into parallel blocks (integration blocks of 8192 bodies,
// the parallel contact-ordering path above 2048 contacts), compared between 1
// and 8 threads after every step.
TEST_P(Determinism, LargePileAgreesBetweenOneAndEightThreadsAfterEveryStep) {
  Gas g = make_compressed_pile();
  g.params.solver = GetParam();
  World w1 = make_world(g, 1), w8 = make_world(g, 8);
  std::uint64_t max_contacts = 0;
  for (int s = 0; s < 60; ++s) {
    w1.step();
    w8.step();
    ASSERT_EQ(w1.state_hash(), w8.state_hash()) << "first difference after step " << s + 1;
    ASSERT_EQ(w1.stats().contacts, w8.stats().contacts) << "step " << s + 1;
    ASSERT_EQ(w1.stats().rounds, w8.stats().rounds) << "step " << s + 1;
    ASSERT_EQ(w1.stats().momentum, w8.stats().momentum) << "step " << s + 1;
    max_contacts = std::max(max_contacts, w1.stats().contacts / 4);
  }
  EXPECT_GT(max_contacts, 2048u * 4) << "too few contacts per substep to reach the parallel paths";
}

// The discrete solver's velocity passes run four contacts at a time in AVX2
// lanes: the same operations as one contact at a time, so the same bits. A
// compressed pile settling (impacts, soft passes, relax, warm starts), the
// same pile elastic, and a lively gas with mixed masses (shares other than 1/2), each compared after
// every step. The same for the solver's copy of the velocities (a body's two
// components side by side) against the body store's arrays.
TEST(Determinism, SimdLanesGiveTheBitsOfOneContactAtATime) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this processor: only the scalar passes run";
  Gas pile = make_falling_pile(3000, 0.3, 0.6, 1.0);
  // The same pile elastic: pushes of resting contacts make impacts the
  // impact passes did not see, which the soft pass leaves (e = 1 only).
  Gas elastic = pile;
  elastic.params.restitution = 1.0;
  Gas gas = make_gas_scene(Solver::kDiscrete, 2000);
  for (std::size_t i = 0; i < gas.bodies.size(); i += 3) gas.bodies[i].mass = 2.5;
  for (Gas* g : {&pile, &elastic, &gas}) {
    g->params.solver = Solver::kDiscrete;
    // Lanes on the solver's velocity copy (the default), one contact at a
    // time on it, and lanes on the body store's own arrays.
    World lanes = make_world(*g, 2), scalar = make_world(*g, 2), uncopied = make_world(*g, 2);
    std::uint64_t loaded = 0, copied = 0;
    for (int s = 0; s < 150; ++s) {
      detail::allow_simd(true);
      ASSERT_TRUE(detail::simd_in_use()) << "the processor has AVX2, so the lanes must run";
      const std::uint64_t copies = detail::velocity_copies();
      lanes.step();
      copied += detail::velocity_copies() - copies;
      detail::allow_simd(false);
      ASSERT_FALSE(detail::simd_in_use());
      scalar.step();
      detail::allow_simd(true);
      detail::allow_velocity_copy(false);
      const std::uint64_t before = detail::velocity_copies();
      uncopied.step();
      ASSERT_EQ(detail::velocity_copies(), before) << "the copy was switched off";
      detail::allow_velocity_copy(true);
      ASSERT_EQ(lanes.state_hash(), scalar.state_hash()) << "first difference after step " << s + 1;
      ASSERT_EQ(lanes.state_hash(), uncopied.state_hash()) << "first difference after step " << s + 1;
      loaded += lanes.stats().contacts;
    }
    EXPECT_GT(loaded, 150u * 100u) << "too few contacts to exercise the lanes";
    // The settling pile has more contacts than bodies: the copy must run.
    if (g == &pile) {
      EXPECT_GT(copied, 150u) << "the pile's passes never worked on the velocity copy";
    }
  }
}

// Verlet's narrow phase (each contact's normal from the substep's start
// positions and its approach speed), its push and its restitution passes run
// four contacts at a time in AVX2 lanes, and its finish (the velocities the
// motion implies) four bodies at a time: the same operations as one at a
// time, so the same bits. A falling pile in its box with mixed masses
// (shares other than 1/2), its events recorded (the contact points), and a
// few bodies added exactly on others (a pair coincident at the start: the
// normal at detection, one at a time even in the lanes; four pushes of which
// one meets a wall go one at a time too), compared after every step.
TEST(Determinism, VerletSimdLanesGiveTheBitsOfOneContactAtATime) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this processor: only the scalar writes run";
  Gas g = make_falling_pile(2000, 0.3, 0.6, 1.0);
  g.params.solver = Solver::kVerlet;
  g.params.record_events = true;
  for (std::size_t i = 0; i < g.bodies.size(); i += 3) g.bodies[i].mass = 2.5;
  const std::size_t n = g.bodies.size();
  for (std::size_t i = 0; i < n; i += 97) {
    BodyDesc twin = g.bodies[i];
    twin.id = kAutoId;
    g.bodies.push_back(twin);
  }
  World lanes = make_world(g, 2), scalar = make_world(g, 2);
  std::size_t events = 0;
  for (int s = 0; s < 120; ++s) {
    detail::allow_simd(true);
    ASSERT_TRUE(detail::simd_in_use()) << "the processor has AVX2, so the lanes must run";
    lanes.step();
    detail::allow_simd(false);
    scalar.step();
    detail::allow_simd(true);
    ASSERT_EQ(lanes.state_hash(), scalar.state_hash()) << "first difference after step " << s + 1;
    ASSERT_TRUE(same_events(lanes, scalar)) << "step " << s + 1;
    events += lanes.events().size();
  }
  EXPECT_GT(events, 1000u) << "too few pushes to exercise the lanes";
}

// Where every body has one radius, the narrow phase's lanes find the
// contacts without loading the radii (one reach for all: the same bits). A
// pile of equal bodies, lanes against one at a time after every step, both
// solvers; then a body three times as large lands on it, and the lanes must
// load the radii again (the list is rebuilt for the new body).
TEST(Determinism, OneRadiusLanesGiveTheBitsOfOneContactAtATime) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this processor: only the scalar test runs";
  for (const Solver solver : {Solver::kDiscrete, Solver::kVerlet}) {
    Gas g = make_falling_pile(2000, 0.5, 0.5, 1.2);
    g.params.solver = solver;
    World lanes = make_world(g, 2), scalar = make_world(g, 2);
    const Bounds box = g.params.bounds;
    std::uint64_t contacts = 0;
    for (int s = 0; s < 120; ++s) {
      if (s == 60) {
        BodyDesc big;
        big.radius = 1.5;
        big.position = {0.5 * (box.min.x + box.max.x), 0.5 * (box.min.y + box.max.y)};
        ASSERT_TRUE(lanes.add_body(big).ok());
        ASSERT_TRUE(scalar.add_body(big).ok());
      }
      detail::allow_simd(true);
      lanes.step();
      detail::allow_simd(false);
      scalar.step();
      detail::allow_simd(true);
      ASSERT_EQ(lanes.state_hash(), scalar.state_hash()) << "first difference after step " << s + 1;
      ASSERT_EQ(lanes.stats().contacts, scalar.stats().contacts) << "step " << s + 1;
      contacts += lanes.stats().contacts;
    }
    EXPECT_GT(contacts, 120u * 1000u) << "too few contacts to exercise the lanes";
    // The big body landed on the pile: it has neighbours within reach.
    const auto v = lanes.bodies();
    const std::size_t last = v.size() - 1;
    std::size_t touching = 0;
    for (std::size_t i = 0; i < last; ++i)
      if (std::hypot(v.x[i] - v.x[last], v.y[i] - v.y[last]) < v.radius[i] + v.radius[last] + 0.05) ++touching;
    EXPECT_GE(touching, 2u) << "the large body never reached the pile";
  }
}

// Where the first impact pass fires many contacts and the velocity passes
// are shared, the impact passes after it are shared among the threads too
// (ImpactPass::shared in resolve.cpp). With the threshold lowered so that it
// happens in most substeps: a compressed pile bursting apart and a crowd with
// large balls (whose pairs fill the last, overflow colour, solved in order)
// landing, and a gas whose later passes are sweeps, each on 1 thread (one at
// a time) against 4 threads (shared), in lanes and one contact at a time,
// after every step.
TEST(Determinism, SharedImpactPassesGiveTheBitsOfOneThread) {
  tbb::global_control allow{tbb::global_control::max_allowed_parallelism, 4};
  Gas pile = make_compressed_pile();
  Gas crowd;
  crowd.params.bounds = {true, {0.0, 0.0}, {150.0, 150.0}};
  crowd.params.gravity = {0.0, -9.81};
  crowd.params.restitution = 0.85;
  Rng rng(7);
  for (int i = 0; i < 16000; ++i) {
    BodyDesc b;
    b.radius = (i % 97 == 0) ? 5.0 : 0.35 * std::pow(3.0, rng.uniform());
    b.position = {rng.uniform(b.radius, 150.0 - b.radius), rng.uniform(b.radius, 150.0 - b.radius)};
    b.velocity = {rng.uniform(-8.0, 8.0), rng.uniform(-8.0, 8.0)};
    crowd.bodies.push_back(b);
  }
  // A gas whose contacts are fewer than a quarter of its bodies: its later
  // passes are sweeps, shared the same way.
  Gas gas = make_gas_scene(Solver::kDiscrete, 60000, 0.4, 1.45);
  const std::size_t threshold = detail::set_shared_impacts_from(64);
  for (Gas* g : {&pile, &crowd, &gas}) {
    g->params.solver = Solver::kDiscrete;
    g->params.substeps = 4;
    World one = make_world(*g, 1), lanes = make_world(*g, 4), scalar = make_world(*g, 4);
    std::uint64_t shared = 0;
    std::uint32_t most_rounds = 0;
    int swept = 0;
    for (int s = 0; s < 25; ++s) {
      one.step();
      const std::uint64_t before = detail::shared_impact_passes();
      lanes.step();
      shared += detail::shared_impact_passes() - before;
      detail::allow_simd(false);
      scalar.step();
      detail::allow_simd(true);
      ASSERT_EQ(one.state_hash(), lanes.state_hash()) << "first difference after step " << s + 1;
      ASSERT_EQ(one.state_hash(), scalar.state_hash()) << "first difference after step " << s + 1;
      ASSERT_EQ(one.stats().collisions, lanes.stats().collisions) << "step " << s + 1;
      most_rounds = std::max(most_rounds, one.stats().rounds);
      // Substeps of the gas with contacts enough to share the passes and
      // under a quarter of the bodies (sweeps, not the per-body index).
      const std::uint64_t per_substep = one.stats().contacts / 4;
      swept += per_substep >= detail::kSharedPassesFrom && 4 * per_substep < g->bodies.size() ? 1 : 0;
    }
    if (g == &gas) {
      EXPECT_GE(swept, 20) << "the gas's later impact passes were not sweeps shared among the threads";
    }
    EXPECT_GT(shared, 50u) << "the impact passes were shared in too few substeps";
    if (g == &crowd) {
      EXPECT_EQ(most_rounds, detail::kColours) << "the crowd never reached the overflow colour";
    }
  }
  detail::set_shared_impacts_from(threshold);
}

INSTANTIATE_TEST_SUITE_P(BothSolvers, Determinism, testing::Values(Solver::kDiscrete, Solver::kVerlet),
                         [](const testing::TestParamInfo<Solver>& info) {
                           return info.param == Solver::kDiscrete ? "Discrete" : "Verlet";
                         });

// The golden hash: a fixed 400-body scene, 200 discrete steps.
//
// This constant changes only on purpose, when the physics changes (a new
// integration order, a new contact rule, a different scene builder). To update
// it: run `build/release/tests/carom_sim_tests --gtest_filter='Golden.*'`,
// check that the change is intended, paste the hash the failure prints, and say
// why in the commit message. A change nobody intended is a determinism bug.
constexpr std::uint64_t kGoldenHash = 0x93896f00a9f4860aull;

TEST(Golden, FixedSceneHashIsUnchanged) {
  Gas g = make_gas_scene(Solver::kDiscrete, 400);
  g.params.substeps = 4;
  World w({.max_bodies = 1u << 24, .threads = 2}, g.params);
  ASSERT_TRUE(w.add_bodies(g.bodies).ok());
  for (int s = 0; s < 200; ++s) w.step();
  EXPECT_EQ(w.state_hash(), kGoldenHash) << "got 0x" << std::hex << w.state_hash();
}

// The same for an elastic gas without gravity (its own paths: the narrow
// phase leaves out pairs that miss the substep, the soft pass leaves unseen
// impacts to the next substep's impact pass). Set on 2026-12-06 at 1b7546f.
constexpr std::uint64_t kElasticGoldenHash = 0xe41da9e48fb08398ull;

TEST(Golden, ElasticGasHashIsUnchanged) {
  Gas g = make_gas_scene(Solver::kDiscrete, 400);
  g.params.substeps = 4;
  g.params.restitution = 1.0;
  g.params.gravity = {0.0, 0.0};
  World w({.max_bodies = 1u << 24, .threads = 2}, g.params);
  ASSERT_TRUE(w.add_bodies(g.bodies).ok());
  const double ke0 = w.stats().kinetic_energy;
  for (int s = 0; s < 200; ++s) w.step();
  EXPECT_NEAR(w.stats().kinetic_energy, ke0, 1e-12 * ke0);
  EXPECT_EQ(w.state_hash(), kElasticGoldenHash) << "got 0x" << std::hex << w.state_hash();
}

// Edits that change nothing must not change the future either: writing a
// body's own velocity back, or toggling event recording, leaves the solver's
// hidden state (pair list, warm starts, wall contacts) alone.
TEST(Determinism, NoOpEditsKeepTheTrajectory) {
  for (const Solver solver : {Solver::kDiscrete, Solver::kVerlet}) {
    SCOPED_TRACE(to_string(solver));
    // A small pile: resting contacts, warm starts and wall contacts all matter.
    test::PileSpec spec;
    spec.n = 600;
    spec.columns = 30;
    Params params;
    const std::vector<BodyDesc> bodies = test::make_pile(spec, &params.bounds);
    params.solver = solver;
    params.gravity = {0.0, -10.0};
    params.restitution = 0.3;
    params.substeps = 8;
    World a({.max_bodies = 1u << 16, .threads = 2}, params);
    World b({.max_bodies = 1u << 16, .threads = 2}, params);
    ASSERT_TRUE(a.add_bodies(bodies).ok());
    ASSERT_TRUE(b.add_bodies(bodies).ok());
    for (int s = 0; s < 150; ++s) {
      a.step();
      b.step();
      if (s % 7 == 3) {
        BodyState st;
        const BodyId id = b.bodies().id[static_cast<std::size_t>(s) % b.size()];
        ASSERT_TRUE(b.body(id, &st).ok());
        ASSERT_TRUE(b.set_velocity(id, st.velocity).ok());
        ASSERT_TRUE(b.apply_impulse(id, {0.0, 0.0}).ok());
        Params p = b.params();
        p.record_events = !p.record_events;
        ASSERT_TRUE(b.set_params(p).ok());
      }
    }
    EXPECT_EQ(a.state_hash(), b.state_hash());
  }
}

// Save and load: a world rebuilt from another's bodies (explicit ids), ids,
// parameters and solver state continues bit-identically. The discrete pile
// needs both halves of the solver state: without the warm starts or without
// the wall touches it takes another path.
struct PileWorlds {
  Params params;
  std::vector<BodyDesc> bodies;
};

PileWorlds make_small_pile(Solver solver) {
  test::PileSpec spec;
  spec.n = 600;
  spec.columns = 30;
  PileWorlds p;
  p.bodies = test::make_pile(spec, &p.params.bounds);
  p.params.solver = solver;
  p.params.gravity = {0.0, -10.0};
  p.params.restitution = 0.3;
  p.params.substeps = 8;
  return p;
}

constexpr WorldConfig kRestoreConfig{.max_bodies = 1u << 16, .threads = 2};

// A new world holding `from`'s bodies and ids, with `state` as its solver state.
World rebuild(const World& from, const SolverState* state) {
  World w(kRestoreConfig, from.params());
  const BodiesView v = from.bodies();
  std::vector<BodyDesc> descs(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    descs[i] = {v.id[i], {v.x[i], v.y[i]}, {v.vx[i], v.vy[i]}, v.radius[i], v.mass[i]};
  EXPECT_TRUE(w.add_bodies(descs).ok());
  EXPECT_TRUE(w.reserve_ids(from.next_id(), from.retired_ids()).ok());
  if (state != nullptr) {
    const Status st = w.restore_solver_state(*state);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return w;
}

bool same_repairs(const std::vector<std::vector<MovedAnchor>>& l, const std::vector<std::vector<MovedAnchor>>& r) {
  if (l.size() != r.size()) return false;
  for (std::size_t k = 0; k < l.size(); ++k) {
    if (l[k].size() != r[k].size()) return false;
    for (std::size_t q = 0; q < l[k].size(); ++q)
      if (l[k][q].id != r[k][q].id || std::memcmp(&l[k][q].x, &r[k][q].x, sizeof(float)) != 0 ||
          std::memcmp(&l[k][q].y, &r[k][q].y, sizeof(float)) != 0 ||
          std::memcmp(&l[k][q].skin, &r[k][q].skin, sizeof(float)) != 0)
        return false;
  }
  return true;
}

bool same(const SolverState& l, const SolverState& r) {
  if (l.step != r.step || std::memcmp(&l.time, &r.time, sizeof(double)) != 0) return false;
  if (l.warm.size() != r.warm.size() || l.walls.size() != r.walls.size()) return false;
  for (std::size_t k = 0; k < l.warm.size(); ++k)
    if (l.warm[k].a != r.warm[k].a || l.warm[k].b != r.warm[k].b ||
        std::memcmp(&l.warm[k].value, &r.warm[k].value, sizeof(double)) != 0)
      return false;
  for (std::size_t k = 0; k < l.walls.size(); ++k)
    if (l.walls[k].id != r.walls[k].id || l.walls[k].bits != r.walls[k].bits ||
        std::memcmp(&l.walls[k].value, &r.walls[k].value, sizeof(double)) != 0)
      return false;
  return l.anchor_x == r.anchor_x && l.anchor_y == r.anchor_y && std::memcmp(&l.skin, &r.skin, sizeof(double)) == 0 &&
         l.anchor_skin == r.anchor_skin && l.contact_colours == r.contact_colours && same_repairs(l.repairs, r.repairs);
}

// A bad state is refused with `code`, naming `field`, and changes nothing:
// `w` keeps its hash and its solver state (`good`).
void expect_refused(World& w, const SolverState& bad, const SolverState& good, std::uint64_t hash, StatusCode code,
                    const std::string& field) {
  const Status st = w.restore_solver_state(bad);
  EXPECT_EQ(st.code(), code) << field << ": " << st.message();
  EXPECT_EQ(st.field(), field) << st.message();
  EXPECT_EQ(w.state_hash(), hash);
  EXPECT_TRUE(same(w.solver_state(), good)) << field;
}

// The small pile with a row of bodies falling fast onto it: the fastest body
// sets the common skin, the resting ones carry load and get skins of their
// own (PairAnchors), so the state has skins per body.
PileWorlds make_landing_pile() {
  PileWorlds p = make_small_pile(Solver::kDiscrete);
  const double top = p.params.bounds.max.y;
  p.params.bounds.max.y = top + 14.0;
  test::Rng rng(5);
  for (std::uint32_t k = 0; k < 40; ++k) {
    BodyDesc d;
    d.id = static_cast<BodyId>(p.bodies.size() + 1);
    d.radius = 0.5;
    d.position = {1.0 + 0.8 * k, top + 4.0 + 1.5 * (k % 5)};
    d.velocity = {rng.uniform(-1.0, 1.0), -20.0};
    p.bodies.push_back(d);
  }
  return p;
}

TEST(SolverState, RestoredWorldContinuesIdentically) {
  for (const Solver solver : {Solver::kDiscrete, Solver::kVerlet}) {
    SCOPED_TRACE(to_string(solver));
    const PileWorlds pile = make_small_pile(solver);
    World a(kRestoreConfig, pile.params);
    ASSERT_TRUE(a.add_bodies(pile.bodies).ok());
    // Retire a few ids so that the id bookkeeping travels too.
    const std::vector<BodyId> gone{3, 17, 250};
    ASSERT_TRUE(a.remove_bodies(gone).ok());
    for (int s = 0; s < 40; ++s) a.step();
    const SolverState saved = a.solver_state();
    EXPECT_EQ(saved.step, 40u);
    if (solver == Solver::kDiscrete) {
      EXPECT_GT(saved.warm.size(), 100u) << "the pile should carry warm starts";
      EXPECT_GT(saved.walls.size(), 10u) << "the pile should press on the walls";
    }
    EXPECT_EQ(saved.anchor_x.size(), a.size()) << "the pair list's anchors travel with the state";
    EXPECT_GT(saved.skin, 0.0);

    World b = rebuild(a, &saved);
    EXPECT_EQ(b.state_hash(), a.state_hash());
    EXPECT_TRUE(same(b.solver_state(), saved)) << "solver_state() must give back what was restored";
    EXPECT_EQ(b.next_id(), a.next_id());
    EXPECT_TRUE(std::equal(b.retired_ids().begin(), b.retired_ids().end(), a.retired_ids().begin(),
                           a.retired_ids().end()));
    EXPECT_EQ(b.add_body({.id = 17, .position = {1.0, 1.0}, .velocity = {}}).code(), StatusCode::kAlreadyExists);
    for (int s = 0; s < 120; ++s) {
      a.step();
      b.step();
      ASSERT_EQ(b.state_hash(), a.state_hash()) << "step " << s;
      ASSERT_EQ(b.stats().step, a.stats().step);
      ASSERT_EQ(b.stats().time, a.stats().time);
    }
    EXPECT_TRUE(same(b.solver_state(), a.solver_state()));
  }
}

// Where no body carries load (a gas), the list is left uncoloured and each
// substep colours its own contacts. Whether it does travels with the saved
// anchors, so a gas restored between two rebuilds (its first substep
// rebuilds the list from the saved anchors, where the original keeps its
// list) continues bit for bit, and 1 and 8 threads agree.
TEST(SolverState, AGasColoursItsContactsAndContinuesIdenticallyWhenRestored) {
  Gas gas = make_gas_scene(Solver::kDiscrete, 4000);
  gas.params.gravity = {0.0, 0.0};
  gas.params.restitution = 1.0;
  World a(kRestoreConfig, gas.params);
  ASSERT_TRUE(a.add_bodies(gas.bodies).ok());
  for (int s = 0; s < 20; ++s) a.step();
  // A save whose next step the original takes without a rebuild: the
  // restored copy's list then comes from the saved anchors.
  // Beside it, the same state with the list coloured whole (as a save from
  // before the flag restores): same contacts, other colours, other bits.
  SolverState saved;
  std::optional<World> b, c;
  for (int s = 0; s < 40 && !b; ++s) {
    saved = a.solver_state();
    SolverState coloured = saved;
    coloured.contact_colours = false;
    World copy = rebuild(a, &saved), other = rebuild(a, &coloured);
    a.step();
    copy.step();
    other.step();
    ASSERT_EQ(copy.state_hash(), a.state_hash()) << "restored, first step";
    if (a.stats().pair_rebuilds == 0) {
      b.emplace(std::move(copy));
      c.emplace(std::move(other));
    }
  }
  ASSERT_TRUE(b.has_value()) << "every step rebuilt the list";
  ASSERT_EQ(saved.anchor_x.size(), a.size()) << "the list's anchors travel with the state";
  EXPECT_TRUE(saved.anchor_skin.empty()) << "no body of a gas carries load";
  EXPECT_TRUE(saved.contact_colours) << "a gas's list is left uncoloured";
  World one = stepped_world(gas.params, gas.bodies, 1, a.stats().step);
  World eight = stepped_world(gas.params, gas.bodies, 8, a.stats().step);
  ASSERT_EQ(one.state_hash(), a.state_hash());
  ASSERT_EQ(eight.state_hash(), a.state_hash());
  const std::uint64_t before = detail::contact_colourings();
  const double energy = a.stats().kinetic_energy;
  bool diverged = false;
  for (int s = 0; s < 100; ++s) {
    a.step();
    b->step();
    one.step();
    eight.step();
    ASSERT_EQ(b->state_hash(), a.state_hash()) << "restored, step " << s;
    ASSERT_EQ(one.state_hash(), a.state_hash()) << "1 thread, step " << s;
    ASSERT_EQ(eight.state_hash(), a.state_hash()) << "8 threads, step " << s;
    c->step();
    diverged |= c->state_hash() != a.state_hash();
  }
  EXPECT_TRUE(same(b->solver_state(), a.solver_state()));
  EXPECT_TRUE(diverged) << "the flag decides the colours";
  // Five worlds x 100 steps x 2 substeps, nearly every substep with contacts.
  EXPECT_GE(detail::contact_colourings() - before, 4u * 100u * 2u * 9u / 10u) << "the contacts were not coloured per substep";
  EXPECT_NEAR(a.stats().kinetic_energy, energy, 1e-9 * energy) << "an elastic gas keeps its energy";

  // The flag needs the anchors, and a list with skins per body is coloured whole.
  const std::uint64_t hash = a.state_hash();
  const SolverState good = a.solver_state();
  SolverState bad = good;
  bad.anchor_x.clear();
  bad.anchor_y.clear();
  bad.contact_colours = true;
  Status st = a.restore_solver_state(bad);
  EXPECT_EQ(st.field(), "solver.contact_colours") << st.message();
  bad = good;
  bad.contact_colours = true;
  bad.anchor_skin.assign(a.size(), static_cast<float>(good.skin));
  st = a.restore_solver_state(bad);
  EXPECT_EQ(st.field(), "solver.contact_colours") << st.message();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.state_hash(), hash);
  EXPECT_TRUE(same(a.solver_state(), good));
}

TEST(SolverState, SkinsPerBodyTravelWithTheStateAndDecideTheList) {
  const PileWorlds pile = make_landing_pile();
  World a(kRestoreConfig, pile.params);
  ASSERT_TRUE(a.add_bodies(pile.bodies).ok());
  // Let the pile settle under the falling row until a list is built with
  // skins per body for a good part of them.
  SolverState saved;
  const auto below = [](const SolverState& st) {
    std::size_t count = 0;
    for (const float s : st.anchor_skin) count += s < static_cast<float>(st.skin) ? 1 : 0;
    return count;
  };
  for (int s = 0; s < 40 && below(saved) <= a.size() / 4; ++s) {
    a.step();
    saved = a.solver_state();
  }
  ASSERT_EQ(saved.anchor_skin.size(), a.size()) << "resting bodies under fast ones get skins of their own";
  EXPECT_GT(below(saved), a.size() / 4);
  for (const float s : saved.anchor_skin) {
    EXPECT_GT(s, 0.0f);
    EXPECT_LE(s, static_cast<float>(saved.skin));
  }

  // 1 and 8 threads and a restored copy: the same bits after every step.
  World b = rebuild(a, &saved);
  World one = stepped_world(pile.params, pile.bodies, 1, a.stats().step);
  World eight = stepped_world(pile.params, pile.bodies, 8, a.stats().step);
  ASSERT_EQ(one.state_hash(), a.state_hash());
  ASSERT_EQ(eight.state_hash(), a.state_hash());
  // Without the skins the restored list is the common skin's: same contacts,
  // other colours, other bits.
  SolverState no_skins = saved;
  no_skins.anchor_skin.clear();
  World c = rebuild(a, &no_skins);
  bool diverged = false;
  for (int s = 0; s < 150; ++s) {
    a.step();
    b.step();
    one.step();
    eight.step();
    c.step();
    ASSERT_EQ(b.state_hash(), a.state_hash()) << "restored, step " << s;
    ASSERT_EQ(one.state_hash(), a.state_hash()) << "1 thread, step " << s;
    ASSERT_EQ(eight.state_hash(), a.state_hash()) << "8 threads, step " << s;
    diverged |= c.state_hash() != a.state_hash();
  }
  EXPECT_TRUE(same(b.solver_state(), a.solver_state()));
  EXPECT_TRUE(diverged);

  // Bad skins are refused by name and change nothing.
  const std::uint64_t hash = a.state_hash();
  const SolverState good = a.solver_state();
  auto refused = [&](const SolverState& bad, const std::string& field) {
    expect_refused(a, bad, good, hash, StatusCode::kInvalidArgument, field);
  };
  SolverState bad = saved;
  bad.anchor_skin.pop_back();
  refused(bad, "solver.anchor_skin");
  bad = saved;
  bad.anchor_skin[7] = std::numeric_limits<float>::quiet_NaN();
  refused(bad, "solver.anchor_skin[7]");
  bad = saved;
  bad.anchor_skin[3] = 0.0f;
  refused(bad, "solver.anchor_skin[3]");
  bad = saved;
  bad.anchor_skin[9] = static_cast<float>(saved.skin) * 2.0f;
  refused(bad, "solver.anchor_skin[9]");
  bad = saved;
  bad.anchor_x.clear();
  bad.anchor_y.clear();
  refused(bad, "solver.anchor_skin");
}

// Repairs of the pair list (DiscreteSolver::repair_pairs): where a few
// bodies of a pile have gone half their skins from their anchors, they get
// new anchors and the list gains their partners, instead of a rebuild. The
// repairs travel with the state: a world saved at any step, restored, goes
// on bit for bit, and so do 1 and 8 threads. Bad repairs are refused by name.
TEST(SolverState, RepairsOfThePairListTravelWithTheState) {
  const PileWorlds pile = make_landing_pile();
  World a(kRestoreConfig, pile.params);
  ASSERT_TRUE(a.add_bodies(pile.bodies).ok());
  World one({.max_bodies = 1u << 16, .threads = 1}, pile.params);
  World eight({.max_bodies = 1u << 16, .threads = 8}, pile.params);
  ASSERT_TRUE(one.add_bodies(pile.bodies).ok());
  ASSERT_TRUE(eight.add_bodies(pile.bodies).ok());
  std::uint64_t repairs = 0, rebuilds = 0;
  std::size_t saved_with_repairs = 0;
  SolverState with_repairs;
  for (int s = 0; s < 150; ++s) {
    // Saved before every step, restored, stepped beside the original.
    const SolverState saved = a.solver_state();
    World copy = rebuild(a, &saved);
    ASSERT_TRUE(same(copy.solver_state(), saved)) << "step " << s;
    if (!saved.repairs.empty()) {
      ++saved_with_repairs;
      with_repairs = saved;
    }
    a.step();
    copy.step();
    one.step();
    eight.step();
    repairs += a.stats().pair_repairs;
    rebuilds += a.stats().pair_rebuilds;
    ASSERT_EQ(copy.state_hash(), a.state_hash()) << "restored before step " << s << " with " << saved.repairs.size()
                                                 << " repairs";
    ASSERT_TRUE(same(copy.solver_state(), a.solver_state())) << "step " << s;
    ASSERT_EQ(one.state_hash(), a.state_hash()) << "1 thread, step " << s;
    ASSERT_EQ(eight.state_hash(), a.state_hash()) << "8 threads, step " << s;
  }
  EXPECT_GT(repairs, 20u) << "bodies landing on the pile should set off repairs";
  EXPECT_GT(repairs, rebuilds) << "most lists should be repaired, not rebuilt";
  EXPECT_GT(saved_with_repairs, 10u) << "the state should often carry repairs";
  ASSERT_FALSE(with_repairs.repairs.empty());
  for (const auto& repair : with_repairs.repairs) {
    ASSERT_FALSE(repair.empty());
    for (std::size_t k = 0; k < repair.size(); ++k) {
      EXPECT_GT(repair[k].skin, 0.0f);
      EXPECT_LE(repair[k].skin, 2.0f * static_cast<float>(with_repairs.skin));
      if (k > 0) {
        EXPECT_LT(repair[k - 1].id, repair[k].id);
      }
    }
  }

  // Without its repairs the same state restores the list as built: other
  // pairs, other bits.
  {
    SolverState state = a.solver_state();
    for (int s = 0; s < 60 && state.repairs.empty(); ++s) {
      a.step();
      state = a.solver_state();
    }
    ASSERT_FALSE(state.repairs.empty()) << "no step left its list repaired";
    SolverState none = state;
    none.repairs.clear();
    World b = rebuild(a, &state), c = rebuild(a, &none);
    bool diverged = false;
    for (int s = 0; s < 100; ++s) {
      a.step();
      b.step();
      c.step();
      ASSERT_EQ(b.state_hash(), a.state_hash()) << "step " << s;
      diverged |= c.state_hash() != a.state_hash();
    }
    EXPECT_TRUE(diverged) << "the repairs decide the list";
  }

  // Bad repairs are refused by name and change nothing.
  SolverState good = a.solver_state();
  for (int s = 0; s < 60 && good.repairs.empty(); ++s) {
    a.step();
    good = a.solver_state();
  }
  ASSERT_FALSE(good.repairs.empty());
  const std::uint64_t hash = a.state_hash();
  auto refused = [&](const SolverState& bad, const std::string& field, StatusCode code = StatusCode::kInvalidArgument) {
    expect_refused(a, bad, good, hash, code, field);
  };
  SolverState bad = good;
  bad.repairs[0][0].id = 77777;
  refused(bad, "solver.repairs[0][0].id", StatusCode::kNotFound);
  bad = good;
  bad.repairs[0][0].x = std::numeric_limits<float>::quiet_NaN();
  refused(bad, "solver.repairs[0][0].x");
  bad = good;
  bad.repairs[0][0].skin = 0.0f;
  refused(bad, "solver.repairs[0][0].skin");
  bad = good;
  bad.repairs[0][0].skin = 3.0f * static_cast<float>(good.skin);
  refused(bad, "solver.repairs[0][0].skin");
  bad = good;
  bad.repairs[0].push_back(bad.repairs[0].front());
  refused(bad, "solver.repairs[0][" + std::to_string(good.repairs[0].size()) + "].id");
  bad = good;
  bad.repairs.emplace_back();
  refused(bad, "solver.repairs[" + std::to_string(good.repairs.size()) + "]");
  bad = good;
  bad.anchor_x.clear();
  bad.anchor_y.clear();
  bad.anchor_skin.clear();
  refused(bad, "solver.repairs");
}

TEST(SolverState, PileDivergesWithoutWarmStartsOrWallTouches) {
  const PileWorlds pile = make_small_pile(Solver::kDiscrete);
  World a(kRestoreConfig, pile.params);
  ASSERT_TRUE(a.add_bodies(pile.bodies).ok());
  for (int s = 0; s < 40; ++s) a.step();
  const SolverState full = a.solver_state();
  SolverState no_warm = full, no_walls = full;
  no_warm.warm.clear();
  no_walls.walls.clear();
  World none = rebuild(a, nullptr);
  World without_warm = rebuild(a, &no_warm);
  World without_walls = rebuild(a, &no_walls);
  bool none_diverged = false, warm_diverged = false, walls_diverged = false;
  for (int s = 0; s < 60; ++s) {
    a.step();
    none.step();
    without_warm.step();
    without_walls.step();
    none_diverged |= none.state_hash() != a.state_hash();
    warm_diverged |= without_warm.state_hash() != a.state_hash();
    walls_diverged |= without_walls.state_hash() != a.state_hash();
  }
  EXPECT_TRUE(none_diverged);
  EXPECT_TRUE(warm_diverged);
  EXPECT_TRUE(walls_diverged);
}

TEST(SolverState, BadStateIsRefusedAndChangesNothing) {
  const PileWorlds pile = make_small_pile(Solver::kDiscrete);
  World a(kRestoreConfig, pile.params);
  ASSERT_TRUE(a.add_bodies(pile.bodies).ok());
  for (int s = 0; s < 40; ++s) a.step();
  const SolverState good = a.solver_state();
  ASSERT_GE(good.warm.size(), 4u);
  ASSERT_GE(good.walls.size(), 3u);
  const std::uint64_t hash = a.state_hash();

  auto refused = [&](const SolverState& bad, StatusCode code, const std::string& field) {
    expect_refused(a, bad, good, hash, code, field);
  };
  SolverState bad = good;
  bad.warm[3].a = 99999;
  refused(bad, StatusCode::kNotFound, "solver.warm[3].a");
  bad = good;
  bad.warm[1].value = std::numeric_limits<double>::quiet_NaN();
  refused(bad, StatusCode::kInvalidArgument, "solver.warm[1].value");
  bad = good;
  std::swap(bad.warm[0].a, bad.warm[0].b);
  refused(bad, StatusCode::kInvalidArgument, "solver.warm[0]");
  bad = good;
  bad.warm.push_back(bad.warm[0]);
  refused(bad, StatusCode::kInvalidArgument, "solver.warm");
  bad = good;
  bad.walls[0].bits = 16;
  refused(bad, StatusCode::kInvalidArgument, "solver.walls[0].bits");
  bad = good;
  bad.walls[2].id = 0;
  refused(bad, StatusCode::kNotFound, "solver.walls[2].id");
  bad = good;
  bad.time = -1.0;
  refused(bad, StatusCode::kInvalidArgument, "solver.time");
  bad = good;
  bad.walls[1].value = -0.5;
  refused(bad, StatusCode::kInvalidArgument, "solver.walls[1].value");
  bad = good;
  bad.warm[2].value = 1e75;  // finite, but nothing the solver can produce
  refused(bad, StatusCode::kInvalidArgument, "solver.warm[2].value");
  bad = good;
  bad.anchor_x.pop_back();
  refused(bad, StatusCode::kInvalidArgument, "solver.anchor_x");
  bad = good;
  bad.anchor_y.push_back(0.0f);
  refused(bad, StatusCode::kInvalidArgument, "solver.anchor_y");
  bad = good;
  bad.anchor_y[5] = std::numeric_limits<float>::infinity();
  refused(bad, StatusCode::kInvalidArgument, "solver.anchor_y[5]");
  bad = good;
  bad.skin = 0.0;
  refused(bad, StatusCode::kInvalidArgument, "solver.skin");

  // The world goes on exactly as before the refused calls.
  World b = rebuild(a, &good);
  for (int s = 0; s < 30; ++s) {
    a.step();
    b.step();
  }
  EXPECT_EQ(a.state_hash(), b.state_hash());
}

TEST(SolverState, ReserveIdsKeepsIdsRetired) {
  World w({.max_bodies = 64, .threads = 1}, Params{});
  ASSERT_TRUE(w.add_body({.id = 4, .position = {10.0, 10.0}, .velocity = {}}).ok());
  const std::vector<BodyId> retired{2, 9};
  EXPECT_EQ(w.reserve_ids(0, retired).code(), StatusCode::kInvalidArgument);
  const std::vector<BodyId> live{4};
  const Status st = w.reserve_ids(5, live);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.field(), "retired[0]") << st.message();
  EXPECT_EQ(st.index(), 0u);
  EXPECT_TRUE(w.retired_ids().empty());
  EXPECT_EQ(w.next_id(), 5u);

  ASSERT_TRUE(w.reserve_ids(7, retired).ok());
  EXPECT_EQ(w.next_id(), 10u) << "above every retired id";
  EXPECT_EQ(w.add_body({.id = 9, .position = {20.0, 20.0}, .velocity = {}}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(w.add_body({.id = 2, .position = {20.0, 20.0}, .velocity = {}}).code(), StatusCode::kAlreadyExists);
  BodyId id = 0;
  ASSERT_TRUE(w.add_body({.position = {20.0, 20.0}, .velocity = {}}, &id).ok());
  EXPECT_EQ(id, 10u);
}

// The hash is over the bodies alone ("id, position, velocity, radius and
// mass, in id order"): a step that moves nothing keeps it, any bit of any
// body changes it.
TEST(StateHash, CoversBodiesOnly) {
  Params p;
  p.gravity = {0.0, 0.0};
  World w({.max_bodies = 16, .threads = 1}, p);
  BodyDesc d;
  d.position = {50.0, 50.0};
  ASSERT_TRUE(w.add_body(d).ok());
  const std::uint64_t before = w.state_hash();
  w.step();  // a body at rest with no gravity: the bodies do not change
  ASSERT_EQ(w.stats().step, 1u);
  EXPECT_EQ(w.state_hash(), before);
  ASSERT_TRUE(w.set_velocity(1, {0.0, 1e-300}).ok());
  EXPECT_NE(w.state_hash(), before);
}

// And it covers every body field: changing any one of them changes the hash.
TEST(StateHash, CoversEveryBodyField) {
  auto hash_of = [](const BodyDesc& d) {
    World w({.max_bodies = 16, .threads = 1}, Params{});
    EXPECT_TRUE(w.add_body(d).ok());
    return w.state_hash();
  };
  BodyDesc base;
  base.id = 5;
  base.position = {10.0, 20.0};
  base.velocity = {1.0, 2.0};
  base.radius = 0.5;
  base.mass = 3.0;
  const std::uint64_t h = hash_of(base);
  BodyDesc d = base;
  d.id = 6;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.position.x = 10.5;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.position.y = 20.5;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.velocity.x = -1.0;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.velocity.y = -2.0;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.radius = 0.25;
  EXPECT_NE(hash_of(d), h);
  d = base;
  d.mass = 4.0;
  EXPECT_NE(hash_of(d), h);
}

// Where the pair list and every block's contacts are those of the substep
// before (a settled pile), collide refreshes the contacts in place (their
// normals, gaps and contact points) instead of writing them whole: the same
// bits as writing them, in lanes and one at a time. Piles of 2 000 bodies
// (their contacts made ahead while relax runs, in the other set of
// contacts) and 5 000 (more than kSharedPassesFrom contacts: slotted
// velocities), settled, saved and restored three times (a restored world's
// first contacts are written whole), with events (the contact points), on
// two threads, compared after every step.
TEST(Determinism, RefreshedContactsGiveTheBitsOfContactsWrittenWhole) {
  for (const std::size_t n : {std::size_t{2000}, std::size_t{5000}}) {
    Gas g = make_falling_pile(n);
    g.params.record_events = true;
    World settling = make_world(g, 2);
    for (int s = 0; s < 600; ++s) settling.step();
    const SolverState saved = settling.solver_state();
    World refreshed = rebuild(settling, &saved), whole = rebuild(settling, &saved), scalar = rebuild(settling, &saved);
    std::uint64_t refreshes = 0;
    std::uint64_t most_contacts = 0;
    for (int s = 0; s < 150; ++s) {
      const std::uint64_t before = detail::contact_refreshes();
      refreshed.step();
      refreshes += detail::contact_refreshes() - before;
      detail::allow_contact_refresh(false);
      const std::uint64_t off = detail::contact_refreshes();
      whole.step();
      ASSERT_EQ(detail::contact_refreshes(), off) << "refreshes were switched off";
      detail::allow_contact_refresh(true);
      detail::allow_simd(false);
      scalar.step();
      detail::allow_simd(true);
      ASSERT_EQ(refreshed.state_hash(), whole.state_hash()) << n << " bodies: first difference after step " << s + 1;
      ASSERT_EQ(refreshed.state_hash(), scalar.state_hash()) << n << " bodies, one at a time: step " << s + 1;
      ASSERT_EQ(refreshed.stats().contacts, whole.stats().contacts) << "step " << s + 1;
      ASSERT_EQ(refreshed.stats().collisions, whole.stats().collisions) << "step " << s + 1;
      ASSERT_TRUE(same_events(refreshed, whole)) << "at step " << s + 1;
      most_contacts = std::max<std::uint64_t>(most_contacts, refreshed.stats().contacts / g.params.substeps);
    }
    std::printf("  %zu bodies: %llu of %d substeps refreshed their contacts\n", n,
                static_cast<unsigned long long>(refreshes), 150 * g.params.substeps);
    EXPECT_GT(refreshes, 100u) << n << " bodies: the settled pile's contacts were seldom or never refreshed";
    if (n == 5000) {
      EXPECT_GT(most_contacts, detail::kSharedPassesFrom) << "too few contacts for slotted velocities";
    }
  }
}

// A large world's narrow phase reads its bodies in slot order (the broad
// phase's, spatial) instead of storage order (Contacts::SlotInputs): the same
// values from other places, so the same bits. A 5 000-body pile (slotted on
// two threads) with the threshold at 0 against the store's order, through its
// fall, landing (rebuilds and repairs: a repair's appended block takes its
// slots then) and rest, with events (the contact points), after every step.
TEST(Determinism, SlotOrderedNarrowPhaseGivesTheBitsOfTheStoreOrder) {
  Gas g = make_falling_pile(5000);
  g.params.record_events = true;
  World slots = make_world(g, 2), store = make_world(g, 2);
  std::uint64_t used = 0, repairs = 0, rebuilds = 0;
  for (int s = 0; s < 400; ++s) {
    const std::size_t from = detail::set_slot_inputs_from(0);
    const std::uint64_t before = detail::slot_input_collides();
    slots.step();
    used += detail::slot_input_collides() - before;
    detail::set_slot_inputs_from(std::numeric_limits<std::size_t>::max());
    const std::uint64_t off = detail::slot_input_collides();
    store.step();
    ASSERT_EQ(detail::slot_input_collides(), off) << "slot order was switched off";
    detail::set_slot_inputs_from(from);
    ASSERT_EQ(slots.state_hash(), store.state_hash()) << "first difference after step " << s + 1;
    ASSERT_EQ(slots.stats().contacts, store.stats().contacts) << "step " << s + 1;
    ASSERT_TRUE(same_events(slots, store)) << "at step " << s + 1;
    repairs += slots.stats().pair_repairs;
    rebuilds += slots.stats().pair_rebuilds;
  }
  std::printf("  %llu of %d collides in slot order; %llu rebuilds, %llu repairs\n",
              static_cast<unsigned long long>(used), 400 * g.params.substeps, static_cast<unsigned long long>(rebuilds),
              static_cast<unsigned long long>(repairs));
  EXPECT_GT(used, 1000u) << "the pile's narrow phase seldom read its bodies in slot order";
  EXPECT_GT(repairs, 0u) << "no repair appended a block";
  EXPECT_GT(rebuilds, 1u);
}

}  // namespace
}  // namespace carom
