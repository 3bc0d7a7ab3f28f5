// Generators: grid, random box, random disc.
//
// Random placement is rejection sampling against a spatial hash of the
// obstacles (existing bodies near the region, bodies pending in the same
// command, bodies placed so far). Everything random comes from one splitmix64
// stream per generator, consumed in a fixed order (per body: radius; per try:
// position; once placed: speed, direction), and uses only +, -, *, / and
// sqrt, which IEEE 754 rounds exactly: the same message gives the same bits
// everywhere. Directions are uniform by rejection from the unit disc, so no
// sin/cos (whose last bit the standard leaves to the library).

#include "generators.hpp"

#include <algorithm>
#include <cmath>

#include "carom/random.hpp"
#include "carom/spatial_hash.hpp"
#include "convert.hpp"

namespace carom::server {
namespace {

// The generators' stream: splitmix64 plus the draws they need.
class Rng : public SplitMix64 {
 public:
  using SplitMix64::SplitMix64;
  /// Uniform in [lo, hi] (hi only by rounding); lo when lo == hi.
  double uniform(double lo, double hi) { return std::clamp(SplitMix64::uniform(lo, hi), lo, hi); }
  /// A point of the closed unit disc, uniform (rejection from the square);
  /// with `nonzero`, never the centre.
  Vec2 in_unit_disc(bool nonzero) {
    for (;;) {
      const double u = 2.0 * unit() - 1.0, v = 2.0 * unit() - 1.0;
      const double s = u * u + v * v;
      if (s <= 1.0 && (!nonzero || s > 0.0)) return {u, v};
    }
  }
};

// Circles already there, in carom's disc hash (finest cells 2 rmax wide, so
// a generated body's neighbours are a few cells; larger obstacles sit on
// coarser levels).
class Obstacles {
 public:
  explicit Obstacles(double cell) { hash_.reset(cell); }

  void add(double x, double y, double r) {
    hash_.insert(static_cast<std::uint32_t>(x_.size()), x, y, r);
    x_.push_back(x);
    y_.push_back(y);
    r_.push_back(r);
  }

  bool overlaps(double x, double y, double r) const {
    // Candidates from a disc a hair wider than r, so that the rounding of the
    // hash's cell arithmetic never hides one; the predicate decides.
    const double reach = r * (1.0 + 1e-9) + 1e-12 * (std::abs(x) + std::abs(y));
    return hash_.query(x, y, reach, [&](std::uint32_t i) { return discs_overlap(x_[i], y_[i], r_[i], x, y, r); });
  }

