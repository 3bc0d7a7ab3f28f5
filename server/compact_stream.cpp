// The compact stream on the server: chains of canonical tracks, shared delta
// frames, key frames made once on first use (see compact_stream.hpp). The
// codec itself is carom/proto/compact.hpp, the same code the clients decode
// with.

#include "compact_stream.hpp"

#include <google/protobuf/io/coded_stream.h>

#include "carom/v1/protocol.pb.h"
#include "snapshot.hpp"

namespace carom::server {

CompactSnapshot::CompactSnapshot(std::string header, std::shared_ptr<const CompactBodies> bodies)
    : header_(std::move(header)), bodies_(std::move(bodies)) {
  if (bodies_->baseline != 0) delta_ = make_frame(false);
}

std::shared_ptr<const std::string> CompactSnapshot::frame_after(std::uint64_t chain, std::uint64_t serial) const {
  if (delta_ && chain == bodies_->chain && serial == bodies_->baseline) return delta_;
  std::call_once(key_once_, [this] { key_ = make_frame(true); });
  return key_;
}

std::shared_ptr<const std::string> CompactSnapshot::make_frame(bool key) const {
  const CompactBodies& b = *bodies_;
  v1::CompactBodies c;
  c.set_position_quantum(b.key.position_quantum);
  if (b.key.velocities) c.set_velocity_quantum(b.key.velocity_quantum);
  if (key) {
    proto::encode_track(proto::Channel::kPosition, nullptr, b.positions, c.mutable_positions());
    if (b.key.velocities) proto::encode_track(proto::Channel::kVelocity, nullptr, b.velocities, c.mutable_velocities());
  } else {
    c.set_baseline_tick(b.baseline_tick);
    c.set_positions(b.delta_positions);
    if (b.key.velocities) c.set_velocities(b.delta_velocities);
  }
  // ServerMessage{snapshot (2) = header + compact (17)}, delimited: a
  // message's serialization is the concatenation of its fields.
  using google::protobuf::io::CodedOutputStream;
  std::string compact;
  c.SerializeToString(&compact);
  std::string snapshot = header_;
  {
    const std::uint32_t tag = (17u << 3) | 2u;
    std::string field;
    field.resize(CodedOutputStream::VarintSize32(tag) + CodedOutputStream::VarintSize64(compact.size()));
    auto* p = reinterpret_cast<std::uint8_t*>(field.data());
    p = CodedOutputStream::WriteVarint32ToArray(tag, p);
    CodedOutputStream::WriteVarint64ToArray(compact.size(), p);
    snapshot += field;
    snapshot += compact;
  }
  const std::uint32_t snapshot_tag = (2u << 3) | 2u;
  const std::size_t message = CodedOutputStream::VarintSize32(snapshot_tag) +
                              CodedOutputStream::VarintSize64(snapshot.size()) + snapshot.size();
  auto frame = std::make_shared<std::string>();
  frame->resize(CodedOutputStream::VarintSize64(message) + message - snapshot.size());
  auto* p = reinterpret_cast<std::uint8_t*>(frame->data());
  p = CodedOutputStream::WriteVarint64ToArray(message, p);
  p = CodedOutputStream::WriteVarint32ToArray(snapshot_tag, p);
  CodedOutputStream::WriteVarint64ToArray(snapshot.size(), p);
  *frame += snapshot;
  return frame;
}

std::shared_ptr<const CompactBodies> CompactChains::advance(const CompactKey& key, const SnapshotCapture& c) {
  Chain* chain = nullptr;
  for (Chain& ch : chains_)
    if (ch.key == key) chain = &ch;
  if (chain == nullptr) {
    chains_.push_back(Chain{key, next_chain_++, nullptr, 0});
    chain = &chains_.back();
  }
  if (chain->advanced_at == generation_ && chain->last) return chain->last;
  const CompactBodies* previous = chain->last.get();
  auto next = std::make_shared<CompactBodies>();
  next->chain = chain->id;
  next->serial = previous ? previous->serial + 1 : 1;
  next->key = key;
  const std::size_t n = c.id.size();
  qx_.resize(n);
  qy_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    qx_[i] = proto::quantize(c.x[i], key.position_quantum);
    qy_[i] = proto::quantize(c.y[i], key.position_quantum);
  }
  proto::advance_track(proto::Channel::kPosition, previous ? &previous->positions : nullptr, c.id, qx_, qy_,
                       &next->positions);
  if (key.velocities) {
    for (std::size_t i = 0; i < n; ++i) {
      qx_[i] = proto::quantize(c.vx[i], key.velocity_quantum);
      qy_[i] = proto::quantize(c.vy[i], key.velocity_quantum);
    }
    proto::advance_track(proto::Channel::kVelocity, previous ? &previous->velocities : nullptr, c.id, qx_, qy_,
                         &next->velocities);
  }
  if (previous) {
    next->baseline = previous->serial;
    next->baseline_tick = previous->tick;
    proto::encode_track(proto::Channel::kPosition, &previous->positions, next->positions, &next->delta_positions);
    if (key.velocities)
      proto::encode_track(proto::Channel::kVelocity, &previous->velocities, next->velocities, &next->delta_velocities);
  }
  next->tick = c.tick;
  chain->last = std::move(next);
  chain->advanced_at = generation_;
  return chain->last;
}

void CompactChains::end_tick() {
  std::erase_if(chains_, [this](const Chain& ch) { return generation_ - ch.advanced_at > kIdleTicks; });
  ++generation_;
}

}  // namespace carom::server
