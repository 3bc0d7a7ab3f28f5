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
        for scenario in conn.list_scenarios():   # what load_scenario.name takes
            print(scenario.name, scenario.bodies, scenario.description)

The generated modules are also reachable as carom_client.pb (protocol_pb2)
and carom_client.world (world_pb2).

Snapshots with bodies are asked for with body tables (wishes.body_tables):
the ids and radii travel in a BodyTable message only when they change, and
receive() fills them back into each snapshot, so every snapshot has id, x, y
and radius alike. Pass body_tables=False to get them in every snapshot.

With body tables the client also asks for the compact stream
(wishes.compact, docs/protocol.md "The compact stream"): positions (and
velocities) quantized and delta-coded against the previous snapshot, about a
quarter of the bytes for a moving world and almost nothing for one at rest.
receive() decodes it into x, y (vx, vy) as Q x quantum, exactly the server's
quantization of its own state; the integers themselves are in
connection.positions and connection.velocities (Track) after each compact
snapshot. Events (wishes.events) come compact too (wishes.compact_events)
and are decoded into snapshot.events: a, b and tick exact, the point as Q x
quantum, the impulse to bfloat16 precision. Pass compact=False for the plain
floats and events. Bad compact data (or a
delta against a snapshot this connection did not get) raises CompactError
and closes the connection. connection.last_snapshot_bytes is what the last
snapshot cost on the wire (with the body table sent before it).

As a program (the demo):

    python3 carom_client.py --server HOST:PORT [--token T] [--snapshots N] [--spawn K] [--no-body-tables] [--no-compact]

connects as a viewer and prints N snapshots (tick, bodies, state hash, bytes
a body on the wire), then
connects as a controller, spawns K bodies with a random-box generator,
checks that the result is OK and waits until a snapshot shows every one of
them. It exits 0 when all of that worked, 1 otherwise.
"""

import argparse
import os
import random
import select
import socket
import struct
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


class CommandFailed(CaromError):
    """A command's CommandResult was not OK (raised by the helpers that
    return a payload, such as list_scenarios): code, message, field, and the
    whole result."""

    def __init__(self, result):
        super().__init__("%s: %s" % (pb.ErrorCode.Name(result.code), result.message))
        self.code = result.code
        self.message = result.message
        self.field = result.field
        self.result = result


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
        self.last_frame_size = 0  # the last frame's bytes on the wire, prefix included

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
        self.last_frame_size = used + length
        return frame


# --- the compact stream --------------------------------------------------------
#
# The decoder of docs/protocol.md "The compact stream", the same arithmetic as
# the C++ reference (proto/src/compact.cpp) on Python ints: 64-bit wrapping
# where C++ wraps, so even hostile bytes decode to the same values or the same
# refusal.

MAX_QUANTIZED = 1 << 52
_WRAP = 1 << 63
_MASK = (1 << 64) - 1


class CompactError(CaromError):
    """Compact data that cannot be decoded: truncated or corrupt bytes, or a
    delta against a snapshot this connection does not have."""


def quantize(value, quantum):
    """round(value / quantum) to nearest, ties to even (Python's round on a
    float), clamped to +-2**52; NaN gives 0. What the server sends for value."""
    q = value / quantum
    if q != q:
        return 0
    if q >= MAX_QUANTIZED:
        return MAX_QUANTIZED
    if q <= -MAX_QUANTIZED:
        return -MAX_QUANTIZED
    return round(q)


def _int64(v):
    """v wrapped to a signed 64-bit integer, as C++'s wrapping add and sub."""
    return ((v + _WRAP) & _MASK) - _WRAP


class Track:
    """One channel's state at one end, in body-table order: quantized values
    x, y and, for positions, each body's last change dx, dy (lists of ints)."""

    __slots__ = ("id", "x", "y", "dx", "dy")

    def __init__(self, ids=(), x=(), y=(), dx=(), dy=()):
        self.id, self.x, self.y, self.dx, self.dy = list(ids), list(x), list(y), list(dx), list(dy)


