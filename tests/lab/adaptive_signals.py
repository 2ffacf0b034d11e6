#!/usr/bin/python3
"""Lab helper for tests/lab/adaptive_signals.sh: which inline signal follows a server's overload?

floodgate sits inline and sees both directions of every TCP handshake. This script provides the
pieces of a lab that measures three candidate signals for an adaptive new-connection limit:

  (a) handshake time: first SYN of a flow (its retransmissions included) -> server's first SYN-ACK,
      counted only for flows whose handshake completes (the client's ACK of the SYN-ACK is seen);
  (b) retransmitted-SYN share: SYNs whose (4-tuple, ISN) was seen before / all SYNs;
  (b') (extra, not one of the three candidates) share of first SYNs with no SYN-ACK 200 ms later;
  (c) request -> response time: first client->server segment with payload -> first
      server->client segment with payload, per flow.

Subcommands (all standard library, no dpkt/scapy/tcpdump needed):
  server    python http.server (ThreadingHTTPServer), listen backlog --backlog (socketserver's
            request_queue_size, default 5), a small page, --cpu-ms of CPU burnt per request.
  capture   AF_PACKET capture of one interface into a pcap file (kernel timestamps, first
            --snap bytes of each frame), bounded by --duration; prints kernel drop counters.
  client    asyncio open-loop client: --rate new connections/s for --duration s, one GET each
            with a --timeout s total deadline; one CSV line per connection (start, outcome, t).
  capacity  closed-loop probe: --conc workers doing back-to-back GETs for --duration s; prints
            completed connections/s (the server's capacity, or the client's, whichever is lower).
  analyze   reads the pcap, the client CSV and the phase events, prints the per-bin time series
            of the signals and, per signal, healthy level, slowed level, reaction and recovery.
"""
import argparse
import asyncio
import collections
import csv
import http.server
import json
import os
import signal
import socket
import statistics
import struct
import sys
import time

# ---------------------------------------------------------------------------------------------
# server


class Handler(http.server.BaseHTTPRequestHandler):
    cpu_s = 0.002
    body = b"<html><body>" + b"floodgate lab page " * 20 + b"</body></html>\n"

    def do_GET(self):
        end = time.thread_time() + self.cpu_s
        x = 0
        while time.thread_time() < end:  # burn CPU of this thread (counts against cgroup quota)
            for i in range(200):
                x += i * i
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *a):
        pass


def cmd_server(a):
    Handler.cpu_s = a.cpu_ms / 1000.0

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = a.backlog  # listen(backlog); socketserver's default is 5
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # clients that gave up (broken pipe, reset) are expected under overload

    srv = Server((a.addr, a.port), Handler)
    print(f"server: {a.addr}:{a.port} backlog {a.backlog} cpu {a.cpu_ms} ms/request", flush=True)
    deadline = time.time() + a.duration
    srv.timeout = 0.5
    while time.time() < deadline:  # bounded: serve until --duration elapsed
        srv.handle_request()
    srv.server_close()


# ---------------------------------------------------------------------------------------------
# capture: AF_PACKET + SO_TIMESTAMPNS -> pcap (nanosecond pcap magic)

SOL_PACKET, PACKET_STATISTICS, SO_TIMESTAMPNS = 263, 6, 35


def cmd_capture(a):
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))  # SIGTERM: close cleanly
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((a.iface, 0))
    s.settimeout(0.2)
    n = 0
    with open(a.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, a.snap, 1))
        f.flush()
        if a.ready:
            open(a.ready, "w").close()
        deadline = time.time() + a.duration
        while time.time() < deadline and n < a.count and not stopping:  # SIGTERM: stop cleanly
            try:
                data, anc, _, _ = s.recvmsg(65536, 64)
            except socket.timeout:
                continue
            sec = nsec = None
            for lvl, typ, val in anc:
                if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", val[:16])
            if sec is None:
                t = time.time_ns()
                sec, nsec = divmod(t, 10**9)
            cap = data[: a.snap]
            f.write(struct.pack("<IIII", sec, nsec, len(cap), len(data)) + cap)
            n += 1
            if n % 256 == 0:
                f.flush()
    st = s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    pk, dr = struct.unpack("II", st)
    print(f"capture: {n} frames written, kernel: {pk} received, {dr} dropped", flush=True)


# ---------------------------------------------------------------------------------------------
# clients


async def one_get(host, port, timeout):
    req = f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    w = None
    try:
        async with asyncio.timeout(timeout):
            r, w = await asyncio.open_connection(host, port)
            w.write(req)
            await w.drain()
            data = await r.read()
            return "ok" if data.startswith(b"HTTP/1.") else "bad"
    except TimeoutError:
        return "timeout"
    except OSError as e:
        return "err:" + (e.__class__.__name__)
    finally:
        if w is not None:
            w.close()


