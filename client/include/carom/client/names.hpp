#pragma once
/// \file The command-line names of the protocol's enums, read from the .proto
/// itself (SOLVER_CONTINUOUS is "continuous", GRAVITY_TREE is "tree"), so a
/// value added to the protocol is a name here with no list to update.

#include <string>
#include <string_view>
#include <vector>

#include "carom/v1/world.pb.h"

namespace carom::client {

/// "discrete", "verlet", "continuous"; "unspecified" for 0 or an unknown value.
std::string solver_name(v1::Solver solver);
/// Every solver's name but unspecified's, in enum order.
std::vector<std::string> solver_names();
/// The solver of a name; false for none.
bool parse_solver(std::string_view name, v1::Solver* out);

/// "auto", "direct", "tree" (GravityMethod), likewise.
std::string gravity_method_name(v1::GravityMethod method);
std::vector<std::string> gravity_method_names();
bool parse_gravity_method(std::string_view name, v1::GravityMethod* out);

}  // namespace carom::client
