#!/usr/bin/env python3
"""The syn-proxy lab's own tools (tests/lab/syn_proxy.sh runs each, some inside a namespace).

  syn_proxy.py snapshot STATS.json OUT.json SECONDS [drained]
        waits for floodgate to write STATS.json anew (it does every --stats-interval), then
        copies it to OUT.json: the counters as they were after what the script did before;
        with drained, the first such copy whose proxy_connections is 0
  syn_proxy.py closed PORT SECONDS
        waits until this namespace has no TCP connection on PORT left but in TIME-WAIT (the
        last segments of the one before have crossed floodgate)
  syn_proxy.py rawclient IFACE SRC_MAC DST_MAC SRC DST PORT PATH EXPECT OUT.json
        one HTTP/1.0 GET of PATH from SRC (an IPv4 address this namespace's kernel does not own,
        so that it never answers for it) over a TCP written here, frames sent and read on IFACE
        with an AF_PACKET socket; EXPECT is the file the reply's body must equal

rawclient is the client RFC 9293 describes and nothing more: a SYN with MSS only (no window
scale, SACK or timestamps), and in SYN-SENT a segment whose ACK is not ISS + 1 answered with
<SEQ=SEG.ACK><CTL=RST> and otherwise ignored (3.10.7.3), the SYN sent again at its
retransmission timeout, 1 s and doubling (RFC 6298 2.1, 5.5), not earlier. That is the stack
syn-auth's challenge costs a second, and syn-proxy should not. Every loop is bounded in packets
and in time. Addresses are the lab's, in 198.18.0.0/15.
"""
import json
import os
import random
import shutil
import socket
import struct
import sys
import time

from lab_common import dump  # beside this file

ETH_P_IP = 0x0800
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
MSS = 1460
WINDOW = 65535
RTO_INITIAL_S = 1.0  # RFC 6298 2.1
SYNS_MAX = 4         # the first and three retransmissions: 1 + 2 + 4 s
RETRIES_MAX = 3      # the GET and the FIN, each
DEADLINE_S = 15.0


def snapshot(stats, out, seconds, drained=False):
    """Copies STATS once floodgate has replaced it after this call started (it writes a new file
    and renames it over the old one, so a copy is always a whole document)."""
    start = time.time_ns()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if os.stat(stats).st_mtime_ns > start:
                shutil.copyfile(stats, out)
                with open(out) as f:
                    if not drained or json.load(f)["proxy_connections"] == 0:
                        return
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.02)
    sys.exit(f"snapshot: {stats} not written{' drained' if drained else ''} in {seconds} s")


def closed(port, seconds):
    """Polls /proc/net/tcp{,6} until no socket with local or remote PORT is in a state other
    than LISTEN (0A), TIME-WAIT (06) or CLOSE (07)."""
    deadline = time.monotonic() + seconds
    while True:
        busy = []
        for path in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(path) as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    local, remote, state = fields[1], fields[2], fields[3]
                    ports = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16))
                    if port in ports and state not in ("0A", "06", "07"):
                        busy.append(f"{local} {remote} {state}")
        if not busy:
            return
        if time.monotonic() >= deadline:
            sys.exit(f"closed: port {port} still busy after {seconds} s: {busy}")
        time.sleep(0.02)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def seq_add(a, n):
    return (a + n) & 0xFFFFFFFF


class Wire:
    """IPv4 TCP frames of one connection, SRC:sport <-> DST:dport, on an AF_PACKET socket."""

    def __init__(self, iface, src_mac, dst_mac, src, dst, dport):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.s.bind((iface, ETH_P_IP))
        self.iface = iface
        self.src_mac = bytes.fromhex(src_mac.replace(":", ""))
        self.dst_mac = bytes.fromhex(dst_mac.replace(":", ""))
        self.src, self.dst = socket.inet_aton(src), socket.inet_aton(dst)
        self.sport, self.dport = random.randint(40000, 59999), dport
        self.ident = random.randint(0, 0xFFFF)
        self.sent = []  # (seconds since start, flags, seq, ack, payload bytes)
        self.t0 = time.monotonic()

    def send(self, seq, ack, flags, payload=b"", options=b""):
        off = (20 + len(options)) // 4 << 4
        tcp = struct.pack("!HHIIBBHHH", self.sport, self.dport, seq, ack, off, flags, WINDOW, 0, 0)
        tcp += options + payload
        pseudo = self.src + self.dst + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
        self.ident = (self.ident + 1) & 0xFFFF
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), self.ident, 0x4000, 64, 6, 0,
                         self.src, self.dst)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        self.s.send(self.dst_mac + self.src_mac + struct.pack("!H", ETH_P_IP) + ip + tcp)
        self.sent.append((round(time.monotonic() - self.t0, 6), flags, seq, ack, len(payload)))

    def recv(self, timeout):
        """The connection's next segment from DST as (seq, ack, flags, payload), or None."""
        end = time.monotonic() + max(timeout, 0)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                frame, addr = self.s.recvfrom(65535)
            except socket.timeout:
                return None
            if addr[2] == socket.PACKET_OUTGOING or len(frame) < 54:
                continue
            if struct.unpack("!H", frame[12:14])[0] != ETH_P_IP or frame[23] != 6:
                continue
            if frame[26:30] != self.dst or frame[30:34] != self.src:
                continue
            ihl = (frame[14] & 15) * 4
            total = struct.unpack("!H", frame[16:18])[0]
            t = 14 + ihl
            sport, dport, seq, ack, off, flags = struct.unpack("!HHIIBB", frame[t:t + 14])
            if sport != self.dport or dport != self.sport:
                continue
            return seq, ack, flags, frame[t + (off >> 4) * 4:14 + total]


