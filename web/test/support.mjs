// What the browser robustness tests (browser_stop.mjs, browser_tabs.mjs) and
// tools/measure.mjs share: a real carom-server on free ports, a headless
// chromium, a TCP client of the protocol (the server's view of things, from
// outside the browser), and the server's descriptors and processes read from
// /proc.

import {spawn} from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {parseArgs} from "node:util";

import {makeProtocol} from "../src/protocol.js";
import {loadDescriptor} from "../tools/descriptor.mjs";

export const kDefaultChromium = process.env.CAROM_CHROMIUM || "/usr/bin/chromium";

/// The robustness tests' command line: the options every one takes (site,
/// server, scenario-dir, proto, chromium) plus `extra`; prints the usage and
/// exits 2 when one is missing, and exits 77 (ctest's SKIP) without chromium.
export function testArgs(name, extra) {
  const {values: args} = parseArgs({
    options: {
      site: {type: "string"},
      server: {type: "string"},
      "scenario-dir": {type: "string"},
      proto: {type: "string"},
      chromium: {type: "string", default: kDefaultChromium},
      ...extra,
    },
  });
  if (!args.site || !args.server || !args["scenario-dir"] || !args.proto) {
    console.error(`usage: node test/${name} --site DIR --server CAROM_SERVER --scenario-dir DIR --proto DIR`);
    process.exit(2);
  }
  if (!fs.existsSync(args.chromium)) {
    console.log(`SKIPPED: no chromium at ${args.chromium} (scripts/deps installs it)`);
    process.exit(77);
  }
  return args;
}

/// The failures so far, and check(ok, what), which prints a line and keeps
/// `what` when it failed.
export function checker() {
  const failures = [];
  const check = (ok, what) => {
    console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
    if (!ok) failures.push(what);
  };
  return {failures, check};
}

/// Sleeps `ms` milliseconds.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// carom-server (`binary`) with `args` plus --port 0 --http-port 0 and their
/// port files; resolves once both ports are bound: {child, port, httpPort,
/// url (the page), stop()}. Its log goes to this process's stderr.
export async function startServer(binary, args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "carom-web-"));
  const portFile = path.join(dir, "port");
  const httpPortFile = path.join(dir, "http-port");
  const child = spawn(binary, ["--port", "0", "--port-file", portFile, "--http-port", "0", "--http-port-file",
                               httpPortFile, ...args],
                      {stdio: ["ignore", "inherit", "inherit"]});
  let exited = null;
  child.on("exit", (code, signal) => (exited = signal ?? code));
  for (let i = 0; i < 200 && exited === null && !(fs.existsSync(portFile) && fs.existsSync(httpPortFile)); ++i) {
    await sleep(50);
  }
  if (exited !== null || !fs.existsSync(httpPortFile)) {
    child.kill("SIGKILL");
    fs.rmSync(dir, {recursive: true, force: true});
    throw new Error(`carom-server did not start (${exited === null ? "no ports after 10 s" : `exit ${exited}`})`);
  }
  const port = Number(fs.readFileSync(portFile, "utf8"));
  const httpPort = Number(fs.readFileSync(httpPortFile, "utf8"));
  return {
    child,
    port,
    httpPort,
    url: `http://127.0.0.1:${httpPort}/`,
    running: () => exited === null,
    async stop() {
      if (exited === null) {
        child.kill("SIGTERM");
        for (let i = 0; i < 100 && exited === null; ++i) await sleep(50);
        if (exited === null) child.kill("SIGKILL");
      }
      fs.rmSync(dir, {recursive: true, force: true});
    },
  };
}

/// Headless chromium through puppeteer-core, in its own process group
/// (puppeteer starts it detached), software GL as the page tests use.
export async function launchBrowser(chromium = kDefaultChromium) {
  const puppeteer = (await import("puppeteer-core")).default;
  return puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
  });
}

