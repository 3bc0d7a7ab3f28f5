// The discrete and Verlet solvers' state: rebuild_pairs, the effects of an
// edit, save and restore.
//
// Reads:  the bodies (positions, velocities, radii, ids), the anchors.
// Writes: the coloured candidate list, the warm starts carried across a
//         rebuild; a saved world's solver state.
//
// The list (and so its colours and the order contacts are solved in) is a
// function of the anchors and the skin, which a saved world carries; warm
// starts travel by id pair. So a restored world rebuilds the very same list
// and continues bit for bit.

#include "discrete.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "parallel.hpp"

namespace carom::detail {
namespace {

// Pairs and walls closer than kSpeculative times the smallest radius are
// contacts (Box2D: 0.02 m, a tenth of the 0.25 m circles carom is measured
// with).
constexpr double kSpeculative = 0.1;
// From this many bodies the broad phase's arrays are freed after each search.
constexpr std::size_t kReleaseScratchAt = std::size_t{1} << 17;
// A repair moves at most this many bodies plus a share of the world's;
// beyond, the list is rebuilt.
constexpr std::size_t kRepairMost = 64;
// The repairs since a build may move this many bodies and add this many
// pairs (solved in order, on one thread) in all, plus a share of the world.
constexpr std::size_t kRepairedBodies = 256;
constexpr std::size_t kExtraPairs = 2048;

// Appends `extra` (sorted) to the list as one block at its end: the overflow
// colour's (solved in order) where the list is coloured, the one colour's
// where it is not. Candidate indices of the pairs already there stay.
void append_pairs(std::vector<Pair> extra, PairBlocks& pairs, Colouring& colouring) {
  if (extra.empty()) return;
  pairs.extend();
  pairs.count += extra.size();
  pairs.blocks.push_back(std::move(extra));
  const auto count = static_cast<std::uint32_t>(pairs.count);
  const auto blocks = static_cast<std::uint32_t>(pairs.blocks.size());
  if (!colouring.per_contact) {
    // Colours up to the overflow colour, those between empty.
    if (colouring.begin.empty()) colouring.begin.assign(1, 0);
    if (colouring.block_begin.empty()) colouring.block_begin.assign(1, 0);
    colouring.begin.resize(kColours + 1, colouring.begin.back());
    colouring.block_begin.resize(kColours + 1, colouring.block_begin.back());
  }
  colouring.begin.back() = count;
  colouring.block_begin.back() = blocks;
}

}  // namespace

void DiscreteSolver::rebuild_pairs(const BodyStore& b, double dt, bool may_colour_contacts) {
  const std::size_t n = b.size();
  // A restored list's repairs, made again once it is built from its anchors.
  std::vector<PairAnchors::Repair> replay;
  if (const PairAnchors::Saved* saved = anchors.restored(); saved != nullptr && saved->x.size() == n)
    replay = saved->repairs;
  // Storage indices are stale after an edit; warm values are kept only
  // across rebuilds caused by motion (or come from restore).
  const WarmTable warm = pending_warm ? warm_table(b, *pending_warm)
                         : edited     ? WarmTable{}
                                      : warm_table(n, pairs, contacts);
  pending_warm.reset();
  // Bodies that carried load (a warm contact or wall) get skins for their
  // own speed (PairAnchors).
  held_bodies(n, warm, held);
  // Where no body held, the list is left uncoloured and each substep colours
  // its contacts (the 10k gas: its colouring was a tenth of its step). The
  // Verlet solver carries no load, its piles included: its lists are always
  // coloured.
  BodyRange range = anchors.anchor(b, dt, held, may_colour_contacts);
  rmin = n > 0 ? range.rmin : 1.0;
  // Bodies of one radius (a gas, a pile of marbles, the lattice): the
  // narrow phase's test need not load the radii. Radii change only with the
  // bodies, and an edit of those rebuilds the list before the next collide.
  same_radius = n > 0 && range.rmin == range.rmax ? range.rmin : 0.0;
  const bool per_contact = anchors.contact_colours();
  // The last substep's contacts are rewritten by the next collide anyway.
  if (n >= kReleaseScratchAt) contacts.release();
  // Contacts reach the speculative distance, so candidates must too (a pair
  // not in the list is then at least that far apart until the next rebuild,
  // which comes before any body is half its skin from its anchor).
  speculative = kSpeculative * rmin;
  const std::span<const double> extents = anchors.extents(b.r, extent_scratch, range);
  find_pairs(anchors.x(), anchors.y(), extents, anchors.margin(speculative), range, broad, pairs);
  // The solver's slots: the search's order (see Contacts::slot_of). Only
  // where the passes may be shared: more than one thread, and candidates
  // enough for the contacts to reach kSharedPassesFrom (they are a subset).
  // (The world's threads, not this step's: a step may run on one thread,
  // ThreadChoice, and the list outlive it.)
  const bool may_share = shares_passes && pairs.count >= kSharedPassesFrom;
  contacts.slot_of.resize(may_share && broad.sorted.size() == n ? n : 0);
  for (std::size_t s = 0; s < contacts.slot_of.size(); ++s) contacts.slot_of[broad.sorted[s]] = static_cast<std::uint32_t>(s);
  // Large worlds give the search's arrays back before colouring (memory per
  // body at a million bodies, with the contacts' release above: 142 -> 122
  // B); small ones keep them (no allocation per rebuild).
  if (n >= kReleaseScratchAt) {
    broad.release();
    std::vector<double>().swap(extent_scratch);
  }
  if (per_contact) {
    leave_uncoloured(pairs, colouring);
  } else {
    colour_pairs(n, pairs, colouring, n >= kReleaseScratchAt);
  }
  added.clear();
  for (const PairAnchors::Repair& repair : replay) add_partners(b, repair);
  restore_warm(pairs, warm, contacts);
  edited = false;
}

bool DiscreteSolver::repair_pairs(const BodyStore& b, double dt) {
  const std::size_t n = b.size();
  if (n == 0) return false;
  // A restored list (its anchors and repairs) counts as the original's,
  // whatever the bodies' insertion did to `edited`.
  const PairAnchors::Saved* saved = anchors.restored();
  const bool restored = saved != nullptr && saved->x.size() == n;
  if (!restored && (edited || !anchors.current(n))) return false;
  // A gas (a list left uncoloured: no body held) rebuilds: its fastest
  // bodies go their half skins together, all over the box, and a repair of
  // a hundred of them costs what the rebuild does.
  if (restored ? saved->contact_colours : anchors.contact_colours()) return false;
  const std::size_t most = kRepairMost + n / 128;
  const std::size_t far = anchors.beyond(b.x, b.y, most, far_bodies);
  if (far == 0 || far > most) return false;
  // The list the original world had when it was saved.
  if (restored) rebuild_pairs(b, dt, true);
  if (anchors.repaired_bodies() + far > kRepairedBodies + n / 32 || added.size() > kExtraPairs + pairs.count / 32)
    return false;
  // Twice the skin (a body that went half its skin often goes on, faster),
  // at most twice the common one, never smaller than it was. From the
  // positions and anchors alone: a repair gives the same list whether it
  // is made at the end of a substep or at the start of the next.
  const std::span<const float> skins = anchors.body_skin();
  const auto common = static_cast<float>(anchors.skin());
  PairAnchors::Repair repair;
  repair.reserve(far);
  for (const std::uint32_t i : far_bodies) {
    const float now = skins.empty() ? common : skins[i];
    const float skin = std::max(now, std::min(2.0f * now, 2.0f * common));
    repair.push_back({i, static_cast<float>(b.x[i]), static_cast<float>(b.y[i]), skin});
  }
  add_partners(b, repair);
  return true;
}

void DiscreteSolver::add_partners(const BodyStore& b, const PairAnchors::Repair& moved) {
  anchors.move(moved);
  // Their partners at the new anchors, each pair once.
  std::vector<std::uint32_t> bodies(moved.size());
  for (std::size_t k = 0; k < moved.size(); ++k) bodies[k] = moved[k].index;
  std::vector<Pair> found;
  anchors.partners(b.r, speculative, bodies, found);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  // Less those the list has: the build's, and those repairs added.
  std::vector<Pair> extra;
  for (const Pair p : found)
    if (!anchors.built_pair(b.r, speculative, p) && !std::binary_search(added.begin(), added.end(), p))
      extra.push_back(p);
  if (extra.empty()) return;
  const std::size_t had = added.size();
  added.insert(added.end(), extra.begin(), extra.end());
  std::inplace_merge(added.begin(), added.begin() + static_cast<std::ptrdiff_t>(had), added.end());
  append_pairs(std::move(extra), pairs, colouring);
}

void DiscreteSolver::held_bodies(std::size_t n, const WarmTable& warm, std::vector<std::uint8_t>& out) const {
  out.clear();
  if (warm.entry.empty() && !walls.warm) return;
  out.assign(n, 0);
  bool any = false;
  for (std::size_t a = 0; a + 1 < warm.start.size(); ++a) {
    if (warm.start[a] == warm.start[a + 1]) continue;
    out[a] = 1;
    for (std::uint32_t q = warm.start[a]; q < warm.start[a + 1]; ++q) out[warm.entry[q].first] = 1;
    any = true;
  }
  // The wall contacts of the last substep (the narrow phase has not run yet).
  if (walls.warm)
    for (const auto& block : walls.blocks)
      for (const WallContact& w : block)
        if (w.accum > 0.0 && (w.entry >> 2) < n) {
          out[w.entry >> 2] = 1;
          any = true;
        }
  if (!any) out.clear();
}

void DiscreteSolver::positions_edited() {
  anchors.invalidate();
  anchors.forget_restored();
  walls.warm = false;
}

void DiscreteSolver::bodies_edited() {
  positions_edited();
  edited = true;
  pending_warm.reset();
}

void DiscreteSolver::moved_elsewhere() {
  anchors.invalidate();
  walls.warm = false;
}

void DiscreteSolver::save(const BodyStore& b, SolverState& out) const {
  // The warm starts the next rebuild would carry over.
  const WarmByIds warm = pending_warm ? *pending_warm : edited ? WarmByIds{} : save_warm(b, pairs, contacts);
  out.warm.reserve(warm.size());
  for (const auto& [key, value] : warm)
    out.warm.push_back({static_cast<BodyId>(key >> 32), static_cast<BodyId>(key & 0xFFFFFFFFu), value});
  // The anchors the current candidate list was built from (none when the
  // next step rebuilds it anyway, as after a continuous step).
  // Repairs by id (storage order is id order).
  const auto by_id = [&](std::span<const PairAnchors::Repair> repairs) {
    out.repairs.reserve(repairs.size());
    for (const PairAnchors::Repair& repair : repairs) {
      std::vector<MovedAnchor>& moved = out.repairs.emplace_back();
      moved.reserve(repair.size());
      for (const PairAnchors::Moved& m : repair) moved.push_back({b.id[m.index], m.x, m.y, m.skin});
    }
  };
  if (const PairAnchors::Saved* saved = anchors.restored()) {
    out.anchor_x = saved->x;
    out.anchor_y = saved->y;
    out.skin = saved->skin;
    out.anchor_skin = saved->body_skin;
    out.contact_colours = saved->contact_colours;
    by_id(saved->repairs);
  } else if (!edited && anchors.current(b.size())) {
    anchors.built_from(out.anchor_x, out.anchor_y, out.anchor_skin);
    out.skin = anchors.skin();
    out.contact_colours = anchors.contact_colours();
    by_id(anchors.repairs());
  }
  // Wall entries are storage index << 2 | wall, kWallBit* = 1 << wall; in
  // storage (= id) order, walls in order.
  if (walls.warm)
    for (const auto& block : walls.blocks)
      for (const WallContact& w : block)
        if (w.accum > 0.0) out.walls.push_back({b.id[w.entry >> 2], 1u << (w.entry & 3u), w.accum});
}

void DiscreteSolver::restore(WarmByIds warm, std::optional<PairAnchors::Saved> saved,
                             std::span<const std::pair<std::uint32_t, double>> wall_entries, std::size_t bodies,
                             bool walled) {
  pending_warm = std::move(warm);
  if (saved) {
    anchors.restore(std::move(*saved));
  } else {
    anchors.forget_restored();
  }
  contacts.forget_warm();
  anchors.invalidate();
  // The next narrow phase takes these as last substep's wall values.
  walls.blocks.assign(walled ? block_count(bodies, kWallBlock) : 0, {});
  for (const auto& [entry, value] : wall_entries) {
    if (!walled) break;
    WallContact w;
    w.entry = entry;
    w.accum = value;
    walls.blocks[(entry >> 2) / kWallBlock].push_back(w);
  }
  walls.warm = true;
}

}  // namespace carom::detail
