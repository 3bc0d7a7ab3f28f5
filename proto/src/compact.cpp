// The compact body stream: quantization, prediction and the token coding of
// residuals (see compact.hpp and docs/protocol.md). Pure functions of their
// arguments: the sender encodes each tick's frames once and shares the bytes.

#include "carom/proto/compact.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace carom::proto {
namespace {

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t u) {
  return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
}

void put_varint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Residuals in, tokens out: zeros are held back and flushed as one run.
class TokenWriter {
 public:
  explicit TokenWriter(std::string* out) : out_(out) {}
  ~TokenWriter() { flush(); }
  void put(std::int64_t v) {
    if (v == 0) {
      ++zeros_;
      return;
    }
    flush();
    put_varint(2 * (zigzag(v) - 1) + 1, out_);
  }

 private:
  void flush() {
    if (zeros_ > 0) put_varint(2 * (zeros_ - 1), out_);
    zeros_ = 0;
  }
  std::string* out_;
  std::uint64_t zeros_ = 0;
};

class TokenReader {
 public:
  explicit TokenReader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  // The next residual into *v; false (and error_ set) when the bytes are bad.
  bool get(std::int64_t* v) {
    if (zeros_ > 0) {
      --zeros_;
      *v = 0;
      return true;
    }
    std::uint64_t t = 0;
    if (!varint(&t)) return false;
    if ((t & 1) == 0) {
      zeros_ = t / 2;  // this call returns one of the t / 2 + 1 zeros
      *v = 0;
      return true;
    }
    *v = unzigzag((t - 1) / 2 + 1);
    return true;
  }
  // After the last residual: nothing may be left over.
  bool finish() {
    if (zeros_ > 0) return fail("a run of zeros goes past the last body");
    if (p_ != end_) return fail("bytes left over after the last body");
    return true;
  }
  const std::string& error() const { return error_; }
  bool fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }

 private:
  bool varint(std::uint64_t* out) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail("truncated: the stream ends inside the residuals");
      const auto byte = static_cast<std::uint8_t>(*p_++);
      if (shift == 63 && byte > 1) return fail("a token is longer than 64 bits");
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return fail("a token is longer than 64 bits");
  }
  const char* p_;
  const char* end_;
  std::uint64_t zeros_ = 0;
  std::string error_;
};

bool in_range(std::int64_t v) { return v >= -kMaxQuantized && v <= kMaxQuantized; }

// Wrapping arithmetic: residuals of in-range values never wrap, and a hostile
// residual must not be undefined behaviour (its result is range-checked).
std::int64_t add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

// Walks the sorted ids of a frame against the sorted ids of its baseline.
class Matcher {
 public:
  explicit Matcher(const Track* baseline) : base_(baseline) {}
  // Index of `id` in the baseline, or -1.
  std::ptrdiff_t find(std::uint32_t id) {
    if (base_ == nullptr) return -1;
    while (j_ < base_->id.size() && base_->id[j_] < id) ++j_;
    return j_ < base_->id.size() && base_->id[j_] == id ? static_cast<std::ptrdiff_t>(j_) : -1;
  }

 private:
  const Track* base_;
  std::size_t j_ = 0;
};

}  // namespace

std::int64_t quantize(double value, double quantum) {
  const double q = std::nearbyint(value / quantum);
  if (!(q == q)) return 0;
  const double limit = static_cast<double>(kMaxQuantized);
  if (q > limit) return kMaxQuantized;
  if (q < -limit) return -kMaxQuantized;
  return static_cast<std::int64_t>(q);
}

