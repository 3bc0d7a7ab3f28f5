#pragma once
// Structure-of-arrays body storage, always sorted by id. Keeping storage in id
// order makes storage index order equal id order, so every loop over storage is
// already in the canonical order and results cannot depend on insertion order.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "carom/body.hpp"

namespace carom::detail {

inline constexpr std::size_t kNotFound = static_cast<std::size_t>(-1);

struct BodyStore {
  std::vector<BodyId> id;
  std::vector<double> x, y, vx, vy, r, m;

  std::size_t size() const { return id.size(); }

  /// Storage index of a body, or kNotFound. O(log n).
  std::size_t find(BodyId body) const {
    auto it = std::lower_bound(id.begin(), id.end(), body);
    return (it != id.end() && *it == body) ? static_cast<std::size_t>(it - id.begin()) : kNotFound;
  }

  template <class Fn>
  void for_each_array(Fn&& fn) {
    fn(id);
    fn(x); fn(y); fn(vx); fn(vy); fn(r); fn(m);
  }
};

}  // namespace carom::detail
