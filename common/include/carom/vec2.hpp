#pragma once
/// \file Vec2: the 2D double-precision vector used throughout the API.

#include <cmath>

namespace carom {

/// A 2D vector in world units (metres, metres/second, ... as the context says).
struct Vec2 {
  double x = 0.0;
  double y = 0.0;

  friend constexpr Vec2 operator+(Vec2 a, Vec2 b) { return {a.x + b.x, a.y + b.y}; }
  friend constexpr Vec2 operator-(Vec2 a, Vec2 b) { return {a.x - b.x, a.y - b.y}; }
  friend constexpr Vec2 operator*(double s, Vec2 a) { return {s * a.x, s * a.y}; }
  friend constexpr bool operator==(Vec2 a, Vec2 b) = default;
};

/// Dot product.
constexpr double dot(Vec2 a, Vec2 b) { return a.x * b.x + a.y * b.y; }

/// Both components finite (no NaN, no infinity).
inline bool finite(Vec2 v) { return std::isfinite(v.x) && std::isfinite(v.y); }

/// Both components within +-limit.
inline bool within(Vec2 v, double limit) { return std::abs(v.x) <= limit && std::abs(v.y) <= limit; }

}  // namespace carom
