#pragma once
// Fixed-block parallel loops. Blocks are cut from the problem size alone, never
// from the thread count, so anything written per block (partial sums, pair
// lists) is the same whatever the number of threads.

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

namespace carom::detail {

/// Calls fn(begin, end, block_index) for each fixed block of [0, n).
/// Runs inline when there is a single block: a TBB fork costs microseconds.
template <class Fn>
void for_blocks(std::size_t n, std::size_t block, Fn&& fn) {
  const std::size_t blocks = (n + block - 1) / block;
  if (blocks <= 1) {
    if (n > 0) fn(std::size_t{0}, n, std::size_t{0});
    return;
  }
  tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
    fn(b * block, std::min(n, (b + 1) * block), b);
  });
}

inline std::size_t block_count(std::size_t n, std::size_t block) { return (n + block - 1) / block; }

/// Runs stages 0..stages-1 in order, stage s cut into chunks(s) chunks, each
/// run once as fn(s, j): the chunks of a stage in any order and on any
/// thread, a stage only once every chunk of the one before is done. A stage of
/// one chunk runs on the calling thread. For many short stages (the contact
/// passes, colour by colour): one fork for all of them, the threads waiting
/// for each other by spinning between stages, where a TBB fork and join per
/// stage costs 1.5-4 us, as much as a small stage's work.
/// Participant 0 is the calling thread; the others are tasks that may start
/// late or never. A participant waits only for a stage whose every chunk was
/// claimed by a participant already running, or by participant 0, which is
/// running: so it never deadlocks, and with one thread participant 0 does
/// everything. Each participant claims its own share of a stage's chunks first
/// (the same share every stage, so the same contacts stay on one core), then
/// whatever is left. Call only from inside the arena whose threads should help.
/// `go(s)`, where given, is asked before stage s by every participant once
/// every stage before s is done: false ends the run there (go must answer
/// the same for all, from what the stages before wrote).
struct AlwaysGo {
  bool operator()(std::size_t) const { return true; }
};
template <class Chunks, class Fn, class Go = AlwaysGo>
void run_stages(std::size_t stages, Chunks&& chunks, Fn&& fn, Go&& go = Go{}) {
  constexpr bool kAsks = !std::is_same_v<std::decay_t<Go>, AlwaysGo>;
  std::vector<std::uint32_t> first(stages + 1, 0);
  bool any_split = false;
  for (std::size_t s = 0; s < stages; ++s) {
    const std::size_t c = chunks(s);
    any_split = any_split || c > 1;
    first[s + 1] = first[s] + static_cast<std::uint32_t>(c);
  }
  const int helpers = tbb::this_task_arena::max_concurrency() - 1;
  if (!any_split || helpers < 1) {
    for (std::size_t s = 0; s < stages; ++s) {
      if (kAsks && first[s + 1] != first[s] && !go(s)) return;
      for (std::uint32_t j = 0; j < first[s + 1] - first[s]; ++j) fn(s, std::size_t{j});
    }
    return;
  }
  const auto participants = static_cast<std::size_t>(helpers) + 1;
  const std::unique_ptr<std::atomic<std::uint8_t>[]> claimed(new std::atomic<std::uint8_t>[first[stages]]);
  const std::unique_ptr<std::atomic<std::uint32_t>[]> done(new std::atomic<std::uint32_t>[stages]);
  for (std::uint32_t k = 0; k < first[stages]; ++k) claimed[k].store(0, std::memory_order_relaxed);
  for (std::size_t s = 0; s < stages; ++s) done[s].store(0, std::memory_order_relaxed);
  const auto wait_for = [&](std::size_t s) {
    const std::uint32_t all = first[s + 1] - first[s];
    for (int spins = 0; done[s].load(std::memory_order_acquire) != all; ++spins) {
      if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();  // the thread it waits on may not be running (more threads than cores)
      }
    }
  };
  const auto take = [&](std::size_t s, std::uint32_t j) {
    std::atomic<std::uint8_t>& flag = claimed[first[s] + j];
    if (flag.load(std::memory_order_relaxed) != 0 || flag.exchange(1, std::memory_order_relaxed) != 0) return;
    fn(s, std::size_t{j});
    done[s].fetch_add(1, std::memory_order_release);
  };
  const auto participant = [&](std::size_t t) {
    std::size_t last = stages;  // the last stage with chunks before s: the one to wait for (none yet)
    for (std::size_t s = 0; s < stages; ++s) {
      const std::uint32_t n = first[s + 1] - first[s];
      if (n == 0) continue;
      const std::size_t before = last;
      last = s;
      if constexpr (kAsks) {
        if (before != stages) wait_for(before);
        if (!go(s)) return;
        if (n == 1 && t != 0) continue;  // participant 0's alone
      } else {
        if (n == 1 && t != 0) continue;  // participant 0's alone
        if (before != stages) wait_for(before);
      }
      const auto own0 = static_cast<std::uint32_t>(n * t / participants);
      const auto own1 = static_cast<std::uint32_t>(n * (t + 1) / participants);
      for (std::uint32_t j = own0; j < own1; ++j) take(s, j);
      for (std::uint32_t j = 0; j < n; ++j) take(s, j);
    }
  };
  tbb::task_group helping;
  for (std::size_t t = 1; t < participants; ++t) helping.run([&, t] { participant(t); });
  participant(0);
  helping.wait();
}

}  // namespace carom::detail
