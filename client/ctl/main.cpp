// carom-ctl: script a running carom-server from the shell. One subcommand per
// protocol command; see commands.hpp for what each does and `carom-ctl
// COMMAND --help` for its options.
//
// Exit status: 0 done, 1 the server refused the command (or a local file was
// unreadable), 2 bad command line or no connection.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "carom/client/names.hpp"
#include "commands.hpp"
#include "values.hpp"

namespace {

using namespace carom::ctl;

constexpr const char* kVersion = "carom-ctl 0.1.0";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"carom-ctl: send commands to a carom-server as a controller", "carom-ctl"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  // Global options may also follow the subcommand ("carom-ctl stats --json").
  app.fallthrough();

  Globals g;
  app.add_option("--server", g.server, "server address HOST:PORT")
      ->envname("CAROM_SERVER")
      ->capture_default_str();
  app.add_option("--token", g.token, "controller token")->envname("CAROM_TOKEN");
  app.add_flag("--json", g.json, "print results as JSON (the CommandResult)");
  app.add_option("--timeout", g.timeout_s, "seconds to wait for the connection and for each result")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  auto* ping = app.add_subcommand("ping", "round-trip time to the server");

  SpawnOptions spawn_options;
  auto* spawn = app.add_subcommand("spawn", "add bodies (explicit ones and/or one generator)");
  spawn->add_option("--body", spawn_options.bodies, "a body at x,y (m) with velocity vx,vy (m/s), radius (m, default 0.5), mass (kg, 0 = density x area); repeatable")
      ->type_name("X,Y[,VX,VY[,R[,M]]]")
      ->allow_extra_args(false);
  auto* grid = spawn->add_option("--grid", spawn_options.grid, "grid generator: lower-left centre")->type_name("X,Y");
  auto* box = spawn->add_option("--random-box", spawn_options.random_box, "random generator in a box")
                  ->type_name("X0,Y0,X1,Y1");
  auto* disc = spawn->add_option("--random-disc", spawn_options.random_disc, "random generator in a disc (centre, radius)")
                   ->type_name("X,Y,R");
  grid->excludes(box)->excludes(disc);
  box->excludes(disc);
  spawn->add_option("--count", spawn_options.count, "random generators: number of bodies")->type_name("N");
  spawn->add_option("--radius", spawn_options.radius, "body radius, m (a MIN,MAX range for random generators; default 0.5)")
      ->type_name("MIN[,MAX]");
  spawn->add_option("--speed", spawn_options.speed, "random generators: speed range, m/s (default 0)")->type_name("MIN[,MAX]");
  spawn->add_option("--seed", spawn_options.seed, "random generators: seed (default 1)")->type_name("S");
  spawn->add_option("--columns", spawn_options.columns, "grid: columns")->type_name("C");
  spawn->add_option("--rows", spawn_options.rows, "grid: rows")->type_name("R");
  spawn->add_option("--spacing", spawn_options.spacing, "grid: distance between centres, m (default 2.2 x radius)")->type_name("D");
  spawn->add_option("--velocity", spawn_options.velocity, "grid: velocity of every body, m/s")->type_name("VX,VY");
  spawn->add_option("--mass", spawn_options.mass, "generators: mass of every body, kg (default 0 = density x area)")->type_name("M");

  std::vector<std::uint32_t> remove_ids;
  bool remove_all = false;
  auto* remove = app.add_subcommand("remove", "remove bodies");
  remove->add_option("ids", remove_ids, "body ids")->type_name("ID...");
  remove->add_flag("--all", remove_all, "remove every body");

  std::uint32_t set_id = 0;
  std::string set_position, set_velocity;
  auto* set = app.add_subcommand("set", "set a body's position and/or velocity");
  set->add_option("id", set_id, "body id")->required();
  set->add_option("--position", set_position, "new position, m")->type_name("X,Y");
  set->add_option("--velocity", set_velocity, "new velocity, m/s")->type_name("VX,VY");

  std::uint32_t impulse_id = 0;
  std::string impulse_value;
  auto* impulse = app.add_subcommand("impulse", "apply an impulse to a body");
  impulse->add_option("id", impulse_id, "body id")->required();
  impulse->add_option("impulse", impulse_value, "impulse, N s")->type_name("JX,JY")->required();

