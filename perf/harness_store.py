"""The boxes case's store side (perf/harness_boxes.py): the cluster store's sync script
(control/cluster/cluster_store.lua) against a redis-server of our own on a Unix socket, one box
pushing K keys and another reading them: bytes each way, round trip, the store's time and the
Redis commands inside (INFO commandstats)."""
import os
import re
import shutil
import socket
import statistics
import subprocess
import time

from harness_peers import ROOT

# The store's cost: shared keys per sync, and how many syncs of each to time.
STORE_KEYS = (10, 1000, 100_000)
STORE_REPS = {10: 30, 1000: 30, 100_000: 5}
STORE_SYNC_MS = (10, 100, 1000)
STORE_RULE = "total"
# control/cluster/cluster_store.h's bounds, as the box passes them to the script.
MAX_ENTRIES = 1024
MAX_ENTRY_BYTES = 1 << 20
MAX_REPLY_PAYLOAD_BYTES = 32 << 20
RETENTION_MS = 10_000
BOX_TIMEOUT_MS = 3000


def sync_script():
    """The Lua of control/cluster/cluster_store.lua, which the box carries built in."""
    with open(os.path.join(ROOT, "control/cluster/cluster_store.lua"), encoding="utf-8") as f:
        return f.read()


class Resp:
    """A minimal RESP2 client on one socket; counts the bytes each way of the last call."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.sent = self.received = 0

    def call(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts += [b"$%d\r\n" % len(a), a, b"\r\n"]
        req = b"".join(parts)
        self.sent, self.received = len(req), 0
        self.s.sendall(req)
        return self.read()

    def _fill(self):
        chunk = self.s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("redis closed the connection")
        self.received += len(chunk)
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("redis: unexpected reply %r" % line[:40])


def commandstats(r):
    """INFO commandstats: {command: (calls, usec)}."""
    text = r.call("INFO", "commandstats").decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"cmdstat_([^:]+):calls=(\d+),usec=(\d+)", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out


def delta_lines(keys):
    """What a box pushes for `keys` shared keys of a dst rule: "rule\\tkey\\tpackets\\n"; the
    keys are /32s of 198.18.0.0/15, the packets 1 to 99."""
    return [("%s\t198.%d.%d.%d/32\t%d\n" % (STORE_RULE, 18 + (i >> 16), (i >> 8) & 255, i & 255,
                                             1 + i * 7 % 99)).encode() for i in range(keys)]


def payloads(lines, box):
    """Entries of at most kMaxEntryBytes with the box id, split at line ends (as the box does)."""
    out, cur, limit = [], [], MAX_ENTRY_BYTES - len(box)
    size = 0
    for ln in lines:
        if cur and size + len(ln) > limit:
            out.append(b"".join(cur))
            cur, size = [], 0
        cur.append(ln)
        size += len(ln)
    if cur:
        out.append(b"".join(cur))
    return out


class StoreBox:
    def __init__(self, path, sha, cluster, name):
        self.r, self.sha, self.name, self.cursor = Resp(path), sha, name, ""
        self.keys = ["fg:{%s}:log" % cluster, "fg:{%s}:boxes" % cluster]

    def sync(self, entries):
        """One EVALSHA: heartbeat, push `entries`, pull; what it cost."""
        start = time.perf_counter()
        reply = self.r.call("EVALSHA", self.sha, 2, *self.keys, self.name, self.cursor,
                            BOX_TIMEOUT_MS, MAX_ENTRIES, MAX_ENTRY_BYTES, RETENTION_MS,
                            MAX_REPLY_PAYLOAD_BYTES, *entries)
        rtt = time.perf_counter() - start
        self.cursor = reply[0].decode()
        got = sum(p.count(b"\n") for p in reply[4::2])
        return {"rtt_ms": rtt * 1e3, "sent_bytes": self.r.sent, "received_bytes": self.r.received,
                "keys_received": got}


def measure_store(work):
    """Per K: an idle sync (nothing to push or read), a push alone (one box pushes K keys,
    nothing to read), a pull alone (the other box reads them, pushes nothing) and a steady sync
    (each pushes K and reads the other's K),
    medians of STORE_REPS[K] syncs; the commands inside each sync and the store's time
    (commandstats, reset before each)."""
    server = shutil.which("redis-server")
    if not server:
        return {"skipped": "redis-server is not installed"}
    sock = os.path.join(work, "redis.sock")
    p = subprocess.Popen([server, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                          "--save", "", "--appendonly", "no", "--dir", work],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        time.sleep(0.1)
        admin = Resp(sock)
        version = re.search(rb"redis_version:(\S+)", admin.call("INFO", "server")).group(1)
        script = sync_script()
        sha = admin.call("SCRIPT", "LOAD", script).decode()
        rows = []
        for keys in STORE_KEYS:
            lines = delta_lines(keys)
            line_bytes = sum(len(x) for x in lines)
            cluster = "bench%d" % keys
            a, b = (StoreBox(sock, sha, cluster, n) for n in ("box-a", "box-b"))
            a.sync([]), b.sync([])  # cursors at the stream's end
            row = {"keys": keys, "line_bytes": line_bytes, "bytes_per_key": line_bytes / keys,
                   "entries_per_push": len(payloads(lines, a.name))}
            for mode in ("idle", "push", "pull", "steady"):
                samples = []
                for _ in range(STORE_REPS[keys]):
                    if mode in ("pull", "steady"):
                        a.sync(payloads(lines, a.name))  # what b reads
                    admin.call("CONFIG", "RESETSTAT")
                    if mode == "idle":
                        s = b.sync([])  # nothing to push, nothing new
                    elif mode == "push":
                        s = a.sync(payloads(lines, a.name))  # nothing to read
                    elif mode == "pull":
                        s = b.sync([])
                    else:
                        s = b.sync(payloads(lines, b.name))  # reads a's, pushes its own
                    s["stats"] = commandstats(admin)
                    (b if mode == "push" else a).sync([])  # the other keeps up
                    samples.append(s)
                row[mode] = summarise_syncs(samples, mode)
            rows.append(row)
            admin.call("DEL", *a.keys)
        return {"redis": version.decode(), "script_sha1": sha, "rows": rows,
                "reps": dict((str(k), v) for k, v in STORE_REPS.items())}
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def summarise_syncs(samples, mode):
    """Medians over the samples: round trip, bytes each way, keys read, and from commandstats
    (reset just before the one sync) the commands the script ran and the store's time."""
    def inside(stats):
        return {c: n for c, (n, _) in stats.items()
                if c != "evalsha" and not c.startswith(("config", "info"))}

    out = {"mode": mode, "syncs": len(samples)}
    for k in ("rtt_ms", "sent_bytes", "received_bytes", "keys_received"):
        out[k] = statistics.median(s[k] for s in samples)
    out["rtt_ms_range"] = [min(s["rtt_ms"] for s in samples), max(s["rtt_ms"] for s in samples)]
    cmds = [inside(s["stats"]) for s in samples]
    out["commands"] = {c: statistics.median(x.get(c, 0) for x in cmds)
                       for c in sorted(set().union(*cmds))}
    out["commands_per_sync"] = sum(out["commands"].values())
    out["evalsha_calls"] = statistics.median(s["stats"].get("evalsha", (0, 0))[0]
                                             for s in samples)
    out["store_us"] = statistics.median(s["stats"].get("evalsha", (0, 0))[1] for s in samples)
    return out
