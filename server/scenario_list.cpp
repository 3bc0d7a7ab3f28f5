// ScenarioCatalog: reads the scenario directory's entries (names, sizes,
// modification times), parses the NAME.txtpb files it has not seen in that
// state, and writes a ScenarioList sorted by name. Runs on a network
// thread, never the simulation's: reading files there would delay ticks.

#include "scenario_list.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <vector>

#include "carom/proto/text.hpp"
#include "generators.hpp"

namespace carom::server {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".txtpb";

// The description's first line: a picker shows one line a scenario.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

v1::ScenarioInfo describe(const std::string& name, const std::string& path) {
  v1::ScenarioInfo info;
  info.set_name(name);
  v1::Scenario scenario;
  std::string error;
  if (!proto::parse_text_file(path, &scenario, &error)) {
    info.set_error(error);
    return info;
  }
  info.set_description(first_line(scenario.description()));
  std::uint64_t bodies = static_cast<std::uint64_t>(scenario.bodies_size());
  // Saturating: generators of a file that would never load may ask for more
  // than 2^64 between them.
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (const v1::Generator& g : scenario.generators()) {
    const std::uint64_t n = generator_count(g);
    bodies = n > kMax - bodies ? kMax : bodies + n;
  }
  info.set_bodies(bodies);
  return info;
}

}  // namespace

bool valid_scenario_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxScenarioName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

v1::ErrorCode ScenarioCatalog::list(v1::ScenarioList* out, std::string* message) {
  out->Clear();
  if (dir_.empty()) {
    *message = "the server has no scenario directory (--scenario-dir)";
    return v1::NOT_FOUND;
  }
  struct Found {
    std::string name;
    fs::path path;
    std::uintmax_t size;
    std::int64_t mtime_ns;
  };
  std::vector<Found> found;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  if (ec) {
    *message = "cannot read the scenario directory " + dir_ + ": " + ec.message();
    return v1::NOT_FOUND;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& path = it->path();
    const std::string file = path.filename().string();
    if (file.size() <= kSuffix.size() || !file.ends_with(kSuffix)) continue;
    std::string name = file.substr(0, file.size() - kSuffix.size());
    std::error_code entry_ec;
    // The same test LoadScenario makes: a name it would refuse is not listed.
    if (!valid_scenario_name(name) || !fs::is_regular_file(path, entry_ec)) continue;
    const std::uintmax_t size = fs::file_size(path, entry_ec);
    const auto mtime = fs::last_write_time(path, entry_ec);
    if (entry_ec) continue;
    found.push_back({std::move(name), path, size,
                     static_cast<std::int64_t>(
                         std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count())});
  }
  if (ec) {
    *message = "cannot read the scenario directory " + dir_ + ": " + ec.message();
    return v1::NOT_FOUND;
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.name < b.name; });
  if (found.size() > kMaxListedScenarios) {
    found.resize(kMaxListedScenarios);
    out->set_truncated(true);
  }

  const std::lock_guard lock(mutex_);
  std::map<std::string, Entry> kept;
  for (Found& f : found) {
    auto old = cache_.find(f.name);
    Entry entry;
    if (old != cache_.end() && old->second.size == f.size && old->second.mtime_ns == f.mtime_ns) {
      entry = std::move(old->second);
    } else {
      entry.size = f.size;
      entry.mtime_ns = f.mtime_ns;
      entry.info = describe(f.name, f.path.string());
    }
    *out->add_scenarios() = entry.info;
    kept.emplace(std::move(f.name), std::move(entry));
  }
  cache_ = std::move(kept);  // files gone from the directory leave the cache
  return v1::OK;
}

}  // namespace carom::server
