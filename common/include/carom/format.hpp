#pragma once
/// \file How carom writes values into messages: the shortest text that reads
/// back to the same double, and the house form of a refusal.

#include <charconv>
#include <string>
#include <utility>

#include "carom/status.hpp"
#include "carom/vec2.hpp"

namespace carom {

/// The shortest decimal text that reads back as exactly `v` ("0.1", "1e+300", "nan").
inline std::string format_number(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

/// "(x, y)" with format_number.
inline std::string format_vec(Vec2 v) {
  std::string out = "(";
  return out.append(format_number(v.x)).append(", ").append(format_number(v.y)).append(")");
}

/// kInvalidArgument of the field at `field` (a path, "" for the item of a
/// batch as a whole) with the house reason "RULE, got VALUE".
inline Status invalid_argument(std::string field, const std::string& rule, const std::string& got) {
  return {StatusCode::kInvalidArgument, std::move(field), rule + ", got " + got};
}

}  // namespace carom
