#!/usr/bin/python3
"""A compromised box (issue 42): what another box of the cluster tells this one is bounded even
when it is taken as genuine. One box, a `floodgate run` and its `floodctl daemon`, joined to a
cluster through a redis-server this test starts on a free loopback port; the other box's
entries are written to the stream with plain XADDs, as a box holding the cluster's keys would.

Checks, in order:
  1. a charge of 10^9 packets to the shared key: charged at the bound, computed here from the
     rule as written (2 x (1000/s x 100 ms + 50) per other box), the rest counted as clamped;
     an honest 7-packet charge after it is charged whole; with a third box D live, C's next
     10^9 is held to one box's bound (not two), and D's 7 beside it charged whole;
  2. an escalation of 0.0.0.0/0 refused as shorter than the rules' source keys; one with a TTL
     of ten years taken with the rule's own escalation TTL (no XDP tier here, so skipped), its
     TTL counted as clamped;
  3. allows of 0.0.0.0/0 and ::/0 refused as too short, an allow of a /24 for ten years held
     for an hour (remote_allow_max_ttl's default), one of a /25 for 60 s held as told;
  4. floodctl status and the daemon's metrics show each count.
Expected counts are the entries this test wrote, counted here.

Prints TAP; needs root (DPDK) and redis-server; builds nothing.
Usage: test_cluster_bounds.py BUILD_DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quiet_boxes import run_quiet_boxes  # noqa: E402
from cluster_entries import CLUSTER, SigningBox  # noqa: E402
from control_lib import check, wait_until  # noqa: E402
from test_cluster import metrics_samples, redis_command  # noqa

RULE = "total"
KEY = "198.18.255.1/32"  # the rule's one key: its destination, at /32
RATE_PER_S, BURST, SYNC_MS, MARGIN = 1000, 50, 100, 2
ESCALATE_TTL_S = 120
TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000
HOUR_S = 3600

RULES = """\
cluster: {{ name: {name}, redis: "127.0.0.1:{port}", sync_ms: {sync}, boxes: 2,
           box_timeout: 60s }}
rules:
  - name: {rule}
    match: {{ proto: udp, dst_port: 53 }}
    key: dst
    limit: {{ rate: {rate}/s, burst: {burst} }}
    share: cluster
    fallback: local
  - name: sources
    match: {{ proto: udp, dst_port: 123 }}
    limit: {{ rate: 10/s, burst: 10 }}
    escalate: {{ after: 10s, ttl: {ttl}s }}
