#pragma once
/// \file What the three faces of carom-view (window, headless recorder,
/// terminal) share: the command line, the feed, the playback, the camera, the
/// heads-up line and the user's actions (sent as protocol commands).
///
/// Threading: the render thread only (the Feed runs its own thread).

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "feed.hpp"
#include "scene.hpp"

namespace carom::view {

/// The command line.
struct Options {
  std::string server = "127.0.0.1:7878";  ///< HOST:PORT (env CAROM_SERVER)
  std::string token;                      ///< controller token (env CAROM_TOKEN)
  bool view_only = false;                 ///< never ask for control
  double rate_hz = 0;                     ///< snapshot rate wish (0 = every tick)
  int width = 1280, height = 720;         ///< window / PNG pixels; --tty: columns x rows (0 = the terminal's)
  bool size_given = false;
  bool headless = false;
  bool tty = false;
  std::string tty_glyphs = "braille";     ///< braille | blocks
  std::string tty_colour = "auto";        ///< auto | never | 16 | 256 | truecolor
  int frames = 0;                         ///< stop after this many frames of the world (0 = run until quit)
  double seconds = 0;                     ///< stop after this many seconds (0 = run until quit)
  std::string out;                        ///< --headless: directory for frame-NNNNNN.png
  std::string screenshot;                 ///< window: PNG of the last frame
  double fps = 0;                         ///< frame rate limit (0 = the display's; headless 30, tty 20)
  bool vsync = true;
  std::string renderer;                   ///< SDL render driver ("" = SDL's choice)
  double spawn_radius = 0;                ///< m; 0 = the median radius of the bodies on screen
  double wait_s = 20;                     ///< --frames: give up when no snapshot came in this time
  bool quiet = false;                     ///< no connection messages on stderr
};

/// Seconds of monotonic time since an arbitrary start.
double seconds_now();

/// "carom-view: WHAT: N frames of the world in S s = F fps (B bodies, the
/// stream X bytes a body a snapshot)" on stderr (unless --quiet): the figures
/// the README quotes.
void report_frame_rate(const Options& options, const char* what, int frames, double seconds, std::size_t bodies,
                       double bytes_per_body);

class Session {
 public:
  explicit Session(const Options& options);

  const Options& options() const { return options_; }
  Feed& feed() { return feed_; }

  /// Sets the drawing area (pixels or terminal dots) and the heads-up band.
  void set_viewport(int width, int height, int top);
  /// Advances to the moment `now_ns`: interpolated bodies, flashes, camera
  /// (fitted to the world until the user zooms or pans), frame rate.
  void advance(std::int64_t now_ns);
  /// True once a snapshot is on screen.
  bool has_world() const { return playback_.shown() != nullptr; }

  const Bodies& bodies() const { return bodies_; }
  const std::vector<Flash>& flashes() const { return flashes_; }
  const Camera& camera() const { return camera_; }
  const Playback& playback() const { return playback_; }
  /// The walls, when the world has them.
  bool walled(Box* box) const;
  ColourMode colour_mode() const { return colour_; }
  float speed_scale() const;
  bool help() const { return help_; }

  /// The heads-up line (refreshed five times a second).
  const std::string& hud() const { return hud_; }
  /// A sentence for the middle of the screen when nothing can be shown
  /// (waiting, unreachable, gone); "" otherwise.
  std::string problem() const;
  /// A short-lived note (a refused command), "" when none.
  std::string note() const { return status_.note; }
  /// The feed as of the last frame (rates, the stream's bytes per body).
  const FeedStatus& status() const { return status_; }
  /// Whether the user's commands can reach the server.
  bool control() const { return status_.control; }

  // The user's actions.
  void toggle_pause();
  void step_once();
  void reset();
  void toggle_colour() { colour_ = colour_ == ColourMode::kSpeed ? ColourMode::kId : ColourMode::kSpeed; }
  void toggle_help() { help_ = !help_; }
  void fit();
  void zoom(double factor, double sx, double sy);
  void pan(double dx, double dy);
  /// Spawns a body at world (x, y) with velocity (vx, vy) m/s.
  void spawn(double x, double y, double vx, double vy);
  /// The radius a spawned body gets, m.
  double spawn_radius() const;

  /// The help overlay's lines.
  static const std::vector<std::string>& help_lines();

 private:
  void refresh_hud(std::int64_t now_ns);

  Options options_;
  Feed feed_;
  Playback playback_;
  Camera camera_;
  Bodies bodies_;
  std::vector<Flash> flashes_;
  FeedStatus status_;
  ColourMode colour_ = ColourMode::kSpeed;
  bool help_ = false;
  bool user_camera_ = false;
  Box fitted_{};
  int fitted_w_ = 0, fitted_h_ = 0;
  std::deque<std::int64_t> frame_times_;
  std::int64_t hud_at_ = 0;
  int hud_state_ = -1;
  std::string hud_;
};

/// The three faces; each returns the process exit status.
int run_window(const Options& options);
int run_headless(const Options& options);
int run_tty(const Options& options);

}  // namespace carom::view
