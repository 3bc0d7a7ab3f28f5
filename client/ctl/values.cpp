// Validators for what CLI11 lets through.

#include "values.hpp"

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

}  // namespace carom::ctl
