// Camera, snapshot playback and colours of carom-view. See scene.hpp.

#include "scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace carom::view {

void Camera::set_viewport(int width, int height, int top) {
  width_ = std::max(width, 1);
  height_ = std::max(height, top + 1);
  top_ = top;
}

void Camera::fit(const Box& world) {
  const double w = std::max(world.width(), 1e-9);
  const double h = std::max(world.height(), 1e-9);
  const double room_x = std::max(width_ - 2 * kMargin, 1.0);
  const double room_y = std::max(height_ - top_ - 2 * kMargin, 1.0);
  scale_ = std::min(room_x / w, room_y / h);
  cx_ = (world.x0 + world.x1) * 0.5;
  cy_ = (world.y0 + world.y1) * 0.5;
}

void Camera::zoom(double factor, double sx, double sy) {
  const double wx = world_x(sx), wy = world_y(sy);
  scale_ = std::clamp(scale_ * factor, 1e-6, 1e9);
  // Move the centre so that (wx, wy) lands on (sx, sy) again.
  cx_ += wx - world_x(sx);
  cy_ += wy - world_y(sy);
}

void Camera::pan(double dx, double dy) {
  cx_ -= dx / scale_;
  cy_ += dy / scale_;
}

void Playback::update(const std::vector<std::shared_ptr<const Frame>>& frames, std::int64_t now_ns, Bodies* out,
                      std::vector<Flash>* flashes) {
  if (frames.empty()) {
    shown_.reset();
    newest_.reset();
    out->id.clear();
    out->x.clear();
    out->y.clear();
    out->radius.clear();
    out->speed.clear();
    return;
  }
  // Only the snapshots of the newest connection: after a reconnect the old
  // ones belong to another server time line.
  const std::uint64_t connection = frames.back()->connection;
  std::size_t first = 0;
  while (frames[first]->connection != connection) ++first;
  if (connection != connection_) {
    connection_ = connection;
    have_offset_ = false;
    have_interval_ = false;
    last_server_ns_ = 0;
  }

  for (std::size_t i = first; i < frames.size(); ++i) {
    const Frame& f = *frames[i];
    if (f.sequence <= last_sequence_) continue;
    last_sequence_ = f.sequence;
    const double sample = static_cast<double>(f.arrival_ns - f.snapshot.server_time_ns());
    if (!have_offset_ || sample < offset_ns_) {
      offset_ns_ = sample;
      have_offset_ = true;
    } else {
      // Creep up slowly, so a lasting change of the delay is followed without
      // letting one late packet shift the picture.
      offset_ns_ += std::min(sample - offset_ns_, 0.05 * interval_s_ * 1e9);
    }
    if (last_server_ns_ != 0 && !f.snapshot.paused()) {
      const double dt = static_cast<double>(f.snapshot.server_time_ns() - last_server_ns_) * 1e-9;
      if (dt > 1e-4 && dt < 1.0) {
        // The first interval of a connection is taken as it is; later ones
        // are smoothed, so one late tick does not change the delay much.
        interval_s_ = have_interval_ ? interval_s_ + 0.1 * (dt - interval_s_) : dt;
        have_interval_ = true;
      }
    }
    last_server_ns_ = f.snapshot.server_time_ns();
    if (f.speed_scale > 0)
      speed_scale_ = speed_scale_ <= 0 ? f.speed_scale : speed_scale_ + 0.05f * (f.speed_scale - speed_scale_);
  }
  delay_s_ = std::clamp(1.5 * interval_s_, 0.005, 0.25);
  newest_ = frames.back();

  // The two snapshots around the moment to show.
  std::size_t a = frames.size() - 1, b = a;
  double alpha = 0;
  double target = 0;
  if (!newest_->snapshot.paused()) {
    target = static_cast<double>(now_ns) - offset_ns_ - delay_s_ * 1e9;
    std::size_t i = frames.size();
    for (std::size_t k = frames.size(); k-- > first;) {
      if (static_cast<double>(frames[k]->snapshot.server_time_ns()) <= target) {
        i = k;
        break;
      }
    }
    if (i == frames.size()) {
      a = b = first;  // older than anything we have: the oldest
    } else if (i + 1 < frames.size()) {
      a = i;
      b = i + 1;
      const double ta = static_cast<double>(frames[a]->snapshot.server_time_ns());
      const double tb = static_cast<double>(frames[b]->snapshot.server_time_ns());
      alpha = tb > ta ? std::clamp((target - ta) / (tb - ta), 0.0, 1.0) : 1.0;
    }
  }
  const Frame& fa = *frames[a];
  const Frame& fb = *frames[b];
  shown_ = alpha < 0.5 ? frames[a] : frames[b];

  const auto& A = fa.snapshot;
  const auto& B = fb.snapshot;
  const int n = B.id_size();
  const int na = A.id_size();
  const auto un = static_cast<std::size_t>(n);
  out->id.resize(un);
  out->x.resize(un);
  out->y.resize(un);
  out->radius.resize(un);
  out->speed.resize(un);
  const bool b_speed = fb.speed.size() == un;
  const bool a_speed = fa.speed.size() == static_cast<std::size_t>(na);
  const float t = static_cast<float>(alpha);
  int j = 0;
  for (int i = 0; i < n; ++i) {
    const auto ui = static_cast<std::size_t>(i);
    const std::uint32_t id = B.id(i);
    float x = B.x(i), y = B.y(i), r = B.radius(i);
    float v = b_speed ? fb.speed[ui] : 0.0f;
    if (a != b) {
      while (j < na && A.id(j) < id) ++j;
      if (j < na && A.id(j) == id) {
        // Present in both: in between. Bodies only in B (new) are drawn where
        // they are; bodies only in A (removed) are not drawn.
        x = A.x(j) + t * (x - A.x(j));
        y = A.y(j) + t * (y - A.y(j));
        r = A.radius(j) + t * (r - A.radius(j));
        if (a_speed) v = fa.speed[static_cast<std::size_t>(j)] + t * (v - fa.speed[static_cast<std::size_t>(j)]);
      }
    }
    out->id[ui] = id;
    out->x[ui] = x;
    out->y[ui] = y;
    out->radius[ui] = r;
    out->speed[ui] = v;
  }

  // Flashes for the snapshots whose moment has come.
  for (std::size_t k = first; k < frames.size(); ++k) {
    const Frame& f = *frames[k];
    if (f.sequence <= flashed_sequence_) continue;
    if (k > b) break;
    flashed_sequence_ = f.sequence;
    // How fast each pair was approaching before the collision, from the
    // snapshot before (velocities along the line of centres): resting
    // contacts report an event every tick but approach at ~0 and do not flash.
    const Frame& before = k > first ? *frames[k - 1] : f;
    const auto& s = before.snapshot;
    const bool velocities = s.vx_size() == s.id_size() && s.vy_size() == s.id_size();
    auto index = [&](std::uint32_t id) {
      const auto it = std::lower_bound(s.id().begin(), s.id().end(), id);
      return it == s.id().end() || *it != id ? -1 : static_cast<int>(it - s.id().begin());
    };
    for (const auto& e : f.snapshot.events()) {
      double strength = 0.6;
      if (velocities) {
        const int ia = index(e.a()), ib = index(e.b());
        if (ia < 0 || ib < 0) continue;
        const double nx = s.x(ib) - s.x(ia), ny = s.y(ib) - s.y(ia);
        const double len = std::hypot(nx, ny);
        if (len <= 0) continue;
        const double approach = std::abs(((s.vx(ib) - s.vx(ia)) * nx + (s.vy(ib) - s.vy(ia)) * ny) / len);
        if (approach < kFlashMinSpeed) continue;
        strength = std::clamp(0.35 + (approach - kFlashMinSpeed) / 8.0, 0.35, 1.0);
      }
      fresh_.push_back({static_cast<float>(e.point().x()), static_cast<float>(e.point().y()),
                        static_cast<float>(strength), now_ns});
    }
    // A dense gas collides thousands of times a tick: flash the hardest few,
    // or the sparks would hide the bodies.
    if (fresh_.size() > kMaxFlashesPerSnapshot) {
      std::nth_element(fresh_.begin(), fresh_.begin() + kMaxFlashesPerSnapshot, fresh_.end(),
                       [](const Flash& p, const Flash& q) { return p.strength > q.strength; });
      fresh_.resize(kMaxFlashesPerSnapshot);
    }
    flashes->insert(flashes->end(), fresh_.begin(), fresh_.end());
    fresh_.clear();
  }
}

