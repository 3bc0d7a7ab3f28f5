// Snapshot encoding. capture_snapshot reads the World's SoA view (sorted by
// id) on the simulation thread and copies it, full precision, into reused
// buffers: a few memcpys. Everything else happens on the snapshot thread:
// the state hash over the copy, the body table, and one ServerMessage frame
// per wanted variant. The small fields go through protobuf; the packed body
// arrays (most of the bytes) are written straight into the frame in
// protobuf's wire format, which any protobuf parser reads back as the same
// message (a field may come in any order).

#include "snapshot.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "carom/proto/framing.hpp"

namespace carom::server {

static_assert(std::endian::native == std::endian::little,
              "packed floats are copied as host bytes: protobuf's wire format is little-endian");

int snapshot_variant(const v1::SnapshotWishes& wishes) {
  const bool omit = wishes.omit_bodies();
  const bool compact = wishes.compact() && !omit;
  return (wishes.velocities() ? kVariantVelocities : 0) | (wishes.events() ? kVariantEvents : 0) |
         (omit ? kVariantOmitBodies : 0) | ((wishes.body_tables() || compact) && !omit ? kVariantBodyTables : 0) |
         (compact ? kVariantCompact : 0);
}

StreamKey stream_key(int variant, const CompactKey& compact, const v1::SnapshotWishes& wishes) {
  StreamKey key;
  if ((variant & kVariantCompact) != 0) key.compact = compact;
  if ((variant & kVariantEvents) != 0) {
    key.min_event_speed = wishes.min_event_speed();
    key.max_events = wishes.max_events();
    key.compact_events = (variant & kVariantCompact) != 0 && wishes.compact_events();
    key.event_speeds = wishes.event_speeds();
  }
  return key;
}

double event_speed(const BodiesView& bodies, const CollisionEvent& event) {
  auto mass = [&](BodyId id) {
    const auto it = std::lower_bound(bodies.id.begin(), bodies.id.end(), id);
    return it != bodies.id.end() && *it == id ? bodies.mass[static_cast<std::size_t>(it - bodies.id.begin())] : 0.0;
  };
  const double ma = mass(event.a), mb = mass(event.b);
  if (!(ma > 0.0 && mb > 0.0)) return std::numeric_limits<double>::infinity();
  return std::hypot(event.impulse.x, event.impulse.y) * (1.0 / ma + 1.0 / mb);
}

void SnapshotCapture::absorb(SnapshotCapture& older, std::size_t max_events) {
  if (!older.events.empty()) {
    older.events.insert(older.events.end(), events.begin(), events.end());
    events.swap(older.events);
    older.events.clear();
    if (events.size() > max_events) {
      events_dropped += events.size() - max_events;
      events.resize(max_events);
    }
  }
  events_dropped += older.events_dropped;
  if (!older.after.empty()) {
    older.after.insert(older.after.end(), std::make_move_iterator(after.begin()), std::make_move_iterator(after.end()));
    after.swap(older.after);
    older.after.clear();
  }
  older.timing.append(timing);
  std::swap(timing, older.timing);
}

void capture_snapshot(const SimState& sim, unsigned needed, SnapshotCapture* out) {
  const World& world = sim.world();
  const BodiesView b = world.bodies();
  out->needed = needed;
  out->tick = sim.tick();
  out->time = world.stats().time;
  out->paused = sim.paused();
  out->bounds = world.params().bounds;
  out->id.assign(b.id.begin(), b.id.end());
  out->x.assign(b.x.begin(), b.x.end());
  out->y.assign(b.y.begin(), b.y.end());
  out->vx.assign(b.vx.begin(), b.vx.end());
  out->vy.assign(b.vy.begin(), b.vy.end());
  out->radius.assign(b.radius.begin(), b.radius.end());
  out->mass.assign(b.mass.begin(), b.mass.end());
  out->state_hash.reset();
}

std::uint64_t hash_bodies(const SnapshotCapture& b) {
  return carom::state_hash(BodiesView{b.id, b.x, b.y, b.vx, b.vy, b.radius, b.mass});
}

namespace {

// Protobuf wire format, written with protobuf's own helpers: the packed
// arrays go straight from the capture into the frame.
using google::protobuf::io::CodedOutputStream;
using google::protobuf::internal::WireFormatLite;

std::size_t varint_size(std::uint64_t v) { return CodedOutputStream::VarintSize64(v); }

char* put_varint(char* p, std::uint64_t v) {
  return reinterpret_cast<char*>(CodedOutputStream::WriteVarint64ToArray(v, reinterpret_cast<std::uint8_t*>(p)));
}

std::uint32_t tag(int field) { return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED); }

// A packed field of `payload` bytes (nothing at all when empty, as protobuf does).
std::size_t packed_size(int field, std::size_t payload) {
  return payload == 0 ? 0 : varint_size(tag(field)) + varint_size(payload) + payload;
}

std::size_t ids_payload(std::span<const std::uint32_t> ids) {
  std::size_t n = 0;
  for (std::uint32_t id : ids) n += varint_size(id);
  return n;
}

char* put_ids(char* p, int field, std::span<const std::uint32_t> ids, std::size_t payload) {
  if (payload == 0) return p;
  p = put_varint(p, tag(field));
  p = put_varint(p, payload);
  for (std::uint32_t id : ids) p = put_varint(p, id);
  return p;
}

// Doubles sent as floats: packed fixed32, little-endian.
char* put_floats(char* p, int field, std::span<const double> values) {
  if (values.empty()) return p;
  p = put_varint(p, tag(field));
  p = put_varint(p, 4 * values.size());
  for (double v : values) {
    const float f = static_cast<float>(v);
    std::memcpy(p, &f, sizeof f);
    p += sizeof f;
  }
  return p;
}

}  // namespace

