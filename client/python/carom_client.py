#!/usr/bin/env python3
"""A small Python client for carom-server (protocol carom.v1).

Every message travels in protobuf's delimited framing: a varint32 length,
then the serialized message. The protocol classes are generated at build
time from proto/carom/v1/*.proto (CMake target carom_proto_python, into
build/<preset>/proto/python); put that directory on PYTHONPATH.

As a module:

    from carom_client import connect
    from carom.v1 import protocol_pb2 as pb

    with connect("127.0.0.1:7878", pb.ROLE_CONTROLLER) as conn:
        command = pb.Command()
        command.spawn.bodies.add(position={"x": 5, "y": 5}, radius=0.5)
        result = conn.call(command)          # a CommandResult
        print(result.code, list(result.spawned.ids))
        # On error, result.field is the path of the field at fault
        # ("spawn.bodies[0].radius"), result.message a sentence starting with it.

The generated modules are also reachable as carom_client.pb (protocol_pb2)
and carom_client.world (world_pb2).

Snapshots with bodies are asked for with body tables (wishes.body_tables):
the ids and radii travel in a BodyTable message only when they change, and
receive() fills them back into each snapshot, so every snapshot has id, x, y
and radius alike. Pass body_tables=False to get them in every snapshot.

As a program (the demo):

    python3 carom_client.py --server HOST:PORT [--token T] [--snapshots N] [--spawn K] [--no-body-tables]

connects as a viewer and prints N snapshots (tick, bodies, state hash), then
connects as a controller, spawns K bodies with a random-box generator,
checks that the result is OK and waits until a snapshot shows every one of
them. It exits 0 when all of that worked, 1 otherwise.
"""

import argparse
import os
import random
import select
import socket
import sys
import time

try:
    from carom.v1 import protocol_pb2 as pb
    from carom.v1 import world_pb2 as world
except ImportError as error:  # pragma: no cover - a setup problem, said plainly
    sys.stderr.write(
        "carom_client: cannot import the generated protocol code (%s).\n"
        "Build the carom_proto_python target and put build/<preset>/proto/python on PYTHONPATH.\n" % error
    )
    raise

PROTOCOL_VERSION = 1
DEFAULT_PORT = 7878
# Largest server-to-client frame accepted (the C++ client's limit).
MAX_SERVER_FRAME = 1 << 30


class CaromError(Exception):
    """Anything that went wrong talking to the server."""


class ServerRefused(CaromError):
    """The server answered with an Error message: code, message, and field
    (the path at fault in what was sent, "hello.role"; "" when none)."""

    def __init__(self, error):
        super().__init__("%s: %s" % (pb.ErrorCode.Name(error.code), error.message))
        self.code = error.code
        self.message = error.message
        self.field = error.field


# --- framing -------------------------------------------------------------------


def encode_varint32(value):
    """The varint encoding of a non-negative value below 2**32."""
    if not 0 <= value < 1 << 32:
        raise ValueError("varint32 out of range: %d" % value)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint32(data, pos=0):
    """(value, bytes used) of the varint at data[pos:], or (None, 0) when more
    bytes are needed. Raises CaromError when it is not a valid varint32."""
    value = 0
    for i in range(5):
        if pos + i >= len(data):
            return None, 0
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if value >= 1 << 32:
                raise CaromError("bad frame prefix: over 32 bits")
            return value, i + 1
    raise CaromError("bad frame prefix: more than 5 bytes")


def encode_frame(message):
    """One message in delimited framing."""
    data = message.SerializeToString()
    return encode_varint32(len(data)) + data


class FrameReader:
    """Reassembles frames from a byte stream, whatever the chunking. The
    length limit is checked before the frame is waited for."""

    def __init__(self, max_frame=MAX_SERVER_FRAME):
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data):
        self._buffer += data

    def next_frame(self):
        """The next complete frame's bytes, or None."""
        length, used = decode_varint32(self._buffer)
        if length is None:
            return None
        if length > self.max_frame:
            raise CaromError("frame of %d bytes is over the limit of %d" % (length, self.max_frame))
        if len(self._buffer) < used + length:
            return None
        frame = bytes(self._buffer[used:used + length])
        del self._buffer[:used + length]
        return frame


# --- connection ----------------------------------------------------------------


def parse_address(text):
    """"host:port", "[v6]:port" or "host" -> (host, port)."""
    host, port = text, None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError("address %r: missing ']'" % text)
        host = text[1:close]
        rest = text[close + 1:]
        if rest:
            if not rest.startswith(":"):
                raise ValueError("address %r: expected ':' after ']'" % text)
            port = rest[1:]
    elif ":" in text:
        host, port = text.rsplit(":", 1)
    if port is None:
        return host or "127.0.0.1", DEFAULT_PORT
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("address %r: port must be 1..65535" % text)
    return host or "127.0.0.1", int(port)


