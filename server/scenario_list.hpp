#pragma once
/// \file The scenarios a server can load by name (LoadScenario.name): the
/// NAME.txtpb files of its scenario directory, listed for ListScenarios.

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <mutex>
#include <string>

#include "carom/v1/protocol.pb.h"

namespace carom::server {

/// Longest LoadScenario.name accepted (characters).
inline constexpr std::size_t kMaxScenarioName = 128;
/// Most scenarios one ListScenarios answer names (the first by name).
inline constexpr std::size_t kMaxListedScenarios = 1024;

/// True for a name LoadScenario accepts: [A-Za-z0-9_-]+, at most
/// kMaxScenarioName characters (so it never leaves the directory).
bool valid_scenario_name(const std::string& name);

/// The listing of one scenario directory. Files are parsed again only when
/// their size or modification time changed, so a client that asks often
/// costs a directory read. Thread-safe (any thread; calls are serialized).
class ScenarioCatalog {
 public:
  /// `dir` = "" : the server has no scenario directory.
  explicit ScenarioCatalog(std::string dir) : dir_(std::move(dir)) {}

  /// Fills *out with the loadable names, sorted, and returns OK; or
  /// NOT_FOUND with *message saying why nothing can be listed (no directory
  /// configured, or it cannot be read).
  v1::ErrorCode list(v1::ScenarioList* out, std::string* message);

 private:
  struct Entry {
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    v1::ScenarioInfo info;
  };
  std::string dir_;
  std::mutex mutex_;
  std::map<std::string, Entry> cache_;  // by name
};

}  // namespace carom::server
