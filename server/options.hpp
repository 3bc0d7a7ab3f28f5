#pragma once
/// \file What carom-server is told at start-up (command line or tests).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "carom/proto/framing.hpp"

namespace carom::server {

/// --max-bodies when not given (the library's own cap is kMaxBodies, 2^28).
inline constexpr std::uint32_t kDefaultMaxBodies = 1u << 22;

struct ServerOptions {
  std::string bind = "127.0.0.1";      ///< address to listen on
  std::uint16_t port = 7878;           ///< 0 = any free port (see Server::port)
  /// HTTP and WebSocket (the web viewer at /, the protocol at /ws) on this
  /// port of `bind`: -1 = none, 0 = any free port (see Server::http_port).
  int http_port = -1;
  /// The files served at / (the web viewer's build output); "" = none (404).
  std::string web_root;
  /// Origins (scheme://host[:port]) whose pages may open /ws, besides the
  /// server's own; "*" = any. A client that sends no Origin is not a browser
  /// and is not checked.
  std::vector<std::string> allowed_origins;
  double tick_hz = 60.0;               ///< ticks per second (a scenario may change it)
  int threads = 0;                     ///< simulation threads; 0 = all hardware threads
  /// Every step on `threads`, even where the world measures one thread
  /// faster (WorldConfig::adapt_threads off).
  bool fixed_threads = false;
  int io_threads = 2;                  ///< threads running the network
  std::string scenario;                ///< .txtpb loaded at start ("" = empty world)
  std::string scenario_dir;            ///< where LoadScenario{name} looks (and ListScenarios lists)
  /// ListScenarios goes to the command queue like a command (from viewers
  /// too) instead of being answered from scenario_dir: a relay, whose
  /// upstream has the scenarios.
  bool forward_list_scenarios = false;
  std::string token;                   ///< controllers must present it; "" = loopback only
  /// Not empty: every controller Hello is refused (PERMISSION_DENIED) with
  /// this reason, token or not (a relay that cannot forward control).
  std::string control_refused;
  bool insecure = false;               ///< allow a non-loopback bind without a token
  std::uint32_t max_bodies = 1u << 22; ///< spawn beyond this is refused
  std::uint32_t max_clients = 64;      ///< connections beyond this are refused
  double snapshot_hz = 0.0;            ///< 0 = a snapshot every tick
  std::size_t max_frame = proto::kDefaultMaxClientFrame;  ///< client-to-server frame limit, bytes
  double handshake_timeout_s = 5.0;    ///< Hello must arrive within this
  /// A client whose current write has not completed for this long (it stopped
  /// reading, or its link died with data in flight) is disconnected, with the
  /// reason in the log. Below it, a stalled viewer just skips frames
  /// (latest wins). 0 = never.
  double stall_timeout_s = 60.0;
  std::string save_on_exit;            ///< write the world here on SIGINT/SIGTERM
  std::string state;                   ///< load at start when present; save on exit and every save_every_s
  double save_every_s = 0.0;           ///< periodic save of `state` (0 = only on exit)
  /// When `state` exists but does not load: false (fail) refuses to start and
  /// leaves the file as it is; true (empty) renames it aside to
  /// `state.failed-UNIXTIME`, logs why, and starts as if there were none (the
  /// scenario, if any, else an empty world).
  bool state_on_error_empty = false;
};

}  // namespace carom::server
