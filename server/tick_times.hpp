#pragma once
/// \file Tick times of the current measurement window (the last 2^16 ticks at
/// most): the tick's work and the step alone. The simulation thread keeps the
/// window (GetStats reads it there) and passes each tick's samples on with
/// the next snapshot capture; the snapshot thread keeps a mirror of the
/// window and works out the figures that snapshots carry, so no tick pays for
/// a copy or a sort of the window.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "carom/v1/protocol.pb.h"

namespace carom::server {

/// Fills the window figures of *out (ticks measured, late ticks, tick
/// p50/p99/max, step p50/p99) from samples in seconds. Reorders the samples.
inline void fill_timing(std::vector<double>& tick, std::vector<double>& step, std::uint64_t late, v1::Stats* out) {
  // The element at q * n of the sorted samples, found without sorting.
  const auto at = [](std::vector<double>& v, double q) {
    const auto k = std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  out->set_ticks_measured(tick.size());
  out->set_late_ticks(late);
  if (tick.empty()) return;
  out->set_tick_max_seconds(*std::max_element(tick.begin(), tick.end()));
  out->set_tick_p50_seconds(at(tick, 0.5));
  out->set_tick_p99_seconds(at(tick, 0.99));
  out->set_step_p50_seconds(at(step, 0.5));
  out->set_step_p99_seconds(at(step, 0.99));
}

/// The window: the last kWindow samples since the last reset, in a ring.
struct TickWindow {
  static constexpr std::size_t kWindow = std::size_t{1} << 16;
  std::vector<double> tick, step;
  std::size_t next = 0;
  void reset() {
    tick.clear();
    step.clear();
    next = 0;
  }
  void add(double tick_s, double step_s) {
    if (tick.size() < kWindow) {
      tick.push_back(tick_s);
      step.push_back(step_s);
    } else {
      tick[next] = tick_s;
      step[next] = step_s;
      next = (next + 1) % kWindow;
    }
  }
  /// The figures, from a copy (the window is left as it is).
  void fill(std::uint64_t late, v1::Stats* out) const {
    std::vector<double> t = tick, s = step;
    fill_timing(t, s, late, out);
  }
};

/// Samples on their way from the simulation thread to the snapshot thread's
/// mirror of the window.
struct TickSamples {
  std::vector<double> tick, step;  ///< in the order they were taken
  std::uint64_t generation = 0;    ///< window resets so far (GetStats.reset_timing)
  bool restart = false;            ///< the mirror must start over from these samples
  std::uint64_t late = 0;          ///< late ticks in the window (a count, not a delta)

  /// Appends newer samples after these, as if they had come in one batch.
  void append(TickSamples& newer) {
    if (newer.generation != generation || newer.restart) {
      tick.swap(newer.tick);
      step.swap(newer.step);
      restart = newer.restart;
      generation = newer.generation;
    } else {
      tick.insert(tick.end(), newer.tick.begin(), newer.tick.end());
      step.insert(step.end(), newer.step.begin(), newer.step.end());
    }
    late = newer.late;
    trim();
  }
  /// Keeps at most a window's worth (older samples would leave it anyway).
  void trim() {
    if (tick.size() <= TickWindow::kWindow) return;
    const auto drop = static_cast<std::ptrdiff_t>(tick.size() - TickWindow::kWindow);
    tick.erase(tick.begin(), tick.begin() + drop);
    step.erase(step.begin(), step.begin() + drop);
    restart = true;
  }
  /// Applies these samples to a mirror of the window.
  void apply_to(TickWindow* mirror, std::uint64_t* mirror_generation) const {
    if (restart || generation != *mirror_generation) {
      mirror->reset();
      *mirror_generation = generation;
    }
    for (std::size_t i = 0; i < tick.size(); ++i) mirror->add(tick[i], step[i]);
  }
  void clear() {
    tick.clear();
    step.clear();
    restart = false;
  }
};

/// The simulation thread's side: the window, late ticks, and the samples not
/// yet passed on.
struct TickTimes {
  TickWindow window;
  std::uint64_t late = 0;
  TickSamples fresh;
  void reset() {
    window.reset();
    late = 0;
    fresh.clear();
    ++fresh.generation;
  }
  void add(double tick_s, double step_s) {
    window.add(tick_s, step_s);
    fresh.tick.push_back(tick_s);
    fresh.step.push_back(step_s);
    // With no viewers nothing collects them: keep a window's worth at most
    // (trimming only every kWindow samples keeps it cheap).
    if (fresh.tick.size() >= 2 * TickWindow::kWindow) fresh.trim();
  }
  void fill(v1::Stats* out) const { window.fill(late, out); }
  /// Moves the samples not yet passed on into *out (whose buffers come back).
  void take_fresh(TickSamples* out) {
    fresh.late = late;
    out->clear();
    out->generation = fresh.generation;
    std::swap(*out, fresh);
    out->trim();
  }
};

}  // namespace carom::server
