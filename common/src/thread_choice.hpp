// ThreadChoice: whether the next step runs on the world's threads or on the
// calling thread alone, chosen by measuring both.
//
// Every stage of a step gives the same bits for any thread count (see
// docs/architecture.md, "Threads and determinism"), so which arena a step
// runs in changes its speed only, and it may follow the machine. It has to:
// on a virtual machine whose two cores are at times far apart (a cache
// line's round trip between them 320-350 ns instead of 55; this project's
// machine, changing every 10-60 s), a step whose stages hand their data from
// one thread to the other ran 1.8 times slower on two threads than on one
// (the 10k pile: resolve 1.27 s against 0.58 s, the velocity update 3.5
// times slower), while with the cores near two threads were 1.2 times
// faster.
//
// So the world runs on the threads it was given and now and then runs a few
// steps the other way (a probe of kProbeSteps): kProbeEvery steps after a
// switch, twice as long after each probe that loses, up to kProbeAtMost (or
// longer where a lost probe costs more than kProbeBudget of the steps
// between probes: a world of 16 threads on one thread). A
// probe whose steps after its first take under kMargin of the steps run the
// current way around it (judge) is a win; one clearly slower at its first
// counted step ends there, a loss; kWins wins in a row switch the way
// steps run (the second probe follows the first after kConfirmAfter steps).
// A step's time is its wall-clock time, so the choice is not deterministic;
// the results are.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace carom::detail {

class ThreadChoice {
 public:
  static constexpr int kAround = 6;        // steps before a probe, and after it, that it is measured against
  static constexpr int kProbeSteps = 4;    // a probe's steps; the first (data moving between cores) is not counted
  static constexpr int kProbeEvery = 32;   // steps between probes after a switch
  static constexpr int kProbeAtMost = 256; // ... doubling after each probe that loses, up to this
  static constexpr double kProbeBudget = 0.005;   // or later: a lost probe's extra time over the steps between
  static constexpr int kProbeAtMostCostly = 8192;  // ... up to this
  static constexpr int kConfirmAfter = 4;
  static constexpr int kWins = 2;
  static constexpr double kMargin = 0.9;

  explicit ThreadChoice(bool enabled = false) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }
  /// Whether steps currently run on one thread (probes aside).
  bool single() const { return single_; }
  /// How many times the way steps run has changed.
  std::uint64_t switches() const { return switches_; }

  /// Before a step: whether it runs on one thread.
  bool choose() {
    if (!probing_ && enabled_ && !awaiting_ && filled_ == kAround && since_probe_ >= every_) probing_ = true;
    return probing_ ? !single_ : single_;
  }

  /// After the step that choose() was asked for: how long it took (s), and
  /// whether it rebuilt its pair list (such steps are compared only with
  /// each other: a gas rebuilds every other step or so, at twice the cost).
  void record(double seconds, bool rebuilt = false) {
    if (!enabled_) return;
    const Sample sample{seconds, rebuilt};
    if (probing_) {
      // The first step of a probe fetches what the other way's threads
      // left in their caches: on cores far apart, a step's worth of data
      // crossing between dies. The others measure the way itself.
      if (probed_ > 0) {
        probe_[static_cast<std::size_t>(probed_ - 1)] = sample;
        // A counted step clearly slower than the median of its kind before
        // the probe (by as much as a win must be faster: a cost rising as a
        // pile lands makes those look faster than they are now): the probe
        // ends there, a loss, so that a probe that loses, the usual case,
        // costs two steps.
        int count = 0;
        const double before = median(recent_, rebuilt, &count);
        if (count > 0 && seconds * kMargin > before) {
          probing_ = false;
          probed_ = 0;
          lose(seconds / before);
          return;
        }
      }
      if (++probed_ < kProbeSteps) return;
      probing_ = false;
      probed_ = 0;
      std::copy(recent_.begin(), recent_.end(), around_.begin());
      after_ = 0;
      awaiting_ = true;
      return;
    }
    ++since_probe_;
    recent_[static_cast<std::size_t>(next_)] = sample;
    next_ = (next_ + 1) % kAround;
    filled_ = std::min(filled_ + 1, kAround);
    if (!awaiting_) return;
    // The step after a probe moves the data back: not counted either.
    if (after_++ == 0) return;
    around_[static_cast<std::size_t>(kAround + after_ - 2)] = sample;
    if (after_ < kAround + 1) return;
    awaiting_ = false;
    judge();
  }

 private:
  struct Sample {
    double seconds = 0.0;
    bool rebuilt = false;
  };
  // The median time of the samples of one kind (0 where there are none).
  template <std::size_t N>
  static double median(const std::array<Sample, N>& v, bool rebuilt, int* count) {
    std::array<double, N> t{};
    std::size_t n = 0;
    for (const Sample& s : v)
      if (s.rebuilt == rebuilt) t[n++] = s.seconds;
    *count = static_cast<int>(n);
    if (n == 0) return 0.0;
    for (std::size_t i = 1; i < n; ++i)  // insertion sort: a dozen at most
      for (std::size_t j = i; j > 0 && t[j] < t[j - 1]; --j) std::swap(t[j], t[j - 1]);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  }
  // The probe against the way steps run now: for each kind of step (with a
  // rebuild or without) the probe's median against the median of the steps
  // around it, kAround before and kAround after (the first after it aside),
  // as many before as after, so a cost that rises or falls steadily (a pile
  // landing, a world emptying) favours neither way; the kinds weighed by the
  // probe's steps of each.
  void judge() {
    double ratio = 0.0;
    int weight = 0;
    for (const bool rebuilt : {false, true}) {
      int in_probe = 0, around = 0;
      const double p = median(probe_, rebuilt, &in_probe), a = median(around_, rebuilt, &around);
      if (in_probe == 0 || around == 0 || a <= 0.0) continue;
      ratio += in_probe * (p / a);
      weight += in_probe;
    }
    if (weight > 0 && ratio < kMargin * weight) {
      if (++wins_ >= kWins) {
        single_ = !single_;
        ++switches_;
        wins_ = 0;
        filled_ = 0;  // the other way's history starts afresh
        since_probe_ = 0;
        every_ = kProbeEvery;
        return;
      }
      since_probe_ = every_ - kConfirmAfter;  // confirm soon
    } else {
      lose(weight > 0 ? ratio / weight : 1.0);
    }
  }
  // A probe lost, taking `slower` times the steps around it: the next comes
  // twice as late (up to kProbeAtMost), or later where probes cost more:
  // (slower - 1) / kProbeBudget steps later, so that a lost probe, two steps
  // or so, costs about 1% of the time (on 16 cores a step on one thread may
  // take 10 times as long).
  void lose(double slower) {
    wins_ = 0;
    since_probe_ = 0;
    const double for_budget = std::min((slower - 1.0) / kProbeBudget, double{kProbeAtMostCostly});
    every_ = std::max(std::min(2 * every_, kProbeAtMost), static_cast<int>(for_budget));
  }

  bool enabled_ = false;
  bool single_ = false;
  bool probing_ = false;
  int probed_ = 0;         // steps of the current probe so far
  bool awaiting_ = false;  // a probe's steps after it still to come
  int after_ = 0;
  int since_probe_ = 0;
  int every_ = kProbeEvery;
  int wins_ = 0;
  int filled_ = 0;
  int next_ = 0;
  std::uint64_t switches_ = 0;
  std::array<Sample, kProbeSteps - 1> probe_{};
  std::array<Sample, kAround> recent_{};
  std::array<Sample, 2 * kAround> around_{};
};

}  // namespace carom::detail