void prune_flashes(std::vector<Flash>* flashes, std::int64_t now_ns, std::size_t limit) {
  const auto life = static_cast<std::int64_t>(kFlashSeconds * 1e9);
  std::erase_if(*flashes, [&](const Flash& f) { return now_ns - f.born_ns > life; });
  if (flashes->size() > limit)
    flashes->erase(flashes->begin(), flashes->begin() + static_cast<std::ptrdiff_t>(flashes->size() - limit));
}

Box world_box(const v1::Snapshot* snapshot, const Bodies& bodies) {
  if (snapshot != nullptr && snapshot->bounds().walled()) {
    const auto& b = snapshot->bounds();
    return {b.min().x(), b.min().y(), b.max().x(), b.max().y()};
  }
  if (bodies.size() == 0) return {-50, -50, 50, 50};
  Box box{1e300, 1e300, -1e300, -1e300};
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    box.x0 = std::min<double>(box.x0, bodies.x[i] - bodies.radius[i]);
    box.y0 = std::min<double>(box.y0, bodies.y[i] - bodies.radius[i]);
    box.x1 = std::max<double>(box.x1, bodies.x[i] + bodies.radius[i]);
    box.y1 = std::max<double>(box.y1, bodies.y[i] + bodies.radius[i]);
  }
  return box;
}

