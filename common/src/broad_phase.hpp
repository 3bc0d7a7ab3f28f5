#pragma once
// Broad phase: spatial hash buckets over a multi-level uniform grid
// (find_pairs), and when the discrete solvers' pair list must be rebuilt
// (PairAnchors).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "body_store.hpp"
#include "carom/spatial_hash.hpp"

namespace carom::detail {

/// A candidate pair of storage indices, a < b (so id(a) < id(b)).
struct Pair {
  std::uint32_t a;
  std::uint32_t b;
  friend bool operator==(Pair, Pair) = default;
  friend auto operator<=>(Pair, Pair) = default;
};

/// The pair list, kept as the per-block lists the search wrote (joining them
/// would double the peak memory). The list is the blocks in order.
struct PairBlocks {
  std::vector<std::vector<Pair>> blocks;
  std::size_t count = 0;  // pairs in all blocks
  /// Which list this is: a number no other list of this process had,
  /// given by whatever writes it (renew()); 0: not known (never taken as
  /// the same list by collide).
  std::uint64_t generation = 0;
  /// The list this one extends: a fresh list's own generation, kept by
  /// extend() (a repair appends a block and changes none before it).
  std::uint64_t base = 0;
  void renew();
  void extend();
  /// The whole list in order (tests, tools).
  std::vector<Pair> flatten() const;
  /// Candidate index of each block's first pair, and the count at the end
  /// (blocks.size() + 1 values).
  std::vector<std::uint32_t> starts() const {
    std::vector<std::uint32_t> out(blocks.size() + 1, 0);
    for (std::size_t k = 0; k < blocks.size(); ++k) out[k + 1] = out[k] + static_cast<std::uint32_t>(blocks[k].size());
    return out;
  }
};

/// Scratch buffers reused from call to call (no allocation in steady state).
struct BroadPhase {
  std::vector<std::uint32_t> bucket_start;  // bucket h: sorted positions [bucket_start[h], bucket_start[h + 1])
  std::vector<std::uint32_t> sorted;      // sorted position -> storage index
  std::vector<float> sx, sy;              // sorted positions relative to the bounding box's middle, as float
  std::vector<double> se;                 // sorted extents (empty when all are equal)
  std::vector<std::uint8_t> slevel;       // sorted grid levels (empty with a single level)
  std::vector<std::uint8_t> coarse;       // per bucket: holds a body above the lowest level (empty with one)
  std::vector<std::size_t> block_size;    // pairs each search block found last time (its next reserve)
  std::vector<std::uint32_t> bucket_scratch;  // each body's bucket, where the sort runs on one thread (small worlds)
  /// Gives back the per-body arrays (kept: block_size). A large world calls
  /// this after each search: they would otherwise sit beside the colouring
  /// at the moment memory peaks.
  void release() {
    std::vector<std::uint32_t>().swap(bucket_start);
    std::vector<std::uint32_t>().swap(sorted);
    std::vector<float>().swap(sx);
    std::vector<float>().swap(sy);
    std::vector<double>().swap(se);
    std::vector<std::uint8_t>().swap(slevel);
    std::vector<std::uint8_t>().swap(coarse);
    std::vector<std::uint32_t>().swap(bucket_scratch);
  }
};

/// Exact minima and maxima over the bodies: radius and bounding box.
struct BodyRange {
  double rmin = std::numeric_limits<double>::infinity(), rmax = 0.0;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -std::numeric_limits<double>::infinity();
  double ymin = std::numeric_limits<double>::infinity(), ymax = -std::numeric_limits<double>::infinity();
  void add(double x, double y, double r) {
    rmin = std::min(rmin, r);
    rmax = std::max(rmax, r);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
  }
  void merge(const BodyRange& o) {
    rmin = std::min(rmin, o.rmin);
    rmax = std::max(rmax, o.rmax);
    xmin = std::min(xmin, o.xmin);
    xmax = std::max(xmax, o.xmax);
    ymin = std::min(ymin, o.ymin);
    ymax = std::max(ymax, o.ymax);
  }
};

/// The range of the bodies, one parallel pass.
BodyRange body_range(std::span<const double> x, std::span<const double> y, std::span<const double> radius);
BodyRange body_range(std::span<const float> x, std::span<const float> y, std::span<const double> radius);

/// Worlds of fewer bodies than this sort them into the grid's buckets on one
/// thread (by default 2^17); tests set it to compare the two ways, which give
/// the same order. Returns the previous value.
std::size_t set_serial_sort_below(std::size_t bodies);

/// All pairs i < j whose extents r_i + margin and r_j + margin overlap
/// (discs_overlap), each exactly once, in an order that depends only on the
/// inputs (never on the thread count). Call from inside the World's arena.
void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, BroadPhase& scratch, PairBlocks& out);
/// The same with the bodies' range already known (the world measures it in
/// a pass it makes anyway): saves a pass over the bodies.
void find_pairs(std::span<const double> x, std::span<const double> y, std::span<const double> radius,
                double margin, const BodyRange& range, BroadPhase& scratch, PairBlocks& out);
