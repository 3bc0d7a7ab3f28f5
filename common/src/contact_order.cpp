// Contact ordering: order_contacts (the minimum-ordering rule).
//
// Reads:  the contacts of one substep (body pairs) and body ids.
// Writes: ContactSchedule, the contacts grouped into rounds.
//
// Order: contact_key(lower id, higher id), a bijective hash of the id pair, so
// it is a strict total order on stable ids that ignores storage, threads and
// insertion order. Hashed keys keep dependency chains short (a few dozen
// rounds for a 80k-body pile); ordering by depth or by id would chain a whole
// column or row of a pile together, one round per body.
//
// Large sets peel rounds in parallel by reservation: every pending contact
// writes its key into both bodies with an atomic min; the contacts that hold
// both minima are ready, form the round, and leave. Readiness depends only on
// the keys, so rounds are the same for any thread count; per-block lists are
// joined in block order. Small remainders (and small sets) are finished
// sequentially in key order: round = 1 + the last round of either body.

#include "contact_order.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "parallel.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 4096;
constexpr std::size_t kSequentialBelow = 2048;
constexpr std::size_t kMaxParallelRounds = 48;
constexpr std::uint64_t kFree = std::numeric_limits<std::uint64_t>::max();

inline std::uint64_t key_of(std::span<const BodyId> ids, Pair p) { return contact_key(ids[p.a], ids[p.b]); }

inline void reserve_min(std::uint64_t& slot, std::uint64_t key) {
  std::atomic_ref<std::uint64_t> ref(slot);
  std::uint64_t cur = ref.load(std::memory_order_relaxed);
  while (key < cur && !ref.compare_exchange_weak(cur, key, std::memory_order_relaxed)) {
  }
}

// Appends rounds for `rest` (any order) one contact at a time in key order.
void finish_sequential(std::span<const BodyId> ids, std::span<const Pair> pairs, std::vector<std::uint32_t>& rest,
                       ContactSchedule& s) {
  if (rest.empty()) return;
  std::sort(rest.begin(), rest.end(),
            [&](std::uint32_t l, std::uint32_t r) { return key_of(ids, pairs[l]) < key_of(ids, pairs[r]); });
  // reserved[] doubles as "last round + 1 of this body" here, reset afterwards.
  std::uint32_t rounds = 0;
  s.tail_round.resize(rest.size());
  for (std::size_t k = 0; k < rest.size(); ++k) {
    const Pair p = pairs[rest[k]];
    std::uint64_t& ra = s.reserved[p.a];
    std::uint64_t& rb = s.reserved[p.b];
    const std::uint64_t la = ra == kFree ? 0 : ra, lb = rb == kFree ? 0 : rb;
    const auto round = static_cast<std::uint32_t>(std::max(la, lb));
    ra = rb = round + 1;
    s.tail_round[k] = round;
    rounds = std::max(rounds, round + 1);
  }
  for (std::size_t k = 0; k < rest.size(); ++k) {
    const Pair p = pairs[rest[k]];
    s.reserved[p.a] = s.reserved[p.b] = kFree;
  }
  // Counting sort by round, stable in key order.
  std::vector<std::uint32_t> start(rounds + 1, 0);
  for (std::uint32_t r : s.tail_round) ++start[r + 1];
  for (std::uint32_t r = 0; r < rounds; ++r) start[r + 1] += start[r];
  const std::size_t base = s.order.size();
  s.order.resize(base + rest.size());
  for (std::uint32_t r = 0; r < rounds; ++r) s.round_begin.push_back(static_cast<std::uint32_t>(base + start[r + 1]));
  for (std::size_t k = 0; k < rest.size(); ++k) s.order[base + start[s.tail_round[k]]++] = rest[k];
  rest.clear();
}

constexpr std::uint64_t kIsland = 1ull << 31;  // a root's slot, once numbered: kIsland | island (ids < 2^28)
constexpr std::uint64_t kNone = kFree;       // the slots are ContactSchedule::reserved's

