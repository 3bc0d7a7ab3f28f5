#pragma once
/// \file World: one simulated world of circular bodies.
///
/// Threading: a World is owned by one thread (the simulation thread). Every
/// member function must be called from that thread; step() fans work out to
/// the World's own oneTBB arena internally.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "carom/body.hpp"
#include "carom/params.hpp"
#include "carom/solver_state.hpp"
#include "carom/stats.hpp"
#include "carom/status.hpp"

namespace carom {

namespace detail {
struct WorldState;
}

class World {
 public:
  /// A world with the given configuration and parameters. Parameters that fail
  /// validation are replaced by the defaults; call set_params to get the reason.
  explicit World(const WorldConfig& config = {}, const Params& params = {});
  ~World();
  World(World&&) noexcept;
  World& operator=(World&&) noexcept;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /// Validates every field, then replaces the parameters. Fails (world
  /// unchanged) if a field is invalid or if a body would be outside new bounds.
  Status set_params(const Params& params);
  const Params& params() const;
  const WorldConfig& config() const;

  /// Adds one body. On success writes the id to *id_out (if given). A
  /// refusal names the BodyDesc's field ("radius", "position.x").
  Status add_body(const BodyDesc& desc, BodyId* id_out = nullptr);
  /// Adds all bodies or none. A refusal of one body carries its index in the
  /// batch (Status::index(), batch "bodies", field "bodies[12].radius"); one
  /// of the batch as a whole names "bodies".
  Status add_bodies(std::span<const BodyDesc> descs, std::vector<BodyId>* ids_out = nullptr);
  /// Removes one body; kNotFound if unknown.
  Status remove_body(BodyId id);
  /// Removes all the listed bodies or, if any id is unknown
  /// (kNotFound) or listed twice (kInvalidArgument), none; the refusal
  /// carries the id's index (batch "ids", field "ids[2]").
  Status remove_bodies(std::span<const BodyId> ids);
  /// Removes every body. Ids are still never reused.
  void clear();

  /// Teleports a body (metres). Must be finite and inside the box.
  Status set_position(BodyId id, Vec2 position);
  /// Sets a body's velocity (m/s). Must be finite.
  Status set_velocity(BodyId id, Vec2 velocity);
  /// Adds impulse / mass to the velocity (impulse in N s). Must be finite.
  Status apply_impulse(BodyId id, Vec2 impulse);

  /// One body's state; kNotFound if unknown.
  Status body(BodyId id, BodyState* out) const;
  /// True if the id names a live body.
  bool contains(BodyId id) const;
  /// Number of bodies.
  std::size_t size() const;
  /// All bodies, sorted by id (structure of arrays).
  BodiesView bodies() const;
  /// The id the next auto-id body will get.
  BodyId next_id() const;
  /// Ids of removed bodies, sorted: they are never handed out or accepted again.
  std::span<const BodyId> retired_ids() const;
  /// Marks ids as used, for restoring a saved world after its live bodies are
  /// added: every id in `retired` (1..kMaxBodyId, not a live body) is never
  /// handed out or accepted again, and the next auto id becomes at least
  /// `next_id` (and above every retired id). kInvalidArgument naming
  /// "retired[3]" (batch "retired") or "next_id"; the world is unchanged on
  /// error.
  Status reserve_ids(BodyId next_id, std::span<const BodyId> retired);

  /// The hidden solver state (step count, time, warm starts of resting
  /// contacts, bodies pressed on walls) that, with the bodies, decides the
  /// next step. Warm starts that the next step would drop (bodies were added
  /// or removed since the last step) are not included.
  SolverState solver_state() const;
  /// Replaces the hidden solver state, so that a world rebuilt from the same
  /// bodies, parameters and configuration continues exactly as the world that
  /// produced `state` (call it after adding the bodies: adding or removing
  /// bodies afterwards drops warm starts and moving them drops wall touches,
  /// as for the original). Fails (world unchanged) when an id is not a live
  /// body (kNotFound, "solver.warm[3].a": batch "solver.warm" or
  /// "solver.walls", item field "a"), a pair is not lower id first or
  /// appears twice, a value is not finite and >= 0, or wall bits are not in
  /// 1..15 (kInvalidArgument).
  Status restore_solver_state(const SolverState& state);

  /// Advances the world by params().dt (params().substeps substeps; the
  /// continuous solver: one kick of gravity and damping, then every impact in
  /// time order, see docs/architecture.md).
  void step();
  /// Statistics of the last step (kinetic energy and momentum are kept
  /// current after every change, so they are valid before the first step too).
  const StepStats& stats() const;
  /// Collision events of the last step, in a deterministic order.
  std::span<const CollisionEvent> events() const;
  /// Ids of the bodies the last step removed for leaving the coordinate or
  /// speed limits (StepStats::escaped), sorted; their ids are retired.
  std::span<const BodyId> escaped_ids() const;
  /// 64-bit hash over the bit patterns of every body's id, position, velocity,
  /// radius and mass, in id order (bodies only: not the step count or the
  /// parameters). Equal hashes mean, with overwhelming probability,
  /// bit-identical bodies.
  std::uint64_t state_hash() const;

  /// Worker threads used by step() (results never depend on it).
  int threads() const;

 private:
  std::unique_ptr<detail::WorldState> s_;
};

/// The hash World::state_hash computes, over any bodies in id order: for a
/// copy taken off the simulation thread (the server hashes its snapshot copy
/// on another thread). Same bits, same hash.
std::uint64_t state_hash(const BodiesView& bodies);

}  // namespace carom
