// Draws bodies and collision flashes, two ways behind one interface:
//
// - WebGL2 (a real GPU): one draw of one point per body, the circle cut out
//   in the fragment shader, positions interpolated between two snapshots in
//   the vertex shader. Points, not instanced quads: Chromium's software
//   WebGL (SwiftShader) pays per instance, and points cost it 8x less.
// - Software (no GPU: WebGL2 missing or SwiftShader): the page fills the
//   pixels itself, span by span, into one ImageData. Measured in headless
//   Chromium on this project's 2-core machine under load, 100 000 bodies:
//   WebGL2 points in SwiftShader 130-200 ms a frame, this 26 ms.
//
// Both keep the same instance data, built once per snapshot (setFrame).

const kFloats = 6;  // per instance: previous x, y, current x, y, radius, colour value

/// The colour of a body: a value in [0, 1] read through a palette.
export const ColourMode = Object.freeze({speed: 0, id: 1, mass: 2});

const kVertex = `#version 300 es
layout(location = 1) in vec2 a_prev;
layout(location = 2) in vec2 a_cur;
layout(location = 3) in float a_radius;
layout(location = 4) in float a_value;
uniform float u_alpha;
uniform vec2 u_center;  // metres, relative to the origin of the positions
uniform vec2 u_scale;   // clip units per metre
uniform float u_pixel;  // metres per pixel
uniform int u_mode;
out float v_px;
out float v_value;
flat out int v_mode;
void main() {
  vec2 p = mix(a_prev, a_cur, u_alpha);
  float r = a_radius;
  if (u_mode == 3) r = (3.0 + 9.0 * (1.0 - a_value)) * u_pixel;  // a flash grows as it fades
  r = max(r, 0.7 * u_pixel);  // never less than a pixel across
  float half_size = r + 0.5 * u_pixel;  // half a pixel of margin for the antialiased edge
  v_px = r / u_pixel;
  v_value = a_value;
  v_mode = u_mode;
  gl_Position = vec4((p - u_center) * u_scale, 0.0, 1.0);
  gl_PointSize = 2.0 * half_size / u_pixel;  // a body larger than the point size limit is drawn at the limit
}`;

const kFragment = `#version 300 es
precision mediump float;
in float v_px;
in float v_value;
flat in int v_mode;
out vec4 colour;
vec3 ramp(float t) {  // dark blue, cyan, yellow, red
  t = clamp(t, 0.0, 1.0);
  vec3 a = mix(vec3(0.15, 0.25, 0.75), vec3(0.1, 0.8, 0.9), smoothstep(0.0, 0.35, t));
  vec3 b = mix(a, vec3(0.98, 0.88, 0.25), smoothstep(0.35, 0.7, t));
  return mix(b, vec3(0.95, 0.25, 0.15), smoothstep(0.7, 1.0, t));
}
vec3 hue(float h) {
  vec3 k = clamp(abs(mod(h * 6.0 + vec3(0.0, 4.0, 2.0), 6.0) - 3.0) - 1.0, 0.0, 1.0);
  return mix(vec3(0.95), k, 0.6) * 0.95;
}
void main() {
  float d = length((gl_PointCoord * 2.0 - 1.0) * (1.0 + 0.5 / v_px));  // 1 at the body's edge
  float edge = 1.0 / v_px;  // one pixel, in radii
  if (v_mode == 3) {
    float ring = 1.0 - smoothstep(0.0, 2.0 * edge + 0.12, abs(d - 0.85));
    float a = ring * v_value;
    if (a <= 0.0) discard;
    colour = vec4(vec3(1.0, 0.95, 0.7) * a, a);
    return;
  }
  float a = clamp((1.0 - d) / edge + 0.5, 0.0, 1.0);
  if (a <= 0.0) discard;
  vec3 c = v_mode == 1 ? hue(v_value) : ramp(v_value);
  if (v_px > 4.0) c *= mix(1.0, 0.65, smoothstep(1.0 - 2.5 * edge, 1.0 - edge, d));  // a rim
  colour = vec4(c * a, a);
}`;

function compile(gl, type, source) {
  const s = gl.createShader(type);
  gl.shaderSource(s, source);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
  return s;
}

