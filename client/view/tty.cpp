// carom-view --tty: the world in a terminal, for servers reached over SSH or
// in Docker. Each character cell holds 2 x 4 braille dots (or 1 x 2 half
// blocks), which are close to square in a usual terminal font, so the same
// Camera maps metres to dots. Colours: ANSI 16, 256 or 24-bit as the terminal
// says (TERM, COLORTERM, NO_COLOR), none when stdout is not a terminal.

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "session.hpp"

namespace carom::view {

namespace {

enum class Depth { kNone, k16, k256, kTrue };

std::atomic<bool> g_quit{false};
std::atomic<bool> g_resized{false};

extern "C" void on_quit_signal(int) { g_quit = true; }
extern "C" void on_winch_signal(int) { g_resized = true; }

Depth colour_depth(const std::string& wish, bool out_tty) {
  if (wish == "never") return Depth::kNone;
  if (wish == "16") return Depth::k16;
  if (wish == "256") return Depth::k256;
  if (wish == "truecolor") return Depth::kTrue;
  // auto
  if (!out_tty || std::getenv("NO_COLOR") != nullptr) return Depth::kNone;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return Depth::kNone;
  const char* colorterm = std::getenv("COLORTERM");
  if (colorterm != nullptr && (std::strstr(colorterm, "truecolor") != nullptr || std::strstr(colorterm, "24bit") != nullptr))
    return Depth::kTrue;
  if (std::strstr(term, "256") != nullptr || std::strncmp(term, "xterm", 5) == 0 || std::strncmp(term, "tmux", 4) == 0)
    return Depth::k256;
  return Depth::k16;
}

/// 0 = no colour; otherwise 0x01RRGGBB.
constexpr std::uint32_t kSet = 0x01000000u;
std::uint32_t pack(Rgb c) { return kSet | (std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | c.b; }

void append_colour(std::string* out, std::uint32_t c, bool background, Depth depth) {
  const int r = static_cast<int>((c >> 16) & 0xFF), g = static_cast<int>((c >> 8) & 0xFF),
            b = static_cast<int>(c & 0xFF);
  char text[32];
  switch (depth) {
    case Depth::kTrue:
      std::snprintf(text, sizeof text, "\x1b[%d;2;%d;%d;%dm", background ? 48 : 38, r, g, b);
      break;
    case Depth::k256: {
      auto six = [](int v) { return (v * 5 + 127) / 255; };
      std::snprintf(text, sizeof text, "\x1b[%d;5;%dm", background ? 48 : 38, 16 + 36 * six(r) + 6 * six(g) + six(b));
      break;
    }
    case Depth::k16: {
      const int index = (r > 110 ? 1 : 0) | (g > 110 ? 2 : 0) | (b > 110 ? 4 : 0);
      std::snprintf(text, sizeof text, "\x1b[%dm", (background ? 100 : 90) + (index == 0 ? 7 : index));
      break;
    }
    case Depth::kNone:
      return;
  }
  out->append(text);
}

void append_utf8(std::string* out, std::uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// `text` cut to `columns` characters (UTF-8 aware), padded with spaces.
std::string fit_line(const std::string& text, int columns) {
  std::string out;
  int n = 0;
  for (std::size_t i = 0; i < text.size() && n < columns;) {
    std::size_t len = 1;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0xF0) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC0) len = 2;
    out.append(text, i, len);
    i += len;
    ++n;
  }
  out.append(static_cast<std::size_t>(std::max(columns - n, 0)), ' ');
  return out;
}

/// A grid of dots, each empty (0) or coloured.
struct Canvas {
  int w = 0, h = 0;
  std::vector<std::uint32_t> dots;
  void reset(int width, int height) {
    w = width;
    h = height;
    dots.assign(static_cast<std::size_t>(w) * static_cast<std::size_t>(h), 0);
  }
  void set(int x, int y, std::uint32_t c) {
    if (x >= 0 && y >= 0 && x < w && y < h) dots[static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)] = c;
  }
  std::uint32_t at(int x, int y) const { return dots[static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)]; }
  void disc(double cx, double cy, double r, std::uint32_t c) {
    if (r < 0.7) {
      set(static_cast<int>(std::floor(cx)), static_cast<int>(std::floor(cy)), c);
      return;
    }
    const int y0 = std::max(static_cast<int>(std::floor(cy - r)), 0), y1 = std::min(static_cast<int>(std::ceil(cy + r)), h - 1);
    const int x0 = std::max(static_cast<int>(std::floor(cx - r)), 0), x1 = std::min(static_cast<int>(std::ceil(cx + r)), w - 1);
    for (int y = y0; y <= y1; ++y) {
      const double dy = y + 0.5 - cy;
      for (int x = x0; x <= x1; ++x) {
        const double dx = x + 0.5 - cx;
        if (dx * dx + dy * dy <= r * r) set(x, y, c);
      }
    }
  }
};

