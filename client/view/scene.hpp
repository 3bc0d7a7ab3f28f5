#pragma once
/// \file What carom-view shows, independent of how it is drawn (SDL window,
/// headless surface or terminal): the camera (world metres <-> pixels), the
/// playback of snapshots (interpolated a little behind the newest one), the
/// collision flashes and the colours.
///
/// Threading: the render thread only.

#include <cstdint>
#include <memory>
#include <vector>

#include "feed.hpp"

namespace carom::view {

/// An axis-aligned rectangle of the world, metres.
struct Box {
  double x0 = 0, y0 = 0, x1 = 100, y1 = 100;
  double width() const { return x1 - x0; }
  double height() const { return y1 - y0; }
};

/// World metres <-> screen pixels. The world's y points up, the screen's down.
/// The view area is the rectangle x in [0, width), y in [top, height): `top`
/// pixels are kept for the heads-up line.
class Camera {
 public:
  /// Pixels left free around the world when fitting it.
  static constexpr double kMargin = 12.0;

  void set_viewport(int width, int height, int top);
  /// Scales and centres `world` in the view area, kMargin pixels from its edges:
  /// scale = min((width - 2 margin) / w, (height - top - 2 margin) / h).
  void fit(const Box& world);
  /// Multiplies the scale by `factor`, keeping the world point under (sx, sy) in place.
  void zoom(double factor, double sx, double sy);
  /// Moves the picture by (dx, dy) pixels.
  void pan(double dx, double dy);

  double screen_x(double x) const { return (x - cx_) * scale_ + width_ * 0.5; }
  double screen_y(double y) const { return (cy_ - y) * scale_ + top_ + (height_ - top_) * 0.5; }
  double world_x(double sx) const { return (sx - width_ * 0.5) / scale_ + cx_; }
  double world_y(double sy) const { return cy_ - (sy - top_ - (height_ - top_) * 0.5) / scale_; }
  double scale() const { return scale_; }  ///< pixels per metre
  int width() const { return width_; }
  int height() const { return height_; }
  int top() const { return top_; }

 private:
  double cx_ = 50, cy_ = 50, scale_ = 1;
  int width_ = 1, height_ = 1, top_ = 0;
};

/// The bodies to draw this frame (interpolated), parallel arrays.
struct Bodies {
  std::vector<std::uint32_t> id;
  std::vector<float> x, y, radius;  ///< metres
  std::vector<float> speed;         ///< m/s (0 without velocities)
  std::size_t size() const { return id.size(); }
};

/// A collision's contact point, drawn as a short fading flash.
struct Flash {
  float x = 0, y = 0;             ///< metres
  float strength = 1;             ///< 0..1, from the impulse
  std::int64_t born_ns = 0;
};

/// How long a flash lasts, seconds.
inline constexpr double kFlashSeconds = 0.25;
/// Collisions approaching slower than this (m/s) do not flash: resting
/// contacts report an event every tick.
inline constexpr double kFlashMinSpeed = 1.0;
/// The position quantum carom-view asks for (m): what a viewer cannot see.
/// The demo world (160 m x 100 m) fits the default 1280 x 720 window at about
/// 7 pixels a metre, where 4 mm is 1/36 of a pixel (1/12 on a 3840 x 2160
/// screen); a body's error of half a quantum becomes a pixel only past
/// about 70x zoom. With the velocity quantum below it takes the demo's
/// stream (flashes' events included) from 1.05-1.10 MB/s in its busiest
/// second (1 mm, 1 cm/s) to 0.91-0.92 MB/s (bench/stream_bytes.py; README,
/// carom-view).
inline constexpr double kViewPositionQuantum = 0.004;
/// The velocity quantum carom-view asks for (m/s): speeds pick one of 256
/// colours between 0 and the 95th-percentile speed, so an error of half a
/// quantum (2.5 cm/s) moves a body less than one colour step in any world
/// whose 95th-percentile speed is over 6.4 m/s, and a few steps (each under
/// 3/255 a channel) in slower ones; the 1 m/s flash gate moves by 5 cm/s at
/// most. Velocities change by |g| dt (16 cm/s) a tick under gravity, so
/// at 1 cm/s they cost nearly as much as the positions.
inline constexpr double kViewVelocityQuantum = 0.05;
/// The events carom-view asks for (wishes.min_event_speed, m/s): an impact
/// changes the relative normal velocity by (1 + e) times its approach, so
/// this leaves out approaches below 2 / (1 + e) kFlashMinSpeed: all that
/// would not flash when e = 1, and resting contacts (about |g| dt).
inline constexpr double kFlashMinEventSpeed = 2.0 * kFlashMinSpeed;
/// At most this many flashes per snapshot (the hardest collisions).
inline constexpr std::size_t kMaxFlashesPerSnapshot = 48;
/// The most events carom-view asks for a snapshot (wishes.max_events, the
/// hardest): twice what it flashes, as its own choice goes by approach
/// speed from the previous snapshot, not by the server's measure.
inline constexpr std::uint32_t kMaxEventsPerSnapshot = static_cast<std::uint32_t>(2 * kMaxFlashesPerSnapshot);

/// Chooses what to show from the newest snapshots: the world as it was about
/// 1.5 snapshot intervals before the newest, interpolated by body id between
/// the two snapshots around that moment, on the server's clock (mapped to ours
/// through the smallest observed arrival delay, so network jitter does not
/// move the picture). While the server is paused it shows the newest snapshot.
class Playback {
 public:
  /// Fills `out` for the moment `now_ns` (local monotonic) and adds the
  /// contact flashes of snapshots that came into view to `flashes`.
  void update(const std::vector<std::shared_ptr<const Frame>>& frames, std::int64_t now_ns, Bodies* out,
              std::vector<Flash>* flashes);
  /// The snapshot on screen (the nearer of the two interpolated), or null.
  const Frame* shown() const { return shown_.get(); }
  /// The newest snapshot received, or null.
  const Frame* newest() const { return newest_.get(); }
  /// Speed that maps to the top of the colour scale, m/s (smoothed).
  float speed_scale() const { return speed_scale_; }
  /// How far behind the newest snapshot the picture is, seconds.
  double delay_s() const { return delay_s_; }

 private:
  std::shared_ptr<const Frame> shown_, newest_;
  std::uint64_t connection_ = 0;
  std::uint64_t last_sequence_ = 0;   // newest frame seen (for the offset and interval)
  std::uint64_t flashed_sequence_ = 0;
  std::int64_t last_server_ns_ = 0;
  double offset_ns_ = 0;              // arrival - server time, smallest seen (creeping up)
  bool have_offset_ = false;
  double interval_s_ = 1.0 / 60;     // between snapshots, server clock
  bool have_interval_ = false;
  double delay_s_ = 1.5 / 60;
  float speed_scale_ = 0;
  std::vector<Flash> fresh_;          // this snapshot's flashes before the cap
};

/// Drops flashes older than kFlashSeconds and keeps at most `limit` (newest).
void prune_flashes(std::vector<Flash>* flashes, std::int64_t now_ns, std::size_t limit);

/// What the picture shows: the walls when walled, else the bodies' extent
/// (a 100 m square around the origin when there are none).
Box world_box(const v1::Snapshot* snapshot, const Bodies& bodies);

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

enum class ColourMode { kSpeed, kId };

/// Blue (still) through cyan, green, yellow to red (speed >= scale).
Rgb speed_colour(float speed, float scale);
/// A stable, well-spread colour per body id.
Rgb id_colour(std::uint32_t id);

}  // namespace carom::view
