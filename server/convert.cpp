// Conversions between carom's own types and the protocol's. Saved worlds go
// through the World's public API only (explicit ids, reserve_ids,
// restore_solver_state), so a loaded world obeys every rule a built one does.

#include "convert.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "sim_state.hpp"

namespace carom::server {
namespace {

// A uint32 count of Params (substeps, iterations); values beyond int are
// refused here with the World's own wording, the rest are the World's to judge.
Status to_int(std::uint32_t value, const char* field, int* out) {
  if (value > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
    return invalid_argument(field, "must be in [1, 64]", std::to_string(value));
  *out = static_cast<int>(value);
  return {};
}

// World::add_bodies names one body's field ("position.x", "radius" of
// bodies[k]); a SavedWorld keeps each in a parallel array ("x[k]", "radius[k]").
Status saved_body_status(const Status& st) {
  if (!st.index()) return Status{st.code(), "id", st.reason()};  // the batch as a whole: its ids
  static constexpr std::pair<std::string_view, std::string_view> kColumns[] = {
      {"position.x", "x"}, {"position.y", "y"}, {"velocity.x", "vx"}, {"velocity.y", "vy"}};
  std::string column = st.item_field();
  for (const auto& [field, name] : kColumns)
    if (column == field) column = name;
  return Status{st.code(), "", st.reason()}.in_batch(column, *st.index());
}

// World::restore_solver_state names SolverState's lists of structs
// ("solver.warm[3].a", "solver.walls[2].bits"); a SavedWorld keeps them as
// parallel arrays ("solver.warm_a[3]", "solver.wall_bits[2]"). A warm start
// as a whole is named by its a, a list as a whole by its first array.
Status saved_solver_status(const Status& st) {
  // solver.repairs[r][k].id (the World's path) is solver.repairs[r].id[k] in the message.
  if (st.index() && st.batch().rfind("solver.repairs[", 0) == 0 && !st.item_field().empty())
    return Status{st.code(), "", st.reason()}.in_batch(st.batch() + "." + st.item_field(), *st.index());
  const bool warm = st.batch() == "solver.warm" || (!st.index() && st.field() == "solver.warm");
  const bool walls = st.batch() == "solver.walls" || (!st.index() && st.field() == "solver.walls");
  if (!warm && !walls) return st;
  const std::string column = (warm ? "solver.warm_" : "solver.wall_") +
                             (st.index() && !st.item_field().empty() ? st.item_field() : (warm ? "a" : "id"));
  if (!st.index()) return {st.code(), column, st.reason()};
  return Status{st.code(), "", st.reason()}.in_batch(column, *st.index());
}

}  // namespace

Vec2 from_proto(const v1::Vec2& v) { return {v.x(), v.y()}; }

void to_proto(Vec2 v, v1::Vec2* out) {
  out->set_x(v.x);
  out->set_y(v.y);
}

Status apply_params(const v1::WorldParams& in, Params* params, double* tick_hz) {
  Params p = *params;
  double hz = *tick_hz;
  if (in.has_bounds()) {
    p.bounds.walled = in.bounds().walled();
    p.bounds.min = from_proto(in.bounds().min());
    p.bounds.max = from_proto(in.bounds().max());
  }
  if (in.has_gravity()) p.gravity = from_proto(in.gravity());
  if (in.has_restitution()) p.restitution = in.restitution();
  if (in.has_linear_damping()) p.linear_damping = in.linear_damping();
  if (in.has_solver()) {
    // proto3 enums are open: any int can arrive.
    switch (static_cast<int>(in.solver())) {
      case v1::SOLVER_UNSPECIFIED: break;
      case v1::SOLVER_DISCRETE: p.solver = Solver::kDiscrete; break;
      case v1::SOLVER_VERLET: p.solver = Solver::kVerlet; break;
      case v1::SOLVER_CONTINUOUS: p.solver = Solver::kContinuous; break;
      default:
        return {StatusCode::kInvalidArgument, "solver",
                "unknown value " + std::to_string(static_cast<int>(in.solver())) +
                    " (1 = SOLVER_DISCRETE, 2 = SOLVER_VERLET, 3 = SOLVER_CONTINUOUS)"};
    }
  }
  if (in.has_substeps())
    if (Status st = to_int(in.substeps(), "substeps", &p.substeps); !st.ok()) return st;
  if (in.has_iterations())
    if (Status st = to_int(in.iterations(), "iterations", &p.iterations); !st.ok()) return st;
  if (in.has_dt()) p.dt = in.dt();
  if (in.has_density()) p.density = in.density();
  if (in.has_mutual()) {
    const v1::MutualGravity& m = in.mutual();
    if (m.has_enabled()) p.mutual.enabled = m.enabled();
    if (m.has_g()) p.mutual.g = m.g();
    if (m.has_softening()) p.mutual.softening = m.softening();
    if (m.has_theta()) p.mutual.theta = m.theta();
    if (m.has_method()) {
      switch (static_cast<int>(m.method())) {
        case v1::GRAVITY_AUTO: p.mutual.method = GravityMethod::kAuto; break;
        case v1::GRAVITY_DIRECT: p.mutual.method = GravityMethod::kDirect; break;
        case v1::GRAVITY_TREE: p.mutual.method = GravityMethod::kTree; break;
        default:
          return {StatusCode::kInvalidArgument, "mutual.method",
                  "unknown value " + std::to_string(static_cast<int>(m.method())) +
                      " (0 = GRAVITY_AUTO, 1 = GRAVITY_DIRECT, 2 = GRAVITY_TREE)"};
      }
    }
  }
  if (in.has_tick_hz()) {
    hz = in.tick_hz();
    if (!(hz >= kMinTickHz && hz <= kMaxTickHz))
      return invalid_argument("tick_hz",
                              "must be in [" + format_number(kMinTickHz) + ", " + format_number(kMaxTickHz) + "] Hz",
                              format_number(hz));
  }
  *params = p;
  *tick_hz = hz;
  return {};
}

void params_to_proto(const Params& p, double tick_hz, v1::WorldParams* out) {
  v1::Bounds* b = out->mutable_bounds();
  b->set_walled(p.bounds.walled);
  to_proto(p.bounds.min, b->mutable_min());
  to_proto(p.bounds.max, b->mutable_max());
  to_proto(p.gravity, out->mutable_gravity());
  out->set_restitution(p.restitution);
  out->set_linear_damping(p.linear_damping);
  switch (p.solver) {
    case Solver::kDiscrete: out->set_solver(v1::SOLVER_DISCRETE); break;
    case Solver::kVerlet: out->set_solver(v1::SOLVER_VERLET); break;
    case Solver::kContinuous: out->set_solver(v1::SOLVER_CONTINUOUS); break;
  }
  out->set_substeps(static_cast<std::uint32_t>(p.substeps));
  out->set_iterations(static_cast<std::uint32_t>(p.iterations));
  v1::MutualGravity* m = out->mutable_mutual();
  m->set_enabled(p.mutual.enabled);
  m->set_g(p.mutual.g);
  m->set_softening(p.mutual.softening);
  m->set_theta(p.mutual.theta);
  switch (p.mutual.method) {
    case GravityMethod::kAuto: m->set_method(v1::GRAVITY_AUTO); break;
    case GravityMethod::kDirect: m->set_method(v1::GRAVITY_DIRECT); break;
    case GravityMethod::kTree: m->set_method(v1::GRAVITY_TREE); break;
  }
  out->set_dt(p.dt);
  out->set_density(p.density);
  out->set_tick_hz(tick_hz);
}

BodyDesc body_from_proto(const v1::Body& body) {
  BodyDesc d;
  d.id = body.id();
  d.position = from_proto(body.position());
  d.velocity = from_proto(body.velocity());
  d.radius = body.radius();
  d.mass = body.mass();
  return d;
}

void save_world(const World& world, double tick_hz, v1::SavedWorld* out) {
  out->Clear();
  out->set_format(1);
  params_to_proto(world.params(), tick_hz, out->mutable_params());
  const BodiesView v = world.bodies();
  out->mutable_id()->Assign(v.id.begin(), v.id.end());
  out->mutable_x()->Assign(v.x.begin(), v.x.end());
  out->mutable_y()->Assign(v.y.begin(), v.y.end());
  out->mutable_vx()->Assign(v.vx.begin(), v.vx.end());
  out->mutable_vy()->Assign(v.vy.begin(), v.vy.end());
  out->mutable_radius()->Assign(v.radius.begin(), v.radius.end());
  out->mutable_mass()->Assign(v.mass.begin(), v.mass.end());
  out->set_next_id(world.next_id());
  const std::span<const BodyId> retired = world.retired_ids();
  out->mutable_retired_id()->Assign(retired.begin(), retired.end());
  const SolverState solver = world.solver_state();
  v1::SolverState* s = out->mutable_solver();
  s->set_step(solver.step);
  s->set_time(solver.time);
  s->mutable_warm_a()->Reserve(static_cast<int>(solver.warm.size()));
  s->mutable_warm_b()->Reserve(static_cast<int>(solver.warm.size()));
  s->mutable_warm_value()->Reserve(static_cast<int>(solver.warm.size()));
  for (const WarmStart& w : solver.warm) {
    s->add_warm_a(w.a);
    s->add_warm_b(w.b);
    s->add_warm_value(w.value);
  }
  s->mutable_wall_id()->Reserve(static_cast<int>(solver.walls.size()));
  s->mutable_wall_bits()->Reserve(static_cast<int>(solver.walls.size()));
  s->mutable_wall_value()->Reserve(static_cast<int>(solver.walls.size()));
  for (const WallTouch& w : solver.walls) {
    s->add_wall_id(w.id);
    s->add_wall_bits(w.bits);
    s->add_wall_value(w.value);
  }
  s->mutable_anchor_x()->Assign(solver.anchor_x.begin(), solver.anchor_x.end());
  s->mutable_anchor_y()->Assign(solver.anchor_y.begin(), solver.anchor_y.end());
  // The loader reads the skin only with the anchors: an empty world reports
  // one with its zero anchors, and writing it made a saved, loaded and saved
  // again world differ from the first save.
  if (!solver.anchor_x.empty()) s->set_skin(solver.skin);
  s->mutable_anchor_skin()->Assign(solver.anchor_skin.begin(), solver.anchor_skin.end());
  s->set_contact_colours(solver.contact_colours);
  for (const std::vector<MovedAnchor>& repair : solver.repairs) {
    v1::AnchorRepair* r = s->add_repairs();
    for (const MovedAnchor& m : repair) {
      r->add_id(m.id);
      r->add_x(m.x);
      r->add_y(m.y);
      r->add_skin(m.skin);
    }
  }
  out->set_state_hash(world.state_hash());
}

Status load_world(const v1::SavedWorld& saved, const WorldConfig& config, double default_tick_hz, World* out,
                  double* tick_hz) {
  if (saved.format() != 1) return invalid_argument("format", "must be 1", std::to_string(saved.format()));
  const int n = saved.id_size();
  // A parallel array whose length is not its reference's (`what`: "ids").
  auto same_length = [](const char* field, int size, int want, const std::string& what) -> Status {
    if (size == want) return {};
    return {StatusCode::kInvalidArgument, field,
            std::to_string(size) + " values for " + std::to_string(want) + " " + what};
  };
  for (const auto& [field, size] : {std::pair{"x", saved.x_size()}, std::pair{"y", saved.y_size()},
                                    std::pair{"vx", saved.vx_size()}, std::pair{"vy", saved.vy_size()},
                                    std::pair{"radius", saved.radius_size()}, std::pair{"mass", saved.mass_size()}})
    if (Status st = same_length(field, size, n, "ids"); !st.ok()) return st;
  const v1::SolverState& solver = saved.solver();
  const int warm = solver.warm_a_size(), walls = solver.wall_id_size();
  for (const auto& [field, size] :
       {std::pair{"solver.warm_b", solver.warm_b_size()}, std::pair{"solver.warm_value", solver.warm_value_size()}})
    if (Status st = same_length(field, size, warm, "in solver.warm_a"); !st.ok()) return st;
  if (Status st = same_length("solver.wall_bits", solver.wall_bits_size(), walls, "in solver.wall_id"); !st.ok())
    return st;
  if (solver.wall_value_size() != 0)
    if (Status st = same_length("solver.wall_value", solver.wall_value_size(), walls, "in solver.wall_id"); !st.ok())
      return st;

  Params params;
  double hz = default_tick_hz;
  if (Status st = apply_params(saved.params(), &params, &hz); !st.ok()) return st.within("params");
  World world(config, Params{});
  if (Status st = world.set_params(params); !st.ok()) return st.within("params");

  if (static_cast<std::uint64_t>(n) > world.config().max_bodies)
    return {StatusCode::kResourceExhausted, "id",
            std::to_string(n) + " bodies would exceed the limit of " + std::to_string(world.config().max_bodies) +
                " (--max-bodies)"};
  std::vector<BodyDesc> descs(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    if (saved.id(k) == kAutoId) return invalid_argument("id[" + std::to_string(k) + "]", "must be >= 1", "0");
    descs[static_cast<std::size_t>(k)] = {saved.id(k), {saved.x(k), saved.y(k)}, {saved.vx(k), saved.vy(k)},
                                          saved.radius(k), saved.mass(k)};
  }
  if (Status st = world.add_bodies(descs); !st.ok()) return saved_body_status(st);
  const std::vector<BodyId> retired(saved.retired_id().begin(), saved.retired_id().end());
  // next_id 0 (not written) lets the world derive it from the ids it has seen.
  if (Status st = world.reserve_ids(saved.next_id() == 0 ? 1 : saved.next_id(), retired); !st.ok())
    return st.index() ? st.in_batch("retired_id", *st.index()) : st;

  SolverState state;
  state.step = solver.step();
  state.time = solver.time();
  state.warm.resize(static_cast<std::size_t>(solver.warm_a_size()));
  for (int k = 0; k < solver.warm_a_size(); ++k)
    state.warm[static_cast<std::size_t>(k)] = {solver.warm_a(k), solver.warm_b(k), solver.warm_value(k)};
  state.walls.resize(static_cast<std::size_t>(solver.wall_id_size()));
  for (int k = 0; k < solver.wall_id_size(); ++k)
    state.walls[static_cast<std::size_t>(k)] = {solver.wall_id(k), solver.wall_bits(k),
                                                solver.wall_value_size() > 0 ? solver.wall_value(k) : 0.0};
  state.anchor_x.assign(solver.anchor_x().begin(), solver.anchor_x().end());
  state.anchor_y.assign(solver.anchor_y().begin(), solver.anchor_y().end());
  state.skin = solver.skin();
  state.anchor_skin.assign(solver.anchor_skin().begin(), solver.anchor_skin().end());
  state.contact_colours = solver.contact_colours();
  state.repairs.resize(static_cast<std::size_t>(solver.repairs_size()));
  for (int r = 0; r < solver.repairs_size(); ++r) {
    const v1::AnchorRepair& repair = solver.repairs(r);
    const std::string field = "solver.repairs[" + std::to_string(r) + "]";
    for (const auto& [name, size] : {std::pair{".x", repair.x_size()}, std::pair{".y", repair.y_size()},
                                     std::pair{".skin", repair.skin_size()}})
      if (Status st = same_length((field + name).c_str(), size, repair.id_size(), "in " + field + ".id"); !st.ok())
        return st;
    std::vector<MovedAnchor>& moved = state.repairs[static_cast<std::size_t>(r)];
    moved.resize(static_cast<std::size_t>(repair.id_size()));
    for (int k = 0; k < repair.id_size(); ++k)
      moved[static_cast<std::size_t>(k)] = {repair.id(k), repair.x(k), repair.y(k), repair.skin(k)};
  }
  if (Status st = world.restore_solver_state(state); !st.ok()) return saved_solver_status(st);

  if (saved.state_hash() != 0 && world.state_hash() != saved.state_hash()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "the loaded bodies hash to %016llx, the saved world says %016llx",
                  static_cast<unsigned long long>(world.state_hash()),
                  static_cast<unsigned long long>(saved.state_hash()));
    return {StatusCode::kInvalidArgument, "state_hash", buf};
  }
  *out = std::move(world);
  *tick_hz = hz;
  return {};
}

}  // namespace carom::server
