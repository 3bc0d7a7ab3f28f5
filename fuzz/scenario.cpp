// fuzz_scenario: the scenario text parser (proto::parse_text with line
// locations) and SimState::load_scenario, as carom-server runs them for
// --scenario and LoadScenario{name}.
//
// Input: the text of a .txtpb scenario file.
// Checks:
// - a parse error names the file ("fuzz.txtpb:LINE:COLUMN: ...");
// - a refused scenario names the file and leaves the state as it was;
// - a loaded scenario runs its tick-0 script and one tick, and then saves a
//   world that loads back with the same bytes and the same hash.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "carom/proto/text.hpp"
#include "carom/v1/protocol.pb.h"
#include "fuzz_support.hpp"
#include "sim_state.hpp"

using carom::fuzz::state_of;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  carom::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  carom::v1::Scenario scenario;
  carom::proto::TextLocations where;
  std::string error;
  if (!carom::proto::parse_text(text, "fuzz.txtpb", &scenario, &error, &where)) {
    CAROM_FUZZ_CHECK(error.rfind("fuzz.txtpb:", 0) == 0, "parse error without the file name: " + error);
    return 0;
  }

  carom::server::SimState sim(carom::fuzz::sim_options(CAROM_SCENARIO_DIR));
  const std::string before = state_of(sim);
  const carom::Status st = sim.load_scenario(scenario, "fuzz.txtpb", &where);
  if (!st.ok()) {
    CAROM_FUZZ_CHECK(st.message().rfind("fuzz.txtpb", 0) == 0, "error without the file name: " + st.message());
    CAROM_FUZZ_CHECK(state_of(sim) == before, "a refused scenario changed the state: " + st.message());
    return 0;
  }

  // The loop's first tick: the commands due at tick 0, then a step.
  sim.run_script();
  if (sim.should_step()) sim.step();
  (void)sim.take_finished_step();

  carom::v1::SavedWorld saved;
  sim.save(&saved);
  carom::server::SimState back(carom::fuzz::sim_options());
  const carom::Status loaded = back.load_saved(saved);
  CAROM_FUZZ_CHECK(loaded.ok(), "a scenario's world does not load: " + loaded.message());
  CAROM_FUZZ_CHECK(back.world().state_hash() == sim.world().state_hash(), "a scenario's world loads another hash");
  CAROM_FUZZ_CHECK(state_of(back) == state_of(sim), "a scenario's world loads other bytes: " + carom::fuzz::difference(sim, back));
  return 0;
}
