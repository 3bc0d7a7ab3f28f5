#pragma once
/// \file SplitMix64: the one random stream of carom (generators, bench scenes,
/// tests, fuzz seeds): 64-bit arithmetic only, so the same seed gives the
/// same numbers on every platform, which std::uniform_*_distribution does not
/// promise.

#include <cstdint>

namespace carom {

/// Steele, Lea and Flood's splitmix64 (2014).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1): the top 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// lo + (hi - lo) unit(): in [lo, hi) up to rounding.
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Uniform integer in [0, n), n > 0 (modulo: a bias of n / 2^64).
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace carom
