// carom-server: parses the command line, starts a Server, waits for SIGINT or
// SIGTERM, then says Goodbye to every client and exits cleanly.

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "carom/params.hpp"
#include "program.hpp"
#include "server.hpp"
#include "sim_state.hpp"

int main(int argc, char** argv) {
  carom::server::ServerOptions o;
  std::string port_file, http_port_file;
  CLI::App app{"carom-server: one authoritative circle-collision world over TCP (protocol v1)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--bind", o.bind, "Address to listen on (non-loopback needs --token or --insecure)");
  app.add_option("--port", o.port, "TCP port (0 = any free port; see --port-file)");
  app.add_option("--port-file", port_file, "Write the bound port to this file once listening");
  app.add_option("--http-port", o.http_port,
                 "HTTP and WebSocket port: the web viewer at /, the protocol at /ws (-1 = off, 0 = any free port)")
      ->check(CLI::Range(-1, 65535));
  app.add_option("--http-port-file", http_port_file, "Write the bound HTTP port to this file once listening");
  app.add_option("--web-root", o.web_root,
                 "Directory of the web viewer's files served at / (default: the build's web/ folder when it exists)");
  app.add_option("--allow-origin", o.allowed_origins,
                 "Origin (scheme://host[:port]) whose pages may open /ws besides this server's own; repeatable; "
                 "* = any");
  app.add_option("--tick-hz", o.tick_hz, "Simulation ticks per second")
      ->check(CLI::Range(carom::server::kMinTickHz, carom::server::kMaxTickHz));
  app.add_option("--threads", o.threads, "Simulation threads (0 = all cores)")->check(CLI::Range(0, 1024));
  app.add_flag("--fixed-threads", o.fixed_threads,
               "Every step on --threads, even where the world measures one thread faster");
  app.add_option("--io-threads", o.io_threads, "Network threads")->check(CLI::Range(1, 64));
  app.add_option("--scenario", o.scenario, "Scenario (.txtpb) to load at start");
  app.add_option("--scenario-dir", o.scenario_dir, "Directory searched by LoadScenario{name} and listed by ListScenarios");
  app.add_option("--token", o.token, "Token controllers must present")->envname("CAROM_TOKEN");
  app.add_flag("--insecure", o.insecure, "Allow a non-loopback --bind without a token");
  app.add_option("--max-bodies", o.max_bodies, "Most bodies the world may hold")
      ->capture_default_str()
      ->check(CLI::Range(1u, carom::kMaxBodies));
  app.add_option("--max-clients", o.max_clients, "Most simultaneous connections")->check(CLI::Range(1u, 100000u));
  app.add_option("--snapshot-hz", o.snapshot_hz, "Snapshots per second (0 = every tick)")
      ->check(CLI::Range(0.0, carom::server::kMaxTickHz));
  app.add_option("--max-frame-bytes", o.max_frame, "Largest client-to-server frame")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 30));
  app.add_option("--handshake-timeout", o.handshake_timeout_s, "Seconds a client has to send Hello")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--stall-timeout", o.stall_timeout_s,
                 "Seconds a client may leave a write unfinished (stopped reading) before it is disconnected "
                 "(0 = never; below it a stalled viewer skips frames)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--save-on-exit", o.save_on_exit, "Save the world here on SIGINT/SIGTERM");
  app.add_option("--state", o.state, "World file: loaded at start when present, saved on exit (and --save-every)");
  app.add_option("--save-every", o.save_every_s, "Seconds between saves of --state (0 = on exit only)")
      ->check(CLI::Range(0.0, 1e6));
  std::string state_on_error = "fail";
  app.add_option("--state-on-error", state_on_error,
                 "When --state does not load: fail (exit, the file untouched) or empty (rename it aside to "
                 "FILE.failed-TIME, log why, start as if it were not there)")
      ->check(CLI::IsMember({"fail", "empty"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.state_on_error_empty = state_on_error == "empty";
#ifdef CAROM_WEB_ROOT
  if (o.web_root.empty() && std::filesystem::is_directory(CAROM_WEB_ROOT)) o.web_root = CAROM_WEB_ROOT;
#endif
  if (o.scenario_dir.empty() && !o.scenario.empty()) {
    o.scenario_dir = std::filesystem::path(o.scenario).parent_path().string();
  }

  carom::server::use_stderr_logger("carom-server");
  carom::server::StopSignals stop;  // before the server starts: see program.hpp

  carom::server::Server server(o);
  if (carom::Status s = server.start(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  spdlog::info("carom-server {} listening on {}:{} ({} Hz, world: {}, control: {})", CAROM_VERSION, o.bind,
               server.port(), o.tick_hz,
               !o.state.empty() && std::filesystem::exists(o.state) ? o.state
               : o.scenario.empty()                                 ? std::string("empty")
                                                                    : o.scenario,
               o.token.empty() ? "loopback only, no token" : "token required");
  if (server.http_port() != 0) {
    spdlog::info("web viewer: http://{}:{}/ (WebSocket /ws; files: {})",
                 o.bind.find(':') != std::string::npos ? "[" + o.bind + "]" : o.bind, server.http_port(),
                 o.web_root.empty() ? std::string("none, --web-root") : o.web_root);
  }
  carom::server::write_port_file(port_file, server.port());
  carom::server::write_port_file(http_port_file, server.http_port());
  const int signal = stop.wait();
  spdlog::info("{}: shutting down", carom::server::StopSignals::name(signal));
  server.stop(signal == SIGINT ? "server interrupted (SIGINT)" : "server terminated (SIGTERM)");
  spdlog::info("bye");
  return 0;
}
