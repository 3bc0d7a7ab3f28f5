#pragma once
/// \file Conversions between the World's types and the protocol's:
/// Params <-> v1::WorldParams, v1::Body -> BodyDesc, World <-> v1::SavedWorld.
/// Failed conversions name the field (Status::field) relative to the message
/// converted ("solver", "x[3]", "solver.warm_a[2]").
///
/// Threading: pure functions, except those taking a World, which belong to
/// the World's owner thread (the simulation thread).

#include <string>

#include "carom/format.hpp"
#include "carom/v1/protocol.pb.h"
#include "carom/v1/world.pb.h"
#include "carom/world.hpp"

namespace carom::server {

/// Metres (or m/s) from a protocol vector; unset reads as (0, 0).
Vec2 from_proto(const v1::Vec2& v);
/// Writes a vector into a protocol vector.
void to_proto(Vec2 v, v1::Vec2* out);

/// Applies the fields of `in` that are set (has_*) to *params and *tick_hz;
/// the others keep their values. Checks what the World cannot see: solver
/// enum values (SOLVER_UNSPECIFIED keeps the solver; unknown values are
/// kInvalidArgument "solver: unknown value 7"), integers too large for Params,
/// and tick_hz in [kMinTickHz, kMaxTickHz] (Hz). The rest is for
/// World::set_params to judge. Outputs unchanged on error.
Status apply_params(const v1::WorldParams& in, Params* params, double* tick_hz);

/// Every field of *out, tick_hz (Hz) included.
void params_to_proto(const Params& params, double tick_hz, v1::WorldParams* out);

/// A body to add (id 0 = auto). Not validated: World::add_bodies does that.
BodyDesc body_from_proto(const v1::Body& body);

/// Every SavedWorld field the World knows: format, params (all set, with
/// tick_hz), bodies sorted by id, next_id, retired ids, solver state and
/// state hash. tick and paused are left to the caller.
void save_world(const World& world, double tick_hz, v1::SavedWorld* out);

/// A new World (configuration `config`) holding exactly the saved world:
/// parameters (unset ones take the defaults; tick_hz defaults to
/// `default_tick_hz`), bodies with their ids, retired ids, next id and solver
/// state; checked against saved.state_hash when that is nonzero. On success
/// moves it into *out and the tick rate into *tick_hz; on error leaves both
/// alone and names the SavedWorld field ("format", "radius[3]", "x[3]" for
/// a body's position.x, "solver.warm_a[2]", "state_hash"), with its index for
/// a parallel array's entry.
Status load_world(const v1::SavedWorld& saved, const WorldConfig& config, double default_tick_hz, World* out,
                  double* tick_hz);

}  // namespace carom::server
