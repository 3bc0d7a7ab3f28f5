// carom-view: a thin viewer of a carom-server world. A window (SDL2), a
// headless PNG recorder (SDL's software renderer, no display needed) or a
// terminal view (--tty). With control (a token, or a loopback server without
// one) the user can pause, step, reset and spawn or fling bodies.
//
// Exit status: 0 done (quit, or --frames reached), 1 runtime failure (no
// window, no world in time, a file not written), 2 bad command line.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "session.hpp"

namespace {

constexpr const char* kVersion = "carom-view 0.1.0";

bool parse_size(const std::string& text, int* w, int* h) {
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos) return false;
  try {
    std::size_t used = 0;
    *w = std::stoi(text.substr(0, x), &used);
    if (used != x) return false;
    const std::string rest = text.substr(x + 1);
    *h = std::stoi(rest, &used);
    if (used != rest.size()) return false;
  } catch (const std::exception&) {
    return false;
  }
  return *w > 0 && *h > 0 && *w <= 16384 && *h <= 16384;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"carom-view: watch (and, with control, play with) a carom-server world", "carom-view"};
  app.set_version_flag("--version", kVersion);
  app.footer(
      "Keys: space pause/resume, . step while paused, r reset, +/- or wheel zoom, right drag pan,\n"
      "f fit, c colour by speed/id, h help, q quit; left click spawns a body, left drag flings it.\n"
      "Without a display use --tty (terminal) or --headless --frames N --out DIR (PNG frames).");

  carom::view::Options o;
  std::string size;
  app.add_option("--server", o.server, "server address HOST:PORT")->envname("CAROM_SERVER")->capture_default_str();
  app.add_option("--token", o.token, "controller token (enables pause, step, reset, spawn)")->envname("CAROM_TOKEN");
  app.add_flag("--view-only", o.view_only, "never ask for control");
  app.add_option("--size", size, "window or PNG size in pixels (default 1280x720); with --tty columns x rows")
      ->type_name("WxH");
  app.add_option("--rate", o.rate_hz, "snapshots per second to ask for (0 = every tick)")->check(CLI::NonNegativeNumber);
  auto* headless = app.add_flag("--headless", o.headless, "no display: draw with the software renderer and write PNGs");
  app.add_option("--out", o.out, "--headless: directory for frame-000001.png ...")->type_name("DIR");
  app.add_option("--frames", o.frames, "stop after N frames of the world (window, --headless, --tty)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  app.add_option("--seconds", o.seconds, "stop after S seconds (window, --tty; the demo uses it)")
      ->check(CLI::PositiveNumber)
      ->type_name("S");
  app.add_option("--screenshot", o.screenshot, "window: save the window's pixels after --frames N to this PNG")
      ->type_name("FILE");
  auto* tty = app.add_flag("--tty", o.tty, "draw in the terminal (Unicode braille, ANSI colours)");
  app.add_option("--tty-glyphs", o.tty_glyphs, "--tty: braille (2x4 dots per cell) or blocks (half blocks)")
      ->check(CLI::IsMember({"braille", "blocks"}))
      ->capture_default_str();
  app.add_option("--tty-colour", o.tty_colour, "--tty: auto, never, 16, 256 or truecolor")
      ->check(CLI::IsMember({"auto", "never", "16", "256", "truecolor"}))
      ->capture_default_str();
  app.add_option("--fps", o.fps, "frame rate limit (default: the display's; --headless 30; --tty 20)")
      ->check(CLI::PositiveNumber);
  bool no_vsync = false;
  app.add_flag("--no-vsync", no_vsync, "window: do not wait for the display (to measure the frame rate)");
  app.add_option("--renderer", o.renderer,
                 "window: SDL render driver (opengl, opengles2, software); default: SDL's choice, but "
                 "software instead of OpenGL on a CPU rasterizer (llvmpipe, e.g. under Xvfb)");
  app.add_option("--spawn-radius", o.spawn_radius, "radius of spawned bodies, m (default: the median on screen)")
      ->check(CLI::PositiveNumber);
  app.add_option("--wait", o.wait_s, "with --frames: seconds to wait for the first snapshot before failing")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--quiet", o.quiet, "no connection messages on stderr");
  headless->excludes(tty);

  try {
    app.parse(argc, argv);
    o.vsync = !no_vsync;
    carom::client::Address address;
    std::string error;
    if (!carom::client::parse_address(o.server, &address, &error)) throw CLI::ValidationError("--server", error);
    if (!size.empty()) {
      if (!parse_size(size, &o.width, &o.height))
        throw CLI::ValidationError("--size", "'" + size + "' is not WxH (e.g. 1280x720)");
      o.size_given = true;
    }
    if (o.headless && (o.frames <= 0 || o.out.empty()))
      throw CLI::ValidationError("--headless", "needs --frames N and --out DIR");
    if (!o.screenshot.empty() && (o.frames <= 0 || o.headless || o.tty))
      throw CLI::ValidationError("--screenshot", "is for the window and needs --frames N");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (o.tty) return carom::view::run_tty(o);
  if (o.headless) return carom::view::run_headless(o);
  return carom::view::run_window(o);
}