void advance_track(Channel channel, const Track* previous, std::span<const std::uint32_t> id,
                   std::span<const std::int64_t> qx, std::span<const std::int64_t> qy, Track* next) {
  const std::size_t n = id.size();
  next->id.assign(id.begin(), id.end());
  next->x.assign(qx.begin(), qx.end());
  next->y.assign(qy.begin(), qy.end());
  next->dx.clear();
  next->dy.clear();
  if (channel != Channel::kPosition) return;
  next->dx.assign(n, 0);
  next->dy.assign(n, 0);
  Matcher match(previous);
  for (std::size_t i = 0; i < n; ++i) {
    const std::ptrdiff_t j = match.find(id[i]);
    if (j < 0) continue;
    next->dx[i] = sub(qx[i], previous->x[static_cast<std::size_t>(j)]);
    next->dy[i] = sub(qy[i], previous->y[static_cast<std::size_t>(j)]);
  }
}

void encode_track(Channel channel, const Track* baseline, const Track& current, std::string* out) {
  const bool position = channel == Channel::kPosition;
  TokenWriter w(out);
  Matcher match(baseline);
  std::int64_t last_x = 0, last_y = 0;  // the previous body's values in this frame
  for (std::size_t i = 0; i < current.id.size(); ++i) {
    const std::ptrdiff_t j = match.find(current.id[i]);
    if (j >= 0) {
      const auto k = static_cast<std::size_t>(j);
      const std::int64_t px = position ? add(baseline->x[k], baseline->dx[k]) : baseline->x[k];
      const std::int64_t py = position ? add(baseline->y[k], baseline->dy[k]) : baseline->y[k];
      w.put(sub(current.x[i], px));
      w.put(sub(current.y[i], py));
    } else {
      w.put(sub(current.x[i], last_x));
      w.put(sub(current.y[i], last_y));
      // A key frame carries the changes; a body new to a delta frame has none.
      if (position && baseline == nullptr) {
        w.put(current.dx[i]);
        w.put(current.dy[i]);
      }
    }
    last_x = current.x[i];
    last_y = current.y[i];
  }
}

std::string decode_track(Channel channel, const Track* baseline, std::span<const std::uint32_t> id,
                         std::string_view bytes, Track* next) {
  const bool position = channel == Channel::kPosition;
  const std::size_t n = id.size();
  next->id.assign(id.begin(), id.end());
  next->x.resize(n);
  next->y.resize(n);
  next->dx.assign(position ? n : 0, 0);
  next->dy.assign(position ? n : 0, 0);
  TokenReader r(bytes);
  Matcher match(baseline);
  std::int64_t last_x = 0, last_y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && id[i] <= id[i - 1]) return "the body table's ids are not increasing";
    std::int64_t rx = 0, ry = 0;
    if (!r.get(&rx) || !r.get(&ry)) return r.error();
    const std::ptrdiff_t j = match.find(id[i]);
    if (j >= 0) {
      const auto k = static_cast<std::size_t>(j);
      const std::int64_t px = position ? add(baseline->x[k], baseline->dx[k]) : baseline->x[k];
      const std::int64_t py = position ? add(baseline->y[k], baseline->dy[k]) : baseline->y[k];
      next->x[i] = add(px, rx);
      next->y[i] = add(py, ry);
      if (position) {
        next->dx[i] = sub(next->x[i], baseline->x[k]);
        next->dy[i] = sub(next->y[i], baseline->y[k]);
      }
    } else {
      next->x[i] = add(last_x, rx);
      next->y[i] = add(last_y, ry);
      if (position && baseline == nullptr) {
        if (!r.get(&next->dx[i]) || !r.get(&next->dy[i])) return r.error();
      }
    }
    if (!in_range(next->x[i]) || !in_range(next->y[i]))
      return "a decoded value is beyond +-2^52 quanta (corrupt residuals)";
    last_x = next->x[i];
    last_y = next->y[i];
  }
  if (!r.finish()) return r.error();
  return {};
}

namespace {

// The point an event is predicted at: the integer midpoint (rounded down) of
// its two bodies when both are in the snapshot, else the previous point.
class PointPredictor {
 public:
  explicit PointPredictor(const Track& positions) : p_(positions) {}
  void predict(std::uint32_t a, std::uint32_t b, std::int64_t* x, std::int64_t* y) const {
    const std::ptrdiff_t i = index(a), j = index(b);
    if (i < 0 || j < 0) {
      *x = last_x, *y = last_y;
      return;
    }
    const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
    *x = (p_.x[ui] + p_.x[uj]) >> 1;  // in range (+-2^52): no overflow; >> rounds down
    *y = (p_.y[ui] + p_.y[uj]) >> 1;
  }
  std::int64_t last_x = 0, last_y = 0;