// Union-find root of body i. A slot holds its parent, itself at a root, or
// kIsland | island number at a root once islands are numbered. Compresses the path.
std::uint32_t find_root(std::vector<std::uint64_t>& parent, std::uint32_t i) {
  std::uint32_t r = i;
  while (!(parent[r] & kIsland) && parent[r] != r) r = static_cast<std::uint32_t>(parent[r]);
  while (i != r) {
    const auto next = static_cast<std::uint32_t>(parent[i]);
    parent[i] = r;
    i = next;
  }
  return r;
}

}  // namespace

bool build_islands(std::span<const BodyId> ids, std::span<const Pair> pairs,
                   std::span<const std::vector<std::uint32_t>> walls, std::size_t max_island, ContactIslands& out,
                   std::vector<std::uint64_t>& parent) {
  const std::size_t c = pairs.size();
  if (parent.size() < ids.size()) parent.resize(ids.size(), kNone);
  // 1. Union by smaller root (sequential: the sets are what they are anyway).
  for (const Pair p : pairs) {
    if (parent[p.a] == kNone) parent[p.a] = p.a;
    if (parent[p.b] == kNone) parent[p.b] = p.b;
    const std::uint32_t ra = find_root(parent, p.a), rb = find_root(parent, p.b);
    if (ra < rb) parent[rb] = ra;
    if (rb < ra) parent[ra] = rb;
  }
  // 2. Number the islands in order of their first contact.
  out.island_of.resize(c);
  std::uint32_t islands = 0;
  for (std::size_t k = 0; k < c; ++k) {
    const std::uint32_t r = find_root(parent, pairs[k].a);
    if (!(parent[r] & kIsland)) parent[r] = kIsland | islands++;
    out.island_of[k] = static_cast<std::uint32_t>(parent[r] & ~kIsland);
  }
  // 3. The walls of island bodies, by island; the rest are lone.
  out.wall_island.clear();
  out.lone_walls.clear();
  for (const auto& block : walls) {
    for (const std::uint32_t entry : block) {
      const std::uint32_t i = entry >> 4;
      if (parent[i] == kNone) {
        out.lone_walls.push_back(entry);
      } else {
        out.wall_island.emplace_back(static_cast<std::uint32_t>(parent[find_root(parent, i)] & ~kIsland), entry);
      }
    }
  }
  for (const Pair p : pairs) parent[p.a] = parent[p.b] = kNone;
  // 4. Counting sorts by island (stable), then each island in key order.
  out.begin.assign(islands + 1, 0);
  for (const std::uint32_t isl : out.island_of) ++out.begin[isl + 1];
  std::size_t largest = 0;
  for (std::uint32_t k = 0; k < islands; ++k) {
    largest = std::max<std::size_t>(largest, out.begin[k + 1]);
    out.begin[k + 1] += out.begin[k];
  }
  if (largest > max_island) return false;
  out.cursor.assign(out.begin.begin(), out.begin.end() - 1);
  out.order.resize(c);
  for (std::size_t k = 0; k < c; ++k) out.order[out.cursor[out.island_of[k]]++] = static_cast<std::uint32_t>(k);
  out.walls_begin.assign(islands + 1, 0);
  for (const auto& w : out.wall_island) ++out.walls_begin[w.first + 1];
  for (std::uint32_t k = 0; k < islands; ++k) out.walls_begin[k + 1] += out.walls_begin[k];
  out.cursor.assign(out.walls_begin.begin(), out.walls_begin.end() - 1);
  out.walls.resize(out.wall_island.size());
  for (const auto& w : out.wall_island) out.walls[out.cursor[w.first]++] = w.second;
  out.key.resize(c);
  for (std::size_t k = 0; k < c; ++k) out.key[k] = key_of(ids, pairs[k]);
  auto by_key = [&](std::uint32_t l, std::uint32_t r) { return out.key[l] < out.key[r]; };
  for (std::uint32_t k = 0; k < islands; ++k) {
    if (out.begin[k + 1] - out.begin[k] > 1)
      std::sort(out.order.begin() + out.begin[k], out.order.begin() + out.begin[k + 1], by_key);
  }
  // 5. Depth: the round each contact would take is 1 + the last round of
  //    either body (slots hold last round + 1 here, reset afterwards).
  out.depth = 0;
  for (const std::uint32_t k : out.order) {
    const Pair p = pairs[k];
    const auto la = static_cast<std::uint32_t>(parent[p.a] == kNone ? 0 : parent[p.a]);
    const auto lb = static_cast<std::uint32_t>(parent[p.b] == kNone ? 0 : parent[p.b]);
    parent[p.a] = parent[p.b] = std::max(la, lb) + 1;
    out.depth = std::max(out.depth, std::max(la, lb) + 1);
  }
  for (const Pair p : pairs) parent[p.a] = parent[p.b] = kNone;
  return true;
}

