// carom_compact_vectors: writes compact-stream frames encoded by the C++
// codec (proto/src/compact.cpp), and what the C++ decoder makes of them, one
// JSON object a line, so python_client_test.sh can check that carom_client.py
// decodes the same bytes to the same integers, and refuses the same corrupt
// bytes. Reads nothing; writes FILE (or stdout). Deterministic.
//
// A line: {"position": bool, "baseline": index of an earlier line whose
// decoded track is the baseline, or null for a key frame, "ids": [...],
// "bytes": hex, "ok": bool, and when ok "x", "y", "dx", "dy": the decoded
// quantized values (dx, dy empty for velocities)}.
// Or compact events: {"events_of": index of the position line whose decoded
// track they are coded against, "tick": the snapshot's, "tokens": hex,
// "impulses": hex, "ok": bool, and when ok "events": [[tick, a, b, x, y,
// ix, iy], ...] (ix, iy: the bfloat16 bits)}.

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "carom/proto/compact.hpp"

namespace {

using carom::proto::Channel;
using carom::proto::Track;

struct Line {
  bool position = true;
  long baseline = -1;
  std::vector<std::uint32_t> ids;
  std::string bytes;
  bool ok = false;
  Track decoded;
};

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<std::uint8_t>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

template <typename T>
void list(std::ostream& out, const char* name, const std::vector<T>& v) {
  out << ",\"" << name << "\":[";
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
  out << "]";
}

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  // Decodes `bytes` as the C++ client would, writes the line, returns its index.
  long add(bool position, long baseline, const std::vector<std::uint32_t>& ids, const std::string& bytes) {
    Line line;
    line.position = position;
    line.baseline = baseline;
    line.ids = ids;
    line.bytes = bytes;
    const Track* base = baseline >= 0 ? &lines_[static_cast<std::size_t>(baseline)].decoded : nullptr;
    line.ok = carom::proto::decode_track(position ? Channel::kPosition : Channel::kVelocity, base, ids, bytes,
                                         &line.decoded)
                  .empty();
    out_ << "{\"position\":" << (position ? "true" : "false") << ",\"baseline\":";
    if (baseline >= 0) {
      out_ << baseline;
    } else {
      out_ << "null";
    }
    list(out_, "ids", ids);
    out_ << ",\"bytes\":\"" << hex(bytes) << "\",\"ok\":" << (line.ok ? "true" : "false");
    if (line.ok) {
      list(out_, "x", line.decoded.x);
      list(out_, "y", line.decoded.y);
      list(out_, "dx", line.decoded.dx);
      list(out_, "dy", line.decoded.dy);
    }
    out_ << "}\n";
    lines_.push_back(std::move(line));
    return static_cast<long>(lines_.size() - 1);
  }
  const Line& line(long i) const { return lines_[static_cast<std::size_t>(i)]; }

  // Decodes compact events against the track of line `positions` as the C++
  // client would, writes the line; returns whether they decoded.
  bool add_events(long positions, std::uint64_t tick, const std::string& tokens, const std::string& impulses) {
    std::vector<carom::proto::CompactEvent> events;
    const bool ok = carom::proto::decode_events(tokens, impulses, tick, line(positions).decoded, &events).empty();
    out_ << "{\"events_of\":" << positions << ",\"tick\":" << tick << ",\"tokens\":\"" << hex(tokens)
         << "\",\"impulses\":\"" << hex(impulses) << "\",\"ok\":" << (ok ? "true" : "false");
    if (ok) {
      out_ << ",\"events\":[";
      for (std::size_t i = 0; i < events.size(); ++i) {
        const carom::proto::CompactEvent& e = events[i];
        out_ << (i ? "," : "") << "[" << e.tick << "," << e.a << "," << e.b << "," << e.x << "," << e.y << ","
             << e.ix << "," << e.iy << "]";
      }
      out_ << "]";
    }
    out_ << "}\n";
    lines_.emplace_back();  // keeps line indices = line numbers
    return ok;
  }

 private:
  std::ostream& out_;
  std::vector<Line> lines_;
};