/// The same over positions rounded to float (the world's anchors, which a
/// saved world carries, so a restored world builds the very same list).
void find_pairs(std::span<const float> x, std::span<const float> y, std::span<const double> radius,
                double margin, const BodyRange& range, BroadPhase& scratch, PairBlocks& out);

/// The O(n^2) reference: same predicate, pairs in (a, b) order. For tests.
std::vector<Pair> find_pairs_brute_force(std::span<const double> x, std::span<const double> y,
                                         std::span<const double> radius, double margin);


/// The pair list remembers where each body was when it was built rounded to
/// float (8 bytes a body, not 16: they matter at a million bodies), off by
/// at most `error` per coordinate. Only an upper bound of the distance
/// travelled since is needed: from d2, the largest squared distance to the
/// rounded positions, |a| + e and |b| + e give at most (sqrt(d2) + sqrt(2) e)^2.
inline double moved_at_most(double d2, double error) {
  const double d = std::sqrt(d2) + 1.4142135623730951 * error;
  return d * d * (1.0 + 1e-15);
}

/// When the discrete solvers' candidate pair list must be rebuilt (the
/// Verlet-list rule of molecular dynamics). The list is built from the
/// anchors, each body's position rounded to float, with each body's extent
/// grown by half its skin: it holds every pair that can come within the
/// caller's reach until some body has moved half its skin from its anchor.
///
/// The skin is room for the fastest body to travel about 1.5 steps. In a pile
/// that bodies are still landing on, that fastest body is a falling one, and
/// a skin of its size gives every resting body several rings of candidates
/// (three times the pairs, and five times the colours, of the settled pile).
/// So a body that carried load at the rebuild (a contact or a wall holding
/// it, so it sits among neighbours) gets a skin for its own speed instead, at
/// least the smallest radius and at most the common one: if it is knocked
/// loose and moves half of it, the list is rebuilt. When a quarter of the
/// bodies or more are held, the common skin is room for 3 steps of the
/// fastest instead of 1.5: the movers alone set off each rebuild, which costs
/// a pass over every body.
///
/// A saved world carries anchors and skins, so a restored world rebuilds the
/// very same list. Simulation thread only.
class PairAnchors {
 public:
  /// A body a repair gave a new anchor (DiscreteSolver::repair_pairs): the
  /// list kept every pair it had and gained the body's new partners.
  struct Moved {
    std::uint32_t index = 0;  ///< storage index
    float x = 0.0f, y = 0.0f;  ///< its new anchor
    float skin = 0.0f;  ///< its skin from then on (m); 0 where every body has the common skin
    friend bool operator==(const Moved&, const Moved&) = default;
  };
  /// The bodies of one repair, in storage order.
  using Repair = std::vector<Moved>;

