// The compact body stream's codec (carom/proto/compact.hpp): exact decode over
// long random streams with spawns, removals and key frames, the token format
// pinned byte for byte, and corrupt or truncated bytes refused without a crash.

#include "carom/proto/compact.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "carom/random.hpp"

namespace carom::proto {
namespace {

using Ids = std::vector<std::uint32_t>;
using Ints = std::vector<std::int64_t>;

TEST(Compact, QuantizeRoundsClampsAndMapsNanToZero) {
  EXPECT_EQ(quantize(0.0014, 0.001), 1);
  EXPECT_EQ(quantize(-0.0016, 0.001), -2);
  EXPECT_EQ(quantize(2.5, 1.0), 2);  // nearest, ties to even
  EXPECT_EQ(quantize(1e300, 0.001), kMaxQuantized);
  EXPECT_EQ(quantize(-std::numeric_limits<double>::infinity(), 0.001), -kMaxQuantized);
  EXPECT_EQ(quantize(std::nan(""), 0.001), 0);
}

// The bytes of a small stream, worked out by hand from the rules in
// compact.hpp (a client in another language must produce the same).
TEST(Compact, TokenFormatIsPinned) {
  const Ids id{3, 7};
  Track key;
  advance_track(Channel::kPosition, nullptr, id, Ints{5, 6}, Ints{-1, -1}, &key);
  std::string bytes;
  encode_track(Channel::kPosition, nullptr, key, &bytes);
  // Body 3: x 5 - 0 (zigzag 10: token 2*(10-1)+1 = 19), y -1 - 0 (token 1),
  // change 0, 0 (a run of two: token 2); body 7: x 6 - 5 = 1 (zigzag 2:
  // token 3), y -1 - -1 = 0 and change 0, 0 (a run of three: token 4).
  EXPECT_EQ(bytes, std::string("\x13\x01\x02\x03\x04", 5));

  Track next;
  advance_track(Channel::kPosition, &key, id, Ints{5, 8}, Ints{-1, -1}, &next);
  std::string delta;
  encode_track(Channel::kPosition, &key, next, &delta);
  // Predictions 5 + 0 and 6 + 0: residuals 0, 0, 2, 0 -> run of 2 (token 2),
  // 2 (zigzag 4: token 7), run of 1 (token 0).
  EXPECT_EQ(delta, std::string("\x02\x07\x00", 3));
}

// A world in miniature: bodies move with changing velocities, some jump, some
// stand still, bodies are spawned and removed, and frames are key frames now
// and then. The receiver's state must equal the sender's after every frame.
TEST(Compact, DecodeIsExactOverLongRandomStreams) {
  for (const Channel channel : {Channel::kPosition, Channel::kVelocity}) {
    SplitMix64 rng(42 + static_cast<int>(channel));
    Ids id;
    Ints x, y, vx, vy;
    std::uint32_t next_id = 1;
    auto spawn = [&](int n) {
      for (int k = 0; k < n; ++k) {
        id.push_back(next_id);
        next_id += 1 + static_cast<std::uint32_t>(rng.next() % 3);
        x.push_back(static_cast<std::int64_t>(rng.next() % 200001) - 100000);
        y.push_back(static_cast<std::int64_t>(rng.next() % 200001) - 100000);
        vx.push_back(static_cast<std::int64_t>(rng.next() % 101) - 50);
        vy.push_back(static_cast<std::int64_t>(rng.next() % 101) - 50);
      }
    };
    spawn(300);
    Track sent, received;
    bool have = false;
    std::size_t bytes_total = 0;
    for (int frame = 0; frame < 3000; ++frame) {
      for (std::size_t i = 0; i < id.size(); ++i) {
        const std::uint64_t r = rng.next() % 100;
        if (r < 5) vx[i] += static_cast<std::int64_t>(rng.next() % 41) - 20;  // a collision
        if (r == 5) x[i] += static_cast<std::int64_t>(rng.next() % 2000001) - 1000000;  // a teleport
        if (i % 4 != 0) {  // every fourth body rests
          x[i] += vx[i];
          y[i] += vy[i];
        }
      }
      if (frame % 97 == 50) spawn(17);
      if (frame % 89 == 30) {  // remove every fifth body
        std::size_t k = 0;
        for (std::size_t i = 0; i < id.size(); ++i) {
          if (i % 5 == 2) continue;
          id[k] = id[i], x[k] = x[i], y[k] = y[i], vx[k] = vx[i], vy[k] = vy[i];
          ++k;
        }
        id.resize(k), x.resize(k), y.resize(k), vx.resize(k), vy.resize(k);
      }
      Track current;
      advance_track(channel, have ? &sent : nullptr, id, x, y, &current);
      const bool key = !have || frame % 500 == 499;
      std::string bytes;
      encode_track(channel, key ? nullptr : &sent, current, &bytes);
      bytes_total += bytes.size();
      Track decoded;
      ASSERT_EQ(decode_track(channel, key ? nullptr : &received, id, bytes, &decoded), "") << "frame " << frame;
      ASSERT_EQ(decoded.x, current.x) << "frame " << frame;
      ASSERT_EQ(decoded.y, current.y) << "frame " << frame;
      ASSERT_EQ(decoded.dx, current.dx) << "frame " << frame;
      ASSERT_EQ(decoded.dy, current.dy) << "frame " << frame;
      sent = current;
      received = decoded;
      have = true;
    }
    EXPECT_GT(bytes_total, 0u);
  }
}

TEST(Compact, BodiesAtRestOrAtConstantVelocityCostAlmostNothing) {
  const std::size_t n = 10000;
  Ids id(n);
  Ints x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    id[i] = static_cast<std::uint32_t>(i + 1);
    x[i] = static_cast<std::int64_t>(i * 1000);
    y[i] = -static_cast<std::int64_t>(i * 37);
  }
  Track t0, t1, t2;
  advance_track(Channel::kPosition, nullptr, id, x, y, &t0);
  advance_track(Channel::kPosition, &t0, id, x, y, &t1);
  std::string rest;
  encode_track(Channel::kPosition, &t0, t1, &rest);
  EXPECT_LE(rest.size(), 4u);  // one run token for 20 000 zeros
  for (std::size_t i = 0; i < n; ++i) x[i] += static_cast<std::int64_t>(i % 7);  // constant velocity from here
  advance_track(Channel::kPosition, &t1, id, x, y, &t2);
  for (std::size_t i = 0; i < n; ++i) x[i] += static_cast<std::int64_t>(i % 7);
  Track t3;
  advance_track(Channel::kPosition, &t2, id, x, y, &t3);
  std::string moving;
  encode_track(Channel::kPosition, &t2, t3, &moving);
  EXPECT_LE(moving.size(), 4u) << "constant velocity is predicted exactly";
}

TEST(Compact, TruncatedOrCorruptBytesAreRefusedWithoutACrash) {
  SplitMix64 rng(9);
  Ids id;
  Ints x, y;
  for (std::uint32_t i = 1; i <= 200; ++i) {
    id.push_back(i);
    x.push_back(static_cast<std::int64_t>(rng.next() % 100000));
    y.push_back(static_cast<std::int64_t>(rng.next() % 100000));
  }
  Track key;
  advance_track(Channel::kPosition, nullptr, id, x, y, &key);
  std::string bytes;
  encode_track(Channel::kPosition, nullptr, key, &bytes);
  Track out;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_NE(decode_track(Channel::kPosition, nullptr, id, bytes.substr(0, cut), &out), "") << cut;
  EXPECT_NE(decode_track(Channel::kPosition, nullptr, id, bytes + '\0', &out), "");  // left over
  EXPECT_EQ(decode_track(Channel::kPosition, nullptr, id, bytes, &out), "");

  EXPECT_NE(decode_track(Channel::kPosition, nullptr, Ids{2, 1}, std::string(8, '\0'), &out), "");  // ids not sorted
  EXPECT_NE(decode_track(Channel::kPosition, nullptr, Ids{1}, std::string(11, '\xff'), &out), "");   // 77-bit token
  // A residual that lands beyond the range.
  std::string huge;
  huge.push_back('\xff');
  huge.append(8, '\xff');
  huge.push_back('\x01');  // token 2^64 - 1: the largest positive residual
  huge.append("\x04", 1);  // then three zeros (y, change x, change y)
  EXPECT_NE(decode_track(Channel::kPosition, nullptr, Ids{1}, huge, &out), "");

  // Random bytes: an error or a decode within range, never a crash.
  for (int trial = 0; trial < 2000; ++trial) {
    std::string junk(rng.next() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng.next());
    const Ids few{1, 2, 3};
    if (decode_track(trial % 2 ? Channel::kVelocity : Channel::kPosition, trial % 3 ? &key : nullptr, few, junk, &out)
            .empty()) {
      for (std::size_t i = 0; i < few.size(); ++i) {
        EXPECT_LE(std::abs(out.x[i]), kMaxQuantized);
        EXPECT_LE(std::abs(out.y[i]), kMaxQuantized);
      }
    }
  }
}

TEST(CompactEvents, BfloatIsTheRoundedHighHalfOfTheFloat) {
  EXPECT_EQ(to_bfloat16(1.0), 0x3f80);
  EXPECT_EQ(to_bfloat16(-2.0), 0xc000);
  EXPECT_EQ(from_bfloat16(0x3f80), 1.0f);
  EXPECT_EQ(to_bfloat16(1.0 + 1.0 / 256.0), 0x3f80);  // a tie: to even
  EXPECT_EQ(to_bfloat16(1.0 + 3.0 / 256.0), 0x3f82);  // a tie: to even, up
  EXPECT_EQ(to_bfloat16(1.0 + 1.5 / 128.0), 0x3f82);
  EXPECT_TRUE(std::isnan(from_bfloat16(to_bfloat16(std::nan("")))));
  EXPECT_TRUE(std::isinf(from_bfloat16(to_bfloat16(1e39))));
  for (double v : {0.37, -123.456, 1e-20, 7e5}) EXPECT_LE(std::abs(from_bfloat16(to_bfloat16(v)) - v), std::abs(v) / 256);
}

// The bytes of two events, worked out by hand (docs/protocol.md, "Compact
// events"): the first predicted at its bodies' midpoint, the second (a body
// not in the snapshot) at the first's point.
TEST(CompactEvents, FormatIsPinned) {
  Track pos;
  advance_track(Channel::kPosition, nullptr, Ids{3, 7}, Ints{10, 21}, Ints{-4, -4}, &pos);
  const std::vector<CompactEvent> in{{100, 3, 7, 16, -3, 0x3f80, 0xc000}, {99, 7, 9, 16, -3, 0, 1}};
  std::string events, impulses;
  encode_events(in, 100, pos, &events, &impulses);
  // Event 1: age 0 (zero), a 3 (zigzag 6: token 11), b - a 4 (zigzag 8:
  // token 15), x 16 - (10 + 21) >> 1 = 1 (token 3), y -3 - -4 = 1 (token 3).
  // Event 2: age 1 - 0 = 1 (token 3), a 7 - 3 = 4 (token 15), b - a 2
  // (zigzag 4: token 7), x 16 - 16, y -3 - -3: two zeros (token 2).
  EXPECT_EQ(events, std::string("\x00\x0b\x0f\x03\x03\x03\x0f\x07\x02", 9));
  EXPECT_EQ(impulses, std::string("\x80\x3f\x00\xc0\x00\x00\x01\x00", 8));
  std::vector<CompactEvent> out;
  ASSERT_EQ(decode_events(events, impulses, 100, pos, &out), "");
  EXPECT_EQ(out, in);
}

TEST(CompactEvents, RoundTripIsExactAndCorruptBytesAreRefused) {
  SplitMix64 rng(16);
  Track pos;
  Ids id;
  Ints x, y;
  for (std::uint32_t i = 1; i <= 300; ++i) {
    if (rng.next() % 4 == 0) continue;
    id.push_back(i);
    x.push_back(static_cast<std::int64_t>(rng.next() % 200000) - 100000);
    y.push_back(static_cast<std::int64_t>(rng.next() % 200000));
  }
  advance_track(Channel::kPosition, nullptr, id, x, y, &pos);
  std::vector<CompactEvent> in;
  for (int k = 0; k < 2000; ++k) {
    CompactEvent e;
    e.tick = 5000 - static_cast<std::uint64_t>(k < 1000 ? 3 : k < 1500 ? 1 : 0);
    e.a = static_cast<std::uint32_t>(1 + rng.next() % 320);
    e.b = e.a + 1 + static_cast<std::uint32_t>(rng.next() % 20);
    e.x = static_cast<std::int64_t>(rng.next() % 300000) - 150000;
    e.y = static_cast<std::int64_t>(rng.next() % 300000);
    e.ix = static_cast<std::uint16_t>(rng.next());
    e.iy = static_cast<std::uint16_t>(rng.next());
    in.push_back(e);
  }
  in.push_back({0, 0, 0xffffffffu, kMaxQuantized, -kMaxQuantized, 0xffff, 0});  // the extremes
  std::string events, impulses;
  encode_events(in, 5000, pos, &events, &impulses);
  std::vector<CompactEvent> out;
  ASSERT_EQ(decode_events(events, impulses, 5000, pos, &out), "");
  ASSERT_EQ(out, in);
  // Nothing at all is no events.
  ASSERT_EQ(decode_events("", "", 7, pos, &out), "");
  EXPECT_TRUE(out.empty());

  // Truncated anywhere, bytes left over, an impulse missing: refused.
  for (std::size_t cut = 0; cut < events.size(); cut += 97)
    EXPECT_NE(decode_events(events.substr(0, cut), impulses, 5000, pos, &out), "") << cut;
  EXPECT_NE(decode_events(events + '\x01', impulses, 5000, pos, &out), "");
  EXPECT_NE(decode_events(events, impulses.substr(0, impulses.size() - 1), 5000, pos, &out), "");
  EXPECT_NE(decode_events(events, impulses.substr(0, impulses.size() - 4), 5000, pos, &out), "");
  // A tick after the snapshot's (age -1), an id past 2^32, a point past 2^52.
  EXPECT_NE(decode_events(std::string("\x01\x01\x01\x00", 4), std::string(4, '\0'), 5, pos, &out), "");
  EXPECT_NE(decode_events(std::string("\x00\xff\xff\xff\xff\x3f\x04", 7), std::string(4, '\0'), 0, pos, &out), "");
  std::string far("\x00\x0b\x03", 3);  // age 0, a 3, b 4,
  far.append(9, '\xff');
  far.append("\x01\x00", 2);  // x 2^62 off the prediction, y
  EXPECT_NE(decode_events(far, std::string(4, '\0'), 0, pos, &out), "");
  // Random bytes: an error or events within range, never a crash.
  for (int trial = 0; trial < 3000; ++trial) {
    std::string junk(rng.next() % 48, '\0');
    for (char& c : junk) c = static_cast<char>(rng.next());
    const std::string imp(4 * (rng.next() % 4), '\x11');
    if (decode_events(junk, imp, 1000, pos, &out).empty()) {
      for (const CompactEvent& e : out) {
        EXPECT_LE(e.tick, 1000u);
        EXPECT_LE(std::abs(e.x), kMaxQuantized);
      }
    }
  }
}

}  // namespace
}  // namespace carom::proto
