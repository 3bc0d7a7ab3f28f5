#pragma once
/// \file The compact body stream (Snapshot.compact, wishes.compact): positions
/// and velocities quantized, predicted from what the receiver already has, and
/// the integer residuals coded as a run-length varint token stream.
///
/// Both ends keep a Track per channel: each body's quantized value and its
/// last change, in BodyTable order. The encoder and the decoder run the same
/// prediction on the same integers, so the receiver's quantized values equal
/// the sender's bit for bit (docs/protocol.md, "The compact stream", is the
/// normative description; this file is its reference implementation).
///
/// Prediction, per coordinate:
/// - delta frame, positions: the last value plus the last change (constant
///   velocity over the previous two frames);
/// - delta frame, velocities: the last value;
/// - a body not in the baseline (spawned since), and every body of a key
///   frame: the previous body's value in table order (0 for the first), and
///   for positions the change is sent as it is.
///
/// Token stream: unsigned LEB128 varints. A token t with t even is a run of
/// t / 2 + 1 zero residuals; t odd is one nonzero residual v with
/// zigzag(v) = (t - 1) / 2 + 1. Residuals come per body in table order,
/// x then y (a key frame's position stream: x, y, change x, change y).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace carom::proto {

/// Quantized values are clamped to +-kMaxQuantized, so that every residual
/// and token fits in 64 bits.
inline constexpr std::int64_t kMaxQuantized = std::int64_t{1} << 52;

/// round(value / quantum), clamped to +-kMaxQuantized (NaN -> 0). quantum > 0.
std::int64_t quantize(double value, double quantum);

/// One channel's state at one end: values and last changes in table order.
struct Track {
  std::vector<std::uint32_t> id;  ///< sorted, the BodyTable's ids
  std::vector<std::int64_t> x, y;
  std::vector<std::int64_t> dx, dy;  ///< last change (positions only)
  void clear() { id.clear(), x.clear(), y.clear(), dx.clear(), dy.clear(); }
};

/// What a channel predicts with.
enum class Channel {
  kPosition,  ///< second order: value + last change
  kVelocity,  ///< first order: value
};

/// The state both ends hold after a frame of quantized values qx, qy of the
/// bodies `id` (sorted), given the state after the previous frame
/// (`previous`, nullptr when there is none): the values, and for positions
/// each body's change since `previous` (0 for a body not in it). The sender
/// keeps this canonical track per frame; a receiver's decode yields the same.
/// Any thread; no shared state.
void advance_track(Channel channel, const Track* previous, std::span<const std::uint32_t> id,
                   std::span<const std::int64_t> qx, std::span<const std::int64_t> qy, Track* next);

/// Appends to *out the frame that takes a receiver holding `baseline` to
/// `current` (= advance_track(baseline, ...)); baseline nullptr: a key frame,
/// which takes a receiver holding anything (or nothing) to `current`.
void encode_track(Channel channel, const Track* baseline, const Track& current, std::string* out);

/// Decodes `bytes` for the bodies `id` (sorted) against `baseline` (nullptr:
/// a key frame) into *next. Returns an empty string, or what is wrong with the
/// bytes (truncated, too many or too few residuals, a value out of range), in
/// which case *next is unspecified. Never reads outside `bytes`.
std::string decode_track(Channel channel, const Track* baseline, std::span<const std::uint32_t> id,
                         std::string_view bytes, Track* next);

}  // namespace carom::proto
