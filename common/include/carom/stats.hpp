#pragma once
/// \file Per-step statistics and collision events.

#include <cstdint>

#include "carom/body.hpp"
#include "carom/vec2.hpp"

namespace carom {

/// One collision: an impact between two approaching bodies.
struct CollisionEvent {
  BodyId a = kAutoId;  ///< lower id
  BodyId b = kAutoId;  ///< higher id
  /// Radius-weighted contact point (r_b p_a + r_a p_b) / (r_a + r_b) at
  /// detection: on the surface of both when they touch, in proportion when
  /// they overlap. Metres.
  Vec2 point;
  /// Impulse on b (a gets the opposite), N s. For Verlet: momentum change implied
  /// by the position correction.
  Vec2 impulse;
  std::uint32_t substep = 0;  ///< which substep of the step (continuous: 0)
};

/// Wall-clock seconds spent in each stage of the last step (summed over
/// substeps). Continuous: the kick, the swept-extent pairs, the predictions,
/// the event loop and the drift to the end of the step, in that order.
struct StageTimes {
  double integrate_velocities = 0, find_pairs = 0, collide = 0, resolve_contacts = 0,
         integrate_positions = 0, stats = 0, total = 0;
};

/// What the last step did. Deterministic fields are bit-identical for any thread count.
struct StepStats {
  std::uint64_t step = 0;          ///< steps taken so far
  double time = 0.0;               ///< simulated seconds so far
  std::uint32_t bodies = 0;
  std::uint64_t contacts = 0;      ///< touching or overlapping pairs, summed over substeps (continuous: 0)
  /// Impacts (discrete: approach faster than |g| dt, restitution applied;
  /// Verlet: pairs pushed apart; continuous: pair collisions processed),
  /// summed over substeps. One event each.
  std::uint64_t collisions = 0;
  /// Continuous: events processed this step (pair collisions and wall
  /// impacts; stale predictions are not counted). 0 for the other solvers.
  std::uint64_t events_processed = 0;
  /// Continuous: wall impacts this step. 0 for the other solvers.
  std::uint64_t wall_collisions = 0;
  /// Continuous: true when the step reached its event budget
  /// (WorldConfig::continuous_events_per_body) and ended early.
  bool events_capped = false;
  /// Continuous: normal momentum the walls took from the bodies this step,
  /// sum of |J| over wall impacts, N s. Pressure = wall_impulse / (dt x wall
  /// perimeter). 0 for the other solvers.
  double wall_impulse = 0.0;
  std::uint64_t events_dropped = 0;  ///< events beyond Params::max_events
  /// Bodies removed at the end of this step for leaving the limits every
  /// input is held to (|position| <= kMaxCoordinate, |velocity| <= kMaxSpeed,
  /// finite): a world never holds what its own loader would refuse.
  /// World::escaped_ids() names them.
  std::uint32_t escaped = 0;
  std::uint64_t candidate_pairs = 0; ///< broad-phase pairs in the current pair list (continuous: swept pairs plus the neighbour pairs the step's queries found)
  std::uint32_t rounds = 0;        ///< most rounds of the contact schedule in a substep
  std::uint32_t pair_rebuilds = 0; ///< broad-phase rebuilds during this step
  std::uint32_t pair_repairs = 0;  ///< broad-phase repairs during this step (a few bodies re-anchored instead of a rebuild)
  double kinetic_energy = 0.0;     ///< J, sum 1/2 m v^2 after the step
  /// J, mutual gravity's potential energy after the step, 1/2 sum_i m_i phi_i
  /// with the softened potential (as the method sums it); 0 when it is off.
  double potential_energy = 0.0;
  Vec2 momentum;                   ///< kg m/s after the step
  StageTimes seconds;              ///< not deterministic: wall-clock
  /// Threads the step ran on: the world's, or 1 where it measured one to be
  /// faster (WorldConfig::adapt_threads). Not deterministic; the results are.
  std::uint32_t threads = 0;
};

}  // namespace carom
