// Drawing carom-view with an SDL_Renderer. See painter.hpp for the approach.

#include "painter.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>

namespace carom::view {

namespace {

constexpr int kAtlasWidth = 1024;
constexpr int kPad = 1;  // transparent texels around each circle: no bleeding under linear filtering
constexpr float kMaxDiameter = 256;
// The diameters pre-rendered: every size up to 24 px (most bodies of a large
// world are small, and those sizes show aliasing first), then coarser steps.
constexpr int kExactDiameters = 64;  // every whole diameter up to this one has its own level
// The diameters pre-rendered: every whole size up to 64 px (a body that size
// or smaller is copied 1:1 by the software renderer), then ~12% steps.
constexpr auto kDiameters = [] {
  std::array<int, kExactDiameters + 12> d{};
  for (int i = 0; i < kExactDiameters; ++i) d[static_cast<std::size_t>(i)] = i + 1;
  constexpr std::array<int, 12> big{72, 80, 88, 96, 112, 128, 144, 160, 184, 208, 232, 256};
  for (std::size_t i = 0; i < big.size(); ++i) d[kExactDiameters + i] = big[i];
  return d;
}();

SDL_Color with_alpha(SDL_Color c, std::uint8_t a) { return {c.r, c.g, c.b, a}; }

void set_colour(SDL_Renderer* r, SDL_Color c) { SDL_SetRenderDrawColor(r, c.r, c.g, c.b, c.a); }

}  // namespace

Painter::Painter(SDL_Renderer* renderer) : renderer_(renderer) {}

Painter::~Painter() {
  for (auto& [key, t] : texts_) SDL_DestroyTexture(t.texture);
  if (atlas_ != nullptr) SDL_DestroyTexture(atlas_);
  if (atlas_add_ != nullptr) SDL_DestroyTexture(atlas_add_);
  if (font_ != nullptr) TTF_CloseFont(font_);
}

std::string Painter::font_path() {
  if (const char* env = std::getenv("CAROM_VIEW_FONT"); env != nullptr && *env != '\0') return env;
  for (const char* p : {"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
                        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                        "/usr/share/fonts/dejavu/DejaVuSansMono.ttf"}) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p;
  }
  return "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
}

bool Painter::init(std::string* error) {
  if (!build_atlas(error)) return false;
  if (TTF_WasInit() == 0 && TTF_Init() != 0) {
    *error = std::string("TTF_Init: ") + TTF_GetError();
    return false;
  }
  const std::string path = font_path();
  font_ = TTF_OpenFont(path.c_str(), 13);
  if (font_ == nullptr) {
    *error = "cannot open the font " + path + " (" + TTF_GetError() +
             "); install fonts-dejavu-core or point CAROM_VIEW_FONT at a .ttf file";
    return false;
  }
  font_height_ = TTF_FontHeight(font_);
  return true;
}

