#pragma once
/// \file Status: the result of every call that can fail. A failed call leaves
/// the world exactly as it was.
///
/// A failure names the field at fault as a structured path (field()), kept
/// apart from the words (reason()): callers that pass a value on compose the
/// path (within(), in_batch()) instead of gluing text onto the message, and
/// nothing ever reads a path back out of a message.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
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

/// The one form of a message about a field: "FIELD: REASON" ("bodies[3].radius:
/// must be > 0, got -1"), or REASON alone when `field` is empty. Any thread.
inline std::string field_message(std::string_view field, std::string_view reason) {
  std::string out(field);
  if (!out.empty()) out.append(": ");
  return out.append(reason);
}

/// `parent` and `child` joined as a field path: "spawn" + "bodies[3].radius"
/// is "spawn.bodies[3].radius", "retired" + "[2]" is "retired[2]"; either may
/// be empty. Any thread.
inline std::string join_path(std::string_view parent, std::string_view child) {
  std::string out(parent);
  if (!out.empty() && !child.empty() && child.front() != '[') out.push_back('.');
  return out.append(child);
}

/// Outcome of a call: ok, or a code, the path of the field at fault (when one
/// is: field()) and why (reason()). message() joins the two into one sentence.
class [[nodiscard]] Status {
 public:
  Status() = default;
  /// A failure that names no field: message() is `message`.
  Status(StatusCode code, std::string message) : code_(code), reason_(std::move(message)) {}
  /// A failure of the field at `field`, a path relative to what the call was
  /// given ("radius", "mutual.theta", "solver.warm[2].a").
  Status(StatusCode code, std::string field, std::string reason)
      : code_(code), item_field_(std::move(field)), reason_(std::move(reason)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }

  /// Path of the field at fault, dotted and bracketed ("bodies[3].radius",
  /// "params.mutual.theta"); empty when the failure names none.
  std::string field() const {
    if (!index_) return item_field_;
    return join_path(batch_ + "[" + std::to_string(*index_) + "]", item_field_);
  }
  /// When the failure is one item's of a batch (which body of an add_bodies
  /// batch, which id of a removal): its index in the batch.
  std::optional<std::size_t> index() const { return index_; }
  /// The batch's path ("bodies", "solver.warm"); empty when index() is unset.
  const std::string& batch() const { return batch_; }
  /// The field within the batch's item ("radius"; "" for the item as a
  /// whole); the whole field() when index() is unset.
  const std::string& item_field() const { return item_field_; }
  /// Why, without the path: "must be finite and > 0, got -1".
  const std::string& reason() const { return reason_; }
  /// One human sentence: "bodies[3].radius: must be finite and > 0, got -1"
  /// (field_message of field() and reason()).
  std::string message() const { return field_message(field(), reason_); }

  /// The same failure seen from the message that holds the callee's input as
  /// `parent`: field() "radius" becomes "params.radius", "bodies[3].radius"
  /// becomes "spawn.bodies[3].radius" (index() kept). A failure that names no
  /// field stays as it is.
  Status within(std::string_view parent) const {
    Status out = *this;
    if (out.index_) {
      out.batch_ = join_path(parent, out.batch_);
    } else if (!out.item_field_.empty()) {
      out.item_field_ = join_path(parent, out.item_field_);
    }
    return out;
  }
  /// The same failure as item `index` of the batch at `batch`: field()
  /// becomes BATCH[INDEX].ITEM_FIELD. Replaces a batch the status had.
  Status in_batch(std::string batch, std::size_t index) const {
    Status out = *this;
    out.batch_ = std::move(batch);
    out.index_ = index;
    return out;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string batch_;
  std::optional<std::size_t> index_;
  std::string item_field_;
  std::string reason_;
};

}  // namespace carom
