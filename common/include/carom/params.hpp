#pragma once
/// \file World parameters and configuration.

#include <array>
#include <cstdint>
#include <string_view>

#include "carom/vec2.hpp"

namespace carom {

/// Engineering limits, checked on every input, that keep every sum, product
/// and square in a step finite (no overflow to inf, no subnormal cell sizes).
inline constexpr double kMaxCoordinate = 1e9;  ///< |position| and |bounds| components, m
inline constexpr double kMaxSpeed = 1e9;       ///< |velocity| components, m/s
inline constexpr double kMinRadius = 1e-6;     ///< m
inline constexpr double kMaxRadius = 1e6;      ///< m
inline constexpr double kMinMass = 1e-30;      ///< kg (also for density x area)
inline constexpr double kMaxMass = 1e30;       ///< kg
inline constexpr double kMinDt = 1e-6;         ///< s
inline constexpr std::uint32_t kMaxBodies = 1u << 28;  ///< cap on WorldConfig::max_bodies

/// Which solver steps the world.
enum class Solver : std::uint8_t {
  kDiscrete = 0,  ///< a posteriori: impulses on overlapping, approaching pairs + position correction
  kVerlet = 1,    ///< position-based: push-apart on positions, velocity derived from motion
  /// a priori: exact times of impact, events processed in time order within
  /// each step (substeps and iterations do not apply); nothing tunnels
  kContinuous = 2,
};

/// Every solver, in order.
inline constexpr std::array<Solver, 3> kSolvers = {Solver::kDiscrete, Solver::kVerlet, Solver::kContinuous};

/// "discrete" / "verlet" / "continuous".
const char* to_string(Solver solver);
/// Parses "discrete" / "verlet" / "continuous"; returns false on anything else.
bool parse_solver(std::string_view text, Solver* out);

/// How mutual gravity is summed.
enum class GravityMethod : std::uint8_t {
  kAuto = 0,    ///< direct below 32 bodies, tree above (where the tree pays, measured)
  kDirect = 1,  ///< every pair, O(N^2)
  kTree = 2,    ///< Barnes-Hut quadtree, O(N log N), opening angle theta
};
/// Every method, in order.
inline constexpr std::array<GravityMethod, 3> kGravityMethods = {GravityMethod::kAuto, GravityMethod::kDirect,
                                                                 GravityMethod::kTree};
/// "auto" / "direct" / "tree".
const char* to_string(GravityMethod method);
/// Parses "auto" / "direct" / "tree"; returns false on anything else.
bool parse_gravity_method(std::string_view text, GravityMethod* out);

inline constexpr double kMaxG = 1e6;         ///< largest gravitational constant accepted
inline constexpr double kMaxTheta = 1.5;     ///< largest opening angle accepted

/// Bodies attracting each other (Newton, Plummer-softened), on top of the
/// uniform `gravity` vector (zero: mutual only). Integrated kick-drift-kick:
/// half a kick before the step, the step's collisions in the drift, half a
/// kick after.
struct MutualGravity {
  bool enabled = false;
  double g = 1.0;            ///< gravitational constant G, in (0, kMaxG] (m^3 / (kg s^2) in carom's units)
  double softening = 0.0;    ///< Plummer length eps >= 0, m: close pairs stay finite
  GravityMethod method = GravityMethod::kAuto;
  double theta = 0.5;        ///< tree opening angle, in (0, kMaxTheta]
};

/// The walled box. `walled == false` means unbounded: no walls at all.
struct Bounds {
  bool walled = true;
  Vec2 min{0.0, 0.0};  ///< metres
  Vec2 max{100.0, 100.0};
};

/// Everything that shapes the physics. Changed through World::set_params,
/// which validates all of it before touching anything.
struct Params {
  Bounds bounds;
  Vec2 gravity{0.0, 0.0};        ///< m/s^2
  MutualGravity mutual;          ///< n-body gravity (off by default)
  double restitution = 1.0;      ///< in [0, 1]; bodies and walls
  /// Linear damping c in 1/s: each substep of length h multiplies velocity by
  /// exp(-c h). The "x0.99 per frame at 60 Hz" friction is c = -60 ln 0.99 = 0.603.
  /// (Continuous: once per step, exp(-c dt), with gravity's kick g dt.)
  double linear_damping = 0.0;
  Solver solver = Solver::kDiscrete;
  int substeps = 4;              ///< 1..64 substeps per step (the continuous solver does not use it)
  /// 1..64 solver passes per substep. Discrete: soft passes (with bias,
  /// before the positions move) and two more relax passes (after), over all
  /// contacts and walls, the contacts stiffer the more passes (0.4 of the
  /// substep rate at one, 0.5 at two, 0.55 from three); impacts repeat until
  /// none fires, at least 16 passes allowed whatever this is. Verlet: position passes, then as many
  /// restitution passes. Continuous: not used.
  int iterations = 2;
  double dt = 1.0 / 60.0;        ///< seconds per step, (0, 1]
  double density = 1.0;          ///< kg/m^2, for bodies added with mass 0
  bool record_events = true;     ///< keep collision events of the last step
  std::uint32_t max_events = 1u << 16;  ///< cap on events kept per step (the rest are counted)
};

/// Fixed at construction.
struct WorldConfig {
  /// Add beyond this fails with kResourceExhausted. Values above kMaxBodies
  /// are lowered to it.
  std::uint32_t max_bodies = 1u << 24;
  int threads = 0;                      ///< worker threads; 0 = all hardware threads
  /// Continuous solver: a step processes at most this many events per body
  /// (plus 4096); past it the step ends early (StepStats::events_capped).
  std::uint32_t continuous_events_per_body = 256;
  /// Continuous solver, for tests and carom-bench --baseline only: the
  /// textbook reference that predicts each body against every other body
  /// (O(N) per prediction, O(N^2) per step) instead of its swept-extent
  /// neighbours. Same results, bit for bit.
  bool continuous_all_pairs = false;
  /// With more than one thread: a step may run on the calling thread alone
  /// where the world measures that to be faster (cores far apart: a virtual
  /// machine's two cores on different dies made the 10k pile 1.8 times
  /// slower on two threads than on one). Results never depend on it; false
  /// keeps every step on `threads` (tests of the parallel paths, and
  /// measuring them).
  bool adapt_threads = true;
};

}  // namespace carom
