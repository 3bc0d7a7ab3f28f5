// The broad phase against its brute-force reference, and the contact schedule
// against the rules that make it deterministic.

#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "broad_phase.hpp"
#include "discrete.hpp"
#include "parallel.hpp"
#include "stages.hpp"
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

// run_stages (the contact passes' one fork for all colours): every chunk
// runs once, no chunk of a stage starts before every chunk of the stage
// before is done, a one-chunk stage runs on the calling thread, and it
// finishes with more threads than cores (a participant only ever waits for
// one that is running).
TEST(RunStages, EveryChunkOnceAndStagesInOrder) {
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 8);
  // Stages of 1 to 9 chunks, some runs of one-chunk stages, some empty.
  std::vector<std::size_t> chunks;
  for (int s = 0; s < 300; ++s) chunks.push_back(s % 7 == 3 ? 0 : s % 5 == 0 ? 1 + s % 9 : (s % 3 == 0 ? 1 : 2 + s % 4));
  std::vector<std::size_t> first(chunks.size() + 1, 0);
  for (std::size_t s = 0; s < chunks.size(); ++s) first[s + 1] = first[s] + chunks[s];
  for (const int threads : {1, 2, 3, 8}) {
    tbb::task_arena arena(threads);
    const std::unique_ptr<std::atomic<int>[]> ran(new std::atomic<int>[first.back()]);
    const std::unique_ptr<std::atomic<std::size_t>[]> done(new std::atomic<std::size_t>[chunks.size()]);
    for (std::size_t k = 0; k < first.back(); ++k) ran[k] = 0;
    for (std::size_t s = 0; s < chunks.size(); ++s) done[s] = 0;
    std::atomic<int> early{0}, elsewhere{0}, unknown{0};
    std::thread::id caller;
    arena.execute([&] {
      caller = std::this_thread::get_id();
      detail::run_stages(
          chunks.size(), [&](std::size_t s) { return chunks[s]; },
          [&](std::size_t s, std::size_t j) {
            if (j >= chunks[s]) ++unknown;
            // Every earlier stage is complete (the last non-empty one suffices).
            for (std::size_t e = s; e-- > 0;)
              if (chunks[e] > 0) {
                if (done[e].load() != chunks[e]) ++early;
                break;
              }
            if (chunks[s] == 1 && std::this_thread::get_id() != caller) ++elsewhere;
            // Some work, so that participants really overlap.
            volatile double x = 0;
            for (int i = 0; i < 200; ++i) x = x + i;
            ++ran[first[s] + j];
            ++done[s];
          });
    });
    const std::string what = std::to_string(threads) + " threads";
    for (std::size_t k = 0; k < first.back(); ++k) ASSERT_EQ(ran[k].load(), 1) << what << ", chunk " << k;
    EXPECT_EQ(early.load(), 0) << what << ": a chunk started before the stage before it was done";
    EXPECT_EQ(elsewhere.load(), 0) << what << ": a one-chunk stage ran off the calling thread";
    EXPECT_EQ(unknown.load(), 0) << what;
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

TEST(BroadPhase, OneThreadSortAndParallelSortGiveTheSameOrder) {
  // Small worlds sort bodies into buckets on one thread, large ones in
  // parallel (then sort each bucket): the same sorted arrays and the same
  // pair list either way, whatever the thread count.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 4);
  Rng rng(103);
  const std::size_t before = detail::set_serial_sort_below(0);
  for (int kind = 0; kind < 5; ++kind) {
    const Cloud c = random_cloud(rng, 20000, kind);
    detail::BroadPhase way[2];
    detail::PairBlocks out[2];
    for (int serial = 0; serial < 2; ++serial) {
      detail::set_serial_sort_below(serial ? std::size_t{1} << 30 : 0);
      tbb::task_arena arena(serial ? 1 : 4);
      arena.execute([&] { detail::find_pairs(c.x, c.y, c.e, c.margin, way[serial], out[serial]); });
    }
    const auto& p = way[0];
    const auto& s = way[1];
    ASSERT_GT(out[0].count, 0u) << "kind " << kind;
    EXPECT_TRUE(p.bucket_start == s.bucket_start) << "kind " << kind;
    EXPECT_TRUE(p.sorted == s.sorted) << "kind " << kind;
    EXPECT_TRUE(p.sx == s.sx && p.sy == s.sy && p.se == s.se) << "kind " << kind;
    EXPECT_TRUE(p.slevel == s.slevel && p.coarse == s.coarse) << "kind " << kind;
    EXPECT_TRUE(out[0].flatten() == out[1].flatten()) << "kind " << kind;
  }
  detail::set_serial_sort_below(before);
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

// The reference colouring: pairs in input order, each taking the smallest
// colour (below 63) that no earlier pair of either body took, else 63.
std::vector<std::uint32_t> reference_colours(const PairSet& s) {
  std::vector<std::set<std::uint32_t>> taken(s.ids.size());
  std::vector<std::uint32_t> out;
  for (const Pair p : s.pairs) {
    std::uint32_t c = 0;
    while (c < detail::kColours - 1 && (taken[p.a].count(c) || taken[p.b].count(c))) ++c;
    if (c < detail::kColours - 1) {
      taken[p.a].insert(c);
      taken[p.b].insert(c);
    }
    out.push_back(c);
  }
  return out;
}

TEST(Colouring, IsTheGreedyColouringInCandidateOrder) {
  Rng rng(101);
  for (int kind = 0; kind < 4; ++kind) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{500}, std::size_t{20000}}) {
      const PairSet s = random_pairs(rng, 3000, count, kind);
      const std::string what = "kind " + std::to_string(kind) + ", " + std::to_string(s.pairs.size()) + " pairs";
      detail::PairBlocks blocks;
      for (std::size_t k = 0; k < s.pairs.size(); k += 700)
        blocks.blocks.emplace_back(s.pairs.begin() + static_cast<std::ptrdiff_t>(k),
                                   s.pairs.begin() + static_cast<std::ptrdiff_t>(std::min(s.pairs.size(), k + 700)));
      blocks.count = s.pairs.size();
      detail::Colouring col;
      detail::colour_pairs(s.ids.size(), blocks, col);
      const std::vector<std::uint32_t> expected = reference_colours(s);
      // Expected: the pairs grouped by colour, input order kept within a colour.
      std::vector<Pair> grouped;
      std::uint32_t colours = 0;
      for (std::uint32_t c : expected) colours = std::max(colours, c + 1);
      std::vector<std::uint32_t> begin(1, 0);
      for (std::uint32_t c = 0; c < colours; ++c) {
        for (std::size_t k = 0; k < s.pairs.size(); ++k)
          if (expected[k] == c) grouped.push_back(s.pairs[k]);
        begin.push_back(static_cast<std::uint32_t>(grouped.size()));
      }
      EXPECT_EQ(blocks.flatten(), grouped) << what;
      EXPECT_EQ(col.begin, begin) << what;
      ASSERT_EQ(col.block_begin.size(), col.begin.size()) << what;
      // Every block holds one colour: block_begin cuts the blocks at colour starts.
      std::size_t at = 0;
      for (std::uint32_t c = 0; c < col.colours(); ++c) {
        std::size_t in_colour = 0;
        for (std::uint32_t blk = col.block_begin[c]; blk < col.block_begin[c + 1]; ++blk) {
          EXPECT_FALSE(blocks.blocks[blk].empty()) << what;
          in_colour += blocks.blocks[blk].size();
        }
        EXPECT_EQ(in_colour, col.begin[c + 1] - col.begin[c]) << what << ", colour " << c;
        at += in_colour;
      }
      EXPECT_EQ(at, s.pairs.size()) << what;
      // No two pairs of one colour but the last share a body.
      for (std::uint32_t c = 0; c + 1 < std::min(col.colours(), detail::kColours); ++c) {
        std::set<std::uint32_t> bodies;
        for (std::uint32_t k = col.begin[c]; k < col.begin[c + 1]; ++k) {
          const Pair p = grouped[k];
          EXPECT_TRUE(bodies.insert(p.a).second && bodies.insert(p.b).second) << what << ", colour " << c;
        }
      }
    }
  }
}

