// Snapshots into frames: the body table, the compact stream's state and the
// plain stream, as carom::client::Connection decodes them (docs/protocol.md,
// "Body tables" and "The compact stream"). One per connection.

import {CompactError, CompactStream, decodeEvents, fromBfloat16} from "./compact.js";

/// A stream that cannot be decoded (a server bug or broken bytes): the
/// connection is closed, as the protocol asks of a client.
export class StreamError extends Error {}

/// What the page draws: one snapshot with ids, radii and positions resolved.
/// ids are sorted; x, y (and vx, vy, or null) are Float64Array in metres;
/// events are CollisionEvents ({a, b, tick, point, impulse}), decoded from
/// compact_events when the snapshot has them.
export class Frame {
  constructor(s, ids, radius, x, y, vx, vy, events = s.events) {
    this.tick = s.tick;
    this.time = s.time;
    this.paused = s.paused;
    this.bounds = s.bounds;
    this.stats = s.stats;
    this.events = events;
    this.eventsDropped = s.events_dropped;
    this.ids = ids;
    this.radius = radius;
    this.x = x;
    this.y = y;
    this.vx = vx;
    this.vy = vy;
  }
}

export class SnapshotStream {
  constructor() {
    this.reset();
  }

  /// A new connection: no table, no baseline.
  reset() {
    this.table = null;
    this.compact = new CompactStream();
  }

  /// Keeps a BodyTable message (the latest one is the one snapshots use).
  bodyTable(t) {
    if (t.id.length !== t.radius.length)
      throw new StreamError(`body table ${t.epoch} has ${t.id.length} ids and ${t.radius.length} radii`);
    this.table = {epoch: t.epoch, ids: Uint32Array.from(t.id), radius: Float32Array.from(t.radius)};
  }

  /// The Frame of a Snapshot message; throws StreamError when it cannot be
  /// decoded (unknown table epoch, lengths that disagree, corrupt compact
  /// bytes or a baseline this connection does not have).
  snapshot(s) {
    let ids, radius;
    if (s.body_table) {
      if (this.table === null || this.table.epoch !== s.body_table) {
        const have = this.table === null ? "none" : `epoch ${this.table.epoch}`;
        throw new StreamError(`snapshot ${s.tick} refers to body table ${s.body_table}, but the latest here is ${have}`);
      }
      ids = this.table.ids;
      radius = this.table.radius;
    } else {
      ids = Uint32Array.from(s.id);
      radius = Float32Array.from(s.radius);
    }
    if (s.compact) {
      let d;
      try {
        d = this.compact.decode(s.tick, s.compact, ids);
      } catch (e) {
        if (e instanceof CompactError) throw new StreamError(`compact snapshot ${s.tick}: ${e.message}`);
        throw e;
      }
      let events = s.events;
      if (s.compact_events) {
        try {
          events = compactEvents(s.tick, s.compact_events, this.compact.positions, s.compact.position_quantum);
        } catch (e) {
          if (e instanceof CompactError) throw new StreamError(`compact events of tick ${s.tick}: ${e.message}`);
          throw e;
        }
      }
      return new Frame(s, ids, radius, d.x, d.y, d.vx, d.vy, events);
    }
    if (s.compact_events) throw new StreamError(`snapshot ${s.tick} has compact events but no compact bodies`);
    const n = ids.length;
    if (s.x.length !== n || s.y.length !== n || radius.length !== n)
      throw new StreamError(`snapshot ${s.tick} has ${n} ids, ${radius.length} radii and ${s.x.length} x, ${s.y.length} y`);
    const withVelocities = s.vx.length > 0 || s.vy.length > 0;
    if (withVelocities && (s.vx.length !== n || s.vy.length !== n))
      throw new StreamError(`snapshot ${s.tick} has ${n} bodies but ${s.vx.length} vx, ${s.vy.length} vy`);
    return new Frame(s, ids, radius, Float64Array.from(s.x), Float64Array.from(s.y),
                     withVelocities ? Float64Array.from(s.vx) : null, withVelocities ? Float64Array.from(s.vy) : null);
  }
}

// CompactEvents into CollisionEvents, as carom::client::Connection fills
// Snapshot.events: the point Q x quantum, the impulse's bfloat16 values.
function compactEvents(tick, c, positions, quantum) {
  return decodeEvents(c.events, c.impulses, tick, positions).map((e) => ({
    a: e.a,
    b: e.b,
    tick: e.tick,
    point: {x: e.x * quantum, y: e.y * quantum},
    impulse: {x: fromBfloat16(e.ix), y: fromBfloat16(e.iy)},
  }));
}
