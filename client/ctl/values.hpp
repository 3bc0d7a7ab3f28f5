#pragma once
/// \file Command-line values of carom-ctl: comma-separated number lists
/// ("1,2", "0,0,100,100"), ranges ("MIN[,MAX]") and plain integers.
///
/// Only the shape is checked here: anything that reads as a number (nan and
/// inf included) is passed on, because the server is the one validator of
/// values. Text that is not a number is a usage error naming the option.
///
/// Threading: pure functions, any thread.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "carom/v1/world.pb.h"

namespace carom::ctl {

/// Process exit status of carom-ctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCommandError = 1;  ///< the server (or a local file) said no
inline constexpr int kExitUsage = 2;         ///< bad command line, or no connection

/// A command line that cannot be turned into a request; main prints
/// what() and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses "a,b,..." into doubles. The number of values must be one of
/// `counts`. Throws UsageError ("--body '1,x': 'x' is not a number").
std::vector<double> parse_numbers(std::string_view text, std::string_view option,
                                  std::initializer_list<std::size_t> counts);

/// "X,Y" as a Vec2 (units are the option's: m, m/s, N s, m/s^2).
v1::Vec2 parse_vec2(std::string_view text, std::string_view option);

/// "MIN[,MAX]"; MAX = MIN when only one value is given.
v1::Range parse_range(std::string_view text, std::string_view option);

/// One double ("0.9", "nan").
double parse_double(std::string_view text, std::string_view option);

/// A non-negative integer that fits in 64 bits.
std::uint64_t parse_uint(std::string_view text, std::string_view option);

/// A non-negative integer that fits in 32 bits.
std::uint32_t parse_uint32(std::string_view text, std::string_view option);

/// For integer options: decimal digits only, at most `max`. CLI11 2.1
/// reads integers with strtoull in base 0 and no overflow check, so "010"
/// would be 8, "0x10" 16 and, in a 64-bit option, "-1" and 2^64 would both
/// be 2^64-1. The text is rewritten without leading zeros ("010" is 10).
CLI::Validator decimal_integer(std::uint64_t max);

/// For floating-point options carom-ctl uses itself: neither NaN nor
/// infinite. CLI11's number validators (PositiveNumber, Range) let NaN
/// through, since every comparison with it is false.
CLI::Validator finite_number();

/// The field path that starts a server message such as
/// "bodies[3].radius: must be > 0, got -1" ("bodies[3].radius"); empty when
/// the message does not start with "path: ".
std::string leading_field_path(std::string_view message);

}  // namespace carom::ctl
