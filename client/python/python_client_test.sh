#!/usr/bin/env bash
# End-to-end test of the Python client: starts the real carom-server on a free
# loopback port, runs the carom_client.py demo against it (viewer snapshots,
# then a controller spawn that must show up in a snapshot; compact stream,
# plain, no body tables), checks that a bad spawn and a bad Hello come back
# with their field, that compact viewers decode exactly the server's
# quantization of get_world's state, and that the Python decoder makes of the
# C++ codec's frames and compact events (carom_compact_vectors) what the C++
# decoder does, corrupt and truncated ones included; stops the server.
#
# usage: python_client_test.sh CAROM_SERVER CAROM_CLIENT_PY PROTO_PY_DIR [PYTHON] [CAROM_COMPACT_VECTORS]
# Fails when no Python with the protobuf module is found (scripts/deps installs
# Debian's python3-protobuf).
set -u

server=$1
client=$2
proto_py_dir=$3
python_hint=${4:-}
vectors_bin=${5:-}

# The first interpreter that can import google.protobuf (a pyenv python3 on
# PATH may lack Debian's python3-protobuf that /usr/bin/python3 has).
python=""
for candidate in "$python_hint" "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$candidate" ] || continue
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import google.protobuf" >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "FAIL: no Python interpreter with the protobuf module (apt-get install python3-protobuf)" >&2
  exit 1
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# After a check: stops the test, with the server's log, when it failed.
# usage: CHECK; passed_or_fail "WHAT" (reads CHECK's status)
passed_or_fail() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $1 exited with $rc; server log:" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
}

# shellcheck source=../../tests/support/server.sh
. "$(dirname "$0")/../../tests/support/server.sh"
mkdir "$work/scenarios"
printf 'description: "Two bodies"\nbodies { position { x: 1 y: 1 } radius: 0.5 }\nbodies { position { x: 3 y: 1 } radius: 0.5 }\n' \
  >"$work/scenarios/pair.txtpb"
printf 'bodies { radius: }\n' >"$work/scenarios/broken.txtpb"
start_server "$server" "$work" --threads 2 --scenario-dir "$work/scenarios"
port=$server_port

# Every snapshot form: compact (the default), plain floats with body tables,
# and ids and radii in every snapshot.
seed=12345
for tables in "" --no-compact --no-body-tables; do
  PYTHONPATH="$proto_py_dir${PYTHONPATH:+:$PYTHONPATH}" \
    "$python" "$client" --server "127.0.0.1:$port" --snapshots 5 --spawn 50 --seed $seed $tables
  passed_or_fail "carom_client.py ${tables:-(body tables)}"
  seed=$((seed + 1))
done

# Errors name the field at fault as data: a bad body's path in
# CommandResult.field, a bad Hello's in Error.field (ServerRefused.field).
PYTHONPATH="$proto_py_dir:$(dirname "$client")${PYTHONPATH:+:$PYTHONPATH}" "$python" - "127.0.0.1:$port" <<'PY'
import sys
import carom_client
from carom_client import pb

address = sys.argv[1]
with carom_client.connect(address, pb.ROLE_CONTROLLER) as controller:
    command = pb.Command()
    command.spawn.bodies.add(position={"x": 5, "y": 5}, radius=0.5)
    command.spawn.bodies.add(position={"x": 9, "y": 5}, radius=-1)
    result = controller.call(command)
    assert result.code == pb.INVALID_ARGUMENT, result
    assert result.field == "spawn.bodies[1].radius", result.field
    assert result.message.startswith(result.field + ": "), result.message
    ping = pb.Command()
    ping.ping.SetInParent()
    assert controller.call(ping).field == ""
host, port = carom_client.parse_address(address)
connection = carom_client.Connection.open(host, port, 5.0)
try:
    connection.hello(7)
    raise AssertionError("role 7 was accepted")
except carom_client.ServerRefused as refused:
    assert refused.code == pb.INVALID_ARGUMENT, refused
    assert refused.field == "hello.role", refused.field
print("fields: ok")
PY
passed_or_fail "the field checks"
# list_scenarios, as a viewer: the directory's files, sorted, with their
# descriptions and body counts; then, the directory gone, NOT_FOUND.
PYTHONPATH="$proto_py_dir:$(dirname "$client")${PYTHONPATH:+:$PYTHONPATH}" "$python" - "127.0.0.1:$port" "$work/scenarios" <<'PY'
import shutil
import sys
import carom_client
from carom_client import pb

