#pragma once
/// \file carom-bench --net: the real server (in process, real loopback TCP)
/// with many viewers (TCP, or with --websocket the web page's WebSocket),
/// measuring tick times with and without them, the latency from the end of a
/// tick to its snapshot's arrival, and what the stream costs: bytes per body
/// per snapshot as received, the server's egress.

#include <cstdint>
#include <string>

#include "bench/scenes.hpp"

namespace carom::bench {

struct NetBenchOptions {
  SceneSpec scene;          ///< the world (its bodies are spawned over the protocol)
  int viewers = 32;
  double seconds = 60.0;    ///< per phase (no viewers, then viewers)
  double tick_hz = 60.0;
  int threads = 0;          ///< simulation threads
  bool fixed_threads = false;  ///< every step on them (the server's --fixed-threads)
  bool body_tables = true;  ///< viewers ask for body tables (as carom-view does)
  bool compact = true;      ///< viewers ask for the compact stream (false: --plain)
  bool velocities = false;  ///< viewers ask for velocities
  bool events = false;      ///< viewers ask for collision events (as carom-view does)
  std::uint64_t settle = 0; ///< steps the world takes (paused, as fast as it can) before measuring
  int relays = 0;           ///< viewers spread over this many relays, each a viewer of the server (0: none)
  bool websocket = false;   ///< viewers open the server's WebSocket (/ws on an HTTP port) instead of TCP
  bool json = false;
};

/// Runs both phases and prints the figures. Returns the exit status.
int run_net_bench(const NetBenchOptions& options);

}  // namespace carom::bench
