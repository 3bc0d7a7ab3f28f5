// carom-ctl's command line. CLI11 reads every value into its type (a double,
// an X,Y list of the right length, an id that fits in 32 bits) and enforces
// which options go together (needs, excludes, require_option). What it
// cannot say is checked in the subcommand's callback, which runs after the
// parse and throws a CLI::ParseError, so that every usage error reads alike:
//   - spawn: a body of 3 numbers (CLI11's count of values is a range, and 3
//     is not a shape of body); an option that needs any one of the three
//     generators (needs() means all of them); nothing to spawn; a grid given
//     a MIN,MAX radius (the option is MIN[,MAX] for random generators);
//   - set: nothing to change (require_option would count the id as one);
//   - params: --gravity-mode mutual with --gravity (the rule is on a value).
// Values are the server's to check (values.hpp): nan, inf and a restitution
// of 2 are sent, and refused by the server naming the field (exit 1).

#include "cli.hpp"

#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "carom/client/names.hpp"
#include "values.hpp"

namespace carom::ctl {

namespace {

constexpr const char* kVersion = "carom-ctl 0.1.0";

/// --timeout's range, s: poll() counts whole milliseconds, and far enough
/// beyond the maximum a deadline overflows steady_clock's ticks.
constexpr double kMinTimeoutS = 1e-3;
/// The longest --timeout and watch --seconds, s (11.6 days).
constexpr double kMaxSeconds = 1e6;

constexpr const char* kAnyGenerator = "a generator (--grid, --random-box or --random-disc)";

/// An option of N comma-separated numbers ("X,Y", "X0,Y0,X1,Y1").
template <class T>
CLI::Option* add_numbers(CLI::App* app, const std::string& name, T& value, const std::string& description,
                         const std::string& shape) {
  return app->add_option(name, value, description)->delimiter(',')->type_name(shape);
}

/// The integer type inside an option's value (std::optional<std::uint32_t>,
/// std::vector<std::uint32_t>: std::uint32_t).
template <class T>
struct IntegerOf {
  using type = T;
};
template <class T>
struct IntegerOf<std::optional<T>> {
  using type = T;
};
template <class T>
struct IntegerOf<std::vector<T>> {
  using type = T;
};

/// An option or positional of non-negative whole numbers (values.hpp:
/// decimal_integer), each at most the largest value of its type.
template <class T>
CLI::Option* add_integer(CLI::App* app, const std::string& name, T& value, const std::string& description,
                         const std::string& type_name) {
  return app->add_option(name, value, description)
      ->transform(decimal_integer(std::numeric_limits<typename IntegerOf<T>::type>::max()))
      ->type_name(type_name);
}

v1::Vec2 vec2(double x, double y) {
  v1::Vec2 out;
  out.set_x(x);
  out.set_y(y);
  return out;
}

v1::Vec2 vec2(const std::array<double, 2>& v) { return vec2(v[0], v[1]); }

/// MIN[,MAX] (MAX = MIN when only one is given), or `fallback` for both.
v1::Range range(const std::vector<double>& v, double fallback) {
  v1::Range out;
  out.set_min(v.empty() ? fallback : v.front());
  out.set_max(v.empty() ? fallback : v.back());
  return out;
}

/// The fields that random_box and random_disc share.
template <class Generator>
void fill_random(const SpawnOptions& o, Generator* generator) {
  generator->set_count(o.count.value_or(0));
  *generator->mutable_radius() = range(o.radius, kDefaultRadius);
  *generator->mutable_speed() = range(o.speed, 0.0);
  generator->set_seed(o.seed.value_or(1));
  generator->set_mass(o.mass.value_or(0.0));
}

}  // namespace

v1::Command make_spawn(const SpawnOptions& o) {
  v1::Command command;
  auto* spawn = command.mutable_spawn();
  for (const auto& v : o.bodies) {
    auto* body = spawn->add_bodies();
    if (v.size() >= 2) *body->mutable_position() = vec2(v[0], v[1]);
    if (v.size() >= 4) *body->mutable_velocity() = vec2(v[2], v[3]);
    body->set_radius(v.size() >= 5 ? v[4] : kDefaultRadius);
    if (v.size() >= 6) body->set_mass(v[5]);
  }
  if (o.grid) {
    auto* grid = spawn->add_generators()->mutable_grid();
    *grid->mutable_origin() = vec2(*o.grid);
    grid->set_columns(o.columns.value_or(0));
    grid->set_rows(o.rows.value_or(0));
    const double radius = o.radius.empty() ? kDefaultRadius : o.radius.front();
    grid->set_radius(radius);
    grid->set_spacing(o.spacing.value_or(2.2 * radius));
    if (o.velocity) *grid->mutable_velocity() = vec2(*o.velocity);
    grid->set_mass(o.mass.value_or(0.0));
  } else if (o.random_box) {
    const auto& v = *o.random_box;
    auto* box = spawn->add_generators()->mutable_random_box();
    *box->mutable_min() = vec2(v[0], v[1]);
    *box->mutable_max() = vec2(v[2], v[3]);
    fill_random(o, box);
  } else if (o.random_disc) {
    const auto& v = *o.random_disc;
    auto* disc = spawn->add_generators()->mutable_random_disc();
    *disc->mutable_center() = vec2(v[0], v[1]);
    disc->set_disc_radius(v[2]);
    fill_random(o, disc);
  }
  return command;
}

v1::Command make_set_params(const ParamsOptions& o) {
  v1::Command command;
  auto* p = command.mutable_set_params()->mutable_params();
  if (o.gravity) *p->mutable_gravity() = vec2(*o.gravity);
  if (o.restitution) p->set_restitution(*o.restitution);
  if (o.damping) p->set_linear_damping(*o.damping);
  if (o.solver) {
    v1::Solver solver{};
    client::parse_solver(*o.solver, &solver);  // a known name: CLI11 checked it
    p->set_solver(solver);
  }
  if (o.substeps) p->set_substeps(*o.substeps);
  if (o.iterations) p->set_iterations(*o.iterations);
  if (o.dt) p->set_dt(*o.dt);
  if (o.density) p->set_density(*o.density);
  if (o.tick_hz) p->set_tick_hz(*o.tick_hz);
  if (o.bounds) {
    auto* b = p->mutable_bounds();
    b->set_walled(true);
    *b->mutable_min() = vec2((*o.bounds)[0], (*o.bounds)[1]);
    *b->mutable_max() = vec2((*o.bounds)[2], (*o.bounds)[3]);
  }
  if (o.unbounded) p->mutable_bounds()->set_walled(false);
  // Mutual gravity. uniform: off; mutual: on, the uniform vector zeroed;
  // both: on, the uniform vector kept.
  if (o.gravity_mode) {
    p->mutable_mutual()->set_enabled(*o.gravity_mode != "uniform");
    if (*o.gravity_mode == "mutual") *p->mutable_gravity() = vec2(0.0, 0.0);
  }
  if (o.big_g) p->mutable_mutual()->set_g(*o.big_g);
  if (o.softening) p->mutable_mutual()->set_softening(*o.softening);
  if (o.theta) p->mutable_mutual()->set_theta(*o.theta);
  if (o.gravity_method) {
    v1::GravityMethod method{};
    client::parse_gravity_method(*o.gravity_method, &method);  // a known name: CLI11 checked it
    p->mutable_mutual()->set_method(method);
  }
  return command;
}

CommandLine::CommandLine() : app_("carom-ctl: send commands to a carom-server as a controller", "carom-ctl") {
  app_.set_version_flag("--version", kVersion);
  app_.require_subcommand(1);
  // Global options may also follow the subcommand ("carom-ctl stats --json").
  app_.fallthrough();
  app_.failure_message(
      [](const CLI::App* app, const CLI::Error& e) { return "carom-ctl: " + CLI::FailureMessage::simple(app, e); });

  app_.add_option("--server", globals_.server, "server address HOST:PORT")
      ->envname("CAROM_SERVER")
      ->capture_default_str();
  app_.add_option("--token", globals_.token, "controller token")->envname("CAROM_TOKEN");
  app_.add_flag("--json", globals_.json, "print results as JSON (the CommandResult)");
  app_.add_option("--timeout", globals_.timeout_s, "seconds to wait for the connection and for each result")
      ->check(finite_number())
      ->check(CLI::Range(kMinTimeoutS, kMaxSeconds))
      ->capture_default_str();

  ping_ = app_.add_subcommand("ping", "round-trip time to the server");

  spawn_ = app_.add_subcommand("spawn", "add bodies (explicit ones and/or one generator)");
  SpawnOptions& s = spawn_options_;
  add_numbers(spawn_, "--body", s.bodies,
              "a body at x,y (m) with velocity vx,vy (m/s), radius (m, default 0.5), mass (kg, 0 = density x area); "
              "repeatable",
              "X,Y[,VX,VY[,R[,M]]]")
      ->allow_extra_args(false);
  auto* grid = add_numbers(spawn_, "--grid", s.grid, "grid generator: lower-left centre", "X,Y");
  auto* box = add_numbers(spawn_, "--random-box", s.random_box, "random generator in a box", "X0,Y0,X1,Y1");
  auto* disc =
      add_numbers(spawn_, "--random-disc", s.random_disc, "random generator in a disc (centre, radius)", "X,Y,R");
  grid->excludes(box)->excludes(disc);
  box->excludes(disc);
  auto* count = add_integer(spawn_, "--count", s.count, "random generators: number of bodies", "N");
  auto* radius = add_numbers(spawn_, "--radius", s.radius,
                             "body radius, m (a MIN,MAX range for random generators; default 0.5)", "MIN[,MAX]")
                     ->expected(1, 2);
  auto* speed = add_numbers(spawn_, "--speed", s.speed, "random generators: speed range, m/s (default 0)", "MIN[,MAX]")
                    ->expected(1, 2);
  auto* seed = add_integer(spawn_, "--seed", s.seed, "random generators: seed (default 1)", "S");
  auto* columns = add_integer(spawn_, "--columns", s.columns, "grid: columns", "C");
  auto* rows = add_integer(spawn_, "--rows", s.rows, "grid: rows", "R");
  auto* spacing = spawn_->add_option("--spacing", s.spacing, "grid: distance between centres, m (default 2.2 x radius)")
                      ->type_name("D");
  auto* velocity = add_numbers(spawn_, "--velocity", s.velocity, "grid: velocity of every body, m/s", "VX,VY");
  auto* mass = spawn_->add_option("--mass", s.mass, "generators: mass of every body, kg (default 0 = density x area)")
                   ->type_name("M");
  grid->needs(columns)->needs(rows);
  for (auto* grid_only : {columns, rows, spacing, velocity}) grid_only->needs(grid);
  for (auto* random_only : {count, speed, seed}) random_only->excludes(grid);
  box->needs(count);
  disc->needs(count);
  spawn_->callback([this, grid, box, disc, generator_options = std::array{count, speed, seed, radius, mass}] {
    const SpawnOptions& o = spawn_options_;
    for (const auto& body : o.bodies) {
      if (body.size() != 2 && body.size() != 4 && body.size() != 5 && body.size() != 6) {
        throw CLI::ValidationError(
            "--body", fmt::format("{}: expected 2, 4, 5 or 6 numbers, got {}", fmt::join(body, ","), body.size()));
      }
    }
    if (grid->count() + box->count() + disc->count() == 0) {
      for (const CLI::Option* option : generator_options) {
        if (option->count() > 0) throw CLI::RequiresError(option->get_name(), kAnyGenerator);
      }
      if (o.bodies.empty()) throw CLI::RequiredError("--body or " + std::string(kAnyGenerator));
    }
    if (grid->count() > 0 && o.radius.size() > 1) {
      throw CLI::ValidationError("--radius", fmt::format("{}: --grid takes one radius", fmt::join(o.radius, ",")));
    }
  });

  remove_ = app_.add_subcommand("remove", "remove bodies");
  add_integer(remove_, "ids", remove_ids_, "body ids", "ID");
  remove_->add_flag("--all", remove_all_, "remove every body");
  remove_->require_option(1, 1);

  set_ = app_.add_subcommand("set", "set a body's position and/or velocity");
  add_integer(set_, "id", set_id_, "body id", "ID")->required();
  add_numbers(set_, "--position", set_position_, "new position, m", "X,Y");
  add_numbers(set_, "--velocity", set_velocity_, "new velocity, m/s", "VX,VY");
  set_->callback([this] {
    if (!set_position_ && !set_velocity_) throw CLI::RequiredError("--position or --velocity");
  });

  impulse_ = app_.add_subcommand("impulse", "apply an impulse to a body");
  add_integer(impulse_, "id", impulse_id_, "body id", "ID")->required();
  add_numbers(impulse_, "impulse", impulse_value_, "impulse, N s", "JX,JY")->required();

  params_ = app_.add_subcommand("params", "change world parameters (with no option: print them)");
  ParamsOptions& p = params_options_;
  auto* gravity = add_numbers(params_, "--gravity", p.gravity, "gravity, m/s^2", "X,Y");
  params_->add_option("--restitution", p.restitution, "restitution in [0, 1]")->type_name("E");
  params_->add_option("--damping", p.damping, "linear damping, 1/s")->type_name("C");
  params_->add_option("--solver", p.solver, "solver")
      ->type_name("discrete|verlet|continuous")
      ->check(CLI::IsMember(client::solver_names()));
  add_integer(params_, "--substeps", p.substeps, "substeps per tick (1..64)", "N");
  add_integer(params_, "--iterations", p.iterations, "solver passes per substep (1..64)", "N");
  params_->add_option("--dt", p.dt, "seconds per tick")->type_name("S");
  params_->add_option("--density", p.density, "kg/m^2 for bodies spawned with mass 0")->type_name("D");
  params_->add_option("--tick-hz", p.tick_hz, "server ticks per second (1..1000)")->type_name("HZ");
  auto* gravity_mode =
      params_
          ->add_option("--gravity-mode", p.gravity_mode,
                       "uniform (the --gravity vector only), mutual (bodies attract each other, no vector) or both")
          ->type_name("uniform|mutual|both")
          ->check(CLI::IsMember({"uniform", "mutual", "both"}));
  params_->add_option("--G", p.big_g, "mutual gravity's constant, (0, 1e6]")->type_name("G");
  params_->add_option("--softening", p.softening, "mutual gravity's Plummer softening, m")->type_name("EPS");
  params_->add_option("--gravity-method", p.gravity_method, "mutual gravity's summation")
      ->type_name("auto|direct|tree")
      ->check(CLI::IsMember(client::gravity_method_names()));
  params_->add_option("--theta", p.theta, "tree opening angle, (0, 1.5]")->type_name("T");
  auto* bounds = add_numbers(params_, "--bounds", p.bounds, "walled box, m", "X0,Y0,X1,Y1");
  auto* unbounded = params_->add_flag("--unbounded", p.unbounded, "no walls at all");
  bounds->excludes(unbounded);
  params_->callback([this, gravity, gravity_mode] {
    if (params_options_.gravity_mode == "mutual" && params_options_.gravity) {
      throw CLI::ExcludesError(gravity_mode->get_name() + " mutual",
                               gravity->get_name() + " (mutual has no uniform gravity: use both)");
    }
  });

  pause_ = app_.add_subcommand("pause", "pause the simulation");
  resume_ = app_.add_subcommand("resume", "resume the simulation");

  step_ = app_.add_subcommand("step", "advance a paused world by N ticks");
  add_integer(step_, "count", step_count_, "ticks (1..100000)", "N")->capture_default_str();

  reset_ = app_.add_subcommand("reset", "back to the world as the last scenario or load left it");

  load_ = app_.add_subcommand(
      "load", "load a scenario: a local .txtpb file (sent inline) or a name in the server's scenario directory");
  load_->add_option("scenario", load_target_, "NAME or FILE")->type_name("NAME_OR_FILE")->required();

  scenarios_ = app_.add_subcommand(
      "scenarios", "list the scenarios in the server's scenario directory (the names load takes), as a viewer");

  save_ = app_.add_subcommand("save", "save the complete world (binary SavedWorld) to FILE");
  save_->add_option("file", save_file_, "output file")->type_name("FILE")->required();

  load_world_ = app_.add_subcommand("load-world", "replace the world with a saved one (binary or .txtpb)");
  load_world_->add_option("file", load_world_file_, "SavedWorld file")->type_name("FILE")->required();

  get_world_ = app_.add_subcommand("get-world", "print every body at full precision (default: a table)");
  auto* text_flag = get_world_->add_flag("--text", world_text_, "protobuf text format of the SavedWorld");
  auto* json_flag = get_world_->add_flag("--json", world_json_, "JSON of the SavedWorld");
  text_flag->excludes(json_flag);

  stats_ = app_.add_subcommand("stats", "print the server's statistics");
  stats_->add_flag("--reset-timing", reset_timing_, "start a new tick-time measurement window");

  watch_ = app_.add_subcommand("watch", "print a live stats line every second (Ctrl-C to stop)");
  watch_->add_option("--seconds", watch_seconds_, "stop after S seconds (0 = never)")
      ->type_name("S")
      ->check(finite_number())
      ->check(CLI::Range(0.0, kMaxSeconds));
  auto* watch_bodies = watch_->add_flag(
      "--bodies", watch_bodies_,
      "ask for the bodies too, as a viewer gets them (the compact stream): adds bytes per body per snapshot");
  watch_->add_flag("--plain", watch_plain_, "with --bodies: plain float positions instead of the compact stream")
      ->needs(watch_bodies);

  play_ = app_.add_subcommand("play", "send a scenario file's script at its ticks, from the tick play starts at");
  play_->add_option("file", play_file_, "scenario file")->type_name("FILE")->required();
  play_->add_flag("--load", play_load_, "load the scenario (without its script) first; ticks count from the load");
}

void CommandLine::parse(int argc, const char* const* argv) { app_.parse(argc, argv); }

int CommandLine::exit(const CLI::ParseError& e) const { return app_.exit(e) == 0 ? kExitOk : kExitUsage; }

v1::Command CommandLine::command() const {
  v1::Command command;
  if (spawn_->parsed()) return make_spawn(spawn_options_);
  if (params_->parsed()) return make_set_params(params_options_);
  if (remove_->parsed()) {
    command.mutable_remove()->set_all(remove_all_);
    for (const auto id : remove_ids_) command.mutable_remove()->add_ids(id);
  } else if (set_->parsed()) {
    auto* set = command.mutable_set_body();
    set->set_id(set_id_);
    if (set_position_) *set->mutable_position() = vec2(*set_position_);
    if (set_velocity_) *set->mutable_velocity() = vec2(*set_velocity_);
  } else if (impulse_->parsed()) {
    command.mutable_apply_impulse()->set_id(impulse_id_);
    *command.mutable_apply_impulse()->mutable_impulse() = vec2(impulse_value_);
  } else if (step_->parsed()) {
    command.mutable_step()->set_count(step_count_);
  }
  return command;
}

int CommandLine::run() const {
  const Globals& g = globals_;
  if (ping_->parsed()) return run_ping(g);
  if (spawn_->parsed()) return run_spawn(g, command());
  if (remove_->parsed()) return run_remove(g, command());
  if (set_->parsed()) return run_set(g, command());
  if (impulse_->parsed()) return run_impulse(g, command());
  if (params_->parsed()) return run_params(g, command());
  if (pause_->parsed()) return run_pause(g);
  if (resume_->parsed()) return run_resume(g);
  if (step_->parsed()) return run_step(g, command());
  if (reset_->parsed()) return run_reset(g);
  if (load_->parsed()) return run_load(g, load_target_);
  if (scenarios_->parsed()) return run_scenarios(g);
  if (save_->parsed()) return run_save(g, save_file_);
  if (load_world_->parsed()) return run_load_world(g, load_world_file_);
  if (get_world_->parsed()) {
    return run_get_world(g, world_text_ ? WorldFormat::kText : world_json_ ? WorldFormat::kJson : WorldFormat::kTable);
  }
  if (stats_->parsed()) return run_stats(g, reset_timing_);
  if (watch_->parsed()) return run_watch(g, watch_seconds_, watch_bodies_, watch_plain_);
  if (play_->parsed()) return run_play(g, play_file_, play_load_);
  return kExitUsage;
}

}  // namespace carom::ctl
