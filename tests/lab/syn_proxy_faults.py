#!/usr/bin/env python3
"""Clients and server of tests/lab/syn_proxy_faults.sh: syn-proxy when things go wrong.

  syn_proxy_faults.py serve SECONDS ADDR...   TCP listeners on port 80 of each ADDR (run in the
                                              inside namespace): accept and hold connections
  syn_proxy_faults.py warm OUT_NS OUT_DEV IN_NS IN_DEV
                                              bounded wait until floodgate forwards both ways
  syn_proxy_faults.py run CASE WORK OUT_NS OUT_DEV IN_NS IN_DEV
                                              one case's clients, against the floodgate whose
                                              stats are WORK/CASE/stats.json: what they did and
                                              saw in WORK/CASE/result.json, every frame on both
                                              veth ends in WORK/CASE/out.pcap and in.pcap

CASE: refused, slow, vanish, acks or storm (syn_proxy_faults.sh says what each does; the case_*
functions below how). The process runs in the root namespace and makes each socket in the
namespace it belongs to (setns around socket()). Raw clients use addresses the outside
namespace does not own, and send and read their frames with AF_PACKET on its veth end; the
same taps see what the kernel clients send and receive. The expected counts come from what
the clients did and saw; syn_proxy_faults_check.py asserts them. Every wait is bounded.
"""
import ctypes
import json
import os
import random
import select
import socket
import struct
import sys
import threading
import time
from contextlib import contextmanager

from lab_common import dump, family  # tests/lab/lab_common.py
from syn_proxy import checksum  # tests/lab/syn_proxy.py: RFC 1071's sum

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
U32 = 0xFFFFFFFF

# The lab's addresses (syn_proxy_faults.sh sets them up; keep the two in step).
SERVER4, SERVER6 = "198.18.1.1", "2001:db8:1::1"
SILENT4 = "198.18.1.2"  # in the inside subnet, owned by nobody: a server that never answers
SERVER_MAC, CLIENT_MAC = "02:00:00:00:00:02", "02:00:00:00:01:10"
WARM_SRC = "198.18.1.10"
# Kernel clients (addresses the outside namespace owns), one connection each.
REFUSED_SRCS = ["198.18.1.11", "198.18.1.12", "198.18.1.13", "2001:db8:1::11"]
SLOW_EAGER = ["198.18.1.14", "198.18.1.15"]  # send their request at once
SLOW_PATIENT = ["198.18.1.16", "198.18.1.17"]  # send it once the server timed out
# Raw clients (addresses it does not own; the inside has static neighbour entries for them).
SLOW_RAW = "198.18.1.22"
VANISH_SRC = "198.18.1.21"
ACK_SRCS = ["198.18.1.41", "198.18.1.42", "198.18.1.43", "198.18.1.44"]
STORM_SRCS = [f"198.18.1.{51 + i}" for i in range(10)]

ACK_FLOOD = 2000  # raw ACKs with random numbers
STORM_TABLE = 4  # the storm's proxy_connections_per_core
HELD_PER_FLOW = 4  # kHeldPerFlow (dataplane/core/proxy_flows.h)
RAW_SEGMENTS = 6  # the slow case's raw client sends this many while its connection opens

REQUEST = b"GET / HTTP/1.0\r\nHost: lab\r\n\r\n"
# A SYN's options as Linux sends them, less timestamps: MSS 1460, SACK-permitted, NOP,
# window scale 7, and two NOPs to a 4-byte boundary.
SYN_OPTIONS = bytes([2, 4, 0x05, 0xB4, 4, 2, 1, 3, 3, 7, 1, 1])
CLIENT_OPTIONS = {"mss": 1460, "wscale": 7, "sack_ok": True}


# --- namespaces ------------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)


