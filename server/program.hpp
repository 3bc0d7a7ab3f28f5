#pragma once
// What carom-server's and carom-relay's main() share: the stderr logger, the
// port files, and the wait for SIGINT or SIGTERM.

#include <cstdint>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

namespace carom::server {

/// Logs to stderr as `name`, with the house pattern (ISO time, level).
void use_stderr_logger(const std::string& name);

/// Writes `port` to `file` through a temporary and a rename, so a reader
/// never sees half a number; nothing when `file` is empty.
void write_port_file(const std::string& file, std::uint16_t port);

/// SIGINT and SIGTERM, caught from construction on (before the server starts,
/// so a signal during start-up is not lost); SIGPIPE ignored. main stops on
/// an Asio signal_set (shared/design.md); unlike the notes (and Beast's
/// example), this io_context serves only the signals and runs on main's
/// thread, which does nothing else: the network's io_context and threads are
/// the Server's (or Relay's), because the integration tests and carom-bench
/// run them without a main, and because stop() must order them after the
/// tick, the last snapshot and the Goodbyes.
class StopSignals {
 public:
  StopSignals();
  /// Blocks until SIGINT or SIGTERM; returns it.
  int wait();
  /// "SIGINT" or "SIGTERM".
  static const char* name(int signal);

 private:
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  int signal_ = 0;
};

}  // namespace carom::server
