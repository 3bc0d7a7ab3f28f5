#!/usr/bin/env python3
"""Bytes a viewer receives per second, as carom-view asks for its stream.

    PYTHONPATH=build/release/proto/python python3 bench/stream_bytes.py \\
        --server 127.0.0.1:7878 --seconds 10 [--position-quantum M] [--no-events]

Says Hello with carom-view's wishes (client/view/feed.cpp: velocities at
kViewVelocityQuantum, events of speed >= kFlashMinEventSpeed, at most
kMaxEventsPerSnapshot a snapshot, the compact stream with compact events at
kViewPositionQuantum; the defaults below are those constants, keep them in
step), reads the stream as fast as it comes without decoding it (so the
server never skips a frame for it, as for a viewer that keeps up), and
prints the bytes of each whole second and their mean and maximum in MB/s
(10^6 bytes). Bytes, not speed: the figures do not depend on the machine.
"""

import argparse
import socket
import sys
import time

from carom.v1 import protocol_pb2 as pb


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="127.0.0.1:7878")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--position-quantum", type=float, default=0.004)  # kViewPositionQuantum
    parser.add_argument("--velocity-quantum", type=float, default=0.05)  # kViewVelocityQuantum
    parser.add_argument("--min-event-speed", type=float, default=2.0)  # kFlashMinEventSpeed
    parser.add_argument("--max-events", type=int, default=96)  # kMaxEventsPerSnapshot
    parser.add_argument("--no-events", action="store_true", help="bodies only")
    args = parser.parse_args(argv)

    host, _, port = args.server.rpartition(":")
    message = pb.ClientMessage()
    hello = message.hello
    hello.protocol_version = 1
    hello.role = pb.ROLE_VIEWER
    hello.client_name = "stream_bytes.py"
    w = hello.wishes
    w.velocities = True
    w.velocity_quantum = args.velocity_quantum
    w.body_tables = True
    w.compact = True
    w.position_quantum = args.position_quantum
    if not args.no_events:
        w.events = True
        w.compact_events = True
        w.min_event_speed = args.min_event_speed
        w.max_events = args.max_events
    body = message.SerializeToString()
    sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=5.0)
    sock.sendall(varint(len(body)) + body)

    # Bytes by simulated second (the snapshot's tick over the tick rate,
    # from the first snapshot's): what a viewer gets per second when the
    # server keeps its tick rate, however fast this machine steps the world.
    # A body table counts with the snapshot it comes before.
    buffer = bytearray()
    per_second = [0] * args.seconds
    pending, tick_hz, first_tick = 0, None, None
    deadline = time.monotonic() + 10 * args.seconds + 30
    while True:
        while True:
            length, shift, at = 0, 0, 0
            while at < len(buffer):
                byte = buffer[at]
                at += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            else:
                break
            if len(buffer) < at + length:
                break
            reply = pb.ServerMessage()
            reply.ParseFromString(bytes(buffer[at:at + length]))
            del buffer[:at + length]
            pending += at + length
            kind = reply.WhichOneof("kind")
            if kind == "welcome":
                tick_hz = reply.welcome.tick_hz or 60.0
            elif kind == "error":
                sys.exit("stream_bytes.py: the server refused: %s" % reply.error.message)
            elif kind == "snapshot":
                if first_tick is None:
                    first_tick = reply.snapshot.tick
                second = int((reply.snapshot.tick - first_tick) // tick_hz)
                if second >= args.seconds:
                    return report(per_second)
                per_second[second] += pending
                pending = 0
        if time.monotonic() > deadline:
            sys.exit("stream_bytes.py: %d simulated seconds did not come in time" % args.seconds)
        data = sock.recv(1 << 20)
        if not data:
            sys.exit("stream_bytes.py: the server closed the connection")
        buffer += data


def report(per_second):
    mb = [b / 1e6 for b in per_second]
    print("per second (MB): " + " ".join("%.3f" % m for m in mb))
    print("mean %.3f MB/s, busiest second %.3f MB/s" % (sum(mb) / len(mb), max(mb)))


if __name__ == "__main__":
    main()
