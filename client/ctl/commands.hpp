#pragma once
/// \file The carom-ctl commands. Each run_* function takes its request as
/// the command line built it (cli.hpp; a bad command line never gets here),
/// connects as a controller (scenarios: a viewer), sends one command (or a script), prints the
/// result and returns the process exit status (values.hpp: kExit*).
///
/// Threading: the main thread only (watch and play install a SIGINT handler).

#include <string>

#include "carom/v1/protocol.pb.h"

namespace carom::ctl {

/// Options every command takes.
struct Globals {
  std::string server = "127.0.0.1:7878";  ///< HOST:PORT (env CAROM_SERVER)
  std::string token;                      ///< controller token (env CAROM_TOKEN)
  bool json = false;                      ///< print results as JSON
  double timeout_s = 10.0;                ///< connect and per-request wait, seconds
};

int run_ping(const Globals& g);
/// `command` is a Spawn.
int run_spawn(const Globals& g, const v1::Command& command);
/// `command` is a Remove.
int run_remove(const Globals& g, const v1::Command& command);
/// `command` is a SetBody.
int run_set(const Globals& g, const v1::Command& command);
/// `command` is an ApplyImpulse.
int run_impulse(const Globals& g, const v1::Command& command);
/// `command` is a SetParams; with no field of its params set, prints the
/// parameters from the Welcome instead.
int run_params(const Globals& g, const v1::Command& command);
int run_pause(const Globals& g);
int run_resume(const Globals& g);
/// `command` is a Step.
int run_step(const Globals& g, const v1::Command& command);
int run_reset(const Globals& g);
/// An existing file is parsed here and sent inline; anything else is a name
/// in the server's scenario directory.
int run_load(const Globals& g, const std::string& name_or_file);
int run_save(const Globals& g, const std::string& file);
int run_load_world(const Globals& g, const std::string& file);

enum class WorldFormat { kTable, kText, kJson };
int run_get_world(const Globals& g, WorldFormat format);
int run_stats(const Globals& g, bool reset_timing);
/// The scenarios the server can load by name, as a table (name, bodies,
/// description); connects as a viewer, so no token is needed.
int run_scenarios(const Globals& g);
/// One stats line per second for `seconds` (0 = until Ctrl-C), with what the
/// stream cost: kB/s and bytes per snapshot; with `bodies` the bodies travel
/// too (compact unless `plain`) and the line adds bytes per body per snapshot.
int run_watch(const Globals& g, double seconds, bool bodies, bool plain);
/// Sends the script of a scenario file at its ticks; with `load`, first loads
/// the scenario (without its script, which the server would run itself).
int run_play(const Globals& g, const std::string& file, bool load);

}  // namespace carom::ctl
