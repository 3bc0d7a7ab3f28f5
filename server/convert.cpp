// Conversions between carom's own types and the protocol's. Saved worlds go
// through the World's public API only (explicit ids, reserve_ids,
// restore_solver_state), so a loaded world obeys every rule a built one does.

#include "convert.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "sim_state.hpp"

namespace carom::server {
namespace {

Status prefixed(const Status& st, const std::string& prefix) {
  return st.ok() ? st : Status{st.code(), prefix + st.message()};
}

// A uint32 count of Params (substeps, iterations); values beyond int are
// refused here with the World's own wording, the rest are the World's to judge.
Status to_int(std::uint32_t value, const char* field, int* out) {
  if (value > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
    return invalid_argument(field, "must be in [1, 64]", std::to_string(value));
  *out = static_cast<int>(value);
  return {};
}

// The SavedWorld arrays that hold one body field of World::add_bodies.
std::string saved_field(const std::string& field, std::size_t k) {
  std::string at = "[";
  at.append(std::to_string(k)).append("]");
  std::string out;
  if (field == "position") return out.append("x").append(at).append(", y").append(at);
  if (field == "velocity") return out.append("vx").append(at).append(", vy").append(at);
  return out.append(field).append(at);  // id, radius, mass
}

// World::restore_solver_state names its fields in SolverState terms; a
// SavedWorld keeps them in parallel arrays: "solver.warm[3].a" becomes
// "solver.warm_a[3]", "solver.walls[2].bits" becomes "solver.wall_bits[2]".
std::string saved_solver_message(const std::string& message) {
  const std::size_t colon = message.find(": ");
  if (colon == std::string::npos) return message;
  const std::string path = message.substr(0, colon);
  std::string out;
  if (path == "solver.warm") {
    out = "solver.warm_a, solver.warm_b";
  } else if (path == "solver.walls") {
    out = "solver.wall_id";
  } else {
    const std::size_t open = path.find('['), close = path.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return message;
    const std::string list = path.substr(0, open);
    const std::string index = path.substr(open, close + 1 - open);
    const std::string field = path.substr(close + 1);
    if (list != "solver.warm" && list != "solver.walls") return message;
    const std::string prefix = list == "solver.warm" ? "solver.warm_" : "solver.wall_";
    if (field.empty()) {
      // A warm start as a whole: its pair.
      out.append(prefix).append("a").append(index).append(", ").append(prefix).append("b").append(index);
    } else {
      out.append(prefix).append(field.substr(1)).append(index);
    }
  }
  return out.append(message.substr(colon));
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
        return {StatusCode::kInvalidArgument,
                "solver: unknown value " + std::to_string(static_cast<int>(in.solver())) +
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
          return {StatusCode::kInvalidArgument,
                  "mutual.method: unknown value " + std::to_string(static_cast<int>(m.method())) +
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

BodyError split_body_error(const std::string& message, std::size_t count) {
  BodyError e;
  const std::size_t colon = message.find(": ");
  if (colon == std::string::npos) {
    e.rest = message;
    return e;
  }
  const std::string path = message.substr(0, colon);
  if (count == 1 && path.find('[') == std::string::npos && path != "bodies" &&
      message.rfind("id: the world has used every id", 0) != 0) {
    // A batch of one carries no index: "radius: must be ...".
    e.index = 0;
    e.field = path;
    e.rest = message.substr(colon + 2);
    return e;
  }
  if (path.rfind("bodies[", 0) == 0) {
    const std::size_t close = path.find("].");
    if (close != std::string::npos) {
      std::size_t index = 0;
      const auto res = std::from_chars(path.data() + 7, path.data() + close, index);
      if (res.ec == std::errc() && res.ptr == path.data() + close) {
        e.index = index;
        e.field = path.substr(close + 2);
        e.rest = message.substr(colon + 2);
        return e;
      }
    }
  }
  e.rest = message;
  return e;
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
  out->set_state_hash(world.state_hash());
}

Status load_world(const v1::SavedWorld& saved, const WorldConfig& config, double default_tick_hz, World* out,
                  double* tick_hz) {
  if (saved.format() != 1) return invalid_argument("format", "must be 1", std::to_string(saved.format()));
  const int n = saved.id_size();
  auto same_length = [&](const char* field, int size) -> Status {
    if (size == n) return {};
    return {StatusCode::kInvalidArgument,
            std::string(field) + ": " + std::to_string(size) + " values for " + std::to_string(n) + " ids"};
  };
  for (const auto& [field, size] : {std::pair{"x", saved.x_size()}, std::pair{"y", saved.y_size()},
                                    std::pair{"vx", saved.vx_size()}, std::pair{"vy", saved.vy_size()},
                                    std::pair{"radius", saved.radius_size()}, std::pair{"mass", saved.mass_size()}})
    if (Status st = same_length(field, size); !st.ok()) return st;
  const v1::SolverState& solver = saved.solver();
  if (solver.warm_b_size() != solver.warm_a_size() || solver.warm_value_size() != solver.warm_a_size())
    return {StatusCode::kInvalidArgument, "solver.warm_a, warm_b, warm_value: lengths differ (" +
                                              std::to_string(solver.warm_a_size()) + ", " +
                                              std::to_string(solver.warm_b_size()) + ", " +
                                              std::to_string(solver.warm_value_size()) + ")"};
  if (solver.wall_bits_size() != solver.wall_id_size())
    return {StatusCode::kInvalidArgument, "solver.wall_id, wall_bits: lengths differ (" +
                                              std::to_string(solver.wall_id_size()) + ", " +
                                              std::to_string(solver.wall_bits_size()) + ")"};
  if (solver.wall_value_size() != 0 && solver.wall_value_size() != solver.wall_id_size())
    return {StatusCode::kInvalidArgument, "solver.wall_id, wall_value: lengths differ (" +
                                              std::to_string(solver.wall_id_size()) + ", " +
                                              std::to_string(solver.wall_value_size()) + ")"};

  Params params;
  double hz = default_tick_hz;
  if (Status st = apply_params(saved.params(), &params, &hz); !st.ok()) return prefixed(st, "params.");
  World world(config, Params{});
  if (Status st = world.set_params(params); !st.ok()) return prefixed(st, "params.");

  if (static_cast<std::uint64_t>(n) > world.config().max_bodies)
    return {StatusCode::kResourceExhausted, "id: " + std::to_string(n) + " bodies would exceed the limit of " +
                                                std::to_string(world.config().max_bodies) + " (--max-bodies)"};
  std::vector<BodyDesc> descs(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    if (saved.id(k) == kAutoId) return invalid_argument("id[" + std::to_string(k) + "]", "must be >= 1", "0");
    descs[static_cast<std::size_t>(k)] = {saved.id(k), {saved.x(k), saved.y(k)}, {saved.vx(k), saved.vy(k)},
                                          saved.radius(k), saved.mass(k)};
  }
  if (Status st = world.add_bodies(descs); !st.ok()) {
    const BodyError e = split_body_error(st.message(), descs.size());
    if (e.index == BodyError::npos) {
      const std::string& m = st.message();
      return {st.code(), "id: " + (m.rfind("bodies: ", 0) == 0 ? m.substr(8) : m)};
    }
    return {st.code(), saved_field(e.field, e.index) + ": " + e.rest};
  }
  const std::vector<BodyId> retired(saved.retired_id().begin(), saved.retired_id().end());
  // next_id 0 (not written) lets the world derive it from the ids it has seen.
  if (Status st = world.reserve_ids(saved.next_id() == 0 ? 1 : saved.next_id(), retired); !st.ok()) {
    const std::string m = st.message();
    return {st.code(), m.rfind("retired[", 0) == 0 ? "retired_id" + m.substr(7) : m};
  }

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
  if (Status st = world.restore_solver_state(state); !st.ok())
    return {st.code(), saved_solver_message(st.message())};

  if (saved.state_hash() != 0 && world.state_hash() != saved.state_hash()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "the loaded bodies hash to %016llx, the saved world says %016llx",
                  static_cast<unsigned long long>(world.state_hash()),
                  static_cast<unsigned long long>(saved.state_hash()));
    return {StatusCode::kInvalidArgument, std::string("state_hash: ") + buf};
  }
  *out = std::move(world);
  *tick_hz = hz;
  return {};
}

}  // namespace carom::server
