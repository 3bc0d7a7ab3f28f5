// Narrow phase: collide (pairs) and collide_walls.
//
// Reads:  positions, radii and masses; the coloured candidate pair list; the
//         warm values of the last substep.
// Writes: the contacts of this substep (candidate pairs whose gap is below the
//         speculative distance, with the unit normal from the lower id to the
//         higher id, the gap, the mass shares, the radius-weighted contact
//         point and the warm value), in candidate order, so colour by colour;
//         the wall contacts (bodies within the speculative distance of a wall),
//         per block, in storage order.
//
// Speculative contacts (discrete): a pair a little apart is a contact too, so
// a resting pair stays a contact while the solver holds it at touching
// distance, and an approaching pair is stopped at the surface, not after it
// sinks in (Box2D's speculative margin). Verlet passes 0: only overlapping pairs.
//
// Two passes over the candidate blocks, each block in parallel: the first
// lists which of its candidates are contacts (AVX2 lanes run the distance
// test four at a time, with the same operations as one at a time), the
// second writes their contacts into the slots a prefix sum of the counts gave
// the block. So the contact list is the same for any thread count, and no
// contact is written twice (the lists joined by copying cost a tenth of a
// pile's step on two threads). Coincident centres get the normal (1, 0): a
// fixed choice.

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

// collide's test: the squared distance below the squared reach plus the
// speculative distance.
inline bool is_contact(const double* x, const double* y, const double* r, Pair p, double speculative) {
  const double dx = x[p.b] - x[p.a], dy = y[p.b] - y[p.a];
  const double near = r[p.a] + r[p.b] + speculative;
  return dx * dx + dy * dy < near * near;
}

// Appends to `hits` the offset k of each candidate of the block, in order,
// that is a contact (is_contact): four at a time in lanes, with the same
// operations as one at a time, the last few one at a time.
[[gnu::target("avx2")]] void contact_candidates_avx2(const double* x, const double* y, const double* r,
                                                     const Pair* block, std::size_t size, double speculative,
                                                     std::vector<std::uint32_t>& hits) {
  const __m256d spec = _mm256_set1_pd(speculative);
  std::size_t k = 0;
  for (; k + 4 <= size; k += 4) {
    const Pair* p = block + k;
    const __m256d dx = _mm256_sub_pd(_mm256_setr_pd(x[p[0].b], x[p[1].b], x[p[2].b], x[p[3].b]),
                                     _mm256_setr_pd(x[p[0].a], x[p[1].a], x[p[2].a], x[p[3].a]));
    const __m256d dy = _mm256_sub_pd(_mm256_setr_pd(y[p[0].b], y[p[1].b], y[p[2].b], y[p[3].b]),
                                     _mm256_setr_pd(y[p[0].a], y[p[1].a], y[p[2].a], y[p[3].a]));
    const __m256d near = _mm256_add_pd(_mm256_add_pd(_mm256_setr_pd(r[p[0].a], r[p[1].a], r[p[2].a], r[p[3].a]),
                                                     _mm256_setr_pd(r[p[0].b], r[p[1].b], r[p[2].b], r[p[3].b])),
                                       spec);
    const __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    for (int bits = _mm256_movemask_pd(_mm256_cmp_pd(d2, _mm256_mul_pd(near, near), _CMP_LT_OQ)); bits != 0;
         bits &= bits - 1)
      hits.push_back(static_cast<std::uint32_t>(k) + static_cast<std::uint32_t>(std::countr_zero(static_cast<unsigned>(bits))));
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  for (; k < size; ++k)
    if (is_contact(x, y, r, block[k], speculative)) hits.push_back(static_cast<std::uint32_t>(k));
}

}  // namespace