// A hub touching more bodies than there are colours: its pairs past the 63rd
// go to the last colour, which the solver runs in order.
TEST(Colouring, AHubOverflowsIntoTheLastColour) {
  PairSet s;
  for (BodyId id = 1; id <= 200; ++id) s.ids.push_back(id);
  for (std::uint32_t k = 1; k < 100; ++k) s.pairs.push_back({0, k});
  detail::PairBlocks blocks;
  blocks.blocks.push_back(s.pairs);
  blocks.count = s.pairs.size();
  detail::Colouring col;
  detail::colour_pairs(s.ids.size(), blocks, col);
  ASSERT_EQ(col.colours(), detail::kColours);
  for (std::uint32_t c = 0; c + 1 < detail::kColours; ++c) EXPECT_EQ(col.begin[c + 1] - col.begin[c], 1u);
  EXPECT_EQ(col.begin[detail::kColours] - col.begin[detail::kColours - 1], 99u - 63u);
}

// Skins per body (PairAnchors): bodies that carried load get a skin for their
// own speed, the rest the fastest body's. The list must still hold every pair
// that comes within the speculative distance until needs_rebuild says so, and
// say so once any body has moved half its own skin.
TEST(PairAnchors, SkinsPerBodyKeepEveryPairThatComesWithinReach) {
  Rng rng(11);
  detail::BodyStore b;
  const std::size_t n = 1500;
  const double dt = 1.0 / 60.0, side = 40.0;
  std::vector<std::uint8_t> held(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    b.id.push_back(static_cast<BodyId>(i + 1));
    b.x.push_back(rng.uniform(0.0, side));
    b.y.push_back(rng.uniform(0.0, side));
    b.r.push_back(rng.uniform(0.2, 0.4));
    b.m.push_back(1.0);
    // Two thirds resting (slow, held), a third falling fast.
    held[i] = i % 3 != 0;
    const double speed = held[i] ? rng.uniform(0.0, 2.0) : rng.uniform(5.0, 20.0);
    const double angle = rng.uniform(0.0, 6.283185307179586);
    b.vx.push_back(speed * std::cos(angle));
    b.vy.push_back(speed * std::sin(angle));
  }
  detail::PairAnchors anchors;
  anchors.begin_step(n);
  detail::BodyRange range = anchors.anchor(b, dt, held, false);
  const double rmin = range.rmin, speculative = 0.1 * rmin;
  ASSERT_EQ(anchors.body_skin().size(), n) << "held bodies slower than the fastest get their own skins";
  std::size_t smaller = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double s = anchors.body_skin()[i];
    EXPECT_LE(s, static_cast<double>(static_cast<float>(anchors.skin())));
    if (held[i]) {
      EXPECT_GE(s, static_cast<double>(static_cast<float>(rmin)) * (1.0 - 1e-7));
    }
    smaller += s < static_cast<float>(anchors.skin()) ? 1 : 0;
  }
  EXPECT_GT(smaller, n / 2);
  const detail::BodyRange radius_range = range;
  std::vector<double> scratch;
  const std::span<const double> extents = anchors.extents(b.r, scratch, range);
  detail::BroadPhase bp;
  detail::PairBlocks list;
  detail::find_pairs(anchors.x(), anchors.y(), extents, anchors.margin(speculative), range, bp, list);
  std::set<std::pair<std::uint32_t, std::uint32_t>> in_list;
  for (const Pair p : list.flatten()) in_list.insert({p.a, p.b});
  // With one skin for all (the fastest body's) the list is much longer.
  {
    detail::PairBlocks uniform;
    detail::BroadPhase bp2;
    detail::find_pairs(anchors.x(), anchors.y(), b.r, 0.5 * (anchors.skin() + speculative), radius_range, bp2,
                       uniform);
    EXPECT_LT(list.count * 2, uniform.count);
  }

  const auto moved = [&](const detail::BodyStore& now) {
    double m = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double dx = now.x[i] - anchors.x()[i], dy = now.y[i] - anchors.y()[i];
      m = std::max(m, (dx * dx + dy * dy) * anchors.reach_scale()[i]);
    }
    return m;
  };
  // Each body moved as far as its own skin allows without a rebuild, in a
  // random direction: every pair within the speculative distance is listed.
  for (int trial = 0; trial < 20; ++trial) {
    detail::BodyStore now = b;
    for (std::size_t i = 0; i < n; ++i) {
      const double reach = 0.5 * anchors.body_skin()[i] * 0.98 * rng.uniform(0.5, 1.0);
      const double angle = rng.uniform(0.0, 6.283185307179586);
      now.x[i] += reach * std::cos(angle);
      now.y[i] += reach * std::sin(angle);
    }
    ASSERT_FALSE(anchors.needs_rebuild(moved(now))) << "trial " << trial;
    for (const Pair p : detail::find_pairs_brute_force(now.x, now.y, now.r, 0.5 * speculative))
      ASSERT_TRUE(in_list.count({p.a, p.b})) << "trial " << trial << ": pair " << p.a << "-" << p.b
                                             << " within reach is missing";
  }
  // A held body that moves just past half its own skin asks for a rebuild,
  // though that is far below the common skin.
  for (std::size_t i = 1; i < n; i += 3) {
    ASSERT_TRUE(held[i]);
    if (anchors.body_skin()[i] >= static_cast<float>(anchors.skin())) continue;
    detail::BodyStore now = b;
    now.x[i] = anchors.x()[i] + 0.5 * anchors.body_skin()[i] * 1.001;
    now.y[i] = anchors.y()[i];
    EXPECT_TRUE(anchors.needs_rebuild(moved(now))) << "body " << i;
    break;
  }
}