 private:
  std::ptrdiff_t index(std::uint32_t id) const {
    const auto it = std::lower_bound(p_.id.begin(), p_.id.end(), id);
    return it != p_.id.end() && *it == id ? it - p_.id.begin() : -1;
  }
  const Track& p_;
};

constexpr std::int64_t kMaxId = 0xffffffff;

}  // namespace

std::uint16_t to_bfloat16(double value) {
  const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float from_bfloat16(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

void encode_events(std::span<const CompactEvent> in, std::uint64_t tick, const Track& positions,
                   std::string* events, std::string* impulses) {
  TokenWriter w(events);
  PointPredictor predict(positions);
  std::int64_t last_age = 0, last_a = 0;
  for (const CompactEvent& e : in) {
    const auto age = static_cast<std::int64_t>(tick - e.tick);
    w.put(sub(age, last_age));
    w.put(sub(e.a, last_a));
    w.put(sub(e.b, e.a));
    std::int64_t px = 0, py = 0;
    predict.predict(e.a, e.b, &px, &py);
    w.put(sub(e.x, px));
    w.put(sub(e.y, py));
    last_age = age;
    last_a = e.a;
    predict.last_x = e.x;
    predict.last_y = e.y;
    const char bytes[4] = {static_cast<char>(e.ix & 0xff), static_cast<char>(e.ix >> 8),
                           static_cast<char>(e.iy & 0xff), static_cast<char>(e.iy >> 8)};
    impulses->append(bytes, 4);
  }
}

std::string decode_events(std::string_view events, std::string_view impulses, std::uint64_t tick,
                          const Track& positions, std::vector<CompactEvent>* out) {
  if (impulses.size() % 4 != 0) return "impulses is not 4 bytes an event";
  const std::size_t n = impulses.size() / 4;
  out->resize(n);
  TokenReader r(events);
  PointPredictor predict(positions);
  std::int64_t last_age = 0, last_a = 0;
  const auto* imp = reinterpret_cast<const std::uint8_t*>(impulses.data());
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t r_age = 0, r_a = 0, r_b = 0, rx = 0, ry = 0;
    if (!r.get(&r_age) || !r.get(&r_a) || !r.get(&r_b) || !r.get(&rx) || !r.get(&ry)) return r.error();
    CompactEvent& e = (*out)[i];
    const std::int64_t age = add(last_age, r_age), a = add(last_a, r_a), b = add(a, r_b);
    if (age < 0 || static_cast<std::uint64_t>(age) > tick) return "an event's tick is after the snapshot's or before tick 0";
    if (a < 0 || a > kMaxId || b < 0 || b > kMaxId) return "an event's body id is outside [0, 2^32)";
    e.tick = tick - static_cast<std::uint64_t>(age);
    e.a = static_cast<std::uint32_t>(a);
    e.b = static_cast<std::uint32_t>(b);
    std::int64_t px = 0, py = 0;
    predict.predict(e.a, e.b, &px, &py);
    e.x = add(px, rx);
    e.y = add(py, ry);
    if (!in_range(e.x) || !in_range(e.y)) return "an event's point is beyond +-2^52 quanta (corrupt residuals)";
    e.ix = static_cast<std::uint16_t>(imp[4 * i] | (imp[4 * i + 1] << 8));
    e.iy = static_cast<std::uint16_t>(imp[4 * i + 2] | (imp[4 * i + 3] << 8));
    last_age = age;
    last_a = a;
    predict.last_x = e.x;
    predict.last_y = e.y;
  }
  if (!r.finish()) return r.error();
  return {};
}

}  // namespace carom::proto
