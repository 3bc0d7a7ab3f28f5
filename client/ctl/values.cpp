// Number lists for the command line. std::from_chars is used because it does
// not depend on the locale and accepts "nan" and "inf", which must reach the
// server so that it can say what is wrong with them.

#include "values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace carom::ctl {

namespace {

std::string quoted_option(std::string_view option, std::string_view text) {
  return std::string(option) + " '" + std::string(text) + "'";
}

bool to_double(std::string_view piece, double* out) {
  if (!piece.empty() && piece.front() == '+') piece.remove_prefix(1);
  if (piece.empty() || piece.front() == '+' || std::isspace(static_cast<unsigned char>(piece.front()))) return false;
  const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), *out);
  // Overflow ("1e999") is still a number: pass it on as the infinity it
  // reads as and let the server reject it.
  if (ec == std::errc::result_out_of_range && end == piece.data() + piece.size()) {
    *out = piece.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  return ec == std::errc{} && end == piece.data() + piece.size();
}

std::string count_list(std::initializer_list<std::size_t> counts) {
  std::string out;
  std::size_t i = 0;
  for (const std::size_t c : counts) {
    if (i > 0) out += i + 1 == counts.size() ? " or " : ", ";
    out += std::to_string(c);
    ++i;
  }
  return out;
}

}  // namespace

std::vector<double> parse_numbers(std::string_view text, std::string_view option,
                                  std::initializer_list<std::size_t> counts) {
  std::vector<double> values;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view piece = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    double value = 0.0;
    if (!to_double(piece, &value)) {
      if (piece.empty()) throw UsageError(quoted_option(option, text) + ": empty value in the list");
      throw UsageError(quoted_option(option, text) + ": '" + std::string(piece) + "' is not a number");
    }
    values.push_back(value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (std::find(counts.begin(), counts.end(), values.size()) == counts.end()) {
    throw UsageError(quoted_option(option, text) + ": expected " + count_list(counts) + " comma-separated numbers, got " +
                     std::to_string(values.size()));
  }
  return values;
}

v1::Vec2 parse_vec2(std::string_view text, std::string_view option) {
  const auto v = parse_numbers(text, option, {2});
  v1::Vec2 out;
  out.set_x(v[0]);
  out.set_y(v[1]);
  return out;
}

v1::Range parse_range(std::string_view text, std::string_view option) {
  const auto v = parse_numbers(text, option, {1, 2});
  v1::Range out;
  out.set_min(v[0]);
  out.set_max(v.size() == 2 ? v[1] : v[0]);
  return out;
}

double parse_double(std::string_view text, std::string_view option) { return parse_numbers(text, option, {1})[0]; }

std::uint64_t parse_uint(std::string_view text, std::string_view option) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    throw UsageError(quoted_option(option, text) + ": expected a non-negative integer");
  }
  return value;
}

std::uint32_t parse_uint32(std::string_view text, std::string_view option) {
  const std::uint64_t value = parse_uint(text, option);
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    throw UsageError(quoted_option(option, text) + ": must be at most 4294967295");
  }
  return static_cast<std::uint32_t>(value);
}

CLI::Validator decimal_integer(std::uint64_t max) {
  return CLI::Validator(
      [max](std::string& text) {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || (ec != std::errc{} && ec != std::errc::result_out_of_range) ||
            end != text.data() + text.size()) {
          return "'" + text + "' is not a non-negative decimal integer";
        }
        if (ec == std::errc::result_out_of_range || value > max) {
          return "'" + text + "' is more than " + std::to_string(max);
        }
        text = std::to_string(value);
        return std::string();
      },
      "", "DECIMAL");
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value)) return "'" + text + "' is not a finite number";
        return std::string();
      },
      "", "FINITE");
}

std::string leading_field_path(std::string_view message) {
  const std::size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0) return {};
  const std::string_view path = message.substr(0, colon);
  // name ( '[' digits ']' )? ( '.' name ( '[' digits ']' )? )*
  bool need_name_start = true;
  bool in_index = false;
  bool index_digits = false;
  bool after_index = false;
  for (const char c : path) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (in_index) {
      if (std::isdigit(u)) {
        index_digits = true;
      } else if (c == ']' && index_digits) {
        in_index = false;
        after_index = true;
      } else {
        return {};
      }
    } else if (need_name_start) {
      if (!(std::isalpha(u) || c == '_')) return {};
      need_name_start = false;
    } else if (c == '.') {
      need_name_start = true;
      after_index = false;
    } else if (c == '[' && !after_index) {
      in_index = true;
      index_digits = false;
    } else if (after_index || !(std::isalnum(u) || c == '_')) {
      return {};
    }
  }
  if (need_name_start || in_index) return {};
  return std::string(path);
}

}  // namespace carom::ctl
