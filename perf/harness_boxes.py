#!/usr/bin/python3
"""The boxes case (issue 26): several boxes sharing a limit, over a flood, from 2 to 64 boxes.

    /usr/bin/python3 perf/harness_boxes.py BUILD_DIR [--boxes 2,4,8,16,32,64]
        [--sync-ms 10,50,100,500] [--seconds 20] [--quick] [--out perf/results]

One capture, made here: 20 s (--seconds) of UDP to 198.18.255.1:53 from 2,039 sources of
198.18.0.0/16 at 20,000 frames/s, spread evenly (frame k from source 37 k mod 2,039), a
nanosecond pcap. For each N boxes and sync interval S, `floodgate replay --boxes N --sync-ms S`
(every source on one box by its address, as ECMP; the `share: cluster` rule's consumption
exchanged every S of packet time, so the lag is L = S) under one rule, key dst, 1000/s, burst
50. From PASS.pcap, after the join (the first 2 S + 1 s left out): the worst excess over one
GCRA (b = 50, T = 1 ms) in any window of passed frames, against the bound's cluster term
(N - 1) * (b + ceil(S / T)); the passed rate against 1000/s; the longest pause. The same rule
without `share: cluster` at each N beside it (each box its own 1000/s). Each replay's CPU time
(user + sys of the child, wait4) is kept. Then the store's cost per box (perf/harness_store.py):
the sync script (control/cluster/cluster_store.lua) run against a redis-server of our own on a
Unix socket, one box pushing K keys and another reading them, for K = 10, 1,000, 100,000: bytes
each way, round trip, the store's time and the Redis commands inside (INFO commandstats).

Writes boxes-DATE.json (every figure; a later run the same day replaces it), boxes.svg and
boxes.md (perf/report_boxes.py) into --out, prints each row's check (PASS when the worst excess
is within its bound) and the files written; exits 1 when a row is over its bound or a case
failed. Replay is deterministic (a fixed hash seed): each case runs once. About 20 s on 2 CPUs.
No root, no hugepages.
"""
import argparse
import bisect
import datetime
import hashlib
import json
import os
import resource
import shutil
import struct
import sys
import tempfile
import time

from harness_cores import rusage_run
from harness_peers import ROOT
from harness_processes import log
from harness_results import machine
from harness_store import STORE_SYNC_MS, measure_store
import report_boxes

sys.path.insert(0, os.path.join(ROOT, "tests/control"))
from frames import udp4  # noqa: E402  (the tests' own frame writer, independent of floodgate's)

BOXES = (2, 4, 8, 16, 32, 64)
SYNC_MS = (10, 50, 100, 500)
QUICK_BOXES, QUICK_SYNC_MS = (2, 64), (10, 500)

# The trace: 20 s at 20,000 frames/s from 2,039 sources (a prime: 37 k mod 2,039 visits every
# source once in 2,039 frames), so that each of 64 boxes gets ~32 sources, ~312 frames/s, more
# than its share 1000/64 of the limit.
SECONDS = 20
FRAMES_PER_S = 20_000
SOURCES = 2039
SOURCE_STRIDE = 37
DST = "198.18.255.1"
START_NS = 1_800_000_000 * 10**9

# The rule (T = 1 ms).
RATE = 1000
BURST = 50
INTERVAL_NS = 10**9 // RATE
RULES = """table: {{ entries_per_core: 4096 }}
cluster: {{ name: sim, redis: "127.0.0.1:6379", sync_ms: 100 }}
rules:
  - name: total
    match: {{ proto: udp, dst_port: 53 }}
    key: dst
    limit: {{ rate: {rate}/s, burst: {burst} }}
    reserve: {{ established: 0%, verified: 0%, known: 0% }}
{share}"""
SHARE = "    share: cluster\n"
SKIP_EXTRA_NS = 10**9  # after the join (2 syncs), one more second left out
UNSHARED_SKIP_NS = 10**9
REPLAY_TIMEOUT_S = 300



# ---- The trace ----

def source(h):
    return "198.18.%d.%d" % (h // 200, 1 + h % 200)


def write_trace(path, seconds):
    """The flood, `seconds` long, as a nanosecond pcap (magic 0xa1b23c4d); its SHA-256 (the
    first 16 digits)."""
    frames = [udp4(source(h), DST, 1024 + h, 53) for h in range(SOURCES)]
    gap = 10**9 // FRAMES_PER_S
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
        f.write(head)
        digest.update(head)
        chunk = []
        for k in range(seconds * FRAMES_PER_S):
            frame = frames[k * SOURCE_STRIDE % SOURCES]
            t = START_NS + k * gap
            chunk.append(struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame)))
            chunk.append(frame)
            if len(chunk) >= 8192:
                data = b"".join(chunk)
                f.write(data)
                digest.update(data)
                chunk = []
        data = b"".join(chunk)
        f.write(data)
        digest.update(data)
    return digest.hexdigest()[:16]


