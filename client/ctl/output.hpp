#pragma once
/// \file What carom-ctl prints: protobuf messages as JSON, and the readable
/// forms of parameters, stats and worlds.
///
/// Threading: the functions write to the stream they are given; one caller
/// at a time per stream.

#include <cstdio>
#include <string>

#include <google/protobuf/message.h>

#include "carom/v1/protocol.pb.h"

namespace carom::ctl {

/// A message as one line of JSON (protobuf's JSON mapping, proto field names,
/// fields with default values included).
std::string to_json(const google::protobuf::Message& message);

/// Name of the command in a Command's oneof ("apply_impulse"); "empty" when unset.
std::string command_name(const v1::Command& command);

/// Parameters, one per line ("restitution   0.9").
void print_params(std::FILE* out, const v1::WorldParams& params);

/// Stats, one per line (tick, bodies, energy, tick timing, ...).
void print_stats(std::FILE* out, const v1::Stats& stats);

/// A world as a table: a "# tick ..." line, a header, then one line per body:
/// id x y vx vy radius mass (SI units).
void print_world_table(std::FILE* out, const v1::SavedWorld& world);

}  // namespace carom::ctl
