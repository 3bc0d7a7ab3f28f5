// A real browser tab that stops reading costs the tick nothing. Headless
// chromium views the 10 000-body gas through carom-server's WebSocket; then
// the whole browser (its process group: every renderer, the GPU process, the
// network service) is SIGSTOPped for several seconds. Meanwhile, measured
// from outside the browser over TCP: the server ticks at its rate, no more
// ticks are late than in as long a window before with the tab drawing, a TCP
// viewer gets every snapshot, the stopped tab's frames are replaced (latest
// wins) and its connection stays. After SIGCONT the page's HUD tick advances
// again, past where the server was when the browser resumed.
//
//   node test/browser_stop.mjs --site DIR --server CAROM_SERVER --scenario-dir DIR --proto DIR [--stop-seconds 6]
// Exit 77 (ctest: skipped) when chromium is not installed.

import fs from "node:fs";
import path from "node:path";
import {parseArgs} from "node:util";

import {hudTick, kDefaultChromium, launchBrowser, loadProtocol, openPage, processTree, sleep, startServer,
        TcpClient} from "./support.mjs";

const {values: args} = parseArgs({
  options: {
    site: {type: "string"},
    server: {type: "string"},
    "scenario-dir": {type: "string"},
    proto: {type: "string"},
    "stop-seconds": {type: "string", default: "6"},
    chromium: {type: "string", default: kDefaultChromium},
  },
});
if (!args.site || !args.server || !args["scenario-dir"] || !args.proto) {
  console.error("usage: node test/browser_stop.mjs --site DIR --server CAROM_SERVER --scenario-dir DIR --proto DIR");
  process.exit(2);
}
if (!fs.existsSync(args.chromium)) {
  console.log(`SKIPPED: no chromium at ${args.chromium} (scripts/deps installs it)`);
  process.exit(77);
}

const kToken = "web-stop-token";
const kTickHz = 60;  // scenarios/gas.txtpb's
const stopSeconds = Number(args["stop-seconds"]);
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

// In the page: its HUD's tick is past `t` (the HUD refreshes once a second).
const hudPast = (t) => {
  const m = /tick\s+(\d+)/.exec(document.getElementById("hud").textContent);
  return m !== null && Number(m[1]) > t;
};