std::shared_ptr<const BodyTableFrame> SnapshotEncoder::table_for(const SnapshotCapture& c) {
  radius_scratch_.resize(c.radius.size());
  std::transform(c.radius.begin(), c.radius.end(), radius_scratch_.begin(),
                 [](double r) { return static_cast<float>(r); });
  // Compared as sent (float radii): a change below float precision would not
  // show, so it needs no new table.
  if (table_ && c.id == table_id_ && radius_scratch_ == table_radius_) return table_;
  table_id_ = c.id;
  table_radius_.swap(radius_scratch_);
  v1::ServerMessage m;
  v1::BodyTable& t = *m.mutable_body_table();
  auto table = std::make_shared<BodyTableFrame>();
  table->epoch = next_epoch_++;
  t.set_epoch(table->epoch);
  t.mutable_id()->Add(table_id_.begin(), table_id_.end());
  t.mutable_radius()->Add(table_radius_.begin(), table_radius_.end());
  table->frame = std::make_shared<const std::string>(proto::encode_frame(m));
  table_ = std::move(table);
  return table_;
}

void SnapshotEncoder::select_events(const SnapshotCapture& c, const StreamKey& key) {
  selected_.clear();
  for (std::size_t i = 0; i < c.events.size(); ++i)
    if (c.events[i].speed >= key.min_event_speed) selected_.push_back(static_cast<std::uint32_t>(i));
  if (key.max_events == 0 || selected_.size() <= key.max_events) return;
  // The hardest, ties to the earlier; then back in their order.
  const auto harder = [&](std::uint32_t i, std::uint32_t j) {
    return c.events[i].speed != c.events[j].speed ? c.events[i].speed > c.events[j].speed : i < j;
  };
  std::nth_element(selected_.begin(), selected_.begin() + key.max_events, selected_.end(), harder);
  selected_.resize(key.max_events);
  std::sort(selected_.begin(), selected_.end());
}

void SnapshotEncoder::make_header(const SnapshotCapture& c, const v1::Stats& timing, std::uint64_t state_hash,
                                  int variant, const StreamKey& key, const CompactBodies* compact,
                                  std::uint64_t table_epoch) {
  v1::Snapshot s;
  s.set_tick(c.tick);
  s.set_time(c.time);
  s.set_server_time_ns(c.server_time_ns);
  s.set_state_hash(state_hash);
  s.set_paused(c.paused);
  v1::Bounds& b = *s.mutable_bounds();
  b.set_walled(c.bounds.walled);
  b.mutable_min()->set_x(c.bounds.min.x);
  b.mutable_min()->set_y(c.bounds.min.y);
  b.mutable_max()->set_x(c.bounds.max.x);
  b.mutable_max()->set_y(c.bounds.max.y);
  *s.mutable_stats() = timing;
  s.mutable_stats()->MergeFrom(c.stats);
  if ((variant & kVariantBodyTables) != 0) s.set_body_table(table_epoch);
  if ((variant & kVariantEvents) != 0) {
    s.set_events_dropped(c.events_dropped);
    select_events(c, key);
    if (compact != nullptr) {
      compact_events_.clear();
      const double quantum = compact->key.position_quantum;
      for (const std::uint32_t i : selected_) {
        const TickEvent& te = c.events[i];
        compact_events_.push_back({te.tick, te.event.a, te.event.b, proto::quantize(te.event.point.x, quantum),
                                   proto::quantize(te.event.point.y, quantum),
                                   proto::to_bfloat16(te.event.impulse.x), proto::to_bfloat16(te.event.impulse.y)});
      }
      if (!compact_events_.empty()) {
        v1::CompactEvents& ce = *s.mutable_compact_events();
        proto::encode_events(compact_events_, c.tick, compact->positions, ce.mutable_events(),
                             ce.mutable_impulses());
        if (key.event_speeds)
          for (const std::uint32_t i : selected_) ce.add_speed(c.events[i].speed);
      }
    } else {
      for (const std::uint32_t i : selected_) {
        const TickEvent& te = c.events[i];
        v1::CollisionEvent& e = *s.add_events();
        e.set_a(te.event.a);
        e.set_b(te.event.b);
        e.mutable_point()->set_x(te.event.point.x);
        e.mutable_point()->set_y(te.event.point.y);
        e.mutable_impulse()->set_x(te.event.impulse.x);
        e.mutable_impulse()->set_y(te.event.impulse.y);
        e.set_tick(te.tick);
        if (key.event_speeds) e.set_speed(te.speed);
      }
    }
  }
  s.SerializeToString(&header_);
}

