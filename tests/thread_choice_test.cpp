// ThreadChoice: whether a world's step runs on its threads or on one, chosen
// by probing the other way now and then (thread_choice.hpp). Fed step times
// here, as a machine whose two cores are near or far apart would give them.

#include "thread_choice.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace carom::detail {
namespace {

// Runs `steps` steps; `cost(step, one_thread)` is each one's time, and
// `rebuilds(step)` whether it rebuilt its pair list. Returns how many ran on
// one thread.
int run(ThreadChoice& c, int steps, const std::function<double(int, bool)>& cost, int from = 0,
        const std::function<bool(int)>& rebuilds = [](int) { return false; }) {
  int ones = 0;
  for (int s = from; s < from + steps; ++s) {
    const bool one = c.choose();
    ones += one ? 1 : 0;
    c.record(cost(s, one), rebuilds(s));
  }
  return ones;
}

TEST(ThreadChoice, OffNeverLeavesTheThreads) {
  ThreadChoice c(false);
  EXPECT_EQ(run(c, 1000, [](int, bool one) { return one ? 1.0 : 10.0; }), 0);
  EXPECT_FALSE(c.single());
}

TEST(ThreadChoice, MovesToOneThreadWhereThatIsFasterAndStays) {
  ThreadChoice c(true);
  // Cores far apart: a step takes 1.8 times as long on two threads.
  const auto far = [](int, bool one) { return one ? 1.0e-3 : 1.8e-3; };
  run(c, ThreadChoice::kProbeEvery + ThreadChoice::kConfirmAfter + 2 * (ThreadChoice::kProbeSteps + ThreadChoice::kAround + 1), far);
  EXPECT_TRUE(c.single()) << "not on one thread after two probes that won";
  EXPECT_EQ(c.switches(), 1u);
  // It stays, probing two threads ever more rarely: at most a probe in
  // kProbeAtMost steps once backed off.
  const int ones = run(c, 4096, far);
  EXPECT_EQ(c.switches(), 1u);
  EXPECT_GE(ones, 4096 - ThreadChoice::kProbeSteps * (4096 / ThreadChoice::kProbeAtMost + 4));
}

TEST(ThreadChoice, KeepsTheThreadsWhereTheyAreFasterOrNoSlower) {
  for (const double one_thread : {1.2e-3, 1.0e-3, 0.95e-3}) {
    ThreadChoice c(true);
    const int ones = run(c, 4096, [&](int, bool one) { return one ? one_thread : 1.0e-3; });
    EXPECT_FALSE(c.single()) << one_thread;
    EXPECT_EQ(c.switches(), 0u) << one_thread;
    EXPECT_GT(ones, 0) << "never probed";
    EXPECT_LE(ones, ThreadChoice::kProbeSteps * (4096 / ThreadChoice::kProbeAtMost + 4)) << one_thread;
  }
}

// Many cores: a step on one thread takes 12 times as long. Probing that
// must not cost the world much: probes that lose come rarely enough that
// all of them together add under 2% to the run.
TEST(ThreadChoice, ProbesThatCostMuchComeRarely) {
  ThreadChoice c(true);
  constexpr int kSteps = 100000;
  const int ones = run(c, kSteps, [](int, bool one) { return one ? 12e-3 : 1e-3; });
  EXPECT_FALSE(c.single());
  EXPECT_GT(ones, 0) << "never probed";
  const double extra = ones * 11e-3 / (kSteps * 1e-3);
  EXPECT_LT(extra, 0.02) << ones << " steps on one thread";
}

// A step's cost that falls fast (a world emptying, 5% a step) or rises (a
// pile landing) is no reason to switch: each probe is measured against the
// steps on both sides of it, not against those before it, which a falling
// cost makes look slow.
TEST(ThreadChoice, ACostThatFallsOrRisesSteadilyFavoursNeitherWay) {
  ThreadChoice falling(true), rising(true);
  run(falling, 600, [](int s, bool) { return 1e-1 * std::pow(0.95, s); });
  run(rising, 600, [](int s, bool) { return 1e-5 * std::pow(1.05, s); });
  EXPECT_EQ(falling.switches(), 0u);
  EXPECT_EQ(rising.switches(), 0u);
}

// The machine changes (a virtual machine's cores moved apart, then together
// again): the choice follows within a few backed-off probes, both ways.
TEST(ThreadChoice, FollowsTheMachineBothWays) {
  ThreadChoice c(true);
  const auto near = [](int, bool one) { return one ? 1.2e-3 : 1.0e-3; };
  const auto far = [](int, bool one) { return one ? 1.2e-3 : 2.2e-3; };
  run(c, 2000, near);
  EXPECT_FALSE(c.single());
  constexpr int kWithin = 2 * ThreadChoice::kProbeAtMost + ThreadChoice::kConfirmAfter +
                          2 * (ThreadChoice::kProbeSteps + ThreadChoice::kAround + 1);
  run(c, kWithin, far, 2000);
  EXPECT_TRUE(c.single());
  run(c, 2000, far, 4000);
  EXPECT_TRUE(c.single());
  run(c, kWithin, near, 6000);
  EXPECT_FALSE(c.single());
  EXPECT_EQ(c.switches(), 2u);
}

// A gas rebuilds its pair list two steps in three (measured: 10k bodies,
// about 800 us a step on two threads and 1 050 on one) and not in between
// (about 350 us either way). A probe that happens to hold more of the cheap
// steps than the steps around it must not win: steps are compared with their
// own kind.
TEST(ThreadChoice, ComparesStepsThatRebuildWithEachOther) {
  const auto rebuilds = [](int s) { return s % 3 != 2; };
  const auto gas = [&](int s, bool one) { return rebuilds(s) ? (one ? 1.05e-3 : 0.8e-3) : 0.35e-3; };
  ThreadChoice c(true);
  run(c, 4096, gas, 0, rebuilds);
  EXPECT_EQ(c.switches(), 0u);
  // And where one thread is faster at both kinds, it moves.
  ThreadChoice far(true);
  run(far, 4096, [&](int s, bool one) { return gas(s, one) * (one ? 1.0 : 1.8); }, 0, rebuilds);
  EXPECT_TRUE(far.single());
}

// One fast probe is not enough: a step that happened to be quick (a
// rebuild skipped, a quiet moment) is confirmed by a second before it counts.
TEST(ThreadChoice, OneLuckyProbeDoesNotSwitch) {
  ThreadChoice c(true);
  int probe_steps = 0;
  run(c, 4096, [&](int, bool one) {
    if (!one) return 1.0e-3;
    return ++probe_steps <= ThreadChoice::kProbeSteps ? 0.5e-3 : 1.1e-3;  // only the first probe is fast
  });
  EXPECT_GE(probe_steps, 2 * ThreadChoice::kProbeSteps);
  EXPECT_EQ(c.switches(), 0u);
}

}  // namespace
}  // namespace carom::detail
