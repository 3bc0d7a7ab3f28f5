// The state carom-view's window, recorder and terminal share. See session.hpp.

#include "session.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace carom::view {

namespace {

FeedOptions feed_options(const Options& o) {
  FeedOptions f;
  std::string error;
  client::parse_address(o.server, &f.address, &error);  // main() checked it
  f.token = o.token;
  f.want_control = !o.view_only;
  f.max_rate_hz = o.rate_hz;
  f.log = !o.quiet;
  return f;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// " · steps on N threads": the threads the world's last step ran on
// (carom-server runs a step on one thread where that measures faster, unless
// started with --fixed-threads); nothing before the world's first step.
std::string on_threads(std::uint32_t threads) {
  if (threads == 0) return "";
  return " · steps on " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

}  // namespace

double seconds_now() { return static_cast<double>(client::monotonic_ns()) * 1e-9; }

void report_frame_rate(const Options& options, const char* what, int frames, double seconds, std::size_t bodies,
                       double bytes_per_body) {
  if (options.quiet || frames < 2 || seconds <= 0) return;
  std::fprintf(stderr,
               "carom-view: %s: %d frames of the world in %.2f s = %.1f fps (%zu bodies, the stream %.2f bytes a "
               "body a snapshot)\n",
               what, frames, seconds, frames / seconds, bodies, bytes_per_body);
}

Session::Session(const Options& options) : options_(options), feed_(feed_options(options)) { feed_.start(); }

void Session::set_viewport(int width, int height, int top) {
  camera_.set_viewport(width, height, top);
}

void Session::advance(std::int64_t now_ns) {
  status_ = feed_.status();
  playback_.update(feed_.frames(), now_ns, &bodies_, &flashes_);
  prune_flashes(&flashes_, now_ns, 20000);

  // Keep the world fitted until the user takes the camera; refit when the
  // world's box or the window changes.
  if (!user_camera_ && has_world()) {
    const Box box = world_box(playback_.shown() ? &playback_.shown()->snapshot : nullptr, bodies_);
    const bool walled = playback_.shown()->snapshot.bounds().walled();
    const bool moved = box.x0 != fitted_.x0 || box.y0 != fitted_.y0 || box.x1 != fitted_.x1 || box.y1 != fitted_.y1;
    // An unwalled world is refitted only when it grows out of the picture or
    // the window changes, not on every frame (that would make it breathe).
    const bool outgrown = !walled && (box.x0 < fitted_.x0 || box.y0 < fitted_.y0 || box.x1 > fitted_.x1 || box.y1 > fitted_.y1);
    if ((walled && moved) || outgrown || fitted_w_ != camera_.width() || fitted_h_ != camera_.height()) {
      Box b = box;
      if (!walled) {  // some room to move
        const double mx = 0.1 * std::max(b.width(), 1.0), my = 0.1 * std::max(b.height(), 1.0);
        b = {b.x0 - mx, b.y0 - my, b.x1 + mx, b.y1 + my};
      }
      camera_.fit(b);
      fitted_ = b;
      fitted_w_ = camera_.width();
      fitted_h_ = camera_.height();
    }
  }

  frame_times_.push_back(now_ns);
  while (frame_times_.size() > 1 && now_ns - frame_times_.front() > 1'000'000'000) frame_times_.pop_front();
  // Five times a second (readable numbers), and at once when the state it
  // shows changes (world, connection, pause, colour mode, control).
  const Frame* shown = playback_.shown();
  const int state = (shown != nullptr ? 1 : 0) | (status_.connected ? 2 : 0) | (status_.control ? 4 : 0) |
                    (shown != nullptr && shown->snapshot.paused() ? 8 : 0) | (colour_ == ColourMode::kId ? 16 : 0);
  if (now_ns - hud_at_ > 200'000'000 || hud_.empty() || state != hud_state_) {
    hud_state_ = state;
    hud_at_ = now_ns;
    refresh_hud(now_ns);
  }
}

bool Session::walled(Box* box) const {
  const Frame* f = playback_.shown();
  if (f == nullptr || !f->snapshot.bounds().walled()) return false;
  *box = world_box(&f->snapshot, bodies_);
  return true;
}

float Session::speed_scale() const { return std::max(playback_.speed_scale() * 1.25f, 0.1f); }

void Session::refresh_hud(std::int64_t now_ns) {
  double fps = 0;
  if (frame_times_.size() > 1) {
    const double span = static_cast<double>(now_ns - frame_times_.front()) * 1e-9;
    fps = span > 0 ? static_cast<double>(frame_times_.size() - 1) / span : 0;
  }
  std::string line;
  const Frame* f = playback_.shown();
  if (f != nullptr) {
    const auto& s = f->snapshot;
    char ke[32];
    std::snprintf(ke, sizeof ke, "%.4g", s.stats().kinetic_energy());
    line = "tick " + std::to_string(s.tick()) + " · " + std::to_string(bodies_.size()) + " bodies · " +
           fixed(fps, 1) + " fps · " + fixed(status_.snapshots_per_s, 0) + " snap/s · " +
           fixed(status_.kbytes_per_s, 0) + " kB/s · step " + fixed(s.stats().step_seconds() * 1e3, 2) +
           " ms · KE " + ke + " J · " + (!status_.connected ? "disconnected" : s.paused() ? "paused" : "running") +
           // After the state: a narrow terminal cuts the line's end.
           on_threads(s.stats().step_threads()) + " · " + fixed(status_.bytes_per_body, 2) + " B/body";
  } else {
    line = "no world yet · " + fixed(fps, 1) + " fps";
  }
  line += colour_ == ColourMode::kSpeed ? " · colour: speed" : " · colour: id";
  if (f == nullptr && !status_.connected) line += " · disconnected";
  else if (status_.connected && !status_.control) line += " · view only";
  line += " · h: help";
  hud_ = std::move(line);
}

std::string Session::problem() const {
  if (!status_.problem.empty()) return status_.problem;
  if (!has_world()) return "waiting for the world from " + options_.server + " ...";
  return "";
}

void Session::toggle_pause() {
  const Frame* f = playback_.newest();
  v1::Command c;
  if (f != nullptr && f->snapshot.paused()) {
    c.mutable_resume();
    feed_.send(std::move(c), "resume");
  } else {
    c.mutable_pause();
    feed_.send(std::move(c), "pause");
  }
}

void Session::step_once() {
  v1::Command c;
  c.mutable_step()->set_count(1);
  feed_.send(std::move(c), "step");
}

void Session::reset() {
  v1::Command c;
  c.mutable_reset();
  feed_.send(std::move(c), "reset");
}

void Session::fit() {
  user_camera_ = false;
  fitted_w_ = 0;  // refit on the next frame
}

void Session::zoom(double factor, double sx, double sy) {
  user_camera_ = true;
  camera_.zoom(factor, sx, sy);
}

void Session::pan(double dx, double dy) {
  user_camera_ = true;
  camera_.pan(dx, dy);
}

double Session::spawn_radius() const {
  if (options_.spawn_radius > 0) return options_.spawn_radius;
  if (bodies_.size() == 0) return 1.0;
  std::vector<float> r = bodies_.radius;
  std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
  return r[r.size() / 2];
}

void Session::spawn(double x, double y, double vx, double vy) {
  v1::Command c;
  auto* body = c.mutable_spawn()->add_bodies();
  body->mutable_position()->set_x(x);
  body->mutable_position()->set_y(y);
  body->mutable_velocity()->set_x(vx);
  body->mutable_velocity()->set_y(vy);
  body->set_radius(spawn_radius());
  feed_.send(std::move(c), "spawn");
}

const std::vector<std::string>& Session::help_lines() {
  static const std::vector<std::string> lines{
      "carom-view keys",
      "space      pause / resume",
      ".          one step while paused",
      "r          reset the world",
      "+ - wheel  zoom",
      "right drag pan",
      "f          fit the world",
      "c          colour by speed / by id",
      "h          this help",
      "q Esc      quit",
      "left click spawn a body (controller)",
      "left drag  fling it: velocity = 2 x drag, m/s",
  };
  return lines;
}

}  // namespace carom::view
