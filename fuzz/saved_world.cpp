// fuzz_saved_world: a saved world's bytes through the loader carom-server
// uses for --state and LoadWorld (SavedWorld parsing, SimState::load_saved),
// then the promise issue 18 is about: a world that loads steps into worlds
// that load again, bit for bit.
//
// Input: the bytes of a --state file (a serialized v1::SavedWorld).
// Checks, for a world that loads:
// - saved again, it loads back with the same bytes and the same hash;
// - after kSteps ticks it saves a world that loads (a world never leaves the
//   domain its own loader accepts) with the same bytes and hash;
// - the reloaded world and the original continue with the same hash.

#include <cstddef>
#include <cstdint>
#include <string>

#include "carom/v1/world.pb.h"
#include "fuzz_support.hpp"
#include "sim_state.hpp"

namespace {

using carom::fuzz::state_of;
using carom::server::SimState;

constexpr int kSteps = 3;

// Saves `sim`, loads the bytes into a new SimState, checks it is the same.
void check_reloads(const SimState& sim, const char* when, SimState* out) {
  carom::v1::SavedWorld saved;
  sim.save(&saved);
  carom::v1::SavedWorld parsed;
  CAROM_FUZZ_CHECK(parsed.ParseFromString(saved.SerializeAsString()), std::string(when) + ": saved bytes do not parse");
  const carom::Status st = out->load_saved(parsed);
  CAROM_FUZZ_CHECK(st.ok(), std::string(when) + ": the saved world does not load: " + st.message());
  CAROM_FUZZ_CHECK(out->world().state_hash() == sim.world().state_hash(),
                   std::string(when) + ": the reloaded world has another hash");
  CAROM_FUZZ_CHECK(state_of(*out) == state_of(sim), std::string(when) + ": the reloaded world saves other bytes: " + carom::fuzz::difference(sim, *out));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  carom::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  carom::v1::SavedWorld saved;
  if (!saved.ParseFromArray(data, static_cast<int>(size))) return 0;
  SimState sim(carom::fuzz::sim_options());
  const std::string before = state_of(sim);
  if (const carom::Status st = sim.load_saved(saved); !st.ok()) {
    CAROM_FUZZ_CHECK(st.field().rfind("world.", 0) == 0, "error without the field: " + st.message());
    CAROM_FUZZ_CHECK(state_of(sim) == before, "a refused world changed the state: " + st.message());
    return 0;
  }
  {
    SimState again(carom::fuzz::sim_options());
    check_reloads(sim, "after loading", &again);
  }
  for (int k = 0; k < kSteps; ++k) sim.step();
  SimState restarted(carom::fuzz::sim_options());
  check_reloads(sim, "after stepping", &restarted);
  sim.step();
  restarted.step();
  CAROM_FUZZ_CHECK(restarted.world().state_hash() == sim.world().state_hash(),
                   "the reloaded world continues differently");
  return 0;
}
