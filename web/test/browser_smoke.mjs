// Opens the bundled page in Debian's chromium (headless, driven by
// puppeteer-core) from a local static server with no WebSocket behind it:
// the page must load without errors, draw with WebGL2, and say that it
// cannot reach the server. With --bodies N it then feeds the renderer N
// synthetic bodies and reports the frame rate. Writes a screenshot.
//
//   node test/browser_smoke.mjs --site build/release/web --out DIR [--bodies N] [--min-fps F]
//                               [--renderer auto|webgl|software]
// Exit 77 (ctest: skipped) when chromium is not installed.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {parseArgs} from "node:util";

const {values: args} = parseArgs({
  options: {
    site: {type: "string"},
    out: {type: "string", default: "."},
    bodies: {type: "string", default: "0"},
    "min-fps": {type: "string", default: "0"},
    renderer: {type: "string", default: "auto"},  // the page's ?renderer=: auto, webgl, software
    chromium: {type: "string", default: process.env.CAROM_CHROMIUM || "/usr/bin/chromium"},
  },
});
if (!args.site) {
  console.error("usage: node test/browser_smoke.mjs --site DIR --out DIR [--bodies N] [--min-fps F]");
  process.exit(2);
}
if (!fs.existsSync(args.chromium)) {
  console.log(`SKIPPED: no chromium at ${args.chromium} (scripts/deps installs it)`);
  process.exit(77);
}
const puppeteer = (await import("puppeteer-core")).default;

const types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"};
const server = http.createServer((req, res) => {
  const pathname = new URL(req.url, "http://x").pathname;
  const name = pathname === "/" ? "index.html" : path.basename(pathname);
  const file = path.join(args.site, name);
  if (!types[path.extname(name)] || !fs.existsSync(file)) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {"content-type": types[path.extname(name)]}).end(fs.readFileSync(file));
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${server.address().port}/?renderer=${args.renderer}`;

const failures = [];
const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  // SwiftShader: WebGL on the CPU, as on a machine without a GPU.
  args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--window-size=1280,800"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 800});
  page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    // The one error expected here: the browser's own line about the refused WebSocket.
    if (m.type() === "error" && !/WebSocket connection to .* failed/.test(m.text()))
      failures.push(`console error: ${m.text()}`);
  });
  const opened = Date.now();
  await page.goto(url, {waitUntil: "load"});
  await page.waitForFunction(() => !document.getElementById("status").hidden &&
                                 /Cannot reach the server/.test(document.getElementById("status").textContent),
                             {timeout: 10000});
  const status = await page.$eval("#status", (e) => e.textContent);
  const renderer = await page.evaluate(() => window.carom.renderer.kind);
  console.log(`page up in ${Date.now() - opened} ms; renderer ${renderer}; status: ${status}`);
  if (!/^(WebGL2|software)/.test(renderer)) failures.push(`unexpected renderer ${renderer}`);

  const bodies = Number(args.bodies);
  if (bodies > 0) {
    // Synthetic bodies straight into the renderer (no server yet): a square
    // gas of N bodies, each snapshot moving them, at 60 snapshots a second.
    const fps = await page.evaluate(async (n) => {
      const {renderer, camera} = window.carom;
      const side = Math.ceil(Math.sqrt(n));
      const make = (t) => {
        const f = {ids: new Uint32Array(n), radius: new Float32Array(n), x: new Float64Array(n), y: new Float64Array(n),
                   vx: new Float64Array(n), vy: new Float64Array(n)};
        for (let i = 0; i < n; ++i) {
          f.ids[i] = i + 1;
          f.radius[i] = 0.3 + 0.1 * (i % 3);
          f.x[i] = (i % side) + 0.2 * Math.sin(t + i);
          f.y[i] = Math.floor(i / side) + 0.2 * Math.cos(t + i);
          f.vx[i] = Math.cos(t + i);
          f.vy[i] = -Math.sin(t + i);
        }
        return f;
      };
      camera.fit(-1, -1, side, side);
      renderer.setOrigin(side / 2, side / 2);
      let prev = make(0);
      const frames = [make(0.1), make(0.2)];
      let k = 0;
      const timer = setInterval(() => {
        const cur = frames[k++ % 2];
        renderer.setFrame(prev, cur, 0);
        prev = cur;
      }, 1000 / 60);
      await new Promise((r) => setTimeout(r, 1000));  // warm up
      let count = 0;
      const start = performance.now();
      await new Promise((resolve) => {
        const tick = () => {
          ++count;
          if (performance.now() - start < 3000) requestAnimationFrame(tick);
          else resolve();
        };
        requestAnimationFrame(tick);
      });
      clearInterval(timer);
      return (count * 1000) / (performance.now() - start);
    }, bodies);
    console.log(`${bodies} bodies: ${fps.toFixed(1)} fps`);
    if (fps < Number(args["min-fps"])) failures.push(`${bodies} bodies: ${fps.toFixed(1)} fps, under ${args["min-fps"]}`);
  }
  fs.mkdirSync(args.out, {recursive: true});
  const shot = path.join(args.out, `web-${bodies > 0 ? bodies : "smoke"}-${args.renderer}.png`);
  await page.screenshot({path: shot});
  console.log(`screenshot: ${shot}`);
} finally {
  await browser.close();
  server.close();
}
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length > 0 ? 1 : 0);
