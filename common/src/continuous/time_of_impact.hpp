#pragma once
// Time of impact of two circles in straight-line motion: the maths the
// continuous solver predicts every collision with (pairs: predict.cpp).
// Pure IEEE arithmetic (+, -, *, /, sqrt), so the same inputs give the same
// bits everywhere.

#include <cmath>
#include <limits>

namespace carom::detail {

/// Relative gap under which two circles (or a circle and a wall) count as in
/// contact: a fraction of the sum of the radii.
inline constexpr double kTouchGap = 1e-9;

/// time_of_impact, for callers that need no impact later than `horizon` (s):
/// answering -1 for one that is surely later saves the root. "Surely": the
/// pair is still closing at the horizon and its squared distance there
/// exceeds sigma^2 by more than rounding could explain, so the root is past it.
[[gnu::always_inline]] inline double impact_time(double dpx, double dpy, double dvx, double dvy, double sigma,
                                                double resting,
                                                double horizon = std::numeric_limits<double>::infinity()) {
  const double b = dpx * dvx + dpy * dvy;
  if (!(b < 0.0)) return -1.0;
  const double c = dpx * dpx + dpy * dpy - sigma * sigma;
  if (c <= 2.0 * kTouchGap * sigma * sigma) {
    // In contact: an impact only when approaching faster than `resting`.
    if (resting > 0.0 && -b <= resting * std::sqrt(dpx * dpx + dpy * dpy)) return -1.0;
    if (c <= 0.0) return 0.0;
  }
  const double a = dvx * dvx + dvy * dvy;
  if (a * horizon + b < 0.0) {
    const double f = (a * horizon + 2.0 * b) * horizon + c;
    if (f > 1e-9 * (c + (a * horizon - 2.0 * b) * horizon)) return -1.0;
  }
  const double cross = dpx * dvy - dpy * dvx;
  const double disc = a * sigma * sigma - cross * cross;
  if (disc < 0.0) return -1.0;
  return c / (-b + std::sqrt(disc));
}

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
inline double time_of_impact(double dpx, double dpy, double dvx, double dvy, double sigma, double resting = 0.0) {
  return impact_time(dpx, dpy, dvx, dvy, sigma, resting);
}

}  // namespace carom::detail