class Connection:
    """A blocking connection to carom-server. One thread at a time."""

    def __init__(self, sock, body_tables=True):
        self._sock = sock
        self._reader = FrameReader()
        self._next_request = 1
        self._body_tables = body_tables
        self._table = None  # the latest BodyTable
        self.welcome = None
        self.bytes_received = 0

    @classmethod
    def open(cls, host, port, timeout=5.0, body_tables=True):
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise CaromError("cannot connect to %s:%d: %s" % (host, port, error)) from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        return cls(sock, body_tables=body_tables)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def send(self, client_message):
        """Sends one ClientMessage."""
        if self._sock is None:
            raise CaromError("not connected")
        try:
            self._sock.sendall(encode_frame(client_message))
        except OSError as error:
            self.close()
            raise CaromError("send failed: %s" % error) from error

    def receive(self, timeout=5.0):
        """The next ServerMessage; raises CaromError on timeout or a closed
        connection. BodyTable messages are kept, not returned: a snapshot
        that refers to one comes back with its id and radius filled in."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self._reader.next_frame()
            if frame is not None:
                message = pb.ServerMessage()
                try:
                    message.ParseFromString(frame)
                except Exception as error:  # DecodeError; the stream is unusable after it
                    self.close()
                    raise CaromError("unreadable message from the server") from error
                kind = message.WhichOneof("kind")
                if kind == "body_table":
                    self._table = message.body_table
                    continue
                if kind == "snapshot" and message.snapshot.body_table != 0:
                    snapshot = message.snapshot
                    table = self._table
                    if table is None or table.epoch != snapshot.body_table or len(table.id) != len(snapshot.x):
                        self.close()
                        raise CaromError("snapshot of tick %d refers to body table %d, which this connection "
                                         "does not have" % (snapshot.tick, snapshot.body_table))
                    snapshot.id.extend(table.id)
                    snapshot.radius.extend(table.radius)
                return message
            if self._sock is None:
                raise CaromError("not connected")
            left = deadline - time.monotonic()
            if left <= 0:
                raise CaromError("timed out waiting for the server")
            ready, _, _ = select.select([self._sock], [], [], left)
            if not ready:
                raise CaromError("timed out waiting for the server")
            try:
                data = self._sock.recv(1 << 16)
            except OSError as error:
                self.close()
                raise CaromError("receive failed: %s" % error) from error
            if not data:
                self.close()
                raise CaromError("the server closed the connection")
            self.bytes_received += len(data)
            self._reader.feed(data)

    def hello(self, role, token="", client_name="carom_client.py", wishes=None, timeout=5.0):
        """Sends Hello and returns the Welcome (raises ServerRefused when the
        server answers with an Error)."""
        message = pb.ClientMessage()
        message.hello.protocol_version = PROTOCOL_VERSION
        message.hello.role = role
        message.hello.token = token
        message.hello.client_name = client_name
        if wishes is not None:
            message.hello.wishes.CopyFrom(wishes)
        snapshots = role == pb.ROLE_VIEWER or wishes is not None
        if self._body_tables and snapshots and not message.hello.wishes.omit_bodies:
            message.hello.wishes.body_tables = True
        self.send(message)
        reply = self.receive(timeout)
        kind = reply.WhichOneof("kind")
        if kind == "error":
            self.close()
            raise ServerRefused(reply.error)
        if kind != "welcome":
            self.close()
            raise CaromError("the server did not answer with a Welcome (got %s)" % kind)
        self.welcome = reply.welcome
        return self.welcome

    def call(self, command, timeout=30.0):
        """Sends a Command (with a fresh request id unless one is set) and
        returns its CommandResult, skipping other messages meanwhile. Check
        result.code: OK (0) or why not."""
        if command.request_id == 0:
            command.request_id = self._next_request
            self._next_request += 1
        message = pb.ClientMessage()
        message.command.CopyFrom(command)
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CaromError("timed out waiting for the result of request %d" % command.request_id)
            reply = self.receive(left)
            kind = reply.WhichOneof("kind")
            if kind == "result" and reply.result.request_id == command.request_id:
                return reply.result
            if kind == "error":
                self.close()
                raise ServerRefused(reply.error)
            if kind == "goodbye":
                self.close()
                raise CaromError("the server said goodbye: %s" % reply.goodbye.reason)

    def snapshots(self, timeout=5.0):
        """Yields snapshots as they arrive; raises CaromError when none comes
        within `timeout` seconds (heartbeats of a paused server do not count)."""
        while True:
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CaromError("no snapshot for %.1f s" % timeout)
                message = self.receive(left)
                kind = message.WhichOneof("kind")
                if kind == "snapshot":
                    yield message.snapshot
                    break
                if kind == "goodbye":
                    raise CaromError("the server said goodbye: %s" % message.goodbye.reason)
                if kind == "error":
                    raise ServerRefused(message.error)


def connect(address, role, token="", client_name="carom_client.py", wishes=None, timeout=5.0, body_tables=True):
    """Opens a connection to "host:port" and says Hello; the Welcome is in
    .welcome."""
    host, port = parse_address(address)
    connection = Connection.open(host, port, timeout, body_tables=body_tables)
    try:
        connection.hello(role, token=token, client_name=client_name, wishes=wishes, timeout=timeout)
    except Exception:
        connection.close()
        raise
    return connection


# --- demo ----------------------------------------------------------------------


def spawn_box(params):
    """Where the demo spawns: the middle 80% of the walled box (or a 100 m
    square around the origin when unbounded)."""
    bounds = params.bounds
    if bounds.walled:
        width = bounds.max.x - bounds.min.x
        height = bounds.max.y - bounds.min.y
        return (bounds.min.x + 0.1 * width, bounds.min.y + 0.1 * height,
                bounds.max.x - 0.1 * width, bounds.max.y - 0.1 * height)
    return (-50.0, -50.0, 50.0, 50.0)


def run_demo(args):
    # 1. A viewer: print N snapshots.
    with connect(args.server, pb.ROLE_VIEWER, client_name="carom_client.py viewer", timeout=args.timeout,
                 body_tables=args.body_tables) as viewer:
        welcome = viewer.welcome
        print("viewer: connected to %s (server %s, protocol %d, session %d, tick %d%s)"
              % (args.server, welcome.server_version, welcome.protocol_version, welcome.session_id,
                 welcome.tick, ", paused" if welcome.paused else ""))
        shown = 0
        if args.snapshots > 0:
            for snapshot in viewer.snapshots(timeout=args.timeout):
                print("snapshot tick %d bodies %d hash %016x" % (snapshot.tick, len(snapshot.id), snapshot.state_hash))
                shown += 1
                if shown >= args.snapshots:
                    break

    if args.spawn <= 0:
        return 0

    # 2. A controller that also asks for snapshots (with bodies), to see its spawn.
    wishes = pb.SnapshotWishes()
    with connect(args.server, pb.ROLE_CONTROLLER, token=args.token, client_name="carom_client.py controller",
                 wishes=wishes, timeout=args.timeout, body_tables=args.body_tables) as controller:
        if not controller.welcome.control:
            raise CaromError("the server did not grant control (token?)")
        x0, y0, x1, y1 = spawn_box(controller.welcome.params)
        command = pb.Command()
        box = command.spawn.generators.add().random_box
        box.min.x, box.min.y, box.max.x, box.max.y = x0, y0, x1, y1
        box.count = args.spawn
        box.radius.min, box.radius.max = args.radius, args.radius
        box.speed.min, box.speed.max = 0.0, 1.0
        box.seed = args.seed if args.seed is not None else random.randrange(1, 1 << 63)
        result = controller.call(command, timeout=args.timeout)
        if result.code != pb.OK:
            raise CaromError("spawn: %s: %s" % (pb.ErrorCode.Name(result.code), result.message))
        ids = list(result.spawned.ids)
        if len(ids) != args.spawn:
            raise CaromError("spawn: asked for %d bodies, got %d ids" % (args.spawn, len(ids)))
        print("controller: spawned %d bodies (ids %d..%d), effective at tick %d"
              % (len(ids), min(ids), max(ids), result.tick))

        wanted = set(ids)
        deadline = time.monotonic() + args.timeout
        for snapshot in controller.snapshots(timeout=args.timeout):
            if snapshot.tick >= result.tick and wanted.issubset(snapshot.id):
                print("snapshot tick %d bodies %d hash %016x shows all %d spawned bodies"
                      % (snapshot.tick, len(snapshot.id), snapshot.state_hash, len(ids)))
                return 0
            if time.monotonic() > deadline:
                break
        raise CaromError("no snapshot showed the spawned bodies within %.1f s" % args.timeout)


def main(argv=None):
    parser = argparse.ArgumentParser(description="carom Python client demo")
    parser.add_argument("--server", default=os.environ.get("CAROM_SERVER", "127.0.0.1:%d" % DEFAULT_PORT),
                        help="HOST:PORT (default $CAROM_SERVER or 127.0.0.1:7878)")
    parser.add_argument("--token", default=os.environ.get("CAROM_TOKEN", ""),
                        help="controller token (default $CAROM_TOKEN)")
    parser.add_argument("--snapshots", type=int, default=5, help="snapshots to print as a viewer")
    parser.add_argument("--spawn", type=int, default=10, help="bodies to spawn as a controller (0 = none)")
    parser.add_argument("--radius", type=float, default=0.25, help="radius of the spawned bodies, m")
    parser.add_argument("--seed", type=int, default=None, help="generator seed (default: random)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each step")
    parser.add_argument("--no-body-tables", dest="body_tables", action="store_false",
                        help="ids and radii in every snapshot instead of in body tables")
    args = parser.parse_args(argv)
    try:
        return run_demo(args)
    except (CaromError, ValueError) as error:
        print("carom_client: %s" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