@contextmanager
def netns(name):
    """This thread in network namespace NAME (/var/run/netns/NAME) for the block: sockets made
    inside stay in it."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        yield
    finally:
        if _libc.setns(home, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back")
        os.close(there)
        os.close(home)


def packet_socket(ns, dev):
    with netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind((dev, 0))
    return s


# --- frames ----------------------------------------------------------------------------------
def mac_bytes(mac):
    return bytes(int(b, 16) for b in mac.split(":"))


def ip_frame(src, dst, proto, l4, src_mac, dst_mac):
    """An Ethernet frame of one IPv4 or IPv6 packet around l4 (its checksum already set)."""
    fam = family(src)
    s, d = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    if fam == socket.AF_INET:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), random.randrange(65536),
                         0x4000, 64, proto, 0, s, d)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        etype = 0x0800
    else:
        ip = struct.pack("!IHBB16s16s", 6 << 28, len(l4), proto, 64, s, d)
        etype = 0x86DD
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", etype) + ip + l4


def pseudo_header(src, dst, proto, length):
    fam = family(src)
    s, d = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    if fam == socket.AF_INET:
        return s + d + struct.pack("!BBH", 0, proto, length)
    return s + d + struct.pack("!I3xB", length, proto)


def tcp_frame(src, dst, sport, dport, seq, ack, flags, options=b"", payload=b"",
              window=64240, src_mac=CLIENT_MAC, dst_mac=SERVER_MAC):
    """An Ethernet frame of one TCP segment, every checksum computed."""
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & U32, ack & U32,
                      (20 + len(options)) // 4 << 4, flags, window, 0, 0) + options + payload
    c = checksum(pseudo_header(src, dst, 6, len(seg)) + seg)
    seg = seg[:16] + struct.pack("!H", c) + seg[18:]
    return ip_frame(src, dst, 6, seg, src_mac, dst_mac)


def udp_frame(src, dst, sport, dport, payload, src_mac, dst_mac):
    dgram = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = checksum(pseudo_header(src, dst, 17, len(dgram)) + dgram) or 0xFFFF
    dgram = dgram[:6] + struct.pack("!H", c) + dgram[8:]
    return ip_frame(src, dst, 17, dgram, src_mac, dst_mac)


def tcp_options(raw):
    """A TCP header's options by kind: mss, wscale, sack_ok, ts."""
    out, i = {}, 0
    while i < len(raw):
        kind = raw[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(raw) or raw[i + 1] < 2:
            break
        body = raw[i + 2:i + raw[i + 1]]
        if kind == 2 and len(body) == 2:
            out["mss"] = struct.unpack("!H", body)[0]
        elif kind == 3 and len(body) == 1:
            out["wscale"] = body[0]
        elif kind == 4:
            out["sack_ok"] = True
        elif kind == 8:
            out["ts"] = True
        i += raw[i + 1]
    return out


def parse_tcp(frame):
    """The TCP segment of an untagged IPv4 or IPv6 frame (no extension headers) as a dict, or
    None."""
    if len(frame) < 14:
        return None
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype == 0x0800 and len(frame) >= 34 and frame[23] == 6:
        fam, l4 = socket.AF_INET, 14 + (frame[14] & 15) * 4
        src, dst = frame[26:30], frame[30:34]
        end = 14 + struct.unpack("!H", frame[16:18])[0]
    elif etype == 0x86DD and len(frame) >= 54 and frame[20] == 6:
        fam, l4 = socket.AF_INET6, 54
        src, dst = frame[22:38], frame[38:54]
        end = 54 + struct.unpack("!H", frame[18:20])[0]
    else:
        return None
    if len(frame) < l4 + 20:
        return None
    sport, dport, seq, ack, off, flags, window = struct.unpack("!HHIIBBH", frame[l4:l4 + 16])
    hlen = (off >> 4) * 4
    return {"src": socket.inet_ntop(fam, src), "dst": socket.inet_ntop(fam, dst),
            "sport": sport, "dport": dport, "seq": seq, "ack": ack, "flags": flags,
            "window": window, "options": tcp_options(frame[l4 + 20:l4 + hlen]),
            "len": max(0, min(end, len(frame)) - l4 - hlen)}


def flag_names(flags):
    return "".join(n for bit, n in ((SYN, "S"), (ACK, "A"), (FIN, "F"), (RST, "R"), (PSH, "P"))
                   if flags & bit)


def describe(s):
    return (f"{s['src']}:{s['sport']} > {s['dst']}:{s['dport']} {flag_names(s['flags'])} "
            f"seq={s['seq']} ack={s['ack']} len={s['len']}")


# --- the veths: frames seen and sent, written to a pcap ---------------------------------------
class Tap:
    """An AF_PACKET socket on DEV in namespace NS: every frame through DEV (both ways) written
    to PCAP, its TCP segments kept for wait() and select() with 'way' 'in' (arrived on DEV) or
    'out' (sent by this namespace: a kernel's or send()'s); send() puts a frame on DEV."""

    def __init__(self, ns, dev, pcap):
        self.sock = packet_socket(ns, dev)
        self.segs = []
        self.cond = threading.Condition()
        self.stopping = False
        self.idle_reads = 0  # reads that found nothing waiting (settle())
        self.pcap = open(pcap, "wb")
        self.pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.stopping:
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if not r:
                with self.cond:
                    self.idle_reads += 1
                    self.cond.notify_all()
                continue
            frame, addr = self.sock.recvfrom(65535)
            sec, usec = divmod(time.time_ns() // 1000, 1_000_000)
            self.pcap.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
            seg = parse_tcp(frame)
            if seg is None:
                continue
            seg["way"] = "out" if addr[2] == socket.PACKET_OUTGOING else "in"
            with self.cond:
                self.segs.append(seg)
                self.cond.notify_all()

    def send(self, frame):
        self.sock.send(frame)

    def mark(self):
        with self.cond:
            return len(self.segs)

    def wait(self, pred, timeout, since=0):
        """The first segment from index since on that pred accepts, waiting up to timeout s."""
        deadline = time.monotonic() + timeout
        i = since
        with self.cond:
            while True:
                while i < len(self.segs):
                    if pred(self.segs[i]):
                        return self.segs[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def settle(self, timeout=5):
        """Waits (bounded) until every frame that reached the socket before the call is read:
        a socket may see its segment before the tap's thread has read the frame. Two reads
        that found nothing waiting, both begun after the call."""
        deadline = time.monotonic() + timeout
        with self.cond:
            start = self.idle_reads
            while self.idle_reads < start + 2 and time.monotonic() < deadline:
                self.cond.wait(max(0.0, deadline - time.monotonic()))

    def select(self, pred):
        """The segments pred accepts among those read so far (settle() first)."""
        with self.cond:
            return [s for s in self.segs if pred(s)]

    def close(self):
        self.stopping = True
        self.thread.join(2)
        self.pcap.close()
        self.sock.close()


def to_client(addr, port):
    """Segments floodgate (or the server) sent to a client, as they arrive outside."""
    return lambda s: s["way"] == "in" and s["dst"] == addr and s["dport"] == port


def from_client(addr, port):
    return lambda s: s["src"] == addr and s["sport"] == port


def is_syn(s):
    return s["flags"] & (SYN | ACK | RST) == SYN


def is_synack(s):
    return s["flags"] & (SYN | ACK | RST) == SYN | ACK


# --- floodgate's stats -----------------------------------------------------------------------
def read_stats(path):
    """The stats file, or None while it is missing or being rewritten."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def value(stats, key):
    """A counter by dotted path: 'proxy_opened', 'answers_by_kind.syn_proxy', 'rules.0.verified'."""
    v = stats
    for part in key.split("."):
        v = v[int(part)] if isinstance(v, list) else v.get(part)
        if v is None:
            return None
    return v


SNAP_KEYS = ["packets", "passed", "dropped", "answered", "syn_auth_replies", "cookie_failed",
             "proxy_opened", "proxy_established", "proxy_server_refused", "proxy_server_timeout",
             "proxy_table_full", "proxy_cookie_failed", "proxy_held", "proxy_held_dropped",
             "proxy_translated", "proxy_untranslatable", "proxy_closed", "proxy_expired",
             "proxy_connections", "answers_by_kind.syn_proxy", "answers_by_kind.syn_cookie",
             "answers_by_kind.tcp_rst", "rules.0.answered", "rules.0.verified"]


def snapshot(stats):
    return {k: value(stats, k) for k in SNAP_KEYS} if stats else None


def wait_stats(path, want, timeout):
    """Polls the stats file (written every 0.2 s) until each key of want has its value, at most
    timeout s: whether it did, after how long, and the last reading."""
    t0 = time.monotonic()
    last = None
    while True:
        s = read_stats(path)
        if s is not None:
            last = s
            if all(value(s, k) == v for k, v in want.items()):
                return {"ok": True, "after_s": round(time.monotonic() - t0, 3), "want": want,
                        "stats": snapshot(s)}
        if time.monotonic() - t0 >= timeout:
            return {"ok": False, "after_s": round(time.monotonic() - t0, 3), "want": want,
                    "stats": snapshot(last)}
        time.sleep(0.05)


# --- the server and the path -----------------------------------------------------------------
def serve(seconds, addrs):
    """Listens on port 80 of each address, accepts and holds every connection (reading and
    discarding what comes) until its peer closes it or seconds have passed."""
    listeners = []
    for a in addrs:
        s = socket.socket(family(a), socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, 80))
        s.listen(128)
        listeners.append(s)
    print("ready", flush=True)
    conns, accepted = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r, _, _ = select.select(listeners + conns, [], [], 0.5)
        for s in r:
            if s in listeners:
                c, peer = s.accept()
                accepted += 1
                print(f"accepted {peer[0]} {peer[1]}", flush=True)
                conns.append(c)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                conns.remove(s)
                s.close()
    print(f"served {accepted}", flush=True)


def warm(out_ns, out_dev, in_ns, in_dev):
    """Bounded wait (15 s) until floodgate forwards both ways: a raw UDP datagram to port 9
    (under no rule) from the outside seen on the inside veth end, and one the other way (each
    kernel answers its datagram with an ICMP port unreachable, which floodgate passes too)."""
    socks = {out_ns: packet_socket(out_ns, out_dev), in_ns: packet_socket(in_ns, in_dev)}
    deadline = time.monotonic() + 15
    for tx, rx, src, dst, smac, dmac in (
            (out_ns, in_ns, WARM_SRC, SERVER4, CLIENT_MAC, SERVER_MAC),
            (in_ns, out_ns, SERVER4, WARM_SRC, SERVER_MAC, CLIENT_MAC)):
        tries = 0
        while True:
            tries += 1
            marker = f"warm {os.getpid()} {tries}".encode()
            socks[tx].send(udp_frame(src, dst, 9, 9, marker, smac, dmac))
            got = False
            until = min(deadline, time.monotonic() + 0.2)
            while not got and time.monotonic() < until:
                r, _, _ = select.select([socks[rx]], [], [], max(0.0, until - time.monotonic()))
                if r:
                    frame, addr = socks[rx].recvfrom(65535)
                    got = addr[2] != socket.PACKET_OUTGOING and frame.endswith(marker)
            if got:
                print(f"{tx} -> {rx}: through after {tries} datagram(s)")
                break
            if time.monotonic() >= deadline:
                sys.exit(f"warm: nothing through floodgate from {tx} to {rx} in 15 s")
    for s in socks.values():
        s.close()


# --- the cases -------------------------------------------------------------------------------
class Case:
    def __init__(self, name, work, out_ns, out_dev, in_ns, in_dev):
        self.name, self.dir = name, os.path.join(work, name)
        self.out_ns = out_ns
        self.stats = os.path.join(self.dir, "stats.json")
        self.out = Tap(out_ns, out_dev, os.path.join(self.dir, "out.pcap"))
        self.inside = Tap(in_ns, in_dev, os.path.join(self.dir, "in.pcap"))
        self.result = {"case": name}

    def settle(self):
        self.out.settle()
        self.inside.settle()

    def close(self):
        self.settle()
        self.out.close()
        self.inside.close()
        dump(os.path.join(self.dir, "result.json"), self.result)

    def connect(self, src, dst, port):
        """A kernel client's connection (its handshake is with floodgate): (socket, its port,
        connect()'s error or None)."""
        with netns(self.out_ns):
            s = socket.socket(family(src), socket.SOCK_STREAM)
        s.bind((src, 0))
        s.settimeout(3)
        err = None
        try:
            s.connect((dst, port))
        except OSError as e:
            err = f"{type(e).__name__}: {e}"
        return s, s.getsockname()[1], err

    def kernel_view(self, src, port):
        """What a kernel client sent and got: floodgate's SYN-ACK, whether the client ACKed it,
        its data segments, the RSTs it got; at the server, floodgate's SYN for it, what else of
        it arrived, and the server's RSTs."""
        got = self.out.select(to_client(src, port))
        sent = self.out.select(lambda s: s["way"] == "out" and from_client(src, port)(s))
        synacks = [s for s in got if is_synack(s)]
        cookie = synacks[0]["seq"] if synacks else None
        inside = self.inside.select(lambda s: s["way"] == "in" and from_client(src, port)(s))
        back = self.inside.select(lambda s: s["way"] == "out" and s["dst"] == src
                                  and s["dport"] == port)
        return {
            "port": port, "cookie": cookie, "synacks": len(synacks),
            "handshake_acked": cookie is not None and any(
                s["flags"] & (SYN | ACK | RST) == ACK and s["ack"] == (cookie + 1) & U32
                for s in sent),
            "data_segments": sum(1 for s in sent if s["len"] > 0),
            "rst_seqs": [s["seq"] for s in got if s["flags"] & RST],
            "to_client": [describe(s) for s in got],
            "server_syns": sum(1 for s in inside if is_syn(s)),
            "at_server_other": sum(1 for s in inside if not s["flags"] & SYN),
            "server_rsts": sum(1 for s in back if s["flags"] & RST)}


def wait_errors(socks, timeout):
    """Reads each socket until it errors or closes, timeout s in all: {key: outcome}."""
    outcome = {}
    deadline = time.monotonic() + timeout
    for s in socks.values():
        s.setblocking(False)
    while len(outcome) < len(socks) and time.monotonic() < deadline:
        live = {s: k for k, s in socks.items() if k not in outcome}
        r, _, _ = select.select(list(live), [], [], max(0.0, deadline - time.monotonic()))
        for s in r:
            try:
                if not s.recv(4096):
                    outcome[live[s]] = {"outcome": "eof"}
            except BlockingIOError:
                continue
            except ConnectionResetError as e:
                outcome[live[s]] = {"outcome": "reset", "error": str(e)}
            except OSError as e:
                outcome[live[s]] = {"outcome": type(e).__name__, "error": str(e)}
            outcome.get(live[s], {})["t"] = time.monotonic()
    for k in socks:
        outcome.setdefault(k, {"outcome": "no answer", "t": time.monotonic()})
    return outcome


def case_refused(case):
    """Kernel clients connect to port 81 of the server, where nothing listens: floodgate
    completes their handshakes, the server answers floodgate's SYN with a RST, which reaches
    each client as its connection's RST. The clients send nothing; the failed connections
    expire one server timeout (1 s) later."""
    conns = {src: case.connect(src, SERVER6 if ":" in src else SERVER4, 81)
             for src in REFUSED_SRCS}
    # The RST may beat the connecting thread back to user space: then connect() itself
    # reports the reset (the socket was ESTABLISHED for a moment; the capture has its ACK).
    outcome = wait_errors({src: c[0] for src, c in conns.items() if c[2] is None}, 10)
    case.settle()
    clients = {}
    for src, (s, port, err) in conns.items():
        v = case.kernel_view(src, port)
        if err is None:
            v.update(outcome[src], at="read")
        else:
            v.update(outcome="reset" if err.startswith("ConnectionResetError") else err,
                     error=err, at="connect")
        v.pop("t", None)
        clients[src] = v
        s.close()
    n = len(REFUSED_SRCS)
    case.result.update(attempts=n, clients=clients)
    case.result["refused"] = wait_stats(case.stats, {"proxy_server_refused": n}, 5)
    # A refused connection stays failed one server timeout, then the sweep ends it.
    case.result["expired"] = wait_stats(case.stats,
                                        {"proxy_expired": n, "proxy_connections": 0}, 10)


def raw_handshake(case, src, sport, dst=SERVER4, ack=True, timeout=3):
    """A raw client's SYN, the SYN-ACK (floodgate's cookie, its challenge, or the server's),
    and unless ack is False or it was challenged, the handshake's ACK. What it saw."""
    isn = random.randrange(1 << 32)
    since = case.out.mark()
    case.out.send(tcp_frame(src, dst, sport, 80, isn, 0, SYN, SYN_OPTIONS))
    sa = case.out.wait(lambda s: to_client(src, sport)(s) and is_synack(s), timeout, since)
    got = {"src": src, "sport": sport, "isn": isn, "synack": sa is not None}
    if sa is None:
        return got
    got.update(synack_seq=sa["seq"], synack_ack=sa["ack"], synack_options=sa["options"],
               synack_window=sa["window"], challenge=sa["ack"] != (isn + 1) & U32)
    if ack and not got["challenge"]:
        send_ack(case, got, dst)
    return got


def send_ack(case, hs, dst=SERVER4):
    case.out.send(tcp_frame(hs["src"], dst, hs["sport"], 80, hs["isn"] + 1, hs["synack_seq"] + 1,
                            ACK))
    hs["acked"] = True


def case_slow(case):
    """Clients of a server that never answers (198.18.1.2: nothing owns it; a static neighbour
    entry outside so that floodgate's SYN to it is sent): floodgate completes their handshakes,
    the connections fail after proxy_server_timeout (1 s), and each client's next segment gets
    a RST. Two kernel clients send their request at once (held; their kernel retransmits it,
    held again, 4 at most, until the failure frees them; the retransmission after it gets the
    RST), two only once the stats show the timeouts; a raw client sends RAW_SEGMENTS segments
    at once (4 held, the rest dropped: proxy_held_dropped) and one more after the timeouts."""
    conns = {src: case.connect(src, SILENT4, 80) for src in SLOW_EAGER + SLOW_PATIENT}
    sent = {}
    for src in SLOW_EAGER:
        if conns[src][2] is None:
            conns[src][0].sendall(REQUEST)
            sent[src] = time.monotonic()
    raw = raw_handshake(case, SLOW_RAW, 40022, dst=SILENT4)
    if raw.get("acked"):
        for k in range(RAW_SEGMENTS):
            case.out.send(tcp_frame(SLOW_RAW, SILENT4, 40022, 80, raw["isn"] + 1 + 10 * k,
                                    raw["synack_seq"] + 1, ACK | PSH, payload=b"0123456789"))
    n = len(conns) + 1
    case.result["timed_out"] = wait_stats(case.stats, {"proxy_server_timeout": n}, 10)
    for src in SLOW_PATIENT:
        if conns[src][2] is None:
            conns[src][0].sendall(REQUEST)
            sent[src] = time.monotonic()
    if raw.get("acked"):
        since = case.out.mark()
        case.out.send(tcp_frame(SLOW_RAW, SILENT4, 40022, 80, raw["isn"] + 1 + 10 * RAW_SEGMENTS,
                                raw["synack_seq"] + 1, ACK | PSH, payload=b"0123456789"))
        rst = case.out.wait(lambda s: to_client(SLOW_RAW, 40022)(s) and s["flags"] & RST, 3,
                            since)
        raw["rst_seq"] = rst["seq"] if rst else None
    outcome = wait_errors({src: c[0] for src, c in conns.items() if c[2] is None}, 10)
    case.settle()
    clients = {}
    for src, (s, port, err) in conns.items():
        v = case.kernel_view(src, port)
        v.update(eager=src in SLOW_EAGER, connect_error=err, **outcome.get(src, {}))
        if src in sent:
            v["reset_after_send_s"] = round(v.pop("t") - sent[src], 3)
        clients[src] = v
        s.close()
    inside = case.inside.select(lambda s: s["way"] == "in" and from_client(SLOW_RAW, 40022)(s))
    raw.update(server_syns=sum(1 for s in inside if is_syn(s)),
               at_server_other=sum(1 for s in inside if not s["flags"] & SYN),
               rsts=sum(1 for s in case.out.select(to_client(SLOW_RAW, 40022))
                        if s["flags"] & RST))
    case.result.update(attempts=n, clients=clients, raw=raw)
    case.result["ended"] = wait_stats(case.stats, {"proxy_connections": 0}, 5)


def case_vanish(case):
    """A raw client's handshake with floodgate (SYN, SYN-ACK, ACK), then nothing: floodgate
    opens the connection to the server (SYN with the client's ISN and options, the server's
    SYN-ACK answered with the ACK), then ends it after proxy_idle_timeout (1 s)."""
    sport = 40021
    hs = raw_handshake(case, VANISH_SRC, sport)
    case.result["handshake"] = hs
    case.result["open"] = wait_stats(case.stats,
                                     {"proxy_established": 1, "proxy_connections": 1}, 5)
    case.result["expired"] = wait_stats(case.stats,
                                        {"proxy_expired": 1, "proxy_connections": 0}, 10)
    case.settle()
    mine = case.inside.select(lambda s: from_client(VANISH_SRC, sport)(s)
                              or (s["dst"] == VANISH_SRC and s["dport"] == sport))
    case.result["inside"] = [describe(s) for s in mine]
    syns = [s for s in mine if s["way"] == "in" and is_syn(s)]
    case.result["server_syns"] = [{"seq": s["seq"], "options": s["options"]} for s in syns]
    case.result["server_synacks"] = sum(1 for s in mine if s["way"] == "out" and is_synack(s))
    case.result["server_acks"] = [{"seq": s["seq"], "len": s["len"]} for s in mine
                                  if s["way"] == "in" and s["flags"] & (SYN | ACK | RST) == ACK]
    case.result["to_client_after_synack"] = [
        describe(s) for s in case.out.select(to_client(VANISH_SRC, sport)) if not is_synack(s)]


def case_acks(case):
    """ACK_FLOOD raw ACKs with random sequence and acknowledgment numbers, from four sources
    to port 80: none is a cookie (a random one passes with probability 2^-24 per time slot
    tried, two slots: 2.4e-4 for the whole flood), so each is counted in proxy_cookie_failed
    and passed to the server unchanged; nothing is stored, nothing answered."""
    rng = random.Random(20261205)
    sent = []
    for i in range(ACK_FLOOD):
        src = ACK_SRCS[i % len(ACK_SRCS)]
        sent.append((src, rng.randrange(1024, 65536), rng.randrange(1 << 32),
                     rng.randrange(1 << 32)))
    frames = [tcp_frame(src, SERVER4, sport, 80, seq, ack, ACK) for src, sport, seq, ack in sent]
    t0 = time.monotonic()
    # 20 frames every 2 ms or more (10,000/s at most): far below what floodgate's one worker
    # reads, so that no receive ring overflows while the lab shares its CPUs.
    for i in range(0, len(frames), 20):
        for f in frames[i:i + 20]:
            case.out.send(f)
        time.sleep(0.002)
    case.result.update(sent=len(sent), send_s=round(time.monotonic() - t0, 3))
    case.result["counted"] = wait_stats(case.stats, {"proxy_cookie_failed": len(sent)}, 10)
    case.settle()
    at_server = case.inside.select(lambda s: s["way"] == "in" and s["src"] in ACK_SRCS)
    want = set(sent)
    case.result["at_server"] = len(at_server)
    case.result["at_server_unchanged"] = sum(
        1 for s in at_server
        if s["dport"] == 80 and (s["src"], s["sport"], s["seq"], s["ack"]) in want)
    case.result["at_server_flags"] = sorted({flag_names(s["flags"]) for s in at_server})


def storm_port(i):
    return 41000 + i


def case_storm(case):
    """proxy_connections_per_core 4, ten raw clients c1-c10 from ten sources: c1-c3 SYN,
    SYN-ACK, ACK, one after another; c4 and c5 both SYN (both answered with cookies: three
    connections stored), then both ACK: c4's opens the fourth connection, c5's finds no room
    and is dropped. c6-c10, one after another: their SYNs find the table full and get
    syn-auth's challenge, which each answers with the RST its kernel would send (verified: a
    bounded wait for syn_auth_replies before going on), then SYNs again from another port,
    straight to the server now, and completes that handshake with the server itself. Each
    client waits for its answer before the next one's SYN, and floodgate reads one queue in
    order, so the counts are exact."""
    hs = [raw_handshake(case, STORM_SRCS[i], storm_port(i)) for i in range(3)]
    c4 = raw_handshake(case, STORM_SRCS[3], storm_port(3), ack=False)
    c5 = raw_handshake(case, STORM_SRCS[4], storm_port(4), ack=False)
    for c in (c4, c5):
        if c["synack"] and not c["challenge"]:
            send_ack(case, c)
    hs += [c4, c5]
    case.result["four_open"] = wait_stats(case.stats,
                                          {"proxy_established": 4, "proxy_table_full": 1}, 5)
    for i in range(5, 10):
        src = STORM_SRCS[i]
        c = raw_handshake(case, src, storm_port(i))
        if c["synack"] and c["challenge"]:
            # As a TCP in SYN-SENT answers an unexpected ACK: <SEQ=SEG.ACK><CTL=RST>.
            case.out.send(tcp_frame(src, SERVER4, storm_port(i), 80, c["synack_ack"], 0, RST))
            c["verified"] = wait_stats(case.stats, {"syn_auth_replies": i - 4}, 5)["ok"]
            again = raw_handshake(case, src, storm_port(i) + 100)
            # The SYN-ACK was the server's own: its SYN reached the server as sent.
            again["syn_at_server"] = case.inside.wait(
                lambda s, src=src, again=again: s["way"] == "in" and is_syn(s)
                and from_client(src, again["sport"])(s) and s["seq"] == again["isn"], 2) is not None
            c["retry"] = again
        hs.append(c)
    case.result["clients"] = hs
    case.result["after"] = wait_stats(case.stats,
                                      {"proxy_cookie_failed": 5, "proxy_connections": 4}, 5)
    case.settle()
    case.result["server_syns_from_floodgate"] = [
        sum(1 for s in case.inside.select(lambda s, i=i: s["way"] == "in" and is_syn(s)
                                          and from_client(STORM_SRCS[i], storm_port(i))(s)))
        for i in range(len(STORM_SRCS))]


CASES = {"refused": case_refused, "slow": case_slow, "vanish": case_vanish, "acks": case_acks,
         "storm": case_storm}


def run(name, work, out_ns, out_dev, in_ns, in_dev):
    case = Case(name, work, out_ns, out_dev, in_ns, in_dev)
    try:
        CASES[name](case)
    finally:
        case.close()


def main(a):
    if len(a) >= 3 and a[0] == "serve":
        serve(float(a[1]), a[2:])
    elif len(a) == 5 and a[0] == "warm":
        warm(*a[1:])
    elif len(a) == 7 and a[0] == "run" and a[1] in CASES:
        run(*a[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
