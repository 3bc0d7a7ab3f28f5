// Narrow phase: collide.
//
// Reads:  positions and radii, the candidate pair list.
// Writes: the contacts of this substep (pairs that overlap or touch now, with
//         the unit normal from the lower id to the higher id and the
//         radius-weighted contact point), in candidate order.
//
// Touching counts (discrete solver): the position correction leaves resting
// pairs at contact distance, give or take rounding, and a resting pair must
// stay a contact or the support of a pile breaks there. So a pair whose gap is
// under a millionth of the sum of the radii is a contact. Verlet needs only
// overlapping pairs (its push-apart does nothing to a touching pair), and
// counting touching ones there doubled the contacts of the lattice and cost
// it 4x in speed. (A wider, speculative
// margin of 1% of the radius was tried: it did not lower the overlap of a
// resting pile, 1.09% against 0.76%, and cost contacts.)
//
// Each group of blocks of the candidate list writes its own list; lists are
// joined in order, so the contact list is the same for any thread count.
// Coincident centres get the normal (1, 0): a fixed choice.

#include <algorithm>
#include <cmath>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {
constexpr double kTouchingSlop = 1.0 + 1e-6;
constexpr std::size_t kGroup = 4;  // candidate blocks per task and contact list
}  // namespace
std::uint64_t collide(const BodyStore& b, const PairBlocks& candidates, Contacts& out, bool touching_counts) {
  const double slop = touching_counts ? kTouchingSlop : 1.0;
  const std::size_t nb = candidates.blocks.size();
  // Candidate blocks are taken kGroup at a time, one contact list per group:
  // few lists, so little memory held in their spare room.
  const std::size_t groups = block_count(nb, kGroup);
  out.block_pairs.resize(std::max(out.block_pairs.size(), groups));
  out.block_geometry.resize(std::max(out.block_geometry.size(), groups));
  const double* x = b.x.data();
  const double* y = b.y.data();
  const double* r = b.r.data();
  std::vector<std::uint32_t> first(nb + 1, 0);  // candidate index of each block's first pair
  for (std::size_t blk = 0; blk < nb; ++blk)
    first[blk + 1] = first[blk] + static_cast<std::uint32_t>(candidates.blocks[blk].size());
  for_blocks(nb, kGroup, [&, x, y, r, slop](std::size_t blk0, std::size_t blk1, std::size_t group) {
    // The inputs are copies here, not captured references: the compiler keeps
    // them in registers across the stores of contacts instead of reloading.
    auto& pairs = out.block_pairs[group];
    auto& geometry = out.block_geometry[group];
    pairs.clear();
    geometry.clear();
    for (std::size_t blk = blk0; blk < blk1; ++blk) {
      const Pair* const block = candidates.blocks[blk].data();
      const std::size_t size = candidates.blocks[blk].size();
      const std::uint32_t first_k = first[blk];
      for (std::size_t k = 0; k < size; ++k) {
        const Pair p = block[k];
        const double dx = x[p.b] - x[p.a];
        const double dy = y[p.b] - y[p.a];
        const double reach = r[p.a] + r[p.b];
        const double near = reach * slop;
        const double d2 = dx * dx + dy * dy;
        if (d2 >= near * near) continue;
        Contact ct;
        ct.state = kTouching;
        ct.px = (r[p.b] * x[p.a] + r[p.a] * x[p.b]) / reach;
        ct.py = (r[p.b] * y[p.a] + r[p.a] * y[p.b]) / reach;
        ct.candidate = first_k + static_cast<std::uint32_t>(k);
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
    }
  });
  out.pairs.clear();
  out.geometry.clear();
  for (std::size_t g = 0; g < groups; ++g) {
    out.pairs.insert(out.pairs.end(), out.block_pairs[g].begin(), out.block_pairs[g].end());
    out.geometry.insert(out.geometry.end(), out.block_geometry[g].begin(), out.block_geometry[g].end());
  }
  return out.pairs.size();
}

}  // namespace carom::detail
