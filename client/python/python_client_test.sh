#!/usr/bin/env bash
# End-to-end test of the Python client: starts the real carom-server on a free
# loopback port, runs the carom_client.py demo against it (viewer snapshots,
# then a controller spawn that must show up in a snapshot), checks that a bad
# spawn and a bad Hello come back with their field, stops the server.
#
# usage: python_client_test.sh CAROM_SERVER CAROM_CLIENT_PY PROTO_PY_DIR [PYTHON]
# Fails when no Python with the protobuf module is found (scripts/deps installs
# Debian's python3-protobuf).
set -u

server=$1
client=$2
proto_py_dir=$3
python_hint=${4:-}

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

# shellcheck source=../../tests/support/server.sh
. "$(dirname "$0")/../../tests/support/server.sh"
start_server "$server" "$work" --threads 2
port=$server_port

# Both snapshot forms: body tables (the default) and ids and radii in every snapshot.
seed=12345
for tables in "" --no-body-tables; do
  PYTHONPATH="$proto_py_dir${PYTHONPATH:+:$PYTHONPATH}" \
    "$python" "$client" --server "127.0.0.1:$port" --snapshots 5 --spawn 50 --seed $seed $tables
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: carom_client.py ${tables:-(body tables)} exited with $rc; server log:" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
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
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: the field checks exited with $rc; server log:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
echo "PASS"