  /// Anchors and skins as a saved world carries them.
  struct Saved {
    std::vector<float> x, y;  ///< where the list was built (before any repair)
    double skin = 0.0;  ///< m: every body's, unless body_skin is given
    std::vector<float> body_skin;  ///< m, per body, each in (0, skin]; or empty (as built)
    bool contact_colours = false;  ///< the list is left uncoloured (see contact_colours())
    std::vector<Repair> repairs;   ///< made since the build, in order
  };

  /// The anchors, storage order (m).
  std::span<const float> x() const { return x_; }
  std::span<const float> y() const { return y_; }
  /// The common skin the list was built with (m).
  double skin() const { return skin_; }
  /// Each body's skin (m) when they differ; empty when every body has skin().
  std::span<const float> body_skin() const { return body_skin_; }
  /// Whether the list built from these anchors is left uncoloured, each
  /// substep colouring its own contacts (Colouring::per_contact): decided
  /// by anchor() (no body held), or restored with the anchors.
  bool contact_colours() const { return contact_colours_; }
  /// The list was built from these anchors for `n` bodies and nothing has
  /// marked it stale since.
  bool current(std::size_t n) const { return !stale_ && x_.size() == n; }

  /// The list no longer matches the bodies (moved by hand or by another
  /// solver, added or removed, a new solver): the next substep rebuilds it.
  void invalidate() { stale_ = true; }
  /// A saved world's anchors and skins, for the next rebuild.
  void restore(Saved saved) { restored_ = std::move(saved); }
  /// Drops restored anchors (the bodies were moved, added or removed since).
  void forget_restored() { restored_.reset(); }
  /// Restored anchors the list has not been rebuilt from yet, or null.
  const Saved* restored() const { return restored_ ? &*restored_ : nullptr; }

  /// Before a step's first substep, for `n` bodies: a restored world's
  /// anchors and skins go in before the first substep measures how far bodies
  /// have moved from them, so it decides to rebuild from the current
  /// positions exactly when the original world would have. A new body count
  /// makes the list stale.
  void begin_step(std::size_t n);
  /// What the integrate stage multiplies each body's squared distance from
  /// its anchor by before taking the largest (empty: by 1), for needs_rebuild.
  std::span<const float> reach_scale() const { return scale_; }
  /// Whether the list must be rebuilt before this substep's narrow phase,
  /// given `moved`, the largest (scaled, see reach_scale) squared distance of
  /// any body from its anchor: stale, or some body near half its skin (a
  /// little before the bound, so rounding never matters). A restored world
  /// whose bodies have moved that far rebuilds from where they are, as the
  /// original did; else from its anchors.
  bool needs_rebuild(double moved);
  /// The first half of a rebuild: the anchors (the current positions rounded
  /// to float, or the restored ones) and the skins (the common one: room for
  /// the fastest body to travel about 1.5 steps of `dt`, 3 when a quarter of
  /// the bodies are held, at least 5% of the smallest radius, at most 4 mean
  /// radii; a body `held` (one per body, or empty: none) gets one for its own
  /// speed, see the class), in parallel passes. Returns the range find_pairs needs (radii, bounding box of the
  /// anchors). The list is current after the caller's find_pairs over x(),
  /// y() with extents() and margin(). With `may_colour_contacts` (the
  /// discrete solver), a list where no body is held is left uncoloured
  /// (contact_colours()).
  BodyRange anchor(const BodyStore& b, double dt, std::span<const std::uint8_t> held, bool may_colour_contacts);
  /// The extents to search with: the radii when every body has the common
  /// skin, else radius + (own skin - least skin) / 2 in `scratch`; `range`
  /// (anchor's) gets the extents' least and largest.
  std::span<const double> extents(std::span<const double> radius, std::vector<double>& scratch,
                                  BodyRange& range) const;
  /// What every extent is grown by on top, for a speculative distance
  /// `speculative`: half the least skin and half that distance.
  double margin(double speculative) const { return 0.5 * (least_skin() + speculative); }