async def open_loop(a):
    out = []
    loop = asyncio.get_running_loop()
    t0 = time.time()
    m0 = loop.time()
    n = int(a.rate * a.duration)
    tasks = []

    async def run(i):
        start = time.time()
        res = await one_get(a.host, a.port, a.timeout)
        out.append((start, res, time.time() - start))

    for i in range(n):
        delay = m0 + i / a.rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(run(i)))
    await asyncio.wait(tasks, timeout=a.timeout + 2)
    return t0, out


def cmd_client(a):
    t0, out = asyncio.run(open_loop(a))
    out.sort()
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["start", "outcome", "seconds"])
        for row in out:
            w.writerow([f"{row[0]:.6f}", row[1], f"{row[2]:.6f}"])
    c = collections.Counter(r[1] for r in out)
    print(f"client: {len(out)} connections at {a.rate}/s: {dict(c)}", flush=True)


async def closed_loop(a):
    done = 0
    fails = 0
    end = time.monotonic() + a.duration

    async def worker():
        nonlocal done, fails
        while time.monotonic() < end:
            if await one_get(a.host, a.port, a.timeout) == "ok":
                done += 1
            else:
                fails += 1

    await asyncio.wait([asyncio.create_task(worker()) for _ in range(a.conc)],
                       timeout=a.duration + a.timeout + 2)
    return done, fails


def cmd_capacity(a):
    done, fails = asyncio.run(closed_loop(a))
    print(f"capacity: {done / a.duration:.0f} completed connections/s "
          f"({a.conc} workers, {a.duration} s, {fails} failed)", flush=True)


# ---------------------------------------------------------------------------------------------
# analysis