address, directory = sys.argv[1], sys.argv[2]
wishes = pb.SnapshotWishes(omit_bodies=True, max_rate_hz=1)
with carom_client.connect(address, pb.ROLE_VIEWER, wishes=wishes) as viewer:
    listed = viewer.list_scenarios()
    assert [s.name for s in listed] == ["broken", "pair"], listed
    assert listed[0].error and listed[0].bodies == 0, listed[0]
    assert (listed[1].description, listed[1].bodies, listed[1].error) == ("Two bodies", 2, ""), listed[1]
    shutil.rmtree(directory)
    try:
        viewer.list_scenarios()
        raise AssertionError("a missing directory was listed")
    except carom_client.CommandFailed as failed:
        assert failed.code == pb.NOT_FOUND, failed
        assert "cannot read the scenario directory" in failed.message, failed.message
print("list_scenarios: ok")
PY
passed_or_fail "the list_scenarios checks"
# The compact stream. Offline: the C++ codec's frames decode to the C++
# decoder's integers (corrupt ones refused alike), the protocol's worked
# example, hostile bytes raise CompactError and nothing else, and a delta
# against a snapshot the connection did not get is refused. Live: viewers
# (one from the start, one joining late) decode exactly the server's
# quantization of get_world's full-precision state at every tick, through a
# spawn and a removal.
vectors="$work/vectors.jsonl"
if [ -n "$vectors_bin" ]; then
  if ! "$vectors_bin" "$vectors"; then
    echo "FAIL: $vectors_bin could not write the C++ codec's frames" >&2
    exit 1
  fi
else
  : >"$vectors"
  echo "note: no carom_compact_vectors given: the C++ codec's frames are not checked" >&2
fi
PYTHONPATH="$proto_py_dir:$(dirname "$client")${PYTHONPATH:+:$PYTHONPATH}" timeout 90 "$python" - "127.0.0.1:$port" "$vectors" <<'PY'
import json
import random
import socket
import struct
import sys
import carom_client
from carom_client import pb, CompactError, decode_track, quantize

address, vectors = sys.argv[1], sys.argv[2]

# 1. The same bytes, the same values: every frame the C++ codec wrote, in
# order, each delta against the line the C++ decoder used as its baseline;
# and its compact events (corrupt and truncated ones among them), against
# the positions of the line they name.
decoded, agreed, refused = {}, 0, 0
event_lines, events_agreed, events_refused, event_count = 0, 0, 0, 0
with open(vectors) as lines:
    for index, text in enumerate(lines):
        line = json.loads(text)
        if "tokens" in line:
            event_lines += 1
            try:
                events = carom_client.decode_events(bytes.fromhex(line["tokens"]), bytes.fromhex(line["impulses"]),
                                                    line["tick"], decoded[line["events_of"]])
            except CompactError as error:
                assert not line["ok"], "line %d: the C++ decoder took the events, Python says %s" % (index, error)
                events_refused += 1
                continue
            assert line["ok"], "line %d: the C++ decoder refused the events, Python decoded them" % index
            assert [list(e) for e in events] == line["events"], "line %d: events decode differently" % index
            events_agreed += 1
            event_count += len(events)
            continue
        baseline = None if line["baseline"] is None else decoded[line["baseline"]]
        try:
            track = decode_track(line["position"], baseline, line["ids"], bytes.fromhex(line["bytes"]))
        except CompactError as error:
            assert not line["ok"], "line %d: the C++ decoder took it, Python says %s" % (index, error)
            refused += 1
            continue
        assert line["ok"], "line %d: the C++ decoder refused it, Python decoded it" % index
        got = (track.x, track.y, track.dx, track.dy)
        assert got == (line["x"], line["y"], line["dx"], line["dy"]), "line %d decodes differently" % index
        decoded[index] = track
        agreed += 1
if agreed:
    assert refused > 0, "the C++ frames had no corrupt ones"
    assert events_refused > 0 and event_count > 0, "the C++ events had no corrupt ones, or no events"
print("C++ frames: %d decoded alike, %d corrupt ones refused alike" % (agreed, refused))
print("C++ events: %d lines (%d events) decoded alike, %d corrupt ones refused alike"
      % (events_agreed, event_count, events_refused))

# The worked example of "Compact events" in docs/protocol.md.
example = carom_client.Track([3, 7], [10, 21], [-4, -4])
assert carom_client.decode_events(bytes.fromhex("000b0f0303030f0702"), bytes.fromhex("803f00c000000100"), 100,
                                  example) == [(100, 3, 7, 16, -3, 0x3f80, 0xc000), (99, 7, 9, 16, -3, 0, 1)]
assert carom_client.from_bfloat16(0x3f80) == 1.0 and carom_client.from_bfloat16(0xc000) == -2.0