std::shared_ptr<const std::string> SnapshotEncoder::plain_frame(const SnapshotCapture& c, int variant,
                                                                std::size_t id_payload) const {
  const bool velocities = (variant & kVariantVelocities) != 0, omit = (variant & kVariantOmitBodies) != 0,
             in_table = (variant & kVariantBodyTables) != 0;
  // The body arrays, fields 4..9 of Snapshot.
  const std::size_t floats = omit ? 0 : 4 * c.x.size();
  std::size_t size = header_.size();
  if (!omit) {
    if (!in_table) size += packed_size(4, id_payload) + packed_size(7, floats);
    size += packed_size(5, floats) + packed_size(6, floats);
    if (velocities) size += packed_size(8, floats) + packed_size(9, floats);
  }
  // ServerMessage{snapshot = 2}, delimited.
  const std::size_t message = varint_size(tag(2)) + varint_size(size) + size;
  auto frame = std::make_shared<std::string>();
  frame->resize(varint_size(message) + message);
  char* p = frame->data();
  p = put_varint(p, message);
  p = put_varint(p, tag(2));
  p = put_varint(p, size);
  std::memcpy(p, header_.data(), header_.size());
  p += header_.size();
  if (!omit) {
    if (!in_table) p = put_ids(p, 4, c.id, id_payload);
    p = put_floats(p, 5, c.x);
    p = put_floats(p, 6, c.y);
    if (!in_table) p = put_floats(p, 7, c.radius);
    if (velocities) {
      p = put_floats(p, 8, c.vx);
      p = put_floats(p, 9, c.vy);
    }
  }
  assert(p == frame->data() + frame->size());
  return frame;
}

void SnapshotEncoder::encode(const SnapshotCapture& c, const v1::Stats& timing, SnapshotFrames* out) {
  out->tick = c.tick;
  out->frames.fill(nullptr);
  out->table = nullptr;
  out->keyed.clear();
  for (const auto& [variant, key] : c.keyed) out->keyed.push_back({variant, key, nullptr, nullptr});
  unsigned needed = c.needed;
  for (const auto& [variant, key] : c.keyed) needed |= 1u << variant;
  if (needed == 0) return;
  const std::uint64_t state_hash = c.state_hash ? *c.state_hash : hash_bodies(c);
  bool tables = false;
  for (int variant = 0; variant < kSnapshotVariants; ++variant) {
    tables = tables || ((needed & (1u << variant)) != 0 && (variant & kVariantBodyTables) != 0);
  }
  if (tables) out->table = table_for(c);
  const std::uint64_t epoch = out->table ? out->table->epoch : 0;
  const std::size_t id_payload = ids_payload(c.id);
  // Plain variants without a threshold, one frame each; compact variants are
  // all keyed, so a bit of theirs in `needed` makes no frame here.
  for (int variant = 0; variant < kSnapshotVariants; ++variant) {
    if ((c.needed & (1u << variant)) == 0 || (variant & kVariantCompact) != 0) continue;
    make_header(c, timing, state_hash, variant, StreamKey{}, nullptr, epoch);
    out->frames[static_cast<std::size_t>(variant)] = plain_frame(c, variant, id_payload);
  }
  // Keyed variants: the bodies come from the chain of each compact key, the
  // events through each threshold.
  for (SnapshotFrames::Keyed& entry : out->keyed) {
    if ((entry.variant & kVariantCompact) != 0) {
      auto bodies = chains_.advance(entry.key.compact, c);
      make_header(c, timing, state_hash, entry.variant, entry.key,
                  entry.key.compact_events ? bodies.get() : nullptr, epoch);
      entry.snapshot = std::make_shared<const CompactSnapshot>(header_, std::move(bodies));
    } else {
      make_header(c, timing, state_hash, entry.variant, entry.key, nullptr, epoch);
      entry.frame = plain_frame(c, entry.variant, id_payload);
    }
  }
  chains_.end_tick();
}

}  // namespace carom::server
