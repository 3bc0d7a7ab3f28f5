#pragma once
/// \file The benchmark scenes, defined exactly so other engines can build the
/// same worlds (see README "Benchmark scenes").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carom/world.hpp"

namespace carom::bench {

/// What to build. Fields left at their defaults take the scene's own values.
struct SceneSpec {
  std::string name = "gas";  ///< gas, pile, mixed, lattice, default, nbody
  std::uint32_t bodies = 10000;
  double eta = 0.25;         ///< area fraction (gas, pile, mixed)
  double radius = 0.25;      ///< body radius (nbody)
  std::uint64_t seed = 1;
};

/// A built scene: parameters and the bodies to add (ids assigned 1..N in order).
struct Scene {
  Params params;
  std::vector<BodyDesc> bodies;
};

/// Builds a scene; on an unknown name or impossible size returns a status
/// naming the field. Any thread.
Status build_scene(const SceneSpec& spec, Scene* out);

/// Names accepted by build_scene.
std::vector<std::string_view> scene_names();

/// Deterministic uniform double in [0, 1) from a splitmix64 stream, identical on
/// every platform (unlike std::uniform_real_distribution).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Log-uniform in [lo, hi).
  double log_uniform(double lo, double hi);
  /// Uniform integer in [0, n) (modulo: a bias of n / 2^64, fine for tests).
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace carom::bench
