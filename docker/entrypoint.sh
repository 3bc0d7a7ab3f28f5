#!/bin/sh
# Entry point of the carom image: carom-server on 0.0.0.0:7878, the browser
# viewer and its WebSocket on 0.0.0.0:$CAROM_HTTP_PORT, its world kept
# in /data (loaded at start when present, saved every $CAROM_SAVE_EVERY seconds
# and on SIGTERM). Arguments starting with '-' are added to carom-server's
# (--insecure, --tick-hz 120, --threads 4 ...); any other first argument is run
# as a command instead (carom-ctl stats, sh ...).
#   CAROM_TOKEN       controllers must present it (required unless --insecure)
#   CAROM_SCENARIO    scenario loaded when /data holds no world yet: a name from
#                     /usr/share/carom/scenarios or a .txtpb path ("" = empty world)
#   CAROM_SAVE_EVERY  seconds between saves of /data/world.pb (0 = on exit only)
#   CAROM_HTTP_PORT   the page at /, the protocol at /ws (8080; -1 = off)
set -e
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi
scenarios=/usr/share/carom/scenarios
set -- --bind 0.0.0.0 --port 7878 --scenario-dir "$scenarios" \
  --http-port "${CAROM_HTTP_PORT:-8080}" --web-root /usr/share/carom/web \
  --state /data/world.pb --save-every "${CAROM_SAVE_EVERY:-30}" "$@"
case "${CAROM_SCENARIO:-}" in
  "") ;;
  */* | *.txtpb) set -- --scenario "$CAROM_SCENARIO" "$@" ;;
  *) set -- --scenario "$scenarios/$CAROM_SCENARIO.txtpb" "$@" ;;
esac
exec carom-server "$@"