/// The view: `center` (metres, world), `pixelsPerMetre`, and the canvas size.
export class Camera {
  constructor() {
    this.cx = 0;
    this.cy = 0;
    this.pixelsPerMetre = 1;
    this.width = 1;
    this.height = 1;
  }
  /// World position of a canvas pixel (CSS pixels, y down).
  toWorld(px, py) {
    return [this.cx + (px - this.width / 2) / this.pixelsPerMetre, this.cy - (py - this.height / 2) / this.pixelsPerMetre];
  }
  toScreen(x, y) {
    return [(x - this.cx) * this.pixelsPerMetre + this.width / 2, this.height / 2 - (y - this.cy) * this.pixelsPerMetre];
  }
  /// Shows [minX, maxX] x [minY, maxY] whole, with a margin.
  fit(minX, minY, maxX, maxY) {
    const w = Math.max(maxX - minX, 1e-9);
    const h = Math.max(maxY - minY, 1e-9);
    this.cx = (minX + maxX) / 2;
    this.cy = (minY + maxY) / 2;
    this.pixelsPerMetre = 0.94 * Math.min(this.width / w, this.height / h);
  }
  /// Zooms by `factor` keeping the world point under (px, py) in place.
  zoomAt(px, py, factor) {
    const [wx, wy] = this.toWorld(px, py);
    this.pixelsPerMetre *= factor;
    const [nx, ny] = this.toWorld(px, py);
    this.cx += wx - nx;
    this.cy += wy - ny;
  }
}

// What both renderers draw: per body, the previous and current position
// (relative to an origin, so float32 keeps them precise), radius and colour
// value.
class Bodies {
  constructor(canvas) {
    this.canvas = canvas;
    this.count = 0;
    this.data = new Float32Array(0);
    this.originX = 0;
    this.originY = 0;
  }

  setOrigin(x, y) {
    this.originX = x;
    this.originY = y;
  }

  /// The bodies to draw: moving from `prev` (a Frame or null) to `cur`,
  /// coloured by `mode`. Called once per snapshot.
  setFrame(prev, cur, mode) {
    const n = cur.ids.length;
    if (this.data.length < n * kFloats) this.data = new Float32Array(Math.ceil(n * 1.25) * kFloats);
    const d = this.data;
    const value = colourValues(cur, mode);
    const ox = this.originX;
    const oy = this.originY;
    let j = 0;
    const pn = prev ? prev.ids.length : 0;
    for (let i = 0, o = 0; i < n; ++i, o += kFloats) {
      const id = cur.ids[i];
      const x = cur.x[i] - ox;
      const y = cur.y[i] - oy;
      while (j < pn && prev.ids[j] < id) ++j;  // both sorted by id
      if (j < pn && prev.ids[j] === id) {
        d[o] = prev.x[j] - ox;
        d[o + 1] = prev.y[j] - oy;
      } else {
        d[o] = x;
        d[o + 1] = y;
      }
      d[o + 2] = x;
      d[o + 3] = y;
      d[o + 4] = cur.radius[i];
      d[o + 5] = value[i];
    }
    this.count = n;
    this.uploaded();
  }

  uploaded() {}

  // The canvas at the device's pixel size; returns [width, height, dpr].
  size(camera) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(camera.width * dpr));
    const h = Math.max(1, Math.round(camera.height * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    return [w, h, dpr];
  }
}

class GlRenderer extends Bodies {
  constructor(canvas, gl) {
    super(canvas);
    this.kind = "WebGL2";
    this.gl = gl;
    const p = gl.createProgram();
    gl.attachShader(p, compile(gl, gl.VERTEX_SHADER, kVertex));
    gl.attachShader(p, compile(gl, gl.FRAGMENT_SHADER, kFragment));
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
    this.program = p;
    this.u = {};
    for (const name of ["u_alpha", "u_center", "u_scale", "u_pixel", "u_mode"]) this.u[name] = gl.getUniformLocation(p, name);
    this.bodies = this.makeVao(gl);
    this.flashes = this.makeVao(gl);
  }

  makeVao(gl) {
    const vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    const buffer = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    const stride = kFloats * 4;
    for (const [loc, size, offset] of [[1, 2, 0], [2, 2, 2], [3, 1, 4], [4, 1, 5]]) {
      gl.enableVertexAttribArray(loc);
      gl.vertexAttribPointer(loc, size, gl.FLOAT, false, stride, offset * 4);
    }
    gl.bindVertexArray(null);
    return {vao, buffer, capacity: 0};
  }

  uploaded() {
    this.upload(this.bodies, this.data, this.count);
  }

