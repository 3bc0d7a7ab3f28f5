#pragma once
/// \file Protobuf text format (.txtpb) for scenarios, with errors that name
/// the file, the line and the field.

#include <memory>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

namespace carom::proto {

/// Where each field of a parsed text message was written, so that an error
/// found later ("bodies[3].radius: must be > 0") can name its line.
class TextLocations {
 public:
  TextLocations();
  ~TextLocations();
  TextLocations(TextLocations&&) noexcept;
  TextLocations& operator=(TextLocations&&) noexcept;

  /// 1-based line of a field path such as "bodies[3].radius" or
  /// "script[2].command.spawn.bodies[0].position.x" in `message`'s type;
  /// the line of the deepest part of the path that was written; 0 if none.
  int line_of(const google::protobuf::Message& message, std::string_view path) const;

 private:
  friend bool parse_text(std::string_view, std::string_view, google::protobuf::Message*, std::string*,
                         TextLocations*);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses text format into *message. On failure returns false and sets
/// *error to "FILE:LINE:COLUMN: what is wrong". `filename` is only for messages.
bool parse_text(std::string_view text, std::string_view filename, google::protobuf::Message* message,
                std::string* error, TextLocations* locations = nullptr);

/// Reads and parses a text-format file ("FILE: cannot read" when it cannot be read).
bool parse_text_file(const std::string& path, google::protobuf::Message* message, std::string* error,
                     TextLocations* locations = nullptr);

/// Reads a whole file into *out; false if it cannot be read.
bool read_file(const std::string& path, std::string* out);

/// Writes bytes to a temporary file next to `path` (`path.tmp.PID`), syncs
/// it, renames it over `path` and syncs the directory, so neither a crash nor
/// a power cut leaves half a file. False and *error on failure.
bool write_file_atomically(const std::string& path, const std::string& bytes, std::string* error);

/// Removes the temporary files `path.tmp.PID` that a save killed half-way
/// left behind (those whose process no longer runs). Returns how many.
int remove_stale_temporaries(const std::string& path);

}  // namespace carom::proto
