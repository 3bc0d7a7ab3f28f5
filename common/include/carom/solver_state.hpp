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
  double value = 0.0;  ///< accumulated relative normal velocity change, m/s (finite, in [0, 2 kMaxSpeed])
};

/// Wall bits of WallTouch::bits: which walls a body was pressed against.
inline constexpr std::uint32_t kWallBitMinX = 1, kWallBitMaxX = 2, kWallBitMinY = 4, kWallBitMaxY = 8;

/// What a body's contact with walls carried in the last substep (warm start
/// of the discrete solver's wall contacts), like WarmStart for a pair.
struct WallTouch {
  BodyId id = kAutoId;
  std::uint32_t bits = 0;  ///< kWallBit* flags, 1..15: the walls this value is for
  double value = 0.0;      ///< accumulated normal velocity change, m/s (finite, >= 0)
};

/// A body that a repair of the pair list gave a new anchor: where it was
/// then, rounded to float, and the skin it got (m).
struct MovedAnchor {
  BodyId id = kAutoId;
  float x = 0.0f;
  float y = 0.0f;
  float skin = 0.0f;  ///< in (0, 2 skin]
};

/// Everything but the bodies that decides the next step. Warm starts are
/// sorted by (a, b), wall touches by (id, bits), one wall each.
struct SolverState {
  std::uint64_t step = 0;  ///< steps taken so far (StepStats::step)
  double time = 0.0;       ///< simulated seconds so far (StepStats::time)
  std::vector<WarmStart> warm;
  std::vector<WallTouch> walls;
  /// The broad phase's anchors: each body's position (in id order) rounded to
  /// float when the candidate pair list was last built, and the skin it was
  /// built with (m). The list, its colours and so the order contacts are
  /// solved in follow from them: with them a restored world continues
  /// bit-identically; without (empty, e.g. a save from an older carom) it
  /// rebuilds the list from the current positions and continues equivalently.
  std::vector<float> anchor_x, anchor_y;
  double skin = 0.0;
  /// Each body's skin (m, in id order, each in (0, skin]) when the list was
  /// built with skins per body (bodies resting in a pile get smaller ones
  /// than the fastest body needs); empty: every body had `skin`.
  std::vector<float> anchor_skin;
  /// The list was left uncoloured when it was built (no body carried load:
  /// a gas), so each substep colours its own contacts instead; only with the
  /// anchors, and never with skins per body. False in saves from before it
  /// existed, whose lists were always coloured.
  bool contact_colours = false;
  /// The repairs of the list since it was built, in order, each its bodies
  /// in id order: where a few bodies had gone half their skins from their
  /// anchors, they got new anchors and larger skins and the list gained
  /// their new partners, instead of a rebuild. The anchors and skins above
  /// are the build's. Only with the anchors, never with contact_colours.
  /// Empty in saves from before repairs existed.
  std::vector<std::vector<MovedAnchor>> repairs;
};

}  // namespace carom
