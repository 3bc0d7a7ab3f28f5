// carom-relay: parses the command line (carom-server's, where it applies),
// starts a Relay, waits for SIGINT or SIGTERM, then says Goodbye to every
// viewer and exits cleanly.

#include <csignal>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "program.hpp"
#include "relay.hpp"

int main(int argc, char** argv) {
  carom::relay::RelayOptions r;
  carom::server::ServerOptions& o = r.serve;
  o.port = 7879;  // next to a carom-server on its default 7878
  std::string upstream, port_file;
  CLI::App app{"carom-relay: serves one carom-server's (or relay's) stream to many viewers (protocol v1)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--upstream", upstream, "The server or relay to view, HOST:PORT")->required();
  app.add_option("--bind", o.bind, "Address to listen on (non-loopback needs --token or --insecure)");
  app.add_option("--port", o.port, "TCP port (0 = any free port; see --port-file)");
  app.add_option("--port-file", port_file, "Write the bound port to this file once listening");
  app.add_option("--token", o.token,
                 "Token this relay's controllers must present; control is forwarded only with it and "
                 "--upstream-token")
      ->envname("CAROM_RELAY_TOKEN");
  app.add_option("--upstream-token", r.upstream_token, "Token presented upstream, to forward control")
      ->envname("CAROM_TOKEN");
  app.add_flag("--insecure", o.insecure, "Allow a non-loopback --bind without a token");
  app.add_option("--io-threads", o.io_threads, "Network threads")->check(CLI::Range(1, 64));
  app.add_option("--max-clients", o.max_clients, "Most simultaneous connections")->check(CLI::Range(1u, 100000u));
  app.add_option("--max-frame-bytes", o.max_frame, "Largest client-to-relay frame")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 30));
  app.add_option("--handshake-timeout", o.handshake_timeout_s, "Seconds a client has to send Hello")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--stall-timeout", o.stall_timeout_s,
                 "Seconds a client may leave a write unfinished before it is disconnected (0 = never)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--reconnect-max", r.reconnect_max_s, "Longest wait between attempts to reach the upstream, s")
      ->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);
  std::string error;
  if (!carom::client::parse_address(upstream, &r.upstream, &error)) {
    std::cerr << "--upstream: " << error << "\n";
    return 2;
  }
  if (o.token.empty() || r.upstream_token.empty()) {
    o.control_refused = o.token.empty()
                            ? "this relay forwards no control: it was started without --token"
                            : "this relay forwards no control: it was started without --upstream-token";
  }

  carom::server::use_stderr_logger("carom-relay");
  carom::server::StopSignals stop;  // before the relay starts: see program.hpp

  carom::relay::Relay relay(r);
  if (carom::Status s = relay.start(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  spdlog::info("carom-relay {} listening on {}:{}, upstream {}:{} (control: {})", CAROM_VERSION, o.bind, relay.port(),
               r.upstream.host, r.upstream.port, o.control_refused.empty() ? "forwarded, token required" : "refused");
  carom::server::write_port_file(port_file, relay.port());
  const int signal = stop.wait();
  spdlog::info("{}: shutting down", carom::server::StopSignals::name(signal));
  relay.stop(signal == SIGINT ? "relay interrupted (SIGINT)" : "relay terminated (SIGTERM)");
  spdlog::info("bye");
  return 0;
}
