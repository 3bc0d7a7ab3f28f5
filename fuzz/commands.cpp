// fuzz_commands: sequences of control commands applied to a SimState, as the
// server's tick loop applies them (every Command kind: spawn and generators,
// remove, set_body, apply_impulse, set_params, pause/resume/step, reset,
// scenarios by name and inline with their scripts, save/get/load_world,
// stats), with ticks in between.
//
// Input: protobuf-delimited v1::Command messages (the server's framing);
// after each, request_id % kMaxTicksPerCommand ticks of the loop run (at
// most kMaxTicksPerInput in all).
// Checks:
// - a refused command leaves the state byte-identical (saved world, tick,
//   paused, tick rate), reports no payload, names what is wrong, and does
//   not count as an edit;
// - every command is answered at once except an accepted step;
// - after the sequence the world saves, loads back with the same bytes and
//   hash, and continues with the same hash.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"
#include "fuzz_support.hpp"
#include "sim_state.hpp"

using carom::fuzz::state_of;
using carom::server::SimState;

namespace {

void tick(SimState& sim) {
  sim.run_script();
  if (sim.should_step()) sim.step();
  (void)sim.take_finished_step();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  carom::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  SimState sim(carom::fuzz::sim_options(CAROM_SCENARIO_DIR));
  int ticks = carom::fuzz::kMaxTicksPerInput;
  std::string before;
  for (int k = 0; k < carom::fuzz::kMaxCommandsPerInput && !rest.empty(); ++k) {
    std::uint64_t length = 0;
    const int prefix = carom::proto::read_length_prefix(rest, &length);
    if (prefix <= 0 || length > rest.size() - static_cast<std::size_t>(prefix)) break;
    const std::string_view bytes = rest.substr(static_cast<std::size_t>(prefix), static_cast<std::size_t>(length));
    rest.remove_prefix(static_cast<std::size_t>(prefix) + bytes.size());
    carom::v1::Command command;
    if (!command.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) continue;

    state_of(sim, &before);
    (void)sim.take_edited();
    carom::v1::CommandResult result;
    const bool answered = sim.apply(command, &result);
    CAROM_FUZZ_CHECK(result.request_id() == command.request_id(), "the result has another request id");
    if (result.code() != carom::v1::OK) {
      CAROM_FUZZ_CHECK(answered, "a refused command was not answered");
      CAROM_FUZZ_CHECK(!result.message().empty(), "a refused command without a message");
      CAROM_FUZZ_CHECK(result.field().empty() || result.message().rfind(result.field() + ": ", 0) == 0,
                       "a message that does not start with its field " + result.field() + ": " + result.message());
      CAROM_FUZZ_CHECK(result.payload_case() == carom::v1::CommandResult::PAYLOAD_NOT_SET,
                       "a refused command with a payload: " + result.message());
      CAROM_FUZZ_CHECK(state_of(sim) == before, "a refused command changed the state: " +
                                                    command.ShortDebugString().substr(0, 2000) + " -> " +
                                                    result.message());
      CAROM_FUZZ_CHECK(!sim.take_edited(), "a refused command counted as an edit: " + result.message());
    } else {
      CAROM_FUZZ_CHECK(answered || command.kind_case() == carom::v1::Command::kStep,
                       "an accepted command other than step was not answered");
    }
    for (std::uint64_t t = command.request_id() % carom::fuzz::kMaxTicksPerCommand; t > 0 && ticks > 0; --t, --ticks)
      tick(sim);
  }

  carom::v1::SavedWorld saved;
  sim.save(&saved);
  carom::v1::SavedWorld parsed;
  CAROM_FUZZ_CHECK(parsed.ParseFromString(saved.SerializeAsString()), "saved bytes do not parse");
  SimState restarted(carom::fuzz::sim_options());
  const carom::Status st = restarted.load_saved(parsed);
  CAROM_FUZZ_CHECK(st.ok(), "the world after the commands does not load: " + st.message());
  CAROM_FUZZ_CHECK(restarted.world().state_hash() == sim.world().state_hash(), "the reloaded world has another hash");
  CAROM_FUZZ_CHECK(state_of(restarted) == state_of(sim), "the reloaded world saves other bytes: " + carom::fuzz::difference(sim, restarted));
  sim.step();
  restarted.step();
  CAROM_FUZZ_CHECK(restarted.world().state_hash() == sim.world().state_hash(),
                   "the reloaded world continues differently");
  return 0;
}
