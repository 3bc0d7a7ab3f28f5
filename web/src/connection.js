// The page's connection to carom-server: a WebSocket at /ws carrying one
// protobuf message per binary frame (ClientMessage out, ServerMessage in),
// the same Hello, roles, token and wishes as TCP. It reconnects with backoff
// unless the server refused the Hello for a reason a retry cannot change.

import {SnapshotStream, StreamError} from "./stream.js";

/// What the page asks for: every body's position and velocity (speed
/// colours, interpolation), collision events (flashes), tables and the
/// compact stream (about 2 bytes a body instead of 8-16).
export const kWishes = Object.freeze({
  max_rate_hz: 60,  // no screen shows more; a 1000 Hz server is not sent 1000 snapshots a second
  velocities: true,
  events: true,
  body_tables: true,
  compact: true,
  // The events worth a flash, as carom-view asks (docs/protocol.md, "Event
  // threshold"): impacts that changed the pair's relative normal velocity by
  // 2 m/s or more (no resting contacts, which report every tick), the
  // hardest 32 a snapshot (at 60 a second, 0.6 s of flashes is about the
  // 1024 the page keeps), coded compactly (docs/protocol.md, "Compact events").
  min_event_speed: 2,
  max_events: 32,
  compact_events: true,
});

// Hello refusals that a retry would only repeat: the page stops and says so.
const kFinal = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED", "UNSUPPORTED_VERSION", "INVALID_ARGUMENT",
                        "MALFORMED_FRAME", "PROTOCOL_VIOLATION", "FRAME_TOO_LARGE"]);
const kBackoffMs = [500, 1000, 2000, 4000, 8000, 15000];

/// The WebSocket URL of the page's server: `?server=HOST:PORT` (or a whole
/// ws:// / wss:// URL) when given, else /ws on the page's own origin; null
/// for a page opened from a file with no ?server=.
export function serverUrl(location) {
  const secure = location.protocol === "https:";
  const given = new URLSearchParams(location.search).get("server");
  if (given) return /^wss?:\/\//.test(given) ? given : `${secure ? "wss" : "ws"}://${given}/ws`;
  if (location.protocol !== "http:" && location.protocol !== "https:") return null;
  return `${secure ? "wss" : "ws"}://${location.host}/ws`;
}

/// One logical connection, reopened after a loss. `handlers`: state(s) with
/// s = {phase: "connecting" | "open" | "waiting" | "refused" | "no-server",
/// message, retryAt}, welcome(w), frame(f, bytes), result(r), heartbeat(h).
export class Connection {
  constructor(protocol, url, handlers) {
    this.protocol = protocol;
    this.url = url;
    this.handlers = handlers;
    this.socket = null;
    this.token = "";
    this.controller = false;
    this.attempt = 0;
    this.timer = null;
    this.stream = new SnapshotStream();
    this.nextRequest = 1;
    this.pending = new Map();  // request id -> resolve
    this.welcome = null;
  }

  /// (Re)connects now as a viewer, or as a controller with `token`.
  start({controller, token}) {
    this.controller = controller;
    this.token = token;
    this.attempt = 0;
    this.open();
  }

  open() {
    this.close();
    if (this.url === null) {
      this.state({phase: "no-server",
                  message: "No server: open this page from carom-server's HTTP port, or add ?server=HOST:PORT"});
      return;
    }
    this.state({phase: "connecting", message: `Connecting to ${this.url}`});
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch (e) {
      this.state({phase: "refused", message: `Cannot open ${this.url}: ${e.message}`});
      return;
    }
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    this.stream.reset();
    this.welcome = null;
    this.reason = null;  // why the server ended it, when it said
    this.final = false;
    socket.onopen = () => {
      const hello = {
        protocol_version: 1,
        role: this.controller ? this.protocol.roleController : this.protocol.roleViewer,
        token: this.token,
        client_name: "carom-web",
        wishes: kWishes,
      };
      this.sendMessage({hello});
    };
    socket.onmessage = (e) => this.receive(e.data);
    socket.onclose = () => this.lost(socket);
    socket.onerror = () => {};  // onclose follows with all there is to say
  }

