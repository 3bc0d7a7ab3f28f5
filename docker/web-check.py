#!/usr/bin/env python3
"""The browser viewer as docker/smoke-test sees it from the host: the page is
served at / (and is the host build's page, byte for byte), and the WebSocket
at /ws, opened with the Origin a browser on that page sends, carries the
protocol: Hello as a viewer gets a Welcome and a snapshot. A page from another
origin is refused. Prints one line: TICK BODIES (of the snapshot).
Needs PYTHONPATH with build/<preset>/proto/python and client/python.

    web-check.py --server HOST:PORT --site DIR
"""

import argparse
import base64
import hashlib
import os
import socket
import struct
import sys
import urllib.error
import urllib.request

from carom_client import PROTOCOL_VERSION, pb

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, 1.3


def fail(message):
    print("web-check: %s" % message, file=sys.stderr)
    sys.exit(1)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


class WebSocket:
    """A client of RFC 6455 with what this check needs: binary messages,
    masked as a client must, fragments joined, close answered."""

    def __init__(self, host, port, origin, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = ("GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nOrigin: %s\r\n\r\n" % (host, port, key, origin))
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        expected = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.accepted = self.status == 101 and headers.get("sec-websocket-accept") == expected

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, message):
        self._frame(0x2, message.SerializeToString())

    def receive(self):
        """The next whole binary message as a ServerMessage; None on close."""
        data = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            payload = self._read(n)  # a server never masks
            opcode = b0 & 0x0F
            if opcode == 0x8:
                self._frame(0x8, payload[:2])
                return None
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode in (0x0, 0x2):
                data += payload
                if b0 & 0x80:
                    return pb.ServerMessage.FromString(data)

    def close(self):
        self.sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT of the HTTP port")
    parser.add_argument("--site", required=True, help="the host build's page (build/<preset>/web)")
    args = parser.parse_args()
    host, port = args.server.rsplit(":", 1)
    port = int(port)
    base = "http://%s:%d" % (host, port)

    status, kind, body = get(base + "/")
    if status != 200 or "text/html" not in kind or b'<canvas id="world"' not in body:
        fail("GET / gave %d %s, %d bytes, not the page" % (status, kind, len(body)))
    for name in ("index.html", "app.js", "style.css"):
        status, kind, body = get("%s/%s" % (base, name))
        with open(os.path.join(args.site, name), "rb") as f:
            built = f.read()
        if status != 200 or body != built:
            fail("GET /%s gave %d, %d bytes, not the host build's %d bytes" % (name, status, len(body), len(built)))
    print("web-check: / serves the page (index.html, app.js, style.css as the host built them)", file=sys.stderr)

    foreign = WebSocket(host, port, "http://elsewhere.example")
    foreign.close()
    if foreign.accepted or foreign.status != 403:
        fail("a WebSocket from the Origin http://elsewhere.example was answered %d, not 403" % foreign.status)

    ws = WebSocket(host, port, base)
    if not ws.accepted:
        fail("the WebSocket handshake on /ws was answered %d" % ws.status)
    hello = pb.ClientMessage()
    hello.hello.protocol_version = PROTOCOL_VERSION
    hello.hello.role = pb.ROLE_VIEWER
    hello.hello.client_name = "web-check.py"
    ws.send(hello)
    welcome = ws.receive()
    if welcome is None or welcome.WhichOneof("kind") != "welcome":
        fail("Hello on /ws: no Welcome (%s)" % welcome)
    while True:
        m = ws.receive()
        if m is None:
            fail("/ws closed before a snapshot")
        kind = m.WhichOneof("kind")
        if kind == "snapshot":
            break
        if kind in ("error", "goodbye"):
            fail("/ws: %s" % m)
    ws.close()
    print("web-check: /ws (Origin %s): Welcome, session %d, then a snapshot" % (base, welcome.welcome.session_id),
          file=sys.stderr)
    print("%d %d" % (m.snapshot.tick, len(m.snapshot.id)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
