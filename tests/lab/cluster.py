#!/usr/bin/env python3
"""The cluster lab's small tools (tests/lab/cluster.sh runs them, the first two inside a
namespace).

  cluster.py serve ADDR PORT SECONDS OUT.json
                        a UDP server on ADDR:PORT: counts the datagrams per source and keeps
                        each one's kernel receive time; prints "ready"; SIGUSR1: stop once none
                        came for 0.5 s (3 s at most), else stops after SECONDS
  cluster.py send SRC DST PORT RATE SECONDS START OUT.json
                        RATE datagrams a second to DST:PORT for SECONDS from START (a Unix
                        time), paced every millisecond, from SRC's ports 20000-20007 in turn
  cluster.py probe SRC DST
                        a UDP datagram from SRC to DST's port 9, up to 3 times, until the
                        ICMP port unreachable comes back: the way there and back works (and ARP
                        is resolved); exits 1 when it never does
  cluster.py state FLOODCTL SOCKET
                        prints the dataplane's cluster state as `floodctl status -j` on the
                        daemon's SOCKET says it ("joined", "alone", or "none" while it does
                        not answer)
  cluster.py free-port  a TCP port free on 127.0.0.1 now

Receive times are the kernel's (SO_TIMESTAMPNS, CLOCK_REALTIME), the same clock in every
namespace and the one the senders' times are on. Every loop is bounded in packets and time.
Addresses are the lab's, in 198.18.0.0/15.
"""
import json
import signal
import socket
import subprocess
import sys
import time

from lab_common import dump, stamp_and_drops, stamped_udp_server  # beside this file
SOURCE_PORTS = range(20000, 20008)
PAYLOAD = b"floodgate cluster lab\n"


def serve(addr, port, seconds, out):
    """The protected server. The socket's own overflow counter (SO_RXQ_OVFL) says whether it
    lost any datagram, so that what is counted is what the boxes passed."""
    drain = []
    signal.signal(signal.SIGUSR1, lambda *_: drain.append(time.monotonic()))
    s = stamped_udp_server(addr, port, 8 << 20, 0.1)
    times, sources, dropped = [], {}, 0
    deadline = time.monotonic() + seconds
    last = time.monotonic()
    print("ready", flush=True)
    while time.monotonic() < deadline:
        if drain and (time.monotonic() - last > 0.5 or time.monotonic() - drain[0] > 3):
            break
        try:
            _, ancillary, _, (src, _) = s.recvmsg(2048, 256)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        last = time.monotonic()
        stamp, drops = stamp_and_drops(ancillary)
        if drops is not None:
            dropped = drops
        times.append(stamp if stamp is not None else time.time_ns())
        sources[src] = sources.get(src, 0) + 1
    dump(out, {"times_ns": times, "sources": sources, "socket_dropped": dropped,
               "drained": bool(drain)})


def send(src, dst, port, rate, seconds, start, out):
    """Paced: every millisecond, what the schedule (rate x time since START) says is due, at
    most 50 at once, so that a late wake-up does not become a burst of its own."""
    socks = []
    for p in SOURCE_PORTS:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((src, p))
        socks.append(s)
    total = int(rate * seconds)
    delay = start - time.time()
    if delay > 0:
        time.sleep(min(delay, 30))
    t0 = time.time()
    sent = errors = 0
    end_by = t0 + seconds + 5  # the loop's own bound
    while sent + errors < total and time.time() < end_by:
        due = min(total, int((time.time() - t0) * rate))
        for _ in range(min(due - sent - errors, 50)):
            try:
                socks[(sent + errors) % len(socks)].sendto(PAYLOAD, (dst, port))
                sent += 1
            except OSError:
                errors += 1
        time.sleep(0.001)
    t1 = time.time()
    dump(out, {"sent": sent, "errors": errors, "start": t0, "end": t1, "rate": rate,
               "seconds": seconds, "src": src})


def probe(src, dst):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.connect((dst, 9))
    s.settimeout(1)
    for _ in range(3):
        try:
            s.send(PAYLOAD)
            s.recv(2048)
        except ConnectionRefusedError:
            return
        except socket.timeout:
            continue
    sys.exit(f"probe: no answer from {dst} to {src} in 3 tries")


def state(ctl, sock):
    p = subprocess.run([ctl, "--socket", sock, "-j", "status"], capture_output=True, text=True,
                       timeout=10)
    try:
        print(((json.loads(p.stdout).get("dataplane") or {}).get("cluster") or {})
              .get("state", "none"))
    except ValueError:
        print("none")


def main():
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "serve":
        serve(a[1], int(a[2]), float(a[3]), a[4])
    elif len(a) == 8 and a[0] == "send":
        send(a[1], a[2], int(a[3]), float(a[4]), float(a[5]), float(a[6]), a[7])
    elif len(a) == 3 and a[0] == "probe":
        probe(a[1], a[2])
    elif len(a) == 3 and a[0] == "state":
        state(a[1], a[2])
    elif len(a) == 1 and a[0] == "free-port":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            print(s.getsockname()[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
