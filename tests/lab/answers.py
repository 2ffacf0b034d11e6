#!/usr/bin/env python3
"""The answers lab's small tools (tests/lab/answers.sh runs each inside a namespace).

  answers.py offload-off DEV...            software checksums and segmentation on DEV
  answers.py syns IFACE OUT.json SECONDS   counts the TCP SYNs (no ACK) arriving, per source
  answers.py counters OUT.json             the namespace's TCP counters (/proc/net/snmp, netstat)
  answers.py drops OUT.json DEV...         the devices' packet and drop counters, and the CPUs'
                                           backlog drops (/proc/net/softnet_stat)
  answers.py warm SRC DST PORT             one TCP connection (resolves ARP or ND on the way)
  answers.py serve9 SECONDS ADDR...        port 9 on each ADDR: TCP accepts and holds, UDP echoes
  answers.py dnsflood SRC DST RATE SECONDS OUT.json [DOMAIN]
                                           DNS queries from SRC at RATE/s for SECONDS or until
                                           SIGTERM; counts the answers, truncated (TC=1) or not
  answers.py tcp9 SRC DST COUNT OUT.json   COUNT connects to DST port 9, each classified
  answers.py udp9 SRC DST COUNT OUT.json   COUNT datagrams to DST port 9 on a connected socket,
                                           each classified, and the ICMP errors that came back

Every loop is bounded in packets and in time. Addresses are the lab's, in 198.18.0.0/15 and
2001:db8::/32.
"""
import ctypes
import errno
import fcntl
import select
import signal
import socket
import struct
import sys
import time

from lab_common import dump, family  # beside this file

ETH_P_ALL = 0x0003


def offload_off(devs):
    """No checksum offload and no TSO/GSO: DPDK's net_af_packet (22.11) forwards frames as the
    kernel hands them over, so a frame whose checksum the sender left to "hardware"
    (CHECKSUM_PARTIAL on a veth) would reach the other side with a wrong one, and a 64 KB GSO
    frame would not fit its ring. The legacy ETHTOOL_S* ioctls, as there is no ethtool here."""
    siocethtool = 0x8946
    # ETHTOOL_STXCSUM, SSG, STSO, SGSO, SGRO
    commands = [0x17, 0x19, 0x1F, 0x24, 0x2C]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for dev in devs:
        for cmd in commands:
            value = ctypes.create_string_buffer(struct.pack("II", cmd, 0))
            ifreq = struct.pack("16sP", dev.encode(), ctypes.addressof(value)).ljust(40, b"\0")
            fcntl.ioctl(s, siocethtool, ifreq)


def syns(iface, out, seconds):
    """Counts SYN-without-ACK segments by source address until SIGTERM or SECONDS."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.bind((iface, 0))
    s.settimeout(0.2)
    counts, frames, deadline = {}, 0, time.monotonic() + seconds
    print("ready", flush=True)
    while not stop and time.monotonic() < deadline:
        try:
            frame, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        frames += 1
        etype = struct.unpack("!H", frame[12:14])[0]
        if etype == 0x0800 and len(frame) >= 34 and frame[23] == 6:
            ihl = (frame[14] & 15) * 4
            l4, src = 14 + ihl, socket.inet_ntop(socket.AF_INET, frame[26:30])
        elif etype == 0x86DD and len(frame) >= 54 and frame[20] == 6:
            l4, src = 54, socket.inet_ntop(socket.AF_INET6, frame[22:38])
        else:
            continue
        if len(frame) >= l4 + 14 and frame[l4 + 13] & 0x12 == 0x02:
            counts[src] = counts.get(src, 0) + 1
    dump(out, {"frames": frames, "syns": counts})


def counters(out):
    """TCP counters of this namespace, by nstat's names (Tcp + TcpExt fields)."""
    got = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        with open(path) as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            _, values = values.split(":", 1)
            if prefix in ("Tcp", "TcpExt"):
                for n, v in zip(names.split(), values.split()):
                    got[prefix + n] = int(v)
    dump(out, got)


