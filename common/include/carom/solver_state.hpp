#pragma once
/// \file The solver state a World carries beside its bodies: what a saved
/// world needs, on top of the bodies, to continue bit-identically.

#include <cstdint>
#include <vector>

#include "carom/body.hpp"

namespace carom {

/// The velocity change a resting contact carried in the last substep (warm
/// start of the discrete solver), by id pair.
struct WarmStart {
  BodyId a = kAutoId;  ///< lower id
  BodyId b = kAutoId;  ///< higher id
  double value = 0.0;  ///< accumulated relative normal velocity change, m/s (finite, >= 0)
};

/// Wall bits of WallTouch::bits: which walls a body was pressed against.
inline constexpr std::uint32_t kWallBitMinX = 1, kWallBitMaxX = 2, kWallBitMinY = 4, kWallBitMaxY = 8;

/// A body pressed against walls after the last position update (the discrete
/// solver treats it as a contact with those walls in the next substep).
struct WallTouch {
  BodyId id = kAutoId;
  std::uint32_t bits = 0;  ///< kWallBit* flags, 1..15
};

/// Everything but the bodies that decides the next step. Warm starts are
/// sorted by (a, b), wall touches by id.
struct SolverState {
  std::uint64_t step = 0;  ///< steps taken so far (StepStats::step)
  double time = 0.0;       ///< simulated seconds so far (StepStats::time)
  std::vector<WarmStart> warm;
  std::vector<WallTouch> walls;
};

}  // namespace carom
