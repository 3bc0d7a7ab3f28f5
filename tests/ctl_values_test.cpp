// carom-ctl's command-line values (client/ctl/values.cpp): number lists,
// vectors, ranges, integers, and the field path read from a server message.
// Every refusal is a UsageError that names the option and the bad piece.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ctl/values.hpp"

namespace carom::ctl {
namespace {

// The UsageError text of `f()`, or "" when it does not throw.
template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(CtlValues, NumberListsOfTheAllowedLengths) {
  EXPECT_EQ(parse_numbers("1,2", "--at", {2}), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(parse_numbers("+3,-4.5e2,0", "--box", {2, 3}), (std::vector<double>{3.0, -450.0, 0.0}));
  EXPECT_EQ(usage_error([] { parse_numbers("0x10", "--at", {1}); }), "--at '0x10': '0x10' is not a number");
}

TEST(CtlValues, NumberListsRefuseWhatIsNotANumberNamingThePiece) {
  EXPECT_EQ(usage_error([] { parse_numbers("1,x", "--body", {2}); }), "--body '1,x': 'x' is not a number");
  EXPECT_EQ(usage_error([] { parse_numbers("1,,2", "--body", {3}); }), "--body '1,,2': empty value in the list");
  EXPECT_EQ(usage_error([] { parse_numbers("", "--g", {1}); }), "--g '': empty value in the list");
  EXPECT_EQ(usage_error([] { parse_numbers(" 1", "--g", {1}); }), "--g ' 1': ' 1' is not a number");
  EXPECT_EQ(usage_error([] { parse_numbers("++1", "--g", {1}); }), "--g '++1': '++1' is not a number");
  EXPECT_EQ(usage_error([] { parse_numbers("1,2,3", "--box", {2, 4}); }),
            "--box '1,2,3': expected 2 or 4 comma-separated numbers, got 3");
  EXPECT_EQ(usage_error([] { parse_numbers("1", "--x", {2, 3, 4}); }),
            "--x '1': expected 2, 3 or 4 comma-separated numbers, got 1");
}

TEST(CtlValues, NanInfinityAndOverflowReachTheServer) {
  // The server is the one validator of values: these are numbers it refuses.
  EXPECT_TRUE(std::isnan(parse_double("nan", "--restitution")));
  EXPECT_EQ(parse_double("inf", "--restitution"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_double("1e999", "--restitution"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_double("-1e999", "--restitution"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_double("+0.25", "--restitution"), 0.25);
}

TEST(CtlValues, VectorsAndRanges) {
  const v1::Vec2 v = parse_vec2("-3.5,2", "--gravity");
  EXPECT_EQ(v.x(), -3.5);
  EXPECT_EQ(v.y(), 2.0);
  EXPECT_NE(usage_error([] { parse_vec2("1", "--gravity"); }).find("expected 2 comma-separated numbers, got 1"),
            std::string::npos);
  const v1::Range one = parse_range("0.5", "--radius");
  EXPECT_EQ(one.min(), 0.5);
  EXPECT_EQ(one.max(), 0.5);
  const v1::Range two = parse_range("0.1,0.4", "--radius");
  EXPECT_EQ(two.min(), 0.1);
  EXPECT_EQ(two.max(), 0.4);
  EXPECT_NE(usage_error([] { parse_range("1,2,3", "--radius"); }).find("expected 1 or 2"), std::string::npos);
}

TEST(CtlValues, IntegersAreNonNegativeAndFit) {
  EXPECT_EQ(parse_uint("42", "--count"), 42u);
  EXPECT_EQ(parse_uint("18446744073709551615", "--count"), std::numeric_limits<std::uint64_t>::max());
  for (const char* bad : {"-1", "1.5", "", "18446744073709551616", "12a", " 3"})
    EXPECT_EQ(usage_error([&] { parse_uint(bad, "--count"); }),
              std::string("--count '") + bad + "': expected a non-negative integer")
        << bad;
  EXPECT_EQ(parse_uint32("4294967295", "--steps"), 4294967295u);
  EXPECT_EQ(usage_error([] { parse_uint32("4294967296", "--steps"); }),
            "--steps '4294967296': must be at most 4294967295");
}

TEST(CtlValues, Validators) {
  const CLI::Validator byte = decimal_integer(255);
  std::string text = "0255";
  EXPECT_EQ(byte(text), "");
  EXPECT_EQ(text, "255");
  text = "0";
  EXPECT_EQ(byte(text), "");
  EXPECT_EQ(text, "0");
  text = "256";
  EXPECT_EQ(byte(text), "'256' is more than 255");
  text = "";
  EXPECT_EQ(byte(text), "'' is not a non-negative decimal integer");
  const CLI::Validator finite = finite_number();
  for (const char* good : {"1.5", "-2", "1e300", "0x10"}) EXPECT_EQ(finite(std::string(good)), "") << good;
  for (const char* bad : {"nan", "inf", "1e999", "x", "", "1.5s"}) {
    EXPECT_EQ(finite(std::string(bad)), "'" + std::string(bad) + "' is not a finite number") << bad;
  }
}

TEST(CtlValues, TheFieldPathAtTheStartOfAServerMessage) {
  EXPECT_EQ(leading_field_path("bodies[3].radius: must be finite and > 0, got -1"), "bodies[3].radius");
  EXPECT_EQ(leading_field_path("spawn.generators[0].random_box.count: placed only 33 of 5000"),
            "spawn.generators[0].random_box.count");
  EXPECT_EQ(leading_field_path("set_params.params.mutual.theta: must be in (0, 1.5], got 0"),
            "set_params.params.mutual.theta");
  EXPECT_EQ(leading_field_path("id_2: x"), "id_2");
  // Not a path: no "path: " start, or a malformed one.
  for (const char* message : {"viewers are read-only", ": no field", "a[]: x", "[3].x: y", "a[1][2]: z", "a.: z",
                              "a..b: z", "a[1: z", "a b: z", "3a: z", "a[x]: z"})
    EXPECT_EQ(leading_field_path(message), "") << message;
}

}  // namespace
}  // namespace carom::ctl
