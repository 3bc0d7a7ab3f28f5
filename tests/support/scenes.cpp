#include "support/scenes.hpp"

#include <algorithm>
#include <cmath>


namespace carom::test {

Params open_params() {
  Params p;
  p.bounds.walled = false;
  p.gravity = {0.0, 0.0};
  p.restitution = 1.0;
  p.linear_damping = 0.0;
  p.solver = Solver::kDiscrete;
  p.substeps = 1;
  return p;
}

std::vector<BodyDesc> make_gas(const GasSpec& spec, Bounds* box_out) {
  Rng rng(spec.seed);
  const double pitch = spec.spacing > 0.0 ? spec.spacing : 2.5 * spec.rmax;
  const auto side = static_cast<std::uint32_t>(std::ceil(std::sqrt(static_cast<double>(spec.n))));
  // Jitter keeps every body a margin away from its neighbours and the walls.
  const double room = 0.5 * pitch - spec.rmax;
  std::vector<BodyDesc> out;
  out.reserve(spec.n);
  for (std::uint32_t k = 0; k < spec.n; ++k) {
    const double cx = (k % side + 0.5) * pitch, cy = (k / side + 0.5) * pitch;
    BodyDesc d;
    d.id = k + 1;
    d.radius = rng.uniform(spec.rmin, spec.rmax);
    d.position = {cx + rng.uniform(-room, room), cy + rng.uniform(-room, room)};
    d.velocity = {rng.uniform(-spec.speed, spec.speed), rng.uniform(-spec.speed, spec.speed)};
    out.push_back(d);
  }
  if (box_out) {
    box_out->walled = true;
    box_out->min = {0.0, 0.0};
    box_out->max = {side * pitch, side * pitch};
  }
  return out;
}

std::vector<BodyDesc> make_pile(const PileSpec& spec, Bounds* box_out) {
  Rng rng(spec.seed);
  const std::uint32_t rows = (spec.n + spec.columns - 1) / spec.columns;
  std::vector<BodyDesc> out;
  out.reserve(spec.n);
  for (std::uint32_t k = 0; k < spec.n; ++k) {
    const std::uint32_t row = k / spec.columns, col = k % spec.columns;
    BodyDesc d;
    d.id = k + 1;
    d.radius = spec.rmin == spec.rmax ? spec.rmin : rng.uniform(spec.rmin, spec.rmax);
    // Odd rows shift by a quarter pitch so the pile does not stack in columns.
    d.position = {spec.rmax + (col + 0.25 * (row % 2)) * spec.pitch, spec.rmax + row * spec.pitch};
    d.velocity = {rng.uniform(-spec.jitter_speed, spec.jitter_speed),
                  rng.uniform(-spec.jitter_speed, spec.jitter_speed)};
    out.push_back(d);
  }
  if (box_out) {
    box_out->walled = true;
    box_out->min = {0.0, 0.0};
    box_out->max = {2.0 * spec.rmax + (spec.columns - 0.75) * spec.pitch, 2.0 * spec.rmax + (rows + 1) * spec.pitch};
  }
  return out;
}

bool all_finite(const World& world) {
  const BodiesView v = world.bodies();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v.x[i]) || !std::isfinite(v.y[i]) || !std::isfinite(v.vx[i]) || !std::isfinite(v.vy[i]))
      return false;
  return true;
}

std::size_t count_outside(const World& world, const Bounds& box) {
  const BodiesView v = world.bodies();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double r = v.radius[i];
    const bool in = v.x[i] >= box.min.x + r && v.x[i] <= box.max.x - r && v.y[i] >= box.min.y + r &&
                    v.y[i] <= box.max.y - r;
    bad += !in;
  }
  return bad;
}

double potential_energy(const World& world, double g, double floor_y) {
  const BodiesView v = world.bodies();
  double pe = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) pe += v.mass[i] * g * (v.y[i] - v.radius[i] - floor_y);
  return pe;
}

}  // namespace carom::test