# The worked example of docs/protocol.md.
assert carom_client._residuals(bytes([0x13, 0x01, 0x02, 0x03, 0x04]), 8) == [5, -1, 0, 0, 1, 0, 0, 0]

# Hostile bytes: a value or CompactError, never another exception.
rng = random.Random(16)
for _ in range(3000):
    n = rng.randrange(0, 12)
    data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 48)))
    if rng.random() < 0.3:
        data = b"\x80" * rng.randrange(1, 20) + data  # long varints
    base = None
    if rng.random() < 0.5:
        base = carom_client.Track(range(1, n + 1), [rng.randrange(-10, 10) for _ in range(n)],
                                  [0] * n, [1 << 62] * n, [-(1 << 62)] * n)
    try:
        decode_track(rng.random() < 0.5, base, list(range(1, n + 1)), data)
    except CompactError:
        pass
    try:
        carom_client.decode_events(data, data[:4 * rng.randrange(0, 4)], rng.randrange(0, 3), base)
    except CompactError:
        pass

# A connection refuses a delta that is not against its last compact
# snapshot, and corrupt bytes, with CompactError, and closes.
def fake_server(*messages):
    ours, theirs = socket.socketpair()
    for message in messages:
        theirs.sendall(carom_client.encode_frame(message))
    return carom_client.Connection(ours), theirs

table = pb.ServerMessage()
table.body_table.epoch = 1
table.body_table.id.extend([4, 9])
table.body_table.radius.extend([0.5, 0.5])
def snapshot(tick, positions, baseline=None):
    message = pb.ServerMessage()
    message.snapshot.tick = tick
    message.snapshot.body_table = 1
    message.snapshot.compact.position_quantum = 0.5
    message.snapshot.compact.positions = positions
    if baseline is not None:
        message.snapshot.compact.baseline_tick = baseline
    return message
# key: x 3, 4 -> 2, 3 (residuals 3, 4, D 0, 0, then -1, -1, D 1, 0)
key = snapshot(7, bytes([11, 15, 2, 1, 1, 3, 0]))
connection, peer = fake_server(table, key, snapshot(8, bytes([6]), baseline=7), snapshot(9, bytes([6]), baseline=7))
got = connection.receive(1.0).snapshot
assert list(got.id) == [4, 9] and list(got.x) == [1.5, 1.0] and list(got.y) == [2.0, 1.5], got
assert connection.positions.dx == [0, 1], connection.positions.dx
got = connection.receive(1.0).snapshot  # all as predicted: body 9 moves on by its last change
assert list(got.x) == [1.5, 1.5] and connection.positions.x == [3, 3], connection.positions.x
try:
    connection.receive(1.0)
    raise AssertionError("a delta against tick 7 after tick 8 was decoded")
except CompactError as error:
    assert "coded against tick 7, but the last compact snapshot here was tick 8" in str(error), error
assert connection._sock is None
for bad in (bytes([11, 15, 2]), bytes([11, 15, 2, 1, 1, 3, 0, 0]), bytes([0xFF] * 11)):
    connection, peer = fake_server(table, snapshot(7, bad))
    try:
        connection.receive(1.0)
        raise AssertionError("corrupt bytes %r were decoded" % bad)
    except CompactError as error:
        assert str(error).startswith("compact snapshot of tick 7: "), error
connection, peer = fake_server(table, snapshot(3, bytes([6]), baseline=2))
try:
    connection.receive(1.0)
    raise AssertionError("a first delta was decoded")
except CompactError as error:
    assert "the last compact snapshot here was none" in str(error), error
print("compact refusals: ok")

# 2. Live: exact decode against the server's own state.
P, V = 0.0005, 0.002
def as_float(value):
    return struct.unpack("f", struct.pack("f", value))[0]