void order_contacts(std::span<const BodyId> ids, std::span<const Pair> pairs, ContactSchedule& s) {
  const std::size_t c = pairs.size();
  s.order.clear();
  s.round_begin.assign(1, 0);
  if (s.reserved.size() < ids.size()) s.reserved.resize(ids.size(), kFree);
  s.pending.resize(c);
  for (std::uint32_t e = 0; e < c; ++e) s.pending[e] = e;

  while (s.pending.size() >= kSequentialBelow && s.rounds() < kMaxParallelRounds) {
    const std::size_t len = s.pending.size();
    const std::size_t nb = block_count(len, kBlock);
    for_blocks(len, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
      for (std::size_t i = i0; i < i1; ++i) {
        const Pair p = pairs[s.pending[i]];
        const std::uint64_t key = key_of(ids, p);
        reserve_min(s.reserved[p.a], key);
        reserve_min(s.reserved[p.b], key);
      }
    });
    s.ready_blocks.resize(std::max(s.ready_blocks.size(), nb));
    s.rest_blocks.resize(std::max(s.rest_blocks.size(), nb));
    for_blocks(len, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
      auto& ready = s.ready_blocks[blk];
      auto& rest = s.rest_blocks[blk];
      ready.clear();
      rest.clear();
      for (std::size_t i = i0; i < i1; ++i) {
        const std::uint32_t e = s.pending[i];
        const Pair p = pairs[e];
        const std::uint64_t key = key_of(ids, p);
        const bool won = std::atomic_ref<std::uint64_t>(s.reserved[p.a]).load(std::memory_order_relaxed) == key &&
                         std::atomic_ref<std::uint64_t>(s.reserved[p.b]).load(std::memory_order_relaxed) == key;
        (won ? ready : rest).push_back(e);
      }
    });
    for_blocks(len, kBlock, [&](std::size_t i0, std::size_t i1, std::size_t) {
      for (std::size_t i = i0; i < i1; ++i) {
        const Pair p = pairs[s.pending[i]];
        std::atomic_ref<std::uint64_t>(s.reserved[p.a]).store(kFree, std::memory_order_relaxed);
        std::atomic_ref<std::uint64_t>(s.reserved[p.b]).store(kFree, std::memory_order_relaxed);
      }
    });
    s.pending.clear();
    for (std::size_t b = 0; b < nb; ++b) {
      s.order.insert(s.order.end(), s.ready_blocks[b].begin(), s.ready_blocks[b].end());
      s.pending.insert(s.pending.end(), s.rest_blocks[b].begin(), s.rest_blocks[b].end());
    }
    s.round_begin.push_back(static_cast<std::uint32_t>(s.order.size()));
  }
  finish_sequential(ids, pairs, s.pending, s);
}

}  // namespace carom::detail
