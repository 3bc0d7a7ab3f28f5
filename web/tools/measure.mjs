// Measures the browser viewer in headless chromium: its frame rate (animation
// frames a second, each one a draw of the world) and the time from opening
// the URL to the first drawn frame. Not a test: it prints what it saw, one
// JSON line, and passes no judgement.
//
//   node tools/measure.mjs --server CAROM_SERVER [--bodies 10000 | --scenario FILE] [--threads 1]
//   node tools/measure.mjs --url http://HOST:PORT/       (a server already running with --http-port)
//   common: [--seconds 5] [--warmup 2] [--renderer auto|webgl|software] [--site DIR] [--chromium PATH]
//
// With --server it starts carom-server on free ports of 127.0.0.1, serving
// --site (default: the release build's page, ../build/release/web) and
// holding --bodies bodies: the gas of scenarios/gas.txtpb (radius 0.25 m,
// speeds 0..7 m/s, elastic, no gravity) at its density, in a box scaled to
// the count; or --scenario FILE. The page is opened in a fresh tab of a
// browser already running (its HTTP cache empty), as a viewer.
// Prints {fps, first_frame_ms, bodies, ...}: fps over --seconds after
// --warmup seconds from the first frame; first_frame_ms from the start of
// the navigation to the first animation frame that drew bodies.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";

import {kDefaultChromium, launchBrowser, sleep, startServer} from "../test/support.mjs";

const web = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const {values: args} = parseArgs({
  options: {
    server: {type: "string"},
    url: {type: "string"},
    bodies: {type: "string", default: "10000"},
    scenario: {type: "string"},
    threads: {type: "string", default: "1"},
    seconds: {type: "string", default: "5"},
    warmup: {type: "string", default: "2"},
    renderer: {type: "string", default: "auto"},
    site: {type: "string", default: path.join(web, "../build/release/web")},
    chromium: {type: "string", default: kDefaultChromium},
    help: {type: "boolean", short: "h"},
  },
});
const kUsage = "usage: node tools/measure.mjs --server CAROM_SERVER [--bodies N | --scenario FILE] [--threads T]\n" +
               "       node tools/measure.mjs --url URL\n" +
               "       common: [--seconds S] [--warmup S] [--renderer auto|webgl|software] [--site DIR] [--chromium PATH]";
if (args.help) {
  console.log(kUsage);
  process.exit(0);
}
if (!args.server === !args.url) {
  console.error(kUsage);
  process.exit(2);
}

// The gas at scenarios/gas.txtpb's density (10 000 balls in 90 m x 90 m):
// the box's side grows with the square root of the count.
function gasScenario(count) {
  const side = 90 * Math.sqrt(count / 10000);
  return `# written by web/tools/measure.mjs: scenarios/gas.txtpb with ${count} balls
name: "gas-${count}"
params {
  bounds { walled: true min { x: 0 y: 0 } max { x: ${side} y: ${side} } }
  gravity { x: 0 y: 0 }
  restitution: 1
  linear_damping: 0
  solver: SOLVER_DISCRETE
  substeps: 4
  iterations: 2
  dt: 0.016666666666666666
  density: 1
  tick_hz: 60
}
generators {
  random_box {
    min { x: 0.5 y: 0.5 }
    max { x: ${side - 0.5} y: ${side - 0.5} }
    count: ${count}
    radius { min: 0.25 max: 0.25 }
    speed { min: 0 max: 7 }
    seed: 1
  }
}
`;
}

let server = null, browser = null, dir = null;
let code = 0;
try {
  let url = args.url;
  if (args.server) {
    let scenario = args.scenario;
    if (!scenario) {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "carom-measure-"));
      scenario = path.join(dir, "gas.txtpb");
      fs.writeFileSync(scenario, gasScenario(Number(args.bodies)));
    }
    if (!fs.existsSync(path.join(args.site, "index.html"))) throw new Error(`no page in ${args.site} (--site)`);
    server = await startServer(args.server, ["--web-root", args.site, "--scenario", scenario, "--threads", args.threads]);
    url = server.url;
  }
  browser = await launchBrowser(args.chromium);
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 800});
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // Watches every animation frame from the document's start: the first one
  // with bodies (the page's own draw runs in the same frame, before paint).
  await page.evaluateOnNewDocument(() => {
    const watch = () => {
      const f = window.carom && window.carom.frame;
      if (f && f.ids.length > 0) window.caromFirstFrame = {ms: performance.now(), bodies: f.ids.length};
      else requestAnimationFrame(watch);
    };
    requestAnimationFrame(watch);
  });
  const u = new URL(url);
  u.searchParams.set("renderer", args.renderer);
  await page.goto(u.href, {waitUntil: "load"});
  await page.waitForFunction(() => window.caromFirstFrame, {timeout: 60000, polling: 50});
  const first = await page.evaluate(() => window.caromFirstFrame);
  await sleep(Number(args.warmup) * 1000);
  const counted = await page.evaluate((ms) => new Promise((resolve) => {
    const tick0 = window.carom.frame.tick;
    const t0 = performance.now();
    let frames = 0;
    const count = () => {
      const t = performance.now() - t0;
      if (t >= ms) {
        resolve({frames, ms: t, ticks: window.carom.frame.tick - tick0, bodies: window.carom.frame.ids.length,
                 renderer: window.carom.renderer.kind});
        return;
      }
      ++frames;
      requestAnimationFrame(count);
    };
    requestAnimationFrame(count);
  }), Number(args.seconds) * 1000);
  console.log(JSON.stringify({
    fps: Number((counted.frames / (counted.ms / 1000)).toFixed(1)),
    first_frame_ms: Math.round(first.ms),
    bodies: counted.bodies,
    renderer: counted.renderer,
    snapshot_ticks_per_s: Number((counted.ticks / (counted.ms / 1000)).toFixed(1)),
    seconds: Number((counted.ms / 1000).toFixed(2)),
    url: u.href,
    page_errors: errors,
  }));
} catch (e) {
  console.error(`measure: ${e && e.stack ? e.stack : e}`);
  code = 1;
} finally {
  if (browser) await browser.close();
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, {recursive: true, force: true});
}
process.exit(code);
