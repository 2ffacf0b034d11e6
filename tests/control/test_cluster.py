#!/usr/bin/python3
"""Several boxes as one (issue 26), end to end: two boxes A and B on this machine, each a
`floodgate run` and its `floodctl daemon`, share one rule through a redis-server this test
starts on a free loopback port, as an operator would run them.

Traffic: each box's net_pcap port replays 500 UDP frames from 500 sources to one destination,
port 53, forever (infinite_rx): each box is offered far more than the limit. One port per box
(one-port mode), so every frame a box passes goes out through its tx_pcap file, stamped with
the time it was sent (DPDK's pcap driver: the wall clock at its start plus the TSC since): the
two files together are what the protected server received, on one clock. The rule:

  total  udp/53, key dst (one key), 1000/s burst 50, share: cluster, fallback: local.

Figures worked out from the rule, not read from floodgate's code (docs/cluster.md, "Several boxes"):
joined, A + B pass at most 1000/s x W + b + (N - 1)(b + ceil(L / T)) in any window W, with
b = 50, T = 1 ms, N = 2 and L = 3 sync intervals (a charge reaches the other box at most two
intervals after it passed, plus the rounds' own time): the worst excess over one GCRA
(b = 50, T = 1 ms) of the merged sent times is at most 50 + 300 = 350, and the pair passes
about 1,000/s, not 2,000/s. Alone (the store gone, or floodctl), each box holds to
limit / live boxes: 500/s with two live boxes, 1,000/s once the other box has left.

Checks, in order: both join; the shared limit; Redis killed, restarted, stopped (SIGSTOP) and
continued; bad data in the cluster's stream (a string in its place, a foreign entry); the
daemons' Prometheus metrics; a box leaving (its daemon, then its dataplane), then Redis killed
with one box left; one log line per change on each dataplane's stderr.

Prints TAP; needs root (DPDK) and redis-server (scripts/lib.sh installs it); builds nothing.
Usage: test_cluster.py BUILD_DIR
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_entries  # noqa: E402
import frames  # noqa: E402
import grafana_queries  # noqa: E402
from control_lib import (FLOODCTL, FLOODGATE, SRC, DataplaneLink, Floodctl, check,  # noqa: E402
                         finish, plan, stats_invariants, wait_until)

CLUSTER = cluster_entries.CLUSTER
RULE = "total"
RATE_PER_S = 1000
BURST_PKTS = 50
INTERVAL_NS = 1_000_000_000 // RATE_PER_S  # T
SYNC_MS = 100
BOXES = 2
BOX_TIMEOUT_S = 2
LAG_MS = 3 * SYNC_MS  # L: two sync intervals plus the rounds' time, at most
EXCESS_BOUND = (BOXES - 1) * (BURST_PKTS + -(-LAG_MS * 1_000_000 // INTERVAL_NS))  # 350

RULES = """\
cluster: {{ name: {name}, redis: "127.0.0.1:{port}", sync_ms: {sync_ms}, boxes: {boxes},
           box_timeout: {box_timeout_s}s }}
rules:
  - name: {rule}
    match: {{ proto: udp, dst_port: 53 }}
    key: dst
    limit: {{ rate: {rate}/s, burst: {burst} }}
    reserve: {{ established: 0%, verified: 0%, known: 0% }}
    share: cluster
    fallback: local
"""

STORE_DOWN = "the store did not answer"
NO_SYNC = "no sync from floodctl"
NOT_SYNCED = "not synced yet"


# ---- Redis: the server as a child of this test, and a client of a few lines (RESP) ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port, *args):
    """One command on a fresh connection; the reply (an error reply as RuntimeError)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a)
            for a in (x if isinstance(x, bytes) else str(x).encode() for x in args)))
        f = s.makefile("rb")

        def read():
            line = f.readline().rstrip(b"\r\n")
            kind, rest = line[:1], line[1:]
            if kind == b"+":
                return rest.decode()
            if kind == b"-":
                raise RuntimeError("redis: " + rest.decode())
            if kind == b":":
                return int(rest)
            if kind == b"$":
                return None if int(rest) < 0 else f.read(int(rest) + 2)[:-2].decode()
            if kind == b"*":
                return None if int(rest) < 0 else [read() for _ in range(int(rest))]
            raise RuntimeError("redis: unexpected reply %r" % line)
        return read()