def pcap_times(path):
    """The records' timestamps in ns (nanosecond or microsecond pcap, little-endian)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    sub = {0xA1B23C4D: 1, 0xA1B2C3D4: 1000}[magic]
    out, off = [], 24
    while off + 16 <= len(data):
        s, frac, incl, _ = struct.unpack_from("<IIII", data, off)
        out.append(s * 10**9 + frac * sub)
        off += 16 + incl
    return out


# ---- The worst window over one GCRA ----

def worst_gcra_excess(times, burst, interval_ns):
    """tests/scenario/harness.cpp's worst_gcra_excess, in O(n log n): the largest
    (j - i + 1) - (burst + floor((t_j - t_i) / T)) over i <= j of the sorted times, with the
    window [t_i, t_j]. With t = q T + r, floor((t_j - t_i) / T) = q_j - q_i - [r_j < r_i], so
    the excess is (j - q_j) - (i - q_i) + 1 - burst + [r_i > r_j]: for each j, the largest
    q_i - i over i <= j, and over those i with r_i > r_j plus one (a Fenwick tree of prefix
    maxima, ranks of r descending). Returns (excess, t_i, t_j, frames in the window), or None
    for no frames."""
    t = sorted(times)
    if not t:
        return None
    q = [x // interval_ns for x in t]
    r = [x % interval_ns for x in t]
    rs = sorted(set(r), reverse=True)  # rank 1 = the largest r
    rank = {v: k + 1 for k, v in enumerate(rs)}
    size = len(rs)
    neg = (-(1 << 62), -1)
    tree = [neg] * (size + 1)
    best_all = neg
    worst = None
    for j in range(len(t)):
        v = (q[j] - j, j)
        k = rank[r[j]]
        while k <= size:  # insert i = j
            if v > tree[k]:
                tree[k] = v
            k += k & -k
        if v > best_all:
            best_all = v
        # i with r_i > r_j: ranks 1 .. rank[r_j] - 1
        above, k = neg, rank[r[j]] - 1
        while k > 0:
            if tree[k] > above:
                above = tree[k]
            k -= k & -k
        base = j - q[j] + 1 - burst
        cand = (base + best_all[0], best_all[1])
        if above[1] >= 0 and base + above[0] + 1 >= cand[0]:
            cand = (base + above[0] + 1, above[1])
        if worst is None or cand[0] > worst[0]:
            worst = (cand[0], cand[1], j)
    excess, i, j = worst
    return excess, t[i], t[j], j - i + 1


def worst_gcra_excess_brute(times, burst, interval_ns):
    """The definition, pair by pair (for the self-check on small inputs)."""
    t = sorted(times)
    return max((j - i + 1) - (burst + (t[j] - t[i]) // interval_ns)
               for i in range(len(t)) for j in range(i, len(t)))


def self_check():
    """The fast worst excess against the definition, on random times and on bursts."""
    import random
    rnd = random.Random(26)
    for case in range(300):
        n = rnd.randint(1, 60)
        span = rnd.choice((5, 50, 500)) * INTERVAL_NS
        t = [rnd.randrange(span) for _ in range(n)]
        b = rnd.choice((0, 1, 5, 50))
        fast = worst_gcra_excess(t, b, INTERVAL_NS)[0]
        slow = worst_gcra_excess_brute(t, b, INTERVAL_NS)
        if fast != slow:
            raise RuntimeError("worst_gcra_excess self-check: case %d: %d, by definition %d" %
                               (case, fast, slow))


def cluster_term(boxes, sync_ms):
    """(N - 1) * (b + ceil(L / T)), L = S."""
    lag_ns = sync_ms * 10**6
    return (boxes - 1) * (BURST + -(-lag_ns // INTERVAL_NS))


# ---- The replays ----

class Boxes:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.work = tempfile.mkdtemp(prefix="floodgate-boxes-")
        self.cpu = 1 if os.cpu_count() > 1 else 0
        self.end_ns = args.seconds * 10**9  # the trace's end, from its first frame

    def snapshot_floodgate(self):
        """A copy of the floodgate binary for every replay (the build may be rebuilt while the
        case runs); its digest and build time go into the results."""
        src = os.path.join(self.build, "dataplane/floodgate")
        copy = os.path.join(self.work, "floodgate-boxes")
        shutil.copy2(src, copy)
        with open(copy, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        built = datetime.datetime.fromtimestamp(os.stat(copy).st_mtime, datetime.timezone.utc)
        self.floodgate = copy
        return {"path": src, "sha256_16": digest, "built": built.isoformat(timespec="seconds")}

    def rules(self, shared):
        path = os.path.join(self.work, "rules-%s.yaml" % ("shared" if shared else "unshared"))
        with open(path, "w") as f:
            f.write(RULES.format(rate=RATE, burst=BURST, share=SHARE if shared else ""))
        return path

    def replay(self, rules, boxes, sync_ms):
        """One replay; its rusage, wall time, stats and the passed frames' times."""
        passed, stats = (os.path.join(self.work, n) for n in ("pass.pcap", "stats.json"))
        for p in (passed, stats):
            if os.path.exists(p):
                os.unlink(p)
        cmd = ["taskset", "-c", str(self.cpu), self.floodgate, "replay", "--config", rules,
               "--in", self.trace, "--pass", passed, "--stats", stats, "--boxes", str(boxes),
               "--sync-ms", str(sync_ms), "--quiet"]
        rc, wall_s, ru, err = rusage_run(cmd, REPLAY_TIMEOUT_S)
        if rc != 0:
            raise RuntimeError("floodgate replay --boxes %d --sync-ms %d exited %d:\n%s" % (
                boxes, sync_ms, rc, err[-2000:]))
        with open(stats) as f:
            s = json.load(f)
        return {"cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime,
                "sys_s": ru.ru_stime, "wall_s": wall_s, "peak_rss_kb": ru.ru_maxrss,
                "packets": s["packets"], "passed": s["passed"],
                "cluster": s.get("cluster")}, pcap_times(passed)

    @staticmethod
    def rate_between(times, from_ns, to_ns):
        n = bisect.bisect_left(times, START_NS + to_ns) - bisect.bisect_left(times,
                                                                             START_NS + from_ns)
        return n * 1e9 / (to_ns - from_ns)

    def longest_pause_ns(self, times, from_ns):
        """The longest time without a passed frame in [from_ns, the trace's end)."""
        edges = [START_NS + from_ns] + [t for t in times if t >= START_NS + from_ns] + [
            START_NS + self.end_ns]
        return max(b - a for a, b in zip(edges, edges[1:]))

    def shared_row(self, rules, boxes, sync_ms):
        run, times = self.replay(rules, boxes, sync_ms)
        times.sort()
        skip_ns = 2 * sync_ms * 10**6 + SKIP_EXTRA_NS
        after = [t for t in times if t >= START_NS + skip_ns]
        w = worst_gcra_excess(after, BURST, INTERVAL_NS)
        whole = worst_gcra_excess(times, BURST, INTERVAL_NS)
        bound = cluster_term(boxes, sync_ms)
        run.update({
            "boxes": boxes, "sync_ms": sync_ms, "skip_ms": skip_ns // 10**6,
            "worst_excess": w[0] if w else None,
            "worst_window": {"from_ms": (w[1] - START_NS) / 1e6, "to_ms": (w[2] - START_NS) / 1e6,
                             "frames": w[3]} if w else None,
            "worst_excess_whole_run": whole[0] if whole else None,
            "worst_window_whole_run": {"from_ms": (whole[1] - START_NS) / 1e6,
                                       "to_ms": (whole[2] - START_NS) / 1e6,
                                       "frames": whole[3]} if whole else None,
            "bound_term": bound,
            "excess_over_bound": w[0] / bound if w else None,
            "within_bound": w is not None and w[0] <= bound,
            "passed_rate_steady": self.rate_between(times, skip_ns, self.end_ns),
            "passed_rate_steady_over_limit": self.rate_between(times, skip_ns,
                                                               self.end_ns) / RATE,
            "passed_rate_whole_run": len(times) * 1e9 / self.end_ns,
            "longest_pause_ms": self.longest_pause_ns(times, skip_ns) / 1e6,
        })
        log("%d boxes, sync %d ms: worst excess %s (bound %d), %.0f/s passed, longest pause "
            "%.0f ms, CPU %.2f s" % (boxes, sync_ms, run["worst_excess"], bound,
                                     run["passed_rate_steady"], run["longest_pause_ms"],
                                     run["cpu_s"]))
        return run

    def unshared_row(self, rules, boxes):
        run, times = self.replay(rules, boxes, 100)
        times.sort()
        rate = self.rate_between(times, UNSHARED_SKIP_NS, self.end_ns)
        run.update({"boxes": boxes, "skip_ms": UNSHARED_SKIP_NS // 10**6,
                    "passed_rate_steady": rate, "passed_rate_steady_over_limit": rate / RATE,
                    # each box its own 1000/s while its sources offer more than that
                    "expected_rate": min(boxes * RATE, FRAMES_PER_S)})
        log("%d boxes, unshared: %.0f/s passed, CPU %.2f s" % (boxes, rate, run["cpu_s"]))
        return run


