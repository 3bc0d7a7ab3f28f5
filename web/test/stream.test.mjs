// SnapshotStream (src/stream.js): snapshots with ids and radii, with a body
// table, and compact ones (with compact events), through real protobuf
// bytes, and the streams a client must refuse (an unknown table epoch,
// lengths that disagree, corrupt events).

import assert from "node:assert/strict";
import path from "node:path";
import {test} from "node:test";
import {fileURLToPath} from "node:url";

import {makeProtocol} from "../src/protocol.js";
import {SnapshotStream, StreamError} from "../src/stream.js";
import {loadDescriptor} from "../tools/descriptor.mjs";
import {advanceTrack, encodeTrack} from "./encoder.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const {ServerMessage} = makeProtocol(loadDescriptor(path.join(here, "../../proto")));
const wire = (object) => ServerMessage.decode(ServerMessage.encode(ServerMessage.fromObject(object)).finish());

test("plain snapshots carry their ids and radii", () => {
  const s = new SnapshotStream();
  const m = wire({snapshot: {tick: 3, id: [1, 5], radius: [0.5, 1], x: [1, 2], y: [3, 4], vx: [0, -1], vy: [1, 0],
                             stats: {kinetic_energy: 2.5}, events: [{a: 1, b: 5, point: {x: 1.5, y: 3.5}}]}});
  const f = s.snapshot(m.snapshot);
  assert.equal(f.tick, 3);
  assert.deepEqual(Array.from(f.ids), [1, 5]);
  assert.deepEqual(Array.from(f.radius), [0.5, 1]);
  assert.deepEqual(Array.from(f.vx), [0, -1]);
  assert.equal(f.stats.kinetic_energy, 2.5);
  assert.equal(f.events[0].point.x, 1.5);
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 4, id: [1], radius: [1], x: [1, 2], y: [1]}}).snapshot),
                StreamError);
});

test("body tables and the compact stream", () => {
  const s = new SnapshotStream();
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 1, body_table: 1, x: [0], y: [0]}}).snapshot), /table 1/);
  s.bodyTable(wire({body_table: {epoch: 1, id: [2, 3], radius: [0.25, 0.5]}}).body_table);
  const plain = s.snapshot(wire({snapshot: {tick: 1, body_table: 1, x: [7, 8], y: [9, 10]}}).snapshot);
  assert.deepEqual(Array.from(plain.x), [7, 8]);
  assert.deepEqual(Array.from(plain.radius), [0.25, 0.5]);

  const ids = [2, 3];
  const t0 = advanceTrack(true, null, ids, [7000n, 8000n], [9000n, -10000n]);
  const key = s.snapshot(wire({snapshot: {tick: 2, body_table: 1,
                                          compact: {position_quantum: 0.001, positions: encodeTrack(true, null, t0)}}})
                             .snapshot);
  assert.deepEqual(Array.from(key.x), [7, 8]);
  assert.deepEqual(Array.from(key.y), [9, -10]);
  assert.equal(key.vx, null);
  const t1 = advanceTrack(true, t0, ids, [7001n, 8000n], [9000n, -10002n]);
  const delta = s.snapshot(wire({snapshot: {tick: 3, body_table: 1, compact: {position_quantum: 0.001, baseline_tick: 2,
                                                                              positions: encodeTrack(true, t0, t1)}}})
                               .snapshot);
  assert.deepEqual(Array.from(delta.x), [7.001, 8]);
  assert.deepEqual(Array.from(delta.y), [9, -10.002]);
  // A delta against a tick this connection never decoded.
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 5, body_table: 1, compact: {position_quantum: 0.001,
                                                                                    baseline_tick: 4}}}).snapshot),
                /coded against tick 4/);
  // Corrupt bytes: a StreamError naming the channel.
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 4, body_table: 1,
                                                  compact: {position_quantum: 0.001, positions: [0xff]}}}).snapshot),
                /positions: truncated/);
});

test("compact events become the frame's events: points Q x quantum, impulses bfloat16", () => {
  const s = new SnapshotStream();
  s.bodyTable(wire({body_table: {epoch: 1, id: [3, 7], radius: [1, 1]}}).body_table);
  // docs/protocol.md's example, at a quantum of 0.5 m: bodies 3 and 7 at
  // (10, -4) and (21, -4) quanta.
  const t = advanceTrack(true, null, [3, 7], [10n, 21n], [-4n, -4n]);
  const compact = {position_quantum: 0.5, positions: encodeTrack(true, null, t)};
  const compact_events = {events: [0x00, 0x0b, 0x0f, 0x03, 0x03, 0x03, 0x0f, 0x07, 0x02],
                          impulses: [0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00, 0x01, 0x00]};
  const f = s.snapshot(wire({snapshot: {tick: 100, body_table: 1, compact, compact_events}}).snapshot);
  assert.deepEqual(f.events, [{a: 3, b: 7, tick: 100, point: {x: 8, y: -1.5}, impulse: {x: 1, y: -2}},
                              {a: 7, b: 9, tick: 99, point: {x: 8, y: -1.5}, impulse: {x: 0, y: 2 ** -133}}]);
  assert.deepEqual(Array.from(f.x), [5, 10.5]);
  // Without compact_events a compact snapshot keeps its plain events.
  const plain = s.snapshot(wire({snapshot: {tick: 101, body_table: 1, compact,
                                            events: [{a: 3, b: 7, point: {x: 1, y: 2}}]}}).snapshot);
  assert.equal(plain.events[0].point.y, 2);
  // Corrupt events: a StreamError naming them; events without compact bodies.
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 102, body_table: 1, compact,
                                                  compact_events: {events: [0x00], impulses: [0, 0, 0, 0]}}}).snapshot),
                /compact events of tick 102: truncated/);
  assert.throws(() => s.snapshot(wire({snapshot: {tick: 103, id: [3], radius: [1], x: [0], y: [0],
                                                  compact_events: {events: [], impulses: []}}}).snapshot),
                /compact events but no compact bodies/);
});