class Redis:
    def __init__(self, work, port):
        self.work, self.port, self.process = work, port, None
        self.log = open(os.path.join(work, "redis.log"), "a")

    def start(self):
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", self.work],
            stdout=self.log, stderr=subprocess.STDOUT)

        def answers():
            if self.process.poll() is not None:
                raise RuntimeError("redis-server exited with %d" % self.process.returncode)
            try:
                return redis_command(self.port, "PING") == "PONG"
            except OSError:
                return False
        wait_until(answers, "redis-server to answer on port %d" % self.port, 15)

    def kill(self):
        self.process.kill()
        self.process.wait()

    def signal(self, sig):
        self.process.send_signal(sig)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # in case it was left stopped
            self.process.kill()
            self.process.wait()


# ---- A box: its dataplane and its daemon ----

class Box:
    def __init__(self, work, name, rules, trace, cpu, key_file=""):
        """key_file: the cluster key's file ("": the test's shared one, None: no key)."""
        self.name = name
        self.prefix = "fgcl%s%d" % (name.lower(), os.getpid())
        self.dp_sock = os.path.join(work, "dataplane-%s.sock" % name)
        self.ctl_sock = os.path.join(work, "floodctl-%s.sock" % name)
        self.sent_pcap = os.path.join(work, "sent-%s.pcap" % name)
        self.dp_out = os.path.join(work, "dataplane-%s.log" % name)
        self.dp_err = os.path.join(work, "dataplane-%s.err" % name)
        self.daemon_log = os.path.join(work, "daemon-%s.log" % name)
        self.dataplane_cmd = [
            FLOODGATE, "run", "--lcores", "0@0,1@%d" % cpu, "--no-huge", "--no-pci",
            "--no-shconf", "-m", "512", "--file-prefix", self.prefix,
            "--vdev", "net_pcap0,rx_pcap=%s,infinite_rx=1,tx_pcap=%s" % (trace, self.sent_pcap),
            "--", "--config", rules, "--control", self.dp_sock]
        self.daemon_cmd = [FLOODCTL, "--socket", self.ctl_sock, "daemon", "--dataplane",
                           self.dp_sock, "--box", name, "--metrics", "127.0.0.1:0"]
        if key_file is not None:
            self.daemon_cmd += ["--cluster-key-file", key_file or cluster_entries.key_file(work)]
        self.ctl = Floodctl(self.ctl_sock)
        self.dataplane = self.daemon = None
        self.links = {}  # "dataplane" or "daemon": a DataplaneLink

    def start_dataplane(self):
        self.dataplane = subprocess.Popen(self.dataplane_cmd, stdout=open(self.dp_out, "w"),
                                          stderr=open(self.dp_err, "w"))

    def up(self):
        """Whether the dataplane's control socket is there (its start is over)."""
        if self.dataplane.poll() is not None:
            raise RuntimeError("dataplane %s exited with %d" % (self.name,
                                                                self.dataplane.returncode))
        return os.path.exists(self.dp_sock)

    def start_daemon(self):
        self.daemon = subprocess.Popen(self.daemon_cmd, stdout=open(self.daemon_log, "a"),
                                       stderr=subprocess.STDOUT)

    def ask(self, cmd, to="dataplane"):
        """One request to the dataplane's or the daemon's control socket, on a link kept open
        (reopened after a failure)."""
        try:
            if self.links.get(to) is None:
                self.links[to] = DataplaneLink(self.dp_sock if to == "dataplane" else
                                               self.ctl_sock, timeout=10)
            reply = self.links[to].ask({"cmd": cmd})
        except Exception:
            if self.links.get(to) is not None:
                self.links.pop(to).close()
            raise
        if not reply.get("ok"):
            raise RuntimeError("%s %s: %s: %s" % (to, self.name, cmd, reply))
        return reply

    def cluster(self):
        """The dataplane's view: joined or alone, boxes, changes."""
        return self.ask("status")["cluster"]

    def passed(self):
        for r in self.ask("stats")["stats"]["rules"]:
            if r["name"] == RULE:
                return r["passed"]
        raise KeyError(RULE)

    def store(self):
        """The daemon's view: store_ok, live_boxes, syncs, store_failures, refused."""
        return self.ask("status", to="daemon")["cluster"]

    def alive(self):
        return all(p is not None and p.poll() is None for p in (self.dataplane, self.daemon))

    def change_lines(self):
        with open(self.dp_err) as f:
            return [line for line in f.read().splitlines()
                    if line.startswith("floodgate: cluster %s: " % CLUSTER)]

    def terminate(self, which):
        p = getattr(self, which)
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "killed after 30 s"

    def close(self):
        for link in self.links.values():
            link.close()
        self.links = {}
        for p in (self.daemon, self.dataplane):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + self.prefix])


def states(boxes, state, reason=None, boxes_live=None):
    """A condition for wait_until: every box's dataplane in `state` (with `reason`, and
    `boxes_live` boxes, where given); returns their views when they are."""
    def condition():
        views = [b.cluster() for b in boxes]
        if all(v["state"] == state and (reason is None or v["reason"] == reason) and
               (boxes_live is None or v["boxes"] == boxes_live) for v in views):
            return views
        return None
    return condition


