#pragma once
/// \file carom-bench --net: the real server (in process, real loopback TCP)
/// with many viewers, measuring tick times with and without them and the
/// latency from the end of a tick to its snapshot's arrival.

#include <string>

#include "bench/scenes.hpp"

namespace carom::bench {

struct NetBenchOptions {
  SceneSpec scene;          ///< the world (its bodies are spawned over the protocol)
  int viewers = 32;
  double seconds = 60.0;    ///< per phase (no viewers, then viewers)
  double tick_hz = 60.0;
  int threads = 0;          ///< simulation threads
  bool body_tables = true;  ///< viewers ask for body tables (as carom-view does)
  bool json = false;
};

/// Runs both phases and prints the figures. Returns the exit status.
int run_net_bench(const NetBenchOptions& options);

}  // namespace carom::bench
