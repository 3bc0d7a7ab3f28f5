// World: the public API, validation, and World::step — the one place where the
// order of the stages is written.

#include "carom/world.hpp"

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>

#include "body_store.hpp"
#include "carom/format.hpp"
#include "continuous/solver.hpp"
#include "discrete.hpp"
#include "gravity.hpp"
#include "parallel.hpp"
#include "stages.hpp"
#include "thread_choice.hpp"

namespace carom {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kOutOfRange: return "out_of_range";
    case StatusCode::kAlreadyExists: return "already_exists";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
  }
  return "unknown";
}

const char* to_string(Solver solver) {
  switch (solver) {
    case Solver::kDiscrete: return "discrete";
    case Solver::kVerlet: return "verlet";
    case Solver::kContinuous: return "continuous";
  }
  return "unknown";
}

bool parse_solver(std::string_view text, Solver* out) {
  for (const Solver s : kSolvers) {
    if (text == to_string(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const char* to_string(GravityMethod method) {
  switch (method) {
    case GravityMethod::kAuto: return "auto";
    case GravityMethod::kDirect: return "direct";
    case GravityMethod::kTree: return "tree";
  }
  return "unknown";
}

bool parse_gravity_method(std::string_view text, GravityMethod* out) {
  for (const GravityMethod m : kGravityMethods) {
    if (text == to_string(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

// Discrete solver constants (see resolve.cpp; the speculative distance is
// in discrete.cpp).
// Soft contacts (Box2D v3's), damping ratio 10, as stiff as the passes of a
// substep can hold without boiling. A pile boils when the relax passes do
// not take all of the soft passes' push back out of the velocities (the
// Gauss-Seidel passes converge too little for the stiffness), so relax runs
// two passes more than the soft passes, and the stiffness, a share of the
// substep rate, grows with the passes (Box2D takes 0.25 with one pass and one
// relax). Measured on the 52-row pile (tests/stability_test.cpp) at 4
// substeps, max overlap at rest and KE at step 600: two soft and two relax
// passes held 0.4 (2.4%, 2.6 J) and boiled at 0.5 (3.0%, 190 J and rising);
// one and one boiled at 0.4 at every substep count from 1 to 8; two and four
// hold 0.5 (2.0%, mean 0.16%, 11 J), one and three 0.4 (2.4%, 2.8 J), three and five
// 0.55 (1.7%, 3.2 J). Walls, being static, take 0.8 (twice the stiffness
// Box2D gives them; 1.0 left the pile five times as much motion).
double contact_rate(int soft_passes) {
  constexpr double kRate[] = {0.4, 0.5, 0.55};
  return kRate[std::clamp(soft_passes, 1, 3) - 1];
}
constexpr double kWallRate = 0.8;
constexpr int kExtraRelaxPasses = 2;
// Worlds under this many bodies may make the next substep's contacts while
// relax runs (step_substeps): a second set of contacts (DiscreteSolver::ahead).
// Larger ones share their passes among the threads anyway.
constexpr std::size_t kOverlapBelow = std::size_t{1} << 17;
// Tests and measurements: whether the repair of the pair list may be made
// with the next contacts while relax runs, and how many have been.
std::atomic<bool> repair_ahead_allowed{true};
// Tests: whether an elastic gas's narrow phase may leave out the pairs that
// miss the substep (leaves_misses).
std::atomic<bool> misses_allowed{true};
std::atomic<std::uint64_t> repairs_ahead{0};
constexpr double kContactDamping = 10.0;
// The soft bias pushes overlapping bodies apart at most this many smallest
// radii a second (Box2D: 3 m/s).
constexpr double kMaxPush = 10.0;
// Verlet: the velocity a body's pushes give it is at most this many smallest
// radii per second (10 m/s at r = 0.25): far above what holding a pile takes,
// but a tall pile at one substep, pushed many radii in one substep, is not
// launched by it.
constexpr double kMaxPushSpeed = 40.0;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Inside the box exactly as the wall clamp writes it: min + r <= x <= max - r.
bool inside(const Bounds& box, double x, double y, double r) {
  if (!box.walled) return true;
  return x >= box.min.x + r && x <= box.max.x - r && y >= box.min.y + r && y <= box.max.y - r;
}

// The coordinate ("x" or "y") that puts a body outside the box, so that a
// refusal names one wire field; nullptr when it is inside.
const char* outside_axis(const Bounds& box, double x, double y, double r) {
  if (inside(box, x, y, r)) return nullptr;
  return x >= box.min.x + r && x <= box.max.x - r ? "y" : "x";
}

// A vector's components ("FIELD.x", "FIELD.y"): finite, and within +-limit.
Status check_components(const std::string& field, Vec2 v, double limit) {
  const std::pair<const char*, double> parts[] = {{"x", v.x}, {"y", v.y}};
  for (const auto& [axis, c] : parts)
    if (!std::isfinite(c)) return invalid_argument(join_path(field, axis), "must be finite", format_number(c));
  for (const auto& [axis, c] : parts)
    if (!(std::abs(c) <= limit))
      return invalid_argument(join_path(field, axis), "must be within +-" + format_number(limit), format_number(c));
  return {};
}

Status check_params(const Params& p) {
  if (!finite(p.gravity)) return invalid_argument("gravity", "must be finite", format_vec(p.gravity));
  if (!(p.restitution >= 0.0 && p.restitution <= 1.0))
    return invalid_argument("restitution", "must be in [0, 1]", format_number(p.restitution));
  if (!(p.linear_damping >= 0.0 && std::isfinite(p.linear_damping)))
    return invalid_argument("linear_damping", "must be finite and >= 0 (1/s)", format_number(p.linear_damping));
  if (p.solver != Solver::kDiscrete && p.solver != Solver::kVerlet && p.solver != Solver::kContinuous)
    return invalid_argument("solver", "must be discrete, verlet or continuous",
                            std::to_string(static_cast<int>(p.solver)));
  if (p.substeps < 1 || p.substeps > 64)
    return invalid_argument("substeps", "must be in [1, 64]", std::to_string(p.substeps));
  if (p.iterations < 1 || p.iterations > 64)
    return invalid_argument("iterations", "must be in [1, 64]", std::to_string(p.iterations));
  if (!(p.dt > 0.0 && p.dt <= 1.0)) return invalid_argument("dt", "must be in (0, 1] seconds", format_number(p.dt));
  if (p.dt < kMinDt)
    return invalid_argument("dt", "must be >= " + format_number(kMinDt) + " seconds", format_number(p.dt));
  if (!within(p.gravity, kMaxSpeed))
    return invalid_argument("gravity", "components must be within +-" + format_number(kMaxSpeed),
                            format_vec(p.gravity));
  const MutualGravity& mg = p.mutual;
  if (!(mg.g > 0.0 && mg.g <= kMaxG))
    return invalid_argument("mutual.g", "must be in (0, " + format_number(kMaxG) + "]", format_number(mg.g));
  if (!(mg.softening >= 0.0 && mg.softening <= kMaxCoordinate))
    return invalid_argument("mutual.softening", "must be in [0, " + format_number(kMaxCoordinate) + "] (m)",
                            format_number(mg.softening));
  if (!(mg.theta > 0.0 && mg.theta <= kMaxTheta))
    return invalid_argument("mutual.theta", "must be in (0, " + format_number(kMaxTheta) + "]",
                            format_number(mg.theta));
  if (mg.method != GravityMethod::kAuto && mg.method != GravityMethod::kDirect && mg.method != GravityMethod::kTree)
    return invalid_argument("mutual.method", "must be auto, direct or tree",
                            std::to_string(static_cast<int>(mg.method)));
  if (!(p.density > 0.0 && std::isfinite(p.density)))
    return invalid_argument("density", "must be finite and > 0", format_number(p.density));
  if (p.density > kMaxMass)
    return invalid_argument("density", "must be <= " + format_number(kMaxMass), format_number(p.density));
  if (p.bounds.walled) {
    if (!finite(p.bounds.min)) return invalid_argument("bounds.min", "must be finite", format_vec(p.bounds.min));
    if (!finite(p.bounds.max)) return invalid_argument("bounds.max", "must be finite", format_vec(p.bounds.max));
    if (!within(p.bounds.min, kMaxCoordinate))
      return invalid_argument("bounds.min", "components must be within +-" + format_number(kMaxCoordinate),
                              format_vec(p.bounds.min));
    if (!within(p.bounds.max, kMaxCoordinate))
      return invalid_argument("bounds.max", "components must be within +-" + format_number(kMaxCoordinate),
                              format_vec(p.bounds.max));
    if (!(p.bounds.max.x > p.bounds.min.x && p.bounds.max.y > p.bounds.min.y))
      return invalid_argument("bounds", "max must exceed min on both axes",
                              "min " + format_vec(p.bounds.min) + " max " + format_vec(p.bounds.max));
  }
  return {};
}

}  // namespace

void allow_repair_ahead(bool allowed) { repair_ahead_allowed.store(allowed, std::memory_order_relaxed); }
void allow_leaving_misses(bool allowed) { misses_allowed.store(allowed, std::memory_order_relaxed); }
std::uint64_t repairs_made_ahead() { return repairs_ahead.load(std::memory_order_relaxed); }
namespace {
std::atomic<ThreadTurns> thread_turns{ThreadTurns::kMeasured};
}  // namespace
void set_thread_turns(ThreadTurns turns) { thread_turns.store(turns, std::memory_order_relaxed); }

struct WorldState {
  WorldConfig config;
  Params params;
  tbb::task_arena arena;
  // A step the world measured to be faster on one thread runs here
  // (ThreadChoice): the calling thread alone, the same bits.
  tbb::task_arena alone{1};
  detail::ThreadChoice choice;

  BodyStore bodies;
  BodyId next_id = 1;
  std::vector<BodyId> retired;  // sorted ids of removed bodies: never reused

  // Each solver's own state: the discrete and Verlet solvers' (the pair
  // list, contacts, warm starts) and the continuous solver's (nothing in it
  // outlives a step).
  DiscreteSolver discrete;
  ContinuousSolver continuous;

  StepStats stats;
  bool energy_dirty = true;

  // Mutual gravity: the accelerations at the current positions (the last
  // step's closing kick computed them; the next step's opening kick uses
  // them) and the potential energy there. A function of positions and
  // masses only, so recomputing after an edit or a restore gives the same bits.
  GravityScratch gravity;
  std::vector<double> gax, gay;
  double potential = 0.0;
  bool gravity_valid = false;
  void update_gravity() {
    if (gravity_valid) return;
    mutual_accelerations(bodies, params.mutual, gravity, gax, gay, &potential);
    gravity_valid = true;
  }
  // v += a dt / 2.
  void half_kick() {
    const double half = 0.5 * params.dt;
    for_blocks(bodies.size(), 4096, [&](std::size_t i0, std::size_t i1, std::size_t) {
      for (std::size_t i = i0; i < i1; ++i) {
        bodies.vx[i] += gax[i] * half;
        bodies.vy[i] += gay[i] * half;
      }
    });
  }
  std::vector<CollisionEvent> events;
  std::vector<BodyId> escaped;  // removed by the last step for leaving the limits
  bool escapers = false;        // the last step left some body past the limits (measure_energy)

  WorldState(const WorldConfig& c, const Params& p)
      : config(WorldConfig{std::min(c.max_bodies, kMaxBodies), c.threads, c.continuous_events_per_body,
                           c.continuous_all_pairs, c.adapt_threads}),
        params(check_params(p).ok() ? p : Params{}),
        arena(c.threads > 0 ? c.threads : tbb::info::default_concurrency()),
        choice(c.adapt_threads && arena.max_concurrency() > 1) {
    discrete.shares_passes = arena.max_concurrency() > 1;
  }

  bool id_used(BodyId id) const {
    return bodies.find(id) != kNotFound || std::binary_search(retired.begin(), retired.end(), id);
  }

  // What an edit invalidates. Velocities alone: only the cached energy (the
  // pair list stays exact, it depends on positions). A moved body: gravity,
  // the pair list and the wall contacts; warm starts are kept, by id. Bodies
  // added or removed: storage indices too, so warm starts are dropped.
  void velocities_edited() { energy_dirty = true; }
  void positions_edited() {
    velocities_edited();
    gravity_valid = false;
    discrete.positions_edited();
  }
  void bodies_edited() {
    positions_edited();
    discrete.bodies_edited();
  }

  // Fields are the BodyDesc's ("radius", "position.x"); add_bodies names the item.
  Status check_body(const BodyDesc& d) const {
    if (Status st = check_components("position", d.position, kMaxCoordinate); !st.ok()) return st;
    if (Status st = check_components("velocity", d.velocity, kMaxSpeed); !st.ok()) return st;
    if (!(std::isfinite(d.radius) && d.radius > 0.0))
      return invalid_argument("radius", "must be finite and > 0", format_number(d.radius));
    if (!(std::isfinite(d.mass) && d.mass >= 0.0))
      return invalid_argument("mass", "must be finite and > 0 (or 0 for density x area)", format_number(d.mass));
    if (d.radius < kMinRadius || d.radius > kMaxRadius)
      return invalid_argument("radius",
                              "must be in [" + format_number(kMinRadius) + ", " + format_number(kMaxRadius) + "]",
                              format_number(d.radius));
    if (const double m = mass_of(d); !(m >= kMinMass && m <= kMaxMass))
      return invalid_argument("mass",
                              std::string(d.mass == 0.0 ? "density x area " : "") + "must be in [" +
                                  format_number(kMinMass) + ", " + format_number(kMaxMass) + "] kg",
                              format_number(m));
    if (const char* axis = outside_axis(params.bounds, d.position.x, d.position.y, d.radius))
      return {StatusCode::kOutOfRange, join_path("position", axis),
              "body of radius " + format_number(d.radius) + " at " + format_vec(d.position) +
                  " is not inside the box " + format_vec(params.bounds.min) + " - " + format_vec(params.bounds.max)};
    if (d.id != kAutoId && d.id > kMaxBodyId)
      return invalid_argument("id", "must be <= " + std::to_string(kMaxBodyId), std::to_string(d.id));
    if (d.id != kAutoId && id_used(d.id))
      return {StatusCode::kAlreadyExists, "id", std::to_string(d.id) + " is in use or was used before"};
    return {};
  }

  double mass_of(const BodyDesc& d) const {
    return d.mass > 0.0 ? d.mass : params.density * std::numbers::pi * d.radius * d.radius;
  }

  void step();
  void step_continuous(StepStats& st);
  void step_substeps(StepStats& st);
};

void WorldState::step() {
  const auto t_step = Clock::now();
  StepStats st;
  st.step = stats.step + 1;
  st.time = stats.time + params.dt;
  events.clear();
  const Params& p = params;
  // Mutual gravity, kick-drift-kick: half a kick with the forces at the
  // start, the solver's step (collisions, walls, uniform gravity) as the
  // drift, half a kick with the forces where it ended.
  if (p.mutual.enabled) {
    const auto t0 = Clock::now();
    update_gravity();
    half_kick();
    st.seconds.integrate_velocities += seconds_since(t0);
  }
  if (p.solver == Solver::kContinuous) {
    step_continuous(st);
    // The bodies moved under the continuous solver: the discrete solvers'
    // pair list and wall touches no longer hold, as after an edit.
    discrete.moved_elsewhere();
  } else {
    step_substeps(st);
  }
  if (p.mutual.enabled) {
    const auto t0 = Clock::now();
    gravity_valid = false;
    update_gravity();
    half_kick();
    st.potential_energy = potential;
    st.seconds.integrate_velocities += seconds_since(t0);
  }

  // 6. Stats: energy, momentum.
  auto t = Clock::now();
  escapers = measure_energy(bodies, st);
  energy_dirty = false;
  if (p.solver != Solver::kContinuous) st.candidate_pairs = discrete.pairs.count;
  st.seconds.stats = seconds_since(t);
  st.seconds.total = seconds_since(t_step);
  stats = st;
}

// The continuous solver: one event-driven pass over the whole step (substeps
// and iterations do not apply). Nothing of it outlives the step, so nothing
// needs saving.
void WorldState::step_continuous(StepStats& st) {
  const Params& p = params;
  const ContinuousOptions options{config.continuous_all_pairs, config.continuous_events_per_body};

  // 1. Kick: damping and gravity for the whole step, v = v e^{-c dt} + g dt;
  //    bodies then drift in straight lines between events (symplectic Euler).
  auto t = Clock::now();
  integrate_velocities(bodies, p.gravity, std::exp(-p.linear_damping * p.dt), p.dt, {}, {});
  st.seconds.integrate_velocities += seconds_since(t);

  // 2. Broad phase: spatial hash over swept extents (the few fastest or
  //    largest bodies: their neighbours by query).
  t = Clock::now();
  continuous.find_swept_pairs(bodies, p, options);
  st.pair_rebuilds = 1;
  st.seconds.find_pairs += seconds_since(t);

  // 3. Narrow phase: the hash's pairs with their times of impact, neighbour
  //    lists, every body's earliest event -> the calendar.
  t = Clock::now();
  continuous.predict_events();
  st.seconds.collide += seconds_since(t);

  // 4. Resolve: events in (time, lower id, higher id) order until the end of
  //    the step; only the two bodies of a collision are predicted again.
  t = Clock::now();
  continuous.process_events(options, bodies, p.record_events ? &events : nullptr, p.max_events, st);
  st.candidate_pairs = continuous.candidate_pairs();
  st.seconds.resolve_contacts += seconds_since(t);

  // 5. Integrate positions: every body drifts to the end of the step.
  t = Clock::now();
  continuous.finish_step(bodies);
  st.seconds.integrate_positions += seconds_since(t);
}

void WorldState::step_substeps(StepStats& st) {
  const Params& p = params;
  const double h = p.dt / p.substeps;
  const double damping = std::exp(-p.linear_damping * h);
  const bool verlet = p.solver == Solver::kVerlet;
  const double resting = resting_speed(p.gravity, p.dt);
  DiscreteSolver& d = discrete;
  if (verlet) {
    d.px.resize(bodies.size());
    d.py.resize(bodies.size());
  }
  d.anchors.begin_step(bodies.size());
  SolveContext ctx;
  ctx.h = h;
  ctx.inv_h = 1.0 / h;
  ctx.restitution = p.restitution;
  ctx.resting = resting;
  // An elastic world (e = 1) keeps every impact whole, its energy exact:
  // the cascade's bar, the soft pass's unseen impacts and the narrow
  // phase's misses (leaves_misses) all follow from it.
  const bool elastic = !(p.restitution < 1.0);
  ctx.cascade_resting = elastic ? resting : kCascadeResting * resting;
  ctx.unseen_impact = elastic ? resting : std::numeric_limits<double>::infinity();
  const double misses_from = elastic && misses_allowed.load(std::memory_order_relaxed) ? resting : -1.0;
  ctx.iterations = p.iterations;
  ctx.bounds = p.bounds;
  // Box2D v3's soft contact (see contact_rate).
  ctx.relax_passes = p.iterations + kExtraRelaxPasses;
  ctx.pair_soft = make_softness(contact_rate(p.iterations), kContactDamping, h);
  ctx.wall_soft = make_softness(kWallRate, kContactDamping, h);
  // The discrete move measures how far bodies are from their anchors for the
  // next substep (the same value, from the same positions and anchors);
  // negative: not measured (a step's first substep measures itself, after
  // whatever happened between steps).
  double moved_after_move = -1.0;
  // This substep's contacts were made while the last one relaxed (below).
  bool collided_ahead = false;
  // The events of a substep whose contacts were swapped into `ahead` are
  // recorded on another thread while the next substep solves (they read
  // only those contacts and the bodies' ids and masses); waited for before
  // `ahead` is written again, before the next substep's events, and at the end.
  tbb::task_group recording;
  bool recording_pending = false;
  std::uint64_t dropped_ahead = 0;
  const auto recorded = [&] {
    if (!recording_pending) return;
    recording.wait();
    st.events_dropped += dropped_ahead;
    recording_pending = false;
  };
  const bool may_overlap =
      !verlet && tbb::this_task_arena::max_concurrency() > 1 && bodies.size() < kOverlapBelow;
  for (int sub = 0; sub < p.substeps; ++sub) {
    // 1. Integrate velocities: gravity and damping.
    auto t = Clock::now();
    double moved2 = 0.0;  // largest (scaled) squared distance of a body from its anchor
    const bool measured_now = !verlet && moved_after_move < 0.0;  // else the last substep repaired (step 5)
    if (verlet) {
      integrate_velocities(bodies, p.gravity, damping, h, {}, {});
      moved2 = predict_positions(bodies, h, d.px, d.py, d.anchors.x(), d.anchors.y(), d.anchors.reach_scale());
    } else if (moved_after_move >= 0.0) {
      integrate_velocities(bodies, p.gravity, damping, h, {}, {});
      moved2 = moved_after_move;
    } else {
      moved2 = integrate_velocities(bodies, p.gravity, damping, h, d.anchors.x(), d.anchors.y(), d.anchors.reach_scale());
    }
    st.seconds.integrate_velocities += seconds_since(t);

    // 2. Broad phase: spatial hash buckets -> coloured candidate pairs, when
    //    the list is stale or some body nears half its skin from its anchor.
    t = Clock::now();
    //    Where a few bodies are past their limits, the list is repaired
    //    instead (DiscreteSolver::repair_pairs; made at the end of the last
    //    substep, step 5, but in a step's first substep).
    if (!collided_ahead) {
      if (measured_now && d.anchors.far(moved2) && d.repair_pairs(bodies, p.dt)) {
        ++st.pair_repairs;
      } else if (d.anchors.needs_rebuild(moved2)) {
        d.rebuild_pairs(bodies, p.dt, !verlet);
        ++st.pair_rebuilds;
      }
    }
    st.seconds.find_pairs += seconds_since(t);

    // 3. Narrow phase: which candidate pairs (and walls) are contacts now.
    t = Clock::now();
    if (!collided_ahead) {
      const VerletStart start{d.px.data(), d.py.data(), bodies.vx.data(), bodies.vy.data()};
      st.contacts += collide(bodies, d.pairs, d.colouring, d.speculative, p.record_events, d.contacts,
                             verlet ? &start : nullptr, d.same_radius, misses_from, h);
    }
    if (!verlet) collide_walls(bodies, p.bounds, d.speculative, d.walls, d.contacts.slots());
    st.seconds.collide += seconds_since(t);
    st.rounds = std::max(st.rounds, d.contacts.rounds());

    // 4. Resolve: impacts, warm start and soft passes (Verlet: push apart),
    //    walls first, then colour by colour.
    t = Clock::now();
    ctx.max_push = kMaxPush * d.rmin;
    st.collisions += verlet ? push_contacts(bodies, d.contacts, p.bounds, p.iterations)
                            : solve_contacts(bodies, d.contacts, d.walls, ctx);
    st.seconds.resolve_contacts += seconds_since(t);

    // 5. Integrate positions and walls (Verlet: walls and derived velocities).
    t = Clock::now();
    if (verlet) {
      finish_verlet(bodies, p, h, resting, kMaxPushSpeed * d.rmin, d.px, d.py);
    } else {
      const bool next = sub + 1 < p.substeps;  // the last substep's would not be read
      moved_after_move = next ? integrate_positions(bodies, p, h, resting, d.anchors.x(), d.anchors.y(),
                                                    d.anchors.reach_scale())
                              : integrate_positions(bodies, p, h, resting);
    }
    st.seconds.integrate_positions += seconds_since(t);
    // The next substep's repair of the pair list (step 2), made now: it
    // reads positions and anchors only, which nothing changes before then,
    // and so the next contacts may still be made while this substep relaxes.
    // Where they are (below), the repair is made there too, on the other
    // thread, before them (not a restored list's: its repair rebuilds the
    // list, which reads the warm values relax writes).
    // Not where the narrow phase reads the velocities relax writes
    // (leaves_misses: an elastic gas's list).
    const bool may_ahead = may_overlap && sub + 1 < p.substeps && !d.contacts.slotted &&
                           !leaves_misses(d.colouring, nullptr, misses_from);
    const bool try_repair = !verlet && sub + 1 < p.substeps && d.anchors.far(moved_after_move);
    const bool repair_ahead = may_ahead && try_repair && d.anchors.restored() == nullptr &&
                              repair_ahead_allowed.load(std::memory_order_relaxed);
    if (try_repair && !repair_ahead) {
      t = Clock::now();
      if (d.repair_pairs(bodies, p.dt)) {
        ++st.pair_repairs;
        moved_after_move = 0.0;  // every body within its limit now
      }
      st.seconds.find_pairs += seconds_since(t);
    }

    // 6. Relax (Verlet: restitution on the derived velocities), and keep
    //    the warm values. Relax changes velocities only, and the next
    //    substep's narrow phase reads positions only: where relax runs on
    //    this thread (its passes are not shared) and the next substep keeps
    //    the pair list, the next contacts are made meanwhile on another
    //    thread, then take their warm values from what relax leaves. The same
    //    operations on the same values: the same bits. (Where the repair is
    //    made there, whether the list is kept is known once it is.)
    bool overlap = may_ahead && (repair_ahead || !d.anchors.needs_rebuild(moved_after_move));
    t = Clock::now();
    if (verlet) {
      restitute_contacts(bodies, d.contacts, p.restitution, resting, p.iterations, p.record_events);
    } else if (overlap) {
      recorded();  // the events of the substep before read `ahead`
      // read by collide; relax reads it only where slotted. (`ahead` carries
      // no warm values: take_warm used them up before it was swapped out.)
      std::swap(d.ahead.slot_of, d.contacts.slot_of);
      std::uint64_t made = 0;
      double collide_seconds = 0.0, repair_seconds = 0.0;
      bool repaired = false, collided = false;
      tbb::task_group ahead;
      ahead.run([&] {
        auto t0 = Clock::now();
        if (repair_ahead) {
          // As above; a list that was not repaired is rebuilt (the body is
          // past its limit), one that was is kept unless stale.
          repaired = d.repair_pairs(bodies, p.dt);
          repair_seconds = seconds_since(t0);
          if (d.anchors.needs_rebuild(repaired ? 0.0 : moved_after_move)) return;
          t0 = Clock::now();
        }
        made = collide(bodies, d.pairs, d.colouring, d.speculative, p.record_events, d.ahead, nullptr,
                       d.same_radius, misses_from, h);
        collide_seconds = seconds_since(t0);
        collided = true;
      });
      relax_contacts(bodies, d.contacts, d.walls, ctx);
      ahead.wait();
      if (repaired) {
        ++st.pair_repairs;
        moved_after_move = 0.0;  // every body within its limit now
        repairs_ahead.fetch_add(1, std::memory_order_relaxed);
      }
      st.seconds.find_pairs += repair_seconds;
      if (collided) {
        take_warm(d.contacts, d.ahead);
        st.contacts += made;
        st.seconds.collide += collide_seconds;
      } else {
        std::swap(d.ahead.slot_of, d.contacts.slot_of);
        overlap = false;
      }
    } else {
      relax_contacts(bodies, d.contacts, d.walls, ctx);
    }
    st.seconds.resolve_contacts += seconds_since(t);

    // 7. Events of this substep (in substep order: the last one's first).
    recorded();
    if (overlap) std::swap(d.contacts, d.ahead);
    if (p.record_events) {
      const auto substep = static_cast<std::uint32_t>(sub);
      if (overlap) {
        recording.run([&, substep] { dropped_ahead = record_events(bodies, d.ahead, substep, p.max_events, events); });
        recording_pending = true;
      } else {
        st.events_dropped += record_events(bodies, d.contacts, substep, p.max_events, events);
      }
    }
    collided_ahead = overlap;
  }
  recorded();
  // The displacement since the pair list was built is measured at the start
  // of the next substep (integrate_velocities, or predict for Verlet).
}

}  // namespace detail

World::World(const WorldConfig& config, const Params& params)
    : s_(std::make_unique<detail::WorldState>(config, params)) {}
World::~World() = default;
World::World(World&&) noexcept = default;
World& World::operator=(World&&) noexcept = default;

Status World::set_params(const Params& p) {
  if (Status st = detail::check_params(p); !st.ok()) return st;
  if (p.bounds.walled) {
    const auto& b = s_->bodies;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (!detail::inside(p.bounds, b.x[i], b.y[i], b.r[i]))
        return {StatusCode::kOutOfRange, "bounds",
                "body " + std::to_string(b.id[i]) + " at " + format_vec({b.x[i], b.y[i]}) + " with radius " +
                    format_number(b.r[i]) + " would be outside " + format_vec(p.bounds.min) + " - " +
                    format_vec(p.bounds.max)};
    }
  }
  if (p.bounds.walled != s_->params.bounds.walled || p.bounds.min != s_->params.bounds.min ||
      p.bounds.max != s_->params.bounds.max)
    s_->discrete.bounds_changed();
  // The candidate list's reach depends on the solver (speculative distance).
  if (p.solver != s_->params.solver) s_->discrete.anchors.invalidate();
  s_->gravity_valid = false;
  s_->energy_dirty = true;
  s_->params = p;
  return {};
}

const Params& World::params() const { return s_->params; }
const WorldConfig& World::config() const { return s_->config; }

Status World::add_body(const BodyDesc& desc, BodyId* id_out) {
  std::vector<BodyId> ids;
  Status st = add_bodies(std::span<const BodyDesc>(&desc, 1), &ids);
  if (st.ok() && id_out) *id_out = ids.front();
  // One body: its own fields ("radius"), not bodies[0]'s.
  if (st.index()) return {st.code(), st.item_field(), st.reason()};
  return st;
}

Status World::add_bodies(std::span<const BodyDesc> descs, std::vector<BodyId>* ids_out) {
  auto& s = *s_;
  if (s.bodies.size() + descs.size() > s.config.max_bodies)
    return {StatusCode::kResourceExhausted, "bodies",
            "adding " + std::to_string(descs.size()) + " to " + std::to_string(s.bodies.size()) +
                " would exceed max_bodies " + std::to_string(s.config.max_bodies)};
  // Validate everything, including ids repeated within this batch, first.
  std::vector<BodyId> ids(descs.size());
  BodyId next = s.next_id;
  std::vector<BodyId> explicit_ids;
  for (std::size_t k = 0; k < descs.size(); ++k) {
    if (Status st = s.check_body(descs[k]); !st.ok()) return st.in_batch("bodies", k);
    if (descs[k].id != kAutoId) explicit_ids.push_back(descs[k].id);
  }
  std::sort(explicit_ids.begin(), explicit_ids.end());
  if (auto dup = std::adjacent_find(explicit_ids.begin(), explicit_ids.end()); dup != explicit_ids.end()) {
    // Named at its second place in the batch.
    std::size_t k = 0;
    for (bool seen = false; k < descs.size(); ++k) {
      if (descs[k].id != *dup) continue;
      if (seen) break;
      seen = true;
    }
    return Status{StatusCode::kAlreadyExists, "id", std::to_string(*dup) + " appears twice in the batch"}.in_batch(
        "bodies", k);
  }
  const BodyId max_explicit = explicit_ids.empty() ? 0 : explicit_ids.back();
  next = std::max(next, static_cast<BodyId>(max_explicit + 1));
  for (std::size_t k = 0; k < descs.size(); ++k) {
    if (descs[k].id != kAutoId) {
      ids[k] = descs[k].id;
    } else {
      if (next > kMaxBodyId || next == 0)
        return Status{StatusCode::kResourceExhausted, "id",
                      "the world has used every id up to " + std::to_string(kMaxBodyId)}
            .in_batch("bodies", k);
      ids[k] = next++;
    }
  }

  // Append, then restore id order if the batch was not already above every id.
  auto& b = s.bodies;
  const bool in_order = (b.size() == 0 || ids.empty() || *std::min_element(ids.begin(), ids.end()) > b.id.back()) &&
                        std::is_sorted(ids.begin(), ids.end());
  b.for_each_array([&](auto& arr) { arr.reserve(arr.size() + descs.size()); });
  for (std::size_t k = 0; k < descs.size(); ++k) {
    const BodyDesc& d = descs[k];
    b.id.push_back(ids[k]);
    b.x.push_back(d.position.x);
    b.y.push_back(d.position.y);
    b.vx.push_back(d.velocity.x);
    b.vy.push_back(d.velocity.y);
    b.r.push_back(d.radius);
    b.m.push_back(s.mass_of(d));
  }
  if (!in_order) {
    std::vector<std::uint32_t> perm(b.size());
    for (std::uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
    std::sort(perm.begin(), perm.end(), [&](std::uint32_t l, std::uint32_t r) { return b.id[l] < b.id[r]; });
    b.for_each_array([&](auto& arr) {
      auto copy = arr;
      for (std::size_t i = 0; i < perm.size(); ++i) arr[i] = copy[perm[i]];
    });
  }
  s.next_id = next;
  s.bodies_edited();
  if (ids_out) *ids_out = std::move(ids);
  return {};
}

Status World::remove_body(BodyId id) {
  const Status st = remove_bodies(std::span<const BodyId>(&id, 1));
  if (st.index()) return {st.code(), "id", st.reason()};
  return st;
}

Status World::remove_bodies(std::span<const BodyId> ids) {
  auto& s = *s_;
  auto& b = s.bodies;
  std::vector<char> gone(b.size(), 0);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::size_t i = b.find(ids[k]);
    if (i == detail::kNotFound)
      return Status{StatusCode::kNotFound, "", "no body with id " + std::to_string(ids[k])}.in_batch("ids", k);
    // As a spawn refuses an id twice, so does a removal.
    if (gone[i]) return invalid_argument("", "each id at most once", std::to_string(ids[k]) + " again").in_batch("ids", k);
    gone[i] = 1;
  }
  std::vector<BodyId> removed;
  b.for_each_array([&](auto& arr) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < arr.size(); ++i)
      if (!gone[i]) arr[w++] = arr[i];
    arr.resize(w);
  });
  for (std::size_t k = 0; k < ids.size(); ++k) removed.push_back(ids[k]);
  std::sort(removed.begin(), removed.end());
  auto mid = s.retired.insert(s.retired.end(), removed.begin(), removed.end());
  std::inplace_merge(s.retired.begin(), mid, s.retired.end());
  s.bodies_edited();
  return {};
}

void World::clear() {
  auto& s = *s_;
  std::vector<BodyId> ids = s.bodies.id;
  (void)remove_bodies(ids);
}

Status World::set_position(BodyId id, Vec2 pos) {
  auto& s = *s_;
  const std::size_t i = s.bodies.find(id);
  if (i == detail::kNotFound) return {StatusCode::kNotFound, "id", "no body with id " + std::to_string(id)};
  if (Status st = detail::check_components("position", pos, kMaxCoordinate); !st.ok()) return st;
  if (const char* axis = detail::outside_axis(s.params.bounds, pos.x, pos.y, s.bodies.r[i]))
    return {StatusCode::kOutOfRange, join_path("position", axis),
            format_vec(pos) + " puts body " + std::to_string(id) + " outside the box"};
  s.bodies.x[i] = pos.x;
  s.bodies.y[i] = pos.y;
  s.positions_edited();
  return {};
}

Status World::set_velocity(BodyId id, Vec2 vel) {
  auto& s = *s_;
  const std::size_t i = s.bodies.find(id);
  if (i == detail::kNotFound) return {StatusCode::kNotFound, "id", "no body with id " + std::to_string(id)};
  if (Status st = detail::check_components("velocity", vel, kMaxSpeed); !st.ok()) return st;
  s.bodies.vx[i] = vel.x;
  s.bodies.vy[i] = vel.y;
  s.velocities_edited();
  return {};
}

Status World::apply_impulse(BodyId id, Vec2 impulse) {
  auto& s = *s_;
  const std::size_t i = s.bodies.find(id);
  if (i == detail::kNotFound) return {StatusCode::kNotFound, "id", "no body with id " + std::to_string(id)};
  if (!finite(impulse)) return invalid_argument("impulse", "must be finite", format_vec(impulse));
  const Vec2 v{s.bodies.vx[i] + impulse.x / s.bodies.m[i], s.bodies.vy[i] + impulse.y / s.bodies.m[i]};
  if (!finite(v) || !within(v, kMaxSpeed))
    return invalid_argument(
        "impulse", "would make the velocity " + format_vec(v) + " m/s, beyond +-" + format_number(kMaxSpeed) + " m/s",
        format_vec(impulse));
  s.bodies.vx[i] = v.x;
  s.bodies.vy[i] = v.y;
  s.velocities_edited();
  return {};
}

Status World::body(BodyId id, BodyState* out) const {
  const auto& b = s_->bodies;
  const std::size_t i = b.find(id);
  if (i == detail::kNotFound) return {StatusCode::kNotFound, "id", "no body with id " + std::to_string(id)};
  *out = {b.id[i], {b.x[i], b.y[i]}, {b.vx[i], b.vy[i]}, b.r[i], b.m[i]};
  return {};
}

bool World::contains(BodyId id) const { return s_->bodies.find(id) != detail::kNotFound; }
std::size_t World::size() const { return s_->bodies.size(); }
BodyId World::next_id() const { return s_->next_id; }
std::span<const BodyId> World::retired_ids() const { return s_->retired; }

Status World::reserve_ids(BodyId next_id, std::span<const BodyId> retired) {
  auto& s = *s_;
  if (next_id == kAutoId) return invalid_argument("next_id", "must be >= 1", "0");
  for (std::size_t k = 0; k < retired.size(); ++k) {
    const BodyId id = retired[k];
    if (id == kAutoId || id > kMaxBodyId)
      return invalid_argument("", "must be in [1, " + std::to_string(kMaxBodyId) + "]", std::to_string(id))
          .in_batch("retired", k);
    if (s.bodies.find(id) != detail::kNotFound)
      return invalid_argument("", "must not be a live body", std::to_string(id)).in_batch("retired", k);
  }
  std::vector<BodyId> merged(s.retired);
  merged.insert(merged.end(), retired.begin(), retired.end());
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  BodyId next = std::max(s.next_id, next_id);
  if (!merged.empty()) next = std::max(next, static_cast<BodyId>(merged.back() + 1));
  s.retired = std::move(merged);
  s.next_id = next;
  return {};
}

SolverState World::solver_state() const {
  const auto& s = *s_;
  SolverState out;
  out.step = s.stats.step;
  out.time = s.stats.time;
  s.discrete.save(s.bodies, out);
  return out;
}

Status World::restore_solver_state(const SolverState& state) {
  auto& s = *s_;
  const auto& b = s.bodies;
  if (!(std::isfinite(state.time) && state.time >= 0.0))
    return invalid_argument("solver.time", "must be finite and >= 0 (s)", format_number(state.time));
  auto unknown = [](const char* field, BodyId id) {
    return Status{StatusCode::kNotFound, field, "no body with id " + std::to_string(id)};
  };
  detail::WarmByIds warm;
  warm.reserve(state.warm.size());
  for (std::size_t k = 0; k < state.warm.size(); ++k) {
    const WarmStart& w = state.warm[k];
    if (b.find(w.a) == detail::kNotFound) return unknown("a", w.a).in_batch("solver.warm", k);
    if (b.find(w.b) == detail::kNotFound) return unknown("b", w.b).in_batch("solver.warm", k);
    if (!(w.a < w.b))
      return invalid_argument("", "a must be the lower id", "a " + std::to_string(w.a) + ", b " + std::to_string(w.b))
          .in_batch("solver.warm", k);
    if (!(std::isfinite(w.value) && w.value >= 0.0 && w.value <= 2.0 * kMaxSpeed))
      return invalid_argument("value", "must be finite and in [0, " + format_number(2.0 * kMaxSpeed) + "] (m/s)",
                              format_number(w.value))
          .in_batch("solver.warm", k);
    warm.emplace_back(std::uint64_t{w.a} << 32 | w.b, w.value);
  }
  std::sort(warm.begin(), warm.end());
  for (std::size_t k = 1; k < warm.size(); ++k)
    if (warm[k].first == warm[k - 1].first)
      return invalid_argument(
          "solver.warm", "each pair at most once",
          "(" + std::to_string(warm[k].first >> 32) + ", " + std::to_string(warm[k].first & 0xFFFFFFFFu) + ") twice");
  const bool anchored = !state.anchor_x.empty() || !state.anchor_y.empty();
  if (anchored) {
    for (const auto& [field, v] : {std::pair{"solver.anchor_x", &state.anchor_x}, std::pair{"solver.anchor_y", &state.anchor_y}})
      if (v->size() != b.size())
        return invalid_argument(field, "must hold one value per body (" + std::to_string(b.size()) + ")",
                                std::to_string(v->size()));
    for (std::size_t k = 0; k < b.size(); ++k) {
      for (const auto* v : {&state.anchor_x, &state.anchor_y}) {
        const double a = (*v)[k];
        if (!(std::isfinite(a) && std::abs(a) <= kMaxCoordinate))
          return invalid_argument(
              std::string(v == &state.anchor_x ? "solver.anchor_x[" : "solver.anchor_y[") + std::to_string(k) + "]",
              "must be finite and within +-" + format_number(kMaxCoordinate), format_number(a));
      }
    }
    if (!(std::isfinite(state.skin) && state.skin > 0.0 && state.skin <= 4.0 * kMaxRadius))
      return invalid_argument("solver.skin", "must be finite and in (0, " + format_number(4.0 * kMaxRadius) + "] (m)",
                              format_number(state.skin));
    if (!state.anchor_skin.empty() && state.anchor_skin.size() != b.size())
      return invalid_argument("solver.anchor_skin", "must hold one value per body (" + std::to_string(b.size()) + ") or none",
                              std::to_string(state.anchor_skin.size()));
    for (std::size_t k = 0; k < state.anchor_skin.size(); ++k) {
      const double s = state.anchor_skin[k];
      if (!(std::isfinite(s) && s > 0.0 && s <= static_cast<double>(static_cast<float>(state.skin))))
        return invalid_argument("solver.anchor_skin[" + std::to_string(k) + "]",
                                "must be finite and in (0, skin] (m), skin " + format_number(state.skin), format_number(s));
    }
    if (state.contact_colours && !state.anchor_skin.empty())
      return invalid_argument("solver.contact_colours",
                              "a list built with skins per body (bodies that carried load) is coloured whole",
                              "true with " + std::to_string(state.anchor_skin.size()) + " skins per body");
    if (state.contact_colours && !state.repairs.empty())
      return invalid_argument("solver.repairs", "a list left uncoloured (a gas) is rebuilt, never repaired",
                              std::to_string(state.repairs.size()) + " repairs with contact_colours");
  } else if (!state.repairs.empty()) {
    return invalid_argument("solver.repairs", "needs the anchors (anchor_x, anchor_y) of the list they repaired",
                            std::to_string(state.repairs.size()) + " repairs without anchors");
  } else if (!state.anchor_skin.empty()) {
    return invalid_argument("solver.anchor_skin", "needs the anchors (anchor_x, anchor_y) it belongs to",
                            std::to_string(state.anchor_skin.size()) + " values without anchors");
  } else if (state.contact_colours) {
    return invalid_argument("solver.contact_colours", "needs the anchors (anchor_x, anchor_y) of the list it describes",
                            "true without anchors");
  }
  // Repairs by storage index: each lists known bodies, in increasing id
  // order, with finite anchors and skins in (0, 2 skin].
  std::vector<detail::PairAnchors::Repair> repairs;
  repairs.reserve(state.repairs.size());
  for (std::size_t r = 0; r < state.repairs.size(); ++r) {
    const std::string field = "solver.repairs[" + std::to_string(r) + "]";
    const std::vector<MovedAnchor>& moved = state.repairs[r];
    if (moved.empty()) return invalid_argument(field, "must move at least one body", "none");
    detail::PairAnchors::Repair& repair = repairs.emplace_back();
    repair.reserve(moved.size());
    const double most = 2.0 * static_cast<double>(static_cast<float>(state.skin));
    for (std::size_t k = 0; k < moved.size(); ++k) {
      const MovedAnchor& m = moved[k];
      const std::size_t i = b.find(m.id);
      if (i == detail::kNotFound) return unknown("id", m.id).in_batch(field, k);
      if (k > 0 && !(moved[k - 1].id < m.id))
        return invalid_argument("id", "must be in increasing order within a repair",
                                std::to_string(moved[k - 1].id) + " then " + std::to_string(m.id))
            .in_batch(field, k);
      for (const auto& [name, v] : {std::pair{"x", m.x}, std::pair{"y", m.y}})
        if (!(std::isfinite(v) && std::abs(v) <= kMaxCoordinate))
          return invalid_argument(name, "must be finite and within +-" + format_number(kMaxCoordinate), format_number(v))
              .in_batch(field, k);
      if (!(std::isfinite(m.skin) && m.skin > 0.0f && static_cast<double>(m.skin) <= most))
        return invalid_argument("skin", "must be finite and in (0, 2 skin] (m), skin " + format_number(state.skin),
                                format_number(m.skin))
            .in_batch(field, k);
      repair.push_back({static_cast<std::uint32_t>(i), m.x, m.y, m.skin});
    }
  }
  // One entry per (body, wall): storage index << 2 | wall, with its value.
  std::vector<std::pair<std::uint32_t, double>> entries;
  entries.reserve(state.walls.size());
  for (std::size_t k = 0; k < state.walls.size(); ++k) {
    const WallTouch& w = state.walls[k];
    const std::size_t i = b.find(w.id);
    if (i == detail::kNotFound) return unknown("id", w.id).in_batch("solver.walls", k);
    if (w.bits < 1 || w.bits > 15)
      return invalid_argument("bits", "must be in [1, 15]", std::to_string(w.bits)).in_batch("solver.walls", k);
    if (!(std::isfinite(w.value) && w.value >= 0.0 && w.value <= 2.0 * kMaxSpeed))
      return invalid_argument("value", "must be finite and in [0, " + format_number(2.0 * kMaxSpeed) + "] (m/s)",
                              format_number(w.value))
          .in_batch("solver.walls", k);
    for (std::uint32_t wall = 0; wall < 4; ++wall)
      if (w.bits & (1u << wall)) entries.emplace_back(static_cast<std::uint32_t>(i) << 2 | wall, w.value);
  }
  std::sort(entries.begin(), entries.end());
  for (std::size_t k = 1; k < entries.size(); ++k)
    if (entries[k].first == entries[k - 1].first)
      return invalid_argument("solver.walls", "each body and wall at most once",
                              std::to_string(b.id[entries[k].first >> 2]) + " twice");

  s.stats.step = state.step;
  s.stats.time = state.time;
  // The next step rebuilds the pair list and takes these warm starts (by id
  // pair) instead of whatever the current list carries.
  std::optional<detail::PairAnchors::Saved> anchors;
  if (anchored)
    anchors = detail::PairAnchors::Saved{state.anchor_x, state.anchor_y, state.skin, state.anchor_skin,
                                         state.contact_colours, std::move(repairs)};
  s.discrete.restore(std::move(warm), std::move(anchors), entries, b.size(), s.params.bounds.walled);
  s.gravity_valid = false;
  return {};
}
int World::threads() const { return s_->arena.max_concurrency(); }

BodiesView World::bodies() const {
  const auto& b = s_->bodies;
  return {b.id, b.x, b.y, b.vx, b.vy, b.r, b.m};
}

void World::step() {
  auto& s = *s_;
  // On the world's threads, or on this one alone where it measured that
  // faster (ThreadChoice; tests may set the turns). The same bits either way.
  bool one = s.choice.choose();
  if (s.choice.enabled()) {
    const detail::ThreadTurns turns = detail::thread_turns.load(std::memory_order_relaxed);
    if (turns != detail::ThreadTurns::kMeasured) one = turns == detail::ThreadTurns::kOne || s.stats.step % 2 == 1;
  }
  (one ? s.alone : s.arena).execute([&] { s.step(); });
  s.stats.threads = static_cast<std::uint32_t>(one ? 1 : s.arena.max_concurrency());
  s.choice.record(s.stats.seconds.total, s.stats.pair_rebuilds > 0);
  // Escapers: a body past the coordinate or speed limits (an unbounded world
  // under gravity gets there in about four hours) is removed, as REBOUND
  // removes what leaves its box, so every state the world reaches is one its
  // loader accepts. Per fixed block, joined in order: ids in id order.
  s.escaped.clear();
  if (!s.escapers) return;
  const auto& b = s.bodies;
  constexpr std::size_t kBlock = 8192;
  std::vector<std::vector<BodyId>> found(detail::block_count(b.size(), kBlock));
  s.arena.execute([&] {
    detail::for_blocks(b.size(), kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
      for (std::size_t i = i0; i < i1; ++i)
        if (!detail::within_limits(b.x[i], b.y[i], b.vx[i], b.vy[i])) found[blk].push_back(b.id[i]);
    });
  });
  for (const auto& ids : found) s.escaped.insert(s.escaped.end(), ids.begin(), ids.end());
  if (!s.escaped.empty()) {
    (void)remove_bodies(s.escaped);  // every id is live: cannot fail
    s.stats.escaped = static_cast<std::uint32_t>(s.escaped.size());
  }
}

std::span<const BodyId> World::escaped_ids() const { return s_->escaped; }

const StepStats& World::stats() const {
  if (s_->energy_dirty) {
    s_->arena.execute([&] {
      detail::measure_energy(s_->bodies, s_->stats);
      if (s_->params.mutual.enabled) {
        s_->update_gravity();
        s_->stats.potential_energy = s_->potential;
      } else {
        s_->stats.potential_energy = 0.0;
      }
    });
    s_->energy_dirty = false;
  }
  return s_->stats;
}

std::span<const CollisionEvent> World::events() const { return s_->events; }

std::uint64_t World::state_hash() const { return detail::hash_state(s_->bodies); }

}  // namespace carom
