// Loading and saving the server's world file. Reads: the --state file and the
// --scenario text. Writes: the state file (through a temporary renamed over
// it, so a reader sees the old file or the new one).

#include "state_file.hpp"

#include <chrono>
#include <filesystem>
#include <spdlog/spdlog.h>
#include <system_error>

#include "carom/proto/framing.hpp"
#include "carom/proto/text.hpp"

namespace carom::server {

namespace {

SimOptions sim_options(const ServerOptions& options) {
  SimOptions so;
  so.config.max_bodies = options.max_bodies;
  so.config.threads = options.threads;
  so.config.adapt_threads = !options.fixed_threads;
  so.tick_hz = options.tick_hz;
  so.scenario_dir = options.scenario_dir;
  return so;
}

Status load_state_file(const std::string& path, SimState& sim) {
  std::string bytes;
  v1::SavedWorld saved;
  if (!proto::read_file(path, &bytes)) return {StatusCode::kInvalidArgument, path + ": cannot read"};
  if (!saved.ParseFromString(bytes)) {
    return {StatusCode::kInvalidArgument, path + ": not a carom SavedWorld file"};
  }
  if (Status s = sim.load_saved(saved); !s.ok()) return {s.code(), path + ": " + s.message()};
  spdlog::info("loaded {} ({} bodies, state hash {:016x})", path, sim.world().size(), sim.world().state_hash());
  return {};
}

}  // namespace

Status load_initial_world(const ServerOptions& options, std::unique_ptr<SimState>* sim) {
  *sim = std::make_unique<SimState>(sim_options(options));
  if (!options.state.empty()) {
    if (const int n = proto::remove_stale_temporaries(options.state); n > 0)
      spdlog::info("removed {} temporary file(s) of {} left by an interrupted save", n, options.state);
  }
  if (!options.state.empty() && std::filesystem::exists(options.state)) {
    Status st = load_state_file(options.state, **sim);
    if (st.ok()) return {};
    if (!options.state_on_error_empty) return st;
    // The operator chose to start anyway: the file is kept, renamed aside,
    // never overwritten by the next save.
    const std::string aside =
        options.state + ".failed-" +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
    std::error_code ec;
    std::filesystem::rename(options.state, aside, ec);
    if (ec) return {StatusCode::kInvalidArgument, st.message() + "; and it cannot be renamed aside: " + ec.message()};
    spdlog::error("{}; kept as {}; starting without it (--state-on-error empty)", st.message(), aside);
    *sim = std::make_unique<SimState>(sim_options(options));
  }
  if (!options.scenario.empty()) {
    v1::Scenario scenario;
    proto::TextLocations where;
    std::string error;
    if (!proto::parse_text_file(options.scenario, &scenario, &error, &where)) {
      return {StatusCode::kInvalidArgument, error};
    }
    if (Status s = (*sim)->load_scenario(scenario, options.scenario, &where); !s.ok()) return s;
  }
  return {};
}

Status save_state_file(const SimState& sim, const std::string& path) {
  v1::SavedWorld saved;
  sim.save(&saved);
  std::string bytes;
  if (!saved.SerializeToString(&bytes)) return {StatusCode::kInvalidArgument, path + ": cannot serialize the world"};
  std::string error;
  if (!proto::write_file_atomically(path, bytes, &error)) return {StatusCode::kInvalidArgument, error};
  return {};
}

}  // namespace carom::server
