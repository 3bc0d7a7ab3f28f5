// The compact body stream's decoder (docs/protocol.md, "The compact stream"),
// a port of proto/src/compact.cpp's decode_track. It reads the residual
// tokens of one channel and rebuilds the quantized values exactly: every
// quantized value is within +-2^52 and every change within +-2^53, so a JS
// number holds them exactly; tokens and intermediate sums that do not fit
// (a long jump, a hostile stream) go through BigInt.

/// The largest quantized magnitude (quanta), as compact.hpp's kMaxQuantized.
export const kMaxQuantized = 2 ** 52;
/// The largest change a valid stream can carry: two values within +-2^52.
const kMaxChange = 2 ** 53;
const kBigMax = BigInt(kMaxQuantized);

/// Which prediction a track uses: positions carry the last change D.
export const Channel = Object.freeze({position: 0, velocity: 1});

/// A broken stream: the bytes, the body table or the baseline do not fit.
export class CompactError extends Error {}

/// One channel's decoded state: ids in table order, the quantized x and y,
/// and for positions the last changes dx, dy (all exact integers).
export class Track {
  constructor(n, withChanges) {
    this.id = new Uint32Array(n);
    this.x = new Float64Array(n);
    this.y = new Float64Array(n);
    this.dx = withChanges ? new Float64Array(n) : null;
    this.dy = withChanges ? new Float64Array(n) : null;
  }
}

// Residuals out of tokens (unsigned LEB128; even: a run of t / 2 + 1 zeros,
// odd: one residual v with zigzag(v) = (t - 1) / 2 + 1). A residual is a
// number when it is a safe integer, a BigInt otherwise.
class TokenReader {
  constructor(bytes) {
    this.bytes = bytes;
    this.p = 0;
    this.zeros = 0;
  }

  get() {
    if (this.zeros > 0) {
      --this.zeros;
      return 0;
    }
    const t = this.varint();
    if (typeof t === "number") {
      if (t % 2 === 0) {
        this.zeros = t / 2;  // this call returns one of the t / 2 + 1 zeros
        return 0;
      }
      const u = (t - 1) / 2 + 1;
      return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
    }
    if ((t & 1n) === 0n) {
      this.zeros = Number(t / 2n);  // beyond any table: finish() refuses it
      return 0;
    }
    const u = (t - 1n) / 2n + 1n;
    const v = (u & 1n) === 0n ? u / 2n : -(u + 1n) / 2n;
    return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
  }

  // The first seven bytes (49 bits) add up exactly in a number; a longer
  // token continues in BigInt, to at most 64 bits as the C++ reader allows.
  varint() {
    const bytes = this.bytes;
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 7; ++i) {
      if (this.p === bytes.length) throw new CompactError("truncated: the stream ends inside the residuals");
      const byte = bytes[this.p++];
      v += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return v;
      scale *= 128;
    }
    let big = BigInt(v);
    for (let shift = 49n; shift < 64n; shift += 7n) {
      if (this.p === bytes.length) throw new CompactError("truncated: the stream ends inside the residuals");
      const byte = bytes[this.p++];
      if (shift === 63n && byte > 1) throw new CompactError("a token is longer than 64 bits");
      big += BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return big;
    }
    throw new CompactError("a token is longer than 64 bits");
  }

  finish() {
    if (this.zeros > 0) throw new CompactError("a run of zeros goes past the last body");
    if (this.p !== this.bytes.length) throw new CompactError("bytes left over after the last body");
  }
}

// a + b + r exactly, refused beyond +-2^52: numbers while every step stays a
// safe integer (then no step rounded), BigInt otherwise.
function sum(a, b, r) {
  if (typeof r === "number") {
    const s = a + b;
    const q = s + r;
    if (Number.isSafeInteger(s) && Number.isSafeInteger(q)) {
      if (q > kMaxQuantized || q < -kMaxQuantized)
        throw new CompactError("a decoded value is beyond +-2^52 quanta (corrupt residuals)");
      return q;
    }
  }
  const q = BigInt(a) + BigInt(b) + BigInt(r);
  if (q > kBigMax || q < -kBigMax)
    throw new CompactError("a decoded value is beyond +-2^52 quanta (corrupt residuals)");
  return Number(q);
}