def drops(out, devs):
    got = {}
    for dev in devs:
        got[dev] = {}
        for c in ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped"):
            with open(f"/sys/class/net/{dev}/statistics/{c}") as f:
                got[dev][c] = int(f.read())
    with open("/proc/net/softnet_stat") as f:  # per CPU: processed, dropped, ... (hex)
        got["softnet_dropped"] = sum(int(line.split()[1], 16) for line in f)
    dump(out, got)


def warm(src, dst, port):
    deadline = time.monotonic() + 10
    while True:
        c = socket.socket(family(dst), socket.SOCK_STREAM)
        c.settimeout(2)
        c.bind((src, 0))
        try:
            c.connect((dst, port))
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                sys.exit(f"warm: {src} -> {dst} port {port}: {e}")
            time.sleep(0.2)
        finally:
            c.close()


def serve9(seconds, addrs):
    """TCP: accepts and holds each connection until its peer closes it (5 s at most), so that
    a client's connect() never races a FIN and what floodgate does to it; UDP: echoes."""
    listeners, conns = [], {}  # conns: socket -> when to give up on it
    for a in addrs:
        t = socket.socket(family(a), socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind((a, 9))
        t.listen(64)
        u = socket.socket(family(a), socket.SOCK_DGRAM)
        u.bind((a, 9))
        listeners += [t, u]
    print("ready", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select(listeners + list(conns), [], [], 0.5)
        now = time.monotonic()
        for s in ready:
            try:
                if s in conns:
                    if not s.recv(2048):
                        raise OSError("closed")
                elif s.type == socket.SOCK_STREAM:
                    conn, _ = s.accept()
                    conns[conn] = now + 5
                else:
                    data, peer = s.recvfrom(2048)
                    s.sendto(data, peer)
            except OSError:
                if s in conns:
                    del conns[s]
                    s.close()
        for c in [c for c, until in conns.items() if until < now]:
            del conns[c]
            c.close()


def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)  # RD, one question
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)  # A, IN