  /// Closes without retrying.
  close() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.socket) {
      const s = this.socket;
      this.socket = null;
      s.onopen = s.onmessage = s.onclose = s.onerror = null;
      s.close();
    }
    for (const resolve of this.pending.values()) resolve(null);
    this.pending.clear();
  }

  sendMessage(message) {
    const m = this.protocol.ClientMessage.fromObject(message);
    this.socket.send(this.protocol.ClientMessage.encode(m).finish());
  }

  /// Sends a Command ({spawn: ...}, {pause: {}}, ...); resolves with its
  /// CommandResult, or null when the connection went first.
  command(kind) {
    if (!this.socket || !this.welcome) return Promise.resolve(null);
    const request_id = this.nextRequest++;
    return new Promise((resolve) => {
      this.pending.set(request_id, resolve);
      this.sendMessage({command: {request_id, ...kind}});
    });
  }

  receive(data) {
    let m;
    try {
      m = this.protocol.ServerMessage.decode(new Uint8Array(data));
    } catch (e) {
      this.fail(`The server sent a message that does not parse (${e.message})`);
      return;
    }
    try {
      switch (m.kind) {
        case "welcome":
          this.welcome = m.welcome;
          this.attempt = 0;
          this.state({phase: "open", message: ""});
          this.handlers.welcome(m.welcome);
          break;
        case "body_table":
          this.stream.bodyTable(m.body_table);
          break;
        case "snapshot":
          this.handlers.frame(this.stream.snapshot(m.snapshot), data.byteLength);
          break;
        case "result": {
          const resolve = this.pending.get(m.result.request_id);
          this.pending.delete(m.result.request_id);
          if (resolve) resolve(m.result);
          break;
        }
        case "heartbeat":
          this.handlers.heartbeat(m.heartbeat, data.byteLength);
          break;
        case "error": {
          const e = m.error;
          const code = this.protocol.errorName(e.code);
          this.reason = {code, message: e.message, field: e.field};
          this.final = this.welcome === null && kFinal.has(code);
          break;  // the server closes next
        }
        case "goodbye":
          this.reason = {code: "GOODBYE", message: `The server is going away: ${m.goodbye.reason}`, field: ""};
          break;
        default:
          break;  // a newer server's message: not ours to read
      }
    } catch (e) {
      if (!(e instanceof StreamError)) throw e;
      this.fail(`The server's snapshot stream cannot be decoded: ${e.message}`);
    }
  }

  // The stream is broken (a bug on one side): close and start again clean.
  fail(message) {
    this.reason = {code: "STREAM", message, field: ""};
    const s = this.socket;
    if (s) s.close();
  }

  lost(socket) {
    if (socket !== this.socket) return;
    const opened = this.welcome !== null;
    this.socket = null;
    for (const resolve of this.pending.values()) resolve(null);
    this.pending.clear();
    const r = this.reason;
    if (this.final) {
      this.state({phase: "refused", message: `The server refused this page: ${r.message}`, code: r.code,
                  field: r.field});
      return;
    }
    const delay = kBackoffMs[Math.min(this.attempt, kBackoffMs.length - 1)];
    ++this.attempt;
    let message;
    if (r) message = r.code === "GOODBYE" || r.code === "STREAM" ? r.message : `The server closed the connection: ${r.message}`;
    else if (opened) message = `The server is gone (the connection to ${this.url} closed)`;
    else message = `Cannot reach the server at ${this.url}`;
    const code = r && r.code !== "GOODBYE" && r.code !== "STREAM" ? r.code : "";  // only the server's codes
    this.state({phase: "waiting", message, code, field: r ? r.field : "", retryAt: performance.now() + delay});
    this.timer = setTimeout(() => this.open(), delay);
  }

  state(s) {
    this.handlers.state(s);
  }
}
