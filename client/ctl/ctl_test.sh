#!/usr/bin/env bash
# End-to-end test of carom-ctl against the real carom-server on a free
# loopback port: every subcommand, its exit status (0 done, 1 refused by the
# server, 2 usage or connection), JSON output, FILE:LINE errors for scenario
# files, save / load-world round trip, play, watch, and every shipped scenario
# (loaded, and listed by scenarios).
#
# usage: ctl_test.sh CAROM_SERVER CAROM_CTL SCENARIO_DIR
set -u

server=$1
ctl=$2
scenarios=$3

work=$(mktemp -d)
server_pid=""
failures=0
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# expect RC DESCRIPTION -- COMMAND...: runs COMMAND, keeps its stdout in
# $work/out and stderr in $work/err, and checks the exit status.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want: $*" >&2
    sed 's/^/  stdout: /' "$work/out" | head -20 >&2
    sed 's/^/  stderr: /' "$work/err" | head -20 >&2
    failures=$((failures + 1))
    return 1
  fi
  echo "ok: $what"
  return 0
}

# contains FILE TEXT DESCRIPTION
contains() {
  if ! grep -qF -- "$2" "$1"; then
    echo "FAIL: $3: '$2' not in $(basename "$1"):" >&2
    sed 's/^/  /' "$1" | head -20 >&2
    failures=$((failures + 1))
  fi
}

# Usage errors need no server: each is found before connecting (no server
# listens on port 1, so a "cannot connect" would mean the line was accepted).
expect 2 "malformed --body" -- "$ctl" --server 127.0.0.1:1 spawn --body 1,x
contains "$work/err" "--body = 1,x" "usage error names the option and the value"
expect 2 "wrong arity" -- "$ctl" --server 127.0.0.1:1 spawn --body 1,2,3
contains "$work/err" "--body: 1,2,3: expected 2, 4, 5 or 6 numbers, got 3" "body arity"
expect 2 "missing half of a pair" -- "$ctl" --server 127.0.0.1:1 params --gravity 1
contains "$work/err" "--gravity: 2 required X,Y missing" "missing half"
expect 2 "not a number" -- "$ctl" --server 127.0.0.1:1 params --restitution high
contains "$work/err" "--restitution = high" "not a number"
expect 2 "negative id" -- "$ctl" --server 127.0.0.1:1 remove -1
contains "$work/err" "'-1' is not a non-negative decimal integer" "negative id"
expect 2 "count too big" -- "$ctl" --server 127.0.0.1:1 spawn --random-box 0,0,9,9 --count 4294967296
contains "$work/err" "--count: '4294967296' is more than 4294967295" "count too big"
expect 2 "NaN timeout" -- "$ctl" --server 127.0.0.1:1 --timeout nan ping
contains "$work/err" "--timeout: 'nan' is not a finite number" "NaN timeout"
expect 2 "grid without rows" -- "$ctl" --server 127.0.0.1:1 spawn --grid 0,0 --columns 3
contains "$work/err" "--grid requires --rows" "grid needs rows"
expect 2 "generator option without a generator" -- "$ctl" --server 127.0.0.1:1 spawn --body 1,2 --count 3
contains "$work/err" "--count requires a generator" "count needs a generator"
expect 2 "bounds and unbounded" -- "$ctl" --server 127.0.0.1:1 params --bounds 0,0,9,9 --unbounded
contains "$work/err" "--bounds excludes --unbounded" "bounds excludes unbounded"
expect 2 "nothing to spawn" -- "$ctl" --server 127.0.0.1:1 spawn
contains "$work/err" "is required" "nothing to spawn"
expect 2 "no subcommand" -- "$ctl"
expect 0 "help" -- "$ctl" spawn --help
contains "$work/out" "--random-box" "spawn --help"
expect 2 "no server" -- "$ctl" --server 127.0.0.1:1 --timeout 2 ping

# shellcheck source=../../tests/support/server.sh
. "$(dirname "$0")/../../tests/support/server.sh"
start_server "$server" "$work" --threads 2 --scenario-dir "$scenarios"
export CAROM_SERVER="127.0.0.1:$server_port"
c() { "$ctl" --timeout 20 "$@"; }

