#pragma once
// The stage functions World::step calls, one file each. Every stage runs inside
// the World's task arena and writes only into slots fixed before it starts.

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "body_store.hpp"
#include "broad_phase.hpp"
#include "carom/params.hpp"
#include "carom/stats.hpp"
#include "contact_order.hpp"

namespace carom::detail {

/// One contact found by the narrow phase. Its bodies are in the parallel
/// Contacts::pairs array (so the ordering rule can read pairs alone).
struct Contact {
  double nx = 0, ny = 0;        // unit normal from a to b at detection
  double px = 0, py = 0;        // radius-weighted contact point at detection
  // Normal impulse on b this substep (N s); Verlet: implied by the push.
  // Discrete: until the passes end, what the pair carried last substep (the
  // warm start, m/s), so that a contact stays 64 bytes, one cache line.
  double impulse = 0;
  double bounce = 0;            // discrete: normal velocity change of the impacts this substep, > 0 (m/s)
  double accum = 0;             // discrete: accumulated normal velocity change, >= 0 (m/s)
  std::uint32_t candidate = 0;  // index in the candidate pair list (warm starting)
  std::uint32_t state = 0;      // kTouching, or kCollided for an impact
};
inline constexpr std::uint32_t kTouching = 1, kCollided = 2;
static_assert(sizeof(Contact) == 64, "a contact is one cache line");

/// The contacts of one substep, in candidate-pair order, plus scratch.
struct Contacts {
  std::vector<Pair> pairs;
  std::vector<Contact> geometry;
  ContactSchedule schedule;
  ContactIslands islands;
  bool by_islands = false;   // this substep's contacts run by islands, else by the schedule's rounds
  std::uint32_t island_backoff = 0;  // substeps before islands are tried again (speed only)
  std::uint32_t rounds = 0;  // rounds the minimum-ordering rule takes this substep
  std::vector<std::vector<Pair>> block_pairs;
  std::vector<std::vector<Contact>> block_geometry;
  // Warm starting: the accumulated velocity change of each resting contact
  // last substep, by candidate index (empty while there is none).
  // (candidate index, value), in candidate order: sparse, because a gas has
  // almost none and a dense array per candidate cost 8 bytes a candidate.
  std::vector<std::pair<std::uint32_t, double>> warm;
  std::size_t size() const { return pairs.size(); }
};

/// Warm-start values keyed by (lower id << 32 | higher id), sorted by key.
using WarmByIds = std::vector<std::pair<std::uint64_t, double>>;
/// Before a rebuild of the candidate list (`pairs`): the warm values by id pair.
WarmByIds save_warm(const BodyStore& b, const PairBlocks& pairs, const Contacts& contacts);
/// After the rebuild: warm values re-indexed by the new candidate list.
void restore_warm(const BodyStore& b, const PairBlocks& pairs, const WarmByIds& saved, Contacts& contacts);

/// Bodies pressed against a wall after the last position update: storage
/// index << 4 | wall bits (kWallMinX, kWallMaxX, kWallMinY, kWallMaxY), in
/// per-block lists. The discrete solver's passes treat them as contacts.
struct WallContacts {
  std::vector<std::vector<std::uint32_t>> blocks;
};
/// Bodies per block of WallContacts (block k lists storage indices [k b, (k+1) b)).
inline constexpr std::size_t kWallBlock = 2048;
inline constexpr std::uint32_t kWallMinX = 1, kWallMaxX = 2, kWallMinY = 4, kWallMaxY = 8;

/// Restitution applies to approach speeds above this; slower contacts are
/// resting and inelastic (else gravity's per-substep speed would bounce
/// forever). One step of free fall, |g| dt; 0 without gravity, so a gas
/// keeps every collision elastic.
inline double resting_speed(Vec2 gravity, double dt) { return std::sqrt(dot(gravity, gravity)) * dt; }

/// The pair list remembers where each body was when it was built rounded to
/// float (8 bytes a body, not 16: they matter at a million bodies), off by
/// at most `error` per coordinate. Only an upper bound of the distance
/// travelled since is needed: from d2, the largest squared distance to the
/// rounded positions, |a| + e and |b| + e give at most (sqrt(d2) + sqrt(2) e)^2.
inline double moved_at_most(double d2, double error) {
  const double d = std::sqrt(d2) + 1.4142135623730951 * error;
  return d * d * (1.0 + 1e-15);
}

/// Velocity half of a substep: v <- v * damping + g h. Also returns the
/// largest squared distance of any body from (xb, yb), the rounded positions
/// the pair list was built at (one pass over the bodies serves both); 0 when
/// xb is empty (Verlet measures after its predict instead).
double integrate_velocities(BodyStore& b, Vec2 gravity, double damping, double h, std::span<const float> xb,
                            std::span<const float> yb);

/// Discrete solver: x <- x + v h, then walls (clamp, reflect the normal
/// velocity with restitution above `resting`), recording who touches a wall.
void integrate_positions(BodyStore& b, const Params& p, double h, double resting, WallContacts& walls);

/// Verlet predict: keep (px, py) = x, then x <- x + v h. Returns as above.
double predict_positions(BodyStore& b, double h, std::span<double> px, std::span<double> py,
                         std::span<const float> xb, std::span<const float> yb);

/// Verlet finish: walls clamp, then v <- (x - previous x) / h, with walls
/// reflecting the normal velocity with restitution.
void finish_verlet(BodyStore& b, const Params& p, double h, std::span<const double> px,
                   std::span<const double> py);

/// Narrow phase: the candidate pairs that overlap now (and, with
/// `touching_counts`, those that touch), with their normals and contact
/// points. Returns how many.
std::uint64_t collide(const BodyStore& b, const PairBlocks& candidates, Contacts& contacts, bool touching_counts);

/// Orders the contacts by the minimum-ordering rule and applies them round by
/// round. Discrete: up to `iterations` impact passes (walls, then each pair
/// approaching faster than `resting` collides as an isolated pair with
/// restitution), then up to `iterations` resting passes (approaches brought to
/// 0, warm-started); Verlet: `iterations` position passes. Returns the number
/// of contacts that collided (changed velocities or, for Verlet, positions).
std::uint64_t resolve_contacts(BodyStore& b, Contacts& contacts, const WallContacts& walls, const Params& p,
                               double resting, double h);

/// Discrete, after integrate_positions: the position correction passes over
/// the substep's contacts (positions only), walls holding what they clamp.
void correct_positions(BodyStore& b, Contacts& contacts, const Params& p);

/// Appends the collisions of one substep to `events` in contact order, up to
/// `cap` in total. Returns how many did not fit.
std::uint64_t record_events(const BodyStore& b, const Contacts& contacts, std::uint32_t substep, std::size_t cap,
                            std::vector<CollisionEvent>& events);

/// Kinetic energy and momentum, summed per fixed block then in block order.
void measure_energy(const BodyStore& b, StepStats& stats);

/// The state hash over bit patterns in id order.
std::uint64_t hash_state(const BodyStore& b);

}  // namespace carom::detail
