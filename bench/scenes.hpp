#pragma once
/// \file The benchmark scenes, defined exactly so other engines can build the
/// same worlds (see README "Benchmark scenes").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carom/random.hpp"
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

/// The scenes' stream: carom's splitmix64 (the same numbers on every platform)
/// plus a log-uniform draw.
class Rng : public SplitMix64 {
 public:
  using SplitMix64::SplitMix64;
  using SplitMix64::uniform;
  /// Uniform in [0, 1).
  double uniform() { return unit(); }
  /// Log-uniform in [lo, hi).
  double log_uniform(double lo, double hi);
};

}  // namespace carom::bench
