#pragma once
/// \file Status: the result of every call that can fail. A failed call leaves
/// the world exactly as it was.

#include <string>
#include <utility>

namespace carom {

/// Why a call failed. Stable values: later issues put them on the wire.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   ///< NaN/Inf, radius <= 0, mass <= 0, bad parameter
  kNotFound = 2,          ///< unknown body id
  kOutOfRange = 3,        ///< body outside the walled box
  kAlreadyExists = 4,     ///< explicit body id already in use or used before
  kResourceExhausted = 5, ///< more bodies than the configured maximum
};

/// Name of a status code ("invalid_argument", ...). Any thread.
const char* to_string(StatusCode code);

/// Outcome of a call: ok, or a code plus a message naming the field and value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  /// Human-readable reason, e.g. "bodies[3].radius: must be > 0, got -1".
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace carom
