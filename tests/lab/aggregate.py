#!/usr/bin/env python3
"""The aggregate lab's small tools (tests/lab/aggregate.sh runs each inside a namespace).

  aggregate.py serve SECONDS ADDR...      HTTP/1.1 keep-alive web server on port 80 of each ADDR
  aggregate.py first IFACE OUT.json SECONDS
                                          the kernel's receive time of the first spoofed SYN on
                                          IFACE (floodgate's outside veth), then exits
  aggregate.py watch IFACE OUT.json SECONDS
                                          counts the TCP segments to port 80 arriving on IFACE
                                          (the server's veth), per source, with the receive
                                          times of the first and last spoofed SYN; SIGUSR1: stop
                                          once no spoofed SYN came for 0.5 s (5 s at most)
  aggregate.py clients OUT.json RATE SECONDS SRC,DST...
                                          one keep-alive HTTP/1.1 connection per SRC,DST pair,
                                          one request on each, "ready"; then, on SIGUSR1, RATE
                                          requests a second on each connection for SECONDS
  aggregate.py newclient SRC DST TIMEOUT OUT.json
                                          one connection attempt from a source the server
                                          never answered, and a request if it connects

Receive times are the kernel's (SO_TIMESTAMPNS, CLOCK_REALTIME), the same clock in every
namespace. Every loop is bounded in packets and in time. Addresses are the lab's, in
198.18.0.0/15 and 2001:db8::/32.
"""
import http.client
import http.server
import ipaddress
import signal
import socket
import socketserver
import struct
import sys
import threading
import time

from lab_common import dump, family  # beside this file

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_TIMESTAMPNS = 35
# The spoofed flood (perf/floodgate_gen.cpp syn-flood).
SPOOFED = [ipaddress.ip_network("198.19.0.0/20"), ipaddress.ip_network("2001:db8:66::/48")]
BODY = b"floodgate aggregate lab\n"


def spoofed(src):
    a = ipaddress.ip_address(src)
    return any(a.version == n.version and a in n for n in SPOOFED)


def serve(seconds, addrs):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one connection for many requests

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def server_bind(self):  # HTTPServer's would look its name up in DNS (getfqdn)
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = self.server_address[:2]

    servers = []
    for a in addrs:
        cls = type("Server", (Server,), {"address_family": family(a)})
        s = cls((a, 80), Handler)
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, args=(0.2,), daemon=True).start()
        servers.append(s)
    print("ready", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait(seconds)
    for s in servers:
        s.shutdown()


def packet_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((iface, 0))
    s.settimeout(0.2)
    return s


def receive(s):
    """(frame, kernel receive time in s, incoming) or None on timeout."""
    try:
        frame, anc, _, addr = s.recvmsg(2048, 64)
    except (socket.timeout, InterruptedError):
        return None
    t = None
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            t = sec + nsec / 1e9
    return frame, t if t is not None else time.time(), addr[2] != socket.PACKET_OUTGOING


def tcp_to_80(frame):
    """(source, destination, flags) of a TCP segment to port 80, else None."""
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype == 0x0800 and len(frame) >= 34 and frame[23] == 6:
        l4 = 14 + (frame[14] & 15) * 4
        src = socket.inet_ntop(socket.AF_INET, frame[26:30])
        dst = socket.inet_ntop(socket.AF_INET, frame[30:34])
    elif etype == 0x86DD and len(frame) >= 54 and frame[20] == 6:
        l4 = 54
        src = socket.inet_ntop(socket.AF_INET6, frame[22:38])
        dst = socket.inet_ntop(socket.AF_INET6, frame[38:54])
    else:
        return None
    if len(frame) < l4 + 14 or struct.unpack("!H", frame[l4 + 2:l4 + 4])[0] != 80:
        return None
    return src, dst, frame[l4 + 13]


def dropped(s):
    """Frames the kernel dropped for this socket (its buffer full): PACKET_STATISTICS."""
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return drops


def first(iface, out, seconds):
    s = packet_socket(iface)
    print("ready", flush=True)
    deadline, got = time.monotonic() + seconds, None
    while got is None and time.monotonic() < deadline:
        r = receive(s)
        if r is None or not r[2]:
            continue
        seg = tcp_to_80(r[0])
        if seg and seg[2] & 0x12 == 0x02 and spoofed(seg[0]):
            got = {"source": seg[0], "t": r[1]}
    dump(out, {"first_spoofed_syn": got})
    sys.exit(0 if got else f"first: no spoofed SYN on {iface} in {seconds} s")


def watch(iface, out, seconds):
    """Per destination: the spoofed SYNs and the receive time of the last; per source (and
    destination) of the others: SYNs, other segments, the receive time of the last."""
    stop, drain = [], []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGUSR1, lambda *_: drain.append(time.monotonic()))
    s = packet_socket(iface)
    flood, sources, frames = {}, {}, 0
    last_spoofed = time.monotonic()
    deadline = time.monotonic() + seconds
    print("ready", flush=True)
    while not stop and time.monotonic() < deadline:
        if drain and (time.monotonic() - last_spoofed > 0.5 or time.monotonic() - drain[0] > 5):
            break
        r = receive(s)
        if r is None or not r[2]:
            continue
        frames += 1
        seg = tcp_to_80(r[0])
        if seg is None:
            continue
        src, dst, flags = seg
        syn = flags & 0x12 == 0x02  # SYN without ACK
        if spoofed(src):
            f = flood.setdefault(dst, {"syns": 0, "others": 0, "sources": set()})
            f["syns" if syn else "others"] += 1
            f["sources"].add(src)
            f.setdefault("first_t", r[1])
            f["last_t"] = r[1]
            last_spoofed = time.monotonic()
        else:
            c = sources.setdefault(src, {"destination": dst, "syns": 0, "others": 0})
            c["syns" if syn else "others"] += 1
            c["last_t"] = r[1]
    for f in flood.values():
        f["sources"] = len(f["sources"])
    dump(out, {"frames": frames, "socket_dropped": dropped(s), "flood": flood, "sources": sources,
               "drained": bool(drain) and not stop})