  upload(target, d, n) {
    const gl = this.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, target.buffer);
    const bytes = n * kFloats * 4;
    if (target.capacity < bytes) {
      target.capacity = Math.max(Math.ceil(bytes * 1.25), 4096);
      gl.bufferData(gl.ARRAY_BUFFER, target.capacity, gl.DYNAMIC_DRAW);
    }
    gl.bufferSubData(gl.ARRAY_BUFFER, 0, d, 0, n * kFloats);
  }

  /// Draws one frame: bodies at `alpha` of the way from prev to cur, then
  /// `flashes` ([{x, y, life in (0, 1]}]).
  draw(camera, alpha, mode, flashes) {
    const [w, h, dpr] = this.size(camera);
    const gl = this.gl;
    gl.viewport(0, 0, w, h);
    gl.clearColor(0.06, 0.07, 0.09, 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.ONE, gl.ONE_MINUS_SRC_ALPHA);
    gl.useProgram(this.program);
    gl.uniform1f(this.u.u_alpha, alpha);
    gl.uniform2f(this.u.u_center, camera.cx - this.originX, camera.cy - this.originY);
    gl.uniform2f(this.u.u_scale, (2 * camera.pixelsPerMetre) / camera.width, (2 * camera.pixelsPerMetre) / camera.height);
    gl.uniform1f(this.u.u_pixel, 1 / (camera.pixelsPerMetre * dpr));
    gl.uniform1i(this.u.u_mode, mode === ColourMode.id ? 1 : 0);
    if (this.count > 0) {
      gl.bindVertexArray(this.bodies.vao);
      gl.drawArrays(gl.POINTS, 0, this.count);
    }
    if (flashes.length > 0) {
      const f = new Float32Array(flashes.length * kFloats);
      for (let i = 0, o = 0; i < flashes.length; ++i, o += kFloats) {
        f[o] = f[o + 2] = flashes[i].x - this.originX;
        f[o + 1] = f[o + 3] = flashes[i].y - this.originY;
        f[o + 5] = flashes[i].life;
      }
      this.upload(this.flashes, f, flashes.length);
      gl.uniform1i(this.u.u_mode, 3);
      gl.bindVertexArray(this.flashes.vao);
      gl.drawArrays(gl.POINTS, 0, flashes.length);
    }
    gl.bindVertexArray(null);
  }
}

// The shader's palettes as 256-entry tables of ABGR pixels (ImageData's
// byte order on little-endian machines, which every browser runs on).
function palette(colour) {
  const table = new Uint32Array(256);
  for (let k = 0; k < 256; ++k) {
    const [r, g, b] = colour(k / 255);
    table[k] = (0xff << 24) | (Math.round(b * 255) << 16) | (Math.round(g * 255) << 8) | Math.round(r * 255);
  }
  return table;
}
const smooth = (a, b, t) => {
  const x = Math.min(Math.max((t - a) / (b - a), 0), 1);
  return x * x * (3 - 2 * x);
};
const mix3 = (p, q, t) => p.map((v, i) => v + (q[i] - v) * t);
const kRamp = palette((t) => {
  const a = mix3([0.15, 0.25, 0.75], [0.1, 0.8, 0.9], smooth(0, 0.35, t));
  const b = mix3(a, [0.98, 0.88, 0.25], smooth(0.35, 0.7, t));
  return mix3(b, [0.95, 0.25, 0.15], smooth(0.7, 1, t));
});
const kHue = palette((h) => [0, 4, 2].map((o) => {
  const k = Math.min(Math.max(Math.abs(((h * 6 + o) % 6) - 3) - 1, 0), 1);
  return (0.95 + (k - 0.95) * 0.6) * 0.95;
}));
const kBackground = 0xff171210;  // #101217, the WebGL clear colour

class SoftRenderer extends Bodies {
  constructor(canvas, why) {
    super(canvas);
    this.kind = `software (${why})`;
    this.ctx = canvas.getContext("2d", {alpha: false});
    this.image = null;
  }