# ---- The run ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--boxes", default=",".join(map(str, BOXES)))
    ap.add_argument("--sync-ms", default=",".join(map(str, SYNC_MS)))
    ap.add_argument("--seconds", type=int, default=SECONDS, help="the trace's length")
    ap.add_argument("--quick", action="store_true",
                    help="2 and 64 boxes, syncs of 10 and 500 ms, no store measurement")
    ap.add_argument("--out", default=os.path.join(ROOT, "perf/results"))
    args = ap.parse_args()
    boxes = QUICK_BOXES if args.quick else tuple(int(x) for x in args.boxes.split(","))
    syncs = QUICK_SYNC_MS if args.quick else tuple(int(x) for x in args.sync_ms.split(","))
    started, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    self_check()
    h = Boxes(args)
    results = {"machine": machine(),
               "command": " ".join(["perf/harness_boxes.py"] + sys.argv[1:]),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "binary": h.snapshot_floodgate()}
    h.trace = os.path.join(h.work, "flood.pcap")
    log("writing the trace")
    results["trace"] = {
        "seconds": args.seconds, "frames_per_s": FRAMES_PER_S,
        "frames": args.seconds * FRAMES_PER_S,
        "sources": SOURCES, "sources_in": "198.18.0.0/16 (198.18.H/200.1+H%200)",
        "source_of_frame_k": "%d k mod %d" % (SOURCE_STRIDE, SOURCES),
        "destination": DST + ":53", "sha256_16": write_trace(h.trace, args.seconds)}
    shared_rules, unshared_rules = h.rules(True), h.rules(False)
    with open(shared_rules) as f:
        results["rules"] = f.read()
    results["rule"] = {"rate_per_s": RATE, "burst": BURST, "interval_ns": INTERVAL_NS}
    results["settings"] = {"boxes": list(boxes), "sync_ms": list(syncs),
                           "skip": "2 S + %d ms" % (SKIP_EXTRA_NS // 10**6),
                           "unshared_skip_ms": UNSHARED_SKIP_NS // 10**6,
                           "bound_term": "(N - 1) * (b + ceil(S / T))"}
    failures = []
    results["shared"], results["unshared"] = [], []
    load = [os.getloadavg()[0]]
    for n in boxes:
        for s in syncs:
            try:
                results["shared"].append(h.shared_row(shared_rules, n, s))
            except Exception as e:  # the other rows still run
                log("shared, %d boxes, sync %d ms failed: %s" % (n, s, e))
                failures.append({"case": "shared %d boxes %d ms" % (n, s), "error": str(e)})
        try:
            results["unshared"].append(h.unshared_row(unshared_rules, n))
        except Exception as e:
            log("unshared, %d boxes failed: %s" % (n, e))
            failures.append({"case": "unshared %d boxes" % n, "error": str(e)})
    load.append(os.getloadavg()[0])
    results["loadavg_1min"] = load
    if args.quick:
        results["store"] = {"skipped": "--quick"}
    else:
        log("the store's cost (redis-server on a Unix socket)")
        try:
            results["store"] = measure_store(h.work)
        except Exception as e:
            log("the store's cost failed: %s" % e)
            failures.append({"case": "store", "error": str(e)})
            results["store"] = {"skipped": str(e)}
    results["store"]["sync_ms"] = list(STORE_SYNC_MS)
    results["failures"] = failures
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    results["harness"] = {
        "wall_s": time.monotonic() - started,
        "cpu_s_self": cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime,
        "cpu_s_children": kids.ru_utime + kids.ru_stime,
        "replays_cpu_s": sum(r["cpu_s"] for r in results["shared"] + results["unshared"])}
    written = report_boxes.write_all(results, args.out)
    shutil.rmtree(h.work, ignore_errors=True)
    ok = report_boxes.print_checks(results)
    for path in written:
        print(path)
    return 0 if ok and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
