#pragma once
/// \file Bodies: stable ids, the description used to add one, and the read view.

#include <cstdint>
#include <limits>
#include <span>

#include "carom/vec2.hpp"

namespace carom {

/// Stable body id. Assigned once, never reused within a world (not even after
/// remove or clear). Every ordering rule in carom is written on these ids.
using BodyId = std::uint32_t;

/// Ask the world to pick the next free id.
inline constexpr BodyId kAutoId = 0;
/// Largest id a world hands out or accepts.
inline constexpr BodyId kMaxBodyId = std::numeric_limits<BodyId>::max() - 1;

/// What to add. Units: metres, metres/second, kilograms.
struct BodyDesc {
  BodyId id = kAutoId;  ///< kAutoId, or an explicit id (restoring a saved world)
  Vec2 position;
  Vec2 velocity;
  double radius = 0.5;  ///< must be finite and > 0
  double mass = 0.0;    ///< 0 means density x area (Params::density); else finite and > 0
};

/// One body's full state, as returned by World::body().
struct BodyState {
  BodyId id = kAutoId;
  Vec2 position;
  Vec2 velocity;
  double radius = 0.0;
  double mass = 0.0;
};

/// Read-only structure-of-arrays view of every body, sorted by id. Valid until
/// the next call that changes the world. Same thread as the World's owner.
struct BodiesView {
  std::span<const BodyId> id;
  std::span<const double> x, y, vx, vy, radius, mass;

  std::size_t size() const { return id.size(); }
};

}  // namespace carom
