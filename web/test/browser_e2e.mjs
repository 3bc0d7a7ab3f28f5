// The bundled page in headless chromium, served by a real carom-server
// (--http-port, --web-root) and speaking to it over its WebSocket at /ws:
// the canvas shows the scripted world's bodies where the server says they are,
// a wrong token shows the server's error and its field, a click as a
// controller spawns a body at the clicked world position, resume makes the
// tick advance, the scenario picker offers exactly what the server lists
// (carom-ctl --json scenarios), a scenario picked there and loaded runs, and the page's
// decoded compact stream equals the server's own state quantized (get_world,
// full precision), body for body, and its flashes come from compact events
// within the threshold and cap it asks for; no console errors. Writes a screenshot.
//
//   node test/browser_e2e.mjs --site DIR --server CAROM_SERVER --ctl CAROM_CTL --scenario FILE --scenario-dir DIR --out DIR
// Exit 77 (ctest: skipped) when chromium is not installed.

import {execFileSync, spawn} from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {parseArgs} from "node:util";

const {values: args} = parseArgs({
  options: {
    site: {type: "string"},
    server: {type: "string"},
    ctl: {type: "string"},
    scenario: {type: "string"},
    "scenario-dir": {type: "string"},
    renderer: {type: "string", default: "auto"},  // the page's ?renderer=: auto, webgl, software
    out: {type: "string", default: "."},
    chromium: {type: "string", default: process.env.CAROM_CHROMIUM || "/usr/bin/chromium"},
  },
});
if (!args.site || !args.server || !args.ctl || !args.scenario || !args["scenario-dir"]) {
  console.error("usage: node test/browser_e2e.mjs --site DIR --server CAROM_SERVER --ctl CAROM_CTL --scenario FILE --scenario-dir DIR --out DIR");
  process.exit(2);
}
if (!fs.existsSync(args.chromium)) {
  console.log(`SKIPPED: no chromium at ${args.chromium} (scripts/deps installs it)`);
  process.exit(77);
}
const puppeteer = (await import("puppeteer-core")).default;

// The scenario's four still bodies (client/view/testdata/view_test.txtpb), paused.
const kBodies = [[20, 25, 5], [50, 10, 3], [80, 40, 6], [70, 15, 2]];
const kToken = "web-test-token";

const failures = [];
let serverStopped = false;  // set just before the test stops the server
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "carom-web-"));
const portFile = path.join(dir, "port");
const httpPortFile = path.join(dir, "http-port");
const server = spawn(args.server, ["--port", "0", "--port-file", portFile, "--http-port", "0", "--http-port-file",
                                   httpPortFile, "--web-root", args.site, "--token", kToken, "--scenario", args.scenario,
                                   "--scenario-dir", args["scenario-dir"], "--threads", "1"],
                     {stdio: ["ignore", "inherit", "inherit"]});
