// The page: connects, keeps the latest two frames, draws them interpolated
// every animation frame, and turns clicks and buttons into commands when the
// server lets this page control the world.

import descriptor from "carom:descriptor";

import {Connection, serverUrl} from "./connection.js";
import {makeProtocol} from "./protocol.js";
import {Camera, ColourMode, makeRenderer} from "./render.js";

const kFlashSeconds = 0.6;
const kMaxFlashes = 1024;   // the newest are drawn (the server sends at most kWishes.max_events a snapshot)
const kFlingPerSecond = 2;  // a drag of d metres flings at 2 d m/s
const kClickPixels = 4;     // a press that moves less than this is a click

const $ = (id) => document.getElementById(id);
const protocol = makeProtocol(descriptor);
const canvas = $("world");
const overlay = $("overlay");
const camera = new Camera();
// `?renderer=webgl` or `?renderer=software` overrides the choice.
const renderer = makeRenderer(canvas, new URLSearchParams(window.location.search).get("renderer") || "auto");

const page = {
  phase: "connecting",
  status: null,
  welcome: null,
  control: false,
  prev: null,
  cur: null,
  arrival: 0,
  interval: 1 / 60,  // seconds between snapshots, smoothed
  autoFit: true,
  mode: ColourMode.speed,
  flashes: [],
  scenarios: null,  // the server's list_scenarios answer: {code, message, list}
  lastMessage: 0,
  drag: null,
  // Per-second counters: [frames drawn, snapshots, bytes], and their last rates.
  counting: [0, 0, 0],
  countStart: performance.now(),
  rates: [0, 0, 0],
};

// --- connection ---------------------------------------------------------------

const connection = new Connection(protocol, serverUrl(window.location), {
  state: (s) => {
    page.phase = s.phase;
    page.status = s;
    if (s.phase !== "open") {
      page.welcome = null;
      setControl(false);
    }
    showStatus();
  },
  welcome: (w) => {
    page.welcome = w;
    page.paused = w.paused;
    page.prev = page.cur = null;
    setControl(w.control);
    const p = w.params || {};
    if (p.gravity) {
      $("gx").value = p.gravity.x;
      $("gy").value = p.gravity.y;
    }
    if (p.restitution !== undefined && p.restitution !== null) $("restitution").value = p.restitution;
    listScenarios();
  },
  frame: (f, bytes) => {
    count(1, 1);
    count(2, bytes);
    page.lastMessage = performance.now();
    takeFrame(f);
  },
  heartbeat: (_h, bytes) => {
    count(2, bytes);
    page.lastMessage = performance.now();
    // Heartbeats flow while no snapshot does: the world is paused, even if
    // the snapshot that said so was dropped by this page's rate wish.
    page.paused = true;
  },
});

function connect() {
  const token = $("token").value;
  connection.start({controller: token !== "" || $("control").checked, token});
}

// `#token=SECRET` (or `#control` for a server without a token, from
// loopback) makes the page a controller; the fragment never reaches a server.
function readFragment() {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  if (fragment.has("token")) $("token").value = fragment.get("token");
  if (fragment.has("control")) $("control").checked = true;
}

function setControl(on) {
  page.control = on;
  $("controller").disabled = !on;
}

function showStatus() {
  const el = $("status");
  const s = page.status;
  if (!s || s.phase === "open") {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  el.className = `status ${s.phase}`;
  let detail = [];
  if (s.code) detail.push(s.code);
  if (s.field) detail.push(`field ${s.field}`);
  if (s.phase === "waiting") detail.push(`retrying in ${Math.max(0, Math.ceil((s.retryAt - performance.now()) / 1000))} s`);
  if (s.phase === "refused") detail.push("press Connect to try again");
  el.textContent = s.message;
  if (detail.length > 0) {
    const span = document.createElement("span");
    span.className = "detail";
    span.textContent = detail.join(" · ");
    el.appendChild(span);
  }
}

// --- frames -------------------------------------------------------------------

function takeFrame(f) {
  const now = performance.now();
  if (page.cur !== null && f.tick !== page.cur.tick) {
    const gap = (now - page.arrival) / 1000;
    page.interval += 0.2 * (Math.min(Math.max(gap, 1 / 240), 0.5) - page.interval);
  }
  // Paused, or a re-sent tick (an edit while paused): show it as it is.
  page.prev = f.paused || (page.cur && f.tick === page.cur.tick) ? null : page.cur;
  page.cur = f;
  page.arrival = now;
  page.paused = f.paused;
  if (page.autoFit) fitCamera();
  if (page.autoFit || page.prev === null) renderer.setOrigin(camera.cx, camera.cy);
  renderer.setFrame(page.prev, f, page.mode);
  for (const e of f.events) {
    if (e.point) page.flashes.push({x: e.point.x, y: e.point.y, born: now});
  }
  if (page.flashes.length > kMaxFlashes) page.flashes.splice(0, page.flashes.length - kMaxFlashes);
}

// The walls when the world has them, else the bodies' extent.
function fitCamera() {
  resize();
  const f = page.cur;
  if (!f) return;
  const b = f.bounds;
  if (b && b.walled && b.min && b.max) {
    camera.fit(b.min.x, b.min.y, b.max.x, b.max.y);
    return;
  }
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let i = 0; i < f.ids.length; ++i) {
    const r = f.radius[i];
    minX = Math.min(minX, f.x[i] - r);
    maxX = Math.max(maxX, f.x[i] + r);
    minY = Math.min(minY, f.y[i] - r);
    maxY = Math.max(maxY, f.y[i] + r);
  }
  if (minX <= maxX) camera.fit(minX, minY, maxX, maxY);
  else camera.fit(-10, -10, 10, 10);
}

