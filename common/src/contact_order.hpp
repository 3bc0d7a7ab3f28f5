#pragma once
// The deterministic minimum-ordering rule for simultaneous contacts.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "broad_phase.hpp"
#include "carom/body.hpp"

namespace carom::detail {

/// Position of a contact in the strict total order on contacts: a bijective mix
/// of (lower id, higher id), so distinct pairs never tie and the order depends
/// on stable ids only. Smaller key = applied first.
inline std::uint64_t contact_key(BodyId lo, BodyId hi) {
  std::uint64_t z = (std::uint64_t{lo} << 32) | hi;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Rounds of pairwise body-disjoint contacts. Applying round 0, then round 1,
/// ... gives exactly what applying every contact one by one in contact_key
/// order would give: two contacts that share a body always land in rounds in
/// key order, and contacts that share no body commute.
struct ContactSchedule {
  std::vector<std::uint32_t> order;        // contact indices, round by round
  std::vector<std::uint32_t> round_begin;  // round r is order[round_begin[r] .. round_begin[r+1])
  // scratch, kept between calls so steady-state steps do not allocate
  std::vector<std::uint64_t> reserved;     // per body, allocated on first use; all ~0 between calls
  std::vector<std::uint32_t> pending, tail_round;
  std::vector<std::vector<std::uint32_t>> ready_blocks, rest_blocks;

  std::size_t rounds() const { return round_begin.empty() ? 0 : round_begin.size() - 1; }
};

/// The contacts grouped into islands: connected components of the graph whose
/// vertices are bodies and whose edges are contacts. Islands share no body, so
/// applying each island's contacts one by one in contact_key order, islands in
/// any order or in parallel, gives exactly what the rounds give (the same
/// rule), with one parallel loop instead of one per round.
struct ContactIslands {
  std::vector<std::uint32_t> order;        // contact indices, island by island, each island in key order
  std::vector<std::uint32_t> begin;        // island k is order[begin[k] .. begin[k+1])
  std::vector<std::uint32_t> walls;        // wall entries (storage index << 4 | bits) of island bodies
  std::vector<std::uint32_t> walls_begin;  // island k's are walls[walls_begin[k] .. walls_begin[k+1])
  std::vector<std::uint32_t> lone_walls;   // wall entries of bodies in no contact
  std::uint32_t depth = 0;                 // rounds the rule would take: the deepest island
  // scratch (the per-body union-find slots are ContactSchedule::reserved:
  // the two are never used in one substep, and 8 bytes a body matter at 1M)
  std::vector<std::uint64_t> key;
  std::vector<std::uint32_t> island_of, cursor;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> wall_island;

  std::size_t size() const { return begin.empty() ? 0 : begin.size() - 1; }
};

/// Builds the islands of `pairs` and sorts the wall entries (`walls`, in
/// per-block lists) into them. Returns false, leaving `out` unusable, when an
/// island has more than `max_island` contacts: rounds then parallelise better.
/// `slots` is per-body scratch, all ~0 between calls: the schedule's
/// `reserved`, shared.
bool build_islands(std::span<const BodyId> ids, std::span<const Pair> pairs,
                   std::span<const std::vector<std::uint32_t>> walls, std::size_t max_island, ContactIslands& out,
                   std::vector<std::uint64_t>& slots);

/// Groups `pairs` (storage indices into `ids`) into rounds: a contact enters a
/// round when it is the minimum, in key order, among the contacts not yet
/// applied of both of its bodies. Same schedule for any thread count.
void order_contacts(std::span<const BodyId> ids, std::span<const Pair> pairs, ContactSchedule& schedule);

}  // namespace carom::detail