expect 0 "ping" -- c ping
contains "$work/out" "pong" "ping"
expect 0 "ping --json" -- c --json ping
contains "$work/out" '"rtt_ms"' "ping --json"
contains "$work/out" '"code":"OK"' "ping --json"

expect 0 "remove --all (start empty)" -- c remove --all
expect 0 "spawn bodies" -- c spawn --body 10,10 --body 20,20,1,-1,0.5 --body 30,30,0,0,0.7,2
contains "$work/out" "spawned 3 bodies" "spawn bodies"
first_id=$(sed -n 's/^spawned 3 bodies: \([0-9]*\).*/\1/p' "$work/out")
expect 1 "spawn NaN (server validates)" -- c spawn --body 10,nan
contains "$work/err" "INVALID_ARGUMENT" "spawn NaN"
contains "$work/err" "spawn.bodies[0].position.y: must be finite" "spawn NaN names the field"
expect 1 "spawn NaN --json" -- c --json spawn --body 10,10 --body 10,nan
contains "$work/out" '"field":"spawn.bodies[1].position.y"' "the result's field in --json"
expect 1 "spawn outside the box" -- c spawn --body -50,10
expect 0 "spawn random box" -- c spawn --random-box 40,40,90,90 --count 100 --radius 0.3,0.5 --speed 0,2 --seed 3
contains "$work/out" "spawned 100 bodies" "random box"
expect 0 "spawn grid" -- c spawn --grid 5,60 --columns 5 --rows 4 --spacing 1.5 --radius 0.5 --velocity 1,0
contains "$work/out" "spawned 20 bodies" "grid"
expect 0 "spawn random disc" -- c spawn --random-disc 20,85,8 --count 10 --radius 0.5 --seed 9 --mass 2
expect 0 "get-world table" -- c get-world
rows=$(grep -vc '^#\|^ *id ' "$work/out")
[ "$rows" -eq 133 ] || { echo "FAIL: get-world: $rows bodies, expected 133" >&2; failures=$((failures + 1)); }
expect 0 "get-world --json" -- c get-world --json
contains "$work/out" '"params"' "get-world --json"
expect 0 "get-world --text" -- c get-world --text
contains "$work/out" "format: 1" "get-world --text"

expect 0 "set" -- c set "$first_id" --position 12,12 --velocity 0,1
expect 1 "set unknown id" -- c set 999999 --position 1,1
contains "$work/err" "NOT_FOUND" "set unknown id"
expect 2 "set nothing" -- c set "$first_id"
expect 0 "impulse" -- c impulse "$first_id" -1,0.5
expect 1 "impulse unknown id" -- c impulse 999999 1,0

expect 0 "params set" -- c params --gravity 0,-9.81 --restitution 0.8 --damping 0.1 --solver discrete --substeps 4 --iterations 8
# The Welcome's parameters are refreshed by the server's tick loop, so they
# may lag a SetParams result by up to one tick.
sleep 0.2
expect 0 "params show" -- c params
contains "$work/out" "-9.81" "params show gravity"
contains "$work/out" "restitution   0.8" "params show restitution"
expect 0 "params --json" -- c params --json
contains "$work/out" '"restitution"' "params --json"
expect 1 "params bad restitution" -- c params --restitution 2
contains "$work/err" "restitution" "bad restitution names the field"
expect 2 "params bad solver" -- c params --solver euler
expect 0 "params continuous" -- c params --solver continuous
sleep 0.2
expect 0 "params show continuous" -- c params
contains "$work/out" "continuous" "params show solver continuous"
expect 0 "params back to discrete" -- c params --solver discrete

expect 0 "pause" -- c pause
expect 0 "step 5" -- c step 5
contains "$work/out" "stepped 5 ticks" "step"
expect 0 "stats" -- c stats
contains "$work/out" "paused" "stats while paused"
expect 0 "stats --json" -- c stats --json
contains "$work/out" '"stats"' "stats --json"
expect 0 "resume" -- c resume
expect 1 "step while running" -- c step
contains "$work/err" "FAILED_PRECONDITION" "step while running"