  /// Whether `moved` (as for needs_rebuild) puts some body near half its skin
  /// from its anchor. No side effect.
  bool far(double moved) const;
  /// The bodies that far from their anchors (needs_rebuild's test, body by
  /// body), in storage order; stops once `most` + 1 are listed. None is
  /// listed, and `most` + 1 is returned, when some body's limit is below the
  /// rounding bound (a rebuild every substep). Returns how many were listed.
  std::size_t beyond(std::span<const double> x, std::span<const double> y, std::size_t most,
                     std::vector<std::uint32_t>& out) const;
  /// Gives the bodies of a repair their new anchors and skins (each at least
  /// its old one), and records it.
  void move(const Repair& bodies);
  /// The repairs made since the list was built, in order.
  std::span<const Repair> repairs() const { return repairs_; }
  /// How many bodies those repairs moved, all together.
  std::size_t repaired_bodies() const { return repaired_bodies_; }
  /// The anchors and skins the list was built from (the repairs undone).
  void built_from(std::vector<float>& x, std::vector<float>& y, std::vector<float>& skin) const;
  /// Appends to `out` the pair of each body i of `moved` with every other
  /// body j whose extent, grown as the search grows it, overlaps i's at the
  /// anchors: the search's predicate, as (min, max) storage indices (a pair
  /// may be listed twice). The first repair after a build passes over every
  /// body; from the second on, each moved body looks at the bodies near it
  /// in a grid of the anchors (made then) and at the bodies repairs have
  /// moved since that grid was made.
  void partners(std::span<const double> radius, double speculative, std::span<const std::uint32_t> moved,
                std::vector<Pair>& out);
  /// Whether the build found pair p: the search's predicate at the anchors
  /// and skins of the build.
  bool built_pair(std::span<const double> radius, double speculative, Pair p) const;

 private:
  double least_skin() const { return body_skin_.empty() ? skin_ : least_body_skin_; }
  // From body_skin_ and error_: scale_, always_, and least_body_skin_
  // unless `keep_least` (after a repair: the build's stays).
  void per_body_limits(bool keep_least = false);
  // 1 / (the distance a body of skin `skin` may move)^2 (0: below the rounding bound).
  float limit_scale(float skin) const;
  // Skins per body where there is one skin for all (the common one).
  void skins_per_body();
  // Gives body m.index its new anchor and skin, and grows the rounding bound.
  void place(const Moved& m);

  std::vector<float> x_, y_;
  double skin_ = 0.0;
  std::vector<float> body_skin_;
  bool contact_colours_ = false;
  double least_body_skin_ = 0.0;
  std::vector<float> scale_;  // 1 / (the distance body i may move)^2, with the rounding bound taken off
  bool always_ = false;       // some body's limit is below the rounding bound: rebuild every substep
  double error_ = 0.0;  // bound on |anchor - exact position| for every coordinate
  bool stale_ = true;
  std::optional<Saved> restored_;
  std::vector<Repair> repairs_;  // since the build, in order
  std::size_t repaired_bodies_ = 0;
  bool built_skins_ = false;  // the build gave skins per body (a repair may give them to a list without)
  std::unordered_map<std::uint32_t, Moved> built_;  // repaired bodies: anchor and skin at the build
  double rmax_ = 0.0;       // largest radius at the build
  float max_skin_ = 0.0f;   // no body's skin is larger
  // The anchors by cell (counting sort), for partners(): every body at its
  // anchor when the grid was made; those a repair has moved since are
  // `displaced` (their entries are stale and skipped). A function of the
  // anchors: never saved.
  struct AnchorGrid {
    bool valid = false;
    double x0 = 0.0, y0 = 0.0, inv = 0.0;
    std::int64_t w = 0, h = 0;
    std::vector<std::uint32_t> start;  // w h + 1
    std::vector<std::uint32_t> body;   // by cell
    std::vector<std::uint8_t> displaced;
    std::vector<std::uint32_t> displaced_list;
    std::int64_t cx(double x) const;
    std::int64_t cy(double y) const;
  };
  AnchorGrid grid_;
  void grid_anchors(double cell);
};

}  // namespace carom::detail
