#pragma once
/// \file Draws a Session with an SDL_Renderer: the same code serves the window
/// (hardware or software renderer) and the headless recorder (SDL's software
/// renderer on an SDL_Surface).
///
/// Bodies are textured quads, one per body, from an atlas of antialiased
/// circles pre-rendered at every whole diameter up to 64 px and in ~12% steps
/// up to 256 px, all in ONE SDL_RenderGeometry call per frame (per-vertex
/// colour). A GPU renderer samples the level at or just above the body's size with
/// linear filtering. SDL's software renderer turns each quad back into a
/// rectangle copy; there the small circles are copied 1:1 onto whole pixels
/// (no filtering, no padding: exact antialiased edges and the fewest pixels
/// to blend). The flashes are a second call with the same atlas, additive.
///
/// Text: SDL2_ttf with DejaVu Sans Mono (Debian's fonts-dejavu-core) rather
/// than an embedded bitmap font: antialiased, every character the heads-up
/// line uses (·), readable at any size, and two small Debian packages instead
/// of a hand-made glyph table; CAROM_VIEW_FONT points at another .ttf.
///
/// Threading: the thread that owns the renderer.

#include <SDL.h>
#include <SDL_ttf.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "session.hpp"

namespace carom::view {

/// Colours of the picture (the tests know them too).
inline constexpr SDL_Color kBackground{10, 12, 18, 255};
inline constexpr SDL_Color kBoxFill{24, 28, 38, 255};
inline constexpr SDL_Color kWall{120, 130, 150, 255};
inline constexpr SDL_Color kHudBand{34, 38, 52, 255};
inline constexpr SDL_Color kHudText{232, 234, 242, 255};
/// Height of the heads-up band at the top, pixels.
inline constexpr int kHudHeight = 24;

/// The user's drag in progress (window only), screen pixels.
struct Drag {
  bool active = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

class Painter {
 public:
  /// `renderer` stays the caller's and must outlive the Painter.
  explicit Painter(SDL_Renderer* renderer);
  ~Painter();
  Painter(const Painter&) = delete;
  Painter& operator=(const Painter&) = delete;

  /// Builds the circle atlas and opens the font. False (and *error) on failure.
  bool init(std::string* error);
  /// Draws one frame of `session` into the whole render target.
  void paint(const Session& session, const Drag& drag, std::int64_t now_ns);

  /// The .ttf the heads-up line uses: $CAROM_VIEW_FONT, else DejaVu Sans Mono.
  static std::string font_path();

 private:
  struct Level {
    int diameter;   // of the circle, texels
    float u0, v0, u1, v1;
    float cell;     // side of the cell (diameter + padding), texels
  };
  struct Text {
    SDL_Texture* texture = nullptr;
    int w = 0, h = 0;
    std::uint64_t used = 0;
  };

  bool build_atlas(std::string* error);
  const Level& level_for(float diameter_px) const;
  void add_quad(float cx, float cy, float diameter_px, SDL_Color colour);
  void draw_bodies(const Session& session);
  void draw_flashes(const Session& session, std::int64_t now_ns);
  void draw_text(const std::string& text, int x, int y, SDL_Color colour);
  void draw_panel(const std::vector<std::string>& lines, SDL_Color text, SDL_Color fill, int cx, int cy);
  const Text* text(const std::string& s, SDL_Color colour);

  SDL_Renderer* renderer_;
  bool software_ = false;               // SDL's software renderer: whole-pixel circles
  SDL_Texture* atlas_ = nullptr;        // alpha blended
  SDL_Texture* atlas_add_ = nullptr;    // the same circles, additive (flashes)
  std::vector<Level> levels_;
  std::vector<std::uint16_t> level_of_size_;  // ceil(diameter px) -> level
  TTF_Font* font_ = nullptr;
  int font_height_ = 0;
  std::unordered_map<std::string, Text> texts_;
  std::uint64_t frame_ = 0;
  std::vector<SDL_Vertex> vertices_;
  std::vector<int> indices_;
};

/// Writes `pixels` (ARGB8888, `pitch` bytes per row) to a PNG file (RGB).
/// False (and *error) on failure.
bool write_png(const std::string& path, int width, int height, const void* pixels, int pitch, std::string* error);

}  // namespace carom::view
