#pragma once
// Scene builders and world checks shared by the carom_sim_tests suites.
//
// Everything here is deterministic on every platform: random numbers come from
// a splitmix64 stream and doubles are made from its bits, never from
// std::uniform_real_distribution (whose output the standard leaves open), so a
// scene built from a seed is the same everywhere and a golden hash can hold.

#include <cmath>
#include <cstdint>
#include <vector>

#include "carom/random.hpp"
#include "carom/world.hpp"

namespace carom::test {

/// carom's splitmix64 (carom/random.hpp) with the draws the tests use.
class Rng : public SplitMix64 {
 public:
  using SplitMix64::SplitMix64;
  using SplitMix64::uniform;
  /// Uniform in [0, 1).
  double uniform() { return unit(); }
  /// Log-uniform in [lo, hi).
  double log_uniform(double lo, double hi) { return lo * std::exp(std::log(hi / lo) * unit()); }
};

/// Unbounded, elastic, no gravity, one substep: the textbook two-body setting.
Params open_params();

/// A gas: `n` bodies with radii in [rmin, rmax], one per cell of a jittered
/// grid filling `box` (not overlapping while spacing >= 2 rmax), velocities
/// uniform in [-speed, speed]^2, explicit ids 1..n (so the same bodies can be
/// added in any order).
struct GasSpec {
  std::uint32_t n = 1000;
  double rmin = 0.3, rmax = 0.6;
  double speed = 5.0;
  double spacing = 0.0;  ///< grid pitch; 0 means 2 * rmax * 1.25
  std::uint64_t seed = 1;
};
std::vector<BodyDesc> make_gas(const GasSpec& spec, Bounds* box_out);

/// A pile: `n` bodies of radius in [rmin, rmax] on a grid of `columns`
/// columns (odd rows shifted by a quarter pitch) resting on the floor of a
/// walled box that just fits the grid across and leaves two pitches above it.
/// A pitch below 2 rmax makes a compressed pile whose neighbours overlap.
/// Bodies are at rest but for a small random velocity.
struct PileSpec {
  std::uint32_t n = 10000;
  std::uint32_t columns = 200;
  double rmin = 0.5, rmax = 0.5;
  double pitch = 1.1;  ///< distance between grid points
  double jitter_speed = 0.1;
  std::uint64_t seed = 7;
};
std::vector<BodyDesc> make_pile(const PileSpec& spec, Bounds* box_out);

/// True when every position and velocity is finite.
bool all_finite(const World& world);

/// Number of bodies violating min + r <= x <= max - r on either axis.
std::size_t count_outside(const World& world, const Bounds& box);

/// Potential energy above the floor for gravity (0, -g): sum of m g (y - r - floor_y).
double potential_energy(const World& world, double g, double floor_y);

}  // namespace carom::test