std::uint64_t collide(const BodyStore& b, const PairBlocks& candidates, const Colouring& colouring,
                      double speculative, bool points, Contacts& out) {
  const std::size_t nb = candidates.blocks.size();
  const double* const x = b.x.data();
  const double* const y = b.y.data();
  const double* const r = b.r.data();
  const double* const m = b.m.data();
  const std::vector<std::uint32_t> first = candidates.starts();  // candidate index of each block's first pair
  if (out.block_contacts.size() < nb) out.block_contacts.resize(nb);
  // The warm values, in candidate order as the contacts are: last substep's
  // contacts' own, where relax left them (set aside here, as the new ones
  // are written), else the list a rebuild or a restore made.
  if (out.warm_in_contacts) {
    std::swap(out.candidate, out.warm_candidate);
    std::swap(out.accum, out.warm_value);
    out.warm_in_contacts = false;
  }
  const std::uint32_t* const warm_cand = out.warm_candidate.data();
  const double* const warm_value = out.warm_value.data();
  const std::size_t warm_size = out.warm_candidate.size();
  // 1. Which candidates are contacts: each block lists its own, in order
  // (four at a time in lanes where the processor has them).
  const bool lanes = simd_in_use();
  for_blocks(nb, 1, [&, x, y, r, speculative](std::size_t blk, std::size_t, std::size_t) {
    const Pair* const block = candidates.blocks[blk].data();
    const std::size_t size = candidates.blocks[blk].size();
    std::vector<std::uint32_t>& hits = out.block_contacts[blk].hits;
    hits.clear();
    if (lanes) return contact_candidates_avx2(x, y, r, block, size, speculative, hits);
    for (std::size_t k = 0; k < size; ++k)
      if (is_contact(x, y, r, block[k], speculative)) hits.push_back(static_cast<std::uint32_t>(k));
  });
  // Each block's first contact: the counts in block order.
  out.block_count.assign(nb + 1, 0);
  for (std::size_t blk = 0; blk < nb; ++blk)
    out.block_count[blk + 1] = out.block_count[blk] + static_cast<std::uint32_t>(out.block_contacts[blk].hits.size());
  const std::size_t total = out.block_count[nb];
  // The solver's slots where its passes are shared (Contacts::slotted; the
  // rebuild made slots only where there is more than one thread).
  out.slotted = out.slot_of.size() == b.size() && total >= kSharedPassesFrom;
  const std::uint32_t* const slot = out.slotted ? out.slot_of.data() : nullptr;
  out.pairs.resize(total);
  out.geometry.resize(total);
  out.accum.resize(total);
  out.candidate.resize(total);
  out.collided.assign(total, 0);
  if (points) out.point.resize(total);
  // 2. Each block writes its contacts into its own slots of the list, warm
  // values merged in.
  for_blocks(nb, 1, [&, x, y, r, m, speculative, points](std::size_t blk, std::size_t, std::size_t) {
    const Pair* const block = candidates.blocks[blk].data();
    Contacts::Block& local = out.block_contacts[blk];
    std::size_t at = out.block_count[blk];
    std::size_t deep = 0;
    const std::uint32_t first_k = first[blk];
    std::size_t w = static_cast<std::size_t>(std::lower_bound(warm_cand, warm_cand + warm_size, first_k) - warm_cand);
    for (const std::uint32_t k : local.hits) {
      const Pair p = block[k];
      const double dx = x[p.b] - x[p.a], dy = y[p.b] - y[p.a];
      const double reach = r[p.a] + r[p.b];
      const double d2 = dx * dx + dy * dy;
      const std::uint32_t cand = first_k + k;
      Contact& c = out.geometry[at];
      double d = 0.0;
      if (d2 > 0.0) {
        d = std::sqrt(d2);
        c.nx = dx / d;
        c.ny = dy / d;
      } else {
        c.nx = 1.0;
        c.ny = 0.0;
      }
      c.sep = d - reach;
      c.reach = reach;
      c.bounce = 0.0;
      c.va = slot ? slot[p.a] : p.a;
      c.vb = slot ? slot[p.b] : p.b;
      deep += c.sep < -kStiffFrom * reach ? 1 : 0;
      // Equal masses share by exactly 1/2 (m / 2m may not round to it).
      const double ma = m[p.a], mb = m[p.b];
      if (ma == mb) {
        c.share_a = c.share_b = 0.5;
      } else {
        const double inv = 1.0 / (ma + mb);
        c.share_a = mb * inv;
        c.share_b = ma * inv;
      }
      while (w < warm_size && warm_cand[w] < cand) ++w;
      out.accum[at] = w < warm_size && warm_cand[w] == cand ? warm_value[w] : 0.0;
      if (points)
        out.point[at] = {(r[p.b] * x[p.a] + r[p.a] * x[p.b]) / reach, (r[p.b] * y[p.a] + r[p.a] * y[p.b]) / reach};
      out.pairs[at] = p;
      out.candidate[at] = cand;
      ++at;
    }
    local.deep = deep;
  });
  out.deep = 0;
  for (std::size_t blk = 0; blk < nb; ++blk) out.deep += out.block_contacts[blk].deep;
  // Used: the next substep starts from what relax leaves (or cold).
  out.warm_candidate.clear();
  out.warm_value.clear();
  const std::uint32_t colours = colouring.colours();
  out.colour_begin.resize(colours + 1);
  for (std::uint32_t c = 0; c <= colours; ++c) out.colour_begin[c] = out.block_count[colouring.block_begin[c]];
  return total;
}

void collide_walls(const BodyStore& b, const Bounds& box, double speculative, WallContacts& walls,
                   std::span<const std::uint32_t> slot_of) {
  const std::uint32_t* const slot = slot_of.size() == b.size() ? slot_of.data() : nullptr;
  std::swap(walls.blocks, walls.last);
  const std::size_t n = b.size();
  const std::size_t nb = box.walled ? block_count(n, kWallBlock) : 0;
  walls.blocks.resize(nb);
  const bool warm = walls.warm && walls.last.size() == nb;
  for_blocks(n, kWallBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    if (!box.walled) return;
    auto& out = walls.blocks[blk];
    out.clear();
    const std::vector<WallContact>* last = warm ? &walls.last[blk] : nullptr;
    std::size_t w = 0;
    const double* const x = b.x.data();
    const double* const y = b.y.data();
    const double* const r = b.r.data();
    for (std::size_t i = i0; i < i1; ++i) {
      const double gaps[4] = {x[i] - r[i] - box.min.x, box.max.x - r[i] - x[i], y[i] - r[i] - box.min.y,
                              box.max.y - r[i] - y[i]};
      // Most bodies are far from every wall: one well-predicted branch.
      if (!(std::min(std::min(gaps[0], gaps[1]), std::min(gaps[2], gaps[3])) < speculative)) continue;
      for (std::uint32_t wall = 0; wall < 4; ++wall) {
        if (!(gaps[wall] < speculative)) continue;
        WallContact c;
        c.entry = static_cast<std::uint32_t>(i) << 2 | wall;
        c.slot = slot ? slot[i] : static_cast<std::uint32_t>(i);
        c.sep = gaps[wall];
        if (last) {
          while (w < last->size() && (*last)[w].entry < c.entry) ++w;
          if (w < last->size() && (*last)[w].entry == c.entry) c.accum = (*last)[w].accum;
        }
        out.push_back(c);
      }
    }
  });
  if (!box.walled) walls.blocks.clear();
}

}  // namespace carom::detail
