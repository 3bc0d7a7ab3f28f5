// Test support for the browser tests: serves the bundled page over HTTP and,
// until carom-server speaks WebSocket itself, bridges /ws to its TCP port:
// each binary WebSocket message becomes one delimited frame (varint32
// length, then the bytes) and each delimited frame from the server one
// binary message, which is exactly how the protocol maps onto WebSocket.
// A minimal RFC 6455 server: enough for one browser on loopback.

import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";

const kTypes = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"};

/// Serves `site` on 127.0.0.1 (any free port); with `tcpPort`, /ws is
/// bridged to carom-server there. Resolves to {url, close()}.
export async function serve(site, tcpPort = 0) {
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url, "http://x").pathname;
    const name = pathname === "/" ? "index.html" : path.basename(pathname);
    const file = path.join(site, name);
    if (!kTypes[path.extname(name)] || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {"content-type": kTypes[path.extname(name)]}).end(fs.readFileSync(file));
  });
  const sockets = new Set();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("upgrade", (req, socket) => {
    sockets.add(socket);
    if (!tcpPort || new URL(req.url, "http://x").pathname !== "/ws") {
      socket.end("HTTP/1.1 404 Not Found\r\n\r\n");
      return;
    }
    const accept = crypto.createHash("sha1")
                       .update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                       .digest("base64");
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
                 `Sec-WebSocket-Accept: ${accept}\r\n\r\n`);
    bridge(socket, net.connect(tcpPort, "127.0.0.1"), sockets);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

function wsFrame(opcode, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n])
             : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 0xff])
                         : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigEndian64(n)]);
  return Buffer.concat([head, payload]);
}

function bigEndian64(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

function varint(n) {
  const out = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

function bridge(ws, tcp, sockets) {
  sockets.add(tcp);
  let fromBrowser = Buffer.alloc(0);
  let message = [];  // fragments of the message being received
  let fromServer = Buffer.alloc(0);
  const end = () => {
    ws.destroy();
    tcp.destroy();
  };
  ws.on("data", (chunk) => {
    fromBrowser = Buffer.concat([fromBrowser, chunk]);
    for (;;) {
      const b = fromBrowser;
      if (b.length < 2) return;
      const fin = (b[0] & 0x80) !== 0;
      const opcode = b[0] & 0x0f;
      let n = b[1] & 0x7f;
      let at = 2;
      if (n === 126) {
        if (b.length < 4) return;
        n = b.readUInt16BE(2);
        at = 4;
      } else if (n === 127) {
        if (b.length < 10) return;
        n = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      const masked = (b[1] & 0x80) !== 0;
      if (b.length < at + (masked ? 4 : 0) + n) return;
      const mask = masked ? b.subarray(at, at + 4) : null;
      at += masked ? 4 : 0;
      const payload = Buffer.from(b.subarray(at, at + n));
      if (mask) for (let i = 0; i < n; ++i) payload[i] ^= mask[i & 3];
      fromBrowser = b.subarray(at + n);
      if (opcode === 8) {
        ws.end(wsFrame(8, Buffer.alloc(0)));
        tcp.end();
        return;
      }
      if (opcode === 9) {
        ws.write(wsFrame(10, payload));
        continue;
      }
      if (opcode === 10) continue;
      message.push(payload);
      if (!fin) continue;
      const whole = Buffer.concat(message);
      message = [];
      tcp.write(Buffer.concat([varint(whole.length), whole]));
    }
  });
  tcp.on("data", (chunk) => {
    fromServer = Buffer.concat([fromServer, chunk]);
    for (;;) {
      let n = 0;
      let at = 0;
      let scale = 1;
      for (;;) {
        if (at >= fromServer.length) return;
        const byte = fromServer[at++];
        n += (byte & 0x7f) * scale;
        scale *= 128;
        if ((byte & 0x80) === 0) break;
      }
      if (fromServer.length < at + n) return;
      ws.write(wsFrame(2, fromServer.subarray(at, at + n)));
      fromServer = fromServer.subarray(at + n);
    }
  });
  tcp.on("close", () => {
    if (!ws.destroyed) ws.end(wsFrame(8, Buffer.from([0x03, 0xe8])));
  });
  ws.on("close", end);
  ws.on("error", end);
  tcp.on("error", end);
}