struct Terminal {
  bool raw = false;
  termios saved{};
  void enter() {
    if (tcgetattr(0, &saved) == 0) {
      termios t = saved;
      t.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      t.c_cc[VMIN] = 0;
      t.c_cc[VTIME] = 0;
      raw = tcsetattr(0, TCSANOW, &t) == 0;
    }
    std::fputs("\x1b[?1049h\x1b[?25l\x1b[2J", stdout);  // alternate screen, no cursor
    std::fflush(stdout);
  }
  void leave() {
    std::fputs("\x1b[0m\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (raw) tcsetattr(0, TCSANOW, &saved);
  }
};

void terminal_size(int* cols, int* rows) {
  winsize ws{};
  if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    *cols = ws.ws_col;
    *rows = ws.ws_row;
  } else {
    *cols = 80;
    *rows = 24;
  }
}

}  // namespace

int run_tty(const Options& options) {
  const bool out_tty = isatty(1) != 0;
  const bool interactive = out_tty && isatty(0) != 0 && options.frames == 0;
  const Depth depth = colour_depth(options.tty_colour, out_tty);
  const bool braille = options.tty_glyphs != "blocks";
  const int dot_w = braille ? 2 : 1, dot_h = braille ? 4 : 2;

  int cols = 0, rows = 0;
  auto measure = [&] {
    if (options.size_given) {
      cols = options.width;
      rows = options.height;
    } else {
      terminal_size(&cols, &rows);
    }
    cols = std::max(cols, 10);
    rows = std::max(rows, 3);
  };
  measure();

  Options quiet_options = options;
  quiet_options.quiet = options.quiet || interactive;  // messages go on screen, not over it
  Session session(quiet_options);
  Terminal terminal;
  if (interactive) {
    struct sigaction sa{};
    sa.sa_handler = on_quit_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sa.sa_handler = on_winch_signal;
    sigaction(SIGWINCH, &sa, nullptr);
    terminal.enter();
  } else {
    // A recording starts with the world, not with "waiting" frames.
    session.feed().wait_for_snapshot(options.wait_s);
  }

  Canvas canvas;
  std::string out;
  int drawn = 0;
  double first_world = 0;
  int status = 0;
  const double started = seconds_now();
  const double period = 1.0 / (options.fps > 0 ? options.fps : 20.0);
  double next = seconds_now();
  const double end = options.seconds > 0 ? started + options.seconds : 0;
  while (!g_quit && (end == 0 || seconds_now() < end)) {
    if (g_resized.exchange(false)) {
      measure();
      std::fputs("\x1b[2J", stdout);
    }
    const int canvas_rows = rows - 1;  // the first row is the heads-up line
    session.set_viewport(cols * dot_w, canvas_rows * dot_h, 0);

    if (interactive) {
      char keys[64];
      const ssize_t n = read(0, keys, sizeof keys);
      for (ssize_t i = 0; i < n; ++i) {
        const double cx = cols * dot_w * 0.5, cy = canvas_rows * dot_h * 0.5;
        const double step = cols * dot_w / 8.0;
        switch (keys[i]) {
          case 'q': g_quit = true; break;
          case ' ': session.toggle_pause(); break;
          case '.': session.step_once(); break;
          case 'r': session.reset(); break;
          case 'c': session.toggle_colour(); break;
          case 'f': session.fit(); break;
          case 'h': session.toggle_help(); break;
          case '+':
          case '=': session.zoom(1.25, cx, cy); break;
          case '-': session.zoom(0.8, cx, cy); break;
          case 27:
            if (i + 2 < n && keys[i + 1] == '[') {
              switch (keys[i + 2]) {
                case 'A': session.pan(0, step); break;
                case 'B': session.pan(0, -step); break;
                case 'C': session.pan(-step, 0); break;
                case 'D': session.pan(step, 0); break;
                default: break;
              }
              i += 2;
            } else {
              g_quit = true;  // a lone Esc
            }
            break;
          default: break;
        }
      }
    }

    const std::int64_t now = client::monotonic_ns();
    session.advance(now);
    const bool world = session.has_world();
    if (world) {
      if (drawn++ == 0) first_world = seconds_now();
    } else if (options.frames > 0 && seconds_now() - started > options.wait_s) {
      std::fprintf(stderr, "carom-view: no snapshot from %s within %g s (%s)\n", options.server.c_str(),
                   options.wait_s, session.problem().c_str());
      status = 1;
      break;
    }

    if (world || interactive) {
      canvas.reset(cols * dot_w, canvas_rows * dot_h);
      const Camera& cam = session.camera();
      if (Box box; session.walled(&box)) {
        const std::uint32_t wall = pack({120, 130, 150});
        const double x0 = cam.screen_x(box.x0), x1 = cam.screen_x(box.x1);
        const double y0 = cam.screen_y(box.y1), y1 = cam.screen_y(box.y0);
        for (int x = static_cast<int>(std::floor(x0)); x <= static_cast<int>(std::floor(x1)); ++x) {
          canvas.set(x, static_cast<int>(std::floor(y0)) - 1, wall);
          canvas.set(x, static_cast<int>(std::floor(y1)), wall);
        }
        for (int y = static_cast<int>(std::floor(y0)) - 1; y <= static_cast<int>(std::floor(y1)); ++y) {
          canvas.set(static_cast<int>(std::floor(x0)) - 1, y, wall);
          canvas.set(static_cast<int>(std::floor(x1)), y, wall);
        }
      }
      const Bodies& b = session.bodies();
      const bool by_speed = session.colour_mode() == ColourMode::kSpeed;
      const float scale = session.speed_scale();
      for (std::size_t i = 0; i < b.size(); ++i) {
        const Rgb c = by_speed ? speed_colour(b.speed[i], scale) : id_colour(b.id[i]);
        canvas.disc(cam.screen_x(b.x[i]), cam.screen_y(b.y[i]), b.radius[i] * cam.scale(), pack(c));
      }
      for (const Flash& f : session.flashes())
        canvas.set(static_cast<int>(std::floor(cam.screen_x(f.x))), static_cast<int>(std::floor(cam.screen_y(f.y))),
                   pack({255, 230, 120}));

      // Text over the picture: the problem, the note, the help.
      std::vector<std::pair<int, std::string>> overlay;
      if (const std::string problem = session.problem(); !problem.empty())
        overlay.emplace_back(canvas_rows / 2, problem);
      if (const std::string note = session.note(); !note.empty()) overlay.emplace_back(0, note);
      if (session.help()) {
        const auto& lines = Session::help_lines();
        const int first = std::max(0, (canvas_rows - static_cast<int>(lines.size())) / 2);
        for (std::size_t k = 0; k < lines.size(); ++k) overlay.emplace_back(first + static_cast<int>(k), lines[k]);
      }

      out.clear();
      if (out_tty) out += "\x1b[H";
      if (depth != Depth::kNone) out += "\x1b[0;1m";
      out += fit_line(session.hud(), cols);
      if (depth != Depth::kNone) out += "\x1b[0m";
      out += out_tty ? "\x1b[K\n" : "\n";
      for (int row = 0; row < canvas_rows; ++row) {
        const auto text = std::find_if(overlay.begin(), overlay.end(), [&](const auto& o) { return o.first == row; });
        if (text != overlay.end()) {
          out += fit_line("  " + text->second, cols);
        } else {
          std::uint32_t fg = 0, bg = 0;  // what the terminal has now
          for (int col = 0; col < cols; ++col) {
            std::uint32_t want_fg = 0, want_bg = 0, glyph = ' ';
            if (braille) {
              // Dot bits of U+2800..U+28FF: columns 0 and 1, rows 0..3.
              static constexpr int kBit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
              int bits = 0;
              for (int dy = 0; dy < 4; ++dy) {
                for (int dx = 0; dx < 2; ++dx) {
                  const std::uint32_t c = canvas.at(col * 2 + dx, row * 4 + dy);
                  if (c != 0) {
                    bits |= kBit[dy][dx];
                    if (want_fg == 0) want_fg = c;
                  }
                }
              }
              if (bits != 0) glyph = 0x2800u + static_cast<std::uint32_t>(bits);
            } else {
              const std::uint32_t top = canvas.at(col, row * 2), bottom = canvas.at(col, row * 2 + 1);
              if (top != 0 && bottom != 0) {
                glyph = depth == Depth::kNone ? 0x2588u : 0x2580u;  // █ or ▀ over a coloured background
                want_fg = top;
                want_bg = depth == Depth::kNone ? 0 : bottom;
              } else if (top != 0) {
                glyph = 0x2580u;  // ▀
                want_fg = top;
              } else if (bottom != 0) {
                glyph = 0x2584u;  // ▄
                want_fg = bottom;
              }
            }
            if (depth != Depth::kNone && (want_fg != fg || want_bg != bg)) {
              if ((want_fg == 0 && fg != 0) || (want_bg == 0 && bg != 0)) {
                out += "\x1b[0m";
                fg = bg = 0;
              }
              if (want_fg != 0 && want_fg != fg) append_colour(&out, want_fg, false, depth);
              if (want_bg != 0 && want_bg != bg) append_colour(&out, want_bg, true, depth);
              fg = want_fg;
              bg = want_bg;
            }
            append_utf8(&out, glyph);
          }
          if (depth != Depth::kNone && (fg != 0 || bg != 0)) out += "\x1b[0m";
        }
        if (row + 1 < canvas_rows) out += out_tty ? "\x1b[K\n" : "\n";
      }
      if (!out_tty) out += "\n";
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    }

    if (options.frames > 0 && drawn >= options.frames) break;
    next += period;
    if (next < seconds_now()) next = seconds_now();  // late: go on, no burst to catch up
    const double left = next - seconds_now();
    if (left > 0) {
      if (interactive) {
        pollfd pfd{0, POLLIN, 0};  // wake early for a key
        poll(&pfd, 1, static_cast<int>(left * 1000));
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(left));
      }
    }
  }
  if (interactive) terminal.leave();
  report_frame_rate(quiet_options, "terminal", drawn - 1, seconds_now() - first_world, session.bodies().size(),
                    session.status().bytes_per_body_all);
  return status;
}

}  // namespace carom::view
