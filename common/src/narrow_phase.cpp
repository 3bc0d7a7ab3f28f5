// Narrow phase: collide.
//
// Reads:  positions and radii, the candidate pair list.
// Writes: the contacts of this substep (pairs that overlap now, with the unit
//         normal from the lower id to the higher id), in candidate order.
//
// Each block of the candidate list writes its own list; lists are joined in
// block order, so the contact list is the same for any thread count. Coincident
// centres get the normal (1, 0): a fixed choice.

#include <cmath>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
void collide(const BodyStore& b, const PairBlocks& candidates, Contacts& out) {
  const std::size_t nb = candidates.blocks.size();
  out.block_pairs.resize(std::max(out.block_pairs.size(), nb));
  out.block_geometry.resize(std::max(out.block_geometry.size(), nb));
  const double* x = b.x.data();
  const double* y = b.y.data();
  const double* r = b.r.data();
  for_blocks(nb, 1, [&](std::size_t blk, std::size_t, std::size_t) {
    auto& pairs = out.block_pairs[blk];
    auto& geometry = out.block_geometry[blk];
    pairs.clear();
    geometry.clear();
    for (const Pair p : candidates.blocks[blk]) {
      const double dx = x[p.b] - x[p.a];
      const double dy = y[p.b] - y[p.a];
      const double reach = r[p.a] + r[p.b];
      const double d2 = dx * dx + dy * dy;
      if (d2 >= reach * reach) continue;
      Contact ct;
      ct.state = kTouching;
      if (d2 > 0.0) {
        const double d = std::sqrt(d2);
        ct.nx = dx / d;
        ct.ny = dy / d;
      } else {
        ct.nx = 1.0;
        ct.ny = 0.0;
      }
      pairs.push_back(p);
      geometry.push_back(ct);
    }
  });
  out.pairs.clear();
  out.geometry.clear();
  for (std::size_t blk = 0; blk < nb; ++blk) {
    out.pairs.insert(out.pairs.end(), out.block_pairs[blk].begin(), out.block_pairs[blk].end());
    out.geometry.insert(out.geometry.end(), out.block_geometry[blk].begin(), out.block_geometry[blk].end());
  }
}

}  // namespace carom::detail
