#!/usr/bin/env python3
"""A viewer for docker/smoke-test: connects to carom-server as ROLE_VIEWER and
writes one line per snapshot to --out:

    TICK HASH(16 hex digits) running|paused BODIES

flushed at once, until the server says Goodbye or closes (exit 0), SIGTERM
(exit 0), --snapshots N are written (exit 0), or an error (exit 1).
Needs PYTHONPATH with build/<preset>/proto/python and client/python.

    hash-viewer.py --server HOST:PORT --out FILE [--name NAME] [--snapshots N]
"""

import argparse
import signal
import sys

from carom_client import CaromError, ServerRefused, connect, pb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", default="hash-viewer")
    parser.add_argument("--snapshots", type=int, default=0, help="stop after N snapshots (0 = never)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds without any message before giving up")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    written = 0
    try:
        with open(args.out, "w") as out, connect(args.server, pb.ROLE_VIEWER, client_name=args.name,
                                                 timeout=args.timeout) as conn:
            welcome = conn.welcome
            print("%s: connected (session %d, tick %d%s)"
                  % (args.name, welcome.session_id, welcome.tick, ", paused" if welcome.paused else ""),
                  file=sys.stderr)
            while True:
                message = conn.receive(args.timeout)  # heartbeats keep a paused server's stream alive
                kind = message.WhichOneof("kind")
                if kind == "snapshot":
                    s = message.snapshot
                    out.write("%d %016x %s %d\n" % (s.tick, s.state_hash, "paused" if s.paused else "running", len(s.id)))
                    out.flush()
                    written += 1
                    if args.snapshots and written >= args.snapshots:
                        return 0
                elif kind == "goodbye":
                    print("%s: goodbye after %d snapshots: %s" % (args.name, written, message.goodbye.reason),
                          file=sys.stderr)
                    return 0
                elif kind == "error":
                    raise ServerRefused(message.error.code, message.error.message)
    except CaromError as error:
        if "closed the connection" in str(error) and written > 0:
            print("%s: connection closed after %d snapshots" % (args.name, written), file=sys.stderr)
            return 0
        print("%s: %s" % (args.name, error), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
