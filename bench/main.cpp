// carom-bench: builds a scene, steps it, reports throughput. Setup is excluded
// from the timing. --live steps the scene in real time in the terminal instead
// (what ./scripts/demo runs until the server and viewer exist).

#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <span>
#include <vector>

#include "carom/measure.hpp"
#include "carom/proto/text.hpp"
#include "carom/world.hpp"
#include "bench/net.hpp"
#include "bench/scenes.hpp"
#include "sim_state.hpp"

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<bool> g_stop{false};

std::vector<std::string> solver_names() {
  std::vector<std::string> out;
  for (const carom::Solver s : carom::kSolvers) out.emplace_back(carom::to_string(s));
  return out;
}

// How long a cache line takes to go from one core to another and back (ns),
// between the first two cores this process may run on: two threads, each
// pinned to one, hand a flag back and forth. 0 with fewer than two cores. On
// this project's 2-core virtual machine it reads about 90 ns or about 310 ns
// here (its cores on one die or on two, it seems; it changes from minute to
// minute), and two threads stepped the 10k pile 1.2 times faster than one in
// the first case and 1.8 times slower in the second (hence
// WorldConfig::adapt_threads).
double core_round_trip_ns() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 0.0;
  int cores[2] = {-1, -1};
  for (int c = 0, found = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cores[found++] = c;
  if (cores[1] < 0) return 0.0;
  const auto pin = [](int core) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  };
  // The fastest of 20 batches of 1 000 trips: the world's idle workers may
  // still be spinning on those cores for a while after its last step.
  constexpr int kBatches = 20, kTrips = 1000;
  struct alignas(64) Line {  // the flag alone on its cache line
    std::atomic<int> flag{0};
    char rest[64 - sizeof(std::atomic<int>)];
  } line;
  std::atomic<int>& flag = line.flag;
  std::thread other([&] {
    pin(cores[1]);
    for (int i = 0; i < kBatches * kTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin(cores[0]);
  double best = 1e9;
  for (int batch = 0; batch < kBatches; ++batch) {
    const auto t0 = Clock::now();
    for (int i = batch * kTrips; i < (batch + 1) * kTrips; ++i) {
      flag.store(2 * i + 1, std::memory_order_release);
      while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / kTrips * 1e9);
  }
  other.join();
  cpu_set_t restore = allowed;
  pthread_setaffinity_np(pthread_self(), sizeof restore, &restore);
  return best;
}

// Peak resident set size: VmHWM, which clear_refs resets (ru_maxrss does not).
std::uint64_t peak_rss_bytes() {
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    std::fclose(f);
    if (kb > 0) return kb * 1024;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A coarse density picture of the world, one character per cell.
void draw(const carom::World& world, int cols, int rows) {
  const auto& box = world.params().bounds;
  const auto b = world.bodies();
  double x0 = box.min.x, y0 = box.min.y, x1 = box.max.x, y1 = box.max.y;
  if (!box.walled && b.size() > 0) {
    x0 = *std::min_element(b.x.begin(), b.x.end());
    x1 = *std::max_element(b.x.begin(), b.x.end()) + 1e-9;
    y0 = *std::min_element(b.y.begin(), b.y.end());
    y1 = *std::max_element(b.y.begin(), b.y.end()) + 1e-9;
  }
  std::vector<double> cover(static_cast<std::size_t>(cols * rows), 0.0);
  const double cw = (x1 - x0) / cols, ch = (y1 - y0) / rows;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int c = std::clamp(static_cast<int>((b.x[i] - x0) / cw), 0, cols - 1);
    const int r = std::clamp(static_cast<int>((y1 - b.y[i]) / ch), 0, rows - 1);
    cover[static_cast<std::size_t>(r * cols + c)] += 3.14159 * b.radius[i] * b.radius[i] / (cw * ch);
  }
  static const char ramp[] = " .:-=+*#%@";
  std::string frame = "\x1b[H+" + std::string(static_cast<std::size_t>(cols), '-') + "+\n";
  for (int r = 0; r < rows; ++r) {
    frame += '|';
    for (int c = 0; c < cols; ++c) {
      const double v = cover[static_cast<std::size_t>(r * cols + c)];
      frame += ramp[std::clamp(static_cast<int>(v * 9.0 + 0.5), v > 0 ? 1 : 0, 9)];
    }
    frame += "|\n";
  }
  frame += "+" + std::string(static_cast<std::size_t>(cols), '-') + "+\n";
  std::fwrite(frame.data(), 1, frame.size(), stdout);
}

// The world as CSV at full precision (17 significant digits round-trip a double).
bool write_csv(const carom::BodiesView& b, const std::string& path) {
  std::ofstream out(path);
  if (!out) return false;
  out << "id,x,y,vx,vy,radius,mass\n";
  char line[256];
  for (std::size_t i = 0; i < b.size(); ++i) {
    std::snprintf(line, sizeof line, "%u,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", b.id[i], b.x[i], b.y[i], b.vx[i],
                  b.vy[i], b.radius[i], b.mass[i]);
    out << line;
  }
  return static_cast<bool>(out.flush());
}

int run_live(carom::World& world, double seconds) {
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::fputs("\x1b[2J", stdout);
  const double dt = world.params().dt;
  const auto start = Clock::now();
  auto next = start;
  std::uint64_t steps = 0;
  double step_ms = 0.0;
  while (!g_stop && (seconds <= 0 || std::chrono::duration<double>(Clock::now() - start).count() < seconds)) {
    world.step();
    ++steps;
    step_ms = 0.9 * step_ms + 0.1 * world.stats().seconds.total * 1e3;
    if (steps % 4 == 0) {
      draw(world, 96, 27);
      const auto& st = world.stats();
      std::printf("step %llu  t=%.2fs  bodies %u  step %.2f ms  contacts %llu  collisions %llu  "
                  "KE %.1f J  p=(%.2f, %.2f)  [Ctrl-C to stop]\x1b[K\n",
                  static_cast<unsigned long long>(st.step), st.time, st.bodies, step_ms,
                  static_cast<unsigned long long>(st.contacts), static_cast<unsigned long long>(st.collisions),
                  st.kinetic_energy, st.momentum.x, st.momentum.y);
      std::fflush(stdout);
    }
    next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(dt));
    std::this_thread::sleep_until(next);
  }
  return 0;
}

// A scenario file's world as a scene: the server's own loading (parameters,
// bodies, generators; the same checks and messages), its script not run.
bool scene_from_scenario(const std::string& path, carom::bench::Scene* out, std::string* error) {
  carom::v1::Scenario scenario;
  carom::proto::TextLocations locations;
  if (!carom::proto::parse_text_file(path, &scenario, error, &locations)) return false;
  carom::server::SimState sim(carom::server::SimOptions{});
  if (const carom::Status st = sim.load_scenario(scenario, path, &locations); !st.ok()) {
    *error = st.message();
    return false;
  }
  out->params = sim.world().params();
  const carom::BodiesView b = sim.world().bodies();
  out->bodies.resize(b.size());
  for (std::size_t i = 0; i < b.size(); ++i)
    out->bodies[i] = {b.id[i], {b.x[i], b.y[i]}, {b.vx[i], b.vy[i]}, b.radius[i], b.mass[i]};
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"carom-bench: step a benchmark scene and report throughput"};
  carom::bench::SceneSpec spec;
  std::string gravity_method;
  double theta = 0.0;
  double softening = -1.0;
  std::size_t check_forces = 0;
  std::uint64_t steps = 200;
  int threads = 0;
  std::string solver_name;
  int substeps = 0;
  bool json = false;
  bool live = false;
  double seconds = 0.0;
  app.add_option("--scene", spec.name, "gas | pile | mixed | lattice | default | nbody")->capture_default_str();
  std::string scenario_file;
  auto* scenario_option =
      app.add_option("--scenario", scenario_file,
                     "a scenario file (.txtpb, as carom-server --scenario and carom-ctl load take) instead of --scene: "
                     "its parameters and bodies (its script does not run); scenarios/default.txtpb is the demo's world")
          ->excludes("--scene")
          ->check(CLI::ExistingFile);
  app.add_option("--gravity", gravity_method,
                 "mutual gravity's method (default: the scene's; nbody: auto); none: mutual gravity off (the same "
                 "scene's memory and time without it)")
      ->check(CLI::IsMember({"auto", "direct", "tree", "none"}));
  app.add_option("--theta", theta, "tree opening angle (default: the scene's, 0.5)")->check(CLI::Range(0.01, 1.5));
  app.add_option("--softening", softening, "mutual gravity's softening length, m (default: the scene's; nbody: 0.05)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--check-forces", check_forces,
                 "K sampled bodies' mutual-gravity accelerations (as the world's method computes them) against "
                 "direct summation, at the end: force_error_p50 / p99 in the JSON");
  app.add_option("--bodies", spec.bodies, "number of bodies")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps to time (0: only measure, or dump, the initial world)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "worker threads (0 = all cores)")->capture_default_str()->check(CLI::NonNegativeNumber);
  bool fixed_threads = false;
  app.add_flag("--fixed-threads", fixed_threads,
               "every step on --threads, even where one thread measures faster (WorldConfig::adapt_threads off)");
  app.add_option("--solver", solver_name, "discrete | verlet | continuous (default: the scene's)")
      ->check(CLI::IsMember(solver_names()));
  bool baseline = false;
  app.add_flag("--baseline", baseline,
               "continuous solver: the textbook reference that predicts every body against all N bodies");
  app.add_option("--substeps", substeps, "substeps per step (default: the scene's)")->check(CLI::Range(1, 64));
  double restitution = -1.0;
  int iterations = 0;
  std::string dump_csv;
  app.add_option("--restitution", restitution, "restitution of every scene (default: the scene's)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--iterations", iterations, "solver iterations per substep (default: the scene's)")->check(CLI::Range(1, 64));
  app.add_option("--dump-csv", dump_csv,
                 "write the final world to FILE: a header id,x,y,vx,vy,radius,mass, then one body a line at full precision");
  app.add_option("--eta", spec.eta, "area fraction for gas, pile, mixed")->capture_default_str();
  app.add_option("--radius", spec.radius,
                 "nbody: every body's radius (default 0.25); a tiny one makes the disc collisionless")
      ->check(CLI::Range(carom::kMinRadius, carom::kMaxRadius));
  app.add_option("--seed", spec.seed, "random seed of the scene")->capture_default_str();
  app.add_flag("--json", json, "print one JSON object");
  app.add_flag("--live", live, "step in real time and draw the world in the terminal");
  app.add_option("--seconds", seconds, "with --live: stop after this many seconds (0 = until Ctrl-C); with --net: seconds per phase");
  bool net = false;
  carom::bench::NetBenchOptions net_options;
  auto* net_flag = app.add_flag("--net", net,
               "run the server with --viewers viewers on loopback: tick times, snapshot latency and the stream's bytes "
               "(bytes_per_body, server_sent_mb_per_s); the world is --scene");
  app.add_option("--viewers", net_options.viewers, "with --net: viewers")->capture_default_str()->check(CLI::Range(0, 1000));
  app.add_option("--tick-hz", net_options.tick_hz, "with --net: server tick rate")->capture_default_str()->check(CLI::Range(1.0, 1000.0));
  app.add_option("--relays", net_options.relays, "with --net: viewers spread over this many relays (each a viewer of the server); the JSON adds "
                 "relay_added_latency_p50_ms / p99 / max: each relayed snapshot's arrival minus a direct viewer's")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  app.add_flag("--websocket", net_options.websocket,
               "with --net: viewers open the server's WebSocket (/ws on an HTTP port, as the web page does) instead of "
               "TCP; the JSON says \"transport\"")
      ->excludes("--relays");
  bool no_body_tables = false;
  app.add_flag("--no-body-tables", no_body_tables,
               "with --net: viewers get ids and radii in every snapshot instead of in body tables");
  bool plain = false;
  app.add_flag("--plain", plain,
               "with --net: viewers get plain float positions instead of the compact stream (the old encoding, to "
               "compare bytes_per_body with)");
  app.add_option("--settle", net_options.settle,
                 "with --net: step the world this many ticks (paused, as fast as it can) before measuring, so a pile "
                 "comes to rest")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--velocities", net_options.velocities, "with --net: viewers ask for velocities too");
  app.add_flag("--events", net_options.events,
               "with --net: viewers ask for collision events too (as carom-view does; scenes that record them: default)");
  net_flag->excludes(scenario_option);
  CLI11_PARSE(app, argc, argv);
  if (net) {
    net_options.scene = spec;
    net_options.threads = threads;
    net_options.fixed_threads = fixed_threads;
    net_options.json = json;
    net_options.body_tables = !no_body_tables;
    net_options.compact = !plain;
    net_options.seconds = seconds > 0 ? seconds : 60.0;
    return carom::bench::run_net_bench(net_options);
  }

  carom::bench::Scene scene;
  if (!scenario_file.empty()) {
    std::string error;
    if (!scene_from_scenario(scenario_file, &scene, &error)) {
      std::cerr << "carom-bench: " << error << "\n";
      return 2;
    }
  } else if (auto st = carom::bench::build_scene(spec, &scene); !st.ok()) {
    std::cerr << "carom-bench: " << st.message() << "\n";
    return 2;
  }
  if (!solver_name.empty()) carom::parse_solver(solver_name, &scene.params.solver);
  if (substeps > 0) scene.params.substeps = substeps;
  if (iterations > 0) scene.params.iterations = iterations;
  if (restitution >= 0.0) scene.params.restitution = restitution;
  if (gravity_method == "none") {
    scene.params.mutual.enabled = false;
  } else if (!gravity_method.empty()) {
    carom::parse_gravity_method(gravity_method, &scene.params.mutual.method);
  }
  if (theta > 0.0) scene.params.mutual.theta = theta;
  if (softening >= 0.0) scene.params.mutual.softening = softening;

  carom::WorldConfig config;
  config.threads = threads;
  config.continuous_all_pairs = baseline;
  config.adapt_threads = !fixed_threads;
  carom::World world(config);
  if (auto st = world.set_params(scene.params); !st.ok()) {
    std::cerr << "carom-bench: " << st.message() << "\n";
    return 2;
  }
  // Add in chunks and free the descriptions, so peak RSS measures the world,
  // not the scene builder.
  for (std::size_t at = 0; at < scene.bodies.size(); at += 65536) {
    const std::size_t len = std::min<std::size_t>(65536, scene.bodies.size() - at);
    if (auto st = world.add_bodies(std::span(scene.bodies).subspan(at, len)); !st.ok()) {
      std::cerr << "carom-bench: " << st.message() << "\n";
      return 2;
    }
  }
  scene.bodies = {};
  scene.bodies.shrink_to_fit();
  // The scene's pages are back with the allocator but may still count in
  // ru_maxrss; report the steady-state high-water mark of the stepping alone
  // by resetting it (Linux: writing 5 to /proc/self/clear_refs).
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
  if (live) return run_live(world, seconds);

  const double ke_start = world.stats().kinetic_energy;
  const double energy_start = ke_start + world.stats().potential_energy;
  const carom::Vec2 momentum_start = world.stats().momentum;
  std::uint64_t contacts = 0, collisions = 0, rebuilds = 0, repairs = 0, rounds = 0, events = 0, capped_steps = 0;
  std::uint64_t one_thread_steps = 0;
  double wall_impulse = 0.0;
  carom::StageTimes stage{};
  const double round_trip_start = core_round_trip_ns();
  const auto t0 = Clock::now();
  for (std::uint64_t k = 0; k < steps; ++k) {
    world.step();
    const auto& st = world.stats();
    contacts += st.contacts;
    collisions += st.collisions;
    rebuilds += st.pair_rebuilds;
    repairs += st.pair_repairs;
    rounds = std::max<std::uint64_t>(rounds, st.rounds);
    events += st.events_processed;
    capped_steps += st.events_capped ? 1 : 0;
    one_thread_steps += st.threads == 1 && world.threads() > 1 ? 1 : 0;
    wall_impulse += st.wall_impulse;
    stage.integrate_velocities += st.seconds.integrate_velocities;
    stage.find_pairs += st.seconds.find_pairs;
    stage.collide += st.seconds.collide;
    stage.resolve_contacts += st.seconds.resolve_contacts;
    stage.integrate_positions += st.seconds.integrate_positions;
    stage.stats += st.seconds.stats;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double round_trip_end = core_round_trip_ns();
  const auto& st = world.stats();
  // The stepping's high-water mark, before measuring the quality (which
  // builds its own pair list and would count in it).
  const std::uint64_t peak_rss = peak_rss_bytes();
  // Quality at the end, outside the timing.
  const carom::OverlapStats overlap = carom::measure_overlap(world.bodies());
  // Mutual gravity's accuracy: K bodies spread over the id order, the
  // method's accelerations against direct summation, relative.
  std::vector<double> force_errors;
  if (check_forces > 0 && world.params().mutual.enabled && world.size() > 1) {
    const auto view = world.bodies();
    const std::vector<carom::Vec2> acc = carom::mutual_accelerations(view, world.params().mutual);
    const std::size_t k = std::min<std::size_t>(check_forces, view.size());
    for (std::size_t s = 0; s < k; ++s) {
      const std::size_t i = s * view.size() / k;
      const carom::Vec2 ref = carom::mutual_acceleration_direct(view, world.params().mutual, i);
      const double norm = std::hypot(ref.x, ref.y);
      if (norm > 0.0) force_errors.push_back(std::hypot(acc[i].x - ref.x, acc[i].y - ref.y) / norm);
    }
    std::sort(force_errors.begin(), force_errors.end());
  }
  if (!dump_csv.empty() && !write_csv(world.bodies(), dump_csv)) {
    std::cerr << "carom-bench: cannot write " << dump_csv << "\n";
    return 1;
  }
  const double n = static_cast<double>(world.size());
  // With --steps 0 (only the initial world measured or dumped) rates are 0.
  const double per_step = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  const double body_steps = steps > 0 ? n * static_cast<double>(steps) / secs : 0.0;
  // Pressure: the time-averaged force on the walls per unit wall length,
  // total normal impulse / (simulated time x perimeter). 2D: N/m.
  const auto& box = world.params().bounds;
  const double perimeter = box.walled ? 2.0 * ((box.max.x - box.min.x) + (box.max.y - box.min.y)) : 0.0;
  const double sim_time = static_cast<double>(steps) * world.params().dt;
  const double pressure = perimeter > 0.0 ? wall_impulse / (sim_time * perimeter) : 0.0;

  nlohmann::ordered_json j;
  j["scene"] = scenario_file.empty() ? spec.name : "scenario";
  if (!scenario_file.empty()) j["scenario"] = scenario_file;
  j["bodies"] = world.size();
  j["steps"] = steps;
  j["threads"] = world.threads();
  // Steps the world ran on one thread, having measured it faster (not
  // deterministic; the results are). 0 with --fixed-threads.
  j["one_thread_steps"] = one_thread_steps;
  // The machine's state before and after the run (core_round_trip_ns).
  j["core_round_trip_ns"] = {round_trip_start, round_trip_end};
  j["solver"] = carom::to_string(world.params().solver);
  j["substeps"] = world.params().substeps;
  if (scenario_file.empty()) j["eta"] = spec.eta;
  j["seconds"] = secs;
  j["body_steps_per_s"] = body_steps;
  j["steps_per_s"] = (steps > 0 ? static_cast<double>(steps) / secs : 0.0);
  j["contacts_per_step"] = static_cast<double>(contacts) * per_step;
  j["collisions_per_step"] = static_cast<double>(collisions) * per_step;
  j["pair_rebuilds_per_step"] = static_cast<double>(rebuilds) * per_step;
  j["pair_repairs_per_step"] = static_cast<double>(repairs) * per_step;
  j["max_rounds"] = rounds;
  j["baseline"] = baseline;
  j["collisions"] = collisions;
  j["collisions_per_s"] = (steps > 0 ? static_cast<double>(collisions) / secs : 0.0);
  j["events_processed"] = events;
  j["capped_steps"] = capped_steps;
  j["pressure"] = pressure;
  j["kinetic_energy_start"] = ke_start;
  j["kinetic_energy_end"] = st.kinetic_energy;
  j["kinetic_energy_per_body_end"] = n > 0 ? st.kinetic_energy / n : 0.0;
  if (world.params().mutual.enabled) {
    j["gravity"] = carom::to_string(carom::GravityMethod(world.params().mutual.method));
    j["theta"] = world.params().mutual.theta;
    j["total_energy_start"] = energy_start;
    j["total_energy_end"] = st.kinetic_energy + st.potential_energy;
    j["total_energy_relative_error"] =
        energy_start != 0.0 ? (st.kinetic_energy + st.potential_energy - energy_start) / std::abs(energy_start) : 0.0;
    j["momentum_drift"] = std::hypot(st.momentum.x - momentum_start.x, st.momentum.y - momentum_start.y);
    if (!force_errors.empty()) {
      j["force_error_p50"] = force_errors[force_errors.size() / 2];
      j["force_error_p99"] = force_errors[force_errors.size() * 99 / 100];
      j["force_error_max"] = force_errors.back();
      j["force_samples"] = force_errors.size();
    }
  }
  j["restitution"] = world.params().restitution;
  j["iterations"] = world.params().iterations;
  j["overlap_max"] = overlap.max;
  j["overlap_mean"] = overlap.mean;
  j["overlap_pairs"] = overlap.pairs;
  j["state_hash"] = hex(world.state_hash());
  j["peak_rss_bytes"] = peak_rss;
  j["stage_seconds"] = {{"integrate_velocities", stage.integrate_velocities},
                        {"find_pairs", stage.find_pairs},
                        {"collide", stage.collide},
                        {"resolve_contacts", stage.resolve_contacts},
                        {"integrate_positions", stage.integrate_positions},
                        {"stats", stage.stats}};
  if (json) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s: %zu bodies, %llu steps, %d threads (%llu steps on one), %s x%d substeps\n", spec.name.c_str(),
                world.size(), static_cast<unsigned long long>(steps), world.threads(),
                static_cast<unsigned long long>(one_thread_steps), carom::to_string(world.params().solver),
                world.params().substeps);
    std::printf("  cores' round trip %.0f ns before, %.0f ns after\n", round_trip_start, round_trip_end);
    std::printf("  %.3f s   %.2f M body-steps/s   %.1f steps/s   %.0f contacts/step   hash %s   peak RSS %.1f MB\n",
                secs, body_steps / 1e6, (steps > 0 ? static_cast<double>(steps) / secs : 0.0),
                static_cast<double>(contacts) * per_step, hex(world.state_hash()).c_str(),
                static_cast<double>(peak_rss) / 1e6);
    std::printf("  pair rebuilds/step %.2f  repairs/step %.2f  candidate pairs %llu  max rounds %llu\n",
                static_cast<double>(rebuilds) * per_step, static_cast<double>(repairs) * per_step,
                static_cast<unsigned long long>(st.candidate_pairs), static_cast<unsigned long long>(rounds));
    std::printf("  collisions %llu (%.3f M/s)   events %llu   capped steps %llu   pressure %.6g N/m\n",
                static_cast<unsigned long long>(collisions), (steps > 0 ? static_cast<double>(collisions) / secs : 0.0) / 1e6,
                static_cast<unsigned long long>(events), static_cast<unsigned long long>(capped_steps), pressure);
    std::printf("  overlap at the end: max %.4f, mean %.4f of the smaller radius over %llu pairs;  KE/body %.4g J\n",
                overlap.max, overlap.mean, static_cast<unsigned long long>(overlap.pairs),
                n > 0 ? st.kinetic_energy / n : 0.0);
    std::printf("  stages (s): velocities %.3f  pairs %.3f  collide %.3f  resolve %.3f  positions %.3f\n",
                stage.integrate_velocities, stage.find_pairs, stage.collide, stage.resolve_contacts,
                stage.integrate_positions);
  }
  return 0;
}