// A key frame's change D. The C++ reader takes any 64-bit value here; no
// encoder can send one beyond +-2^53 (two values within +-2^52), so this
// reader refuses it rather than carry a value it could not hold exactly.
function change(r) {
  if (typeof r !== "number" || r > kMaxChange || r < -kMaxChange)
    throw new CompactError("a key frame's change is beyond +-2^53 quanta (corrupt residuals)");
  return r;
}

/// Decodes one channel of a compact snapshot: `ids` is the body table's ids
/// (sorted), `bytes` the channel's tokens (Uint8Array), `baseline` the
/// previous snapshot's Track of this channel for a delta frame or null for a
/// key frame. Returns the new Track; throws CompactError when the bytes are
/// corrupt, truncated or too long, or the ids are not increasing.
export function decodeTrack(channel, baseline, ids, bytes) {
  const position = channel === Channel.position;
  const n = ids.length;
  const next = new Track(n, position);
  const r = new TokenReader(bytes);
  const base = baseline;
  const baseN = base ? base.id.length : 0;
  let j = 0;  // walks the baseline's sorted ids alongside the table's
  let lastX = 0;
  let lastY = 0;
  for (let i = 0; i < n; ++i) {
    const id = ids[i];
    if (i > 0 && id <= ids[i - 1]) throw new CompactError("the body table's ids are not increasing");
    next.id[i] = id;
    const rx = r.get();
    const ry = r.get();
    while (j < baseN && base.id[j] < id) ++j;
    let x, y;
    if (j < baseN && base.id[j] === id) {
      const bx = base.x[j];
      const by = base.y[j];
      if (position) {
        x = sum(bx, base.dx[j], rx);
        y = sum(by, base.dy[j], ry);
        next.dx[i] = x - bx;  // exact: both within +-2^52
        next.dy[i] = y - by;
      } else {
        x = sum(bx, 0, rx);
        y = sum(by, 0, ry);
      }
    } else {
      x = sum(lastX, 0, rx);
      y = sum(lastY, 0, ry);
      if (position && base === null) {
        next.dx[i] = change(r.get());
        next.dy[i] = change(r.get());
      }
    }
    next.x[i] = x;
    next.y[i] = y;
    lastX = x;
    lastY = y;
  }
  r.finish();
  return next;
}

/// The compact stream of one connection: the last compact snapshot's tick
/// and decoded tracks, which the next delta frame predicts from. Mirrors
/// carom::client::Connection's decode_compact.
export class CompactStream {
  constructor() {
    this.reset();
  }

  /// Forget everything (a new connection): the next frame must be a key frame.
  reset() {
    this.tick = null;
    this.positions = null;
    this.velocities = null;
  }

  /// Decodes `compact` (a CompactBodies message as protobufjs decodes it:
  /// baseline_tick present only when set) of the snapshot of `tick` against
  /// the body table's `ids`. Returns {x, y, vx, vy} in metres and m/s
  /// (Float64Array; vx, vy null without velocities). Throws CompactError.
  decode(tick, compact, ids) {
    const pq = compact.position_quantum;
    if (!(pq > 0) || !Number.isFinite(pq)) throw new CompactError(`position_quantum ${pq} is not > 0`);
    const key = !Object.prototype.hasOwnProperty.call(compact, "baseline_tick");
    if (!key && (this.positions === null || compact.baseline_tick !== this.tick)) {
      const had = this.positions === null ? "none" : `tick ${this.tick}`;
      throw new CompactError(
          `it is coded against tick ${compact.baseline_tick}, but the last compact snapshot here was ${had}`);
    }
    let positions;
    try {
      positions = decodeTrack(Channel.position, key ? null : this.positions, ids, compact.positions);
    } catch (e) {
      throw e instanceof CompactError ? new CompactError(`positions: ${e.message}`) : e;
    }
    const vq = compact.velocity_quantum;
    const withVelocities = vq !== 0 && vq !== undefined;  // set only with velocities
    let velocities = null;
    if (withVelocities) {
      if (!(vq > 0) || !Number.isFinite(vq)) throw new CompactError(`velocity_quantum ${vq} is not > 0`);
      try {
        velocities = decodeTrack(Channel.velocity, key ? null : this.velocities, ids, compact.velocities);
      } catch (e) {
        throw e instanceof CompactError ? new CompactError(`velocities: ${e.message}`) : e;
      }
    }
    this.positions = positions;
    this.velocities = velocities;
    this.tick = tick;
    return {
      x: scaled(positions.x, pq),
      y: scaled(positions.y, pq),
      vx: velocities ? scaled(velocities.x, vq) : null,
      vy: velocities ? scaled(velocities.y, vq) : null,
    };
  }
}

