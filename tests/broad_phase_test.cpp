// The broad phase against its brute-force reference, and the contact schedule
// against the rules that make it deterministic.

#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "broad_phase.hpp"
#include "contact_order.hpp"
#include "support/scenes.hpp"

namespace carom {
namespace {

using detail::Pair;
using test::Rng;

// Bodies of radius e[i], found with extents e[i] + margin.
struct Cloud {
  std::vector<double> x, y, e;
  double margin = 0.0;
};

// One random world. Kinds: uniform, clustered, coincident centres, a grid
// aligned with the cell edges, and a few giants over a crowd of small bodies;
// radii span 100x (log-uniform), sometimes far more; coordinates are sometimes
// negative and far from the origin.
Cloud random_cloud(Rng& rng, std::size_t n, int kind) {
  Cloud c;
  c.x.resize(n);
  c.y.resize(n);
  c.e.resize(n);
  const double rmin = rng.log_uniform(1e-3, 10.0);
  const double spread = kind == 4 ? 1e5 : 100.0;
  for (std::size_t i = 0; i < n; ++i) c.e[i] = rng.log_uniform(rmin, rmin * spread);
  // Half the worlds search with a margin (the skin), as the world does.
  if (rng.uniform() < 0.5) c.margin = rng.uniform(0.0, 2.0 * rmin);
  // Box sized for a moderate area fraction of the mean body.
  double area = 0.0;
  for (double e : c.e) area += e * e;
  const double side = std::sqrt(std::max(area, rmin * rmin) * rng.uniform(1.0, 20.0));
  const double ox = rng.uniform() < 0.3 ? rng.uniform(-1e7, 1e7) : rng.uniform(-side, 0.0);
  const double oy = rng.uniform() < 0.3 ? rng.uniform(-1e7, 1e7) : rng.uniform(-side, 0.0);
  std::vector<std::pair<double, double>> centres;
  for (int k = 0; k < 5; ++k) centres.emplace_back(rng.uniform(0.0, side), rng.uniform(0.0, side));
  for (std::size_t i = 0; i < n; ++i) {
    double px = rng.uniform(0.0, side), py = rng.uniform(0.0, side);
    switch (kind) {
      case 1: {  // clusters: sum of uniforms around a few centres
        const auto& [cx, cy] = centres[rng.below(centres.size())];
        const double s = 0.05 * side;
        px = cx + s * (rng.uniform() + rng.uniform() - 1.0);
        py = cy + s * (rng.uniform() + rng.uniform() - 1.0);
        break;
      }
      case 2:  // coincident centres: a quarter of the bodies repeat an earlier centre
        if (i > 0 && rng.uniform() < 0.25) {
          const std::size_t j = rng.below(i);
          px = c.x[j] - ox;
          py = c.y[j] - oy;
        }
        break;
      case 3: {  // on a lattice whose pitch is the smallest diameter
        const double pitch = 2.0 * rmin;
        px = std::floor(px / pitch) * pitch;
        py = std::floor(py / pitch) * pitch;
        break;
      }
      default:
        break;
    }
    c.x[i] = ox + px;
    c.y[i] = oy + py;
  }
  if (kind == 2) {
    // Coincident centres must stay exactly coincident after the offset.
    for (std::size_t i = 1; i < n; i += 7) {
      c.x[i] = c.x[i - 1];
      c.y[i] = c.y[i - 1];
    }
  }
  return c;
}

std::vector<Pair> run_find_pairs(const Cloud& c) {
  detail::BroadPhase scratch;
  detail::PairBlocks out;
  detail::find_pairs(c.x, c.y, c.e, c.margin, scratch, out);
  std::vector<Pair> flat = out.flatten();
  EXPECT_EQ(flat.size(), out.count);
  return flat;
}

std::vector<Pair> run_brute_force(const Cloud& c) { return detail::find_pairs_brute_force(c.x, c.y, c.e, c.margin); }

// Scratch and output reused from call to call, as the world reuses them.
struct Reused {
  detail::BroadPhase scratch;
  detail::PairBlocks out;
};

void expect_matches_brute_force(const Cloud& c, const std::string& what, Reused* reused = nullptr) {
  std::vector<Pair> fast = run_find_pairs(c);
  if (reused) {
    detail::find_pairs(c.x, c.y, c.e, c.margin, reused->scratch, reused->out);
    EXPECT_TRUE(reused->out.flatten() == fast) << what << ": reused scratch gives another list";
  }
  for (const Pair p : fast) ASSERT_LT(p.a, p.b) << what;
  std::sort(fast.begin(), fast.end());
  const auto dup = std::adjacent_find(fast.begin(), fast.end());
  EXPECT_TRUE(dup == fast.end()) << what << ": pair (" << dup->a << ", " << dup->b << ") reported twice";
  const std::vector<Pair> ref = run_brute_force(c);
  ASSERT_TRUE(std::is_sorted(ref.begin(), ref.end()));
  if (fast != ref) {
    std::vector<Pair> missing, extra;
    std::set_difference(ref.begin(), ref.end(), fast.begin(), fast.end(), std::back_inserter(missing));
    std::set_difference(fast.begin(), fast.end(), ref.begin(), ref.end(), std::back_inserter(extra));
    ADD_FAILURE() << what << ": " << fast.size() << " pairs, brute force " << ref.size() << "; missing "
                  << missing.size() << ", extra " << extra.size()
                  << (missing.empty() ? "" : testing::PrintToString(std::vector<std::uint32_t>{missing[0].a, missing[0].b}))
                  << (extra.empty() ? "" : testing::PrintToString(std::vector<std::uint32_t>{extra[0].a, extra[0].b}));
  }
}

TEST(BroadPhase, MatchesBruteForceOnRandomWorlds) {
  Rng rng(101);
  Reused reused;
  std::size_t total_pairs = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::size_t n;
    if (trial < 4) {
      n = static_cast<std::size_t>(trial);  // 0, 1, 2, 3 bodies
    } else if (trial % 10 == 0) {
      n = 2000;
    } else {
      n = static_cast<std::size_t>(rng.log_uniform(4.0, 2000.0));
    }
    const int kind = trial % 5;
    const Cloud c = random_cloud(rng, n, kind);
    expect_matches_brute_force(c, "trial " + std::to_string(trial) + " kind " + std::to_string(kind) + " n " +
                                      std::to_string(n),
                               &reused);
    total_pairs += run_brute_force(c).size();
  }
  // The worlds must actually have pairs to find, or the comparison is empty.
  EXPECT_GT(total_pairs, 10000u);
}

// Equal discs a hair closer than the sum of their extents, straddling the
// edges of the smallest cells (side 2e(1 + 1e-9), as find_pairs picks it) near
// the origin and far from it, where x / cell rounds most coarsely; a few ulps
// either way around each edge.
TEST(BroadPhase, MatchesBruteForceAtCellEdgesFarFromOrigin) {
  for (const double e : {0.5, 0.375, 0.3}) {
    for (const double offset : {0.0, 1e3, -1e5, 3.1e6, 1e7, -1e7, 1.5e8, 5e8}) {
      Cloud c;
      const double cell = 2.0 * e * (1.0 + 1e-9);
      const double first = std::floor(offset / cell);
      std::size_t close = 0;
      for (int k = 0; k < 300; ++k) {
        double lo = (first + k) * cell - e;
        for (int j = 0; j < k % 7; ++j) lo = std::nextafter(lo, k % 2 ? 1e300 : -1e300);
        double hi = lo + 2.0 * e;
        while (hi - lo >= 2.0 * e) hi = std::nextafter(hi, -1e300);
        close += hi - lo < 2.0 * e;
        const double lane = offset + 4.0 * e * k;  // pairs far enough apart from each other
        if (k % 2 == 0) {
          c.x.insert(c.x.end(), {lo, hi});
          c.y.insert(c.y.end(), {lane, lane});
        } else {
          c.x.insert(c.x.end(), {lane, lane});
          c.y.insert(c.y.end(), {lo, hi});
        }
        c.e.insert(c.e.end(), {e, e});
      }
      ASSERT_GT(close, 0u);
      expect_matches_brute_force(c, "e " + std::to_string(e) + " offset " + std::to_string(offset));
    }
  }
}

TEST(BroadPhase, OutputIsIndependentOfThreadCount) {
  // Let 8 threads be 8 threads even where there are fewer cores.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 8);
  Rng rng(102);
  for (int kind = 0; kind < 5; ++kind) {
    // Large enough for many fixed blocks, so threads really split the work.
    const Cloud c = random_cloud(rng, 30000, kind);
    std::vector<std::vector<Pair>> outs;
    for (const int threads : {1, 2, 4, 8}) {
      tbb::task_arena arena(threads);
      std::vector<Pair> out;
      arena.execute([&] { out = run_find_pairs(c); });
      outs.push_back(std::move(out));
    }
    ASSERT_FALSE(outs[0].empty()) << "kind " << kind;
    for (std::size_t k = 1; k < outs.size(); ++k) EXPECT_TRUE(outs[k] == outs[0]) << "kind " << kind << " run " << k;
  }
}

// ---- Contact schedule -------------------------------------------------------

struct PairSet {
  std::vector<BodyId> ids;  // sorted, with gaps: storage order is id order
  std::vector<Pair> pairs;
};

// Random pair sets over n bodies: uniform random pairs, a few hubs touching
// many bodies, chains, and the pairs of a dense random cloud.
PairSet random_pairs(Rng& rng, std::uint32_t n, std::size_t count, int kind) {
  PairSet s;
  BodyId id = 0;
  for (std::uint32_t i = 0; i < n; ++i) s.ids.push_back(id += 1 + static_cast<BodyId>(rng.below(5)));
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  auto add = [&](std::uint32_t a, std::uint32_t b) {
    if (a == b) return;
    if (a > b) std::swap(a, b);
    if (seen.emplace(a, b).second) s.pairs.push_back({a, b});
  };
  switch (kind) {
    case 0:
      while (s.pairs.size() < count) add(static_cast<std::uint32_t>(rng.below(n)), static_cast<std::uint32_t>(rng.below(n)));
      break;
    case 1:  // hubs
      while (s.pairs.size() < count) {
        const auto hub = static_cast<std::uint32_t>(rng.below(std::min<std::uint32_t>(n, 8)));
        add(hub, static_cast<std::uint32_t>(rng.below(n)));
        if (rng.uniform() < 0.3) add(static_cast<std::uint32_t>(rng.below(n)), static_cast<std::uint32_t>(rng.below(n)));
      }
      break;
    case 2:  // chains and neighbours in storage order
      for (std::uint32_t i = 0; i + 1 < n && s.pairs.size() < count; ++i) {
        add(i, i + 1);
        if (i + 2 < n) add(i, i + 2);
      }
      break;
    default: {  // pairs of a dense cloud, as the world would see them
      Cloud c;
      const double side = std::sqrt(static_cast<double>(n)) * 0.9;
      for (std::uint32_t i = 0; i < n; ++i) {
        c.x.push_back(rng.uniform(0.0, side));
        c.y.push_back(rng.uniform(0.0, side));
        c.e.push_back(rng.uniform(0.4, 0.7));
      }
      s.pairs = run_find_pairs(c);
      break;
    }
  }
  // Shuffle: the schedule must not depend on the order pairs arrive in.
  for (std::size_t i = s.pairs.size(); i > 1; --i) std::swap(s.pairs[i - 1], s.pairs[rng.below(i)]);
  return s;
}

void check_schedule(const PairSet& s, const detail::ContactSchedule& sch, const std::string& what) {
  const std::size_t c = s.pairs.size();
  ASSERT_EQ(sch.order.size(), c) << what;
  ASSERT_FALSE(sch.round_begin.empty()) << what;
  EXPECT_EQ(sch.round_begin.front(), 0u) << what;
  EXPECT_EQ(sch.round_begin.back(), c) << what;
  for (std::size_t r = 0; r + 1 < sch.round_begin.size(); ++r)
    ASSERT_LT(sch.round_begin[r], sch.round_begin[r + 1]) << what << ": empty round " << r;

  // (a) every pair exactly once.
  std::vector<int> seen(c, 0);
  for (std::uint32_t k : sch.order) {
    ASSERT_LT(k, c) << what;
    ++seen[k];
  }
  for (std::size_t k = 0; k < c; ++k) ASSERT_EQ(seen[k], 1) << what << ": pair " << k;

  // (b) no two pairs of one round share a body.
  std::vector<std::int64_t> last_round(s.ids.size(), -1);
  for (std::size_t r = 0; r < sch.rounds(); ++r) {
    for (std::uint32_t k = sch.round_begin[r]; k < sch.round_begin[r + 1]; ++k) {
      const Pair p = s.pairs[sch.order[k]];
      for (std::uint32_t v : {p.a, p.b}) {
        ASSERT_NE(last_round[v], static_cast<std::int64_t>(r)) << what << ": body " << v << " twice in round " << r;
        last_round[v] = static_cast<std::int64_t>(r);
      }
    }
  }

  // (c) each body meets its contacts in increasing key order.
  std::vector<std::uint64_t> last_key(s.ids.size(), 0);
  std::vector<bool> any(s.ids.size(), false);
  for (std::uint32_t k : sch.order) {
    const Pair p = s.pairs[k];
    const std::uint64_t key = detail::contact_key(s.ids[p.a], s.ids[p.b]);
    for (std::uint32_t v : {p.a, p.b}) {
      if (any[v]) {
        ASSERT_LT(last_key[v], key) << what << ": body " << v << " out of key order";
      }
      any[v] = true;
      last_key[v] = key;
    }
  }
}

TEST(ContactOrder, ScheduleIsAValidKeyOrderedRoundPartition) {
  Rng rng(201);
  detail::ContactSchedule reused;  // kept across calls, as the world keeps it
  for (int trial = 0; trial < 60; ++trial) {
    const int kind = trial % 4;
    const auto n = static_cast<std::uint32_t>(rng.log_uniform(2.0, 20000.0));
    const std::size_t max_pairs = std::min<std::size_t>(std::size_t{n} * (n - 1) / 2, 60000);
    const auto count = static_cast<std::size_t>(rng.uniform() * static_cast<double>(std::min<std::size_t>(max_pairs, 4 * std::size_t{n})));
    const PairSet s = random_pairs(rng, n, count, kind);
    detail::ContactSchedule sch;
    detail::order_contacts(s.ids, s.pairs, sch);
    const std::string what = "trial " + std::to_string(trial) + " kind " + std::to_string(kind) + " n " +
                             std::to_string(n) + " pairs " + std::to_string(s.pairs.size());
    check_schedule(s, sch, what);
    detail::order_contacts(s.ids, s.pairs, reused);
    EXPECT_TRUE(reused.order == sch.order && reused.round_begin == sch.round_begin) << what << ": reused schedule differs";
  }
}

// Islands: connected components of the contact graph, each in key order, the
// walls of their bodies with them, and a depth equal to the rounds the
// schedule takes; checked against a plain graph search.
TEST(ContactOrder, IslandsAreTheComponentsInKeyOrder) {
  Rng rng(203);
  detail::ContactIslands is;  // kept across calls, as the world keeps it
  std::vector<std::uint64_t> slots;  // union-find scratch (the world lends the schedule's reserved)
  for (int trial = 0; trial < 40; ++trial) {
    const int kind = trial % 4;
    const auto n = static_cast<std::uint32_t>(rng.log_uniform(2.0, 5000.0));
    const std::size_t max_pairs = std::min<std::size_t>(std::size_t{n} * (n - 1) / 2, 20000);
    const auto count = static_cast<std::size_t>(rng.uniform() * static_cast<double>(std::min<std::size_t>(max_pairs, 2 * std::size_t{n})));
    const PairSet s = random_pairs(rng, n, count, kind);
    const std::string what = "trial " + std::to_string(trial) + " n " + std::to_string(n);
    // Walls: a few bodies, in per-block lists as integrate_positions writes them.
    std::vector<std::vector<std::uint32_t>> walls(2);
    for (std::uint32_t i = 0; i < n; i += 1 + rng.below(7)) walls[i < n / 2 ? 0 : 1].push_back(i << 4 | 1u);

    // Reference components by breadth-first search.
    std::vector<std::vector<std::uint32_t>> adj(n);
    for (const Pair p : s.pairs) {
      adj[p.a].push_back(p.b);
      adj[p.b].push_back(p.a);
    }
    std::vector<std::int64_t> comp(n, -1);
    for (std::uint32_t v = 0; v < n; ++v) {
      if (comp[v] >= 0 || adj[v].empty()) continue;
      std::vector<std::uint32_t> queue{v};
      comp[v] = v;
      for (std::size_t q = 0; q < queue.size(); ++q)
        for (const std::uint32_t w : adj[queue[q]])
          if (comp[w] < 0) {
            comp[w] = v;
            queue.push_back(w);
          }
    }

    ASSERT_TRUE(detail::build_islands(s.ids, s.pairs, walls, s.pairs.size(), is, slots)) << what;
    EXPECT_TRUE(std::all_of(slots.begin(), slots.end(), [](std::uint64_t v) { return v == ~0ull; }))
        << what << ": scratch not left clean";
    ASSERT_EQ(is.order.size(), s.pairs.size()) << what;
    std::vector<int> seen(s.pairs.size(), 0);
    std::set<std::int64_t> components;
    std::size_t walls_in_islands = 0;
    for (std::size_t k = 0; k < is.size(); ++k) {
      ASSERT_LT(is.begin[k], is.begin[k + 1]) << what << ": empty island";
      const std::int64_t c = comp[s.pairs[is.order[is.begin[k]]].a];
      EXPECT_TRUE(components.insert(c).second) << what << ": component split over islands";
      std::uint64_t last = 0;
      for (std::uint32_t j = is.begin[k]; j < is.begin[k + 1]; ++j) {
        const Pair p = s.pairs[is.order[j]];
        ++seen[is.order[j]];
        EXPECT_EQ(comp[p.a], c) << what << ": island mixes components";
        const std::uint64_t key = detail::contact_key(s.ids[p.a], s.ids[p.b]);
        if (j > is.begin[k]) {
          EXPECT_LT(last, key) << what << ": island not in key order";
        }
        last = key;
      }
      for (std::uint32_t w = is.walls_begin[k]; w < is.walls_begin[k + 1]; ++w) {
        EXPECT_EQ(comp[is.walls[w] >> 4], c) << what << ": wall in the wrong island";
        ++walls_in_islands;
      }
    }
    for (std::size_t k = 0; k < seen.size(); ++k) ASSERT_EQ(seen[k], 1) << what << ": contact " << k;
    std::size_t walls_total = 0, lone_expected = 0;
    for (const auto& block : walls)
      for (const std::uint32_t e : block) {
        ++walls_total;
        lone_expected += comp[e >> 4] < 0;
      }
    EXPECT_EQ(is.lone_walls.size(), lone_expected) << what;
    EXPECT_EQ(walls_in_islands + is.lone_walls.size(), walls_total) << what;
    detail::ContactSchedule sch;
    detail::order_contacts(s.ids, s.pairs, sch);
    EXPECT_EQ(is.depth, sch.rounds()) << what << ": depth differs from the schedule's rounds";
    // An island over the limit is refused (rounds take over).
    if (is.size() > 0) {
      std::size_t largest = 0;
      for (std::size_t k = 0; k < is.size(); ++k) largest = std::max<std::size_t>(largest, is.begin[k + 1] - is.begin[k]);
      EXPECT_FALSE(detail::build_islands(s.ids, s.pairs, walls, largest - 1, is, slots)) << what;
      EXPECT_TRUE(std::all_of(slots.begin(), slots.end(), [](std::uint64_t v) { return v == ~0ull; })) << what;
    }
  }
}

TEST(ContactOrder, EmptyPairSetHasNoRounds) {
  const std::vector<BodyId> ids{1, 2, 3};
  detail::ContactSchedule sch;
  detail::order_contacts(ids, {}, sch);
  EXPECT_TRUE(sch.order.empty());
  EXPECT_EQ(sch.rounds(), 0u);
}

TEST(ContactOrder, ScheduleIsIndependentOfThreadCount) {
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 8);
  Rng rng(202);
  for (int kind = 0; kind < 4; ++kind) {
    // Big enough for many blocks and rounds wider than the parallel-sort cutoff.
    const PairSet s = random_pairs(rng, 60000, 150000, kind);
    std::vector<detail::ContactSchedule> out(2);
    int k = 0;
    for (const int threads : {1, 8}) {
      tbb::task_arena arena(threads);
      arena.execute([&] { detail::order_contacts(s.ids, s.pairs, out[k]); });
      ++k;
    }
    check_schedule(s, out[0], "kind " + std::to_string(kind));
    EXPECT_TRUE(out[0].order == out[1].order) << "kind " << kind;
    EXPECT_TRUE(out[0].round_begin == out[1].round_begin) << "kind " << kind;
  }
}

}  // namespace
}  // namespace carom