const protocol = loadProtocol(args.proto);
let server = null, browser = null, stopped = null;
const clients = [];
try {
  server = await startServer(args.server, ["--web-root", args.site, "--token", kToken, "--scenario",
                                           path.join(args["scenario-dir"], "gas.txtpb"), "--scenario-dir",
                                           args["scenario-dir"], "--threads", "1"]);
  browser = await launchBrowser(args.chromium);
  const page = await openPage(browser, server.url, failures);
  await page.waitForFunction(() => window.carom.frame && window.carom.frame.ids.length === 10000,
                             {timeout: 20000, polling: 100});
  await page.waitForFunction(hudPast, {timeout: 10000, polling: 100}, -1);
  const hud0 = await hudTick(page);
  await page.waitForFunction(hudPast, {timeout: 10000, polling: 100}, hud0);
  check(true, `the page views the gas: 10000 bodies, HUD tick past ${hud0}`);

  // Outside the browser: a controller for the stats, a viewer that takes
  // every snapshot (the compact stream, as the page; decoding it is not the
  // point, receiving it is).
  const ctl = new TcpClient(protocol);
  clients.push(ctl);
  await ctl.connect(server.port, {role: "controller", token: kToken, name: "stop-test-ctl"});
  const viewer = new TcpClient(protocol);
  clients.push(viewer);
  await viewer.connect(server.port,
                       {role: "viewer", name: "stop-test-viewer", wishes: {max_rate_hz: 0, body_tables: true, compact: true}});
  const seen = [];  // the viewer's snapshot ticks
  let viewing = true, readError = null;
  const reading = (async () => {
    while (viewing) {
      const m = await viewer.next(5000);
      if (m.snapshot) seen.push(Number(m.snapshot.tick));
    }
  })().catch((e) => (readError = e));
  await sleep(1000);

  // A reference window as long as the stop, the tab drawing: the late ticks
  // this machine's load makes anyway.
  await ctl.call({get_stats: {reset_timing: true}});
  await sleep(stopSeconds * 1000);
  const reference = (await ctl.call({get_stats: {}})).stats;
  console.log(`the tab drawing, ${stopSeconds} s: ${reference.late_ticks} late ticks of ${reference.ticks_measured}, ` +
              `tick p99 ${(reference.tick_p99_seconds * 1e3).toFixed(2)} ms`);

  // The browser stops: every process of its group, checked in /proc.
  const pid = browser.process().pid;
  const before = (await ctl.call({get_stats: {reset_timing: true}})).stats;
  const seenBefore = seen.length;
  const t0 = Date.now();
  process.kill(-pid, "SIGSTOP");
  stopped = pid;
  let tree = [];
  for (let i = 0; i < 50; ++i) {
    tree = processTree(pid);
    if (tree.every((p) => p.state === "T")) break;
    await sleep(20);
  }
  const running = tree.filter((p) => p.state !== "T");
  check(tree.length > 1 && running.length === 0,
        `SIGSTOP to the browser's process group: ${tree.length} processes, ` +
            `${running.length} not stopped${running.length ? ` (${JSON.stringify(running)})` : ""}`);
  await sleep(stopSeconds * 1000);
  const after = (await ctl.call({get_stats: {}})).stats;
  const seconds = (Date.now() - t0) / 1000;
  const during = seen.slice(seenBefore);

  const ticks = Number(after.tick) - Number(before.tick);
  const rate = ticks / seconds;
  check(Math.abs(rate - kTickHz) <= 0.03 * kTickHz,
        `the tick runs on while the tab is stopped: ${ticks} ticks in ${seconds.toFixed(2)} s = ${rate.toFixed(1)} Hz`);
  const late = Number(after.late_ticks);
  const measured = Number(after.ticks_measured);
  // A stopped tab frees a core: its window may have no more late ticks than
  // the reference (a tick that waited on the tab would make them all late),
  // give or take 1% for the machine's other load.
  const allowed = Number(reference.late_ticks) + Math.max(1, Math.floor(0.01 * measured));
  check(late <= allowed,
        `late ticks while the tab is stopped: ${late} of ${measured}, at most ${allowed} ` +
            `(tick p99 ${(after.tick_p99_seconds * 1e3).toFixed(2)} ms)`);
  const span = during.length ? during[during.length - 1] - during[0] + 1 : 0;
  check(span >= 0.9 * ticks && during.length >= 0.95 * span,
        `a TCP viewer gets its snapshots meanwhile: ${during.length} of ${span} ticks`);
  check(after.clients === 3, `the stopped tab is still connected (stall timeout not reached): ${after.clients} clients`);
  const skipped = Number(after.snapshots_skipped) - Number(before.snapshots_skipped);
  check(skipped >= kTickHz, `the stopped tab's snapshots are replaced, not queued: ${skipped} skipped`);

  // The browser resumes: the page catches up with the server.
  const resumedAt = Number((await ctl.call({get_stats: {}})).stats.tick);
  process.kill(-pid, "SIGCONT");
  stopped = null;
  const recovered = await page.waitForFunction(hudPast, {timeout: 15000, polling: 100}, resumedAt)
                        .then(() => true, () => false);
  const hud = await hudTick(page);
  check(recovered, `after SIGCONT the HUD tick (${hud}) passes the server's tick at SIGCONT (${resumedAt})`);
  const phase = await page.evaluate(() => window.carom.phase);
  check(phase === "open", `the page is connected after SIGCONT (${phase})`);
  check(server.running(), "carom-server still runs");
  viewing = false;
  await reading;
  check(readError === null, `the TCP viewer read on throughout${readError ? `: ${readError.message}` : ""}`);
} catch (e) {
  failures.push(String(e && e.stack ? e.stack : e));
} finally {
  if (stopped !== null) process.kill(-stopped, "SIGCONT");
  for (const c of clients) c.close();
  if (browser) await browser.close();
  if (server) await server.stop();
}
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length > 0 ? 1 : 0);