function scaled(q, quantum) {
  const out = new Float64Array(q.length);
  for (let i = 0; i < q.length; ++i) out[i] = q[i] * quantum;
  return out;
}

// --- compact events ----------------------------------------------------------

const kMaxId = 0xffffffff;

/// One decoded compact event, as proto/src/compact.hpp's CompactEvent: the
/// point in quanta (exact integers), the impulse as its two bfloat16s' bits.
export class CompactEvent {
  constructor(tick, a, b, x, y, ix, iy) {
    this.tick = tick;
    this.a = a;
    this.b = b;
    this.x = x;
    this.y = y;
    this.ix = ix;
    this.iy = iy;
  }
}

/// The value of a bfloat16 (its bits as the high half of a float32).
export function fromBfloat16(bits) {
  const f = new Float32Array(1);
  new Uint32Array(f.buffer)[0] = (bits & 0xffff) << 16;
  return f[0];
}

// An exact sum of two residual-built values, or null when it is beyond what
// any valid stream holds (a BigInt residual, or an unsafe sum): every range
// checked below is within +-2^53, so such a sum is out of it anyway, and the
// C++ decoder's wrapping int64 sum is out of it too.
function exact(a, r) {
  if (typeof r !== "number") return null;
  const s = a + r;
  return Number.isSafeInteger(s) ? s : null;
}

// Index of `id` in the sorted ids, or -1.
function indexOf(ids, id) {
  let lo = 0, hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < ids.length && ids[lo] === id ? lo : -1;
}

/// Decodes a snapshot's CompactEvents (docs/protocol.md, "Compact events"),
/// a port of proto/src/compact.cpp's decode_events: `tokens` and `impulses`
/// (Uint8Array) of the snapshot of `tick`, whose decoded position Track is
/// `positions`. Returns CompactEvents; throws CompactError when the bytes are
/// truncated, left over, or give an id, tick or point out of range.
export function decodeEvents(tokens, impulses, tick, positions) {
  if (impulses.length % 4 !== 0) throw new CompactError("impulses is not 4 bytes an event");
  const n = impulses.length / 4;
  const r = new TokenReader(tokens);
  const out = new Array(n);
  let lastAge = 0, lastA = 0, lastX = 0, lastY = 0;
  for (let i = 0; i < n; ++i) {
    const rAge = r.get(), rA = r.get(), rB = r.get(), rx = r.get(), ry = r.get();
    const age = exact(lastAge, rAge), a = exact(lastA, rA);
    const b = a === null ? null : exact(a, rB);
    if (age === null || age < 0 || age > tick) throw new CompactError("an event's tick is after the snapshot's or before tick 0");
    if (a === null || b === null || a < 0 || a > kMaxId || b < 0 || b > kMaxId)
      throw new CompactError("an event's body id is outside [0, 2^32)");
    // The prediction: the midpoint of the two bodies, rounded down (their
    // sum is within +-2^53, exact), else the previous point.
    let px = lastX, py = lastY;
    const ia = indexOf(positions.id, a), ib = indexOf(positions.id, b);
    if (ia >= 0 && ib >= 0) {
      px = Math.floor((positions.x[ia] + positions.x[ib]) / 2);
      py = Math.floor((positions.y[ia] + positions.y[ib]) / 2);
    }
    const x = exact(px, rx), y = exact(py, ry);
    if (x === null || y === null || x > kMaxQuantized || x < -kMaxQuantized || y > kMaxQuantized || y < -kMaxQuantized)
      throw new CompactError("an event's point is beyond +-2^52 quanta (corrupt residuals)");
    out[i] = new CompactEvent(tick - age, a, b, x, y, impulses[4 * i] | (impulses[4 * i + 1] << 8),
                              impulses[4 * i + 2] | (impulses[4 * i + 3] << 8));
    lastAge = age;
    lastA = a;
    lastX = x;
    lastY = y;
  }
  r.finish();
  return out;
}
