// The page's compact-stream decoder (src/compact.js): the bytes pinned in
// docs/protocol.md and tests/compact_test.cpp decode to the same values, long
// random streams round-trip exactly against a port of the C++ encoder (values
// up to +-2^52 and jumps across the whole range included), and corrupt,
// truncated or overlong bytes are refused with a CompactError, never a crash;
// compact events: the worked example's bytes, bfloat16 values, and the
// refusals of tests/compact_test.cpp.

import assert from "node:assert/strict";
import path from "node:path";
import {test} from "node:test";
import {fileURLToPath} from "node:url";

import {Channel, CompactError, CompactStream, decodeEvents, decodeTrack, fromBfloat16, kMaxQuantized}
  from "../src/compact.js";
import {makeProtocol} from "../src/protocol.js";
import {loadDescriptor} from "../tools/descriptor.mjs";
import {advanceTrack, encodeTrack} from "./encoder.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

// SplitMix64, as carom/random.hpp: the same generator the C++ tests use.
class SplitMix64 {
  constructor(seed) {
    this.s = BigInt.asUintN(64, BigInt(seed));
  }
  next() {
    this.s = BigInt.asUintN(64, this.s + 0x9e3779b97f4a7c15n);
    let z = this.s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  }
  below(n) {
    return Number(this.next() % BigInt(n));
  }
}

const bytes = (...b) => Uint8Array.from(b);
const asNumbers = (a) => Array.from(a, Number);

test("the worked example of docs/protocol.md and the pinned bytes of compact_test.cpp", () => {
  // Residuals 5, -1, 0, 0, 1, 0, 0, 0: body 3 at (5, -1), body 7 at (6, -1).
  const key = decodeTrack(Channel.position, null, [3, 7], bytes(0x13, 0x01, 0x02, 0x03, 0x04));
  assert.deepEqual(Array.from(key.x), [5, 6]);
  assert.deepEqual(Array.from(key.y), [-1, -1]);
  assert.deepEqual(Array.from(key.dx), [0, 0]);
  assert.deepEqual(Array.from(key.dy), [0, 0]);
  const delta = decodeTrack(Channel.position, key, [3, 7], bytes(0x02, 0x07, 0x00));
  assert.deepEqual(Array.from(delta.x), [5, 8]);
  assert.deepEqual(Array.from(delta.y), [-1, -1]);
  assert.deepEqual(Array.from(delta.dx), [0, 2]);
  // The port of the encoder agrees with the pinned bytes (so the round trips
  // below test the decoder against the C++ format, not against itself).
  const sent = advanceTrack(true, null, [3, 7], [5n, 6n], [-1n, -1n]);
  assert.deepEqual(Array.from(encodeTrack(true, null, sent)), [0x13, 0x01, 0x02, 0x03, 0x04]);
  const sent2 = advanceTrack(true, sent, [3, 7], [5n, 8n], [-1n, -1n]);
  assert.deepEqual(Array.from(encodeTrack(true, sent, sent2)), [0x02, 0x07, 0x00]);
});

test("velocities predict from the last value alone", () => {
  const key = decodeTrack(Channel.velocity, null, [1, 2], bytes(0x13, 0x01, 0x02));  // 5, -1, then 0, 0
  assert.deepEqual(Array.from(key.x), [5, 5]);
  assert.deepEqual(Array.from(key.y), [-1, -1]);
  assert.equal(key.dx, null);
  const delta = decodeTrack(Channel.velocity, key, [1, 2], bytes(0x06));  // four zeros: nothing changed
  assert.deepEqual(Array.from(delta.x), [5, 5]);
});

