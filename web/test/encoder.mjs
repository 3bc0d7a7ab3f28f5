// A port of proto/src/compact.cpp's encoder (advance_track, encode_track) in
// BigInt, for the decoder's tests only: the page never encodes. BigInt keeps
// it a literal transcription of the C++ int64 code, independent of the
// decoder's number fast path.

export const kMaxQuantized = 2n ** 52n;

function zigzag(v) {
  return v >= 0n ? 2n * v : -2n * v - 1n;
}

function putVarint(v, out) {
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
}

class TokenWriter {
  constructor() {
    this.out = [];
    this.zeros = 0n;
  }
  put(v) {
    if (v === 0n) {
      ++this.zeros;
      return;
    }
    this.flush();
    putVarint(2n * (zigzag(v) - 1n) + 1n, this.out);
  }
  flush() {
    if (this.zeros > 0n) putVarint(2n * (this.zeros - 1n), this.out);
    this.zeros = 0n;
  }
  bytes() {
    this.flush();
    return Uint8Array.from(this.out);
  }
}

/// {id, x, y, dx, dy} with BigInt values: the sender's track after this
/// frame (dx, dy only for positions: the change against `previous`).
export function advanceTrack(position, previous, id, qx, qy) {
  const n = id.length;
  const next = {id: [...id], x: [...qx], y: [...qy], dx: null, dy: null};
  if (!position) return next;
  next.dx = new Array(n).fill(0n);
  next.dy = new Array(n).fill(0n);
  const index = new Map(previous ? previous.id.map((v, k) => [v, k]) : []);
  for (let i = 0; i < n; ++i) {
    const k = index.get(id[i]);
    if (k === undefined) continue;
    next.dx[i] = qx[i] - previous.x[k];
    next.dy[i] = qy[i] - previous.y[k];
  }
  return next;
}

/// The tokens of `current` against `baseline` (null: a key frame).
export function encodeTrack(position, baseline, current) {
  const w = new TokenWriter();
  const index = new Map(baseline ? baseline.id.map((v, k) => [v, k]) : []);
  let lastX = 0n;
  let lastY = 0n;
  for (let i = 0; i < current.id.length; ++i) {
    const k = index.get(current.id[i]);
    if (k !== undefined) {
      const px = position ? baseline.x[k] + baseline.dx[k] : baseline.x[k];
      const py = position ? baseline.y[k] + baseline.dy[k] : baseline.y[k];
      w.put(current.x[i] - px);
      w.put(current.y[i] - py);
    } else {
      w.put(current.x[i] - lastX);
      w.put(current.y[i] - lastY);
      if (position && baseline === null) {
        w.put(current.dx[i]);
        w.put(current.dy[i]);
      }
    }
    lastX = current.x[i];
    lastY = current.y[i];
  }
  return w.bytes();
}
