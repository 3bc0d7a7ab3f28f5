// carom-view's window and its headless twin. Both draw with the Painter; the
// window presents to the screen (and can save its own pixels), the headless
// recorder draws with SDL's software renderer into a surface and writes PNGs.

#include <SDL.h>
#include <SDL_ttf.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "painter.hpp"
#include "session.hpp"

namespace carom::view {

namespace {

/// Pixels the pointer may move between press and release for a click (not a fling).
constexpr float kClickSlop = 4.0f;
/// Velocity of a flung body per metre of drag, 1/s.
constexpr double kFlingPerSecond = 2.0;

void sleep_until(double t) {
  const double left = t - seconds_now();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

/// Frames of the world drawn so far, for --frames: counting starts with the
/// first frame that shows a snapshot; gives up after options.wait_s without one.
struct FrameBudget {
  const Options& options;
  double started = seconds_now();
  double first_world = 0;  // when the first frame of the world was drawn
  int drawn = 0;
  /// 0 = go on, 1 = done, -1 = no world in time.
  int after_frame(const Session& session) {
    if (session.has_world()) {
      if (drawn++ == 0) first_world = seconds_now();
      return options.frames > 0 && drawn >= options.frames ? 1 : 0;
    }
    return options.frames > 0 && seconds_now() - started > options.wait_s ? -1 : 0;
  }
  /// Frames per second since the first frame of the world (that one excluded).
  void report(const char* what, const Session& session) const {
    report_frame_rate(options, what, drawn - 1, seconds_now() - first_world, session.bodies().size(),
                      session.status().bytes_per_body_all);
  }
};

int no_world(const Options& options, const Session& session) {
  std::fprintf(stderr, "carom-view: no snapshot from %s within %g s (%s)\n", options.server.c_str(), options.wait_s,
               session.problem().c_str());
  return 1;
}

constexpr const char* kNoDisplay =
    "  use --tty for the terminal view, or --headless --frames N --out DIR for PNG frames\n";

bool has_value(const char* variable) {
  const char* v = std::getenv(variable);
  return v != nullptr && *v != '\0';
}

/// Whether the renderer is OpenGL drawn by a CPU (Mesa's llvmpipe, softpipe, swrast).
bool is_software_gl(const SDL_RendererInfo& info) {
  if (std::strncmp(info.name, "opengl", 6) != 0) return false;
  using GetString = const unsigned char* (*)(unsigned);
  const auto get_string = reinterpret_cast<GetString>(SDL_GL_GetProcAddress("glGetString"));
  if (get_string == nullptr) return false;
  constexpr unsigned kGlRenderer = 0x1F01;
  const auto* name = reinterpret_cast<const char*>(get_string(kGlRenderer));
  if (name == nullptr) return false;
  for (const char* cpu : {"llvmpipe", "softpipe", "Software Rasterizer", "swrast"})
    if (std::strstr(name, cpu) != nullptr) return true;
  return false;
}

bool save_screenshot(SDL_Renderer* renderer, const std::string& path) {
  int w = 0, h = 0;
  SDL_GetRendererOutputSize(renderer, &w, &h);
  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  if (SDL_RenderReadPixels(renderer, nullptr, SDL_PIXELFORMAT_ARGB8888, pixels.data(), w * 4) != 0) {
    std::fprintf(stderr, "carom-view: cannot read the window's pixels: %s\n", SDL_GetError());
    return false;
  }
  std::string error;
  if (!write_png(path, w, h, pixels.data(), w * 4, &error)) {
    std::fprintf(stderr, "carom-view: %s\n", error.c_str());
    return false;
  }
  return true;
}

// The refresh rate of the window's display, Hz (60 when SDL cannot tell).
double display_hz(SDL_Window* window) {
  SDL_DisplayMode mode{};
  const int display = SDL_GetWindowDisplayIndex(window);
  if (display >= 0 && SDL_GetCurrentDisplayMode(display, &mode) == 0 && mode.refresh_rate > 0)
    return static_cast<double>(mode.refresh_rate);
  return 60.0;
}

}  // namespace

int run_window(const Options& options) {
  if (!options.renderer.empty()) SDL_SetHint(SDL_HINT_RENDER_DRIVER, options.renderer.c_str());
  SDL_SetHint(SDL_HINT_RENDER_VSYNC, options.vsync ? "1" : "0");
  // Without a display SDL would fall back to its invisible "offscreen" video
  // driver: say so instead, unless SDL_VIDEODRIVER asks for a driver on purpose.
  const bool driver_chosen = has_value("SDL_VIDEODRIVER");
  if (!driver_chosen && !has_value("DISPLAY") && !has_value("WAYLAND_DISPLAY")) {
    std::fprintf(stderr, "carom-view: cannot open a window: neither DISPLAY nor WAYLAND_DISPLAY is set\n%s", kNoDisplay);
    return 1;
  }
  if (SDL_Init(SDL_INIT_VIDEO) != 0) {
    std::fprintf(stderr, "carom-view: cannot open a window: %s\n%s", SDL_GetError(), kNoDisplay);
    return 1;
  }
  if (const char* driver = SDL_GetCurrentVideoDriver();
      !driver_chosen && driver != nullptr && (std::strcmp(driver, "offscreen") == 0 || std::strcmp(driver, "dummy") == 0)) {
    std::fprintf(stderr, "carom-view: cannot open a window: no display reachable (SDL chose '%s')\n%s", driver,
                 kNoDisplay);
    SDL_Quit();
    return 1;
  }
  SDL_Window* window = SDL_CreateWindow("carom-view", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, options.width,
                                        options.height, SDL_WINDOW_RESIZABLE);
  if (window == nullptr) {
    std::fprintf(stderr, "carom-view: cannot open a window: %s\n%s", SDL_GetError(), kNoDisplay);
    SDL_Quit();
    return 1;
  }
  SDL_Renderer* renderer = SDL_CreateRenderer(window, -1, options.vsync ? SDL_RENDERER_PRESENTVSYNC : 0);
  if (renderer == nullptr) {
    std::fprintf(stderr, "carom-view: cannot create a renderer: %s\n", SDL_GetError());
    SDL_DestroyWindow(window);
    SDL_Quit();
    return 1;
  }
  SDL_RendererInfo info{};
  SDL_GetRendererInfo(renderer, &info);
  if (options.renderer.empty() && is_software_gl(info)) {
    // OpenGL on a CPU rasterizer (Xvfb, VNC, a machine without a GPU driver):
    // SDL's own software renderer draws the same picture several times faster
    // (measured at 100k bodies: 37.7 vs 9.1 fps), so use it instead.
    SDL_DestroyRenderer(renderer);
    // And the window's pixels go straight to X (XShm), not through an
    // OpenGL texture on that same CPU rasterizer.
    SDL_SetHint(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0");
    renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE);
    if (renderer == nullptr) {
      std::fprintf(stderr, "carom-view: cannot create a renderer: %s\n", SDL_GetError());
      SDL_DestroyWindow(window);
      SDL_Quit();
      return 1;
    }
    SDL_GetRendererInfo(renderer, &info);
  }
  if (!options.quiet)
    std::fprintf(stderr, "carom-view: window %dx%d, SDL renderer %s%s\n", options.width, options.height, info.name,
                 (info.flags & SDL_RENDERER_SOFTWARE) != 0 ? " (software)" : "");

  int status = 0;
  {
    auto painter = std::make_unique<Painter>(renderer);
    std::string error;
    if (!painter->init(&error)) {
      std::fprintf(stderr, "carom-view: %s\n", error.c_str());
      status = 1;
    } else {
      Session session(options);
      FrameBudget budget{options};
      Drag drag;
      bool panning = false;
      bool quit = false;
      // --fps, else the display's refresh: vsync paces a GPU renderer, but
      // a software one (Xvfb, VNC, no GPU driver) ignores it and drew 1 900
      // frames a second on a small world, burning a core the server wants.
      const bool paced = options.vsync && (info.flags & SDL_RENDERER_PRESENTVSYNC) != 0 &&
                         (info.flags & SDL_RENDERER_SOFTWARE) == 0;
      const double period = options.fps > 0 ? 1.0 / options.fps
                            : paced || !options.vsync ? 0.0
                                                      : 1.0 / display_hz(window);
      double next = seconds_now();
      const double end = options.seconds > 0 ? seconds_now() + options.seconds : 0;
      while (!quit && (end == 0 || seconds_now() < end)) {
        int w = 0, h = 0;
        SDL_GetRendererOutputSize(renderer, &w, &h);
        session.set_viewport(w, h, kHudHeight);
        SDL_Event e;
        while (SDL_PollEvent(&e) != 0) {
          switch (e.type) {
            case SDL_QUIT:
              quit = true;
              break;
            case SDL_KEYDOWN:
              switch (e.key.keysym.sym) {
                case SDLK_q:
                case SDLK_ESCAPE: quit = true; break;
                case SDLK_SPACE: session.toggle_pause(); break;
                case SDLK_PERIOD:
                case SDLK_KP_PERIOD: session.step_once(); break;
                case SDLK_r: session.reset(); break;
                case SDLK_PLUS:
                case SDLK_EQUALS:
                case SDLK_KP_PLUS: session.zoom(1.25, w * 0.5, (h + kHudHeight) * 0.5); break;
                case SDLK_MINUS:
                case SDLK_KP_MINUS: session.zoom(0.8, w * 0.5, (h + kHudHeight) * 0.5); break;
                case SDLK_f: session.fit(); break;
                case SDLK_c: session.toggle_colour(); break;
                case SDLK_h: session.toggle_help(); break;
                default: break;
              }
              break;
            case SDL_MOUSEWHEEL: {
              int mx = 0, my = 0;
              SDL_GetMouseState(&mx, &my);
              const float steps = e.wheel.preciseY != 0 ? e.wheel.preciseY : static_cast<float>(e.wheel.y);
              session.zoom(std::pow(1.15, steps), mx, my);
              break;
            }
            case SDL_MOUSEBUTTONDOWN:
              if (e.button.button == SDL_BUTTON_RIGHT) panning = true;
              if (e.button.button == SDL_BUTTON_LEFT && e.button.y > kHudHeight) {
                drag = {true, static_cast<float>(e.button.x), static_cast<float>(e.button.y),
                        static_cast<float>(e.button.x), static_cast<float>(e.button.y)};
              }
              break;
            case SDL_MOUSEMOTION:
              if (panning) session.pan(e.motion.xrel, e.motion.yrel);
              if (drag.active) {
                drag.x1 = static_cast<float>(e.motion.x);
                drag.y1 = static_cast<float>(e.motion.y);
              }
              break;
            case SDL_MOUSEBUTTONUP:
              if (e.button.button == SDL_BUTTON_RIGHT) panning = false;
              if (e.button.button == SDL_BUTTON_LEFT && drag.active) {
                drag.active = false;
                const Camera& cam = session.camera();
                const double x = cam.world_x(drag.x0), y = cam.world_y(drag.y0);
                const bool click = std::hypot(e.button.x - drag.x0, e.button.y - drag.y0) < kClickSlop;
                const double vx = click ? 0.0 : (cam.world_x(e.button.x) - x) * kFlingPerSecond;
                const double vy = click ? 0.0 : (cam.world_y(e.button.y) - y) * kFlingPerSecond;
                session.spawn(x, y, vx, vy);
              }
              break;
            default:
              break;
          }
        }
        const std::int64_t now = client::monotonic_ns();
        session.advance(now);
        painter->paint(session, drag, now);
        const int done = budget.after_frame(session);
        if (done == 1 && !options.screenshot.empty() && !save_screenshot(renderer, options.screenshot)) status = 1;
        SDL_RenderPresent(renderer);
        if (done == 1) break;
        if (done == -1) {
          status = no_world(options, session);
          break;
        }
        if (period > 0) {
          next += period;
          if (next < seconds_now()) next = seconds_now();  // late: go on, no burst to catch up
          sleep_until(next);
        }
      }
      budget.report(info.name, session);
    }
  }
  SDL_DestroyRenderer(renderer);
  SDL_DestroyWindow(window);
  TTF_Quit();
  SDL_Quit();
  return status;
}

int run_headless(const Options& options) {
  // The software renderer on a plain surface needs no video subsystem at all.
  SDL_Surface* surface = SDL_CreateRGBSurfaceWithFormat(0, options.width, options.height, 32, SDL_PIXELFORMAT_ARGB8888);
  if (surface == nullptr) {
    std::fprintf(stderr, "carom-view: cannot create a %dx%d surface: %s\n", options.width, options.height,
                 SDL_GetError());
    return 1;
  }
  SDL_Renderer* renderer = SDL_CreateSoftwareRenderer(surface);
  if (renderer == nullptr) {
    std::fprintf(stderr, "carom-view: cannot create the software renderer: %s\n", SDL_GetError());
    SDL_FreeSurface(surface);
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out, ec);
  int status = 0;
  {
    Painter painter(renderer);
    std::string error;
    if (!painter.init(&error)) {
      std::fprintf(stderr, "carom-view: %s\n", error.c_str());
      status = 1;
    } else {
      Session session(options);
      session.set_viewport(options.width, options.height, kHudHeight);
      FrameBudget budget{options};
      // The recorder starts with the world, not with "waiting" frames.
      session.feed().wait_for_snapshot(options.wait_s);
      const double period = 1.0 / (options.fps > 0 ? options.fps : 30.0);
      double next = seconds_now();
      for (;;) {
        const std::int64_t now = client::monotonic_ns();
        session.advance(now);
        painter.paint(session, Drag{}, now);
        SDL_RenderPresent(renderer);
        if (session.has_world()) {
          char name[32];
          std::snprintf(name, sizeof name, "frame-%06d.png", budget.drawn + 1);  // after_frame counts it
          const std::string path = (std::filesystem::path(options.out) / name).string();
          if (!write_png(path, surface->w, surface->h, surface->pixels, surface->pitch, &error)) {
            std::fprintf(stderr, "carom-view: %s\n", error.c_str());
            status = 1;
            break;
          }
        }
        const int done = budget.after_frame(session);
        if (done == 1) break;
        if (done == -1) {
          status = no_world(options, session);
          break;
        }
        next += period;
        if (next < seconds_now()) next = seconds_now() + period;  // late: keep the frames evenly spaced
        sleep_until(next);
      }
      budget.report("headless (software, PNG included)", session);
    }
  }
  SDL_DestroyRenderer(renderer);
  SDL_FreeSurface(surface);
  TTF_Quit();
  return status;
}

}  // namespace carom::view