test("long random streams decode exactly: spawns, removals, key frames, values across +-2^52", () => {
  for (const channel of [Channel.position, Channel.velocity]) {
    const position = channel === Channel.position;
    const rng = new SplitMix64(42 + channel);
    let id = [], x = [], y = [], vx = [], vy = [];
    let nextId = 1;
    const spawn = (n) => {
      for (let k = 0; k < n; ++k) {
        id.push(nextId);
        nextId += 1 + rng.below(3);
        x.push(BigInt(rng.below(200001) - 100000));
        y.push(BigInt(rng.below(200001) - 100000));
        vx.push(BigInt(rng.below(101) - 50));
        vy.push(BigInt(rng.below(101) - 50));
      }
    };
    const clamp = (v) => (v > kMaxQuantizedBig ? kMaxQuantizedBig : v < -kMaxQuantizedBig ? -kMaxQuantizedBig : v);
    spawn(200);
    let sent = null, received = null;
    for (let frame = 0; frame < 600; ++frame) {
      for (let i = 0; i < id.length; ++i) {
        const r = rng.below(1000);
        if (r < 50) vx[i] += BigInt(rng.below(41) - 20);  // a collision
        if (r === 50) x[i] += BigInt(rng.below(2000001) - 1000000);  // a teleport
        if (r === 51) x[i] = rng.below(2) ? kMaxQuantizedBig : -kMaxQuantizedBig;  // to the edge of the range
        if (r === 52) y[i] = BigInt.asIntN(53, rng.next());  // anywhere: a residual past 2^53
        if (i % 4 !== 0) {  // every fourth body rests
          x[i] += vx[i];
          y[i] += vy[i];
        }
        x[i] = clamp(x[i]);
        y[i] = clamp(y[i]);
      }
      if (frame % 97 === 50) spawn(17);
      if (frame % 89 === 30) {
        const keep = (_, i) => i % 5 !== 2;
        [id, x, y, vx, vy] = [id, x, y, vx, vy].map((a) => a.filter(keep));
      }
      const current = advanceTrack(position, sent, id, x, y);
      const key = sent === null || frame % 150 === 149;
      const encoded = encodeTrack(position, key ? null : sent, current);
      const decoded = decodeTrack(channel, key ? null : received, id, encoded);
      assert.deepEqual(Array.from(decoded.x), asNumbers(current.x), `frame ${frame}`);
      assert.deepEqual(Array.from(decoded.y), asNumbers(current.y), `frame ${frame}`);
      if (position) {
        assert.deepEqual(Array.from(decoded.dx), asNumbers(current.dx), `frame ${frame}`);
        assert.deepEqual(Array.from(decoded.dy), asNumbers(current.dy), `frame ${frame}`);
      }
      sent = current;
      received = decoded;
    }
  }
});
const kMaxQuantizedBig = BigInt(kMaxQuantized);

test("truncated, overlong and corrupt bytes are refused without a crash", () => {
  const rng = new SplitMix64(9);
  const id = [], x = [], y = [];
  for (let i = 1; i <= 200; ++i) {
    id.push(i);
    x.push(BigInt(rng.below(100000)));
    y.push(BigInt(rng.below(100000)));
  }
  const key = advanceTrack(true, null, id, x, y);
  const good = encodeTrack(true, null, key);
  for (let cut = 0; cut < good.length; ++cut)
    assert.throws(() => decodeTrack(Channel.position, null, id, good.subarray(0, cut)), CompactError, `cut ${cut}`);
  const leftOver = Uint8Array.from([...good, 0]);
  assert.throws(() => decodeTrack(Channel.position, null, id, leftOver), /left over/);
  const decodedKey = decodeTrack(Channel.position, null, id, good);
  assert.deepEqual(Array.from(decodedKey.x), asNumbers(x));

  assert.throws(() => decodeTrack(Channel.position, null, [2, 1], new Uint8Array(8)), /not increasing/);
  assert.throws(() => decodeTrack(Channel.position, null, [1], new Uint8Array(11).fill(0xff)), /longer than 64 bits/);
  // Token 2^64 - 1: the largest positive residual, then three zeros.
  const huge = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x04]);
  assert.throws(() => decodeTrack(Channel.position, null, [1], huge), /beyond \+-2\^52/);
  // A run of zeros longer than the table.
  assert.throws(() => decodeTrack(Channel.position, null, [1], bytes(0x08)), /run of zeros/);
  // A key frame's change no encoder can make (2^60).
  const bigChange = [0x02, ...varint(2n * (2n * 2n ** 60n - 1n) + 1n), 0x00];
  assert.throws(() => decodeTrack(Channel.position, null, [1], Uint8Array.from(bigChange)), /change is beyond/);

  // Random bytes: a CompactError or a decode within range, never anything else.
  for (let trial = 0; trial < 3000; ++trial) {
    const junk = new Uint8Array(rng.below(64));
    for (let k = 0; k < junk.length; ++k) junk[k] = rng.below(256);
    const channel = trial % 2 ? Channel.velocity : Channel.position;
    try {
      const out = decodeTrack(channel, trial % 3 ? decodedKey : null, [1, 2, 3], junk);
      for (const v of [...out.x, ...out.y]) assert.ok(Math.abs(v) <= kMaxQuantized && Number.isInteger(v));
    } catch (e) {
      assert.ok(e instanceof CompactError, String(e));
    }
  }
});