// A repair of the pair list (DiscreteSolver::repair_pairs): the bodies past
// their limits get new anchors and larger skins, and the list gains their new
// partners at the end, in the overflow colour. After each repair the list
// holds every pair the search would find at the anchors (so every pair within
// the speculative distance while bodies stay within their limits), none twice,
// and the colours still share no body but in the overflow colour.
TEST(PairRepair, KeepsEveryPairWithinReachAndNoneTwice) {
  Rng rng(23);
  detail::BodyStore b;
  const std::size_t n = 1200;
  const double dt = 1.0 / 60.0, side = 36.0;
  for (std::size_t i = 0; i < n; ++i) {
    b.id.push_back(static_cast<BodyId>(i + 1));
    b.x.push_back(rng.uniform(0.0, side));
    b.y.push_back(rng.uniform(0.0, side));
    b.r.push_back(rng.uniform(0.2, 0.4));
    b.m.push_back(rng.uniform(0.5, 2.0));
    b.vx.push_back(rng.uniform(-4.0, 4.0));
    b.vy.push_back(rng.uniform(-4.0, 4.0));
  }
  detail::DiscreteSolver d;
  d.anchors.begin_step(n);
  d.rebuild_pairs(b, dt, false);  // coloured (as the Verlet solver's, or a pile's)
  ASSERT_FALSE(d.anchors.contact_colours());
  const auto limit = [&](std::size_t i) {
    const std::span<const float> skins = d.anchors.body_skin();
    return 0.5 * 0.99 * (skins.empty() ? d.anchors.skin() : static_cast<double>(skins[i]));
  };
  const auto moved = [&] {
    double m = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double dx = b.x[i] - d.anchors.x()[i], dy = b.y[i] - d.anchors.y()[i];
      const std::span<const float> scale = d.anchors.reach_scale();
      m = std::max(m, (dx * dx + dy * dy) * (scale.empty() ? 1.0 : static_cast<double>(scale[i])));
    }
    return m;
  };
  std::size_t repairs = 0;
  for (int trial = 0; trial < 40; ++trial) {
    // A few bodies go past their limits; the rest wander within theirs.
    std::set<std::uint32_t> kicked;
    const std::size_t k = 1 + static_cast<std::size_t>(rng.uniform(0.0, 6.0));
    while (kicked.size() < k) kicked.insert(static_cast<std::uint32_t>(rng.uniform(0.0, static_cast<double>(n))));
    for (std::size_t i = 0; i < n; ++i) {
      const double angle = rng.uniform(0.0, 6.283185307179586);
      const double reach = kicked.count(static_cast<std::uint32_t>(i)) != 0 ? limit(i) * rng.uniform(1.05, 1.6)
                                                                            : limit(i) * rng.uniform(0.0, 0.95);
      b.x[i] = d.anchors.x()[i] + reach * std::cos(angle);
      b.y[i] = d.anchors.y()[i] + reach * std::sin(angle);
    }
    ASSERT_TRUE(d.anchors.far(moved())) << "trial " << trial;
    const std::size_t before = d.pairs.count;
    if (!d.repair_pairs(b, dt)) {
      // Past its budget: the caller rebuilds.
      EXPECT_GT(repairs, 10u) << "trial " << trial;
      d.rebuild_pairs(b, dt, false);
      EXPECT_TRUE(d.anchors.repairs().empty());
      continue;
    }
    ++repairs;
    EXPECT_GE(d.pairs.count, before);
    ASSERT_FALSE(d.anchors.far(moved())) << "trial " << trial << ": every body is within its limit after a repair";
    ASSERT_EQ(d.anchors.repairs().back().size(), k) << "trial " << trial;
    for (const auto& m : d.anchors.repairs().back()) {
      EXPECT_TRUE(kicked.count(m.index)) << "trial " << trial;
      EXPECT_EQ(d.anchors.x()[m.index], static_cast<float>(b.x[m.index]));
      EXPECT_GT(m.skin, 0.0f);
    }
    // The list: none twice, every pair the search finds at the anchors, and
    // so every pair within the speculative distance now.
    const std::vector<Pair> list = d.pairs.flatten();
    std::set<std::pair<std::uint32_t, std::uint32_t>> in_list;
    for (const Pair p : list) ASSERT_TRUE(in_list.insert({p.a, p.b}).second) << "trial " << trial << ": pair twice";
    detail::BodyRange range = detail::body_range(d.anchors.x(), d.anchors.y(), b.r);
    std::vector<double> scratch;
    const std::span<const double> extents = d.anchors.extents(b.r, scratch, range);
    std::vector<double> ax(d.anchors.x().begin(), d.anchors.x().end()), ay(d.anchors.y().begin(), d.anchors.y().end());
    for (const Pair p : detail::find_pairs_brute_force(ax, ay, extents, d.anchors.margin(d.speculative)))
      ASSERT_TRUE(in_list.count({p.a, p.b})) << "trial " << trial << ": " << p.a << "-" << p.b << " missing";
    for (const Pair p : detail::find_pairs_brute_force(b.x, b.y, b.r, 0.5 * d.speculative))
      ASSERT_TRUE(in_list.count({p.a, p.b})) << "trial " << trial << ": " << p.a << "-" << p.b << " within reach";
    // Colours: the pairs the repairs added are in the last (overflow) colour,
    // the build's stay where they were.
    const detail::Colouring& col = d.colouring;
    ASSERT_EQ(col.begin.size(), detail::kColours + 1);
    EXPECT_EQ(col.begin.back(), d.pairs.count);
    EXPECT_EQ(col.block_begin.back(), d.pairs.blocks.size());
    for (std::uint32_t c = 0; c + 1 < detail::kColours; ++c) {
      std::set<std::uint32_t> bodies;
      for (std::uint32_t q = col.begin[c]; q < col.begin[c + 1]; ++q)
        ASSERT_TRUE(bodies.insert(list[q].a).second && bodies.insert(list[q].b).second) << "colour " << c;
    }
  }
  EXPECT_GT(repairs, 20u);

  // Too many bodies past their limits: no repair, nothing changed.
  for (std::size_t i = 0; i < n; ++i) b.x[i] = d.anchors.x()[i] + limit(i) * 1.2;
  const std::size_t count = d.pairs.count, made = d.anchors.repairs().size();
  const std::vector<float> before(d.anchors.x().begin(), d.anchors.x().end());
  EXPECT_FALSE(d.repair_pairs(b, dt));
  EXPECT_EQ(d.pairs.count, count);
  EXPECT_EQ(d.anchors.repairs().size(), made);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), d.anchors.x().begin()));
}


