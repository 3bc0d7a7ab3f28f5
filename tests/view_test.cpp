// carom-view end to end: the real carom-server and the real carom-view
// binaries over loopback TCP on ephemeral ports.
//
// - headless frames of a fixed world (client/view/testdata/view_test.txtpb:
//   four still bodies, paused) checked pixel by pixel: each body where the
//   camera's documented fit puts it, with the right size and colour, the box,
//   the walls and the background where nothing is, the heads-up line drawn;
// - the window under Xvfb, on a running server, saved with --screenshot (the
//   software renderer SDL is switched to there, and OpenGL on Mesa);
// - the window's controls driven by real X input (xdotool): click spawns,
//   drag flings, '.' steps, space pauses and resumes, r resets, q quits;
// - the terminal view (braille and half blocks, with and without colour);
// - a window, a recorder and a terminal view on one world at once;
// - an unreachable server, a server that goes away and comes back, a token.

#include <fcntl.h>
#include <netinet/in.h>
#include <png.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numbers>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "carom/client/connection.hpp"
#include "support/process.hpp"


namespace carom {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// --- what the fixed world and carom-view's drawing look like -------------------
// (client/view/testdata/view_test.txtpb, client/view/painter.hpp, scene.hpp)

struct Disc {
  double x, y, r;
};
constexpr Disc kBodies[] = {{20, 25, 5}, {50, 10, 3}, {80, 40, 6}, {70, 15, 2}};
constexpr double kBoxW = 100, kBoxH = 50;

struct Rgb {
  int r, g, b;
};
constexpr Rgb kBackground{10, 12, 18};
constexpr Rgb kBoxFill{24, 28, 38};
constexpr Rgb kWall{120, 130, 150};
constexpr Rgb kHudBand{34, 38, 52};
constexpr Rgb kStill{40, 80, 200};  // colour-by-speed of a body at rest
constexpr int kHud = 24;
constexpr double kMargin = 12;

/// The camera's fit of the 100 x 50 box into a w x h picture with `top`
/// pixels of heads-up band (Camera::fit).
struct Fit {
  double scale, w, h, top;
  Fit(double width, double height, double top_px, double margin = kMargin)
      : scale(std::min((width - 2 * margin) / kBoxW, (height - top_px - 2 * margin) / kBoxH)),
        w(width), h(height), top(top_px) {}
  double sx(double x) const { return (x - kBoxW / 2) * scale + w / 2; }
  double sy(double y) const { return (kBoxH / 2 - y) * scale + top + (h - top) / 2; }
  double wx(double px) const { return (px - w / 2) / scale + kBoxW / 2; }
  double wy(double py) const { return kBoxH / 2 - (py - top - (h - top) / 2) / scale; }
};

// --- processes ----------------------------------------------------------------

fs::path scratch_dir() {
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() / ("carom-view-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

using test::Child;
using test::slurp;

/// A free loopback port (bound, read, closed: a small race, fine for a test).
std::uint16_t free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

/// carom-server on the fixed world (or `args`), one thread (unless `args`
/// say --threads), listening on a free port (or `port`).
class Server : public test::ServerProcess {
 public:
  explicit Server(const fs::path& dir, std::vector<std::string> args = {}, std::uint16_t port = 0)
      : ServerProcess(CAROM_SERVER_BIN, dir, with_defaults(std::move(args)), port) {}

 private:
  static std::vector<std::string> with_defaults(std::vector<std::string> args) {
    if (args.empty()) args = {"--scenario", CAROM_VIEW_SCENARIO};
    if (std::find(args.begin(), args.end(), "--threads") == args.end()) args.insert(args.begin(), {"--threads", "1"});
    return args;
  }
};

/// An X server of its own (Xvfb picks a free display and tells us which).
class Xvfb {
 public:
  explicit Xvfb(const fs::path& dir) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    child_ = Child({CAROM_XVFB_BIN, "-displayfd", std::to_string(fds[1]), "-screen", "0", "1024x768x24", "-nolisten",
                    "tcp"},
                   dir / "xvfb.out", dir / "xvfb.err", {}, fds[1]);
    ::close(fds[1]);
    std::string number;
    pollfd p{fds[0], POLLIN, 0};
    while (::poll(&p, 1, 15000) > 0) {
      char c = 0;
      if (::read(fds[0], &c, 1) != 1 || c == '\n') break;
      number.push_back(c);
    }
    ::close(fds[0]);
    if (!number.empty()) display_ = ":" + number;
    error_ = child_.err();
  }
  /// "DISPLAY=:N", or "" when Xvfb did not start.
  std::string env() const { return display_.empty() ? "" : "DISPLAY=" + display_; }
  const std::string& error() const { return error_; }

 private:
  Child child_;
  std::string display_;
  std::string error_;
};

// --- pictures -----------------------------------------------------------------

struct Image {
  int w = 0, h = 0;
  std::vector<std::uint8_t> rgb;
  Rgb at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

bool read_png(const fs::path& path, Image* out) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, path.c_str()) == 0) return false;
  image.format = PNG_FORMAT_RGB;
  out->w = static_cast<int>(image.width);
  out->h = static_cast<int>(image.height);
  out->rgb.resize(PNG_IMAGE_SIZE(image));
  return png_image_finish_read(&image, nullptr, out->rgb.data(), 0, nullptr) != 0;
}