def request(conn):
    conn.request("GET", "/", headers={"Host": "lab"})
    resp = conn.getresponse()
    body = resp.read()
    return resp.status == 200 and body == BODY


def clients(out, rate, seconds, pairs):
    # SIGUSR1 is held until sigtimedwait takes it: one sent before that is not lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    conns, results = [], {}
    for src, dst in pairs:
        c = http.client.HTTPConnection(dst, 80, timeout=10, source_address=(src, 0))
        c.connect()
        port = c.sock.getsockname()[1]
        ok = request(c)
        conns.append((src, c, port))
        results[src] = {"destination": dst, "local_port": port, "before": ok, "requests": []}
    print("ready", flush=True)
    if signal.sigtimedwait({signal.SIGUSR1}, 60) is None:  # the flood is up within a minute
        sys.exit("clients: no SIGUSR1 within 60 s")
    count = int(rate * seconds)
    start = time.monotonic()
    end = start + seconds + 20  # the last request's own timeout and then some

    def run(src, c, port):
        rs = results[src]["requests"]
        for i in range(count):
            due = start + i / rate
            now = time.monotonic()
            if now >= end:
                rs.append({"ok": False, "error": "not sent: the phase's deadline passed"})
                continue
            if due > now:
                time.sleep(due - now)  # pacing, not synchronisation
            t0 = time.monotonic()
            r = {"t": round(t0 - start, 3)}
            try:
                ok = request(c)
                same = c.sock is not None and c.sock.getsockname()[1] == port
                r.update(ok=ok and same, same_connection=same)
            except (OSError, http.client.HTTPException) as e:
                r.update(ok=False, error=f"{type(e).__name__}: {e}")
                c.close()
            r["seconds"] = round(time.monotonic() - t0, 4)
            rs.append(r)

    threads = [threading.Thread(target=run, args=p) for p in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(end - time.monotonic(), 0) + 1)
    for _, c, _ in conns:
        c.close()
    dump(out, {"rate": rate, "seconds": seconds, "count": count,
               "took": round(time.monotonic() - start, 3), "clients": results})


def newclient(src, dst, timeout, out):
    c = socket.socket(family(dst), socket.SOCK_STREAM)
    c.bind((src, 0))
    c.settimeout(timeout)
    t0 = time.monotonic()
    r = {"source": src, "destination": dst, "timeout": timeout}
    try:
        c.connect((dst, 80))
        r["connected_s"] = round(time.monotonic() - t0, 4)
        c.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
        data = b""
        while len(data) < 4096 and time.monotonic() - t0 < 2 * timeout:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        r["result"] = "answered" if data.startswith(b"HTTP/1.1 200") and data.endswith(BODY) \
            else "connected, no answer"
    except socket.timeout:
        r["result"] = "timeout"
    except OSError as e:
        r["result"] = f"{type(e).__name__}: {e}"
    r["seconds"] = round(time.monotonic() - t0, 4)
    c.close()
    dump(out, r)


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "serve":
        serve(float(a[1]), a[2:])
    elif len(a) == 4 and a[0] == "first":
        first(a[1], a[2], float(a[3]))
    elif len(a) == 4 and a[0] == "watch":
        watch(a[1], a[2], float(a[3]))
    elif len(a) >= 5 and a[0] == "clients":
        clients(a[1], float(a[2]), float(a[3]), [tuple(p.split(",")) for p in a[4:]])
    elif len(a) == 5 and a[0] == "newclient":
        newclient(a[1], a[2], float(a[3]), a[4])
    else:
        sys.exit(__doc__)