  draw(camera, alpha, mode, flashes) {
    const [w, h, dpr] = this.size(camera);
    if (!this.image || this.image.width !== w || this.image.height !== h) {
      this.image = this.ctx.createImageData(w, h);
      this.pixels = new Uint32Array(this.image.data.buffer);
    }
    const px = this.pixels;
    px.fill(kBackground);
    const lut = mode === ColourMode.id ? kHue : kRamp;
    const s = camera.pixelsPerMetre * dpr;
    const x0 = w / 2 - (camera.cx - this.originX) * s;
    const y0 = h / 2 + (camera.cy - this.originY) * s;
    const d = this.data;
    for (let i = 0, o = 0; i < this.count; ++i, o += kFloats) {
      const cx = x0 + (d[o] + (d[o + 2] - d[o]) * alpha) * s;
      const cy = y0 - (d[o + 1] + (d[o + 3] - d[o + 1]) * alpha) * s;
      const r = d[o + 4] * s;
      const colour = lut[Math.min(255, Math.max(0, (d[o + 5] * 255) | 0))];
      if (r < 0.75) {  // at most a pixel: one pixel
        const x = Math.floor(cx);
        const y = Math.floor(cy);
        if (x >= 0 && x < w && y >= 0 && y < h) px[y * w + x] = colour;
        continue;
      }
      const top = Math.max(0, Math.ceil(cy - r - 0.5));
      const bottom = Math.min(h - 1, Math.floor(cy + r - 0.5));
      for (let y = top; y <= bottom; ++y) {  // rows whose pixel centres are inside
        const dy = y + 0.5 - cy;
        const half = Math.sqrt(r * r - dy * dy);
        const left = Math.max(0, Math.ceil(cx - half - 0.5));
        const right = Math.min(w - 1, Math.floor(cx + half - 0.5));
        for (let k = y * w + left, end = y * w + right; k <= end; ++k) px[k] = colour;
      }
    }
    // Flashes: rings of pixels blended by their life (canvas arcs cost
    // about a millisecond per hundred here).
    for (const f of flashes) {
      const cx = x0 + (f.x - this.originX) * s;
      const cy = y0 - (f.y - this.originY) * s;
      const r = (3 + 9 * (1 - f.life)) * dpr;
      const steps = Math.ceil(2 * Math.PI * r);
      const a = f.life;
      for (let k = 0; k < steps; ++k) {
        const x = Math.round(cx + r * Math.cos((2 * Math.PI * k) / steps));
        const y = Math.round(cy + r * Math.sin((2 * Math.PI * k) / steps));
        if (x < 0 || x >= w || y < 0 || y >= h) continue;
        const p = px[y * w + x];
        const red = (p & 0xff) + (255 - (p & 0xff)) * a;
        const green = ((p >> 8) & 0xff) + (242 - ((p >> 8) & 0xff)) * a;
        const blue = ((p >> 16) & 0xff) + (178 - ((p >> 16) & 0xff)) * a;
        px[y * w + x] = (0xff << 24) | (blue << 16) | (green << 8) | red;
      }
    }
    this.ctx.putImageData(this.image, 0, 0);
  }
}

// Whether this browser's WebGL runs on the CPU: SwiftShader (Chromium) or
// llvmpipe / softpipe (Mesa), read from a throwaway canvas, since a canvas
// keeps the first kind of context it gives.
function webglIsSoftware() {
  const gl = document.createElement("canvas").getContext("webgl2");
  if (!gl) return "no WebGL2";
  const info = gl.getExtension("WEBGL_debug_renderer_info");
  const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  const lose = gl.getExtension("WEBGL_lose_context");
  if (lose) lose.loseContext();
  return /swiftshader|llvmpipe|softpipe/i.test(name) ? "no GPU" : "";
}

/// The renderer for `canvas`: `choice` "webgl", "software", or "auto"
/// (WebGL2 on a GPU, software otherwise). Both have kind, setOrigin,
/// setFrame(prev, cur, mode), draw(camera, alpha, mode, flashes).
export function makeRenderer(canvas, choice = "auto") {
  const software = choice === "software" ? "asked for" : choice === "webgl" ? "" : webglIsSoftware();
  if (!software) {
    const gl = canvas.getContext("webgl2", {antialias: false, premultipliedAlpha: true, alpha: false});
    if (gl) return new GlRenderer(canvas, gl);
    return new SoftRenderer(canvas, "no WebGL2");
  }
  return new SoftRenderer(canvas, software);
}

/// Each body's colour value in [0, 1]: speed against three times the mean
/// speed, the id scattered around the colour wheel, or mass on a log scale
/// between the lightest and the heaviest (snapshots carry radii, not masses:
/// mass is taken as area, which it is for bodies spawned with the world's
/// density).
export function colourValues(frame, mode) {
  const n = frame.ids.length;
  const out = new Float32Array(n);
  if (mode === ColourMode.id) {
    for (let i = 0; i < n; ++i) out[i] = (frame.ids[i] * 0.6180339887) % 1;
  } else if (mode === ColourMode.speed) {
    if (!frame.vx) return out;
    const vx = frame.vx;
    const vy = frame.vy;
    let sum = 0;
    for (let i = 0; i < n; ++i) {
      out[i] = Math.sqrt(vx[i] * vx[i] + vy[i] * vy[i]);  // not Math.hypot: several times slower
      sum += out[i];
    }
    const scale = sum > 0 ? n / (3 * sum) : 0;
    for (let i = 0; i < n; ++i) out[i] *= scale;
  } else {
    let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < n; ++i) {
      const r = frame.radius[i];
      if (r < lo) lo = r;
      if (r > hi) hi = r;
    }
    const span = Math.log(hi / lo);
    for (let i = 0; i < n; ++i) out[i] = span > 0 ? Math.log(frame.radius[i] / lo) / span : 0.5;
  }
  return out;
}