bool Painter::build_atlas(std::string* error) {
  SDL_RendererInfo info{};
  SDL_GetRendererInfo(renderer_, &info);
  software_ = (info.flags & SDL_RENDERER_SOFTWARE) != 0;
  // Shelf packing: left to right, a new row when the width is used up.
  struct Place {
    int x, y, cell;
  };
  std::vector<Place> places;
  int x = 0, y = 0, row = 0;
  for (const int d : kDiameters) {
    // The software renderer copies the small circles 1:1 without filtering:
    // no padding needed, and a 2 px body blends 4 pixels instead of 16.
    const int pad = software_ && d <= kExactDiameters ? 0 : kPad;
    const int cell = d + 2 * pad;
    if (x + cell > kAtlasWidth) {
      x = 0;
      y += row;
      row = 0;
    }
    places.push_back({x, y, cell});
    x += cell;
    row = std::max(row, cell);
  }
  const int height = y + row;
  SDL_Surface* surface = SDL_CreateRGBSurfaceWithFormat(0, kAtlasWidth, height, 32, SDL_PIXELFORMAT_ARGB8888);
  if (surface == nullptr) {
    *error = std::string("atlas surface: ") + SDL_GetError();
    return false;
  }
  SDL_FillRect(surface, nullptr, 0x00FFFFFFu);
  auto* pixels = static_cast<std::uint32_t*>(surface->pixels);
  const int stride = surface->pitch / 4;
  constexpr int kSub = 4;  // 4 x 4 samples per texel: exact-looking coverage at 1-3 px
  for (std::size_t k = 0; k < kDiameters.size(); ++k) {
    const auto& p = places[k];
    const double radius = kDiameters[k] * 0.5;
    const double centre = p.cell * 0.5;
    for (int ty = 0; ty < p.cell; ++ty) {
      for (int tx = 0; tx < p.cell; ++tx) {
        int inside = 0;
        for (int sy = 0; sy < kSub; ++sy) {
          for (int sx = 0; sx < kSub; ++sx) {
            const double dx = tx + (sx + 0.5) / kSub - centre;
            const double dy = ty + (sy + 0.5) / kSub - centre;
            inside += dx * dx + dy * dy <= radius * radius ? 1 : 0;
          }
        }
        const auto alpha = static_cast<std::uint32_t>(std::lround(255.0 * inside / (kSub * kSub)));
        pixels[(p.y + ty) * stride + p.x + tx] = (alpha << 24) | 0x00FFFFFFu;
      }
    }
    levels_.push_back({kDiameters[k], static_cast<float>(p.x) / kAtlasWidth, static_cast<float>(p.y) / height,
                       static_cast<float>(p.x + p.cell) / kAtlasWidth, static_cast<float>(p.y + p.cell) / height,
                       static_cast<float>(p.cell)});
  }
  // ceil-free lookup: the nearest whole diameter -> the first level at least that big.
  level_of_size_.resize(static_cast<std::size_t>(kMaxDiameter) + 1);
  std::size_t level = 0;
  for (std::size_t size = 0; size < level_of_size_.size(); ++size) {
    while (level + 1 < levels_.size() && levels_[level].diameter < static_cast<int>(size)) ++level;
    level_of_size_[size] = static_cast<std::uint16_t>(level);
  }

  atlas_ = SDL_CreateTextureFromSurface(renderer_, surface);
  atlas_add_ = SDL_CreateTextureFromSurface(renderer_, surface);
  SDL_FreeSurface(surface);
  if (atlas_ == nullptr || atlas_add_ == nullptr) {
    *error = std::string("atlas texture: ") + SDL_GetError();
    return false;
  }
  SDL_SetTextureBlendMode(atlas_, SDL_BLENDMODE_BLEND);
  SDL_SetTextureBlendMode(atlas_add_, SDL_BLENDMODE_ADD);
  // Linear filtering for the sizes between levels. The software renderer
  // copies circles up to kExactDiameters 1:1 (no filtering at all) and
  // filters only the few larger ones.
  SDL_SetTextureScaleMode(atlas_, SDL_ScaleModeLinear);
  SDL_SetTextureScaleMode(atlas_add_, SDL_ScaleModeLinear);
  return true;
}

const Painter::Level& Painter::level_for(float diameter_px) const {
  const auto size = static_cast<std::size_t>(std::clamp(std::lround(diameter_px), 1L, static_cast<long>(kMaxDiameter)));
  return levels_[level_of_size_[size]];
}

void Painter::add_quad(float cx, float cy, float diameter_px, SDL_Color colour) {
  const Level& l = level_for(diameter_px);
  float x0, y0, side;
  if (software_ && l.diameter <= kExactDiameters) {
    // The software renderer samples the nearest texel: a circle copied 1:1
    // onto whole pixels keeps its antialiased edge (and the copy is a plain
    // blit, faster than a scaled one). Positions snap to the pixel grid.
    side = l.cell;
    x0 = std::round(cx - 0.5f * side);
    y0 = std::round(cy - 0.5f * side);
  } else {
    side = l.cell * diameter_px / static_cast<float>(l.diameter);
    x0 = cx - 0.5f * side;
    y0 = cy - 0.5f * side;
  }
  const float x1 = x0 + side, y1 = y0 + side;
  const int base = static_cast<int>(vertices_.size());
  vertices_.push_back({{x0, y0}, colour, {l.u0, l.v0}});
  vertices_.push_back({{x1, y0}, colour, {l.u1, l.v0}});
  vertices_.push_back({{x1, y1}, colour, {l.u1, l.v1}});
  vertices_.push_back({{x0, y1}, colour, {l.u0, l.v1}});
  // Two triangles sharing the diagonal 0-2: SDL's software renderer turns
  // such pairs back into one rectangle copy.
  indices_.insert(indices_.end(), {base, base + 1, base + 2, base, base + 2, base + 3});
}

