#pragma once
/// \file Relay: carom-relay as an object. Upstream it is one viewer of a
/// carom-server (or of another relay); downstream it is the server's own
/// network half — Listener, Session, Hub and SnapshotEncoder from
/// carom_server_net — fed by the upstream stream instead of a World
/// (shared/design.md: "a relay is a viewer upstream and a hub downstream").
/// main() and the tests both use it.

#include <cstdint>
#include <memory>
#include <string>

#include "carom/client/connection.hpp"
#include "carom/status.hpp"
#include "options.hpp"

namespace carom::relay {

struct RelayOptions {
  /// The downstream side: bind, port, token (viewers present it for
  /// control), insecure, max_clients, frame limit and timeouts, as for
  /// carom-server. The world's options (tick rate, scenario...) are unused.
  server::ServerOptions serve;
  client::Address upstream;    ///< the server or relay this one views
  std::string upstream_token;  ///< presented upstream; "" = no control is forwarded
  /// Reconnection backoff: the first wait after the upstream is lost and the
  /// most it grows to (doubling), seconds.
  double reconnect_min_s = 0.1, reconnect_max_s = 5.0;
};

class Relay {
 public:
  explicit Relay(RelayOptions options);
  ~Relay();  ///< stops (with Goodbye) if still running
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  /// Binds and starts the network threads and the upstream thread (which
  /// connects, and keeps reconnecting, on its own: an upstream that is not
  /// there yet is no error). On failure nothing is left running. Call once.
  Status start();
  /// The port actually bound (useful with port 0). After start().
  std::uint16_t port() const;
  /// Bytes received from the upstream so far, over every connection to it
  /// (what the upstream sent this relay). Any thread.
  std::uint64_t upstream_bytes() const;
  /// Goodbye to every viewer, then joins every thread. Thread-safe and
  /// idempotent; blocks until done.
  void stop(const std::string& reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace carom::relay
