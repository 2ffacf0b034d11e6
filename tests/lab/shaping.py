#!/usr/bin/env python3
"""The shaping lab's small tools (tests/lab/shaping.sh runs them inside its namespaces).

  shaping.py serve ADDR PORT SECONDS EXPECT IDLE OUT.json
                        a UDP server on ADDR:PORT: keeps each datagram's sequence number (from
                        its payload) and kernel receive time; prints "ready", then "first" at
                        the first datagram; stops once it has EXPECT datagrams, once none came
                        for IDLE s after the first, on SIGUSR1 once none came for 0.5 s (3 s at
                        most), or after SECONDS, whichever comes first
  shaping.py burst SRC DST PORT COUNT OUT.json
                        COUNT datagrams, numbered 0..COUNT-1, from SRC to DST:PORT as fast as
                        one connected socket sends them; keeps when the burst began and ended

Receive times are the kernel's (SO_TIMESTAMPNS, CLOCK_REALTIME: the same clock in every
namespace, and the one the burst's times are on), time.time_ns() where a datagram came without
one (counted). The socket's own overflow counter (SO_RXQ_OVFL) says whether the server lost any
datagram, so that what is counted is what floodgate sent. Every loop is bounded in packets and
time. Addresses are the lab's, in 198.18.0.0/15.
"""
import signal
import socket
import struct
import sys
import time

from lab_common import dump, stamp_and_drops, stamped_udp_server  # beside this file

MAGIC = b"FGSH"
PAD = b"floodgate shaping lab\n"


def serve(addr, port, seconds, expect, idle, out):
    drain = []
    signal.signal(signal.SIGUSR1, lambda *_: drain.append(time.monotonic()))
    s = stamped_udp_server(addr, port, 4 << 20, 0.05)
    seqs, times, foreign, unstamped, dropped = [], [], 0, 0, 0
    started = time.monotonic()
    deadline = started + seconds
    last = None
    why = "deadline"
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        if len(seqs) >= expect:
            why = "expected"
            break
        if last is not None and now - last > idle:
            why = "idle"
            break
        if drain and (now - (last or started) > 0.5 or now - drain[0] > 3):
            why = "told"
            break
        try:
            data, ancillary, _, _ = s.recvmsg(2048, 256)
        except (socket.timeout, InterruptedError):
            continue
        last = time.monotonic()
        stamp, drops = stamp_and_drops(ancillary)
        if drops is not None:
            dropped = drops
        if len(data) < 8 or data[:4] != MAGIC:
            foreign += 1
            continue
        if stamp is None:
            unstamped += 1
            stamp = time.time_ns()
        if not seqs:
            print("first", flush=True)
        seqs.append(struct.unpack("!I", data[4:8])[0])
        times.append(stamp)
    dump(out, {"seqs": seqs, "times_ns": times, "foreign": foreign, "unstamped": unstamped,
               "socket_dropped": dropped, "stopped": why})


def burst(src, dst, port, count, out):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((src, 0))
    s.connect((dst, port))
    payloads = [MAGIC + struct.pack("!I", i) + PAD for i in range(count)]
    sent = errors = 0
    t0 = time.time_ns()
    m0 = time.monotonic_ns()
    # Bounded: each datagram is tried until it goes or COUNT errors in all, and 5 s at most.
    while sent < count and errors < count and time.monotonic_ns() - m0 < 5_000_000_000:
        try:
            s.send(payloads[sent])
            sent += 1
        except OSError:
            errors += 1
    m1 = time.monotonic_ns()
    dump(out, {"sent": sent, "errors": errors, "start_ns": t0, "end_ns": t0 + (m1 - m0),
               "duration_ns": m1 - m0, "count": count})
    print(f"burst: {sent} sent in {(m1 - m0) / 1e6:.2f} ms, {errors} errors")
    if sent != count:
        sys.exit(1)


def main():
    a = sys.argv[1:]
    if len(a) == 7 and a[0] == "serve":
        serve(a[1], int(a[2]), float(a[3]), int(a[4]), float(a[5]), a[6])
    elif len(a) == 6 and a[0] == "burst":
        burst(a[1], a[2], int(a[3]), int(a[4]), a[5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