def _residuals(data, count):
    """The `count` residuals the token stream `data` codes, as a list of ints.
    Raises CompactError when it ends early, codes more, or a token is over 64
    bits."""
    out = []
    append = out.append
    pos, end = 0, len(data)
    while len(out) < count:
        token, shift = 0, 0
        while True:
            if pos == end:
                raise CompactError("truncated: the stream ends inside the residuals")
            byte = data[pos]
            pos += 1
            if shift == 63 and byte > 1:
                raise CompactError("a token is longer than 64 bits")
            token |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 63:
                raise CompactError("a token is longer than 64 bits")
        if token & 1:
            u = (token - 1) // 2 + 1
            append(-(u >> 1) - 1 if u & 1 else u >> 1)
        else:
            zeros = token // 2 + 1
            if zeros > count - len(out):
                raise CompactError("a run of zeros goes past the last body")
            out.extend([0] * zeros)
    if pos != end:
        raise CompactError("bytes left over after the last body")
    return out


def decode_track(position, baseline, ids, data):
    """Decodes one channel's bytes (positions when `position`, else
    velocities) for the bodies `ids` (sorted, the body table's order) against
    `baseline` (the Track after the previous snapshot; None: a key frame).
    Returns the new Track; raises CompactError on bad bytes."""
    n = len(ids)
    key = baseline is None
    r = _residuals(bytes(data), 4 * n if key and position else 2 * n)
    x, y = [0] * n, [0] * n
    dx, dy = ([0] * n, [0] * n) if position else ([], [])
    index = {} if key else {body: k for k, body in enumerate(baseline.id)}
    last_x = last_y = 0
    at = 0
    previous_id = -1
    for i in range(n):
        body = ids[i]
        if body <= previous_id:
            raise CompactError("the body table's ids are not increasing")
        previous_id = body
        rx, ry = r[at], r[at + 1]
        at += 2
        k = index.get(body)
        if k is not None:
            bx, by = baseline.x[k], baseline.y[k]
            if position:
                qx = _int64(_int64(bx + baseline.dx[k]) + rx)
                qy = _int64(_int64(by + baseline.dy[k]) + ry)
                dx[i] = _int64(qx - bx)
                dy[i] = _int64(qy - by)
            else:
                qx = _int64(bx + rx)
                qy = _int64(by + ry)
        else:
            qx = _int64(last_x + rx)
            qy = _int64(last_y + ry)
            if position and key:
                dx[i], dy[i] = r[at], r[at + 1]
                at += 2
        if not (-MAX_QUANTIZED <= qx <= MAX_QUANTIZED and -MAX_QUANTIZED <= qy <= MAX_QUANTIZED):
            raise CompactError("a decoded value is beyond +-2^52 quanta (corrupt residuals)")
        x[i], y[i] = qx, qy
        last_x, last_y = qx, qy
    return Track(ids, x, y, dx, dy)


def from_bfloat16(bits):
    """The value of a bfloat16 (the float32 with bits `bits << 16`)."""
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


_MAX_ID = (1 << 32) - 1


