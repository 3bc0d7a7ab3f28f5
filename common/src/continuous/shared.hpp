#pragma once
// What the continuous solver's files share besides the class: the block size
// of its parallel loops, "no event", and the memory hint.

#include <cstddef>
#include <limits>

namespace carom::detail {

// Bodies per block of the solver's parallel loops (a function of the body
// count only, so per-block results never depend on the thread count).
inline constexpr std::size_t kBlock = 4096;
// An event time meaning "none this step".
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A prefetch hint that the optimiser keeps: GCC deletes a loop whose only
// effect is __builtin_prefetch.
[[gnu::always_inline]] inline void prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace carom::detail
