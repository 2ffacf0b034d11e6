#!/usr/bin/env python3
"""Prints, and in check mode asserts, what tests/lab/cluster.sh measured.

  cluster_check.py WORK check|show

WORK is the script's work folder: shared.yaml and local.yaml (the rules), times.json, and one
folder per run, shared/ (the rule shared by the two boxes through Redis) and local/ (the same
rule on each box alone): server.json (the kernel receive time of every datagram the server
got, per source counts, the socket's drops), sent-a.json and sent-b.json (the senders), exit-a
and exit-b (the dataplanes' exit status after SIGINT), stats-a.json and stats-b.json
(floodgate run --stats), floodgate-a.log and floodgate-b.log; in shared/ also
status-before/after-a/b.json (floodctl status -j around the traffic).

The figures asserted come from the server's own receive times and the senders, not from
floodgate; floodgate's counters are printed beside them.

The bound (docs/cluster.md, "Several boxes"): joined, N boxes pass at most b + floor(W / T) +
(N - 1)(b + ceil(L / T)) in any window W; live, L <= 2 sync intervals + the rounds' time, taken as 3
intervals (tests/control/test_cluster.py does the same). Measured as the worst excess over one
GCRA (b, T) of the server's receive times, with test_cluster.py's worst_gcra_excess, over the
steady part of the sending: from a second after both senders started (they start once both
boxes have joined) to the end of the first to finish.
"""
import math
import os
import re
import sys

from lab_common import Checks, Work, clock_allowance, dpdk_tsc_khz

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "control"))
from test_cluster import worst_gcra_excess  # noqa: E402  (the same measure as the control test)

work, mode = sys.argv[1], sys.argv[2]
lab = Work(work)

BOXES = 2
SKIP_S = 1.0  # the start of the sending left out of the steady window
SHARED_MIN, LOCAL_MIN = 0.8, 1.6  # x the rate: not starved; unshared, about twice the limit
SENT_MIN = 0.9  # x the planned rate: the senders offered what they were asked to


def limit():
    """The rule's rate (per s) and burst, from the rules file."""
    m = re.search(r"limit:\s*\{\s*rate:\s*(\d+)/s,\s*burst:\s*(\d+)", lab.text("shared.yaml"))
    return int(m.group(1)), int(m.group(2))


def clock_ratio():
    """How much faster floodgate's clock may run than the real one (lab_common.tsc_ratio), from
    the log of the box whose clock runs fastest: each box admits that much more than rate x
    real seconds.
    (ratio, how it was found)."""
    khz = [k for box in "ab" for k in [dpdk_tsc_khz(lab.text(f"shared/floodgate-{box}.log"))] if k]
    return clock_allowance(min(khz) if khz else None)


def run(name):
    """One run's figures over its steady window."""
    server = lab.load(f"{name}/server.json", {}) or {}
    sent = {box: lab.load(f"{name}/sent-{box}.json", {}) or {} for box in "ab"}
    times = sorted(server.get("times_ns", []))
    starts = [s.get("start") for s in sent.values()]
    ends = [s.get("end") for s in sent.values()]
    r = {"server": server, "sent": sent, "all": len(times), "window_s": None, "count": 0,
         "rate": 0.0, "excess": None, "frames": []}
    if None in starts or None in ends:
        return r
    lo_ns, hi_ns = int((max(starts) + SKIP_S) * 1e9), int(min(ends) * 1e9)
    r["frames"] = [t for t in times if lo_ns <= t < hi_ns]
    r["window_s"] = (hi_ns - lo_ns) / 1e9
    r["count"] = len(r["frames"])
    r["rate"] = r["count"] / r["window_s"] if r["window_s"] > 0 else 0.0
    return r


def rule_counters(name, box):
    stats = lab.load(f"{name}/stats-{box}.json", {}) or {}
    return next((x for x in stats.get("rules", []) if x.get("name") == "to_server"), {})


def exits(name):
    return {box: lab.text(f"{name}/exit-{box}").strip() or "?" for box in "ab"}


rate, burst = limit()
interval_ns = 1_000_000_000 // rate  # T
times = lab.load("times.json", {}) or {}
sync_ms = times.get("sync_ms", 100)
lag_ms = 3 * sync_ms  # L: two sync intervals plus the rounds' time, at most
cross_bound = (BOXES - 1) * (burst + math.ceil(lag_ms * 1_000_000 / interval_ns))  # 350
ratio, ratio_how = clock_ratio()
shared, local = run("shared"), run("local")
w = shared["window_s"] or 0.0
# Each box's clock running fast lets the pair pass (ratio - 1) x rate x W more in a window W.
clock_allowance = math.ceil((ratio - 1) * rate * w)
excess_bound = cross_bound + clock_allowance
for r in (shared, local):
    r["excess"] = worst_gcra_excess(r["frames"], burst, interval_ns)


def cluster_view(when, box):
    """The dataplane's cluster section of floodctl status -j, before or after the traffic."""
    return ((lab.load(f"shared/status-{when}-{box}.json", {}) or {}).get("dataplane") or {}).get(
        "cluster") or {}


before = {box: cluster_view("before", box) for box in "ab"}
after = {box: cluster_view("after", box) for box in "ab"}

print("=== cluster lab ===")
print(f"rule to_server: UDP port 5353, key dst, {rate:,}/s burst {burst}, no reserve; shared: "
      f"`share: cluster`, {BOXES} boxes, sync every {sync_ms} ms; local: the same rule alone on "
      f"each box")
