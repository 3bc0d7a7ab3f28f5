// Validators for what CLI11 lets through, and the field path of a server
// message.

#include "values.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace carom::ctl {

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