// collide's refresh (a settled pile's substeps): where the same list finds
// the same hits in every block and relax left the warm values in the
// contacts, it writes only the normals, gaps, bounces and points; it must
// give what a whole write gives. A row of bodies, mixed masses, candidates
// (i, i + 1) and (i, i + 2), coloured; two sets of contacts stepped through
// the same motions, one allowed to refresh, one not, compared whole after
// each. The motions: every body nudged (same hits: a refresh), then a
// contact opened and a gap closed in one block (as many contacts, other
// hits: no refresh), then a list made again, and a list of no known
// generation (no refresh), in lanes and one at a time.
TEST(Collide, RefreshGivesWhatAWholeWriteGives) {
  constexpr std::size_t n = 64;
  detail::BodyStore b;
  double at = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    b.id.push_back(static_cast<BodyId>(i + 1));
    b.r.push_back(0.5);
    b.m.push_back(i % 5 == 0 ? 2.0 : 1.0);
    b.x.push_back(at);
    b.y.push_back(0.001 * static_cast<double>(i % 3));
    b.vx.push_back(0.0);
    b.vy.push_back(0.0);
    at += 1.0 + (i < n / 2 ? 0.03 : 0.06);  // contacts (gap 0.03) then none (0.06)
  }
  const double speculative = 0.05;
  detail::PairBlocks list;
  std::vector<Pair> pairs;
  for (std::uint32_t i = 0; i + 1 < n; ++i) {
    pairs.push_back({i, i + 1});
    if (i + 2 < n) pairs.push_back({i, i + 2});
  }
  list.blocks.push_back(pairs);
  list.count = pairs.size();
  detail::Colouring col;
  detail::colour_pairs(n, list, col);
  detail::Contacts refreshed, whole;
  const auto same = [&](const char* what) {
    ASSERT_EQ(refreshed.size(), whole.size()) << what;
    for (std::size_t k = 0; k < whole.size(); ++k) {
      const detail::Contact c = refreshed.geometry.value(k), d = whole.geometry.value(k);
      ASSERT_TRUE(refreshed.pairs[k] == whole.pairs[k] && refreshed.candidate[k] == whole.candidate[k] &&
                  refreshed.accum[k] == whole.accum[k] && c.nx == d.nx && c.ny == d.ny && c.sep == d.sep &&
                  c.reach == d.reach && c.share_a == d.share_a && c.share_b == d.share_b && c.bounce == d.bounce &&
                  c.va == d.va && c.vb == d.vb && refreshed.point[k].x == whole.point[k].x &&
                  refreshed.point[k].y == whole.point[k].y)
          << what << ": contact " << k;
    }
    ASSERT_EQ(refreshed.colour_begin, whole.colour_begin) << what;
    ASSERT_EQ(refreshed.deep, whole.deep) << what;
  };
  // As a substep's solve and relax leave them: values carried, impacts'
  // bounces, relax's gaps.
  const auto solved = [](detail::Contacts& cs) {
    for (std::size_t k = 0; k < cs.size(); ++k) {
      cs.accum[k] = 0.25 * static_cast<double>(k % 4);
      cs.geometry[k].bounce = k % 3 == 0 ? 1.5 : 0.0;
      cs.geometry[k].sep -= 0.01;
    }
    cs.warm_in_contacts = true;
  };
  const auto collide_both = [&](bool expect_refresh, const char* what) {
    const std::uint64_t before = detail::contact_refreshes();
    detail::collide(b, list, col, speculative, true, refreshed);
    EXPECT_EQ(detail::contact_refreshes() - before, expect_refresh ? 1u : 0u) << what;
    detail::allow_contact_refresh(false);
    detail::collide(b, list, col, speculative, true, whole);
    detail::allow_contact_refresh(true);
    same(what);
  };
  for (const bool lanes : {true, false}) {
    detail::allow_simd(lanes);
    refreshed = {};
    whole = {};
    collide_both(false, "first write");
    EXPECT_EQ(whole.size(), n / 2) << "the first half's gaps are contacts";
    solved(refreshed);
    solved(whole);
    for (std::size_t i = 0; i < n; ++i) b.y[i] += 0.002 * std::sin(static_cast<double>(i));
    collide_both(true, "nudged: the same hits");
    solved(refreshed);
    solved(whole);
    // Bodies k..j move right: the contact (k - 1, k) opens past the
    // speculative distance and (j, j + 1) closes under it, two pairs of one
    // block of the list (one colour): every block as many contacts as
    // before, one block other hits.
    const auto block_of = [&](Pair p) {
      for (std::size_t blk = 0; blk < list.blocks.size(); ++blk)
        if (std::find(list.blocks[blk].begin(), list.blocks[blk].end(), p) != list.blocks[blk].end()) return blk;
      return list.blocks.size();
    };
    std::uint32_t k = 0, j = 0;
    for (std::uint32_t a = n / 2; a >= 1 && k == 0; --a)
      for (std::uint32_t c = n / 2; c + 1 < n && k == 0; ++c)
        if (block_of({a - 1, a}) == block_of({c, c + 1})) {
          k = a;
          j = c;
        }
    ASSERT_NE(k, 0u) << "no contact and non-contact in one block";
    for (std::uint32_t i = k; i <= j; ++i) b.x[i] += 0.03;
    collide_both(false, "one contact for another");
    EXPECT_EQ(whole.size(), n / 2);
    solved(refreshed);
    solved(whole);
    collide_both(true, "the same hits again");
    solved(refreshed);
    solved(whole);
    detail::colour_pairs(n, list, col);  // the same pairs, a list made again
    collide_both(false, "a list made again");
    // A list whose writer gave it no number is never taken for the same.
    list.generation = 0;
    solved(refreshed);
    solved(whole);
    collide_both(false, "a list of no known generation");
    solved(refreshed);
    solved(whole);
    collide_both(false, "a list of no known generation, again");
    for (std::uint32_t i = k; i <= j; ++i) b.x[i] -= 0.03;
    detail::colour_pairs(n, list, col);
  }
  detail::allow_simd(true);
}

}  // namespace
}  // namespace carom
