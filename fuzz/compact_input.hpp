#pragma once
/// \file The input format of fuzz_compact, shared by the target and the seed
/// writer (carom-fuzz-seeds), so that the seeds are real frames of the C++
/// encoder in the form the target reads.
///
/// Byte 0: flags (kVelocity: the velocity channel, else positions;
/// kEvents: decode compact events, else bodies; kRawIds: the id lists are
/// taken as they are, unsorted and repeated ids allowed, else each varint is
/// the gap to the previous id minus one). Bytes 1-2: the snapshot's tick
/// (little-endian). Then up to five sections, each a 2-byte little-endian
/// length (cut to what is left) and its bytes:
///   0 the baseline's ids (varints)   1 the frame's ids (varints)
///   2 the baseline, a key frame of the channel over ids 0 (empty: none)
///   3 the frame (bodies: against the baseline, or a key frame without
///     one; events: the event tokens)   4 events only: the impulses
/// With kEvents, the events are coded against the positions that section 2
/// decodes to (nothing when it is empty or corrupt).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace carom::fuzz {

struct CompactInput {
  static constexpr std::uint8_t kVelocity = 1, kEvents = 2, kRawIds = 4;
  static constexpr int kSections = 5;
  std::uint8_t flags = 0;
  std::uint16_t tick = 0;
  std::string_view section[kSections];

  /// Splits `data`; missing sections are empty. Never reads outside it.
  static CompactInput parse(std::string_view data) {
    CompactInput in;
    if (data.size() < 3) return in;
    in.flags = static_cast<std::uint8_t>(data[0]);
    in.tick = static_cast<std::uint16_t>(static_cast<std::uint8_t>(data[1]) | static_cast<std::uint8_t>(data[2]) << 8);
    data.remove_prefix(3);
    for (std::string_view& s : in.section) {
      if (data.size() < 2) break;
      std::size_t n = static_cast<std::uint8_t>(data[0]) | std::size_t{static_cast<std::uint8_t>(data[1])} << 8;
      data.remove_prefix(2);
      n = std::min(n, data.size());
      s = data.substr(0, n);
      data.remove_prefix(n);
    }
    return in;
  }

  /// The ids a section codes (at most `limit`: a varint takes a byte at
  /// least, so this is no real cut). Sorted mode wraps past 2^32 as the
  /// uint32 it builds, which a decoder must refuse as not increasing.
  std::vector<std::uint32_t> ids(int k) const {
    std::vector<std::uint32_t> out;
    std::string_view s = section[k];
    std::uint32_t last = 0;
    while (!s.empty()) {
      std::uint64_t v = 0;
      for (int shift = 0; !s.empty() && shift < 64; shift += 7) {
        const auto byte = static_cast<std::uint8_t>(s[0]);
        s.remove_prefix(1);
        v |= std::uint64_t{byte & 0x7fu} << shift;
        if ((byte & 0x80) == 0) break;
      }
      const auto id = static_cast<std::uint32_t>((flags & kRawIds) != 0 ? v : (out.empty() ? v : last + 1 + v));
      out.push_back(id);
      last = id;
    }
    return out;
  }

  /// The bytes of an input, for the seed writer: the inverse of parse and ids.
  static std::string make(std::uint8_t flags, std::uint16_t tick, const std::vector<std::uint32_t>& base_ids,
                          const std::vector<std::uint32_t>& ids, std::string_view baseline, std::string_view frame,
                          std::string_view impulses = {}) {
    auto id_bytes = [](const std::vector<std::uint32_t>& v) {
      std::string out;
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::uint64_t x = i == 0 ? v[i] : std::uint64_t{v[i]} - v[i - 1] - 1;
        while (x >= 0x80) {
          out.push_back(static_cast<char>((x & 0x7f) | 0x80));
          x >>= 7;
        }
        out.push_back(static_cast<char>(x));
      }
      return out;
    };
    std::string out;
    out.push_back(static_cast<char>(flags & ~kRawIds));
    out.push_back(static_cast<char>(tick & 0xff));
    out.push_back(static_cast<char>(tick >> 8));
    for (const std::string& s : {id_bytes(base_ids), id_bytes(ids), std::string(baseline), std::string(frame),
                                 std::string(impulses)}) {
      const std::size_t n = std::min<std::size_t>(s.size(), 0xffff);
      out.push_back(static_cast<char>(n & 0xff));
      out.push_back(static_cast<char>(n >> 8));
      out.append(s, 0, n);
    }
    return out;
  }
};

}  // namespace carom::fuzz
