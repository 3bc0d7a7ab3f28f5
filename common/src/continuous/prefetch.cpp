// The continuous solver's prefetch pipeline: prefetch_ahead, called by the
// calendar as it opens each bucket.
//
// Reads:  the calendar's entries a few buckets ahead, the bodies and neighbour
//         lists they name.
// Writes: nothing: hints only, no result depends on them.
//
// Memory. Events come in time order, so the bodies they touch are spread
// over the whole body array (13 MB at 100k bodies, far more than the cache
// holds): every body line, neighbour list and neighbour would be a wait on
// memory. Opening a calendar bucket therefore asks, in stages, for what the
// events a few buckets ahead will read, so that an event finds its bodies in
// cache; the start of the step reads and writes its arrays in order, or asks
// a little ahead where it cannot.

#include "continuous/shared.hpp"
#include "continuous/solver.hpp"

namespace carom::detail {
namespace {

// The calendar buckets between the stages of the pipeline (about one event
// per bucket).
constexpr std::size_t kPrefetchLead = 2;

}  // namespace

// Opening bucket `now` asks for what the buckets a little ahead will read, in
// stages, each stage reading only what the previous one fetched: the
// calendar's list node; the owner's and partner's lines; their neighbour
// lists; the neighbours.
void ContinuousSolver::prefetch_ahead(std::size_t now) {
  constexpr std::size_t kLead = kPrefetchLead;
  const Calendar& cal = calendar_;
  const std::size_t nb = cal.head.size();
  auto each = [&](std::size_t bp, auto&& f) {
    if (bp >= nb) return;
    for (std::uint32_t k = cal.start[bp]; k < cal.start[bp + 1]; ++k) f(cal.initial[k]);
    for (std::uint32_t e = cal.head[bp]; e != kNone; e = cal.entries[e].next) f(cal.entries[e].due);
  };
  auto rows = [&](std::uint32_t i, auto&& f) {
    const Cold& c = cold_[i];
    f(c.row_begin, c.row_end);
  };
  // Stage 3: the neighbours of both bodies.
  each(now + kLead, [&](const Due& d) {
    if (cold_[d.body].version != d.version) return;
    rows(d.body, [&](std::uint32_t r0, std::uint32_t r1) {
      for (std::uint32_t k = r0; k < r1; ++k) prefetch(&hot_[col_[k]]);
    });
    if (d.partner < kWallCodeMinX)
      rows(d.partner, [&](std::uint32_t r0, std::uint32_t r1) {
        for (std::uint32_t k = r0; k < r1; ++k) prefetch(&hot_[col_[k]]);
      });
  });
  // Stage 2: their neighbour lists.
  each(now + 2 * kLead, [&](const Due& d) {
    if (cold_[d.body].version != d.version) return;
    rows(d.body, [&](std::uint32_t r0, std::uint32_t r1) {
      if (r0 < r1) {
        prefetch(&col_[r0]);
        prefetch(&col_[r1 - 1]);
      }
    });
    if (d.partner < kWallCodeMinX)
      rows(d.partner, [&](std::uint32_t r0, std::uint32_t r1) {
        if (r0 < r1) {
          prefetch(&col_[r0]);
          prefetch(&col_[r1 - 1]);
        }
      });
  });
  // Stage 1: the two bodies.
  each(now + 3 * kLead, [&](const Due& d) {
    prefetch(&hot_[d.body]);
    prefetch(&cold_[d.body]);
    if (d.partner < kWallCodeMinX) {
      prefetch(&hot_[d.partner]);
      prefetch(&cold_[d.partner]);
    }
  });
  // Stage 0: the head of the bucket's list.
  const std::size_t b0 = now + 4 * kLead;
  if (b0 < nb && cal.head[b0] != kNone) prefetch(&cal.entries[cal.head[b0]]);
}

}  // namespace carom::detail