function resize() {
  camera.width = canvas.clientWidth || window.innerWidth;
  camera.height = canvas.clientHeight || window.innerHeight;
}

// --- drawing ------------------------------------------------------------------

function count(k, n) {
  page.counting[k] += n;
}

function draw(now) {
  resize();
  const seconds = (now - page.countStart) / 1000;
  if (seconds >= 1) {
    page.rates = page.counting.map((c) => c / seconds);
    page.counting = [0, 0, 0];
    page.countStart = now;
    updateHud();
    if (page.phase === "waiting") showStatus();
  }
  count(0, 1);
  const alpha = page.prev === null ? 1 : Math.min(1, (now - page.arrival) / 1000 / page.interval);
  const flashes = [];
  let first = 0;
  for (let i = 0; i < page.flashes.length; ++i) {
    const life = 1 - (now - page.flashes[i].born) / 1000 / kFlashSeconds;
    if (life <= 0) first = i + 1;
    else flashes.push({x: page.flashes[i].x, y: page.flashes[i].y, life});
  }
  if (first > 0) page.flashes.splice(0, first);
  renderer.draw(camera, alpha, page.mode, flashes);
  drawOverlay();
  requestAnimationFrame(draw);
}

function drawOverlay() {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.round(camera.width * dpr);
  const h = Math.round(camera.height * dpr);
  if (overlay.width !== w || overlay.height !== h) {
    overlay.width = w;
    overlay.height = h;
  }
  const c = overlay.getContext("2d");
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.clearRect(0, 0, camera.width, camera.height);
  const b = page.cur && page.cur.bounds;
  if (b && b.walled && b.min && b.max) {
    const [x0, y0] = camera.toScreen(b.min.x, b.max.y);
    const [x1, y1] = camera.toScreen(b.max.x, b.min.y);
    c.strokeStyle = "#4c566a";
    c.strokeRect(x0, y0, x1 - x0, y1 - y0);
  }
  const d = page.drag;
  if (d && d.kind === "fling" && d.moved) {
    c.strokeStyle = "#ebcb8b";
    c.lineWidth = 2;
    c.beginPath();
    c.moveTo(d.x0, d.y0);
    c.lineTo(d.x1, d.y1);
    c.stroke();
    c.lineWidth = 1;
  }
}

function fmt(v, digits = 4) {
  if (v === undefined || v === null || !Number.isFinite(v)) return "-";
  return Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(digits - 1) : v.toPrecision(digits);
}

// The server's last step: its time and the threads it ran on (carom-server
// runs a step on one thread where that measures faster, unless started with
// --fixed-threads); "-" before the world's first step.
function stepLine(f) {
  const s = f && f.stats;
  if (!s || !s.step_threads) return "-";
  return `${(s.step_seconds * 1e3).toFixed(2)} ms on ${s.step_threads} thread${s.step_threads === 1 ? "" : "s"}`;
}

function updateHud() {
  const f = page.cur;
  const role = page.welcome ? (page.welcome.control ? "controller" : "viewer") : "-";
  const silent = page.phase === "open" && page.lastMessage > 0 ? (performance.now() - page.lastMessage) / 1000 : 0;
  const lines = [
    `carom     ${connection.url ?? "(no server)"}  ${role}`,
    `tick      ${f ? f.tick : "-"}   t = ${f ? fmt(f.time) : "-"} s`,
    `bodies    ${f ? f.ids.length : "-"}`,
    `fps       ${page.rates[0].toFixed(1)}`,
    `snapshots ${page.rates[1].toFixed(1)}/s   ${(page.rates[2] / 1000).toFixed(1)} kB/s`,
    `step      ${stepLine(f)}`,
    `kinetic   ${f && f.stats ? fmt(f.stats.kinetic_energy) : "-"} J`,
    `state     ${page.phase !== "open" ? page.phase : page.paused ? "paused" : "running"}` +
        (silent > 3 ? `  (silent for ${silent.toFixed(0)} s)` : ""),
    `renderer  ${renderer.kind}`,
  ];
  $("hud").textContent = lines.join("\n");
}

// --- commands -----------------------------------------------------------------

let toastTimer = null;
function toast(text) {
  const el = $("toast");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}

async function send(kind) {
  const r = await connection.command(kind);
  if (r === null) toast("The connection closed before the server answered");
  else if (r.code !== 0) toast(`${protocol.errorName(r.code)}: ${r.message}${r.field ? ` (field ${r.field})` : ""}`);
  return r;
}

