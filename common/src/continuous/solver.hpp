#pragma once
// The continuous (a priori) solver: exact times of impact, processed in time
// order within each step. World::step calls its stages in order (see
// world.cpp). One file per concern, each saying what it reads and writes:
//
//   time_of_impact.hpp  the maths of one pair's impact
//   swept_pairs.cpp     stage 2: swept extents, the grid, the loop order; the
//                       queries of a body that leaves its swept disc
//   predict.cpp         stage 3: the grid's pairs with their times of impact,
//                       neighbour lists, each body's earliest event
//   calendar.cpp        the event calendar: time buckets, a heap per bucket
//   prefetch.cpp        the calendar's prefetch pipeline (hints only)
//   events.cpp          stages 4 and 5: the event loop, the collapse guard,
//                       the drift to the end of the step
//
// Within a step every body moves in a straight line between events. Each body
// keeps one predicted event, its earliest: a collision with a neighbour or a
// wall impact, found with the exact time of impact. Events are taken in the
// strict total order (time, lower id, higher id) (storage order is id order;
// walls sort after every body) from a calendar: equal-length time buckets
// over the step, the bucket being processed a small binary heap. Taking an
// event: if the partner's velocity changed since the prediction (per-body
// counters) the event is stale and only its owner is predicted again;
// otherwise the impact is applied and only its two bodies are predicted
// again. A body that a stale event pointed at gets its turn when that event
// comes up. Bodies are advanced lazily (each keeps its own time) and all
// drift to the end of the step at the end.
//
// Determinism: the hash, the pairs and the first predictions run in parallel
// over fixed blocks, each writing only its own slots (and deferring the rest,
// applied after in block order); events are then applied one by one in the
// total order, so the result is the same for any thread count and any
// insertion order. A body's earliest event is a minimum under that order and
// every time of impact is computed from the lower id's side, so nothing
// depends on the order of a neighbour list, on extra neighbours, or on the
// memory layout (bodies are kept in the hash's spatial order): the all-pairs
// reference gives the same bits.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "body_store.hpp"
#include "carom/params.hpp"
#include "carom/spatial_hash.hpp"
#include "carom/stats.hpp"
#include "continuous/time_of_impact.hpp"

namespace carom::detail {

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

/// The event-driven solver's state, reused from step to step. Nothing in it
/// changes a result after the step: everything is rebuilt from the bodies.
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
  // A calendar entry: the body's event as predicted (stale when the body's
  // version has moved on since).
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
  // The grid (swept_pairs.cpp): a spatial hash over the swept extents of all
  // but the fastest or largest bodies, one cell per body; its bodies are loop
  // indices [0, count), bucket h holding [start[h], start[h + 1]).
  struct Grid {
    double e = 0.0;    // the largest extent it holds (m)
    double inv = 1.0;  // 1 / its cell side (1/m)
    TorusHash hash;
    std::size_t count = 0;
    std::vector<std::uint32_t> start;
    std::vector<double> x, y, ext;  // its discs, loop order
  };
  // The calendar (calendar.cpp): buckets of equal time over the step. The
  // events predicted at the start of the step are sorted into buckets
  // (contiguous runs of `initial`, read in order); later ones go on
  // per-bucket lists. The bucket being processed is a binary heap ordered by
  // (time, key).
  struct Calendar {
    double scale = 0.0;  // buckets per second
    std::size_t now = 0;
    std::vector<std::uint32_t> head, start;
    std::vector<std::uint32_t> first;  // each body's start-of-step event: its bucket, or kNone
    std::vector<Due> initial;          // the start-of-step events, by bucket (start)
    std::vector<Entry> entries;
    std::vector<Due> due;              // the current bucket, a binary heap
    // The bucket of an event at time t.
    std::size_t bucket_of(double t) const { return std::min(head.size() - 1, static_cast<std::size_t>(t * scale)); }
  };

  // The event order's tie-break: ids (storage indices) of the pair, lower
  // first, or the owner's id and the wall code. order_ holds the ids
  // compactly: no body's line is read.
  std::uint64_t key_of(std::uint32_t i, std::uint32_t partner) const {
    const std::uint64_t a = order_[i];
    if (partner >= kWallCodeMinX) return a << 32 | partner;  // a wall, or kNone
    const std::uint64_t c = order_[partner];
    return a < c ? (a << 32 | c) : (c << 32 | a);
  }

  // swept_pairs.cpp
  void moved(std::uint32_t i, double now);
  void find_neighbours(std::uint32_t i);
  void add_neighbours(std::uint32_t i, std::uint32_t j);
  // predict.cpp
  double pair_time(std::uint32_t i, std::uint32_t j, double limit) const;
  template <class Partners>
  void predict_with(std::uint32_t i, double now, bool keep, Partners&& partners);
  void offer(std::uint32_t x, double t, std::uint32_t partner);
  bool clear_of_walls(const Cold& c) const;
  template <class Consider>
  void walls(const Hot& bi, double limit, Consider&& consider) const;
  void predict(std::uint32_t i, double now);
  // calendar.cpp
  void size_calendar();
  void fill_calendar();
  void schedule(std::uint32_t i);
  bool next_event(Due* out);
  // prefetch.cpp
  void prefetch_ahead(std::size_t bucket);

  // The step, as find_swept_pairs took it from the parameters and the speeds.
  Bounds box_;
  double restitution_ = 1.0;
  bool all_pairs_ = false;
  double dt_ = 0.0, v_floor_ = 0.0, reach_ = 0.0, slow_speed_ = 0.0, resting_speed_ = 0.0;
  // The bodies, in loop order, and the maps between the two orders.
  std::vector<Hot> hot_;
  std::vector<Cold> cold_;
  std::vector<std::uint8_t> impacts_;  // dissipative slow impacts this step (the collapse guard)
  std::vector<double> ext_;            // swept extents, storage order
  std::vector<std::uint32_t> order_;   // loop index -> storage index
  std::vector<std::uint32_t> loop_of_; // storage index -> loop index
  std::vector<std::uint32_t> cell_;    // storage order: grid bucket, or kNone
  std::vector<std::uint64_t> rest_;    // the bodies the grid does not hold: (bucket, storage index)
  std::vector<std::uint32_t> fill_;    // scratch of the counting sorts
  Grid grid_;
  // Neighbour lists: CSR from the grid, plus pairs found by queries.
  std::vector<std::uint32_t> row_, col_;
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
  Calendar calendar_;
  std::uint64_t candidate_pairs_ = 0;
};

}  // namespace carom::detail