  ParamsOptions params_options;
  auto* params = app.add_subcommand("params", "change world parameters (with no option: print them)");
  params->add_option("--gravity", params_options.gravity, "gravity, m/s^2")->type_name("X,Y");
  params->add_option("--restitution", params_options.restitution, "restitution in [0, 1]")->type_name("E");
  params->add_option("--damping", params_options.damping, "linear damping, 1/s")->type_name("C");
  params->add_option("--solver", params_options.solver, "solver")
      ->type_name("discrete|verlet|continuous")
      ->check(CLI::IsMember(carom::client::solver_names()));
  params->add_option("--substeps", params_options.substeps, "substeps per tick (1..64)")->type_name("N");
  params->add_option("--iterations", params_options.iterations, "solver passes per substep (1..64)")->type_name("N");
  params->add_option("--dt", params_options.dt, "seconds per tick")->type_name("S");
  params->add_option("--density", params_options.density, "kg/m^2 for bodies spawned with mass 0")->type_name("D");
  params->add_option("--tick-hz", params_options.tick_hz, "server ticks per second (1..1000)")->type_name("HZ");
  params->add_option("--gravity-mode", params_options.gravity_mode,
                     "uniform (the --gravity vector only), mutual (bodies attract each other, no vector) or both")
      ->type_name("uniform|mutual|both")
      ->check(CLI::IsMember({"uniform", "mutual", "both"}));
  params->add_option("--G", params_options.big_g, "mutual gravity's constant, (0, 1e6]")->type_name("G");
  params->add_option("--softening", params_options.softening, "mutual gravity's Plummer softening, m")->type_name("EPS");
  params->add_option("--gravity-method", params_options.gravity_method, "mutual gravity's summation")
      ->type_name("auto|direct|tree")
      ->check(CLI::IsMember(carom::client::gravity_method_names()));
  params->add_option("--theta", params_options.theta, "tree opening angle, (0, 1.5]")->type_name("T");
  auto* bounds = params->add_option("--bounds", params_options.bounds, "walled box, m")->type_name("X0,Y0,X1,Y1");
  auto* unbounded = params->add_flag("--unbounded", params_options.unbounded, "no walls at all");
  bounds->excludes(unbounded);

  auto* pause = app.add_subcommand("pause", "pause the simulation");
  auto* resume = app.add_subcommand("resume", "resume the simulation");

  std::uint64_t step_count = 1;
  auto* step = app.add_subcommand("step", "advance a paused world by N ticks");
  step->add_option("count", step_count, "ticks (1..100000)")->capture_default_str();

  auto* reset = app.add_subcommand("reset", "back to the world as the last scenario or load left it");

  std::string load_target;
  auto* load = app.add_subcommand(
      "load", "load a scenario: a local .txtpb file (sent inline) or a name in the server's scenario directory");
  load->add_option("scenario", load_target, "NAME or FILE")->type_name("NAME_OR_FILE")->required();

  std::string save_file;
  auto* save = app.add_subcommand("save", "save the complete world (binary SavedWorld) to FILE");
  save->add_option("file", save_file, "output file")->type_name("FILE")->required();

  std::string load_world_file;
  auto* load_world = app.add_subcommand("load-world", "replace the world with a saved one (binary or .txtpb)");
  load_world->add_option("file", load_world_file, "SavedWorld file")->type_name("FILE")->required();

  bool world_text = false, world_json = false;
  auto* get_world = app.add_subcommand("get-world", "print every body at full precision (default: a table)");
  auto* text_flag = get_world->add_flag("--text", world_text, "protobuf text format of the SavedWorld");
  auto* json_flag = get_world->add_flag("--json", world_json, "JSON of the SavedWorld");
  text_flag->excludes(json_flag);

  bool reset_timing = false;
  auto* stats = app.add_subcommand("stats", "print the server's statistics");
  stats->add_flag("--reset-timing", reset_timing, "start a new tick-time measurement window");

  double watch_seconds = 0.0;
  auto* watch = app.add_subcommand("watch", "print a live stats line every second (Ctrl-C to stop)");
  watch->add_option("--seconds", watch_seconds, "stop after S seconds (0 = never)")
      ->type_name("S")
      ->check(CLI::NonNegativeNumber);

  std::string play_file;
  bool play_load = false;
  auto* play = app.add_subcommand("play", "send a scenario file's script at its ticks, from the tick play starts at");
  play->add_option("file", play_file, "scenario file")->type_name("FILE")->required();
  play->add_flag("--load", play_load, "load the scenario (without its script) first; ticks count from the load");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (ping->parsed()) return run_ping(g);
    if (spawn->parsed()) return run_spawn(g, spawn_options);
    if (remove->parsed()) return run_remove(g, remove_ids, remove_all);
    if (set->parsed()) return run_set(g, set_id, set_position, set_velocity);
    if (impulse->parsed()) return run_impulse(g, impulse_id, impulse_value);
    if (params->parsed()) return run_params(g, params_options);
    if (pause->parsed()) return run_pause(g);
    if (resume->parsed()) return run_resume(g);
    if (step->parsed()) return run_step(g, step_count);
    if (reset->parsed()) return run_reset(g);
    if (load->parsed()) return run_load(g, load_target);
    if (save->parsed()) return run_save(g, save_file);
    if (load_world->parsed()) return run_load_world(g, load_world_file);
    if (get_world->parsed()) {
      return run_get_world(g, world_text ? WorldFormat::kText : world_json ? WorldFormat::kJson : WorldFormat::kTable);
    }
    if (stats->parsed()) return run_stats(g, reset_timing);
    if (watch->parsed()) return run_watch(g, watch_seconds);
    if (play->parsed()) return run_play(g, play_file, play_load);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "carom-ctl: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "carom-ctl: %s\n", e.what());
    return kExitCommandError;
  }
  return kExitUsage;
}
