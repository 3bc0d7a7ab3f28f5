// The page's decoder against the C++ codec itself: carom_compact_vectors
// (client/python/compact_vectors.cpp) writes frames encoded by
// proto/src/compact.cpp, compact events coded against them, corrupt variants
// of both, and what the C++ decoder makes of each; src/compact.js must decode
// the same bytes to the same integers (events: ticks, ids, points in quanta,
// impulse bits) and refuse the same bytes. One documented difference: a key
// frame's change beyond +-2^53, which no encoder makes and C++ carries as
// int64, is refused here.
//
//   CAROM_COMPACT_VECTORS_BIN=build/release/client/carom_compact_vectors node --test test/vectors.test.mjs

import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {test} from "node:test";

import {Channel, CompactError, decodeEvents, decodeTrack} from "../src/compact.js";

const bin = process.env.CAROM_COMPACT_VECTORS_BIN;

test("the C++ codec's frames and verdicts", {skip: bin ? false : "CAROM_COMPACT_VECTORS_BIN is not set"}, () => {
  const lines = execFileSync(bin, {encoding: "utf8", maxBuffer: 1 << 28}).trim().split("\n");
  const decoded = [];  // per line: the JS Track, or null when refused (or its baseline was)
  let agreed = 0, refused = 0, divergent = 0;
  let eventsAgreed = 0, eventsRefused = 0, events = 0;
  const kChange = 2n ** 53n;
  for (const [k, text] of lines.entries()) {
    // Integers in arrays as strings: int64 values may exceed 2^53.
    const line = JSON.parse(text.replace(/([[,])(-?\d+)(?=[,\]])/g, '$1"$2"'));
    if (line.events_of !== undefined) {
      decoded.push(null);  // no track: the C++ writer keeps line numbers so too
      const positions = decoded[line.events_of];
      if (positions === null) continue;  // coded against a line the page refused
      const tokens = Uint8Array.from(Buffer.from(line.tokens, "hex"));
      const impulses = Uint8Array.from(Buffer.from(line.impulses, "hex"));
      let got = null;
      try {
        got = decodeEvents(tokens, impulses, line.tick, positions);
      } catch (e) {
        assert.ok(e instanceof CompactError, `line ${k}: ${e}`);
        assert.ok(!line.ok, `line ${k}: C++ decodes these events, the page says: ${e.message}`);
        ++eventsRefused;
        continue;
      }
      assert.ok(line.ok, `line ${k}: C++ refuses these events, the page decoded them`);
      assert.deepEqual(got.map((e) => [e.tick, e.a, e.b, e.x, e.y, e.ix, e.iy].map(String)),
                       line.events, `line ${k}: the events`);
      events += got.length;
      ++eventsAgreed;
      continue;
    }
    const ids = line.ids.map(Number);
    const bytes = Uint8Array.from(Buffer.from(line.bytes, "hex"));
    const baseline = line.baseline === null ? null : decoded[line.baseline];
    if (line.baseline !== null && baseline === null) {  // built on a divergent line
      decoded.push(null);
      continue;
    }
    const channel = line.position ? Channel.position : Channel.velocity;
    let track = null, error = null;
    try {
      track = decodeTrack(channel, baseline, ids, bytes);
    } catch (e) {
      assert.ok(e instanceof CompactError, `line ${k}: ${e}`);
      error = e.message;
    }
    if (!line.ok) {
      assert.equal(track, null, `line ${k}: C++ refuses these bytes, the page decoded them`);
      ++refused;
    } else if (track === null) {
      const big = [...line.dx, ...line.dy].some((v) => BigInt(v) > kChange || BigInt(v) < -kChange);
      assert.ok(big && /change is beyond/.test(error), `line ${k}: C++ decodes these bytes, the page says: ${error}`);
      ++divergent;
    } else {
      const same = (name, a, b) =>
          assert.deepEqual(Array.from(a ?? [], (v) => BigInt(v)), b.map(BigInt), `line ${k}: ${name}`);
      same("x", track.x, line.x);
      same("y", track.y, line.y);
      same("dx", track.dx, line.dx);
      same("dy", track.dy, line.dy);
      ++agreed;
    }
    decoded.push(track);
  }
  console.log(`${lines.length} lines: ${agreed} frames decoded alike, ${refused} refused alike, ${divergent} with a ` +
              `change beyond 2^53; ${eventsAgreed} event lists (${events} events) decoded alike, ${eventsRefused} refused alike`);
  assert.ok(agreed > 50 && refused > 50);
  assert.ok(eventsAgreed > 20 && events > 200 && eventsRefused > 50);
});
