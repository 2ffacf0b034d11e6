#!/usr/bin/env python3
"""The XDP escalation lab's sender (tests/lab/xdp_escalation.sh).

  escalation.py send IFACE SRC COUNT PPS     COUNT UDP datagrams to 198.18.1.1:53 from SRC,
                                             PPS a second; SIGTERM stops it early
  escalation.py marker IFACE                 traffic.py's end markers

Prints {"sent": N} when done. Raw AF_PACKET frames (the sources need no addresses), to the
server MAC of the lab (02:00:00:00:00:02). Bounded: COUNT frames at most.
"""
import json
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import traffic  # noqa: E402  marker_frames

stopping = False


def on_term(*_):
    global stopping
    stopping = True


def frame(src, seq):
    payload = struct.pack("!I", seq) + b"\0" * 28
    udp = struct.pack("!HHHH", 40000 + seq % 1000, 53, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton("198.18.1.1"))
    csum = 0
    for i in range(0, 20, 2):
        csum += (ip[i] << 8) | ip[i + 1]
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp


def send(iface, src, count, pps):
    signal.signal(signal.SIGTERM, on_term)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    start, sent = time.monotonic(), 0
    while sent < count and not stopping:
        delay = sent / pps - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)  # pacing the traffic, not synchronisation
        s.send(frame(src, sent))
        sent += 1
    print(json.dumps({"sent": sent}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif len(sys.argv) == 3 and sys.argv[1] == "marker":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((sys.argv[2], 0))
        for frame in traffic.marker_frames():
            s.send(frame)
    else:
        sys.exit(__doc__)
