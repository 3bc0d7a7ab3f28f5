// A real browser tab that stops reading costs the tick nothing. Headless
// chromium views the 10 000-body gas through carom-server's WebSocket; then
// the whole browser (its process group: every renderer, the GPU process, the
// network service) is SIGSTOPped for several seconds. Meanwhile, measured
// from outside the browser over TCP: the server ticks at its rate, a TCP
// viewer gets its snapshots, and no more ticks are late than in as long a
// window before with the tab drawing (on a loaded machine: the rate and the
// viewer's share no worse than in that window either); the stopped tab's
// frames are replaced (latest wins) and its connection stays. After SIGCONT the page's HUD tick advances
// again, past where the server was when the browser resumed.
//
//   node test/browser_stop.mjs --site DIR --server CAROM_SERVER --scenario-dir DIR --proto DIR [--out DIR]
//                              [--stop-seconds 6]
// Writes a screenshot of the tab drawing the gas, before the stop, to --out.
// Exit 77 (ctest: skipped) when chromium is not installed.

import fs from "node:fs";
import path from "node:path";

import {checker, hudTick, launchBrowser, loadProtocol, openPage, processTree, sleep, startServer,
        TcpClient, testArgs} from "./support.mjs";

const args = testArgs("browser_stop.mjs", {
  "stop-seconds": {type: "string", default: "6"},
  out: {type: "string", default: "."},
});

const kToken = "web-stop-token";
const kTickHz = 60;  // scenarios/gas.txtpb's
const stopSeconds = Number(args["stop-seconds"]);
const {failures, check} = checker();

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

  // The server as seen from outside for `stopSeconds`, after `begin()`:
  // {stats (the window's timing), seconds, rate (ticks/s), received (the
  // viewer's snapshots), span (ticks from its first to its last), skipped}.
  const measureWindow = async (begin) => {
    const before = (await ctl.call({get_stats: {reset_timing: true}})).stats;
    const seenBefore = seen.length;
    const t0 = Date.now();
    await begin();
    await sleep(stopSeconds * 1000);
    const stats = (await ctl.call({get_stats: {}})).stats;
    const seconds = (Date.now() - t0) / 1000;
    const during = seen.slice(seenBefore);
    return {stats, seconds, rate: (Number(stats.tick) - Number(before.tick)) / seconds, received: during.length,
            span: during.length ? during[during.length - 1] - during[0] + 1 : 0,
            skipped: Number(stats.snapshots_skipped) - Number(before.snapshots_skipped)};
  };
  const describe = (w) => `${w.rate.toFixed(1)} Hz, ${w.stats.late_ticks} late ticks of ${w.stats.ticks_measured}, ` +
                          `tick p99 ${(w.stats.tick_p99_seconds * 1e3).toFixed(2)} ms, the TCP viewer got ` +
                          `${w.received} of ${w.span} ticks`;

  // A reference window as long as the stop, the tab drawing: what this
  // machine's load does to the tick anyway.
  const reference = await measureWindow(async () => {});
  console.log(`the tab drawing, ${stopSeconds} s: ${describe(reference)}`);
  // The foreground tab after seconds of drawing the running gas: its HUD's
  // rates are this machine's.
  fs.mkdirSync(args.out, {recursive: true});
  const shot = path.join(args.out, "web-stop-gas.png");
  await page.screenshot({path: shot});
  console.log(`screenshot: ${shot}`);

  // The browser stops: every process of its group, checked in /proc.
  const pid = browser.process().pid;
  let tree = [];
  const w = await measureWindow(async () => {
    process.kill(-pid, "SIGSTOP");
    stopped = pid;
    for (let i = 0; i < 50; ++i) {
      tree = processTree(pid);
      if (tree.every((p) => p.state === "T")) break;
      await sleep(20);
    }
  });
  const running = tree.filter((p) => p.state !== "T");
  check(tree.length > 1 && running.length === 0,
        `SIGSTOP to the browser's process group: ${tree.length} processes, ` +
            `${running.length} not stopped${running.length ? ` (${JSON.stringify(running)})` : ""}`);
  console.log(`the tab stopped, ${stopSeconds} s: ${describe(w)}`);

  // A stopped tab frees a core: the server does at least as well as with the
  // tab drawing (a tick that waited on the tab would stop, and every tick
  // after it would be late), within 5% of the rate, 3% of the viewer's share
  // and 2% more late ticks for the machine's other load (other processes on
  // 2 cores move a 6 s window's rate by 3%); and as well as the rate and the
  // viewer's share need, when the reference had them.
  const rateWanted = 0.95 * Math.min(kTickHz, reference.rate);
  check(w.rate >= rateWanted && w.rate <= 1.05 * kTickHz,
        `the tick runs on while the tab is stopped: ${w.rate.toFixed(1)} Hz (want ${rateWanted.toFixed(1)}..` +
            `${(1.05 * kTickHz).toFixed(1)})`);
  const late = Number(w.stats.late_ticks);
  const allowed = Number(reference.stats.late_ticks) + Math.max(2, Math.floor(0.02 * Number(w.stats.ticks_measured)));
  check(late <= allowed, `late ticks while the tab is stopped: ${late}, at most ${allowed}`);
  const share = (x) => (x.span > 0 ? x.received / x.span : 0);
  const shareWanted = Math.min(0.95, share(reference) - 0.03);
  check(w.span >= 0.9 * w.rate * w.seconds && share(w) >= shareWanted,
        `a TCP viewer gets its snapshots meanwhile: ${w.received} of ${w.span} ticks (want ${(100 * shareWanted).toFixed(0)}%)`);
  check(w.stats.clients === 3,
        `the stopped tab is still connected (stall timeout not reached): ${w.stats.clients} clients`);
  check(w.skipped >= kTickHz, `the stopped tab's snapshots are replaced, not queued: ${w.skipped} skipped`);

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
