// carom-ctl: script a running carom-server from the shell. One subcommand per
// protocol command; see cli.hpp for the command line, commands.hpp for what
// each does, and `carom-ctl COMMAND --help` for its options.
//
// Exit status: 0 done, 1 the server refused the command (or a local file was
// unreadable), 2 bad command line or no connection.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli.hpp"
#include "values.hpp"

int main(int argc, char** argv) {
  carom::ctl::CommandLine command_line;
  try {
    command_line.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return command_line.exit(e);
  }
  try {
    return command_line.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "carom-ctl: %s\n", e.what());
    return carom::ctl::kExitCommandError;
  }
}
