// Snapshot encoding. Reads the World's SoA view (sorted by id) on the
// simulation thread; writes one ServerMessage frame per wanted variant. Packed
// repeated fields are filled through their raw arrays, so a 100k-body
// snapshot is a few linear passes.

#include "snapshot.hpp"

#include <time.h>

#include "carom/proto/framing.hpp"

namespace carom::server {

int snapshot_variant(const v1::SnapshotWishes& wishes) {
  return (wishes.velocities() ? 1 : 0) | (wishes.events() ? 2 : 0) | (wishes.omit_bodies() ? 4 : 0);
}

namespace {

template <typename T, typename U>
void fill(google::protobuf::RepeatedField<T>* field, std::span<const U> values) {
  field->Resize(static_cast<int>(values.size()), T{});
  T* out = field->mutable_data();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

}  // namespace

void encode_snapshots(const SimState& sim, const SnapshotExtras& extras, unsigned needed, SnapshotFrames* out) {
  out->tick = sim.tick();
  out->frames.fill(nullptr);
  if (needed == 0) return;
  const World& world = sim.world();
  const BodiesView bodies = world.bodies();
  const Params& params = world.params();
  for (int variant = 0; variant < kSnapshotVariants; ++variant) {
    if ((needed & (1u << variant)) == 0) continue;
    const bool velocities = (variant & 1) != 0, events = (variant & 2) != 0, omit = (variant & 4) != 0;
    v1::ServerMessage message;
    v1::Snapshot& s = *message.mutable_snapshot();
    s.set_tick(sim.tick());
    s.set_time(world.stats().time);
    s.set_server_time_ns(extras.server_time_ns);
    s.set_state_hash(world.state_hash());
    s.set_paused(sim.paused());
    v1::Bounds& b = *s.mutable_bounds();
    b.set_walled(params.bounds.walled);
    b.mutable_min()->set_x(params.bounds.min.x);
    b.mutable_min()->set_y(params.bounds.min.y);
    b.mutable_max()->set_x(params.bounds.max.x);
    b.mutable_max()->set_y(params.bounds.max.y);
    if (extras.stats != nullptr) *s.mutable_stats() = *extras.stats;
    if (!omit) {
      fill(s.mutable_id(), bodies.id);
      fill(s.mutable_x(), bodies.x);
      fill(s.mutable_y(), bodies.y);
      fill(s.mutable_radius(), bodies.radius);
      if (velocities) {
        fill(s.mutable_vx(), bodies.vx);
        fill(s.mutable_vy(), bodies.vy);
      }
    }
    if (events && extras.events != nullptr) {
      s.mutable_events()->Reserve(static_cast<int>(extras.events->size()));
      for (const auto& e : *extras.events) *s.add_events() = e;
      s.set_events_dropped(extras.events_dropped);
    }
    out->frames[static_cast<std::size_t>(variant)] = std::make_shared<const std::string>(proto::encode_frame(message));
  }
}

}  // namespace carom::server
