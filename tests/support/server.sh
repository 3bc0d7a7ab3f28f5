# Sourced by the shell end-to-end tests (carom-ctl, the Python client): the
# one way they start carom-server, as tests/support/process.hpp is for the C++
# suites.
#
# start_server SERVER_BIN WORKDIR [ARGS...]
#   Starts SERVER_BIN ARGS --bind 127.0.0.1 --port 0 --port-file WORKDIR/port,
#   its output in WORKDIR/server.log, and waits up to 10 s until it listens.
#   Sets server_pid and server_port; on failure prints why and the log and
#   exits 1. The caller kills $server_pid when done (e.g. in an EXIT trap).
start_server() {
  local bin=$1 dir=$2
  shift 2
  "$bin" "$@" --bind 127.0.0.1 --port 0 --port-file "$dir/port" >"$dir/server.log" 2>&1 &
  server_pid=$!
  local _
  for _ in $(seq 1 100); do
    [ -s "$dir/port" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "FAIL: carom-server exited before listening" >&2
      cat "$dir/server.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  if [ ! -s "$dir/port" ]; then
    echo "FAIL: carom-server wrote no port file within 10 s" >&2
    cat "$dir/server.log" >&2
    exit 1
  fi
  server_port=$(tr -d '[:space:]' <"$dir/port")
}