def timed_wait(condition, what, timeout):
    """wait_until, and how long the state took to come (shown, never asserted)."""
    started = time.monotonic()
    value = wait_until(condition, what, timeout)
    return value, time.monotonic() - started


# ---- Measuring: counters over a window, and the sent frames' times ----

class Window:
    """A measurement window of at least `seconds`: each box's rule counter read at its start and
    its end, and every box's dataplane and daemon asked for their status all along (the
    window's length is what is measured; nothing waits on it for a state)."""

    def __init__(self, boxes, seconds, daemons=True):
        self.boxes = boxes
        self.asked = self.failed = 0
        self.slowest_s = 0.0
        self.seen = set()  # (box, state, reason) in every reply
        self.errors = []
        self.wall_start_ns = time.time_ns()
        self.first = [self._read(b) for b in boxes]
        self.changes_first = [b.cluster()["changes"] for b in boxes]
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            for b in boxes:
                self._ask(lambda: self.seen.add(
                    (b.name, (lambda c: (c["state"], c["reason"]))(b.cluster()))))
                if daemons:
                    self._ask(b.store)
            time.sleep(0.05)  # the pace of the polling, not a wait for anything
        self.changes_last = [b.cluster()["changes"] for b in boxes]
        self.last = [self._read(b) for b in boxes]
        self.wall_end_ns = time.time_ns()

    @staticmethod
    def _read(box):
        before = time.monotonic()
        value = box.passed()
        return before, value, time.monotonic()

    def _ask(self, request):
        started = time.monotonic()
        try:
            request()
            self.asked += 1
        except Exception as e:  # a request that failed or did not answer within its bound
            self.failed += 1
            self.errors.append(repr(e))
        self.slowest_s = max(self.slowest_s, time.monotonic() - started)

    def delta(self, i):
        return self.last[i][1] - self.first[i][1]

    def seconds(self, i):
        """The box's window at least (between its reads' ends) and at most (their starts)."""
        return (self.last[i][0] - self.first[i][2], self.last[i][2] - self.first[i][0])

    def total(self):
        return sum(self.delta(i) for i in range(len(self.boxes)))

    def total_seconds(self):
        """The window that holds every box's (at most) and the one every box's holds."""
        lo = min(r[0] for r in self.last) - max(r[2] for r in self.first)
        hi = max(r[2] for r in self.last) - min(r[0] for r in self.first)
        return lo, hi

    def steady(self):
        return self.changes_first == self.changes_last

    def answered(self):
        return "%d status requests answered, %d failed, slowest %.3f s" % (
            self.asked, self.failed, self.slowest_s)


