// Delimited framing. Reads: a byte stream in arbitrary chunks. Writes: whole
// frames. The limit is checked on the prefix alone, so an oversized or hostile
// prefix never causes an allocation.

#include "carom/proto/framing.hpp"

#include <time.h>

#include <google/protobuf/io/coded_stream.h>

namespace carom::proto {

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void append_frame(const google::protobuf::MessageLite& message, std::string* out) {
  const std::size_t size = message.ByteSizeLong();
  std::uint8_t prefix[5];
  std::uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      static_cast<std::uint32_t>(size), prefix);
  const std::size_t at = out->size();
  out->append(reinterpret_cast<const char*>(prefix), static_cast<std::size_t>(end - prefix));
  out->resize(out->size() + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(out->data()) + at +
                                          static_cast<std::size_t>(end - prefix));
}

std::string encode_frame(const google::protobuf::MessageLite& message) {
  std::string out;
  append_frame(message, &out);
  return out;
}

int read_length_prefix(std::string_view data, std::uint64_t* length) {
  std::uint64_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (static_cast<std::size_t>(i) >= data.size()) return 0;
    const auto byte = static_cast<std::uint8_t>(data[static_cast<std::size_t>(i)]);
    value |= std::uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80u) == 0) {
      // A varint32 has at most 32 significant bits.
      if (value > 0xffffffffu) return -1;
      *length = value;
      return i + 1;
    }
  }
  return -1;
}

FrameDecoder::Result FrameDecoder::next(std::string_view* frame, std::uint64_t* length) {
  if (start_ > 0 && start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > (std::size_t{1} << 16) && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  const std::string_view rest(buffer_.data() + start_, buffer_.size() - start_);
  std::uint64_t len = 0;
  const int prefix = read_length_prefix(rest, &len);
  if (prefix < 0) return Result::kBadPrefix;
  if (prefix == 0) return Result::kNeedMore;
  if (length != nullptr) *length = len;
  if (len > max_frame_) return Result::kTooLarge;
  if (rest.size() < static_cast<std::size_t>(prefix) + len) return Result::kNeedMore;
  *frame = rest.substr(static_cast<std::size_t>(prefix), static_cast<std::size_t>(len));
  start_ += static_cast<std::size_t>(prefix) + static_cast<std::size_t>(len);
  return Result::kFrame;
}

}  // namespace carom::proto