bool near(Rgb a, Rgb b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

std::string str(Rgb c) {
  std::ostringstream s;
  s << '(' << c.r << ',' << c.g << ',' << c.b << ')';
  return s.str();
}

/// The fixed world as carom-view must draw it in `img`.
void expect_fixed_world(const Image& img, const std::string& what) {
  SCOPED_TRACE(what);
  const Fit fit(img.w, img.h, kHud);
  int body_pixels_expected = 0;
  for (const Disc& b : kBodies) {
    const double cx = fit.sx(b.x), cy = fit.sy(b.y), r = b.r * fit.scale;
    body_pixels_expected += static_cast<int>(std::lround(std::numbers::pi * r * r));
    // Inside: the colour of a still body, at the centre and most of the way out.
    for (const auto& [dx, dy] : {std::pair{0.0, 0.0}, {0.7, 0.0}, {-0.7, 0.0}, {0.0, 0.7}, {0.0, -0.7}}) {
      const int x = static_cast<int>(cx + dx * r), y = static_cast<int>(cy + dy * r);
      EXPECT_TRUE(near(img.at(x, y), kStill, 30))
          << "body at (" << b.x << ", " << b.y << "): pixel (" << x << ", " << y << ") is " << str(img.at(x, y));
    }
    // Just outside: the box.
    for (int k = 0; k < 8; ++k) {
      const double a = k * std::numbers::pi / 4;
      const int x = static_cast<int>(std::lround(cx + (r + 3) * std::cos(a)));
      const int y = static_cast<int>(std::lround(cy + (r + 3) * std::sin(a)));
      EXPECT_TRUE(near(img.at(x, y), kBoxFill, 8))
          << "around the body at (" << b.x << ", " << b.y << "): pixel (" << x << ", " << y << ") is "
          << str(img.at(x, y));
    }
  }
  // Everywhere else in the box: the box, nothing drawn.
  int stray = 0;
  const int x0 = static_cast<int>(fit.sx(0)) + 4, x1 = static_cast<int>(fit.sx(kBoxW)) - 4;
  const int y0 = static_cast<int>(fit.sy(kBoxH)) + 4, y1 = static_cast<int>(fit.sy(0)) - 4;
  for (int y = y0; y <= y1; y += 5) {
    for (int x = x0; x <= x1; x += 5) {
      const bool by_a_body = std::any_of(std::begin(kBodies), std::end(kBodies), [&](const Disc& b) {
        return std::hypot(x - fit.sx(b.x), y - fit.sy(b.y)) < b.r * fit.scale + 3;
      });
      if (!by_a_body && !near(img.at(x, y), kBoxFill, 8) && ++stray <= 5)
        ADD_FAILURE() << "pixel (" << x << ", " << y << ") in the empty box is " << str(img.at(x, y));
    }
  }
  EXPECT_EQ(stray, 0);
  // Outside the box: the background; the walls around it.
  for (int y = kHud + 2; y < img.h - 2; y += 7) {
    EXPECT_TRUE(near(img.at(3, y), kBackground, 6)) << "background at (3, " << y << ") is " << str(img.at(3, y));
    EXPECT_TRUE(near(img.at(img.w - 3, y), kBackground, 6)) << "background at the right edge is " << str(img.at(img.w - 3, y));
  }
  const int mid = static_cast<int>(fit.sy(kBoxH / 2));
  const int wall_x = static_cast<int>(std::lround(fit.sx(0))) - 2;
  EXPECT_TRUE(near(img.at(wall_x, mid), kWall, 40)) << "left wall at (" << wall_x << ", " << mid << ") is "
                                                     << str(img.at(wall_x, mid));
  // The bodies' area: every body pixel accounted for, sizes right (within 15%).
  int body_pixels = 0;
  for (int y = kHud; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x) body_pixels += near(img.at(x, y), kStill, 60) ? 1 : 0;
  EXPECT_GT(body_pixels, 0.85 * body_pixels_expected);
  EXPECT_LT(body_pixels, 1.15 * body_pixels_expected);
  // The heads-up band, with text in it.
  int band = 0, text = 0;
  for (int y = 0; y < kHud; ++y) {
    for (int x = 0; x < img.w; ++x) {
      const Rgb c = img.at(x, y);
      band += near(c, kHudBand, 2) ? 1 : 0;
      text += (c.r + c.g + c.b) / 3 > 150 ? 1 : 0;
    }
  }
  EXPECT_GT(band, img.w * kHud / 2) << "the heads-up band";
  EXPECT_GT(text, 300) << "the heads-up text";
  EXPECT_TRUE(near(img.at(img.w / 2, kHud + 2), kBackground, 6)) << "below the band";
}

// --- the server as a test client sees it ---------------------------------------

client::Connection connect_as(std::uint16_t port, v1::Role role, bool wishes) {
  client::Connection c;
  v1::Hello hello;
  hello.set_role(role);
  hello.set_client_name("view_test");
  if (wishes) hello.mutable_wishes()->set_velocities(true);
  EXPECT_TRUE(c.connect({"127.0.0.1", port}, hello)) << c.error();
  return c;
}

void command(client::Connection& c, v1::Command cmd) {
  v1::CommandResult r;
  ASSERT_TRUE(c.call(std::move(cmd), &r)) << c.error();
  ASSERT_EQ(r.code(), v1::OK) << r.message();
}

void resume(std::uint16_t port) {
  client::Connection c = connect_as(port, v1::ROLE_CONTROLLER, false);
  v1::Command cmd;
  cmd.mutable_resume();
  command(c, cmd);
}

/// Reads snapshots until `done(snapshot)` or the time is up; the last snapshot in *last.
bool wait_for(client::Connection& c, const std::function<bool(const v1::Snapshot&)>& done, double seconds,
              v1::Snapshot* last) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  v1::ServerMessage m;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!c.receive(&m, 0.2)) {
      if (!c.connected()) return false;
      continue;
    }
    if (!m.has_snapshot()) continue;
    *last = m.snapshot();
    if (done(*last)) return true;
  }
  return false;
}

