// carom-ctl's command line (client/ctl/cli.cpp, values.cpp), parsed from
// argv arrays as main does: every value typed by CLI11 and refused with a
// message that names the option and the value; the rules for options that
// need or exclude others; the Command each subcommand builds.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "ctl/cli.hpp"
#include "ctl/output.hpp"
#include "ctl/values.hpp"

namespace carom::ctl {
namespace {

std::vector<const char*> argv_of(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"carom-ctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The message of the CLI::ParseError that `args` (after "carom-ctl") raise,
// or "" when they parse.
std::string parse_error(std::initializer_list<const char*> args) {
  CommandLine command_line;
  const auto argv = argv_of(args);
  try {
    command_line.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// The Command that `args` build; a failure when they do not parse.
v1::Command command_of(std::initializer_list<const char*> args) {
  CommandLine command_line;
  const auto argv = argv_of(args);
  try {
    command_line.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    ADD_FAILURE() << "parse error: " << e.what();
  }
  return command_line.command();
}

// Expects a parse error whose message holds every one of `parts`.
void expect_error(std::initializer_list<const char*> args, std::initializer_list<const char*> parts) {
  const std::string error = parse_error(args);
  std::string line;
  for (const char* a : args) line.append(" ").append(a);
  EXPECT_FALSE(error.empty()) << "accepted:" << line;
  for (const char* part : parts) EXPECT_NE(error.find(part), std::string::npos) << line << " -> " << error;
}

TEST(CtlCommandLine, NumberListsBecomeVectorsAndBodies) {
  const v1::Command c = command_of({"spawn", "--body", "1,2", "--body", "+3,-4.5e2,1,-1,0.7", "--body", "5,6,0,0,1,2"});
  ASSERT_EQ(c.spawn().bodies_size(), 3);
  EXPECT_EQ(c.spawn().bodies(0).position().x(), 1.0);
  EXPECT_EQ(c.spawn().bodies(0).position().y(), 2.0);
  EXPECT_EQ(c.spawn().bodies(0).radius(), kDefaultRadius);
  EXPECT_EQ(c.spawn().bodies(1).position().x(), 3.0);
  EXPECT_EQ(c.spawn().bodies(1).position().y(), -450.0);
  EXPECT_EQ(c.spawn().bodies(1).velocity().y(), -1.0);
  EXPECT_EQ(c.spawn().bodies(1).radius(), 0.7);
  EXPECT_EQ(c.spawn().bodies(2).mass(), 2.0);
  EXPECT_EQ(c.spawn().generators_size(), 0);
  const v1::Command g = command_of({"params", "--gravity", "0,-9.81"});
  EXPECT_EQ(g.set_params().params().gravity().y(), -9.81);
}

TEST(CtlCommandLine, WhatIsNotANumberIsRefusedNamingTheOptionAndTheValue) {
  expect_error({"spawn", "--body", "1,x"}, {"--body", "1,x"});
  expect_error({"params", "--restitution", "abc"}, {"--restitution", "abc"});
  expect_error({"params", "--theta", "1.5.2"}, {"--theta", "1.5.2"});
  expect_error({"set", "3", "--position", "1,y"}, {"--position", "1,y"});
  expect_error({"impulse", "3", "1,nope"}, {"impulse", "1,nope"});
  expect_error({"spawn", "--random-disc", "1,2,3", "--count", "5", "--mass", "heavy"}, {"--mass", "heavy"});
}

TEST(CtlCommandLine, ListsOfTheWrongLengthAreRefused) {
  expect_error({"params", "--gravity", "1"}, {"--gravity", "X,Y"});
  expect_error({"params", "--gravity", "1,2,3"}, {"--gravity", "3"});
  expect_error({"params", "--bounds", "0,0,100"}, {"--bounds", "X0,Y0,X1,Y1"});
  expect_error({"set", "3", "--velocity", "1"}, {"--velocity"});
  expect_error({"impulse", "3", "1"}, {"impulse"});
  expect_error({"spawn", "--random-disc", "1,2", "--count", "5"}, {"--random-disc"});
  expect_error({"spawn", "--random-box", "0,0,1,1", "--count", "5", "--radius", "1,2,3"}, {"--radius"});
  // A body is X,Y / X,Y,VX,VY / ... R / ... M: CLI11 cannot say "not 3".
  expect_error({"spawn", "--body", "1,2,3"}, {"--body", "1,2,3", "expected 2, 4, 5 or 6 numbers, got 3"});
  expect_error({"spawn", "--body", "1"}, {"--body", "got 1"});
  expect_error({"spawn", "--body", "1,2", "--body", "1,2,3,4,5,6,7"}, {"--body", "1,2,3,4,5,6,7", "got 7"});
}

TEST(CtlCommandLine, NanInfinityAndOverflowReachTheServer) {
  // The server is the one validator of a world's values: these are numbers
  // it refuses, naming the field.
  const auto params = command_of({"params", "--restitution", "nan", "--damping", "inf", "--dt", "1e999", "--density",
                                  "-1e999", "--tick-hz", "+0.25"})
                          .set_params()
                          .params();
  EXPECT_TRUE(std::isnan(params.restitution()));
  EXPECT_EQ(params.linear_damping(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(params.dt(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(params.density(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(params.tick_hz(), 0.25);
  EXPECT_TRUE(std::isnan(command_of({"spawn", "--body", "10,nan"}).spawn().bodies(0).position().y()));
  // Out of the server's range is the server's to say too (exit 1).
  EXPECT_EQ(command_of({"params", "--restitution", "2"}).set_params().params().restitution(), 2.0);
}

TEST(CtlCommandLine, IntegersAreDecimalNonNegativeAndFit) {
  const auto box = [](const char* count) {
    return command_of({"spawn", "--random-box", "0,0,9,9", "--count", count}).spawn().generators(0).random_box();
  };
  EXPECT_EQ(box("42").count(), 42u);
  EXPECT_EQ(box("007").count(), 7u);  // decimal, not octal
  EXPECT_EQ(box("4294967295").count(), 4294967295u);
  for (const char* bad : {"-1", "1.5", "0x10", "12a", "1e3", " 3", "+3"}) {
    expect_error({"spawn", "--random-box", "0,0,9,9", "--count", bad},
                 {"--count", "not a non-negative decimal integer"});
  }
  expect_error({"spawn", "--random-box", "0,0,9,9", "--count", "4294967296"},
               {"--count", "'4294967296' is more than 4294967295"});
  EXPECT_EQ(command_of({"spawn", "--random-disc", "0,0,5", "--count", "1", "--seed", "18446744073709551615"})
                .spawn()
                .generators(0)
                .random_disc()
                .seed(),
            std::numeric_limits<std::uint64_t>::max());
  // CLI11 alone reads "-1" into a 64-bit option as 2^64-1, and 2^64 too.
  expect_error({"spawn", "--random-disc", "0,0,5", "--count", "1", "--seed", "-1"}, {"--seed", "'-1'"});
  expect_error({"spawn", "--random-disc", "0,0,5", "--count", "1", "--seed", "18446744073709551616"},
               {"--seed", "is more than 18446744073709551615"});
  expect_error({"step", "-1"}, {"count", "'-1'"});
  expect_error({"step", "18446744073709551616"}, {"count", "18446744073709551616"});
  EXPECT_EQ(command_of({"step", "250"}).step().count(), 250u);
  EXPECT_EQ(command_of({"step"}).step().count(), 1u);
  expect_error({"remove", "3", "-4"}, {"ids", "'-4'"});
  expect_error({"set", "4294967296", "--position", "1,2"}, {"id", "4294967296"});
  expect_error({"params", "--substeps", "1.5"}, {"--substeps", "1.5"});
}

TEST(CtlCommandLine, GeneratorsAndTheOptionsThatGoWithThem) {
  expect_error({"spawn", "--grid", "1,2", "--columns", "3"}, {"--grid requires --rows"});
  expect_error({"spawn", "--body", "1,2", "--columns", "3"}, {"--columns requires --grid"});
  expect_error({"spawn", "--body", "1,2", "--velocity", "1,0"}, {"--velocity requires --grid"});
  expect_error({"spawn", "--grid", "1,2", "--columns", "2", "--rows", "2", "--seed", "3"}, {"excludes", "--seed"});
  expect_error({"spawn", "--random-box", "0,0,9,9", "--count", "1", "--random-disc", "0,0,5"},
               {"--random-box", "excludes", "--random-disc"});
  expect_error({"spawn", "--random-box", "0,0,9,9"}, {"--random-box requires --count"});
  // Options for any one of the three generators (CLI11's needs is all-of).
  expect_error({"spawn", "--body", "1,2", "--mass", "2"}, {"--mass requires a generator"});
  expect_error({"spawn", "--body", "1,2", "--count", "2"}, {"--count requires a generator"});
  expect_error({"spawn", "--body", "1,2", "--radius", "1"}, {"--radius requires a generator"});
  expect_error({"spawn"}, {"--body or a generator"});
  expect_error({"spawn", "--grid", "0,0", "--columns", "2", "--rows", "2", "--radius", "0.3,0.5"},
               {"--radius", "0.3,0.5", "--grid takes one radius"});
}

TEST(CtlCommandLine, GeneratorsGetTheirDefaults) {
  const auto grid =
      command_of({"spawn", "--grid", "5,60", "--columns", "5", "--rows", "4", "--radius", "0.25", "--velocity", "1,0"})
          .spawn()
          .generators(0)
          .grid();
  EXPECT_EQ(grid.origin().x(), 5.0);
  EXPECT_EQ(grid.columns(), 5u);
  EXPECT_EQ(grid.rows(), 4u);
  EXPECT_EQ(grid.radius(), 0.25);
  EXPECT_EQ(grid.spacing(), 2.2 * 0.25);
  EXPECT_EQ(grid.velocity().x(), 1.0);
  EXPECT_EQ(grid.mass(), 0.0);
  const auto disc = command_of({"spawn", "--random-disc", "20,85,8", "--count", "10", "--radius", "0.5"})
                        .spawn()
                        .generators(0)
                        .random_disc();
  EXPECT_EQ(disc.disc_radius(), 8.0);
  EXPECT_EQ(disc.radius().min(), 0.5);
  EXPECT_EQ(disc.radius().max(), 0.5);
  EXPECT_EQ(disc.speed().min(), 0.0);
  EXPECT_EQ(disc.speed().max(), 0.0);
  EXPECT_EQ(disc.seed(), 1u);
  const auto box = command_of({"spawn", "--random-box", "40,40,90,90", "--count", "100", "--radius", "0.3,0.5",
                               "--speed", "0,2", "--seed", "3", "--mass", "2"})
                       .spawn()
                       .generators(0)
                       .random_box();
  EXPECT_EQ(box.max().y(), 90.0);
  EXPECT_EQ(box.radius().min(), 0.3);
  EXPECT_EQ(box.radius().max(), 0.5);
  EXPECT_EQ(box.speed().max(), 2.0);
  EXPECT_EQ(box.seed(), 3u);
  EXPECT_EQ(box.mass(), 2.0);
}

TEST(CtlCommandLine, OptionsThatExcludeOrNeedOthers) {
  expect_error({"params", "--bounds", "0,0,1,1", "--unbounded"}, {"--bounds excludes --unbounded"});
  expect_error({"params", "--gravity-mode", "mutual", "--gravity", "0,1"},
               {"--gravity-mode mutual excludes --gravity"});
  expect_error({"params", "--solver", "euler"}, {"--solver", "euler"});
  expect_error({"params", "--gravity-mode", "sideways"}, {"--gravity-mode", "sideways"});
  expect_error({"get-world", "--text", "--json"}, {"excludes"});
  expect_error({"remove"}, {"ids", "--all"});
  expect_error({"remove", "1", "--all"}, {"ids", "--all"});
  expect_error({"set", "3"}, {"--position or --velocity is required"});
  expect_error({"impulse", "3"}, {"impulse is required"});
  expect_error({}, {"subcommand"});
}

TEST(CtlCommandLine, ParamsBuildsOnlyWhatIsGiven) {
  EXPECT_EQ(command_of({"params"}).set_params().params().ByteSizeLong(), 0u);  // print them
  EXPECT_EQ(command_of({"params", "--json"}).set_params().params().ByteSizeLong(), 0u);
  const auto zero = command_of({"params", "--restitution", "0"}).set_params().params();
  EXPECT_TRUE(zero.has_restitution());
  EXPECT_FALSE(zero.has_gravity());
  const auto p = command_of({"params", "--solver", "continuous", "--substeps", "4", "--iterations", "8", "--bounds",
                             "0,0,500,300", "--gravity-mode", "mutual", "--G", "2", "--softening", "0.1",
                             "--gravity-method", "tree", "--theta", "0.7"})
                     .set_params()
                     .params();
  EXPECT_EQ(p.solver(), v1::SOLVER_CONTINUOUS);
  EXPECT_EQ(p.substeps(), 4u);
  EXPECT_EQ(p.iterations(), 8u);
  EXPECT_TRUE(p.bounds().walled());
  EXPECT_EQ(p.bounds().max().x(), 500.0);
  EXPECT_TRUE(p.mutual().enabled());
  EXPECT_TRUE(p.has_gravity());  // mutual: the uniform vector zeroed
  EXPECT_EQ(p.gravity().y(), 0.0);
  EXPECT_EQ(p.mutual().g(), 2.0);
  EXPECT_EQ(p.mutual().method(), v1::GRAVITY_TREE);
  EXPECT_EQ(p.mutual().theta(), 0.7);
  const auto unbounded = command_of({"params", "--unbounded", "--gravity-mode", "uniform"}).set_params().params();
  EXPECT_TRUE(unbounded.has_bounds());
  EXPECT_FALSE(unbounded.bounds().walled());
  EXPECT_FALSE(unbounded.mutual().enabled());
  EXPECT_TRUE(unbounded.has_mutual());
}

TEST(CtlCommandLine, BodyCommands) {
  const auto set = command_of({"set", "7", "--velocity", "0,1"}).set_body();
  EXPECT_EQ(set.id(), 7u);
  EXPECT_FALSE(set.has_position());
  EXPECT_EQ(set.velocity().y(), 1.0);
  const auto impulse = command_of({"impulse", "9", "-1,0.5"}).apply_impulse();
  EXPECT_EQ(impulse.id(), 9u);
  EXPECT_EQ(impulse.impulse().x(), -1.0);
  EXPECT_EQ(impulse.impulse().y(), 0.5);
  const auto remove = command_of({"remove", "3", "010", "4294967295"}).remove();
  EXPECT_FALSE(remove.all());
  EXPECT_EQ(std::vector<std::uint32_t>(remove.ids().begin(), remove.ids().end()),
            (std::vector<std::uint32_t>{3, 10, 4294967295u}));
  EXPECT_TRUE(command_of({"remove", "--all"}).remove().all());
  EXPECT_EQ(command_of({"ping"}).kind_case(), v1::Command::KIND_NOT_SET);
}

TEST(CtlCommandLine, SecondsThatCaromCtlUsesItselfAreChecked) {
  for (const char* bad : {"nan", "inf", "-inf", "1e999"}) expect_error({"--timeout", bad, "ping"}, {"--timeout", bad});
  expect_error({"--timeout", "0", "ping"}, {"--timeout"});
  expect_error({"--timeout", "2e6", "ping"}, {"--timeout"});
  expect_error({"watch", "--seconds", "nan"}, {"--seconds", "nan"});
  expect_error({"watch", "--seconds", "-1"}, {"--seconds"});
  CommandLine command_line;
  const auto argv = argv_of({"stats", "--timeout", "2.5", "--json"});  // globals after the subcommand
  command_line.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(command_line.globals().timeout_s, 2.5);
  EXPECT_TRUE(command_line.globals().json);
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

// `stats` prints the world's last step: its time and threads, or that there
// was none yet (a world not stepped since the server started names no
// threads, as carom-view's heads-up line and the page).
TEST(CtlOutput, StatsNameTheLastStepsThreadsOrNone) {
  const auto printed = [](const v1::Stats& stats) {
    char* text = nullptr;
    std::size_t size = 0;
    std::FILE* out = open_memstream(&text, &size);
    print_stats(out, stats);
    std::fclose(out);
    std::string s(text, size);
    std::free(text);
    return s;
  };
  v1::Stats stats;
  const std::string none = printed(stats);
  EXPECT_NE(none.find("step          none yet\n"), std::string::npos) << none;
  EXPECT_EQ(none.find(" thread"), std::string::npos) << none;
  stats.set_step_seconds(0.0015);
  stats.set_step_threads(1);
  const std::string one = printed(stats);
  EXPECT_NE(one.find("step          1.500 ms on 1 thread\n"), std::string::npos) << one;
  stats.set_step_threads(2);
  const std::string two = printed(stats);
  EXPECT_NE(two.find("step          1.500 ms on 2 threads\n"), std::string::npos) << two;
}

}  // namespace
}  // namespace carom::ctl
