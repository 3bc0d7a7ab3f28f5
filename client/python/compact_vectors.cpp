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

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
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
    }
    canon_position = std::move(position);
    canon_velocity = std::move(velocity);
    have = true;
  }
  out.flush();
  return out ? 0 : 1;
}