"""

LOG_KEY = "fg:{%s}:log" % CLUSTER


BOX_C = SigningBox("C")  # the compromised box: it holds the cluster key


def xadd(redis, *lines):
    redis_command(redis.port, "XADD", LOG_KEY, "*", *BOX_C.fields(
        "".join("\t".join(map(str, ln)) + "\n" for ln in lines)))


def figures(box):
    c, s = box.cluster(), box.store()
    return {"charged": c["charged_packets"], "clamped": c["clamped_charges"],
            "clamped_packets": c["clamped_packets"], "refused_charges": c["refused_charges"],
            "boxes": c["boxes"], "esc": c["escalations"], "allows": s["allows_bounded"],
            "allows_added": s["allows_added"], "allows_refused": s["allows_refused"]}


def charges(redis, a):
    base = figures(a)
    others = max(base["boxes"], 2) - 1
    bound = MARGIN * (RATE_PER_S * SYNC_MS // 1000 + BURST) * others
    xadd(redis, (RULE, KEY, 10 ** 9))
    got = wait_until(lambda: (lambda f: f if f["clamped"] > base["clamped"] else None)(
        figures(a)), "the oversized charge", 10)
    check(got["charged"] - base["charged"] == bound and got["clamped"] == base["clamped"] + 1 and
          got["clamped_packets"] - base["clamped_packets"] == 10 ** 9 - bound and
          got["refused_charges"] == base["refused_charges"],
          "a charge of 10^9 packets: %d charged (the bound for %d other box(es)), %d clamped" % (
              got["charged"] - base["charged"], others, 10 ** 9 - bound), (base, got))
    xadd(redis, (RULE, KEY, 7))
    after = wait_until(lambda: (lambda f: f if f["charged"] > got["charged"] else None)(
        figures(a)), "the 7-packet charge", 10)
    check(after["charged"] == got["charged"] + 7 and after["clamped"] == got["clamped"],
          "an honest 7-packet charge after it: charged whole, nothing clamped", after)
    # A third box D, honest: with 3 live, C's next 10^9 is still held to one box's bound (300,
    # not the 600 two other boxes could admit), and D's 7 beside it is charged whole.
    d = SigningBox("D")
    redis_command(redis.port, "XADD", LOG_KEY, "*", *d.fields(""))
    wait_until(lambda: figures(a)["boxes"] == 3, "D to be live", 10)
    one = MARGIN * (RATE_PER_S * SYNC_MS // 1000 + BURST)
    xadd(redis, (RULE, KEY, 10 ** 9))
    redis_command(redis.port, "XADD", LOG_KEY, "*", *d.fields("%s\t%s\t7\n" % (RULE, KEY)))
    three = wait_until(lambda: (lambda f: f if f["charged"] >= after["charged"] + one + 7 and
                                f["clamped"] > after["clamped"] else None)(figures(a)),
                       "C's and D's charges", 10)
    check(three["charged"] == after["charged"] + one + 7 and
          three["clamped_packets"] - after["clamped_packets"] == 10 ** 9 - one and
          three["boxes"] == 3,
          "3 boxes live: C's 10^9 charged %d (one box's bound, not %d), D's 7 beside it whole" %
          (three["charged"] - after["charged"] - 7, 2 * one), (after, three))


def escalations(redis, a):
    base = figures(a)["esc"]
    xadd(redis, ("!escalated", "0.0.0.0/0", 60000), ("!escalated", "198.18.99.9/32", TEN_YEARS_MS))
    got = wait_until(lambda: (lambda e: e if e["skipped"] > base["skipped"] else None)(
        figures(a)["esc"]), "the escalation", 10)
    check(got["ttl_clamped"] == base["ttl_clamped"] + 1 and got["refused"] == base["refused"] and
          got["short"] == base["short"] + 1 and got["over_count"] == base["over_count"] and
          got["skipped"] == base["skipped"] + 1,
          "an escalation of 0.0.0.0/0 refused as short; one for ten years taken (skipped: no "
          "XDP tier), its TTL clamped", got)


def allows(redis, a):
    base = figures(a)
    xadd(redis, ("!allow", "0.0.0.0/0", TEN_YEARS_MS), ("!allow", "::/0", TEN_YEARS_MS),
         ("!allow", "198.18.77.0/24", TEN_YEARS_MS), ("!allow", "198.18.78.0/25", 60000))
    got = wait_until(lambda: (lambda f: f if f["allows_added"] >= base["allows_added"] + 2
                              else None)(figures(a)), "the allows", 10)
    was, now = base["allows"], got["allows"]
    check(now["short"] == was["short"] + 2 and now["ttl_clamped"] == was["ttl_clamped"] + 1 and
          got["allows_added"] == base["allows_added"] + 2 and
          got["allows_refused"] == base["allows_refused"] and
          all(now[k] == was[k] for k in ("off", "malformed", "over_count")),
          "allows of 0.0.0.0/0 and ::/0 refused as short (2), a /24 for ten years clamped (1), "
          "2 added", (base, got))
    held = {o["prefix"]: o for o in a.ask("overrides")["overrides"] if o["list"] == "allow"}
    check(set(held) == {"198.18.77.0/24", "198.18.78.0/25"} and
          60 < held["198.18.77.0/24"]["ttl_left_s"] <= HOUR_S and
          0 < held["198.18.78.0/25"]["ttl_left_s"] <= 60,
          "the /24 held for an hour at most, the /25 for its 60 s, nothing shorter", held)


def shown(a):
    _, text, _ = a.ctl.run("status")
    f = figures(a)
    line = ("bounded: %d charges clamped (%d packets left out); escalations %d short, %d past "
            "the count, %d TTLs clamped; allows refused %d (off), %d (short), %d (malformed), %d "
            "(past the count), %d TTLs clamped" % (
                f["clamped"], f["clamped_packets"], f["esc"]["short"], f["esc"]["over_count"],
                f["esc"]["ttl_clamped"], f["allows"]["off"], f["allows"]["short"],
                f["allows"]["malformed"], f["allows"]["over_count"],
                f["allows"]["ttl_clamped"]))
    check(line in text, "floodctl status: " + line, text)
    _, samples = metrics_samples(a)

    def metric(what, reason):
        return samples.get(("floodgate_cluster_bounded_total",
                            (("cluster", CLUSTER), ("reason", reason), ("what", what))))
    want = {("charge", "clamped"): f["clamped"],
            ("charge_packets", "clamped"): f["clamped_packets"],
            ("escalation", "short"): f["esc"]["short"],
            ("escalation", "ttl_clamped"): f["esc"]["ttl_clamped"],
            ("allow", "short"): f["allows"]["short"],
            ("allow", "ttl_clamped"): f["allows"]["ttl_clamped"]}
    got = {k: metric(*k) for k in want}
    check(got == want, "floodgate_cluster_bounded_total: the status's counts", (got, want))


def main():
    def steps(work, redis, boxes):
        a = boxes[0]
        charges(redis, a)
        escalations(redis, a)
        allows(redis, a)
        shown(a)
    return run_quiet_boxes(
        "fg-cluster-bounds-",
        lambda port: RULES.format(name=CLUSTER, port=port, sync=SYNC_MS, rule=RULE,
                                  rate=RATE_PER_S, burst=BURST, ttl=ESCALATE_TTL_S),
        "A", steps, ("dataplane-A.err", "daemon-A.log", "redis.log"))


if __name__ == "__main__":
    sys.exit(main())
