#pragma once
/// \file What carom-ctl checks in a command-line value beyond the type CLI11
/// gives it: exit statuses, and validators for what CLI11 lets through.
///
/// The server is the one validator of a world's values: anything that reads
/// as a number (nan and inf included) is passed on for it to refuse, naming
/// the field (exit 1). Only values that carom-ctl uses itself (--timeout,
/// watch --seconds) are checked for range (cli.cpp).
///
/// Threading: pure functions, any thread.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace carom::ctl {

/// Process exit status of carom-ctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCommandError = 1;  ///< the server (or a local file) said no
inline constexpr int kExitUsage = 2;         ///< bad command line, or no connection

/// For integer options: decimal digits only, at most `max`. CLI11 2.1
/// reads integers with strtoull in base 0 and no overflow check, so "010"
/// would be 8, "0x10" 16 and, in a 64-bit option, "-1" and 2^64 would both
/// be 2^64-1. The text is rewritten without leading zeros ("010" is 10).
CLI::Validator decimal_integer(std::uint64_t max);

/// For floating-point options carom-ctl uses itself: neither NaN nor
/// infinite. CLI11's number validators (PositiveNumber, Range) let NaN
/// through, since every comparison with it is false.
CLI::Validator finite_number();

}  // namespace carom::ctl
