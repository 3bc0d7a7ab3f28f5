#pragma once
/// \file The carom-ctl commands. Each run_* function builds its request from
/// the command line first (a UsageError before any connection is made), then
/// connects as a controller, sends one command (or a script), prints the
/// result and returns the process exit status (values.hpp: kExit*).
///
/// Threading: the main thread only (watch and play install a SIGINT handler).

#include <cstdint>
#include <string>
#include <vector>

#include "carom/v1/protocol.pb.h"

namespace carom::ctl {

/// Options every command takes.
struct Globals {
  std::string server = "127.0.0.1:7878";  ///< HOST:PORT (env CAROM_SERVER)
  std::string token;                      ///< controller token (env CAROM_TOKEN)
  bool json = false;                      ///< print results as JSON
  double timeout_s = 10.0;                ///< connect and per-request wait, seconds
};

/// spawn: explicit bodies and at most one generator. Empty string = not given.
struct SpawnOptions {
  std::vector<std::string> bodies;  ///< "x,y[,vx,vy[,radius[,mass]]]"
  std::string grid;                 ///< "X,Y": lower-left centre
  std::string random_box;           ///< "X0,Y0,X1,Y1"
  std::string random_disc;          ///< "X,Y,R"
  std::string count, columns, rows, spacing, radius, speed, velocity, seed, mass;
};

/// params: what to change. Empty string / false = leave as it is.
struct ParamsOptions {
  std::string gravity, restitution, damping, solver, substeps, iterations, dt, density, tick_hz, bounds;
  std::string gravity_mode, big_g, softening, gravity_method, theta;  // mutual gravity
  bool unbounded = false;
  bool any() const;
};

/// Radius of a body or generator when the command line gives none (m).
inline constexpr double kDefaultRadius = 0.5;

/// The Spawn command for `options` (throws UsageError).
v1::Command make_spawn(const SpawnOptions& options);
/// The SetParams command for `options` (throws UsageError).
v1::Command make_set_params(const ParamsOptions& options);

int run_ping(const Globals& g);
int run_spawn(const Globals& g, const SpawnOptions& options);
int run_remove(const Globals& g, const std::vector<std::uint32_t>& ids, bool all);
int run_set(const Globals& g, std::uint32_t id, const std::string& position, const std::string& velocity);
int run_impulse(const Globals& g, std::uint32_t id, const std::string& impulse);
/// With no option: prints the parameters from the Welcome.
int run_params(const Globals& g, const ParamsOptions& options);
int run_pause(const Globals& g);
int run_resume(const Globals& g);
int run_step(const Globals& g, std::uint64_t count);
int run_reset(const Globals& g);
/// An existing file is parsed here and sent inline; anything else is a name
/// in the server's scenario directory.
int run_load(const Globals& g, const std::string& name_or_file);
int run_save(const Globals& g, const std::string& file);
int run_load_world(const Globals& g, const std::string& file);

enum class WorldFormat { kTable, kText, kJson };
int run_get_world(const Globals& g, WorldFormat format);
int run_stats(const Globals& g, bool reset_timing);
/// One stats line per second for `seconds` (0 = until Ctrl-C).
int run_watch(const Globals& g, double seconds);
/// Sends the script of a scenario file at its ticks; with `load`, first loads
/// the scenario (without its script, which the server would run itself).
int run_play(const Globals& g, const std::string& file, bool load);

}  // namespace carom::ctl
