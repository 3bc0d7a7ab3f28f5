// 50 real tabs open and close against one carom-server: the server's
// connection count goes back to where it was, its descriptors too, and the
// world ticks on throughout. Headless chromium; tabs in waves of ten, all of a
// wave at once: the first waves closed once every tab of the wave is
// connected and drawing, the last wave closed as soon as each page has
// loaded, whatever its WebSocket is doing (mid-handshake, mid-Hello).
// Measured from outside the browser: a TCP controller's GetStats (clients,
// tick, late ticks) and /proc/PID/fd of the server.
//
//   node test/browser_tabs.mjs --site DIR --server CAROM_SERVER --scenario-dir DIR --proto DIR [--tabs 50]
// Exit 77 (ctest: skipped) when chromium is not installed.

import path from "node:path";

import {checker, launchBrowser, loadProtocol, openFds, openPage, sleep, startServer,
        TcpClient, testArgs} from "./support.mjs";

const args = testArgs("browser_tabs.mjs", {tabs: {type: "string", default: "50"}});

const kToken = "web-tabs-token";
const kWave = 10;
const kTickHz = 60;  // scenarios/billiards.txtpb's
const tabs = Number(args.tabs);
const {failures, check} = checker();

// GetStats until `done(stats)` (10 s at most); the last stats.
async function statsUntil(ctl, done) {
  let s = null;
  for (let i = 0; i < 100; ++i) {
    s = (await ctl.call({get_stats: {}})).stats;
    if (done(s)) break;
    await sleep(100);
  }
  return s;
}

const protocol = loadProtocol(args.proto);
let server = null, browser = null, ctl = null;
try {
  // A small world that keeps moving (the break, then rolling balls): the
  // tabs, not the drawing, are what is tested.
  server = await startServer(args.server, ["--web-root", args.site, "--token", kToken, "--scenario",
                                           path.join(args["scenario-dir"], "billiards.txtpb"), "--scenario-dir",
                                           args["scenario-dir"], "--threads", "1", "--max-clients", "64"]);
  const pid = server.child.pid;
  ctl = new TcpClient(protocol);
  await ctl.connect(server.port, {role: "controller", token: kToken, name: "tabs-test-ctl"});
  const base = (await ctl.call({get_stats: {reset_timing: true}})).stats;
  const baseFds = openFds(pid);
  const t0 = Date.now();
  console.log(`baseline: ${base.clients} client(s), ${baseFds} descriptors, tick ${base.tick}`);

  browser = await launchBrowser(args.chromium);
  let opened = 0, tick = Number(base.tick);
  for (let wave = 0; opened < tabs; ++wave) {
    const n = Math.min(kWave, tabs - opened);
    const last = opened + n >= tabs;
    const pages = await Promise.all(Array.from({length: n}, () => openPage(browser, server.url, failures)));
    opened += n;
    if (!last) {
      await Promise.all(pages.map((p) => p.waitForFunction(() => window.carom.phase === "open" && window.carom.frame,
                                                           {timeout: 20000, polling: 100})));
      const s = await statsUntil(ctl, (x) => x.clients === base.clients + n);
      check(s.clients === base.clients + n, `wave ${wave + 1}: ${n} tabs connected and drawing, the server counts ${s.clients} clients`);
    }
    await Promise.all(pages.map((p) => p.close()));
    const s = await statsUntil(ctl, (x) => x.clients === base.clients);
    check(s.clients === base.clients && Number(s.tick) > tick,
          `wave ${wave + 1}: ${n} tabs closed${last ? " as soon as loaded" : ""}, ${opened} so far: ` +
              `the server is back to ${s.clients} client(s), tick ${tick} -> ${s.tick}`);
    tick = Number(s.tick);
  }

  const s = await statsUntil(ctl, () => true);
  const seconds = (Date.now() - t0) / 1000;
  const ticks = Number(s.tick) - Number(base.tick);
  // On time is browser_stop.mjs's question; here the tabs (50 chromium
  // renderers starting on the same cores) must not stop the world.
  check(ticks >= 0.5 * kTickHz * seconds,
        `the world ticked on: ${ticks} ticks in ${seconds.toFixed(1)} s (${(ticks / seconds).toFixed(1)} Hz, ` +
            `${s.late_ticks} late)`);
  const withBrowser = openFds(pid);
  console.log(`descriptors with the browser still open (its idle keep-alive HTTP connections): ${withBrowser}`);

  // Chromium keeps a few idle HTTP connections to the server for reuse;
  // without the browser, every descriptor a tab cost must be gone.
  await browser.close();
  browser = null;
  let fds = openFds(pid);
  for (let i = 0; i < 100 && fds > baseFds; ++i) {
    await sleep(100);
    fds = openFds(pid);
  }
  check(fds <= baseFds, `after ${opened} tabs and the browser closed: ${fds} descriptors (baseline ${baseFds})`);
  const end = await statsUntil(ctl, (x) => x.clients === base.clients);
  check(end.clients === base.clients && Number(end.tick) > Number(s.tick),
        `the server runs on: ${end.clients} client(s), tick ${end.tick}`);
  check(server.running(), "carom-server still runs");
} catch (e) {
  failures.push(String(e && e.stack ? e.stack : e));
} finally {
  if (ctl) ctl.close();
  if (browser) await browser.close();
  if (server) await server.stop();
}
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length > 0 ? 1 : 0);
