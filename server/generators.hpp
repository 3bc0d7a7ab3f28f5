#pragma once
/// \file Body generators of Spawn and Scenario: a grid, and random bodies in a
/// box or a disc placed without overlap. Deterministic: the same generator
/// message and the same obstacles give the same bodies, bit for bit, on any
/// thread count (a splitmix64 stream seeded from `seed`, arithmetic only).
///
/// Threading: the simulation thread (they read the World).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "carom/v1/world.pb.h"
#include "carom/world.hpp"

namespace carom::server {

/// Tries per body before a random generator gives up on placing it.
inline constexpr int kPlacementAttempts = 100;

/// Name of the generator's shape field ("grid", "random_box", "random_disc"),
/// "" when none is set.
std::string generator_shape(const v1::Generator& generator);

/// How many bodies the generator asks for, before generating any (a grid's
/// columns x rows in 64 bits), so that a request for 10^9 bodies is refused
/// without allocating.
std::uint64_t generator_count(const v1::Generator& generator);

/// Appends the generator's bodies (auto ids) to *out. Random bodies lie
/// wholly inside their region (centre at least the radius from its edge) and
/// overlap neither each other, nor `world`'s bodies, nor `pending` (bodies
/// about to be added with them). Fails, with *out unchanged, on bad fields
/// (kInvalidArgument), a region outside the world's box (kOutOfRange) or
/// when a body cannot be placed in kPlacementAttempts tries (kOutOfRange
/// "random_box.count: placed only K of N bodies without overlap; ...").
/// Status::field is relative to the Generator ("grid.spacing").
/// Radius, mass and velocity limits beyond these are World::add_bodies's.
Status generate(const v1::Generator& generator, const World& world, std::span<const BodyDesc> pending,
                std::vector<BodyDesc>* out);

}  // namespace carom::server