def dnsflood(src, dst, rate, seconds, out, domain="flood.lab.test"):
    """Queries at RATE until SIGTERM (or SECONDS), then the answers still on their way: a new
    name under DOMAIN each time (q0.DOMAIN, q1.DOMAIN, ...), as a water-torture flood asks."""
    stopped = False

    def stop(*_):
        nonlocal stopped
        stopped = True
    signal.signal(signal.SIGTERM, stop)
    s = socket.socket(family(dst), socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.connect((dst, 53))
    s.setblocking(False)
    sent, answers, truncated, errors = 0, 0, 0, 0
    start = time.monotonic()
    end = start + seconds
    total = int(rate * seconds)

    def drain():
        nonlocal answers, truncated, errors
        while True:
            try:
                msg = s.recv(2048)
            except BlockingIOError:
                return
            except OSError:
                errors += 1
                continue
            if len(msg) >= 4 and msg[2] & 0x80:  # QR: an answer
                answers += 1
                truncated += bool(msg[2] & 0x02)  # TC

    while not stopped and sent < total and time.monotonic() < end + 1:
        due = start + sent / rate
        now = time.monotonic()
        if due > now:
            select.select([s], [], [], due - now)
            drain()
            continue
        try:
            s.send(dns_query(sent & 0xFFFF, f"q{sent}.{domain}"))
        except OSError:
            errors += 1
        sent += 1
        if sent == 20:  # well past any burst the lab's dns rule allows: a dig may start now
            print("over the limit", flush=True)
    linger = time.monotonic() + 0.5  # answers still on their way
    while time.monotonic() < linger:
        select.select([s], [], [], 0.1)
        drain()
    dump(out, {"source": src, "sent": sent, "seconds": round(time.monotonic() - start, 3),
               "answers": answers, "truncated": truncated, "errors": errors})


def tcp9(src, dst, count, out):
    """Connects COUNT times, 50 ms apart, each within 3 s: connected, refused or timeout."""
    results = []
    for _ in range(count):
        c = socket.socket(family(dst), socket.SOCK_STREAM)
        c.settimeout(3)
        c.bind((src, 0))
        t0 = time.monotonic()
        try:
            c.connect((dst, 9))
            result = "connected"
        except ConnectionRefusedError:
            result = "refused"
        except socket.timeout:
            result = "timeout"
        except OSError as e:
            result = errno.errorcode.get(e.errno, str(e.errno))
        results.append({"result": result, "seconds": round(time.monotonic() - t0, 4)})
        # Closed with a RST (linger 0): one packet, so the rule's budget goes to the SYNs.
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        time.sleep(0.05)
    dump(out, {"source": src, "destination": dst, "attempts": results})


def udp9(src, dst, count, out):
    """Sends COUNT 100-byte datagrams on a connected socket, each followed by a 0.5 s wait for
    its echo; classifies each (echo, an errno from an ICMP error, or timeout) and records the
    ICMP errors a raw socket saw: type, code, who sent it and the quoted destination port.
    100 bytes, so that an ICMP error quoting the datagram's headers is no longer than it."""
    v6 = family(dst) == socket.AF_INET6
    raw = socket.socket(family(dst), socket.SOCK_RAW,
                        socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
    raw.setblocking(False)
    s = socket.socket(family(dst), socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.connect((dst, 9))
    s.settimeout(0.5)
    results = []
    for n in range(count):
        t0 = time.monotonic()
        try:
            s.send(bytes([n]) * 100)
            s.recv(2048)
            result = "echo"
        except socket.timeout:
            result = "timeout"
        except OSError as e:
            result = errno.errorcode.get(e.errno, str(e.errno))
        results.append({"result": result, "seconds": round(time.monotonic() - t0, 4)})
    icmp = []
    while True:
        try:
            msg, peer = raw.recvfrom(2048)
        except BlockingIOError:
            break
        if v6:  # the raw socket gives the ICMPv6 message only
            if msg[0] in (1, 2, 3, 4) and len(msg) >= 8 + 40 + 4:
                icmp.append({"type": msg[0], "code": msg[1], "from": peer[0],
                             "quoted_dst_port": struct.unpack("!H", msg[8 + 40 + 2:8 + 40 + 4])[0]})
        else:  # the IP header, then the ICMP message
            ihl = (msg[0] & 15) * 4
            m = msg[ihl:]
            if m[0] in (3, 11, 12) and len(m) >= 8 + 20 + 4:
                qihl = (m[8] & 15) * 4
                icmp.append({"type": m[0], "code": m[1], "from": peer[0],
                             "quoted_dst_port": struct.unpack("!H", m[8 + qihl + 2:8 + qihl + 4])[0]})
    dump(out, {"source": src, "destination": dst, "sends": results, "icmp": icmp})


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == "offload-off":
        offload_off(a[1:])
    elif len(a) == 4 and a[0] == "syns":
        syns(a[1], a[2], float(a[3]))
    elif len(a) == 2 and a[0] == "counters":
        counters(a[1])
    elif len(a) >= 3 and a[0] == "drops":
        drops(a[1], a[2:])
    elif len(a) == 4 and a[0] == "warm":
        warm(a[1], a[2], int(a[3]))
    elif len(a) >= 3 and a[0] == "serve9":
        serve9(float(a[1]), a[2:])
    elif len(a) in (6, 7) and a[0] == "dnsflood":
        dnsflood(a[1], a[2], float(a[3]), float(a[4]), a[5], *a[6:])
    elif len(a) == 5 and a[0] == "tcp9":
        tcp9(a[1], a[2], int(a[3]), a[4])
    elif len(a) == 5 and a[0] == "udp9":
        udp9(a[1], a[2], int(a[3]), a[4])
    else:
        sys.exit(__doc__)