expect 0 "save" -- c save "$work/world.bin"
[ -s "$work/world.bin" ] || { echo "FAIL: save wrote nothing" >&2; failures=$((failures + 1)); }
expect 0 "remove --all" -- c remove --all
expect 0 "load-world" -- c load-world "$work/world.bin"
contains "$work/out" "133 bodies" "load-world"
expect 0 "reset" -- c reset
expect 1 "load-world garbage" -- c load-world "$work/port"
expect 2 "remove nothing" -- c remove

for f in "$scenarios"/*.txtpb; do
  expect 0 "load $(basename "$f")" -- c load "$f"
done
expect 0 "load by name" -- c load newtons_cradle
# scenarios lists what load takes by name: every shipped file, as a viewer.
expect 0 "scenarios" -- c scenarios
for f in "$scenarios"/*.txtpb; do
  contains "$work/out" "$(basename "$f" .txtpb) " "scenarios lists $(basename "$f")"
done
contains "$work/out" "Newton's cradle" "scenarios shows descriptions"
expect 0 "scenarios --json" -- c --json scenarios
contains "$work/out" '"name":"newtons_cradle"' "scenarios --json"
contains "$work/out" '"bodies":"13"' "scenarios --json counts bodies"
expect 1 "load unknown name" -- c load no_such_scenario
contains "$work/err" "NOT_FOUND" "load unknown name"
expect 1 "load missing file" -- c load "$work/missing.txtpb"

cat >"$work/bad.txtpb" <<'TXT'
name: "bad"
bodies { position { x: 10 y: 10 } radius: 1 }
bodies {
  position { x: 20 y: 20 }
  radius: -1
}
TXT
expect 1 "load invalid scenario file" -- c load "$work/bad.txtpb"
contains "$work/err" "bad.txtpb:5:" "FILE:LINE for the bad radius"
printf 'name: "x"\nbodies { radius: }\n' >"$work/syntax.txtpb"
expect 1 "load unparsable scenario file" -- c load "$work/syntax.txtpb"
contains "$work/err" "syntax.txtpb:2:" "parse error location"

cat >"$work/script.txtpb" <<'TXT'
name: "script"
bodies { position { x: 50 y: 50 } radius: 1 }
script { tick: 0 command { spawn { bodies { position { x: 10 y: 10 } radius: 0.5 } } } }
script { tick: 3 command { ping {} } }
script {
  tick: 6
  command { set_params { params { restitution: 0.5 } } }
}
TXT
expect 0 "play --load" -- c play --load "$work/script.txtpb"
contains "$work/out" "script.txtpb:3: +0 spawn: OK" "play prints each result"
contains "$work/out" "+6 set_params: OK" "play reaches the last command"
cat >"$work/badscript.txtpb" <<'TXT'
name: "badscript"
script { tick: 0 command { ping {} } }
script {
  tick: 2
  command {
    apply_impulse { id: 987654 impulse { x: 1 y: 0 } }
  }
}
TXT
expect 1 "play with a failing command" -- c play "$work/badscript.txtpb"
contains "$work/err" "badscript.txtpb:6: NOT_FOUND: apply_impulse.id: unknown body id 987654" \
  "play error location, from the result's field"
contains "$work/err" "NOT_FOUND" "play error code"
expect 0 "play bullet (from the client)" -- c play "$scenarios/bullet.txtpb" --load
contains "$work/out" "+60 spawn: OK" "bullet script"

expect 0 "watch" -- c watch --seconds 2.5
lines=$(wc -l <"$work/out")
[ "$lines" -ge 2 ] || { echo "FAIL: watch printed $lines lines" >&2; failures=$((failures + 1)); }
contains "$work/out" "snap/s" "watch line"
expect 0 "watch --json" -- c --json watch --seconds 1.5
contains "$work/out" '"snapshots_per_s"' "watch --json"
contains "$work/out" '"bytes_per_snapshot"' "watch --json"
expect 0 "watch --bodies" -- c --json watch --bodies --seconds 1.5
contains "$work/out" '"bytes_per_body"' "watch --bodies"
contains "$work/out" '"compact":true' "watch --bodies"
expect 2 "watch --plain without --bodies" -- c watch --plain --seconds 1

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed; server log:" >&2
  tail -30 "$work/server.log" >&2
  exit 1
fi
echo "PASS"
