#pragma once
/// \file carom-ctl's command line: every subcommand and option, typed by
/// CLI11 (numbers, comma-separated lists of a fixed length, ids that fit),
/// the rules for which options need or exclude which, and the request each
/// subcommand sends. Everything wrong with a command line is a
/// CLI::ParseError from CommandLine::parse that names the option, before any
/// connection is made (exit 2).
///
/// Threading: the main thread (one CommandLine per process, or per test).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "carom/v1/protocol.pb.h"
#include "commands.hpp"

namespace carom::ctl {

/// spawn: explicit bodies and at most one generator. nullopt or empty: not given.
struct SpawnOptions {
  std::vector<std::vector<double>> bodies;           ///< each x,y[,vx,vy[,radius[,mass]]] (SI)
  std::optional<std::array<double, 2>> grid;         ///< lower-left centre, m
  std::optional<std::array<double, 4>> random_box;   ///< x0,y0,x1,y1, m
  std::optional<std::array<double, 3>> random_disc;  ///< centre x,y and radius, m
  std::optional<std::uint32_t> count;                ///< random generators
  std::optional<std::uint32_t> columns, rows;        ///< grid
  std::optional<double> spacing;                     ///< grid, m
  std::optional<std::array<double, 2>> velocity;     ///< grid, m/s
  std::vector<double> radius;                        ///< m: one value, or MIN,MAX for random generators
  std::vector<double> speed;                         ///< m/s: MIN[,MAX], random generators
  std::optional<std::uint64_t> seed;                 ///< random generators
  std::optional<double> mass;                        ///< generators, kg (0 = density x area)
};

/// params: what to change. nullopt or false: leave as it is.
struct ParamsOptions {
  std::optional<std::array<double, 2>> gravity;  ///< m/s^2
  std::optional<double> restitution, damping, dt, density, tick_hz;
  std::optional<std::string> solver;  ///< a name from client::solver_names()
  std::optional<std::uint32_t> substeps, iterations;
  std::optional<std::array<double, 4>> bounds;  ///< x0,y0,x1,y1, m
  bool unbounded = false;
  std::optional<std::string> gravity_mode;    ///< "uniform", "mutual" or "both"
  std::optional<double> big_g, softening, theta;
  std::optional<std::string> gravity_method;  ///< a name from client::gravity_method_names()
};

/// Radius of a body or generator when the command line gives none (m).
inline constexpr double kDefaultRadius = 0.5;

/// The Spawn command for options that CommandLine has parsed (so that
/// every body has 2, 4, 5 or 6 numbers and at most one generator is given).
v1::Command make_spawn(const SpawnOptions& options);
/// The SetParams command; its params has no field set when no option is given.
v1::Command make_set_params(const ParamsOptions& options);

/// The CLI11 app of carom-ctl and the values it parses into. Not copyable:
/// CLI11 holds pointers to the members.
class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  /// Reads a command line (argv[0] is the program). Throws CLI::ParseError
  /// when it is bad, and for --help and --version.
  void parse(int argc, const char* const* argv);
  /// Prints `e` as CLI11 does (help and version to stdout; errors to stderr,
  /// after "carom-ctl: "). Returns the exit status: kExitOk or kExitUsage.
  int exit(const CLI::ParseError& e) const;

  /// The parsed options every command takes.
  const Globals& globals() const { return globals_; }
  /// The command that the parsed subcommand sends when it is built from the
  /// command line (spawn, remove, set, impulse, params, step); otherwise an
  /// empty Command.
  v1::Command command() const;
  /// Runs the parsed subcommand; returns the process exit status.
  int run() const;

 private:
  CLI::App app_;
  Globals globals_;

  CLI::App* ping_ = nullptr;
  CLI::App* spawn_ = nullptr;
  SpawnOptions spawn_options_;
  CLI::App* remove_ = nullptr;
  std::vector<std::uint32_t> remove_ids_;
  bool remove_all_ = false;
  CLI::App* set_ = nullptr;
  std::uint32_t set_id_ = 0;
  std::optional<std::array<double, 2>> set_position_, set_velocity_;
  CLI::App* impulse_ = nullptr;
  std::uint32_t impulse_id_ = 0;
  std::array<double, 2> impulse_value_{};
  CLI::App* params_ = nullptr;
  ParamsOptions params_options_;
  CLI::App* pause_ = nullptr;
  CLI::App* resume_ = nullptr;
  CLI::App* step_ = nullptr;
  std::uint64_t step_count_ = 1;
  CLI::App* reset_ = nullptr;
  CLI::App* load_ = nullptr;
  std::string load_target_;
  CLI::App* save_ = nullptr;
  std::string save_file_;
  CLI::App* load_world_ = nullptr;
  std::string load_world_file_;
  CLI::App* get_world_ = nullptr;
  bool world_text_ = false, world_json_ = false;
  CLI::App* stats_ = nullptr;
  CLI::App* scenarios_ = nullptr;
  bool reset_timing_ = false;
  CLI::App* watch_ = nullptr;
  double watch_seconds_ = 0.0;
  bool watch_bodies_ = false;
  bool watch_plain_ = false;
  CLI::App* play_ = nullptr;
  std::string play_file_;
  bool play_load_ = false;
};

}  // namespace carom::ctl