namespace {

std::array<Rgb, 256> make_speed_palette() {
  // Stops of the ramp: still bodies are a calm blue, the fastest red.
  constexpr std::array<std::array<float, 3>, 5> stops{{
      {40, 80, 200}, {40, 180, 220}, {80, 200, 90}, {240, 210, 60}, {235, 60, 45}}};
  std::array<Rgb, 256> palette{};
  for (int i = 0; i < 256; ++i) {
    const float t = static_cast<float>(i) / 255.0f * static_cast<float>(stops.size() - 1);
    const int k = std::min(static_cast<int>(t), static_cast<int>(stops.size()) - 2);
    const float f = t - static_cast<float>(k);
    auto mix = [&](int c) {
      return static_cast<std::uint8_t>(std::lround(stops[k][c] + f * (stops[k + 1][c] - stops[k][c])));
    };
    palette[static_cast<std::size_t>(i)] = {mix(0), mix(1), mix(2)};
  }
  return palette;
}

}  // namespace

Rgb speed_colour(float speed, float scale) {
  static const std::array<Rgb, 256> palette = make_speed_palette();
  const float t = scale > 0 ? speed / scale : 0.0f;
  const int i = std::clamp(static_cast<int>(t * 255.0f), 0, 255);
  return palette[static_cast<std::size_t>(i)];
}

Rgb id_colour(std::uint32_t id) {
  // Golden-ratio hue steps keep neighbouring ids far apart on the colour wheel.
  const double hue = std::fmod(static_cast<double>(id) * 0.6180339887498949, 1.0) * 6.0;
  const double s = 0.65, v = 0.95;
  const int sector = static_cast<int>(hue) % 6;
  const double f = hue - std::floor(hue);
  const double p = v * (1 - s), q = v * (1 - s * f), u = v * (1 - s * (1 - f));
  double r = v, g = u, b = p;
  switch (sector) {
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = u; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = u; g = p; b = v; break;
    case 5: r = v; g = p; b = q; break;
    default: break;
  }
  auto byte = [](double c) { return static_cast<std::uint8_t>(std::lround(c * 255.0)); };
  return {byte(r), byte(g), byte(b)};
}

}  // namespace carom::view