def read_pcap(path):
    """Yield (t, src, sport, dst, dport, flags, seq, ack, payload_len) of IPv4 TCP frames."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic == 0xA1B23C4D:
            div = 1e9
        elif magic == 0xA1B2C3D4:
            div = 1e6
        else:
            raise SystemExit(f"{path}: not a little-endian pcap")
        linktype = struct.unpack("<I", hdr[20:24])[0]
        if linktype != 1:
            raise SystemExit(f"{path}: link type {linktype}, want Ethernet")
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            sec, frac, caplen, _ = struct.unpack("<IIII", rh)
            d = f.read(caplen)
            if len(d) < 34 or d[12:14] != b"\x08\x00":
                continue
            ip = d[14:]
            ihl = (ip[0] & 15) * 4
            if ip[9] != 6 or len(ip) < ihl + 20:
                continue
            tot = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[ihl:]
            sport, dport, seq, ack, off = struct.unpack("!HHIIB", tcp[:13])
            flags = tcp[13]
            thl = (off >> 4) * 4
            yield (sec + frac / div, ip[12:16], sport, ip[16:20], dport, flags, seq, ack,
                   tot - ihl - thl)


SYN, ACK, RST = 0x02, 0x10, 0x04
UNANSWERED = 0.2  # (b') a first SYN with no SYN-ACK within this many seconds


def q(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def analyze_run(a):
    ev = json.load(open(a.events))
    server = socket.inet_aton(ev["server_ip"])
    sport_srv = int(ev["port"])
    t_start, t_slow, t_rec, t_end = ev["start"], ev["slow"], ev["recover"], ev["end"]
    B = a.bin

    flows = {}  # (client ip, client port) -> current flow; a new ISN starts a new flow
    all_flows = []  # every flow: client ports are reused within a run
    syn_all = []  # (t, is_retransmission)
    for t, src, sp, dst, dp, fl, seq, ack, plen in read_pcap(a.pcap):
        if dst == server and dp == sport_srv:  # client -> server
            key = (src, sp)
            if fl & SYN and not fl & ACK:
                f = flows.get(key)
                if f is not None and f["isn"] == seq:
                    f["syns"] += 1
                    syn_all.append((t, True))
                else:
                    flows[key] = {"isn": seq, "syn": t, "syns": 1, "synack": None,
                                  "siss": None, "est": None, "req": None, "resp": None}
                    all_flows.append(flows[key])
                    syn_all.append((t, False))
                continue
            f = flows.get(key)
            if f is None:
                continue
            if (f["est"] is None and f["synack"] is not None and fl & ACK
                    and not fl & (SYN | RST) and ack == (f["siss"] + 1) & 0xFFFFFFFF):
                f["est"] = t
            if plen > 0 and f["req"] is None:
                f["req"] = t
        elif src == server and sp == sport_srv:  # server -> client
            f = flows.get((dst, dp))
            if f is None:
                continue
            if fl & SYN and fl & ACK and ack == (f["isn"] + 1) & 0xFFFFFFFF:
                if f["synack"] is None:
                    f["synack"], f["siss"] = t, seq
            elif plen > 0 and f["req"] is not None and f["resp"] is None:
                f["resp"] = t

    # bins aligned so that one boundary falls exactly on the capacity change
    t_start = t_slow - int((t_slow - t_start) / B) * B
    nb = int((t_end - t_start) / B) + 1
    hs = [[] for _ in range(nb)]
    rr = [[] for _ in range(nb)]
    syn_n = [0] * nb
    syn_r = [0] * nb
    done = [0] * nb
    un_n = [0] * nb  # extra signal (b'): first SYNs still without SYN-ACK 200 ms later
    un_u = [0] * nb

    def bi(t):
        i = int((t - t_start) / B)
        return i if 0 <= i < nb else None

    for t, r in syn_all:
        i = bi(t)
        if i is not None:
            syn_n[i] += 1
            syn_r[i] += r
    for f in all_flows:
        i = bi(f["syn"] + UNANSWERED)  # known 200 ms after the first SYN
        if i is not None:
            un_n[i] += 1
            un_u[i] += f["synack"] is None or f["synack"] - f["syn"] > UNANSWERED
        if f["est"] is not None:  # (a): counted when the handshake completes (client's ACK)
            i = bi(f["est"])
            if i is not None:
                hs[i].append(f["synack"] - f["syn"])
        if f["resp"] is not None:  # (c): counted when the first response byte is seen
            i = bi(f["resp"])
            if i is not None:
                rr[i].append(f["resp"] - f["req"])
                done[i] += 1

    ok = [0] * nb
    tmo = [0] * nb
    with open(a.client) as fh:
        for row in csv.DictReader(fh):
            end = float(row["start"]) + float(row["seconds"])
            i = bi(end)
            if i is None:
                continue
            if row["outcome"] == "ok":
                ok[i] += 1
            elif row["outcome"] == "timeout":
                tmo[i] += 1

    series = []
    for i in range(nb):
        series.append({
            "t": t_start - ev["start"] + i * B,
            "a_med": q(hs[i], 0.5), "a_p90": q(hs[i], 0.9), "a_n": len(hs[i]),
            "b": syn_r[i] / syn_n[i] if syn_n[i] else None, "syn": syn_n[i],
            "u": un_u[i] / un_n[i] if un_n[i] else None,
            "c_med": q(rr[i], 0.5), "c_n": len(rr[i]),
            "ok": ok[i] / B, "tmo": tmo[i] / B,
        })
    return ev, series


def fmt_ms(v, d=1):
    return "-" if v is None else f"{v * 1000:.{d}f}"


def summarize(ev, series, B, out):
    t_slow = ev["slow"] - ev["start"]
    t_rec = ev["recover"] - ev["start"]
    t_end = ev["end"] - ev["start"]
    p = lambda s="": print(s, file=out)
    p(f"### Run `{ev['name']}`: {ev['desc']}")
    p()
    p(f"Phases (s from client start): healthy 0-{t_slow:.1f}, slowed {t_slow:.1f}-{t_rec:.1f}, "
      f"recovered {t_rec:.1f}-{t_end:.1f}. Bins of {B} s; (a) by the time the client's ACK is "
      "seen, (b) by SYN time, (b') 200 ms after the first SYN, (c) and resp/s by first-response time, ok/timeouts by the "
      "client's end time.")
    p()
    p("| t (s) | phase | (a) hs med ms | (a) hs p90 ms | n(a) | (b) SYN rtx % | SYNs | "
      "(b') unanswered 200ms % | (c) req→resp med ms | resp/s | client ok/s | client timeouts/s |")
    p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in series:
        mid = s["t"] + B / 2
        ph = "healthy" if mid < t_slow else ("SLOWED" if mid < t_rec else "recovered")
        b = "-" if s["b"] is None else f"{100 * s['b']:.0f}"
        u = "-" if s["u"] is None else f"{100 * s['u']:.0f}"
        p(f"| {s['t']:.1f} | {ph} | {fmt_ms(s['a_med'], 3)} | {fmt_ms(s['a_p90'], 3)} | {s['a_n']} | "
          f"{b} | {s['syn']} | {u} | {fmt_ms(s['c_med'])} | {s['c_n'] / B:.0f} | {s['ok']:.0f} | "
          f"{s['tmo']:.0f} |")
    p()

    def level(key, lo, hi):
        v = [s[key] for s in series
             if lo <= s["t"] + 1e-6 and s["t"] + B <= hi + 1e-6 and s[key] is not None]
        return statistics.median(v) if v else None

    def rate_level(key, lo, hi):
        v = [s[key] for s in series if lo <= s["t"] + 1e-6 and s["t"] + B <= hi + 1e-6]
        return statistics.mean(v) if v else None

    res = {}
    p("| signal | healthy | slowed (2nd half) | threshold | crossed after change (s) | "
      "back below after recovery (s) |")
    p("|---|---:|---:|---:|---:|---:|")
    for key, name, unit, floor in [("a_med", "(a) handshake median", "ms", 0.0),
                                   ("a_p90", "(a) handshake p90", "ms", 0.0),
                                   ("b", "(b) SYN retransmission share", "%", 0.05),
                                   ("u", "(b') first SYN unanswered after 200 ms", "%", 0.05),
                                   ("c_med", "(c) req→resp median", "ms", 0.0)]:
        h = level(key, 1.0, t_slow)
        sl = level(key, (t_slow + t_rec) / 2, t_rec)
        if h is None:
            continue
        thr = max(3 * h, floor)
        # crossed: first bin of the slowed phase whose value >= thr and the next bin with data
        # too ("never" when it did not within the slowed phase)
        vals = [(s["t"], s[key]) for s in series]
        cross = back = None
        for j, (t, v) in enumerate(vals):
            if t + B / 2 < t_slow or t + B / 2 > t_rec:  # within the slowed phase only
                continue
            nxt = next((w for _, w in vals[j + 1:] if w is not None), None)
            if v is not None and v >= thr and (nxt is None or nxt >= thr):
                cross = t + B - t_slow  # the bin's end: when the value is known
                break
        for j, (t, v) in enumerate(vals):
            if t + B / 2 < t_rec:
                continue
            later = [w for _, w in vals[j:j + 3] if w is not None]
            if later and all(w < thr for w in later):
                back = t + B - t_rec
                break
        scale = 100 if unit == "%" else 1000
        f = lambda v: "-" if v is None else f"{v * scale:.{3 if key[0] == 'a' else 1}f} {unit}"
        p(f"| {name} | {f(h)} | {f(sl)} | {f(thr)} | "
          f"{'never' if cross is None else f'{cross:.1f}'} | "
          f"{'never' if back is None else f'{back:.1f}'} |")
        res[key] = {"healthy": h, "slowed": sl, "thr": thr, "cross": cross, "back": back}
    okh = rate_level("ok", 1.0, t_slow)
    oks = rate_level("ok", t_slow + 1, t_rec)
    tms = rate_level("tmo", t_slow + 1, t_rec)
    p(f"| completed conn/s (client ok) | {okh:.0f} | {oks:.0f} (slowed phase after its 1st s) "
      f"| | | |")
    p(f"| client timeouts/s | {rate_level('tmo', 1.0, t_slow):.1f} | {tms:.1f} | | | |")
    p()
    return res


def cmd_analyze(a):
    ev, series = analyze_run(a)
    out = open(a.md, "a") if a.md else sys.stdout
    res = summarize(ev, series, a.bin, out)
    if a.md:
        out.close()
        summarize(ev, series, a.bin, sys.stdout)
    if a.json:
        json.dump({"events": ev, "series": series, "summary": res}, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--addr", default="0.0.0.0")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--backlog", type=int, default=5)
    s.add_argument("--cpu-ms", type=float, default=2.0)
    s.add_argument("--duration", type=float, default=120)
    s = sub.add_parser("capture")
    s.add_argument("--iface", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--duration", type=float, default=60)
    s.add_argument("--count", type=int, default=2_000_000)
    s.add_argument("--snap", type=int, default=96)
    s.add_argument("--ready")
    for name in ("client", "capacity"):
        s = sub.add_parser(name)
        s.add_argument("--host", required=True)
        s.add_argument("--port", type=int, default=8080)
        s.add_argument("--timeout", type=float, default=3.0)
        s.add_argument("--duration", type=float, default=24)
        if name == "client":
            s.add_argument("--rate", type=float, default=150)
            s.add_argument("--out", required=True)
        else:
            s.add_argument("--conc", type=int, default=32)
    s = sub.add_parser("analyze")
    s.add_argument("--pcap", required=True)
    s.add_argument("--client", required=True)
    s.add_argument("--events", required=True)
    s.add_argument("--bin", type=float, default=0.5)
    s.add_argument("--md")
    s.add_argument("--json")
    a = ap.parse_args()
    {"server": cmd_server, "capture": cmd_capture, "client": cmd_client,
     "capacity": cmd_capacity, "analyze": cmd_analyze}[a.cmd](a)


if __name__ == "__main__":
    main()
