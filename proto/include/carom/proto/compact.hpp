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

/// One collision event as the compact stream carries it: the point quantized
/// with the position quantum, the impulse as two bfloat16s.
struct CompactEvent {
  std::uint64_t tick = 0;  ///< the tick it happened in (<= the snapshot's)
  std::uint32_t a = 0, b = 0;
  std::int64_t x = 0, y = 0;        ///< quantize(point, position quantum)
  std::uint16_t ix = 0, iy = 0;     ///< to_bfloat16(impulse x, y)
  bool operator==(const CompactEvent&) const = default;
};

/// The bfloat16 nearest to `value` (the high half of its float32, rounded to
/// nearest even; NaN stays NaN, beyond the range gives infinity).
std::uint16_t to_bfloat16(double value);
/// The value of a bfloat16 (exact in a float).
float from_bfloat16(std::uint16_t bits);

/// Appends the events of a snapshot of `tick` whose decoded positions are
/// `positions` (the snapshot's position track) to *events (tokens) and
/// *impulses (4 bytes each): see docs/protocol.md, "Compact events". Each
/// point is predicted as the midpoint of its two bodies when both are in
/// `positions`, else as the previous event's point. Any thread.
void encode_events(std::span<const CompactEvent> in, std::uint64_t tick, const Track& positions,
                   std::string* events, std::string* impulses);

/// Decodes what encode_events wrote. Returns an empty string or what is
/// wrong with the bytes (truncated, left over, an id, tick or point out of
/// range), in which case *out is unspecified. Never reads outside the bytes.
std::string decode_events(std::string_view events, std::string_view impulses, std::uint64_t tick,
                          const Track& positions, std::vector<CompactEvent>* out);

}  // namespace carom::proto
