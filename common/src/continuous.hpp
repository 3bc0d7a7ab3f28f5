#pragma once
// The continuous (a priori) solver: exact times of impact, processed in time
// order within each step. World::step calls its stages in order (see
// world.cpp); continuous.cpp says what each reads and writes and why the
// result is the same for any thread count.

#include <cstdint>
#include <vector>

#include "body_store.hpp"
#include "carom/params.hpp"
#include "carom/spatial_hash.hpp"
#include "carom/stats.hpp"

namespace carom::detail {

/// Time of impact of two circles in straight-line motion, from the relative
/// position dp = p_b - p_a, the relative velocity dv = v_b - v_a and the sum
/// of the radii: the smallest s >= 0 with |dp + dv s| = sigma, for an
/// approaching pair (dp . dv < 0) only. A pair that touches or overlaps and
/// approaches gives 0; a pair that never meets (separating, parallel, or
/// missing) gives -1. Stable form: s = c / (-b + sqrt(a sigma^2 - (dp x dv)^2))
/// with b = dp . dv, c = |dp|^2 - sigma^2: no cancellation between -b and the
/// root, and the discriminant written without the b^2 - a c difference.
///
/// A pair within a hair of contact (a gap under kTouchGap sigma) that
/// approaches no faster than `resting` (m/s) is resting, not colliding: -1.
/// (The continuous solver passes a rounding-level speed, so that bodies left
/// in contact with no relative normal velocity are not collided again by
/// rounding; 0 gives the plain geometric answer.)
double time_of_impact(double dpx, double dpy, double dvx, double dvy, double sigma, double resting = 0.0);

/// Relative gap under which two circles (or a circle and a wall) count as in
/// contact: a fraction of the sum of the radii.
inline constexpr double kTouchGap = 1e-9;

/// Wall codes used as the partner of a wall event: above every storage index
/// (at most kMaxBodies), so a wall sorts after every body in the event order.
inline constexpr std::uint32_t kWallCodeMinX = 0xFFFFFFF0u, kWallCodeMaxX = 0xFFFFFFF1u,
                               kWallCodeMinY = 0xFFFFFFF2u, kWallCodeMaxY = 0xFFFFFFF3u;
inline constexpr std::uint32_t kNone = 0xFFFFFFFFu;

/// How the continuous solver finds partners and how long a step may run.
struct ContinuousOptions {
  /// The textbook reference: every body is a candidate partner of every other
  /// (O(N) per prediction, O(N^2) per step). Same results, for tests and
  /// carom-bench --baseline.
  bool all_pairs = false;
  /// Event budget per step: events_per_body x bodies + 4096.
  std::uint32_t events_per_body = 256;
};

/// The event-driven solver's scratch, reused from step to step. Nothing in
/// it changes a result after the step: everything is rebuilt from the bodies.
class ContinuousSolver {
 public:
  /// Stage 2: swept extents r + s dt (s = max(|v|, a floor from the speed
  /// distribution)) around each body's position, a spatial hash over them
  /// (the grid) in parallel, and for the few bodies it does not hold (the
  /// fastest, the largest) their neighbours by query.
  void find_swept_pairs(const BodyStore& b, const Params& p, const ContinuousOptions& o);
  /// Stage 3: the grid's pairs, each once with its time of impact (in
  /// parallel), the neighbour lists, every body's earliest predicted event,
  /// then the calendar.
  void predict_events();
  /// Stage 4: events in (time, lower id, higher id) order until the end of the
  /// step (or the budget). Collisions are appended to `events` (up to `cap`)
  /// when `events` is given.
  void process_events(const ContinuousOptions& o, const BodyStore& b, std::vector<CollisionEvent>* events,
                      std::size_t cap, StepStats& st);
  /// Stage 5: every body drifts to the end of the step; positions and
  /// velocities go back to the body store.
  void finish_step(BodyStore& b) const;

  /// Candidate pairs of the last step: the swept pairs at its start plus the
  /// neighbour pairs its queries found (each listed once).
  std::uint64_t candidate_pairs() const { return candidate_pairs_ + extra_.size() / 2; }