def sent_times(path, start_ns=0, end_ns=1 << 63):
    """The times (ns) a box sent each passed frame, from its tx_pcap file, within
    [start_ns, end_ns). A reader apart from floodgate's own pcap code; a record still being
    written at the end is left out."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    unit_ns = {0xA1B2C3D4: 1000, 0xA1B23C4D: 1}[struct.unpack_from("<I", data)[0]]
    times, offset = [], 24
    while offset + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack_from("<IIII", data, offset)
        if offset + 16 + caplen > len(data):
            break
        t = sec * 1_000_000_000 + frac * unit_ns
        if start_ns <= t < end_ns:
            times.append(t)
        offset += 16 + caplen
    return times


def worst_gcra_excess(times_ns, burst, interval_ns):
    """The most passed frames in any window beyond what one GCRA (burst, T) allows in it:
    max over i <= j of (j - i + 1) - (burst + (t_j - t_i) // T), as tests/scenario/harness.cpp's
    worst_gcra_excess, in O(n log n) rather than over every pair. With t = q T + r
    (0 <= r < T), (t_j - t_i) // T = q_j - q_i - [r_j < r_i], so a pair's excess is
    (j - q_j) + 1 - burst + (q_i - i) + [r_i > r_j]: for each j, the best i before it is the
    larger of the best q_i - i, and 1 + the best q_i - i among those with r_i > r_j (a Fenwick
    tree of maxima over the remainders' ranks, largest remainder first). None for no frames."""
    t = sorted(times_ns)
    if not t:
        return None
    rank = {r: k for k, r in enumerate(sorted({x % interval_ns for x in t}, reverse=True))}
    low = float("-inf")
    tree = [low] * (len(rank) + 1)
    best_all = worst = low
    for j, x in enumerate(t):
        q, r = divmod(x, interval_ns)
        k = rank[r]
        # the best q_i - i over remainders strictly larger than r: ranks 0 .. k - 1
        above, i = low, k
        while i > 0:
            above = max(above, tree[i])
            i -= i & -i
        v = q - j
        best_all = max(best_all, v)
        i = k + 1
        while i < len(tree):
            tree[i] = max(tree[i], v)
            i += i & -i
        worst = max(worst, (j - q) + 1 - burst + max(best_all, above + 1))
    return int(worst)


def merged_excess(boxes, start_ns, end_ns):
    times = sorted(t for b in boxes for t in sent_times(b.sent_pcap, start_ns, end_ns))
    return len(times), worst_gcra_excess(times, BURST_PKTS, INTERVAL_NS)


def share_check(window, box_indexes, rate_per_s, what):
    """Each box passed between 0.8 and 1.2 x rate_per_s over its window."""
    ok, figures = True, []
    for i in box_indexes:
        lo_s, hi_s = window.seconds(i)
        d = window.delta(i)
        ok &= 0.8 * rate_per_s * lo_s <= d <= 1.2 * rate_per_s * hi_s
        figures.append("%s %d in %.2f s (%.0f/s)" % (window.boxes[i].name, d, lo_s, d / lo_s))
    return check(ok, "%s: each box passes 0.8-1.2 x %d/s: %s" % (what, rate_per_s,
                                                              ", ".join(figures)))


def metrics_samples(box):
    from prometheus_client.parser import text_string_to_metric_families
    addr = box.ctl.json("status")["daemon"]["metrics"]
    body = urllib.request.urlopen("http://%s/metrics" % addr, timeout=30).read().decode()
    return addr, {(s.name, tuple(sorted(s.labels.items()))): s.value
                  for f in text_string_to_metric_families(body) for s in f.samples}


# ---- The scenario ----

def scenario(redis, a, b):
    both = [a, b]
    redis.start()
    for box in both:
        box.start_dataplane()
    for box in both:
        wait_until(box.up, "dataplane %s to start" % box.name, 30)
        box.start_daemon()
    started = time.monotonic()

    # 1. Both join.
    views, took = timed_wait(states(both, "joined", boxes_live=2), "both boxes to join", 15)
    check(all(v["boxes"] == 2 for v in views),
          "both dataplanes joined with 2 boxes live (%.2f s after the daemons started)" %
          (time.monotonic() - started), views)
    stores = [box.ctl.json("status")["cluster"] for box in both]
    check(all(s["active"] and s["store_ok"] and s["live_boxes"] == 2 for s in stores),
          "floodctl status -j, both daemons: store answers, 2 boxes live (syncs %s)" %
          ", ".join("%s %d" % (s["box"], s["syncs"]) for s in stores), stores)

    # 2. The shared limit, joined: about 1,000/s for the pair, not 2,000/s.
    w = Window(both, 5)
    lo_s, hi_s = w.total_seconds()
    total = w.total()
    upper = RATE_PER_S * hi_s + BURST_PKTS + EXCESS_BOUND
    print("# joined: A %d, B %d passed in %.2f s: %.0f/s together (A %.0f/s, B %.0f/s)" % (
        w.delta(0), w.delta(1), lo_s, total / lo_s, w.delta(0) / w.seconds(0)[0],
        w.delta(1) / w.seconds(1)[0]))
    check(w.steady() and w.seen == {("A", ("joined", "")), ("B", ("joined", ""))},
          "both stayed joined through the window (changes %s -> %s)" % (w.changes_first,
                                                                      w.changes_last), w.seen)
    check(total <= upper, "joined: A + B passed %d <= %d/s x %.2f s + b + (N-1)(b + ceil(L/T)) "
          "= %.0f (not 2 x the limit)" % (total, RATE_PER_S, hi_s, upper))
    check(total >= 0.8 * RATE_PER_S * lo_s,
          "joined: A + B passed %d >= 0.8 x %d/s x %.2f s = %.0f (the limit is not starved)" %
          (total, RATE_PER_S, lo_s, 0.8 * RATE_PER_S * lo_s))
    sent, excess = merged_excess(both, w.wall_start_ns, w.wall_end_ns)
    print("# joined: the two tx files hold %d frames sent in the window (counters: %d)" % (
        sent, total))
    check(sent > 0 and excess is not None and excess <= EXCESS_BOUND,
          "joined: worst excess of A + B's sent times over one GCRA (b %d, T 1 ms) in %.2f s: "
          "%s <= (N-1)(b + ceil(L/T)) = %d" % (BURST_PKTS, hi_s, excess, EXCESS_BOUND))

    # 3. Redis killed: each box alone at its share, limit / 2, and answering all along.
    redis.kill()
    killed_ns = time.time_ns()
    views, took = timed_wait(states(both, "alone", STORE_DOWN), "both boxes alone", 5)
    print("# Redis killed: both alone (%s) within %.2f s" % (STORE_DOWN, took))
    check(True, "Redis killed: both dataplanes alone, reason \"%s\"" % STORE_DOWN)
    w = Window(both, 2.5)
    check(w.steady() and all(s == ("alone", STORE_DOWN) for _, s in w.seen),
          "Redis down: both stayed alone through the window", w.seen)
    share_check(w, (0, 1), RATE_PER_S // BOXES, "Redis down")
    check(w.failed == 0 and w.asked > 0 and a.alive() and b.alive(),
          "Redis down: dataplanes and daemons answered status throughout (%s)" % w.answered(),
          w.errors)
    print("# Redis down: each box's worst excess over its own share's GCRA (b %d, T %d ms): "
          "A %s, B %s" % ((BURST_PKTS // BOXES, BOXES) + tuple(
              worst_gcra_excess(sent_times(box.sent_pcap, w.wall_start_ns, w.wall_end_ns),
                                BURST_PKTS // BOXES, INTERVAL_NS * BOXES) for box in both)))

    # 4. Redis back on the same port: both rejoin, with no burst.
    restart_ns = time.time_ns()
    redis.start()
    views, took = timed_wait(states(both, "joined", boxes_live=2), "both boxes to rejoin", 10)
    joined_ns = time.time_ns()
    print("# Redis restarted: both joined again within %.2f s" % took)
    check(all(v["changes"] >= 3 for v in views),
          "Redis back: both rejoined, changes counted (A %d, B %d, >= 3)" % (
              views[0]["changes"], views[1]["changes"]), views)
    Window(both, 2, daemons=False)  # two seconds joined, for the rejoin's excess below
    sent, excess = merged_excess(both, restart_ns, joined_ns + 2_000_000_000)
    print("# rejoin: worst excess of A + B's sent times over one GCRA (b %d, T 1 ms) from the "
          "restart to 2 s after both joined: %s (%d frames; the joined bound %d)" % (
              BURST_PKTS, excess, sent, EXCESS_BOUND))
    sent, excess = merged_excess(both, killed_ns, joined_ns + 2_000_000_000)
    print("# outage and return: from the kill to 2 s after the rejoin: worst excess %s "
          "(%d frames)" % (excess, sent))

    # 5. Redis stopped (SIGSTOP): too slow to answer, the boxes fall back and pass on.
    before = [box.store() for box in both]
    failures = [s["store_failures"] for s in before]
    redis.signal(signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        wait_until(lambda: all(box.store()["store_failures"] > f
                               for box, f in zip(both, failures)),
                   "the daemons to count a store failure", 5)
        views, took = timed_wait(states(both, "alone"), "both boxes alone", 5)
        print("# Redis stopped: both alone (%s) %.2f s after SIGSTOP" % (
            ", ".join("%s: %s" % (box.name, v["reason"]) for box, v in zip(both, views)),
            time.monotonic() - stopped))
        w = Window(both, max(0.5, 2 - (time.monotonic() - stopped)))
        check(all(w.delta(i) > 0 for i in (0, 1)) and w.failed == 0 and a.alive() and b.alive(),
              "Redis stopped: both alone, still passing (A %d, B %d in %.2f s) and answering "
              "status (%s)" % (w.delta(0), w.delta(1), w.seconds(0)[0], w.answered()), w.errors)
        stop_s = time.monotonic() - stopped
        # Each sync failed while Redis is stopped is a timeout, counted as one.
        during = [box.store() for box in both]
        timed_out = [d["store"]["timeouts"] - b["store"]["timeouts"] for b, d in zip(before, during)]
        failed = [d["store_failures"] - b["store_failures"] for b, d in zip(before, during)]
        check(timed_out == failed and min(failed) > 0,
              "Redis stopped: every failed sync counted as a timeout (A %d of %d, B %d of %d)" % (
                  timed_out[0], failed[0], timed_out[1], failed[1]), during)
    finally:
        redis.signal(signal.SIGCONT)
    continued_ns = time.time_ns()
    views, took = timed_wait(states(both, "joined", boxes_live=2), "both boxes to rejoin", 10)
    joined_ns = time.time_ns()
    check(True, "Redis continued after %.1f s stopped: both rejoined within %.2f s (changes A %d, "
          "B %d)" % (stop_s, took, views[0]["changes"], views[1]["changes"]))

    # The commands Redis took while stopped run now, late: what they push is charged late.
    Window(both, 2, daemons=False)
    sent, excess = merged_excess(both, continued_ns, joined_ns + 2_000_000_000)
    print("# after SIGCONT: worst excess of A + B's sent times over one GCRA to 2 s after both "
          "joined: %s (%d frames)" % (excess, sent))

    # 6. Bad data: the stream's key holding a string, then a foreign entry in the stream.
    log_key = "fg:{%s}:log" % CLUSTER
    refused = [box.store()["refused"] for box in both]
    redis_command(redis.port, "SET", log_key, "not a stream")
    counted, took = timed_wait(lambda: (lambda s: s if all(
        x["refused"] > r for x, r in zip(s, refused)) else None)([box.store() for box in both]),
        "the daemons to refuse the string", 5)
    views = wait_until(states(both, "alone"), "both boxes alone", 5)
    check(a.alive() and b.alive(),
          "a string in place of %s: refused by both daemons (A %d, B %d; last error: %s), both "
          "alone (%s), nothing crashed" % (log_key, counted[0]["refused"], counted[1]["refused"],
                                           counted[0]["last_error"], views[0]["reason"]),
          (counted, views))
    redis_command(redis.port, "DEL", log_key)
    views, took = timed_wait(states(both, "joined", boxes_live=2), "both boxes to rejoin", 10)
    check(True, "the string deleted: both rejoined within %.2f s" % took)

    before = [box.store()["refused"] for box in both]
    changes = [v["changes"] for v in views]
    entry = redis_command(redis.port, "XADD", log_key, "*", "foo", "bar")
    counted = wait_until(lambda: (lambda s: s if all(
        x["refused"] >= r + 1 for x, r in zip(s, before)) else None)(
            [box.store() for box in both]), "the daemons to refuse the foreign entry", 5)
    views = [box.cluster() for box in both]
    check(all(v["state"] == "joined" for v in views) and
          [v["changes"] for v in views] == changes,
          "a foreign entry (%s foo bar): refused by both daemons (A %d -> %d, B %d -> %d), both "
          "stayed joined" % (entry, before[0], counted[0]["refused"], before[1],
                             counted[1]["refused"]), views)

    # 6b. Shared allows and escalations. An allow added on A is told to B, which adds it too.
    a.ctl.run("allow", "add", "198.18.66.0/24", "--ttl", "60s")
    allowed, took = timed_wait(lambda: (lambda o: o if any(
        x["list"] == "allow" and x["prefix"] == "198.18.66.0/24" for x in o["overrides"])
        else None)(b.ask("overrides")), "B to hold A's allow", 5)
    row = [x for x in allowed["overrides"] if x["prefix"] == "198.18.66.0/24"][0]
    check(0 < row["ttl_left_s"] <= 60 and b.store()["allows_added"] == 1,
          "an allow added on A (198.18.66.0/24, 60 s) is an allow on B within %.2f s, TTL left "
          "%.1f s" % (took, row["ttl_left_s"]), (row, b.store()))
    # An escalation told by a third box (written to the stream as a box would): both boxes take
    # it; without an XDP tier (net_pcap) they count it skipped, and refuse one that is no
    # prefix.
    told = [box.cluster()["escalations"] for box in both]
    redis_command(redis.port, "XADD", log_key, "*", *cluster_entries.SigningBox("C").fields(
        "!escalated\t198.18.99.9/32\t60000\n!escalated\tnot-a-prefix\t60000\n"))
    seen = wait_until(lambda: (lambda e: e if all(
        x["skipped"] == t["skipped"] + 1 and x["refused"] == t["refused"] + 1
        for x, t in zip(e, told)) else None)([box.cluster()["escalations"] for box in both]),
        "both boxes to take the escalations", 5)
    check(all(not e["xdp"] and e["added"] == 0 for e in seen),
          "an escalation told by another box reaches both dataplanes (no XDP tier here: skipped "
          "1 each), a malformed one is refused (1 each)", seen)

    # 8. Prometheus, while both daemons still run, once C (heard from once, above) is no longer
    # live: box_timeout after its one entry.
    wait_until(states(both, "joined", boxes_live=2), "C to age out", 10)
    for box in both:
        prometheus(box)

    # 7. A box leaving: first its daemon, then its dataplane.
    gone = time.monotonic()
    check(b.terminate("daemon") == 0, "B's daemon stops cleanly on SIGTERM")
    views, took = timed_wait(states([b], "alone", NO_SYNC), "B alone", 5)
    check(True, "B's daemon stopped: B's dataplane alone, reason \"%s\", within %.2f s" % (
        NO_SYNC, took))
    store, took = timed_wait(lambda: (lambda s: s if s["live_boxes"] == 1 else None)(a.store()),
                             "A's daemon to see one box live", 10)
    print("# B's daemon stopped: A's daemon saw 1 box live %.2f s after SIGTERM "
          "(box_timeout %d s)" % (time.monotonic() - gone, BOX_TIMEOUT_S))
    # Until B's dataplane stops it passes its share unheard, while A counts alone in the
    # cluster at the whole limit.
    w = Window(both, 1.5, daemons=False)
    print("# B without its daemon, A alone in the cluster: A %.0f/s + B %.0f/s = %.0f/s" % (
        w.delta(0) / w.seconds(0)[0], w.delta(1) / w.seconds(1)[0],
        w.total() / w.total_seconds()[0]))
    b_view = b.cluster()
    b_changes = b_view["changes"]
    print("# B told the store %d packets in all; A was charged %d (lost or late pushes of the "
          "outages make the difference)" % (b_view["told_packets"],
                                            a.cluster()["charged_packets"]))
    broken = stats_invariants(b.ask("stats")["stats"])
    check(not broken, "B's stats keep their invariants after %d changes of its rules" % b_changes,
          broken)
    check(b.terminate("dataplane") == 0, "then B's dataplane stops cleanly on SIGTERM")
    view = wait_until(lambda: (lambda v: v if v["boxes"] == 1 else None)(a.cluster()),
                      "A's dataplane to count one box", 10)
    check(view["state"] == "joined" and store["store_ok"],
          "A's daemon counts 1 box live, A's dataplane boxes 1, still joined", (store, view))

    redis.kill()
    views, took = timed_wait(states([a], "alone", STORE_DOWN, boxes_live=1), "A alone", 5)
    check(True, "Redis killed with B gone: A alone (%s) within %.2f s, its share the whole "
          "limit (boxes %d)" % (STORE_DOWN, took, views[0]["boxes"]))
    w = Window([a], 2.5)
    share_check(w, (0,), RATE_PER_S, "A alone, the last box")
    check(w.failed == 0 and a.alive(), "A answered status throughout (%s)" % w.answered(),
          w.errors)

    a_changes = a.cluster()["changes"]
    broken = stats_invariants(a.ask("stats")["stats"])
    check(not broken, "A's stats keep their invariants after %d changes of its rules" % a_changes,
          broken)

    # 9. One log line per change, on each dataplane's stderr.
    log_lines(b, b_changes, [STORE_DOWN] * 3 + [NO_SYNC])
    log_lines(a, a_changes, [STORE_DOWN] * 4)

    check(a.terminate("daemon") == 0, "A's daemon stops cleanly on SIGTERM")
    check(a.terminate("dataplane") == 0, "A's dataplane stops cleanly on SIGTERM")


def log_lines(box, changes, reasons):
    """The dataplane's stderr: the first line alone (not synced yet), then one per change,
    joined and alone in turn. `reasons`: why the box was alone each time this test made it so,
    in order. A spell more alone for "no sync from floodctl" (the daemon not heard from for
    three intervals, which a loaded machine can cause) is shown, not failed."""
    lines = wait_until(lambda: (lambda ls: ls if len(ls) >= changes + 1 else None)(
        box.change_lines()), "%s's change lines" % box.name, 5)
    seen = []
    for line in lines:
        m = re.match(r"floodgate: cluster %s: (joined \((\d+) boxes live\)|alone \(([^)]*)\))" %
                     CLUSTER, line)
        seen.append(None if m is None else m.group(3) if m.group(3) is not None else "joined")
    print("# %s's stderr: %s" % (box.name, ", ".join(str(s) for s in seen)))
    in_turn = seen[:1] == [NOT_SYNCED] and all((s == "joined") == (k % 2 == 1)
                                               for k, s in enumerate(seen))
    matched, more, other = 0, 0, []
    for reason in seen[2::2]:
        if matched < len(reasons) and reason == reasons[matched]:
            matched += 1
        elif reason == NO_SYNC:
            more += 1
        else:
            other.append(reason)  # not a reason this test gave, or not in its order
    if more:
        print("# %s fell back %d time(s) more for \"%s\" than this test made it" % (
            box.name, more, NO_SYNC))
    check(len(lines) == changes + 1 and in_turn and matched == len(reasons) and not other,
          "%s's stderr: %d cluster lines = %d changes + the first \"alone (%s)\", joined and "
          "alone in turn, alone for the reasons given" % (box.name, len(lines), changes,
                                                          NOT_SYNCED), "\n".join(lines))


def prometheus(box):
    before_dp, before_store = box.cluster(), box.store()
    addr, samples = metrics_samples(box)
    after_dp, after_store = box.cluster(), box.store()
    body = urllib.request.urlopen("http://%s/metrics" % addr, timeout=30).read().decode()
    queries, names, unknown = grafana_queries.check(
        os.path.join(SRC, "config", "grafana", "floodgate-cluster.json"), body)
    check(len(queries) >= 10 and not unknown, "%s's /metrics: every metric the cluster "
          "dashboard's %d queries use (%d names) is exported" % (box.name, len(queries),
                                                                 len(names)), unknown)
    of = (("cluster", CLUSTER),)

    def value(name, *labels):
        return samples.get((name, tuple(sorted(of + labels))))

    def between(v, lo, hi):
        return v is not None and lo <= v <= hi

    figures = {
        "joined": value("floodgate_cluster_joined"),
        "fallback_seconds": value("floodgate_cluster_fallback_seconds_total"),
        "changes": value("floodgate_cluster_changes_total"),
        "live_boxes": value("floodgate_cluster_live_boxes"),
        "syncs_ok": value("floodgate_cluster_syncs_total", ("result", "ok")),
        "syncs_failed": value("floodgate_cluster_syncs_total", ("result", "failed")),
        "refused_store": value("floodgate_cluster_refused_total", ("where", "store")),
        "refused_dataplane": value("floodgate_cluster_refused_total", ("where", "dataplane")),
        "timeouts": value("floodgate_cluster_store_timeouts_total"),
        "p50": value("floodgate_cluster_store_round_trip_seconds", ("stat", "p50")),
        "p99": value("floodgate_cluster_store_round_trip_seconds", ("stat", "p99")),
        "max": value("floodgate_cluster_store_round_trip_seconds", ("stat", "max")),
    }
    missing = sorted(k for k, v in figures.items() if v is None)
    print("# %s's metrics at %s: %s" % (box.name, addr, ", ".join(
        "%s %s" % (k, v) for k, v in figures.items())))
    check(not missing, "%s's /metrics: every cluster metric present" % box.name,
          "absent: %s\ncluster samples: %s" % (missing, sorted(
              k for k in samples if k[0].startswith("floodgate_cluster"))))
    ok = (figures["joined"] == 1 and figures["live_boxes"] == 2 and
          between(figures["fallback_seconds"], before_dp["fallback_s"] - 1e-6,
                  after_dp["fallback_s"] + 1e-6) and figures["fallback_seconds"] > 0 and
          between(figures["changes"], before_dp["changes"], after_dp["changes"]) and
          between(figures["syncs_ok"], before_dp["syncs"] - before_dp["failed_syncs"],
                  after_dp["syncs"] - after_dp["failed_syncs"]) and
          between(figures["syncs_failed"], max(1, before_dp["failed_syncs"]),
                  after_dp["failed_syncs"]) and
          between(figures["refused_store"], max(1, before_store["refused"]),
                  after_store["refused"]) and
          between(figures["refused_dataplane"], before_dp["refused_charges"],
                  after_dp["refused_charges"]) and
          between(figures["timeouts"], max(1, before_store["store"]["timeouts"]),
                  after_store["store"]["timeouts"]) and
          0 < figures["p50"] <= figures["p99"] <= figures["max"])
    check(ok, "%s's /metrics: cluster values agree with status (joined 1, 2 boxes, %s changes, "
          "%s s alone, %s/%s syncs ok/failed, refused %s in the store, %s timeouts, round trip "
          "p50 <= p99 <= max)" % (
              box.name, figures["changes"], figures["fallback_seconds"], figures["syncs_ok"],
              figures["syncs_failed"], figures["refused_store"], figures["timeouts"]),
          (before_dp, after_dp, before_store, after_store))


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    if shutil.which("redis-server") is None:
        check(False, "redis-server is installed (scripts/lib.sh installs it)",
              "redis-server is not on PATH: apt-get install redis-server")
        return plan()  # 1: a check failed
    work = tempfile.mkdtemp(prefix="fg-cluster-")
    port = free_port()
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES.format(name=CLUSTER, port=port, sync_ms=SYNC_MS, boxes=BOXES,
                             box_timeout_s=BOX_TIMEOUT_S, rule=RULE, rate=RATE_PER_S,
                             burst=BURST_PKTS))
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.%d.%d" % (1 + i // 250, 1 + i % 250),
                                          "198.18.255.1", 1024 + i, 53) for i in range(500)])
    # Both workers time-share CPU 1, so that CPU 0 is left for the main lcores, the daemons,
    # Redis and this test on a 2-core machine.
    cpu = 1 if os.cpu_count() > 1 else 0
    redis = Redis(work, port)
    a, b = Box(work, "A", rules, trace, cpu), Box(work, "B", rules, trace, cpu)
    try:
        scenario(redis, a, b)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for box in (a, b):
            box.close()
        redis.stop()
    return finish(work, ("dataplane-A.err", "dataplane-B.err", "daemon-A.log", "daemon-B.log",
                         "redis.log"))

if __name__ == "__main__":
    sys.exit(main())
