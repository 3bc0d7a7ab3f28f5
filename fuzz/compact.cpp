// fuzz_compact: the compact stream's decoders, as carom::client::Connection
// and carom-relay run them on a server's bytes (proto::decode_track for
// positions and velocities, key and delta frames against a track, and
// proto::decode_events against a snapshot's positions).
//
// Input: see compact_input.hpp (flags, tick, two id lists, a baseline key
// frame, the frame or the event tokens, the impulses).
// Checks:
// - decoding never reads outside the bytes, leaks or overflows (the
//   sanitizers), and a refusal names what is wrong;
// - a frame that decodes holds only values within +-2^52 quanta, and a
//   delta frame's changes are the values minus the baseline's (0 for a body
//   new to it), as the sender's advance_track makes them;
// - what decodes re-encodes (encode_track against the same baseline, and as
//   a key frame; encode_events against the same positions) to bytes that
//   decode to the same values: the decoder reads what the encoder writes;
// - decoded events name ticks in [0, tick] and ids in uint32, and their
//   impulses re-encode to the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carom/proto/compact.hpp"
#include "compact_input.hpp"
#include "fuzz_support.hpp"

namespace {

using carom::fuzz::CompactInput;
using carom::proto::Channel;
using carom::proto::Track;
namespace proto = carom::proto;

bool in_range(const std::vector<std::int64_t>& v) {
  for (std::int64_t q : v)
    if (q < -proto::kMaxQuantized || q > proto::kMaxQuantized) return false;
  return true;
}

bool same(const Track& a, const Track& b) {
  return a.id == b.id && a.x == b.x && a.y == b.y && a.dx == b.dx && a.dy == b.dy;
}

void check_bodies(Channel channel, const Track* baseline, const std::vector<std::uint32_t>& ids,
                  std::string_view bytes) {
  Track next;
  const std::string error = proto::decode_track(channel, baseline, ids, bytes, &next);
  if (!error.empty()) return;
  CAROM_FUZZ_CHECK(next.id == ids && next.x.size() == ids.size() && next.y.size() == ids.size(),
                   "a decoded track has " + std::to_string(next.x.size()) + " values for " +
                       std::to_string(ids.size()) + " ids");
  CAROM_FUZZ_CHECK(in_range(next.x) && in_range(next.y), "a decoded value is beyond +-2^52 quanta");
  const bool position = channel == Channel::kPosition;
  CAROM_FUZZ_CHECK(next.dx.size() == (position ? ids.size() : 0) && next.dy.size() == next.dx.size(),
                   "a decoded track's changes have the wrong length");
  if (baseline != nullptr) {
    Track canonical;
    proto::advance_track(channel, baseline, ids, next.x, next.y, &canonical);
    CAROM_FUZZ_CHECK(same(canonical, next), "a delta frame's changes are not the sender's (advance_track)");
  }
  // Round trips: against the same baseline, and as a key frame (which
  // carries the changes as they are).
  for (const Track* base : {baseline, static_cast<const Track*>(nullptr)}) {
    std::string again;
    proto::encode_track(channel, base, next, &again);
    Track back;
    const std::string why = proto::decode_track(channel, base, ids, again, &back);
    CAROM_FUZZ_CHECK(why.empty(), "a re-encoded frame does not decode: " + why);
    CAROM_FUZZ_CHECK(same(back, next), std::string("a re-encoded ") + (base ? "delta" : "key") +
                                           " frame decodes to other values");
  }
}

void check_events(std::string_view tokens, std::string_view impulses, std::uint64_t tick, const Track& positions) {
  std::vector<proto::CompactEvent> events;
  const std::string error = proto::decode_events(tokens, impulses, tick, positions, &events);
  if (!error.empty()) return;
  CAROM_FUZZ_CHECK(events.size() * 4 == impulses.size(), "events decoded for " + std::to_string(impulses.size()) +
                                                              " impulse bytes: " + std::to_string(events.size()));
  for (const proto::CompactEvent& e : events) {
    CAROM_FUZZ_CHECK(e.tick <= tick, "an event after the snapshot's tick");
    CAROM_FUZZ_CHECK(e.x >= -proto::kMaxQuantized && e.x <= proto::kMaxQuantized && e.y >= -proto::kMaxQuantized &&
                         e.y <= proto::kMaxQuantized,
                     "an event's point is beyond +-2^52 quanta");
  }
  std::string again, again_impulses;
  proto::encode_events(events, tick, positions, &again, &again_impulses);
  CAROM_FUZZ_CHECK(again_impulses == impulses, "the impulses do not re-encode to their bytes");
  std::vector<proto::CompactEvent> back;
  const std::string why = proto::decode_events(again, again_impulses, tick, positions, &back);
  CAROM_FUZZ_CHECK(why.empty(), "re-encoded events do not decode: " + why);
  CAROM_FUZZ_CHECK(back == events, "re-encoded events decode to other events");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const CompactInput in = CompactInput::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  const bool events = (in.flags & CompactInput::kEvents) != 0;
  const Channel channel =
      !events && (in.flags & CompactInput::kVelocity) != 0 ? Channel::kVelocity : Channel::kPosition;
  const std::vector<std::uint32_t> base_ids = in.ids(0);

  // The baseline: what the receiver holds from an earlier key frame.
  Track baseline;
  bool have_baseline = false;
  if (!in.section[2].empty()) {
    have_baseline = proto::decode_track(channel, nullptr, base_ids, in.section[2], &baseline).empty();
    if (have_baseline) check_bodies(channel, nullptr, base_ids, in.section[2]);
  }
  if (events) {
    check_events(in.section[3], in.section[4], in.tick, have_baseline ? baseline : Track{});
    return 0;
  }
  check_bodies(channel, have_baseline ? &baseline : nullptr, in.ids(1), in.section[3]);
  return 0;
}