print(f"offered: each sender {times.get('send_pps', 0):,}/s for {times.get('send_seconds', 0)} s; "
      f"the boxes joined {times.get('joined', 0) - times.get('daemons_started', 0):.2f} s after "
      f"the daemons started")
print(f"floodgate's clock: {ratio_how}")
for name, r in (("shared", shared), ("local", local)):
    print(f"--- {name}")
    for box in "ab":
        s = r["sent"][box]
        c = rule_counters(name, box)
        secs = (s.get("end", 0) - s.get("start", 0)) or 1
        print(f"  box {box.upper()}: sender {s.get('src', '?')} sent {s.get('sent', 0):,} in "
              f"{secs:.2f} s ({s.get('sent', 0) / secs:,.0f}/s, {s.get('errors', 0)} errors); the "
              f"server got {r['server'].get('sources', {}).get(s.get('src'), 0):,} from it; "
              f"floodgate: matched {c.get('matched', 0):,}, passed {c.get('passed', 0):,}, "
              f"refused {c.get('refused', 0):,}")
    print(f"  server: {r['all']:,} datagrams in all ({r['server'].get('socket_dropped', '?')} "
          f"dropped by its socket); steady window {r['window_s'] or 0:.3f} s: {r['count']:,}, "
          f"{r['rate']:,.0f}/s; worst excess over one GCRA (b {burst}, T 1 ms): {r['excess']}")
    if name == "shared":
        for box in "ab":
            c = after[box]
            print(f"  box {box.upper()}'s cluster after the traffic: {c.get('state')}, "
                  f"{c.get('boxes')} boxes, {c.get('syncs')} syncs ({c.get('failed_syncs')} "
                  f"failed), told {c.get('told_packets')} packets, charged "
                  f"{c.get('charged_packets')}")
            lines = [line[len("floodgate: cluster "):] for line in
                     lab.text(f"shared/floodgate-{box}.log").splitlines()
                     if line.startswith("floodgate: cluster ")]
            print(f"  box {box.upper()}'s dataplane said: " + "; ".join(lines))

if mode == "show":
    sys.exit(0)

check = Checks()


for name, r in (("shared", shared), ("local", local)):
    ex = exits(name)
    server = r["server"]
    check(all(v == "0" for v in ex.values()) and server.get("drained") and
          server.get("socket_dropped") == 0,
          f"{name}: both dataplanes exited cleanly after SIGINT (A {ex['a']}, B {ex['b']}); the "
          f"server stopped once the last datagrams were in and its socket dropped none "
          f"({server.get('socket_dropped')})")
    offered = [r["sent"][box] for box in "ab"]
    check(all(s.get("sent", 0) >= SENT_MIN * s.get("rate", 1) * s.get("seconds", 1) and
              s.get("end", 0) - s.get("start", 0) <= s.get("seconds", 0) + 1 for s in offered),
          f"{name}: each sender offered at least {SENT_MIN} x its {times.get('send_pps', 0):,}/s "
          f"(" + ", ".join(f"{s.get('src')} {s.get('sent', 0):,} in "
                           f"{s.get('end', 0) - s.get('start', 0):.2f} s" for s in offered) + ")")

check(all(before[b].get("state") == after[b].get("state") == "joined" and
          before[b].get("changes") == after[b].get("changes") and after[b].get("boxes") == BOXES
          for b in "ab"),
      "shared: both boxes joined before the traffic and stayed joined through it, "
      + ", ".join(f"{b.upper()} changes {before[b].get('changes')} -> {after[b].get('changes')}, "
                  f"{after[b].get('boxes')} boxes" for b in "ab"))
check(shared["excess"] is not None and shared["excess"] <= excess_bound,
      f"shared: worst excess of the server's receive times over one GCRA (b {burst}, T 1 ms) in "
      f"{w:.3f} s: {shared['excess']} <= (N-1)(b + ceil(L/T)) = {cross_bound} (N {BOXES}, L "
      f"{lag_ms} ms) + clock {clock_allowance} = {excess_bound}")
upper = rate * w * ratio + burst + cross_bound
check(shared["count"] <= upper,
      f"shared: the server got {shared['count']:,} in {w:.3f} s ({shared['rate']:,.0f}/s) <= "
      f"{rate:,}/s x W x {ratio:.5f} + b + (N-1)(b + ceil(L/T)) = {upper:,.0f} (not "
      f"{BOXES} x the limit)")
check(shared["rate"] >= SHARED_MIN * rate,
      f"shared: {shared['rate']:,.0f}/s >= {SHARED_MIN} x {rate:,}/s (the limit is not starved)")
check(local["rate"] >= LOCAL_MIN * rate,
      f"local, for comparison: unshared the server got {local['count']:,} in "
      f"{local['window_s'] or 0:.3f} s, {local['rate']:,.0f}/s >= {LOCAL_MIN} x {rate:,}/s "
      f"(each box its own limit)")
# The measure itself: without sharing, the same worst excess is far over the bound, so a
# cluster that did not share would fail the check above.
check(local["excess"] is not None and local["excess"] > excess_bound,
      f"local, for comparison: worst excess over one GCRA {local['excess']} > {excess_bound}, "
      f"the bound the shared run kept")
check.finish()