// What goes wrong on a wire: cut short, a byte more, bytes changed, garbage,
// a token over 64 bits, a residual that throws a value out of range.
std::vector<std::string> corruptions(const std::string& bytes, std::mt19937_64& rng) {
  std::vector<std::string> out;
  if (!bytes.empty()) {
    out.push_back(bytes.substr(0, bytes.size() - 1));
    out.push_back(bytes.substr(0, rng() % bytes.size()));
    std::string flipped = bytes;
    flipped[rng() % flipped.size()] ^= static_cast<char>(1u << (rng() % 8));
    out.push_back(flipped);
    std::string ff = bytes;
    ff[rng() % ff.size()] = static_cast<char>(0xff);
    out.push_back(ff);
    std::string garbage(bytes.size(), '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    out.push_back(garbage);
  }
  out.push_back(bytes + std::string(1, '\0'));
  out.push_back(bytes + std::string(1, '\x01'));
  out.push_back(std::string(11, '\xff') + bytes);
  out.push_back(std::string("\xfd\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10) + bytes);  // a residual of ~2^62
  out.push_back(std::string());
  return out;
}

// A frame's events, as a snapshot of tick 40 + frame carries them: between
// bodies of the frame (the point near their midpoint) and with bodies that
// are not in it (predicted from the previous point), of this tick and up to
// 40 ticks back, in any order; impulses of every kind (zero, tiny, huge,
// infinite, NaN). Then corrupt versions of them.
bool write_events(Writer& w, long positions, int frame, const std::vector<std::uint32_t>& ids,
                  const Track& current, std::mt19937_64& rng) {
  using carom::proto::CompactEvent;
  const std::uint64_t tick = 40 + static_cast<std::uint64_t>(frame);
  const double impulses[] = {0.0, 1.0, -2.5, 1e-40, 3e38, 1e39, -1e300, std::numeric_limits<double>::quiet_NaN(),
                             0.123456789, -7e-3};
  std::vector<CompactEvent> events;
  const std::size_t n = frame % 4 == 0 ? 0 : 1 + rng() % 30;
  for (std::size_t k = 0; k < n; ++k) {
    CompactEvent e;
    e.tick = tick - rng() % 41;
    const std::size_t i = rng() % ids.size(), j = rng() % ids.size();
    e.a = rng() % 7 == 0 ? static_cast<std::uint32_t>(rng()) : ids[std::min(i, j)];
    e.b = rng() % 7 == 0 ? 0xffffffffu - static_cast<std::uint32_t>(rng() % 3) : ids[std::max(i, j)];
    e.x = (current.x[i] + current.x[j]) / 2 + static_cast<std::int64_t>(rng() % 21) - 10;
    e.y = (current.y[i] + current.y[j]) / 2 - static_cast<std::int64_t>(rng() % 5);
    e.ix = carom::proto::to_bfloat16(impulses[rng() % std::size(impulses)]);
    e.iy = carom::proto::to_bfloat16(impulses[rng() % std::size(impulses)]);
    events.push_back(e);
  }
  std::string tokens, imp;
  carom::proto::encode_events(events, tick, current, &tokens, &imp);
  std::vector<CompactEvent> back;
  if (!carom::proto::decode_events(tokens, imp, tick, current, &back).empty() || back != events) return false;
  w.add_events(positions, tick, tokens, imp);
  if (frame % 3 == 0) return true;
  for (const std::string& bad : corruptions(tokens, rng)) w.add_events(positions, tick, bad, imp);
  if (!imp.empty()) {
    w.add_events(positions, tick, tokens, imp.substr(0, imp.size() - 1));  // not 4 bytes an event
    w.add_events(positions, tick, tokens, imp.substr(0, imp.size() - 4));  // tokens of one event left over
  }
  w.add_events(positions, tick, tokens, imp + "abcd");  // one event too many for the tokens
  w.add_events(positions, 39, tokens, imp);  // ages beyond the tick (it is 40 or more)
  w.add_events(positions, 0, tokens, imp);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::ofstream file;
  if (argc > 1) {
    file.open(argv[1]);
    if (!file) {
      std::cerr << "carom_compact_vectors: cannot write " << argv[1] << "\n";
      return 1;
    }
  }
  std::ostream& out = argc > 1 ? file : std::cout;
  Writer w(out);
  std::mt19937_64 rng(16);
  constexpr std::int64_t kMax = carom::proto::kMaxQuantized;

  // A small world of bodies: most move at a constant velocity with jitter,
  // some stand still, a few sit at the clamp; spawns (new ids, some between
  // old ones) and removals on the way.
  struct Body {
    std::uint32_t id;
    std::int64_t x, y, vx, vy;
  };
  std::vector<Body> bodies;
  for (std::uint32_t i = 0; i < 60; ++i) {
    const auto kind = rng() % 4;
    const std::int64_t v = kind == 0 ? 0 : static_cast<std::int64_t>(rng() % 2001) - 1000;
    bodies.push_back({10 * i + 10, static_cast<std::int64_t>(rng() % 200001) - 100000,
                      static_cast<std::int64_t>(rng() % 200001) - 100000, v, kind == 0 ? 0 : -v / 3});
  }
  bodies[5].x = kMax, bodies[5].vx = 0;
  bodies[6].y = -kMax, bodies[6].vy = 0;

  long last_position = -1, last_velocity = -1;  // the delta chains' previous lines
  Track canon_position, canon_velocity;
  bool have = false;
  for (int frame = 0; frame < 40; ++frame) {
    if (frame % 9 == 4) bodies.erase(bodies.begin() + static_cast<long>(rng() % bodies.size()));
    if (frame % 7 == 3) {
      const std::size_t mid = bodies.size() / 2;
      const std::uint32_t id = (bodies[mid].id + bodies[mid + 1].id) / 2;  // between two old ones
      if (id != bodies[mid].id) bodies.insert(bodies.begin() + static_cast<long>(mid) + 1, {id, 7, -7, 300, 300});
      bodies.push_back({bodies.back().id + 5, -123456, 654321, -50, 0});
    }
    std::vector<std::uint32_t> ids;
    std::vector<std::int64_t> qx, qy, qvx, qvy;
    for (Body& b : bodies) {
      const std::int64_t jitter = b.vx == 0 ? 0 : static_cast<std::int64_t>(rng() % 5) - 2;
      b.x = std::clamp<std::int64_t>(b.x + b.vx + jitter, -kMax, kMax);
      b.y = std::clamp<std::int64_t>(b.y + b.vy, -kMax, kMax);
      ids.push_back(b.id);
      qx.push_back(b.x);
      qy.push_back(b.y);
      qvx.push_back(b.vx + jitter);
      qvy.push_back(b.vy);
    }
    Track position, velocity;
    carom::proto::advance_track(Channel::kPosition, have ? &canon_position : nullptr, ids, qx, qy, &position);
    carom::proto::advance_track(Channel::kVelocity, have ? &canon_velocity : nullptr, ids, qvx, qvy, &velocity);
    for (const bool pos : {true, false}) {
      const Track& current = pos ? position : velocity;
      long& last = pos ? last_position : last_velocity;
      const Channel channel = pos ? Channel::kPosition : Channel::kVelocity;
      std::string key;
      carom::proto::encode_track(channel, nullptr, current, &key);
      const long key_line = w.add(pos, -1, ids, key);
      long line = key_line;
      if (last >= 0) {
        std::string delta;
        carom::proto::encode_track(channel, pos ? &canon_position : &canon_velocity, current, &delta);
        line = w.add(pos, last, ids, delta);
        if (frame % 5 == 0)
          for (const std::string& bad : corruptions(delta, rng)) w.add(pos, last, ids, bad);
      }
      if (frame % 5 == 1)
        for (const std::string& bad : corruptions(key, rng)) w.add(pos, -1, ids, bad);
      const Line& decoded = w.line(line);
      if (!decoded.ok || decoded.decoded.x != current.x || decoded.decoded.y != current.y ||
          decoded.decoded.dx != current.dx || decoded.decoded.dy != current.dy) {
        std::cerr << "carom_compact_vectors: the C++ codec does not round-trip frame " << frame << "\n";
        return 1;
      }
      last = frame % 10 == 5 ? key_line : line;  // the chain goes on from a key frame now and then
      if (pos && !write_events(w, line, frame, ids, current, rng)) {
        std::cerr << "carom_compact_vectors: the C++ event codec does not round-trip frame " << frame << "\n";
        return 1;
      }
    }
    canon_position = std::move(position);
    canon_velocity = std::move(velocity);
    have = true;
  }
  out.flush();
  return out ? 0 : 1;
}