let browser = null;
const site = {};
try {
  for (let i = 0; i < 100 && !(fs.existsSync(portFile) && fs.existsSync(httpPortFile)); ++i) {
    await new Promise((r) => setTimeout(r, 100));
  }
  site.url = `http://127.0.0.1:${Number(fs.readFileSync(httpPortFile, "utf8"))}/`;
  site.address = `127.0.0.1:${Number(fs.readFileSync(portFile, "utf8"))}`;
  browser = await puppeteer.launch({
    executablePath: args.chromium,
    headless: true,
    args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
  });
  const open = async (fragment) => {
    const page = await browser.newPage();
    await page.setViewport({width: 1280, height: 800});
    page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      // Once the server is stopped on purpose, the page's reconnect attempts
      // are refused, and chromium logs each refused WebSocket as an error.
      if (serverStopped && /WebSocket|ERR_CONNECTION_REFUSED/.test(m.text())) return;
      if (m.type() === "error") failures.push(`console error: ${m.text()}`);
    });
    const opened = Date.now();
    await page.goto(`${site.url}?renderer=${args.renderer}${fragment}`, {waitUntil: "load"});
    return {page, opened};
  };

  // A viewer: the bodies are drawn where the server has them.
  // Polling by timer, not animation frame: a tab in the background gets none.
  const {page: viewer, opened} = await open("");
  await viewer.waitForFunction(() => window.carom.frame && window.carom.frame.ids.length === 4, {timeout: 10000, polling: 100});
  console.log(`first frame ${Date.now() - opened} ms after opening the URL`);
  await new Promise((r) => setTimeout(r, 300));  // a few animation frames
  const pixels = await viewer.evaluate((bodies) => new Promise((resolve) => requestAnimationFrame(() => {
    // In an animation frame, after the page's own draw: a WebGL canvas's
    // pixels are there until the frame is composited.
    const {camera} = window.carom;
    const canvas = document.getElementById("world");
    const copy = document.createElement("canvas");  // works for either kind of context
    copy.width = canvas.width;
    copy.height = canvas.height;
    const c = copy.getContext("2d");
    c.drawImage(canvas, 0, 0);
    const dpr = canvas.width / camera.width;
    const at = (x, y) => {
      const [sx, sy] = camera.toScreen(x, y);
      return Array.from(c.getImageData(Math.round(sx * dpr), Math.round(sy * dpr), 1, 1).data.slice(0, 3));
    };
    resolve({bodies: bodies.map(([x, y]) => at(x, y)), empty: [at(40, 40), at(5, 45), at(95, 5)]});
  })), kBodies);
  const isBackground = ([r, g, b]) => r < 40 && g < 40 && b < 45;
  pixels.bodies.forEach((p, i) => check(!isBackground(p), `body ${i} at (${kBodies[i]}) is drawn: pixel ${p}`));
  pixels.empty.forEach((p, i) => check(isBackground(p), `empty place ${i} is background: pixel ${p}`));
  const hudOk = await viewer.waitForFunction(() => /bodies\s+4\n/.test(document.getElementById("hud").textContent) &&
                                                 /paused/.test(document.getElementById("hud").textContent),
                                           {timeout: 5000, polling: 100}).then(() => true, () => false);
  check(hudOk, "the HUD shows 4 bodies, paused");  // it refreshes once a second

  // A wrong token: the server's error, with its code and field.
  const {page: wrong} = await open("#token=wrong");
  await wrong.waitForFunction(() => /refused/.test(document.getElementById("status").textContent), {timeout: 10000, polling: 100});
  const refused = await wrong.$eval("#status", (e) => e.textContent);
  check(/UNAUTHENTICATED/.test(refused) && /hello\.token/.test(refused), `a wrong token is refused: ${refused}`);
  await wrong.close();

  // A controller: a click spawns at the clicked place; resume runs the world.
  const {page: controller} = await open(`#token=${kToken}`);
  await controller.waitForFunction(() => !document.getElementById("controller").disabled && window.carom.frame,
                                   {timeout: 10000, polling: 100});
  const [cx, cy, metresPerPixel] = await controller.evaluate(() => {
    const {camera} = window.carom;
    return [...camera.toScreen(40, 40), 1 / camera.pixelsPerMetre];
  });
  await controller.mouse.click(cx, cy);
  await viewer.waitForFunction(() => window.carom.frame.ids.length === 5, {timeout: 10000, polling: 100});
  const spawned = await viewer.evaluate(() => {
    const f = window.carom.frame;
    const i = f.ids.length - 1;  // the newest id
    return [f.x[i], f.y[i]];
  });
  const error = Math.hypot(spawned[0] - 40, spawned[1] - 40);
  check(error <= metresPerPixel, `a click spawns at (40, 40): at (${spawned}), ${error.toFixed(4)} m off, a pixel is ${metresPerPixel.toFixed(4)} m`);
  const tick0 = await viewer.evaluate(() => window.carom.frame.tick);
  await controller.click("#resume");
  await viewer.waitForFunction((t) => window.carom.frame.tick > t + 10, {timeout: 10000, polling: 100}, tick0);
  check(true, "resume: the viewer's tick advances");

  // The picker: one option per scenario the server lists (over TCP, to
  // carom-ctl), in its order, each named and counted as the server says; the
  // viewer's page has the same list.
  const listed = JSON.parse(execFileSync(args.ctl, ["--server", site.address, "--json", "scenarios"],
                                         {encoding: "utf8"})).scenarios.scenarios;
  const want = listed.map((s) => `${s.name} (${s.error ? "does not parse" : `${s.bodies} bodies`})`);
  for (const [who, page] of [["controller", controller], ["viewer", viewer]]) {
    await page.waitForFunction(() => window.carom.scenarios !== null, {timeout: 10000, polling: 100});
    const shown = await page.$$eval("#scenario option", (os) => os.map((o) => `${o.value}|${o.textContent}|${o.title}`));
    check(JSON.stringify(shown) === JSON.stringify(listed.map((s, i) => `${s.name}|${want[i]}|${s.error || s.description}`)),
          `the ${who}'s picker shows the server's ${listed.length} scenarios: ${shown.map((o) => o.split("|")[0])}`);
  }
  check(listed.length === fs.readdirSync(args["scenario-dir"]).filter((f) => f.endsWith(".txtpb")).length &&
        listed.some((s) => s.name === "gas" && s.bodies === "10000"),
        "the server lists every file of --scenario-dir, the gas with its 10000 bodies");

  // The gas (10 000 moving bodies, collisions every tick) picked and loaded
  // from the page; paused after a second of deltas, the viewer's decoded state is
  // the server's state quantized at 1 mm and 1 mm/s, bit for bit.
  await controller.select("#scenario", "gas");
  await controller.click("#load");
  await viewer.waitForFunction(() => window.carom.frame.ids.length === 10000, {timeout: 20000, polling: 100});
  const tick1 = await viewer.evaluate(() => window.carom.frame.tick);
  await viewer.waitForFunction((t) => window.carom.frame.tick > t + 30, {timeout: 20000, polling: 100}, tick1);
  // Its flashes come from compact events: at most 32 a snapshot (max_events),
  // each an impact at least 2 m/s hard (min_event_speed: for two of the gas's
  // equal balls, |impulse| 2 / m, with the impulse a bfloat16), at a point in
  // the box, between two of its bodies, of a tick up to the snapshot's.
  const events = await viewer.evaluate(() => new Promise((resolve) => {
    const seen = new Map();  // tick -> problems found in its frame's events
    const kMass = Math.PI * 0.25 * 0.25;  // density 1
    // How the events came: counted as the page's stream decodes snapshots.
    const stream = window.carom.connection.stream;
    const decode = stream.snapshot.bind(stream);
    const came = {coded: 0, plain: 0};
    stream.snapshot = (s) => {
      if (s.compact_events) ++came.coded;
      if (s.events.length > 0) ++came.plain;
      return decode(s);
    };
    const look = () => {
      const f = window.carom.frame;
      if (!seen.has(f.tick)) {
        const ids = new Set(f.ids);
        const bad = f.events.filter((e) => !(Math.hypot(e.impulse.x, e.impulse.y) * 2 / kMass >= 2 * (1 - 2 ** -7)) ||
                                           !(e.point.x >= 0 && e.point.x <= 90 && e.point.y >= 0 && e.point.y <= 90) ||
                                           !ids.has(e.a) || !ids.has(e.b) || !(e.a < e.b) || e.tick > f.tick);
        seen.set(f.tick, {n: f.events.length, bad: bad.length});
      }
      if (seen.size < 30) setTimeout(look, 5);
      else resolve({frames: seen.size, events: [...seen.values()].map((v) => v.n), came,
                    bad: [...seen.values()].reduce((a, v) => a + v.bad, 0), flashes: window.carom.flashes});
    };
    look();
  }));
  check(events.events.some((n) => n > 0) && events.events.every((n) => n <= 32) && events.bad === 0 &&
        events.flashes > 0 && events.came.coded > 0 && events.came.plain === 0,
        `the gas's flashes come from compact events: per snapshot ${events.events.join(" ")}; ${events.bad} out of ` +
        `threshold, box or order; ${events.came.coded} snapshots with compact events, ${events.came.plain} with ` +
        `plain ones; ${events.flashes} flashes alive`);
  // Pause, then step one tick: the viewer's rate limit (60 Hz) may drop the
  // snapshot that the pause re-sends (carom-server's session sends nothing
  // later while paused), never the step's, which comes a while after.
  const steps = await controller.evaluate(async () => {
    const c = window.carom.connection;
    const pause = await c.command({pause: {}});
    await new Promise((r) => setTimeout(r, 200));
    const step = await c.command({step: {count: 1}});
    return [pause, step].map((r) => (r ? {code: r.code, message: r.message, tick: r.tick} : null));
  });
  check(steps.every((r) => r && r.code === 0), `pause, then step 1: ${JSON.stringify(steps)}`);
  await viewer.waitForFunction((t) => window.carom.frame.paused && window.carom.frame.tick === t,
                               {timeout: 10000, polling: 100}, steps[1] ? steps[1].tick : 0);
  const exact = await controller.evaluate(async () => {
    const r = await window.carom.connection.command({get_world: {}});
    const w = r.world;
    return {tick: w.tick, ids: w.id, x: w.x, y: w.y, vx: w.vx, vy: w.vy};
  });
  const compared = await viewer.evaluate((w) => {
    const f = window.carom.frame;
    const q = (v) => Math.round(v / 0.001) * 0.001;  // the server's quantization (ties never happen here)
    let differ = 0;
    if (f.ids.length !== w.ids.length) return {differ: -1, tick: f.tick};
    for (let i = 0; i < f.ids.length; ++i) {
      if (f.ids[i] !== w.ids[i] || f.x[i] !== q(w.x[i]) || f.y[i] !== q(w.y[i]) || f.vx[i] !== q(w.vx[i]) ||
          f.vy[i] !== q(w.vy[i]))
        ++differ;
    }
    return {differ, tick: f.tick, events: f.events.length};
  }, exact);
  check(compared.differ === 0 && compared.tick === exact.tick,
        `the viewer's decoded gas at tick ${compared.tick} equals get_world's at tick ${exact.tick} quantized: ` +
        `${compared.differ} of 10000 bodies differ`);
  await new Promise((r) => setTimeout(r, 1200));  // a HUD refresh
  // The HUD's step line: the time and threads of the server's last step (the
  // frame's, as the server sent them; one thread: the server's --threads 1).
  // (A page in a background tab draws nothing, and its HUD is drawn with the
  // frames: the viewer comes to the front first.)
  await viewer.bringToFront();
  await viewer.waitForFunction(() => /^step .* ms on /m.test(document.getElementById("hud").textContent),
                               {timeout: 5000, polling: 100}).catch(() => {});
  const stepHud = await viewer.evaluate(() => ({
    hud: document.getElementById("hud").textContent,
    seconds: window.carom.frame.stats.step_seconds,
    threads: window.carom.frame.stats.step_threads,
  }));
  const stepText = stepHud.hud.split("\n").find((l) => l.startsWith("step")) ?? "";
  check(stepHud.threads === 1 && stepHud.seconds > 0 &&
        stepText === `step      ${(stepHud.seconds * 1e3).toFixed(2)} ms on 1 thread`,
        `the HUD names the last step's time and threads: "${stepText}" (frame: ${stepHud.seconds} s on ` +
        `${stepHud.threads})`);
  fs.mkdirSync(args.out, {recursive: true});
  const shot = path.join(args.out, `web-e2e-${args.renderer}.png`);
  await viewer.screenshot({path: shot});
  console.log(`screenshot: ${shot}`);

  // The server goes: the page says so, then that it cannot reach it.
  serverStopped = true;
  server.kill("SIGTERM");
  const said = await viewer.waitForFunction(
      () => /going away|gone|Cannot reach/.test(document.getElementById("status").textContent),
      {timeout: 10000, polling: 100}).then(() => viewer.$eval("#status", (e) => e.textContent), () => "");
  check(said !== "", `the server stops: the page says "${said}"`);
} catch (e) {
  failures.push(String(e && e.stack ? e.stack : e));
} finally {
  if (browser) await browser.close();
  server.kill("SIGTERM");
  fs.rmSync(dir, {recursive: true, force: true});
}
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length > 0 ? 1 : 0);