/// A page of `browser` at `url`, 1280 x 800, its console errors and
/// uncaught exceptions pushed onto `errors`.
export async function openPage(browser, url, errors) {
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 800});
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console error: ${m.text()}`);
  });
  await page.goto(url, {waitUntil: "load"});
  return page;
}

/// The tick the page's HUD shows (it refreshes about once a second); -1
/// before the first frame.
export async function hudTick(page) {
  const text = await page.$eval("#hud", (e) => e.textContent);
  const m = /tick\s+(\d+)/.exec(text);
  return m ? Number(m[1]) : -1;
}

/// Descriptors process `pid` has open.
export function openFds(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/// `pid` and every process below it: [{pid, pgid, state}] ("T": stopped).
export function processTree(pid) {
  const all = new Map();  // pid -> {ppid, pgid, state}
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;  // gone meanwhile
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    all.set(Number(name), {state: f[0], ppid: Number(f[1]), pgid: Number(f[2])});
  }
  const tree = [];
  const visit = (p) => {
    const s = all.get(p);
    if (!s) return;
    tree.push({pid: p, pgid: s.pgid, state: s.state});
    for (const [child, c] of all) {
      if (c.ppid === p) visit(child);
    }
  };
  visit(pid);
  return tree;
}

let protocol = null;
/// The protocol's types, read from proto/ (protobufjs, as the page's build does).
export function loadProtocol(protoRoot) {
  protocol ??= makeProtocol(loadDescriptor(protoRoot));
  return protocol;
}

/// A client of carom-server's TCP port: delimited framing (varint32 length,
/// then the message), one ServerMessage after another from next().
export class TcpClient {
  constructor(protocolTypes) {
    this.p = protocolTypes;
    this.socket = null;
    this.buffer = Buffer.alloc(0);
    this.queue = [];
    this.waiters = [];
    this.closed = null;
    this.nextRequest = 1;
  }

  /// Connects to 127.0.0.1:`port` and says Hello; resolves to the Welcome.
  async connect(port, {role, token = "", name = "carom-web-test", wishes}) {
    this.socket = net.connect({host: "127.0.0.1", port});
    this.socket.setNoDelay(true);
    await new Promise((resolve, reject) => {
      this.socket.once("connect", resolve);
      this.socket.once("error", reject);
    });
    this.socket.on("data", (d) => this.feed(d));
    this.socket.on("error", (e) => this.end(e.message));
    this.socket.on("close", () => this.end("closed"));
    const roles = {viewer: this.p.roleViewer, controller: this.p.roleController};
    this.send({hello: {protocol_version: 1, role: roles[role], token, client_name: name, wishes}});
    for (;;) {
      const m = await this.next(10000);
      if (m.welcome) return m.welcome;
      if (m.error) throw new Error(`Hello refused: ${this.p.errorName(m.error.code)}: ${m.error.message}`);
    }
  }

  send(message) {
    const bytes = this.p.ClientMessage.encode(this.p.ClientMessage.fromObject(message)).finish();
    const prefix = [];
    for (let n = bytes.length; ; n >>>= 7) {
      if (n < 0x80) {
        prefix.push(n);
        break;
      }
      prefix.push((n & 0x7f) | 0x80);
    }
    this.socket.write(Buffer.concat([Buffer.from(prefix), bytes]));
  }

  feed(data) {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, data]) : data;
    for (;;) {
      let length = 0, shift = 0, i = 0;
      for (; i < this.buffer.length && i < 5; ++i) {
        length |= (this.buffer[i] & 0x7f) << shift;
        shift += 7;
        if ((this.buffer[i] & 0x80) === 0) break;
      }
      if (i >= this.buffer.length || i === 5 || this.buffer.length < i + 1 + length) return;
      const body = this.buffer.subarray(i + 1, i + 1 + length);
      this.buffer = this.buffer.subarray(i + 1 + length);
      this.deliver(this.p.ServerMessage.decode(body));
    }
  }

  deliver(m) {
    const w = this.waiters.shift();
    if (w) w.resolve(m);
    else this.queue.push(m);
  }

  end(why) {
    if (this.closed !== null) return;
    this.closed = why;
    for (const w of this.waiters.splice(0)) w.reject(new Error(`connection ${why}`));
  }

  /// The next ServerMessage (a plain object of the decoded message); rejects
  /// after `timeoutMs` or when the connection closes.
  next(timeoutMs = 5000) {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.closed !== null) return Promise.reject(new Error(`connection ${this.closed}`));
    return new Promise((resolve, reject) => {
      const waiter = {resolve: (m) => (clearTimeout(timer), resolve(m)), reject: (e) => (clearTimeout(timer), reject(e))};
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no message for ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /// Sends `command` (e.g. {get_stats: {}}) and resolves to its
  /// CommandResult, skipping whatever else arrives meanwhile.
  async call(command, timeoutMs = 10000) {
    const id = this.nextRequest++;
    this.send({command: {request_id: id, ...command}});
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = await this.next(Math.max(1, deadline - Date.now()));
      if (m.result && Number(m.result.request_id) === id) return m.result;
    }
  }

  close() {
    if (this.socket) this.socket.destroy();
    this.end("closed by us");
  }
}