// The picker offers what the server says it can load (viewers may ask too:
// it is read-only), asked again on every (re)connection.
async function listScenarios() {
  const r = await connection.command({list_scenarios: {}});
  if (r === null) return;  // the connection went: the next Welcome asks again
  const list = r.code === 0 && r.scenarios ? r.scenarios.scenarios : [];
  page.scenarios = {code: protocol.errorName(r.code), message: r.message, list};
  const select = $("scenario");
  const keep = select.value;
  select.replaceChildren();
  const option = (value, text, title) => {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    if (title) o.title = title;
    select.appendChild(o);
    return o;
  };
  if (r.code !== 0) option("", "(none)", r.message).disabled = true;
  for (const s of list) {
    if (s.error) option(s.name, `${s.name} (does not parse)`, s.error).disabled = true;
    else option(s.name, `${s.name} (${s.bodies} bodies)`, s.description);
  }
  if (list.some((s) => s.name === keep && !s.error)) select.value = keep;
  else select.selectedIndex = Array.from(select.options).findIndex((o) => !o.disabled);
  $("load").disabled = select.selectedIndex < 0 || select.selectedOptions[0].disabled;
}

function spawnRadius() {
  const given = parseFloat($("radius").value);
  if (given > 0) return given;
  const f = page.cur;
  if (!f || f.radius.length === 0) return 0.5;
  const sorted = Float32Array.from(f.radius).sort();
  return sorted[sorted.length >> 1];
}

function spawn(x, y, vx, vy) {
  send({spawn: {bodies: [{position: {x, y}, velocity: {x: vx, y: vy}, radius: spawnRadius()}]}});
}

// --- input --------------------------------------------------------------------

canvas.addEventListener("contextmenu", (e) => e.preventDefault());
canvas.addEventListener("pointerdown", (e) => {
  const fling = page.control && e.button === 0 && !e.shiftKey;
  page.drag = {kind: fling ? "fling" : "pan", x0: e.offsetX, y0: e.offsetY, x1: e.offsetX, y1: e.offsetY, moved: false};
  canvas.setPointerCapture(e.pointerId);
});
canvas.addEventListener("pointermove", (e) => {
  const d = page.drag;
  if (!d) return;
  if (d.kind === "pan") {
    camera.cx -= (e.offsetX - d.x1) / camera.pixelsPerMetre;
    camera.cy += (e.offsetY - d.y1) / camera.pixelsPerMetre;
    page.autoFit = false;
  }
  d.x1 = e.offsetX;
  d.y1 = e.offsetY;
  d.moved ||= Math.hypot(d.x1 - d.x0, d.y1 - d.y0) >= kClickPixels;
});
canvas.addEventListener("pointerup", (e) => {
  const d = page.drag;
  page.drag = null;
  if (!d || d.kind !== "fling") return;
  const [x, y] = camera.toWorld(d.x0, d.y0);
  const [x1, y1] = camera.toWorld(e.offsetX, e.offsetY);
  if (d.moved) spawn(x, y, (x1 - x) * kFlingPerSecond, (y1 - y) * kFlingPerSecond);
  else spawn(x, y, 0, 0);
});
canvas.addEventListener("wheel", (e) => {
  e.preventDefault();
  camera.zoomAt(e.offsetX, e.offsetY, Math.exp(-e.deltaY * 0.0015));
  page.autoFit = false;
}, {passive: false});
window.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement) return;
  if (e.key === "f" || e.key === "F") fit();
  if (e.key === " " && page.control) {
    e.preventDefault();
    send(page.paused ? {resume: {}} : {pause: {}});
  }
});

function fit() {
  page.autoFit = true;
  fitCamera();
}

$("connect").addEventListener("click", connect);
$("fit").addEventListener("click", fit);
$("colour").addEventListener("change", (e) => {
  page.mode = ColourMode[e.target.value];
  if (page.cur) renderer.setFrame(page.prev, page.cur, page.mode);
});
$("pause").addEventListener("click", () => send({pause: {}}));
$("resume").addEventListener("click", () => send({resume: {}}));
$("step").addEventListener("click", () => send({step: {count: 1}}));
$("reset").addEventListener("click", () => send({reset: {}}));
$("load").addEventListener("click", () => {
  page.autoFit = true;
  send({load_scenario: {name: $("scenario").value}});
});
$("apply").addEventListener("click", () => {
  // Empty or unreadable fields go as NaN: the server's error names the field.
  const params = {gravity: {x: parseFloat($("gx").value), y: parseFloat($("gy").value)},
                  restitution: parseFloat($("restitution").value)};
  send({set_params: {params}});
});
$("controls").addEventListener("submit", (e) => e.preventDefault());

// For tests and the curious: the page's state, read-only by convention.
window.carom = {camera, renderer, connection, get frame() { return page.cur; }, get phase() { return page.phase; },
                get scenarios() { return page.scenarios; }, get flashes() { return page.flashes.length; }};

readFragment();
resize();
updateHud();
connect();
requestAnimationFrame(draw);
