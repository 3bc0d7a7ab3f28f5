#pragma once
// The discrete and Verlet solvers' state: what they keep from substep to
// substep and from step to step. World::step runs the stages on it in order
// (world.cpp); the continuous solver has its own (continuous/solver.hpp), and
// neither touches the other's.

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "body_store.hpp"
#include "broad_phase.hpp"
#include "carom/solver_state.hpp"
#include "stages.hpp"

namespace carom::detail {

/// The coloured candidate list and what it was built from, the contacts and
/// their warm starts, the wall contacts, Verlet's start-of-substep positions.
/// Simulation thread only (its stages fan out inside the World's arena).
struct DiscreteSolver {
  PairAnchors anchors;         // broad phase: where the list was built, and when to rebuild it
  BroadPhase broad;            // the pair search's scratch
  PairBlocks pairs;            // the candidates, in colour order (or search order: Colouring::per_contact)
  Colouring colouring;
  double speculative = 0.0;    // pairs and walls closer than this are contacts (m)
  double rmin = 1.0;           // smallest radius at the last rebuild (m)
  double same_radius = 0.0;    // every body's radius at the last rebuild where all are equal, else 0 (collide)
  Contacts contacts;
  // The next substep's contacts, made while this one's relax runs (World's
  // step: a small world whose passes run on one thread); swapped with
  // `contacts` then. Holds nothing between steps.
  Contacts ahead;
  WallContacts walls;          // discrete: bodies within the speculative distance of a wall
  std::vector<double> px, py;  // Verlet: positions at the start of the substep
  bool edited = true;          // bodies added or removed since the last rebuild (storage indices stale)
  bool shares_passes = false;  // the world has more than one thread: lists of many pairs get slots (Contacts::slot_of)
  // Warm starts restored by restore, by id pair: the next rebuild takes them
  // instead of what the current candidate list carries.
  std::optional<WarmByIds> pending_warm;
  std::vector<Pair> added;              // the pairs repairs added since the build, sorted (repair_pairs)
  std::vector<std::uint32_t> far_bodies;  // scratch: the bodies a repair moves
  std::vector<std::uint8_t> held;       // scratch: per body, carried load at the last rebuild (or empty: none)
  std::vector<double> extent_scratch;   // scratch: the search's extents when skins are per body

  /// Broad phase: rebuilds the candidate list from new anchors, colours it,
  /// and carries the warm starts across (by storage index after a rebuild
  /// caused by motion, by id pair after a restore, none after bodies were
  /// added or removed). `dt`: the step (s), for the skin. With
  /// `may_colour_contacts` (the discrete solver), a list where no body holds
  /// is left uncoloured and each substep colours its contacts.
  void rebuild_pairs(const BodyStore& b, double dt, bool may_colour_contacts);
  /// Instead of a rebuild, where a few bodies have gone half their skin
  /// from their anchors (the rest are within theirs): those bodies get new
  /// anchors and twice their skins, and the list keeps its pairs and
  /// gains their new partners, at the end of the overflow colour (solved in
  /// order). Returns false, having changed nothing, where a rebuild is due:
  /// too many bodies, or the repairs since the build have moved too many or
  /// added too many pairs. A restored world first builds the list it had
  /// (its anchors, then its repairs made again).
  bool repair_pairs(const BodyStore& b, double dt);
  /// Which of `n` bodies carried load in the last substep: a warm pair
  /// (`warm`) or wall contact. Empty when none did.
  void held_bodies(std::size_t n, const WarmTable& warm, std::vector<std::uint8_t>& out) const;
  /// The repair itself: new anchors, new pairs appended to the list.
  void add_partners(const BodyStore& b, const PairAnchors::Repair& moved);

  /// Bodies were moved by hand: the list, the wall touches and restored
  /// anchors no longer hold; warm starts are kept, by id.
  void positions_edited();
  /// Bodies were added or removed: as moved, and storage indices changed, so
  /// warm starts are dropped.
  void bodies_edited();
  /// The box changed: the wall touches no longer hold.
  void bounds_changed() { walls.warm = false; }
  /// The continuous solver moved the bodies: the list and the wall touches no
  /// longer hold (what was restored waits for the next rebuild).
  void moved_elsewhere();

  /// What a saved world needs of this state to continue bit-identically:
  /// warm starts by id pair, the anchors and skin of the current list (none
  /// when the next step rebuilds it anyway), wall touches.
  void save(const BodyStore& b, SolverState& out) const;
  /// A saved world's state, validated by the caller: warm starts by id pair
  /// for the next rebuild, its anchors (if it had them), and wall touches as
  /// (storage index << 2 | wall, value), sorted, for `bodies` bodies in a
  /// box that is `walled` or not. The list is rebuilt at the next substep.
  void restore(WarmByIds warm, std::optional<PairAnchors::Saved> saved,
               std::span<const std::pair<std::uint32_t, double>> wall_entries, std::size_t bodies, bool walled);
};

}  // namespace carom::detail
