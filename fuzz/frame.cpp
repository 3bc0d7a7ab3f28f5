// fuzz_frame: the frame reader the server runs on every client's bytes
// (proto::FrameDecoder, then ClientMessage parsing as Session::handle_frame).
//
// Input: byte 0 picks the frame limit, byte 1 seeds how the rest is cut
// into reads, the rest is the byte stream a client sends.
// Checks:
// - the frames and the final result (need more / too large / bad prefix)
//   do not depend on how the stream arrives: one read, or reads of 1..64
//   bytes, give the same frames, the same error, the same bytes left over;
// - waiting for more never holds more than limit + 5 bytes;
// - a frame is never longer than the limit;
// - a ClientMessage that parses goes back into one frame that decodes to
//   the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"
#include "fuzz_support.hpp"

namespace {

using carom::proto::FrameDecoder;

struct Decoded {
  std::vector<std::string> frames;
  FrameDecoder::Result end = FrameDecoder::Result::kNeedMore;
  std::uint64_t too_large_length = 0;
  std::size_t left_over = 0;
};

// The limits the server uses (the default and a viewer's 64 KiB) and small
// ones, so that "too large" is reached with short inputs.
constexpr std::size_t kLimits[] = {carom::proto::kDefaultMaxClientFrame, std::size_t{64} << 10, 0, 1, 16, 300};

// Feeds `stream` in pieces of `piece(k)` bytes (k = 0, 1, ...), draining the
// decoder after each, as Session::read_more does; stops at the first error
// (the session closes the connection there).
template <class Piece>
Decoded decode(std::string_view stream, std::size_t limit, Piece piece) {
  Decoded out;
  FrameDecoder decoder(limit);
  std::size_t at = 0;
  for (std::size_t k = 0; at < stream.size(); ++k) {
    const std::size_t n = std::min(piece(k), stream.size() - at);
    decoder.append(stream.data() + at, n);
    at += n;
    for (;;) {
      std::string_view frame;
      std::uint64_t length = 0;
      const FrameDecoder::Result r = decoder.next(&frame, &length);
      if (r == FrameDecoder::Result::kFrame) {
        CAROM_FUZZ_CHECK(frame.size() <= limit, "frame of " + std::to_string(frame.size()) + " bytes, limit " +
                                                    std::to_string(limit));
        out.frames.emplace_back(frame);
        continue;
      }
      if (r == FrameDecoder::Result::kNeedMore) {
        CAROM_FUZZ_CHECK(decoder.buffered() < limit + 5, "waiting with " + std::to_string(decoder.buffered()) +
                                                             " bytes buffered, limit " + std::to_string(limit));
        break;
      }
      out.end = r;
      if (r == FrameDecoder::Result::kTooLarge) {
        CAROM_FUZZ_CHECK(length > limit, "too large: " + std::to_string(length) + " <= " + std::to_string(limit));
        out.too_large_length = length;
      }
      out.left_over = decoder.buffered();
      return out;
    }
  }
  out.left_over = decoder.buffered();
  return out;
}

bool same(const Decoded& a, const Decoded& b) {
  return a.frames == b.frames && a.end == b.end && a.too_large_length == b.too_large_length &&
         (a.end != FrameDecoder::Result::kNeedMore || a.left_over == b.left_over);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  carom::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t limit = kLimits[data[0] % std::size(kLimits)];
  std::uint32_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Decoded whole = decode(stream, limit, [](std::size_t) { return std::size_t(-1); });
  const Decoded pieces = decode(stream, limit, [&](std::size_t) {
    seed = seed * 1103515245u + 12345u;
    return std::size_t{1} + ((seed >> 16) & 63u);
  });
  CAROM_FUZZ_CHECK(same(whole, pieces), "the frames depend on how the bytes arrive");
  const Decoded bytes = decode(stream, limit, [](std::size_t) { return std::size_t{1}; });
  CAROM_FUZZ_CHECK(same(whole, bytes), "the frames depend on how the bytes arrive (byte by byte)");

  for (const std::string& frame : whole.frames) {
    // What Session::handle_frame does with a frame.
    carom::v1::ClientMessage message;
    if (!message.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) continue;
    switch (message.kind_case()) {
      case carom::v1::ClientMessage::kHello: (void)message.hello().protocol_version(); break;
      case carom::v1::ClientMessage::kCommand: (void)message.command().kind_case(); break;
      case carom::v1::ClientMessage::KIND_NOT_SET: break;
    }
    const std::string encoded = carom::proto::encode_frame(message);
    FrameDecoder again(std::size_t{1} << 30);
    again.append(encoded.data(), encoded.size());
    std::string_view back;
    CAROM_FUZZ_CHECK(again.next(&back) == FrameDecoder::Result::kFrame, "an encoded frame does not decode");
    CAROM_FUZZ_CHECK(back == message.SerializeAsString(), "an encoded frame decodes to other bytes");
    CAROM_FUZZ_CHECK(again.buffered() == 0, "an encoded frame leaves bytes behind");
  }
  return 0;
}