with carom_client.connect(address, pb.ROLE_CONTROLLER) as ctl:
    def call(build):
        command = pb.Command()
        build(command)
        result = ctl.call(command)
        assert result.code == pb.OK, result
        return result
    call(lambda c: c.remove.SetInParent() or setattr(c.remove, "all", True))
    def spawn(c):
        box = c.spawn.generators.add().random_box
        box.min.x, box.min.y, box.max.x, box.max.y = 20, 20, 60, 60
        box.count = 300
        box.radius.min, box.radius.max = 0.3, 0.3
        box.speed.min, box.speed.max = 0.5, 4.0
        box.seed = 99
    ids = list(call(spawn).spawned.ids)
    call(lambda c: c.pause.SetInParent())
    wishes = pb.SnapshotWishes(velocities=True, position_quantum=P, velocity_quantum=V)
    viewers = {"every": carom_client.connect(address, pb.ROLE_VIEWER, wishes=wishes)}
    plain = carom_client.connect(address, pb.ROLE_VIEWER, wishes=wishes, compact=False)
    # Events: compact ones (the default with the compact stream), decoded,
    # against the server's plain ones of the same ticks.
    event_wishes = pb.SnapshotWishes(events=True, position_quantum=P)
    event_viewers = {"compact": carom_client.connect(address, pb.ROLE_VIEWER, wishes=event_wishes),
                     "plain": carom_client.connect(address, pb.ROLE_VIEWER, wishes=event_wishes, compact=False)}
    events_seen = {"compact": {}, "plain": {}}
    worlds, checked, keys = {}, {}, {}

    def follow(name, state_hash):
        """Reads `name`'s snapshots up to the one of this state, checking each
        against get_world's state (so no viewer falls behind and skips one)."""
        viewer = viewers[name]
        while True:
            message = viewer.receive(10.0)
            if message.WhichOneof("kind") != "snapshot":
                continue
            s = message.snapshot
            assert s.HasField("compact"), name
            keys[name] = keys.get(name, 0) + (not s.compact.HasField("baseline_tick"))
            world = worlds.get(s.state_hash)
            if world is not None:  # None: before the first step
                assert list(s.id) == list(world.id), (name, s.tick)
                pos, vel = viewer.positions, viewer.velocities
                for i in range(len(world.id)):
                    want = (quantize(world.x[i], P), quantize(world.y[i], P),
                            quantize(world.vx[i], V), quantize(world.vy[i], V))
                    got = (pos.x[i], pos.y[i], vel.x[i], vel.y[i])
                    assert got == want, (name, s.tick, world.id[i], got, want)
                    assert s.x[i] == as_float(want[0] * P) and s.vy[i] == as_float(want[3] * V), (name, s.tick, i)
                checked[name] = checked.get(name, 0) + 1
            if s.state_hash == state_hash:
                return

    def record():
        world = call(lambda c: c.get_world.SetInParent()).world
        worlds[world.state_hash] = world
        for name in viewers:
            follow(name, world.state_hash)
        for name, viewer in event_viewers.items():
            while True:
                message = viewer.receive(10.0)
                if message.WhichOneof("kind") != "snapshot":
                    continue
                s = message.snapshot
                assert s.HasField("compact_events") or not s.events or name == "plain", s.tick
                events_seen[name][s.tick] = list(s.events)
                if s.state_hash == world.state_hash:
                    break

    for k in range(60):
        if k == 15:
            call(lambda c: c.spawn.bodies.add(position={"x": 40, "y": 75}, velocity={"x": 1, "y": -2}, radius=0.5))
            record()
        if k == 30:
            call(lambda c: c.remove.ids.extend([ids[3], ids[100]]))
            record()
        if k == 35:
            viewers["late"] = carom_client.connect(address, pb.ROLE_VIEWER, wishes=wishes)
        call(lambda c: c.step.SetInParent() or setattr(c.step, "count", 1))
        record()
    # One key frame each (the first), then deltas all along, through the
    # spawn and the removal.
    assert checked["every"] >= 62 and keys["every"] == 1, (checked, keys)
    assert checked["late"] >= 25 and keys["late"] == 1, (checked, keys)
    plain_message = plain.receive(1.0)
    while plain_message.WhichOneof("kind") != "snapshot":
        plain_message = plain.receive(1.0)
    assert not plain_message.snapshot.HasField("compact") and len(plain_message.snapshot.x) > 0
    call(lambda c: c.resume.SetInParent())
    print("compact live: %d + %d snapshots decoded exactly" % (checked["every"], checked["late"]))
    compared = 0
    for tick, compact_events in events_seen["compact"].items():
        plain_events = events_seen["plain"].get(tick)
        if plain_events is None:
            continue
        assert len(compact_events) == len(plain_events), tick
        for c, p in zip(compact_events, plain_events):
            assert (c.a, c.b, c.tick) == (p.a, p.b, p.tick), (tick, c, p)
            assert c.point.x == quantize(p.point.x, P) * P and c.point.y == quantize(p.point.y, P) * P, (tick, c, p)
            for got, want in ((c.impulse.x, p.impulse.x), (c.impulse.y, p.impulse.y)):
                assert abs(got - want) <= abs(want) * 2 ** -8, (tick, c, p)
            compared += 1
    assert compared > 20, "only %d events compared" % compared
    print("compact events live: %d events decoded as the server's" % compared)
PY
passed_or_fail "the compact checks"
echo "PASS"
