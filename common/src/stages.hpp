#pragma once
// The stage functions World::step calls, one file each. Every stage runs inside
// the World's task arena and writes only into slots fixed before it starts.

#include <cstdint>
#include <span>
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
  double nx = 0, ny = 0;    // unit normal from a to b at detection
  double impulse = 0;       // normal impulse applied (discrete) or implied (verlet)
  std::uint32_t state = 0;  // kTouching or kCollided
};
inline constexpr std::uint32_t kTouching = 1, kCollided = 2;

/// The contacts of one substep, in candidate-pair order, plus scratch.
struct Contacts {
  std::vector<Pair> pairs;
  std::vector<Contact> geometry;
  ContactSchedule schedule;
  std::vector<std::vector<Pair>> block_pairs;
  std::vector<std::vector<Contact>> block_geometry;
  std::size_t size() const { return pairs.size(); }
};

/// Velocity half of a substep: v <- v * damping + g h.
void integrate_velocities(BodyStore& b, Vec2 gravity, double damping, double h);

/// Discrete solver: x <- x + v h, then walls. Returns the largest squared
/// distance of any body from (xb, yb), the positions the pair list was built at.
double integrate_positions(BodyStore& b, const Params& p, double h, std::span<const double> xb,
                           std::span<const double> yb);

/// Verlet predict: keep (px, py) = x, then x <- x + v h. Returns as above.
double predict_positions(BodyStore& b, double h, std::span<double> px, std::span<double> py,
                         std::span<const double> xb, std::span<const double> yb);

/// Verlet finish: walls clamp, then v <- (x - previous x) / h, with walls
/// reflecting the normal velocity with restitution.
void finish_verlet(BodyStore& b, const Params& p, double h, std::span<const double> px,
                   std::span<const double> py);

/// Narrow phase: the candidate pairs that overlap now, with their normals.
void collide(const BodyStore& b, const PairBlocks& candidates, Contacts& contacts);

/// Orders the contacts by the minimum-ordering rule and applies them round by
/// round. Discrete: normal impulse with restitution on approaching pairs, then
/// position correction; Verlet: position correction only. Returns the number of
/// collisions (contacts that changed velocities or, for Verlet, positions).
std::uint64_t resolve_contacts(BodyStore& b, Contacts& contacts, Solver solver, double restitution, double h);

/// Appends the collisions of one substep to `events` in contact order, up to
/// `cap` in total. Returns how many did not fit.
std::uint64_t record_events(const BodyStore& b, const Contacts& contacts, std::uint32_t substep, std::size_t cap,
                            std::vector<CollisionEvent>& events);

/// Kinetic energy and momentum, summed per fixed block then in block order.
void measure_energy(const BodyStore& b, StepStats& stats);

/// The state hash over bit patterns in id order.
std::uint64_t hash_state(const BodyStore& b);

}  // namespace carom::detail