 private:
  // What the event loop reads of every neighbour: one cache line. Bodies are
  // kept in the grid's spatial order ("loop index"), so neighbours are
  // near in memory; `id` is the storage index (id order), the only order any
  // result depends on.
  struct alignas(64) Hot {
    double x, y, vx, vy, t, r;  // position at the body's own time t
    std::uint32_t count;        // velocity changes this step: stale events are recognised by it
    std::uint32_t last;         // partner of its last velocity change (loop index or wall code)
    std::uint32_t last_count;   //   and that partner's count just after it
    std::uint32_t id;           // storage index
  };
  // The rest: the body's own event, swept disc, neighbour list and mass (one
  // line).
  struct alignas(64) Cold {
    double m;
    double cx, cy, ext;  // registered swept disc
    double ev_t;         // its event: time (infinity: none this step)
    std::uint32_t ev_partner, ev_pcount;
    std::uint32_t version;         // predictions made this step: a calendar entry with another is stale
    std::uint32_t extra;           // head of its list of neighbours found by queries
    std::uint32_t row_begin, row_end;  // its neighbours from the grid: col_[row_begin, row_end)
  };
  // The calendar: buckets of equal time over the step. The events predicted
  // at the start of the step are sorted into buckets (contiguous runs, read
  // in order); later ones go on per-bucket lists. The bucket being processed
  // is a binary heap ordered by (time, key). An entry whose version is not
  // the body's is stale.
  struct Due {
    double t;
    std::uint64_t key;
    std::uint32_t body, version;
    std::uint32_t partner, spare;  // the partner: for prefetching only
  };
  struct Entry {
    Due due;
    std::uint32_t next;
  };

  std::uint64_t key_of(std::uint32_t i, std::uint32_t partner) const;
  double pair_time(std::uint32_t i, std::uint32_t j, double limit) const;
  template <class Partners>
  void predict_with(std::uint32_t i, double now, bool keep, Partners&& partners);
  void offer(std::uint32_t x, double t, std::uint32_t partner);
  bool clear_of_walls(const Cold& c) const;
  template <class Consider>
  void walls(const Hot& bi, double limit, Consider&& consider) const;
  void predict(std::uint32_t i, double now);
  void schedule(std::uint32_t i);
  bool next_event(Due* out);
  void prefetch_ahead(std::size_t bucket);
  void moved(std::uint32_t i, double now);
  void find_neighbours(std::uint32_t i);
  void add_neighbours(std::uint32_t i, std::uint32_t j);

  Bounds box_;
  double restitution_ = 1.0;
  bool all_pairs_ = false;
  double dt_ = 0.0, v_floor_ = 0.0, reach_ = 0.0, slow_speed_ = 0.0, resting_speed_ = 0.0;
  std::vector<Hot> hot_;
  std::vector<Cold> cold_;
  std::vector<std::uint8_t> impacts_;  // dissipative slow impacts this step (the collapse guard)
  std::vector<double> ext_;            // swept extents, storage order
  std::vector<std::uint32_t> order_;   // loop index -> storage index
  std::vector<std::uint32_t> loop_of_; // storage index -> loop index
  std::vector<std::uint32_t> cell_;    // storage order: grid bucket, or kNone
  std::vector<std::uint64_t> rest_;    // the bodies the grid does not hold: (bucket, storage index)
  // The grid (a spatial hash over the swept extents of all but the fastest
  // or largest bodies, one cell per body); its bodies are loop indices
  // [0, grid_count_), bucket h holding [grid_start_[h], grid_start_[h + 1]).
  double grid_e_ = 0.0, grid_inv_ = 1.0;
  TorusHash grid_hash_;
  std::size_t grid_count_ = 0;
  std::vector<std::uint32_t> grid_start_;
  std::vector<double> gx_, gy_, ge_;  // the grid's discs, loop order
  // Neighbour lists: CSR from the grid, plus pairs found by queries.
  std::vector<std::uint32_t> row_, col_;
  std::vector<std::uint32_t> fill_;
  struct Deferred {
    std::uint32_t body, partner;
    double t;
  };
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> found_;  // per block: the grid's pairs
  std::vector<std::vector<Deferred>> deferred_;
  std::vector<std::vector<std::uint32_t>> hits_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> extra_;  // (neighbour, next)
  // Queries read the grid and a small hash of the discs placed since (its
  // finest cells the grid's), stamping the bodies they met.
  std::vector<std::uint32_t> stamp_;
  std::uint32_t stamp_now_ = 0;
  DiscHash discs_;
  // The calendar.
  double bucket_scale_ = 0.0;  // buckets per second
  std::size_t bucket_now_ = 0;
  std::vector<std::uint32_t> bucket_head_, bucket_start_;
  std::vector<std::uint32_t> first_bucket_;  // each body's start-of-step event: its bucket, or kNone
  std::vector<Due> initial_;  // the start-of-step events, by bucket (bucket_start_)
  std::vector<Entry> entries_;
  std::vector<Due> due_;  // the current bucket, a binary heap
  std::uint64_t candidate_pairs_ = 0;
};

}  // namespace carom::detail