def rawclient(iface, src_mac, dst_mac, src, dst, port, path, expect, out):
    w = Wire(iface, src_mac, dst_mac, src, dst, port)
    with open(expect, "rb") as f:
        expected = f.read()
    iss = random.randint(0, 0xFFFFFFFF)
    snd_nxt = seq_add(iss, 1)
    mss_option = struct.pack("!BBH", 2, 4, MSS)
    result = {"source": src, "port": port, "syns": 0, "rsts": 0, "synacks": [], "connected_s": None,
              "reply_s": None, "closed_s": None, "status": None, "body_ok": False, "error": None}
    deadline = w.t0 + DEADLINE_S

    # SYN-SENT (RFC 9293 3.10.7.3): SND.UNA = ISS, SND.NXT = ISS + 1.
    rto, next_syn = RTO_INITIAL_S, w.t0
    irs = None
    while irs is None:
        now = time.monotonic()
        if now >= deadline:
            result["error"] = "no acceptable SYN-ACK"
            break
        if now >= next_syn:
            if result["syns"] == SYNS_MAX:
                result["error"] = f"no acceptable SYN-ACK after {SYNS_MAX} SYNs"
                break
            w.send(iss, 0, SYN, options=mss_option)
            result["syns"] += 1
            next_syn, rto = now + rto, rto * 2  # RFC 6298 5.5: back off
        got = w.recv(min(next_syn, deadline) - time.monotonic())
        if got is None:
            continue
        seq, ack, flags, _ = got
        t = round(time.monotonic() - w.t0, 6)
        if flags & ACK and ack != snd_nxt:  # SEG.ACK =< ISS or SEG.ACK > SND.NXT
            if flags & SYN:
                result["synacks"].append({"t_s": t, "ack_ok": False})
            if not flags & RST:
                w.send(ack, 0, RST)
                result["rsts"] += 1
            continue
        if flags & RST:
            if flags & ACK:
                result["error"] = "connection refused (RST)"
                break
            continue
        if flags & SYN and flags & ACK:
            result["synacks"].append({"t_s": t, "ack_ok": True})
            irs = seq
    if irs is None:
        result["sent"] = w.sent
        dump(out, result)
        return

    # ESTABLISHED: the ACK, then the request at once (syn-proxy holds it while the server
    # answers floodgate's SYN).
    rcv_nxt = seq_add(irs, 1)
    w.send(snd_nxt, rcv_nxt, ACK)
    result["connected_s"] = round(time.monotonic() - w.t0, 6)
    request = f"GET {path} HTTP/1.0\r\nHost: {dst}\r\n\r\n".encode()
    data_seq = snd_nxt
    snd_nxt = seq_add(snd_nxt, len(request))
    snd_una = data_seq
    w.send(data_seq, rcv_nxt, PSH | ACK, request)
    sent_at, tries = time.monotonic(), 1
    reply, fin_received, fin_seq = b"", False, None
    while time.monotonic() < deadline:
        unacked = snd_una != snd_nxt
        if unacked and time.monotonic() - sent_at >= RTO_INITIAL_S:
            if tries > RETRIES_MAX:
                result["error"] = "request or FIN never acknowledged"
                break
            if fin_seq is None:
                w.send(data_seq, rcv_nxt, PSH | ACK, request)
            else:
                w.send(fin_seq, rcv_nxt, FIN | ACK)
            sent_at, tries = time.monotonic(), tries + 1
        got = w.recv(0.2)
        if got is None:
            continue
        seq, ack, flags, payload = got
        if flags & RST:
            result["error"] = "connection reset"
            break
        if flags & ACK and 0 < (ack - snd_una) & 0xFFFFFFFF <= (snd_nxt - snd_una) & 0xFFFFFFFF:
            snd_una = ack
        if seq == rcv_nxt and not fin_received:
            reply += payload
            rcv_nxt = seq_add(rcv_nxt, len(payload))
            if flags & FIN:
                rcv_nxt = seq_add(rcv_nxt, 1)
                fin_received = True
                result["reply_s"] = round(time.monotonic() - w.t0, 6)
        if payload or flags & FIN or seq != rcv_nxt:
            w.send(snd_nxt, rcv_nxt, ACK)
        if fin_received and fin_seq is None:  # CLOSE-WAIT: our FIN at once
            fin_seq = snd_nxt
            snd_nxt = seq_add(snd_nxt, 1)
            w.send(fin_seq, rcv_nxt, FIN | ACK)
            sent_at, tries = time.monotonic(), 1
        if fin_seq is not None and snd_una == snd_nxt:
            result["closed_s"] = round(time.monotonic() - w.t0, 6)
            break
    else:
        result["error"] = result["error"] or "timed out"
    head, _, body = reply.partition(b"\r\n\r\n")
    result["status"] = head.split(b"\r\n", 1)[0].decode(errors="replace") if head else None
    result["body_bytes"] = len(body)
    result["body_ok"] = body == expected
    result["sent"] = w.sent
    dump(out, result)


def main():
    a = sys.argv[1:]
    if len(a) in (4, 5) and a[0] == "snapshot" and a[4:] in ([], ["drained"]):
        snapshot(a[1], a[2], float(a[3]), a[4:] == ["drained"])
    elif len(a) == 3 and a[0] == "closed":
        closed(int(a[1]), float(a[2]))
    elif len(a) == 10 and a[0] == "rawclient":
        rawclient(a[1], a[2], a[3], a[4], a[5], int(a[6]), a[7], a[8], a[9])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