std::vector<std::string> view(const Server& server, std::vector<std::string> args) {
  std::vector<std::string> argv{CAROM_VIEW_BIN, "--server", server.address()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// --- tests ----------------------------------------------------------------------

TEST(CaromView, HeadlessFramesShowTheFixedWorldWhereItIs) {
  const fs::path dir = scratch_dir();
  Server server(dir);
  ASSERT_NE(server.port(), 0);
  Child v(view(server, {"--headless", "--frames", "3", "--out", (dir / "frames").string(), "--size", "640x360"}),
          dir / "view.out", dir / "view.err");
  ASSERT_EQ(v.wait(60), 0) << v.err();
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(fs::exists(dir / "frames" / ("frame-00000" + std::to_string(i) + ".png")));
  EXPECT_FALSE(fs::exists(dir / "frames" / "frame-000004.png"));
  for (const char* name : {"frame-000001.png", "frame-000003.png"}) {
    Image img;
    ASSERT_TRUE(read_png(dir / "frames" / name, &img)) << name;
    ASSERT_EQ(img.w, 640);
    ASSERT_EQ(img.h, 360);
    expect_fixed_world(img, name);
  }
  EXPECT_NE(v.err().find("connected to " + server.address()), std::string::npos) << v.err();
  fs::remove_all(dir);
}

TEST(CaromView, HeadlessAtAnotherSizeKeepsTheAspect) {
  const fs::path dir = scratch_dir();
  Server server(dir);
  Child v(view(server, {"--headless", "--frames", "1", "--out", dir.string(), "--size", "500x500", "--quiet"}),
          dir / "view.out", dir / "view.err");
  ASSERT_EQ(v.wait(60), 0) << v.err();
  Image img;
  ASSERT_TRUE(read_png(dir / "frame-000001.png", &img));
  ASSERT_EQ(img.w, 500);
  expect_fixed_world(img, "500x500");
  EXPECT_EQ(v.err(), "");  // --quiet
  fs::remove_all(dir);
}

TEST(CaromView, MotionIsInterpolatedBetweenSnapshots) {
  // One body crossing a long box at 40 m/s; the recorder asks for only 15
  // snapshots a second but draws 60 frames a second. Without interpolation
  // three frames in four would repeat the previous picture.
  const fs::path dir = scratch_dir();
  const fs::path scenario = dir / "moving.txtpb";
  std::ofstream(scenario) << "name: \"moving\"\n"
                             "params { bounds { walled: true min { x: 0 y: 0 } max { x: 200 y: 40 } }\n"
                             "         gravity { x: 0 y: 0 } restitution: 1 linear_damping: 0 tick_hz: 60 }\n"
                             "bodies { position { x: 20 y: 20 } velocity { x: 40 y: 0 } radius: 2 }\n";
  Server server(dir, {"--scenario", scenario.string()});
  ASSERT_NE(server.port(), 0);
  constexpr int kFrames = 45;
  Child v(view(server, {"--headless", "--frames", std::to_string(kFrames), "--fps", "60", "--rate", "15", "--size",
                        "640x360", "--out", (dir / "frames").string(), "--quiet"}),
          dir / "view.out", dir / "view.err");
  ASSERT_EQ(v.wait(60), 0) << v.err();
  std::vector<double> xs;
  for (int i = 1; i <= kFrames; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "frame-%06d.png", i);
    Image img;
    ASSERT_TRUE(read_png(dir / "frames" / name, &img)) << name;
    // The body's centre: the mean x of the pixels that differ from the box.
    double sum = 0;
    int n = 0;
    // The box spans y 128..254 here; the body runs along its middle (y 192).
    for (int y = 172; y < 212; ++y) {
      for (int x = 20; x < img.w - 20; ++x) {
        const Rgb c = img.at(x, y);
        if (std::abs(c.r - kBoxFill.r) + std::abs(c.g - kBoxFill.g) + std::abs(c.b - kBoxFill.b) > 60) {
          sum += x;
          ++n;
        }
      }
    }
    ASSERT_GT(n, 50) << name << ": the body is not there";
    xs.push_back(sum / n);
  }
  // The first frames wait for the playback delay (1.5 snapshot intervals,
  // 100 ms here) to pass; after that every frame moves on.
  constexpr std::size_t kWarmUp = 10;
  int still = 0;
  for (std::size_t i = kWarmUp + 1; i < xs.size(); ++i) still += xs[i] - xs[i - 1] < 0.5 ? 1 : 0;
  std::ostringstream steps;
  for (std::size_t i = 1; i < xs.size(); ++i) steps << ' ' << std::lround(10 * (xs[i] - xs[i - 1])) / 10.0;
  EXPECT_LE(still, 3) << "frames that did not move (of " << kFrames - 1 - kWarmUp << "); steps in px:" << steps.str();
  EXPECT_GT(xs.back() - xs.front(), 40) << "it moved to the right";
  fs::remove_all(dir);
}

TEST(CaromView, WindowUnderXvfbDrawsALiveServer) {
  const fs::path dir = scratch_dir();
  Xvfb x(dir);
  ASSERT_FALSE(x.env().empty()) << "Xvfb did not start (scripts/deps installs xvfb): " << x.error();
  Server server(dir);
  resume(server.port());  // live: a snapshot every tick (the bodies stay still: no velocity, no gravity)
  const fs::path shot = dir / "shot.png";
  Child v(view(server, {"--frames", "30", "--size", "640x360", "--screenshot", shot.string()}), dir / "view.out",
          dir / "view.err", {x.env()});
  ASSERT_EQ(v.wait(60), 0) << v.err();
  EXPECT_NE(v.err().find("window 640x360"), std::string::npos) << v.err();
  EXPECT_NE(v.err().find("fps"), std::string::npos) << v.err();
  Image img;
  ASSERT_TRUE(read_png(shot, &img));
  ASSERT_EQ(img.w, 640);
  ASSERT_EQ(img.h, 360);
  expect_fixed_world(img, "window screenshot");
  fs::remove_all(dir);
}

TEST(CaromView, WindowWithOpenGLDrawsTheSamePicture) {
  // The path a machine with a GPU takes (one SDL_RenderGeometry call with the
  // linear-filtered atlas), here on Mesa's CPU OpenGL under Xvfb.
  const fs::path dir = scratch_dir();
  Xvfb x(dir);
  ASSERT_FALSE(x.env().empty()) << x.error();
  Server server(dir);
  const fs::path shot = dir / "shot.png";
  Child v(view(server, {"--renderer", "opengl", "--frames", "5", "--size", "640x360", "--screenshot", shot.string()}),
          dir / "view.out", dir / "view.err", {x.env()});
  ASSERT_EQ(v.wait(60), 0) << v.err();
  EXPECT_NE(v.err().find("SDL renderer opengl"), std::string::npos) << v.err();
  Image img;
  ASSERT_TRUE(read_png(shot, &img));
  expect_fixed_world(img, "OpenGL screenshot");
  fs::remove_all(dir);
}

TEST(CaromView, WindowWithoutADisplaySaysWhatToDo) {
  const fs::path dir = scratch_dir();
  Server server(dir);
  Child v(view(server, {"--frames", "1"}), dir / "view.out", dir / "view.err", {"DISPLAY=", "WAYLAND_DISPLAY="});
  EXPECT_EQ(v.wait(30), 1);
  EXPECT_NE(v.err().find("--tty"), std::string::npos) << v.err();
  fs::remove_all(dir);
}

TEST(CaromView, WindowControlsReachTheServer) {
  const fs::path dir = scratch_dir();
  Xvfb x(dir);
  ASSERT_FALSE(x.env().empty()) << x.error();
  Server server(dir);
  client::Connection watch = connect_as(server.port(), v1::ROLE_VIEWER, true);
  Child v(view(server, {"--size", "640x360", "--fps", "30"}), dir / "view.out", dir / "view.err", {x.env()});
  // Wait for the window, then drive it with real X input.
  const fs::path xdo_out = dir / "xdo.out", xdo_err = dir / "xdo.err";
  auto xdo = [&](std::vector<std::string> args) {
    args.insert(args.begin(), CAROM_XDOTOOL_BIN);
    Child c(args, xdo_out, xdo_err, {x.env()});
    EXPECT_EQ(c.wait(20), 0) << "xdotool " << args[1] << ": " << c.err();
    return c.out();
  };
  std::string window = xdo({"search", "--sync", "--onlyvisible", "--name", "^carom-view$"});
  window = window.substr(0, window.find('\n'));
  ASSERT_FALSE(window.empty());
  v1::Snapshot s;
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return x.id_size() == 4 && x.paused(); }, 10, &s));
  // The view is connected as a controller once its log says so.
  for (int i = 0; i < 100 && v.err().find("controller") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_NE(v.err().find("(0.1.0, controller)"), std::string::npos) << v.err();
  std::this_thread::sleep_for(300ms);  // its first frames (the camera fitted)

  const Fit fit(640, 360, kHud);
  auto px = [](double v) { return std::to_string(static_cast<int>(std::lround(v))); };
  // A click spawns a still body there.
  xdo({"mousemove", "--window", window, px(fit.sx(30)), px(fit.sy(40)), "click", "1"});
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return x.id_size() == 5; }, 10, &s)) << v.err();
  EXPECT_NEAR(s.x(4), 30, 0.5);
  EXPECT_NEAR(s.y(4), 40, 0.5);
  EXPECT_NEAR(s.vx(4), 0, 1e-6);
  EXPECT_NEAR(s.vy(4), 0, 1e-6);
  // A drag flings one: velocity = 2 x the drag (m/s per m), from where the drag began.
  xdo({"mousemove", "--window", window, px(fit.sx(60)), px(fit.sy(30)), "mousedown", "1"});
  xdo({"mousemove", "--window", window, px(fit.sx(63)), px(fit.sy(31)), "sleep", "0.1"});
  xdo({"mousemove", "--window", window, px(fit.sx(65)), px(fit.sy(32)), "sleep", "0.1", "mouseup", "1"});
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return x.id_size() == 6; }, 10, &s)) << v.err();
  EXPECT_NEAR(s.x(5), 60, 0.5);
  EXPECT_NEAR(s.y(5), 30, 0.5);
  EXPECT_NEAR(s.vx(5), 10, 0.6);
  EXPECT_NEAR(s.vy(5), 4, 0.6);
  // '.' steps one tick while paused.
  const std::uint64_t tick = s.tick();
  xdo({"mousemove", "--window", window, "320", "200", "key", "period"});
  ASSERT_TRUE(wait_for(watch, [&](const v1::Snapshot& x) { return x.tick() == tick + 1; }, 10, &s)) << v.err();
  EXPECT_TRUE(s.paused());
  // Space resumes, space again pauses.
  xdo({"key", "space"});
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return !x.paused(); }, 10, &s)) << v.err();
  std::this_thread::sleep_for(200ms);  // the view sees it running before the next key
  xdo({"key", "space"});
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return x.paused(); }, 10, &s)) << v.err();
  // r resets to the scenario: the four bodies again.
  xdo({"key", "r"});
  ASSERT_TRUE(wait_for(watch, [](const v1::Snapshot& x) { return x.id_size() == 4; }, 10, &s)) << v.err();
  // q quits.
  xdo({"key", "q"});
  EXPECT_EQ(v.wait(20), 0) << v.err();
  fs::remove_all(dir);
}

