#pragma once
/// \file Vec2: the 2D double-precision vector used throughout the API.

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

}  // namespace carom