function varint(v) {
  const out = [];
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

test("a CompactStream follows baselines through protobuf messages (tick 0 is a baseline)", () => {
  const {ServerMessage} = makeProtocol(loadDescriptor(path.join(here, "../../proto")));
  const ids = [4, 9];
  const s0 = advanceTrack(true, null, ids, [1000n, -2000n], [3n, 4n]);
  const v0 = advanceTrack(false, null, ids, [10n, 0n], [-10n, 0n]);
  const s1 = advanceTrack(true, s0, ids, [1010n, -2000n], [3n, 5n]);
  const v1 = advanceTrack(false, v0, ids, [10n, 0n], [-10n, 1n]);
  const wire = (tick, compact) =>
    ServerMessage.decode(ServerMessage.encode(ServerMessage.fromObject({snapshot: {tick, compact}})).finish()).snapshot;
  const first = wire(0, {position_quantum: 0.5, velocity_quantum: 0.25,
                         positions: encodeTrack(true, null, s0), velocities: encodeTrack(false, null, v0)});
  const second = wire(1, {position_quantum: 0.5, velocity_quantum: 0.25, baseline_tick: 0,
                          positions: encodeTrack(true, s0, s1), velocities: encodeTrack(false, v0, v1)});
  const stream = new CompactStream();
  assert.throws(() => stream.decode(second.tick, second.compact, ids), /coded against tick 0.*none/);
  const a = stream.decode(first.tick, first.compact, ids);
  assert.deepEqual(Array.from(a.x), [500, -1000]);
  assert.deepEqual(Array.from(a.vy), [-2.5, 0]);
  const b = stream.decode(second.tick, second.compact, ids);
  assert.deepEqual(Array.from(b.x), [505, -1000]);
  assert.deepEqual(Array.from(b.y), [1.5, 2.5]);
  assert.deepEqual(Array.from(b.vy), [-2.5, 0.25]);
  assert.throws(() => stream.decode(second.tick, second.compact, ids), /coded against tick 0, but .* was tick 1/);
});

test("compact events: the worked example of docs/protocol.md (compact_test.cpp's pinned bytes)", () => {
  // Bodies 3 and 7 at (10, -4) and (21, -4) in a snapshot of tick 100.
  const pos = decodeTrack(Channel.position, null, [3, 7],
                          encodeTrack(true, null, advanceTrack(true, null, [3, 7], [10n, 21n], [-4n, -4n])));
  const events = bytes(0x00, 0x0b, 0x0f, 0x03, 0x03, 0x03, 0x0f, 0x07, 0x02);
  const impulses = bytes(0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00, 0x01, 0x00);
  const out = decodeEvents(events, impulses, 100, pos);
  assert.deepEqual(out.map((e) => [e.tick, e.a, e.b, e.x, e.y, e.ix, e.iy]),
                   [[100, 3, 7, 16, -3, 0x3f80, 0xc000], [99, 7, 9, 16, -3, 0, 1]]);
  assert.equal(fromBfloat16(0x3f80), 1);
  assert.equal(fromBfloat16(0xc000), -2);
  assert.equal(fromBfloat16(1), 2 ** -133);
  assert.ok(Number.isNaN(fromBfloat16(0x7fc0)));
  assert.equal(fromBfloat16(0xff80), -Infinity);
  assert.deepEqual(decodeEvents(bytes(), bytes(), 7, pos), []);

  // Truncated, left over, an impulse short or missing: refused.
  for (let cut = 0; cut < events.length; ++cut)
    assert.throws(() => decodeEvents(events.subarray(0, cut), impulses, 100, pos), CompactError);
  assert.throws(() => decodeEvents(Uint8Array.of(...events, 1), impulses, 100, pos), /left over/);
  assert.throws(() => decodeEvents(events, impulses.subarray(0, 7), 100, pos), /4 bytes an event/);
  assert.throws(() => decodeEvents(events, impulses.subarray(0, 4), 100, pos), /left over/);
  // A tick after the snapshot's (age -1), one before tick 0, an id past
  // 2^32, a point past 2^52.
  const none = new Uint8Array(4);
  assert.throws(() => decodeEvents(bytes(0x01, 0x01, 0x01, 0x02), none, 5, pos), /tick/);
  assert.throws(() => decodeEvents(events, impulses, 0, pos), /tick/);
  assert.throws(() => decodeEvents(bytes(0x00, 0xff, 0xff, 0xff, 0xff, 0x3f, 0x04), none, 0, pos), /id/);
  const far = [0x00, 0x0b, 0x03, ...varint(4n * (2n ** 52n + 1n) - 1n), 0x00];  // age 0, a 3, b 4, x 2^52 + 1
  assert.throws(() => decodeEvents(Uint8Array.from(far), none, 0, pos), /point/);
  const edge = [0x00, 0x0b, 0x03, ...varint(4n * 2n ** 52n - 1n), 0x00];  // x 2^52: the largest there is
  assert.equal(decodeEvents(Uint8Array.from(edge), none, 0, pos)[0].x, kMaxQuantized);
  const huge = [0x00, 0x0b, 0x03, ...varint(2n ** 63n + 1n), 0x00];  // a residual beyond 2^53
  assert.throws(() => decodeEvents(Uint8Array.from(huge), none, 0, pos), /point/);

  // Random bytes: events or a CompactError, nothing else.
  const rng = new SplitMix64(17);
  for (let k = 0; k < 2000; ++k) {
    const t = Uint8Array.from({length: rng.below(40)}, () => rng.below(256));
    const i = Uint8Array.from({length: 4 * rng.below(6)}, () => rng.below(256));
    try {
      decodeEvents(t, i, rng.below(1000), pos);
    } catch (e) {
      assert.ok(e instanceof CompactError, String(e));
    }
  }
});
