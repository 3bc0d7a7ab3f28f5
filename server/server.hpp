#pragma once
/// \file Server: carom-server as an object — listener, sessions, the
/// simulation thread and the network threads. main() and the integration
/// tests both use it.

#include <cstdint>
#include <memory>
#include <string>

#include "carom/status.hpp"
#include "options.hpp"

namespace carom::server {

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  ///< stops (with Goodbye) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Loads the state file or scenario, binds, and starts the threads. On
  /// failure nothing is left running and the message says why. Call once.
  Status start();
  /// The port actually bound (useful with port 0). After start().
  std::uint16_t port() const;
  /// The HTTP and WebSocket port actually bound, 0 when there is none
  /// (http_port -1). After start().
  std::uint16_t http_port() const;
  /// Goodbye to every client, stop the tick, save (--save-on-exit, --state),
  /// join every thread. Thread-safe and idempotent; blocks until done.
  void stop(const std::string& reason);
  /// Blocks until stop() has finished (from any thread).
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace carom::server
