#include "bench/scenes.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace carom::bench {

double Rng::log_uniform(double lo, double hi) { return lo * std::exp(std::log(hi / lo) * uniform()); }

std::vector<std::string_view> scene_names() { return {"gas", "pile", "mixed", "lattice", "default", "nbody"}; }

namespace {

// N bodies on a square grid of ceil(sqrt N) columns filling a walled box of
// side L = sqrt(total area / eta), centres clamped inside the walls,
// velocities uniform in [-5, 5]^2.
void grid_box(const std::vector<double>& radii, double eta, Rng& rng, Scene* out) {
  const std::size_t n = radii.size();
  double area = 0.0;
  for (double r : radii) area += std::numbers::pi * r * r;
  const double side = std::sqrt(area / eta);
  const auto cols = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const double spacing = side / static_cast<double>(cols);
  out->params.bounds = {true, {0.0, 0.0}, {side, side}};
  out->bodies.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double r = radii[i];
    BodyDesc& b = out->bodies[i];
    b.radius = r;
    b.position.x = std::clamp((static_cast<double>(i % cols) + 0.5) * spacing, r, side - r);
    b.position.y = std::clamp((static_cast<double>(i / cols) + 0.5) * spacing, r, side - r);
    b.velocity.x = rng.uniform(-5.0, 5.0);
    b.velocity.y = rng.uniform(-5.0, 5.0);
  }
}

Status invalid(const std::string& msg) { return {StatusCode::kInvalidArgument, msg}; }

}  // namespace

Status build_scene(const SceneSpec& spec, Scene* out) {
  *out = Scene{};
  Params& p = out->params;
  p.gravity = {0.0, 0.0};
  p.restitution = 1.0;
  p.linear_damping = 0.0;
  p.dt = 1.0 / 60.0;
  p.substeps = 4;
  p.solver = Solver::kDiscrete;
  p.record_events = false;
  if (spec.bodies == 0) return invalid("bodies: must be > 0, got 0");
  if (!(spec.eta > 0.0 && spec.eta < 0.9)) return invalid("eta: must be in (0, 0.9), got " + std::to_string(spec.eta));
  Rng rng(spec.seed);
  const std::size_t n = spec.bodies;

  if (spec.name == "gas" || spec.name == "pile") {
    grid_box(std::vector<double>(n, 0.25), spec.eta, rng, out);
    if (spec.name == "pile") {
      // The same gas let fall into a pile that settles: restitution 0.5 so it
      // comes to rest (the scene users build first: marbles in a box).
      p.gravity = {0.0, -10.0};
      p.restitution = 0.5;
    }
  } else if (spec.name == "mixed") {
    std::vector<double> radii(n);
    for (double& r : radii) r = 0.1 * std::pow(25.0, rng.uniform());  // log-uniform in [0.1, 2.5]
    grid_box(radii, spec.eta, rng, out);
  } else if (spec.name == "lattice") {
    if (n > 90000) return invalid("bodies: lattice holds at most 90000 (300 x 300), got " + std::to_string(n));
    p.bounds = {true, {0.0, 0.0}, {300.0, 300.0}};
    p.gravity = {0.0, -10.0};
    p.substeps = 8;
    p.iterations = 1;  // one push-apart pass a substep, like the grid demos it is compared with
    p.solver = Solver::kVerlet;
    p.restitution = 0.0;
    out->bodies.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      out->bodies[i].radius = 0.5;
      out->bodies[i].position = {0.5 + static_cast<double>(i % 300), 0.5 + static_cast<double>(i / 300)};
    }
  } else if (spec.name == "nbody") {
    // Issue 14's scene, defined so other codes can run it: N bodies of mass
    // 1 and radius 0.25 (--radius) uniform in a disc of radius sqrt(N), velocities
    // uniform in [-0.1, 0.1]^2, G = 1, softening 0.05, unbounded,
    // restitution 0.5, dt 1/60 (one substep: the collisions are few).
    p.bounds.walled = false;
    p.mutual.enabled = true;
    p.mutual.g = 1.0;
    p.mutual.softening = 0.05;
    p.restitution = 0.5;
    p.substeps = 1;
    const double radius = std::sqrt(static_cast<double>(n));
    out->bodies.resize(n);
    for (BodyDesc& b : out->bodies) {
      const double r = radius * std::sqrt(rng.uniform()), phi = 2.0 * std::numbers::pi * rng.uniform();
      b.position = {r * std::cos(phi), r * std::sin(phi)};
      b.velocity = {rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1)};
      b.radius = spec.radius;
      b.mass = 1.0;
    }
  } else if (spec.name == "default") {
    // Like the demo's world (not it: that is scenarios/default.txtpb): a
    // mixed crowd falling into a box, a few heavy balls.
    p.bounds = {true, {0.0, 0.0}, {160.0, 90.0}};
    p.gravity = {0.0, -9.81};
    p.restitution = 0.85;
    p.linear_damping = 0.05;
    p.record_events = true;
    out->bodies.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      BodyDesc& b = out->bodies[i];
      b.radius = (i % 97 == 0) ? 3.0 : 0.35 * std::pow(3.0, rng.uniform());
      b.position = {rng.uniform(b.radius, 160.0 - b.radius), rng.uniform(30.0, 90.0 - b.radius)};
      b.velocity = {rng.uniform(-8.0, 8.0), rng.uniform(-2.0, 2.0)};
    }
  } else {
    return invalid("scene: unknown scene '" + spec.name + "' (gas, pile, mixed, lattice, default, nbody)");
  }
  return {};
}

}  // namespace carom::bench
