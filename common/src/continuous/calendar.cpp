// The continuous solver's event calendar: size_calendar and fill_calendar
// (the start of the step, from predict_events), schedule and next_event (the
// event loop).
//
// Reads:  each body's predicted event (Cold::ev_*, version).
// Writes: the calendar: buckets of equal length over the step.
//
// The events predicted at the start of the step are sorted into their
// buckets (a counting sort in body order); later ones go on per-bucket lists.
// The bucket being processed is a binary heap of due events ordered by
// (time, key). A body's event lives in the bucket of its time; predicting the
// body again bumps its version, so older entries are skipped when met. The
// order of popping is exactly (time, key): bucket index is monotone in time,
// and entries for a bucket already open go straight into the heap.

#include <algorithm>
#include <bit>

#include "continuous/shared.hpp"
#include "continuous/solver.hpp"

namespace carom::detail {
namespace {

inline bool later(double ta, std::uint64_t ka, double tb, std::uint64_t kb) {
  return ta > tb || (ta == tb && ka > kb);
}

}  // namespace

void ContinuousSolver::size_calendar() {
  const std::size_t n = hot_.size();
  Calendar& cal = calendar_;
  // About two bodies' events per bucket.
  const std::size_t buckets = std::clamp<std::size_t>(std::bit_ceil(std::max<std::size_t>(n, 1)) / 2, 64, 1u << 20);
  cal.head.assign(buckets, kNone);
  cal.scale = dt_ > 0.0 ? static_cast<double>(buckets) / dt_ : 0.0;
  cal.now = 0;
  cal.entries.clear();
  cal.due.clear();
  cal.first.resize(n);
}

void ContinuousSolver::fill_calendar() {
  const std::size_t n = hot_.size();
  Calendar& cal = calendar_;
  const std::size_t buckets = cal.head.size();
  // The start-of-step events by bucket: a counting sort in body order.
  cal.start.assign(buckets + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (cal.first[i] != kNone) ++cal.start[cal.first[i] + 1];
  for (std::size_t k = 0; k < buckets; ++k) cal.start[k + 1] += cal.start[k];
  cal.initial.resize(cal.start[buckets]);
  fill_.assign(cal.start.begin(), cal.start.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (cal.first[i] == kNone) continue;
    const Cold& c = cold_[i];
    cal.initial[fill_[cal.first[i]]++] = {c.ev_t, key_of(static_cast<std::uint32_t>(i), c.ev_partner),
                                          static_cast<std::uint32_t>(i), c.version, c.ev_partner, 0};
  }
  cal.due.assign(cal.initial.begin(), cal.initial.begin() + cal.start[1]);
  std::make_heap(cal.due.begin(), cal.due.end(), [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); });
}

void ContinuousSolver::schedule(std::uint32_t i) {
  const Cold& c = cold_[i];
  if (c.ev_t == kInf) return;
  Calendar& cal = calendar_;
  const Due d{c.ev_t, key_of(i, c.ev_partner), i, c.version, c.ev_partner, 0};
  const std::size_t b = cal.bucket_of(c.ev_t);
  if (b <= cal.now) {
    cal.due.push_back(d);
    std::push_heap(cal.due.begin(), cal.due.end(),
                   [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); });
    return;
  }
  cal.entries.push_back({d, cal.head[b]});
  cal.head[b] = static_cast<std::uint32_t>(cal.entries.size() - 1);
}

bool ContinuousSolver::next_event(Due* out) {
  Calendar& cal = calendar_;
  auto cmp = [](const Due& l, const Due& r) { return later(l.t, l.key, r.t, r.key); };
  for (;;) {
    while (!cal.due.empty()) {
      std::pop_heap(cal.due.begin(), cal.due.end(), cmp);
      const Due d = cal.due.back();
      cal.due.pop_back();
      if (cold_[d.body].version != d.version) continue;  // predicted again since
      *out = d;
      return true;
    }
    // Open the next bucket that has entries.
    if (++cal.now >= cal.head.size()) return false;
    prefetch_ahead(cal.now);
    cal.due.insert(cal.due.end(), cal.initial.begin() + cal.start[cal.now], cal.initial.begin() + cal.start[cal.now + 1]);
    for (std::uint32_t e = cal.head[cal.now]; e != kNone; e = cal.entries[e].next) cal.due.push_back(cal.entries[e].due);
    cal.head[cal.now] = kNone;
    std::make_heap(cal.due.begin(), cal.due.end(), cmp);
  }
}

}  // namespace carom::detail
