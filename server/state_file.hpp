#pragma once
/// \file The world a server starts with (--state, --scenario) and the state
/// file it saves (--state, --save-on-exit, --save-every).

#include <memory>
#include <string>

#include "carom/status.hpp"
#include "options.hpp"
#include "sim_state.hpp"

namespace carom::server {

/// A new SimState in *sim: the --state file when it exists (or, when it does
/// not load and --state-on-error is empty, that file renamed aside), then the
/// --scenario. On failure the message names the file and why. Before the
/// simulation thread starts.
Status load_initial_world(const ServerOptions& options, std::unique_ptr<SimState>* sim);

/// Writes the world to `path` as a SavedWorld, atomically. The simulation
/// thread, or any thread once it has ended.
Status save_state_file(const SimState& sim, const std::string& path);

}  // namespace carom::server
