#pragma once
/// \file Framing: protobuf's delimited format (varint32 length, then the
/// message bytes), the same as writeDelimitedTo / parseDelimitedFrom in every
/// protobuf language. The length limit is checked before anything is
/// allocated for the message.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/message_lite.h>

namespace carom::proto {

/// Protocol version this code speaks (Hello.protocol_version).
inline constexpr std::uint32_t kProtocolVersion = 1;
/// Default limit on a client-to-server frame (bytes of the message).
inline constexpr std::size_t kDefaultMaxClientFrame = std::size_t{1} << 20;
/// Limit clients use for server-to-client frames (large worlds' snapshots).
inline constexpr std::size_t kDefaultMaxServerFrame = std::size_t{1} << 30;

/// CLOCK_MONOTONIC in nanoseconds: the clock of Snapshot.server_time_ns and
/// Heartbeat.server_time_ns (comparable only on one host). Any thread.
std::int64_t monotonic_ns();

/// Appends the varint32 length and the serialized message to *out. Any thread.
void append_frame(const google::protobuf::MessageLite& message, std::string* out);
/// One framed message. Any thread.
std::string encode_frame(const google::protobuf::MessageLite& message);

/// Reassembles frames from a byte stream, whatever the chunking. One owner.
class FrameDecoder {
 public:
  enum class Result {
    kNeedMore,   ///< no complete frame yet
    kFrame,      ///< *frame holds one message's bytes
    kTooLarge,   ///< the length prefix is over the limit (stream unusable)
    kBadPrefix,  ///< the length prefix is not a valid varint32 (stream unusable)
  };

  explicit FrameDecoder(std::size_t max_frame) : max_frame_(max_frame) {}

  /// Adds received bytes. Never holds more than max_frame + 5 bytes of a
  /// frame in progress (plus what was appended after it).
  void append(const char* data, std::size_t size) { buffer_.append(data, size); }
  /// The next frame. On kFrame, *frame views the message bytes until the next
  /// call to append or next. On kTooLarge, *length (if given) is the prefix.
  Result next(std::string_view* frame, std::uint64_t* length = nullptr);
  /// Bytes received but not yet returned as frames.
  std::size_t buffered() const { return buffer_.size() - start_; }
  std::size_t max_frame() const { return max_frame_; }
  void set_max_frame(std::size_t max_frame) { max_frame_ = max_frame; }

 private:
  std::size_t max_frame_;
  std::string buffer_;
  std::size_t start_ = 0;  // first byte not yet consumed
};

/// Reads a varint32 length prefix from data. Returns the number of bytes it
/// took, 0 if more bytes are needed, or -1 if it is not a valid varint32.
int read_length_prefix(std::string_view data, std::uint64_t* length);

}  // namespace carom::proto