def decode_events(tokens, impulses, tick, positions):
    """Decodes a snapshot's CompactEvents (docs/protocol.md, "Compact
    events"): `tokens` and `impulses` (bytes), the snapshot's `tick`, and
    `positions`, the Track its compact bodies decoded to (None: no bodies).
    Returns a list of (tick, a, b, x, y, ix, iy): the point in quanta, the
    impulse as bfloat16 bits. Raises CompactError on bad bytes, exactly when
    the C++ decoder (carom::proto::decode_events) refuses them."""
    impulses = bytes(impulses)
    if len(impulses) % 4:
        raise CompactError("impulses is not 4 bytes an event")
    n = len(impulses) // 4
    r = _residuals(bytes(tokens), 5 * n)
    index = {} if positions is None else {body: k for k, body in enumerate(positions.id)}
    out = []
    last_age = last_a = last_x = last_y = 0
    for i in range(n):
        r_age, r_a, r_b, rx, ry = r[5 * i:5 * i + 5]
        age = _int64(last_age + r_age)
        a = _int64(last_a + r_a)
        b = _int64(a + r_b)
        if age < 0 or age > tick:
            raise CompactError("an event's tick is after the snapshot's or before tick 0")
        if not (0 <= a <= _MAX_ID and 0 <= b <= _MAX_ID):
            raise CompactError("an event's body id is outside [0, 2^32)")
        ka, kb = index.get(a), index.get(b)
        if ka is None or kb is None:
            px, py = last_x, last_y
        else:  # the midpoint in quanta, rounded down (an arithmetic shift)
            px = (positions.x[ka] + positions.x[kb]) >> 1
            py = (positions.y[ka] + positions.y[kb]) >> 1
        x, y = _int64(px + rx), _int64(py + ry)
        if not (-MAX_QUANTIZED <= x <= MAX_QUANTIZED and -MAX_QUANTIZED <= y <= MAX_QUANTIZED):
            raise CompactError("an event's point is beyond +-2^52 quanta (corrupt residuals)")
        ix = impulses[4 * i] | impulses[4 * i + 1] << 8
        iy = impulses[4 * i + 2] | impulses[4 * i + 3] << 8
        out.append((tick - age, a, b, x, y, ix, iy))
        last_age, last_a, last_x, last_y = age, a, x, y
    return out


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

    def __init__(self, sock, body_tables=True, compact=True):
        self._sock = sock
        self._reader = FrameReader()
        self._next_request = 1
        self._body_tables = body_tables
        self._compact = compact
        self._table = None  # the latest BodyTable
        # The compact stream's state: the last compact snapshot's tick (None:
        # none yet) and its decoded quantized values, what the next predicts from.
        self._compact_tick = None
        self.positions = None
        self.velocities = None
        self._frames_bytes = 0  # frames since the last snapshot returned
        self.last_snapshot_bytes = 0
        self.welcome = None
        self.bytes_received = 0

    @classmethod
    def open(cls, host, port, timeout=5.0, body_tables=True, compact=True):
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise CaromError("cannot connect to %s:%d: %s" % (host, port, error)) from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        return cls(sock, body_tables=body_tables, compact=compact)

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
        that refers to one comes back with its id and radius filled in, and a
        compact one with x, y (vx, vy) decoded (CompactError when it cannot
        be; the connection is then closed)."""
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
                self._frames_bytes += self._reader.last_frame_size
                kind = message.WhichOneof("kind")
                if kind == "body_table":
                    self._table = message.body_table
                    continue
                if kind == "snapshot":
                    self.last_snapshot_bytes = self._frames_bytes
                    self._frames_bytes = 0
                if kind == "snapshot" and message.snapshot.body_table != 0:
                    snapshot = message.snapshot
                    table = self._table
                    if (snapshot.HasField("compact") and table is not None
                            and snapshot.body_table == table.epoch):
                        try:
                            self._decode_compact(snapshot, table)
                        except CompactError as error:
                            self.close()
                            raise CompactError("compact snapshot of tick %d: %s" % (snapshot.tick, error)) from None
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

    def _decode_compact(self, snapshot, table):
        """Fills snapshot's x, y (vx, vy) from snapshot.compact against the
        state after the last compact snapshot, and keeps the new state."""
        c = snapshot.compact
        if not (0.0 < c.position_quantum < float("inf")):
            raise CompactError("position_quantum %r is not > 0" % c.position_quantum)
        key = not c.HasField("baseline_tick")
        if not key and c.baseline_tick != self._compact_tick:
            raise CompactError("it is coded against tick %d, but the last compact snapshot here was %s"
                               % (c.baseline_tick, "none" if self._compact_tick is None
                                  else "tick %d" % self._compact_tick))
        ids = list(table.id)
        positions = decode_track(True, None if key else self.positions, ids, c.positions)
        # velocity_quantum is set only when velocities are coded.
        velocities = None
        if c.velocity_quantum != 0.0:
            if not (0.0 < c.velocity_quantum < float("inf")):
                raise CompactError("velocity_quantum %r is not > 0" % c.velocity_quantum)
            velocities = decode_track(False, None if key else self.velocities, ids, c.velocities)
        self.positions = positions
        if velocities is not None:
            self.velocities = velocities
        self._compact_tick = snapshot.tick
        # As the C++ client: the double Q x quantum, stored as the float field.
        q = c.position_quantum
        snapshot.x[:] = [v * q for v in positions.x]
        snapshot.y[:] = [v * q for v in positions.y]
        if velocities is not None:
            q = c.velocity_quantum
            snapshot.vx[:] = [v * q for v in velocities.x]
            snapshot.vy[:] = [v * q for v in velocities.y]
        if snapshot.HasField("compact_events"):
            # As the C++ client: the point Q x quantum, the impulse bfloat16's value.
            q = c.position_quantum
            ce = snapshot.compact_events
            events = decode_events(ce.events, ce.impulses, snapshot.tick, positions)
            if ce.speed and len(ce.speed) != len(events):  # speeds only with wishes.event_speeds
                raise CompactError("%d speeds for %d events" % (len(ce.speed), len(events)))
            for k, (tick, a, b, x, y, ix, iy) in enumerate(events):
                e = snapshot.events.add(a=a, b=b, tick=tick, point={"x": x * q, "y": y * q},
                                        impulse={"x": from_bfloat16(ix), "y": from_bfloat16(iy)})
                if ce.speed:
                    e.speed = ce.speed[k]

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
            if self._compact:
                message.hello.wishes.compact = True
                message.hello.wishes.compact_events = True  # decoded in receive()
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

    def list_scenarios(self, timeout=30.0):
        """The scenarios the server can load by name (LoadScenario.name): a
        list of ScenarioInfo (name, description, bodies; error when the file
        does not parse), sorted by name. Viewers may ask too. Raises
        CommandFailed (NOT_FOUND) when the server has no scenario directory
        or cannot read it."""
        command = pb.Command()
        command.list_scenarios.SetInParent()
        result = self.call(command, timeout)
        if result.code != pb.OK:
            raise CommandFailed(result)
        return list(result.scenarios.scenarios)

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


def connect(address, role, token="", client_name="carom_client.py", wishes=None, timeout=5.0, body_tables=True,
            compact=True):
    """Opens a connection to "host:port" and says Hello; the Welcome is in
    .welcome. compact=False: plain snapshots (body_tables=False implies it)."""
    host, port = parse_address(address)
    connection = Connection.open(host, port, timeout, body_tables=body_tables, compact=compact)
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
                 body_tables=args.body_tables, compact=args.compact) as viewer:
        welcome = viewer.welcome
        print("viewer: connected to %s (server %s, protocol %d, session %d, tick %d%s)"
              % (args.server, welcome.server_version, welcome.protocol_version, welcome.session_id,
                 welcome.tick, ", paused" if welcome.paused else ""))
        shown = 0
        if args.snapshots > 0:
            for snapshot in viewer.snapshots(timeout=args.timeout):
                bodies = len(snapshot.id)
                print("snapshot tick %d bodies %d hash %016x %s%d bytes%s"
                      % (snapshot.tick, bodies, snapshot.state_hash,
                         "compact " if snapshot.HasField("compact") else "", viewer.last_snapshot_bytes,
                         " (%.2f a body)" % (viewer.last_snapshot_bytes / bodies) if bodies else ""))
                shown += 1
                if shown >= args.snapshots:
                    break

    if args.spawn <= 0:
        return 0

    # 2. A controller that also asks for snapshots (with bodies), to see its spawn.
    wishes = pb.SnapshotWishes()
    with connect(args.server, pb.ROLE_CONTROLLER, token=args.token, client_name="carom_client.py controller",
                 wishes=wishes, timeout=args.timeout, body_tables=args.body_tables, compact=args.compact) as controller:
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
                        help="ids and radii in every snapshot instead of in body tables (and no compact stream)")
    parser.add_argument("--no-compact", dest="compact", action="store_false",
                        help="plain float positions instead of the compact stream")
    args = parser.parse_args(argv)
    try:
        return run_demo(args)
    except (CaromError, ValueError) as error:
        print("carom_client: %s" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