void Painter::draw_bodies(const Session& session) {
  const Bodies& b = session.bodies();
  const Camera& cam = session.camera();
  const auto w = static_cast<float>(cam.width()), h = static_cast<float>(cam.height());
  const auto scale = static_cast<float>(cam.scale());
  const bool by_speed = session.colour_mode() == ColourMode::kSpeed;
  const float speed_scale = session.speed_scale();
  vertices_.clear();
  indices_.clear();
  vertices_.reserve(b.size() * 4);
  indices_.reserve(b.size() * 6);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto sx = static_cast<float>(cam.screen_x(b.x[i]));
    const auto sy = static_cast<float>(cam.screen_y(b.y[i]));
    // A body never vanishes below one pixel: a world of 100k bodies stays visible.
    const float d = std::max(2.0f * b.radius[i] * scale, 1.0f);
    if (sx + d < 0 || sy + d < 0 || sx - d > w || sy - d > h) continue;
    const Rgb c = by_speed ? speed_colour(b.speed[i], speed_scale) : id_colour(b.id[i]);
    add_quad(sx, sy, d, {c.r, c.g, c.b, 255});
  }
  if (!indices_.empty())
    SDL_RenderGeometry(renderer_, atlas_, vertices_.data(), static_cast<int>(vertices_.size()), indices_.data(),
                       static_cast<int>(indices_.size()));
}

void Painter::draw_flashes(const Session& session, std::int64_t now_ns) {
  const Camera& cam = session.camera();
  vertices_.clear();
  indices_.clear();
  for (const Flash& f : session.flashes()) {
    const double age = std::clamp(static_cast<double>(now_ns - f.born_ns) * 1e-9 / kFlashSeconds, 0.0, 1.0);
    // A bright spark that widens a little and dies quickly (a slow, wide
    // fade reads as grey smudges on the dark box).
    const auto fade = static_cast<float>((1.0 - age) * (1.0 - age) * f.strength);
    const auto d = static_cast<float>(3.0 + 5.0 * age);
    const auto a = static_cast<std::uint8_t>(std::lround(255.0f * fade));
    add_quad(static_cast<float>(cam.screen_x(f.x)), static_cast<float>(cam.screen_y(f.y)), d, {255, 245, 210, a});
  }
  if (!indices_.empty())
    SDL_RenderGeometry(renderer_, atlas_add_, vertices_.data(), static_cast<int>(vertices_.size()), indices_.data(),
                       static_cast<int>(indices_.size()));
}

const Painter::Text* Painter::text(const std::string& s, SDL_Color colour) {
  if (font_ == nullptr || s.empty()) return nullptr;
  std::string key = s;
  key.append({'\0', static_cast<char>(colour.r), static_cast<char>(colour.g), static_cast<char>(colour.b),
              static_cast<char>(colour.a)});
  auto it = texts_.find(key);
  if (it == texts_.end()) {
    SDL_Surface* surface = TTF_RenderUTF8_Blended(font_, s.c_str(), colour);
    if (surface == nullptr) return nullptr;
    Text t;
    t.texture = SDL_CreateTextureFromSurface(renderer_, surface);
    t.w = surface->w;
    t.h = surface->h;
    SDL_FreeSurface(surface);
    if (t.texture == nullptr) return nullptr;
    it = texts_.emplace(std::move(key), t).first;
  }
  it->second.used = frame_;
  return &it->second;
}

void Painter::draw_text(const std::string& s, int x, int y, SDL_Color colour) {
  const Text* t = text(s, colour);
  if (t == nullptr) return;
  const SDL_Rect dst{x, y, t->w, t->h};
  SDL_RenderCopy(renderer_, t->texture, nullptr, &dst);
}

void Painter::draw_panel(const std::vector<std::string>& lines, SDL_Color colour, SDL_Color fill, int cx, int cy) {
  int w = 0;
  for (const auto& line : lines)
    if (const Text* t = text(line, colour)) w = std::max(w, t->w);
  const int line_h = std::max(font_height_, 1) + 2;
  const int h = static_cast<int>(lines.size()) * line_h;
  const SDL_Rect box{cx - w / 2 - 12, cy - h / 2 - 10, w + 24, h + 20};
  SDL_SetRenderDrawBlendMode(renderer_, SDL_BLENDMODE_BLEND);
  set_colour(renderer_, fill);
  SDL_RenderFillRect(renderer_, &box);
  set_colour(renderer_, kWall);
  SDL_RenderDrawRect(renderer_, &box);
  for (std::size_t i = 0; i < lines.size(); ++i)
    draw_text(lines[i], box.x + 12, box.y + 10 + static_cast<int>(i) * line_h, colour);
}

