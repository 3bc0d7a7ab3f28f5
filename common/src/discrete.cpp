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

#include "parallel.hpp"

namespace carom::detail {
namespace {

// Pairs and walls closer than kSpeculative times the smallest radius are
// contacts (Box2D: 0.02 m, a tenth of the 0.25 m circles carom is measured
// with).
constexpr double kSpeculative = 0.1;
// From this many bodies the broad phase's arrays are freed after each search.
constexpr std::size_t kReleaseScratchAt = std::size_t{1} << 17;

}  // namespace

void DiscreteSolver::rebuild_pairs(const BodyStore& b, double dt, bool may_colour_contacts) {
  const std::size_t n = b.size();
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
  const bool may_share = tbb::this_task_arena::max_concurrency() > 1 && pairs.count >= kSharedPassesFrom;
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
  restore_warm(pairs, warm, contacts);
  edited = false;
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
  if (const PairAnchors::Saved* saved = anchors.restored()) {
    out.anchor_x = saved->x;
    out.anchor_y = saved->y;
    out.skin = saved->skin;
    out.anchor_skin = saved->body_skin;
    out.contact_colours = saved->contact_colours;
  } else if (!edited && anchors.current(b.size())) {
    out.anchor_x.assign(anchors.x().begin(), anchors.x().end());
    out.anchor_y.assign(anchors.y().begin(), anchors.y().end());
    out.skin = anchors.skin();
    out.anchor_skin.assign(anchors.body_skin().begin(), anchors.body_skin().end());
    out.contact_colours = anchors.contact_colours();
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
