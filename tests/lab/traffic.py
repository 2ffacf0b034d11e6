#!/usr/bin/env python3
"""Lab traffic: send a pcap's frames on an interface, or count what arrives on one.

  traffic.py send IFACE TRACE.pcap            frames paced by their timestamps, then the end markers
  traffic.py receive IFACE OUT.json TIMEOUT   counts frames per IPv4/IPv6 source until every marker

send prints, as JSON, the frames sent, the seconds it took, and per source address the frames
sent and the monotonic times (seconds from the first frame) at which its first and last frame
had been handed to the kernel: check.py measures each flood's window from them.

Raw AF_PACKET sockets, so spoofed sources need no addresses configured. Both directions are
bounded: the trace is finite, the receiver stops at the marker or after TIMEOUT seconds.
"""
import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
# The end marker: UDP frames from the allow-listed monitoring range, so floodgate always
# passes them (config/default.yaml allows 198.18.200.0/24), on MARKER_FLOWS flows (source
# ports) so that every worker's queue gets one: a worker keeps its queue's order, not the
# order across queues, so the receiver stops only once it has every flow's marker.
MARKER_SRC = bytes([198, 18, 200, 250])
MARKER_FLOWS = 16


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    nano = magic == 0xA1B23C4D
    off, frames = 24, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        frames.append((sec + frac / (1e9 if nano else 1e6), data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return frames


def marker_frames():
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0, MARKER_SRC, bytes([198, 18, 100, 1]))
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    return [eth + ip + struct.pack("!HHHH", 10000 + k, 9, 8, 0) for k in range(MARKER_FLOWS)]


def send(iface, trace):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    frames = read_pcap(trace)
    sources = [source_of(frame) for _, frame in frames]  # before the clock starts
    per_source = {}  # source -> [frames, first_s, last_s]
    start, t0 = time.monotonic(), frames[0][0] if frames else 0
    for (ts, frame), src in zip(frames, sources):
        delay = (ts - t0) - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)  # pacing the traffic, not synchronisation
        s.send(frame)
        sent_s = time.monotonic() - start  # when the kernel has it (send() returned)
        entry = per_source.setdefault(src, [0, sent_s, sent_s])
        entry[0] += 1
        entry[2] = sent_s
    for frame in marker_frames():
        s.send(frame)
    print(json.dumps({"sent": len(frames), "seconds": round(time.monotonic() - start, 3),
                      "sources": {src: {"frames": n, "first_s": round(first, 6), "last_s": round(last, 6)}
                                  for src, (n, first, last) in sorted(per_source.items())}}))


def source_of(frame):
    off = 12
    etype = struct.unpack("!H", frame[off:off + 2])[0]
    while etype in (0x8100, 0x88A8) and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack("!H", frame[off:off + 2])[0]
    ip = off + 2
    if etype == 0x0800 and len(frame) >= ip + 20:
        return socket.inet_ntop(socket.AF_INET, frame[ip + 12:ip + 16])
    if etype == 0x86DD and len(frame) >= ip + 40:
        return socket.inet_ntop(socket.AF_INET6, frame[ip + 8:ip + 24])
    return "non-ip"


def receive(iface, out, timeout):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.2)
    counts, markers, deadline = {}, set(), time.monotonic() + timeout
    print("ready", flush=True)
    while time.monotonic() < deadline:
        try:
            frame, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        src = source_of(frame)
        if src == socket.inet_ntop(socket.AF_INET, MARKER_SRC):
            markers.add(frame[34:36])  # the flow's source port (IPv4 without options)
            if len(markers) == MARKER_FLOWS:
                break
            continue
        counts[src] = counts.get(src, 0) + 1
    with open(out, "w") as f:
        json.dump(counts, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "receive":
        receive(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(__doc__)