void Painter::paint(const Session& session, const Drag& drag, std::int64_t now_ns) {
  ++frame_;
  const Camera& cam = session.camera();
  SDL_SetRenderDrawBlendMode(renderer_, SDL_BLENDMODE_NONE);
  set_colour(renderer_, kBackground);
  SDL_RenderClear(renderer_);

  if (Box box; session.walled(&box)) {
    const auto x0 = static_cast<float>(cam.screen_x(box.x0)), x1 = static_cast<float>(cam.screen_x(box.x1));
    const auto y0 = static_cast<float>(cam.screen_y(box.y1)), y1 = static_cast<float>(cam.screen_y(box.y0));
    const SDL_FRect inside{x0, y0, x1 - x0, y1 - y0};
    set_colour(renderer_, kBoxFill);
    SDL_RenderFillRectF(renderer_, &inside);
    set_colour(renderer_, kWall);
    for (float k = 1; k <= 2; ++k) {
      const SDL_FRect wall{x0 - k, y0 - k, x1 - x0 + 2 * k, y1 - y0 + 2 * k};
      SDL_RenderDrawRectF(renderer_, &wall);
    }
  }

  draw_bodies(session);
  draw_flashes(session, now_ns);

  if (drag.active) {
    SDL_SetRenderDrawBlendMode(renderer_, SDL_BLENDMODE_BLEND);
    vertices_.clear();
    indices_.clear();
    const auto d = static_cast<float>(std::max(2 * session.spawn_radius() * cam.scale(), 3.0));
    add_quad(drag.x0, drag.y0, d, {255, 255, 255, 110});
    SDL_RenderGeometry(renderer_, atlas_, vertices_.data(), static_cast<int>(vertices_.size()), indices_.data(),
                       static_cast<int>(indices_.size()));
    set_colour(renderer_, {255, 255, 255, 200});
    SDL_RenderDrawLineF(renderer_, drag.x0, drag.y0, drag.x1, drag.y1);
  }

  // The heads-up band.
  SDL_SetRenderDrawBlendMode(renderer_, SDL_BLENDMODE_NONE);
  set_colour(renderer_, kHudBand);
  const SDL_Rect band{0, 0, cam.width(), kHudHeight};
  SDL_RenderFillRect(renderer_, &band);
  draw_text(session.hud(), 8, (kHudHeight - font_height_) / 2, kHudText);

  if (const std::string note = session.note(); !note.empty()) {
    SDL_SetRenderDrawBlendMode(renderer_, SDL_BLENDMODE_BLEND);
    if (const Text* t = text(note, {255, 210, 90, 255})) {
      set_colour(renderer_, {0, 0, 0, 170});
      const SDL_Rect r{4, kHudHeight + 4, t->w + 8, t->h + 4};
      SDL_RenderFillRect(renderer_, &r);
      draw_text(note, 8, kHudHeight + 6, {255, 210, 90, 255});
    }
  }
  const int mid_x = cam.width() / 2, mid_y = (cam.height() + kHudHeight) / 2;
  if (const std::string problem = session.problem(); !problem.empty())
    draw_panel({problem}, {255, 170, 150, 255}, with_alpha(kHudBand, 230), mid_x, mid_y);
  if (session.help()) draw_panel(Session::help_lines(), kHudText, with_alpha(kHudBand, 235), mid_x, mid_y);

  // Forget texts that have not been drawn for a while (the HUD changes often).
  if (texts_.size() > 48) {
    for (auto it = texts_.begin(); it != texts_.end();) {
      if (frame_ - it->second.used > 30) {
        SDL_DestroyTexture(it->second.texture);
        it = texts_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

bool write_png(const std::string& path, int width, int height, const void* pixels, int pitch, std::string* error) {
  // The full libpng API rather than png_image_write_*: it lets us pick the
  // fastest compression and one cheap filter. A recorder writes many frames,
  // and the default settings made the encoder 80% of a headless frame.
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  std::vector<std::uint8_t> row(static_cast<std::size_t>(width) * 3);
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    *error = "cannot write " + path + ": libpng failed";
    return false;
  }
  png_init_io(png, file);
  png_set_compression_level(png, 1);
  png_set_filter(png, 0, PNG_FILTER_SUB);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) {
    const auto* in = reinterpret_cast<const std::uint32_t*>(static_cast<const std::uint8_t*>(pixels) +
                                                              static_cast<std::ptrdiff_t>(y) * pitch);
    for (int x = 0; x < width; ++x) {  // ARGB8888 -> R, G, B
      row[static_cast<std::size_t>(3 * x)] = static_cast<std::uint8_t>(in[x] >> 16);
      row[static_cast<std::size_t>(3 * x + 1)] = static_cast<std::uint8_t>(in[x] >> 8);
      row[static_cast<std::size_t>(3 * x + 2)] = static_cast<std::uint8_t>(in[x]);
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace carom::view
