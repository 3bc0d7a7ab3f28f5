#pragma once
// Fixed-block parallel loops. Blocks are cut from the problem size alone, never
// from the thread count, so anything written per block (partial sums, pair
// lists) is the same whatever the number of threads.

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>

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

}  // namespace carom::detail