 private:
  DiscHash hash_;
  std::vector<double> x_, y_, r_;
};

// What the two random generators share.
struct RandomSpec {
  std::string name;  // "random_box" / "random_disc"
  Vec2 lo, hi;       // bounding box of the region
  std::uint32_t count = 0;
  v1::Range radius, speed;
  std::uint64_t seed = 0;
  double mass = 0.0;
};

Status check_range(const v1::Range& range, const std::string& field, bool positive) {
  if (!(std::isfinite(range.min()) && (positive ? range.min() > 0.0 : range.min() >= 0.0)))
    return invalid_argument(field + ".min", positive ? "must be finite and > 0" : "must be finite and >= 0",
                            format_number(range.min()));
  if (!std::isfinite(range.max()))
    return invalid_argument(field + ".max", "must be finite", format_number(range.max()));
  if (!(range.min() <= range.max()))
    return invalid_argument(field, "min must be <= max",
                            "min " + format_number(range.min()) + ", max " + format_number(range.max()));
  return {};
}

// Also keeps the hash grid's cell numbers finite: cells are at least
// 2 kMinRadius wide and the region at most 2 kMaxCoordinate.
Status check_random(const RandomSpec& s) {
  if (s.count < 1) return invalid_argument(s.name + ".count", "must be >= 1", "0");
  if (Status st = check_range(s.radius, s.name + ".radius", true); !st.ok()) return st;
  if (!(s.radius.min() >= kMinRadius && s.radius.max() <= kMaxRadius))
    return invalid_argument(s.name + ".radius",
                            "must be within [" + format_number(kMinRadius) + ", " + format_number(kMaxRadius) + "]",
                            "min " + format_number(s.radius.min()) + ", max " + format_number(s.radius.max()));
  return check_range(s.speed, s.name + ".speed", false);
}

Status check_region(const RandomSpec& s, const std::string& what) {
  if (within(s.lo, kMaxCoordinate) && within(s.hi, kMaxCoordinate)) return {};
  return invalid_argument(s.name, what + " must lie within +-" + format_number(kMaxCoordinate) + " m",
                          format_vec(s.lo) + " - " + format_vec(s.hi));
}

// A walled world's box must hold the whole region.
Status check_inside(const Params& params, Vec2 lo, Vec2 hi, const std::string& field, const std::string& what) {
  const Bounds& box = params.bounds;
  if (!box.walled) return {};
  if (lo.x >= box.min.x && lo.y >= box.min.y && hi.x <= box.max.x && hi.y <= box.max.y) return {};
  return {StatusCode::kOutOfRange, field,
          what + " " + format_vec(lo) + " - " + format_vec(hi) + " is not inside the box " + format_vec(box.min) +
              " - " + format_vec(box.max)};
}

// Places s.count bodies; `sample` draws one centre for a body of radius r,
// or returns false when the region cannot hold that radius.
template <class Sample>
Status place(const RandomSpec& s, const World& world, std::span<const BodyDesc> pending, Sample&& sample,
             std::vector<BodyDesc>* out) {
  const Bounds& box = world.params().bounds;
  const double rmax = s.radius.max();
  Obstacles obstacles(2.0 * rmax);
  // Only obstacles that can reach the region matter (NaN fails the test).
  auto near = [&](double x, double y, double r) {
    return x + r > s.lo.x - rmax && x - r < s.hi.x + rmax && y + r > s.lo.y - rmax && y - r < s.hi.y + rmax;
  };
  const BodiesView v = world.bodies();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (near(v.x[i], v.y[i], v.radius[i])) obstacles.add(v.x[i], v.y[i], v.radius[i]);
  for (const BodyDesc& d : pending)
    if (d.radius > 0.0 && near(d.position.x, d.position.y, d.radius))
      obstacles.add(d.position.x, d.position.y, d.radius);

  Rng rng(s.seed);
  std::vector<BodyDesc> made;
  made.reserve(s.count);
  for (std::uint32_t k = 0; k < s.count; ++k) {
    const double r = rng.uniform(s.radius.min(), s.radius.max());
    bool placed = false;
    Vec2 p;
    for (int attempt = 0; attempt < kPlacementAttempts && !placed; ++attempt) {
      if (!sample(rng, r, &p)) break;
      // Inside the world's box exactly as World checks it (a rounding of the
      // region's own bound must not put a body one ulp outside).
      if (box.walled) {
        p.x = std::clamp(p.x, box.min.x + r, box.max.x - r);
        p.y = std::clamp(p.y, box.min.y + r, box.max.y - r);
      }
      placed = !obstacles.overlaps(p.x, p.y, r);
    }
    if (!placed)
      return {StatusCode::kOutOfRange, s.name + ".count",
              "placed only " + std::to_string(k) + " of " + std::to_string(s.count) +
                  " bodies without overlap; enlarge the region or lower the count"};
    obstacles.add(p.x, p.y, r);
    const double speed = rng.uniform(s.speed.min(), s.speed.max());
    const Vec2 dir = rng.in_unit_disc(true);
    const double len = std::sqrt(dir.x * dir.x + dir.y * dir.y);
    BodyDesc d;
    d.position = p;
    d.velocity = {speed * (dir.x / len), speed * (dir.y / len)};
    d.radius = r;
    d.mass = s.mass;
    made.push_back(d);
  }
  out->insert(out->end(), made.begin(), made.end());
  return {};
}

Status generate_grid(const v1::GridGenerator& g, const Params& params, std::vector<BodyDesc>* out) {
  if (g.columns() < 1) return invalid_argument("grid.columns", "must be >= 1", "0");
  if (g.rows() < 1) return invalid_argument("grid.rows", "must be >= 1", "0");
  const Vec2 origin = from_proto(g.origin());
  if (!finite(origin)) return invalid_argument("grid.origin", "must be finite", format_vec(origin));
  if (!(std::isfinite(g.spacing()) && g.spacing() > 0.0))
    return invalid_argument("grid.spacing", "must be finite and > 0", format_number(g.spacing()));
  if (!(std::isfinite(g.radius()) && g.radius() > 0.0))
    return invalid_argument("grid.radius", "must be finite and > 0", format_number(g.radius()));
  // x = origin + spacing * i grows with i, so the corners bound the grid.
  const double r = g.radius();
  const Vec2 last{origin.x + g.spacing() * static_cast<double>(g.columns() - 1),
                  origin.y + g.spacing() * static_cast<double>(g.rows() - 1)};
  if (params.bounds.walled) {
    const Bounds& box = params.bounds;
    if (!(origin.x >= box.min.x + r && origin.y >= box.min.y + r && last.x <= box.max.x - r &&
          last.y <= box.max.y - r))
      return {StatusCode::kOutOfRange, "grid",
              "centres " + format_vec(origin) + " - " + format_vec(last) + " with radius " + format_number(r) +
                  " are not all inside the box " + format_vec(box.min) + " - " + format_vec(box.max)};
  }
  const Vec2 velocity = from_proto(g.velocity());
  const std::size_t first = out->size();
  out->reserve(first + static_cast<std::size_t>(g.columns()) * g.rows());
  for (std::uint32_t row = 0; row < g.rows(); ++row) {
    for (std::uint32_t col = 0; col < g.columns(); ++col) {
      BodyDesc d;
      d.position = {origin.x + g.spacing() * static_cast<double>(col),
                    origin.y + g.spacing() * static_cast<double>(row)};
      d.velocity = velocity;
      d.radius = r;
      d.mass = g.mass();
      out->push_back(d);
    }
  }
  return {};
}

Status generate_box(const v1::RandomBoxGenerator& g, const World& world, std::span<const BodyDesc> pending,
                    std::vector<BodyDesc>* out) {
  RandomSpec s{"random_box", from_proto(g.min()), from_proto(g.max()), g.count(), g.radius(), g.speed(), g.seed(),
               g.mass()};
  if (Status st = check_random(s); !st.ok()) return st;
  if (!finite(s.lo)) return invalid_argument("random_box.min", "must be finite", format_vec(s.lo));
  if (!finite(s.hi)) return invalid_argument("random_box.max", "must be finite", format_vec(s.hi));
  if (!(s.hi.x > s.lo.x && s.hi.y > s.lo.y))
    return invalid_argument("random_box", "max must exceed min on both axes",
                            "min " + format_vec(s.lo) + ", max " + format_vec(s.hi));
  if (Status st = check_region(s, "the region"); !st.ok()) return st;
  if (Status st = check_inside(world.params(), s.lo, s.hi, "random_box", "region"); !st.ok()) return st;
  auto sample = [&](Rng& rng, double r, Vec2* p) {
    const double x0 = s.lo.x + r, x1 = s.hi.x - r, y0 = s.lo.y + r, y1 = s.hi.y - r;
    if (!(x0 <= x1 && y0 <= y1)) return false;
    *p = {rng.uniform(x0, x1), rng.uniform(y0, y1)};
    return true;
  };
  return place(s, world, pending, sample, out);
}

Status generate_disc(const v1::RandomDiscGenerator& g, const World& world, std::span<const BodyDesc> pending,
                     std::vector<BodyDesc>* out) {
  const Vec2 c = from_proto(g.center());
  const double R = g.disc_radius();
  RandomSpec s{"random_disc", {c.x - R, c.y - R}, {c.x + R, c.y + R}, g.count(), g.radius(), g.speed(), g.seed(),
               g.mass()};
  if (Status st = check_random(s); !st.ok()) return st;
  if (!finite(c)) return invalid_argument("random_disc.center", "must be finite", format_vec(c));
  if (!(std::isfinite(R) && R > 0.0))
    return invalid_argument("random_disc.disc_radius", "must be finite and > 0", format_number(R));
  if (Status st = check_region(s, "the disc"); !st.ok()) return st;
  if (Status st = check_inside(world.params(), s.lo, s.hi, "random_disc", "disc around"); !st.ok()) return st;
  const double inner = g.inner_radius();
  if (!(std::isfinite(inner) && inner >= 0.0 && inner < R))
    return invalid_argument("random_disc.inner_radius", "must be finite and in [0, disc_radius)", format_number(inner));
  const Vec2 drift = from_proto(g.velocity());
  if (!finite(drift) || !within(drift, kMaxSpeed))
    return invalid_argument("random_disc.velocity",
                            "components must be finite and within +-" + format_number(kMaxSpeed), format_vec(drift));
  const double orbit_mass = g.orbit_mass();
  if (!(std::isfinite(orbit_mass) && orbit_mass >= 0.0 && orbit_mass <= kMaxMass))
    return invalid_argument("random_disc.orbit_mass", "must be finite and in [0, " + format_number(kMaxMass) + "] kg",
                            format_number(orbit_mass));
  auto sample = [&](Rng& rng, double r, Vec2* p) {
    const double reach = R - r;  // the centre stays this close to c
    if (!(reach >= 0.0) || !(reach > inner)) return false;
    // Uniform over the annulus inner..reach: rejection from the disc.
    for (int tries = 0; tries < 64; ++tries) {
      const Vec2 u = rng.in_unit_disc(false);
      const Vec2 q{reach * u.x, reach * u.y};
      if (q.x * q.x + q.y * q.y < inner * inner) continue;
      *p = {c.x + q.x, c.y + q.y};
      return true;
    }
    return false;
  };
  const std::size_t first = out->size();
  if (Status st = place(s, world, pending, sample, out); !st.ok()) return st;
  const double big_g = world.params().mutual.g;
  for (std::size_t k = first; k < out->size(); ++k) {
    BodyDesc& d = (*out)[k];
    d.velocity.x += drift.x;
    d.velocity.y += drift.y;
    if (orbit_mass > 0.0) {
      const double dx = d.position.x - c.x, dy = d.position.y - c.y;
      const double dist = std::sqrt(dx * dx + dy * dy);
      if (dist > 0.0) {
        const double v = std::sqrt(big_g * orbit_mass / dist);
        d.velocity.x += -v * dy / dist;
        d.velocity.y += v * dx / dist;
      }
    }
    if (!within(d.velocity, kMaxSpeed))
      return invalid_argument("random_disc", "a body's velocity would exceed +-" + format_number(kMaxSpeed) + " m/s",
                              format_vec(d.velocity));
  }
  return {};
}

}  // namespace

std::string generator_shape(const v1::Generator& generator) {
  switch (generator.shape_case()) {
    case v1::Generator::kGrid: return "grid";
    case v1::Generator::kRandomBox: return "random_box";
    case v1::Generator::kRandomDisc: return "random_disc";
    case v1::Generator::SHAPE_NOT_SET: break;
  }
  return "";
}

std::uint64_t generator_count(const v1::Generator& generator) {
  switch (generator.shape_case()) {
    case v1::Generator::kGrid:
      return std::uint64_t{generator.grid().columns()} * std::uint64_t{generator.grid().rows()};
    case v1::Generator::kRandomBox: return generator.random_box().count();
    case v1::Generator::kRandomDisc: return generator.random_disc().count();
    case v1::Generator::SHAPE_NOT_SET: break;
  }
  return 0;
}

Status generate(const v1::Generator& generator, const World& world, std::span<const BodyDesc> pending,
                std::vector<BodyDesc>* out) {
  switch (generator.shape_case()) {
    case v1::Generator::kGrid: return generate_grid(generator.grid(), world.params(), out);
    case v1::Generator::kRandomBox: return generate_box(generator.random_box(), world, pending, out);
    case v1::Generator::kRandomDisc: return generate_disc(generator.random_disc(), world, pending, out);
    case v1::Generator::SHAPE_NOT_SET: break;
  }
  return {StatusCode::kInvalidArgument, "shape", "none given (set grid, random_box or random_disc)"};
}

}  // namespace carom::server