/// The lines of the first frame the terminal view printed (non-tty stdout:
/// the heads-up line, then the picture rows).
std::vector<std::string> first_tty_frame(const std::string& out, int rows) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; static_cast<int>(lines.size()) < rows && std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// The characters (UTF-8 sequences) of a line without escape sequences.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b') {
      i = line.find('m', i) + 1;
      continue;
    }
    const auto c = static_cast<unsigned char>(line[i]);
    const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    out.push_back(line.substr(i, len));
    i += len;
  }
  return out;
}

TEST(CaromView, TerminalViewDrawsBrailleWhereTheBodiesAre) {
  const fs::path dir = scratch_dir();
  Server server(dir);
  constexpr int kCols = 82, kRows = 25;
  Child v(view(server, {"--tty", "--frames", "2", "--size", "82x25", "--quiet"}), dir / "view.out", dir / "view.err");
  ASSERT_EQ(v.wait(60), 0) << v.err();
  const std::string out = v.out();
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "no colours when stdout is not a terminal";
  const auto lines = first_tty_frame(out, kRows);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kRows));
  EXPECT_EQ(lines[0].rfind("tick ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("4 bodies"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("paused"), std::string::npos) << lines[0];
  // Dots: 2 x 4 per cell, the picture below the heads-up line.
  const Fit fit(kCols * 2, (kRows - 1) * 4, 0);
  std::vector<std::vector<std::string>> grid;
  for (int r = 1; r < kRows; ++r) {
    grid.push_back(cells(lines[static_cast<std::size_t>(r)]));
    ASSERT_EQ(grid.back().size(), static_cast<std::size_t>(kCols)) << "row " << r;
  }
  const std::string full = "\xE2\xA3\xBF";  // U+28FF, all eight dots
  for (const Disc& b : kBodies) {
    const int col = static_cast<int>(fit.sx(b.x) / 2), row = static_cast<int>(fit.sy(b.y) / 4);
    if (b.r * fit.scale >= 4) EXPECT_EQ(grid[row][col], full) << "body at (" << b.x << ", " << b.y << ")";
    else EXPECT_NE(grid[row][col], " ") << "body at (" << b.x << ", " << b.y << ")";
  }
  // Away from the bodies and walls: blank.
  int blank = 0, stray = 0;
  for (int row = static_cast<int>(fit.sy(kBoxH) / 4) + 1; row < static_cast<int>(fit.sy(0) / 4) - 1; ++row) {
    for (int col = static_cast<int>(fit.sx(0) / 2) + 2; col < static_cast<int>(fit.sx(kBoxW) / 2) - 2; ++col) {
      const double x = fit.wx(col * 2 + 1), y = fit.wy(row * 4 + 2);
      const bool near_body = std::any_of(std::begin(kBodies), std::end(kBodies), [&](const Disc& b) {
        return std::hypot(x - b.x, y - b.y) < b.r + 4 / fit.scale;
      });
      if (near_body) continue;
      (grid[row][col] == " " ? blank : stray) += 1;
    }
  }
  EXPECT_GT(blank, 500);
  EXPECT_EQ(stray, 0);
  // The walls: the top wall is a row of braille dots across the box.
  const int top = static_cast<int>((fit.sy(kBoxH) - 1) / 4);
  EXPECT_NE(grid[top][kCols / 2], " ");
  fs::remove_all(dir);
}

// The heads-up line names the threads of the world's last step (none before
// its first): one on a server of one thread, two on one of two that keeps
// every step on them.
TEST(CaromView, HeadsUpLineSaysTheThreadsOfTheLastStep) {
  const fs::path dir = scratch_dir();
  const auto hud_of = [&](const Server& server, const std::string& name) {
    Child v(view(server, {"--tty", "--frames", "1", "--size", "200x10", "--quiet"}), dir / (name + ".out"),
            dir / (name + ".err"));
    EXPECT_EQ(v.wait(60), 0) << v.err();
    const auto lines = first_tty_frame(v.out(), 1);
    return lines.empty() ? std::string() : lines[0];
  };
  const auto step_once = [](const Server& server) {
    client::Connection c = connect_as(server.port(), v1::ROLE_CONTROLLER, false);
    v1::Command cmd;
    cmd.mutable_step()->set_count(1);
    command(c, cmd);
  };
  Server one(dir);
  const std::string before = hud_of(one, "before");
  EXPECT_NE(before.find("paused · "), std::string::npos) << before;
  EXPECT_EQ(before.find(" thread"), std::string::npos) << "no step yet: no threads named: " << before;
  step_once(one);
  const std::string after = hud_of(one, "after");
  EXPECT_NE(after.find("paused · steps on 1 thread · "), std::string::npos) << after;

  Server two(dir, {"--scenario", CAROM_VIEW_SCENARIO, "--threads", "2", "--fixed-threads"});
  step_once(two);
  const std::string both = hud_of(two, "two");
  EXPECT_NE(both.find("paused · steps on 2 threads · "), std::string::npos) << both;
  fs::remove_all(dir);
}

TEST(CaromView, TerminalViewColoursAndHalfBlocks) {
  const fs::path dir = scratch_dir();
  Server server(dir);
  Child v(view(server, {"--tty", "--frames", "1", "--size", "60x20", "--tty-colour", "256", "--tty-glyphs", "blocks",
                        "--quiet"}),
          dir / "view.out", dir / "view.err");
  ASSERT_EQ(v.wait(60), 0) << v.err();
  const std::string out = v.out();
  EXPECT_NE(out.find("\x1b[38;5;"), std::string::npos) << "256-colour escapes";
  // Still bodies are blue: cube colour 16 + 36*1 + 6*2 + 4 = 68 for (40, 80, 200).
  EXPECT_NE(out.find("\x1b[38;5;68m"), std::string::npos);
  EXPECT_NE(out.find("\xE2\x96\x80"), std::string::npos) << "upper half blocks";
  EXPECT_EQ(out.find("\xE2\xA3\xBF"), std::string::npos) << "no braille in blocks mode";

  Child t(view(server, {"--tty", "--frames", "1", "--size", "60x20", "--tty-colour", "truecolor", "--quiet"}),
          dir / "t.out", dir / "t.err");
  ASSERT_EQ(t.wait(60), 0) << t.err();
  EXPECT_NE(t.out().find("\x1b[38;2;40;80;200m"), std::string::npos) << "24-bit colour of a still body";
  fs::remove_all(dir);
}

TEST(CaromView, SeveralViewersOnOneWorldAtOnce) {
  const fs::path dir = scratch_dir();
  Xvfb x(dir);
  ASSERT_FALSE(x.env().empty()) << x.error();
  Server server(dir);
  resume(server.port());
  const fs::path shot = dir / "shot.png";
  // Each runs about three seconds (90 frames at 30 fps), so they overlap.
  Child window(view(server, {"--frames", "90", "--fps", "30", "--size", "640x360", "--screenshot", shot.string()}),
               dir / "w.out", dir / "w.err", {x.env()});
  Child headless(view(server, {"--headless", "--frames", "90", "--fps", "30", "--size", "640x360", "--out",
                               (dir / "frames").string()}),
                 dir / "h.out", dir / "h.err");
  Child tty(view(server, {"--tty", "--frames", "60", "--fps", "20", "--size", "82x25"}), dir / "t.out", dir / "t.err");
  // Meanwhile the server counts its clients: the three viewers and us.
  client::Connection ctl = connect_as(server.port(), v1::ROLE_CONTROLLER, false);
  std::uint32_t most = 0;
  while (window.running() || headless.running() || tty.running()) {
    v1::Command stats;
    stats.mutable_get_stats();
    v1::CommandResult r;
    ASSERT_TRUE(ctl.call(stats, &r)) << ctl.error();
    most = std::max(most, r.stats().clients());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(most, 4u);
  EXPECT_EQ(window.wait(60), 0) << window.err();
  EXPECT_EQ(headless.wait(60), 0) << headless.err();
  EXPECT_EQ(tty.wait(60), 0) << tty.err();
  Image img;
  ASSERT_TRUE(read_png(shot, &img));
  expect_fixed_world(img, "window");
  ASSERT_TRUE(read_png(dir / "frames" / "frame-000090.png", &img));
  expect_fixed_world(img, "headless");
  const auto lines = first_tty_frame(tty.out(), 25);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("4 bodies"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("running"), std::string::npos) << lines[0];
  fs::remove_all(dir);
}

TEST(CaromView, UnreachableServerIsRetriedWithBackoffThenGivenUp) {
  const fs::path dir = scratch_dir();
  const std::uint16_t port = free_port();
  Child v({CAROM_VIEW_BIN, "--server", "127.0.0.1:" + std::to_string(port), "--headless", "--frames", "1", "--out",
           dir.string(), "--wait", "2.5"},
          dir / "view.out", dir / "view.err");
  EXPECT_EQ(v.wait(30), 1);
  const std::string err = v.err();
  EXPECT_NE(err.find("cannot reach carom-server at 127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  // 0.25, 0.5, 1, 2 s: the waits grow.
  EXPECT_NE(err.find("retrying in 0.25 s"), std::string::npos) << err;
  EXPECT_NE(err.find("retrying in 1 s"), std::string::npos) << err;
  EXPECT_NE(err.find("no snapshot from"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "frame-000001.png"));
  fs::remove_all(dir);
}

TEST(CaromView, ServerThatComesLateOrGoesAwayIsReconnected) {
  const fs::path dir = scratch_dir();
  const std::uint16_t port = free_port();
  // The recorder starts first and waits for the server.
  Child v({CAROM_VIEW_BIN, "--server", "127.0.0.1:" + std::to_string(port), "--headless", "--frames", "100", "--fps",
           "20", "--size", "320x180", "--out", dir.string(), "--wait", "30"},
          dir / "view.out", dir / "view.err");
  std::this_thread::sleep_for(1s);
  {
    auto server = std::make_unique<Server>(dir, std::vector<std::string>{}, port);
    ASSERT_EQ(server->port(), port);
    for (int i = 0; i < 100 && !fs::exists(dir / "frame-000005.png"); ++i) std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(fs::exists(dir / "frame-000005.png")) << v.err();
    server->child().signal(SIGTERM);  // Goodbye, then gone
    EXPECT_EQ(server->child().wait(20), 0);
  }
  std::this_thread::sleep_for(1s);
  Server again(dir, {}, port);
  ASSERT_EQ(again.port(), port);
  EXPECT_EQ(v.wait(60), 0) << v.err();
  const std::string err = v.err();
  EXPECT_NE(err.find("cannot reach carom-server"), std::string::npos) << err;
  EXPECT_NE(err.find("the server said goodbye"), std::string::npos) << err;
  const auto first = err.find("connected to");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_NE(err.find("connected to", first + 1), std::string::npos) << "connected again: " << err;
  Image img;
  ASSERT_TRUE(read_png(dir / "frame-000100.png", &img));
  EXPECT_EQ(img.w, 320);
  fs::remove_all(dir);
}

TEST(CaromView, TokenDecidesControl) {
  const fs::path dir = scratch_dir();
  Server server(dir, {"--scenario", CAROM_VIEW_SCENARIO, "--token", "s3cret"});
  ASSERT_NE(server.port(), 0);
  Child without(view(server, {"--headless", "--frames", "1", "--out", (dir / "a").string()}), dir / "a.out",
                dir / "a.err", {"CAROM_TOKEN="});
  EXPECT_EQ(without.wait(60), 0) << without.err();
  EXPECT_NE(without.err().find("view only"), std::string::npos) << without.err();
  EXPECT_NE(without.err().find("UNAUTHENTICATED"), std::string::npos) << without.err();
  Child with(view(server, {"--headless", "--frames", "1", "--out", (dir / "b").string()}), dir / "b.out",
             dir / "b.err", {"CAROM_TOKEN=s3cret"});
  EXPECT_EQ(with.wait(60), 0) << with.err();
  EXPECT_NE(with.err().find("controller"), std::string::npos) << with.err();
  EXPECT_EQ(with.err().find("view only"), std::string::npos) << with.err();
  fs::remove_all(dir);
}

TEST(CaromView, BadCommandLinesExitTwo) {
  const fs::path dir = scratch_dir();
  for (const auto& args : std::vector<std::vector<std::string>>{{"--headless", "--frames", "1"},
                                                                {"--headless", "--out", dir.string()},
                                                                {"--size", "12by7"},
                                                                {"--server", "127.0.0.1:99999"},
                                                                {"--screenshot", "x.png"},
                                                                {"--tty", "--tty-glyphs", "dots"}}) {
    std::vector<std::string> argv{CAROM_VIEW_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    Child v(argv, dir / "out", dir / "err");
    EXPECT_EQ(v.wait(30), 2) << args[0] << ": " << v.err();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace carom
