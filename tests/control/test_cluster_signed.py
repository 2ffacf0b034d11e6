#!/usr/bin/python3
"""Signed entries in the cluster's store (issue 42), end to end: one box, a `floodgate run` and
its `floodctl daemon --cluster-key-file`, joined to a cluster through a redis-server this test
starts on a free loopback port. This test plays a second box C, holding the cluster key, and an
attacker who can reach Redis but holds no key; both write with plain XADDs. The MACs are made
here, in Python's hmac, from docs/cluster.md's description of what an entry signs.

Checks, in order:
  1. C's signed 7-packet charge is charged exactly, and C is live (its entry is its heartbeat);
  2. forged entries: an unsigned charge of 10^9, an unsigned `!allow 0.0.0.0/0` for 10 years,
     C's genuine entry replayed, the same entry with its charge raised, an entry under a wrong
     secret, one under a key id the box does not hold, one too old, one from the future, and a
     forged heartbeat for box X (an empty unsigned entry and a ZADD to the boxes set); then C's
     next signed 5-packet charge: only the 5 charged, each forged entry refused and counted by
     its reason, no allow added, the live boxes still A and C;
  3. the counts in `floodctl status` and in the daemon's Prometheus metrics;
  4. A's daemon restarted without --cluster-key-file: no sync at all (its status says why, the
     dataplane alone), and an unsigned charge, an unsigned allow and C's signed charge written
     then change nothing: no packet charged, no allow added.
Expected counts are the entries this test wrote, counted here.

Prints TAP; needs root (DPDK) and redis-server; builds nothing.
Usage: test_cluster_signed.py BUILD_DIR
"""
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quiet_boxes import run_quiet_boxes  # noqa: E402
from control_lib import FLOODCTL, check, wait_until  # noqa: E402
from cluster_entries import SigningBox  # noqa: E402
from test_cluster import redis_command, states  # noqa: E402

CLUSTER = "fgtest"
RULE = "total"
KEY = "198.18.255.1/32"
BOX_TIMEOUT_S = 60  # C's one heartbeat keeps it live through the whole check

RULES = """\
cluster: {{ name: {name}, redis: "127.0.0.1:{port}", sync_ms: 100, boxes: 2,
           box_timeout: {timeout}s }}
rules:
  - name: {rule}
    match: {{ proto: udp, dst_port: 53 }}
    key: dst
    limit: {{ rate: 1000/s, burst: 50 }}
    share: cluster
    fallback: local
"""

LOG_KEY = "fg:{%s}:log" % CLUSTER
BOXES_KEY = "fg:{%s}:boxes" % CLUSTER
REASONS = ("unsigned", "unknown_key", "bad_mac", "replayed", "too_old", "future",
           "too_many_boxes")


def line(packets, rule=RULE, key=KEY):
    return ("%s\t%s\t%d\n" % (rule, key, packets)).encode()


def counts(box):
    c, s = box.cluster(), box.store()
    by = s.get("store", {}).get("entries_refused", {})
    return {"charged": c["charged_packets"], "refused": s["refused"],
            "by": {r: by.get(r, 0) for r in REASONS}, "live": s["live_boxes"],
            "allows_added": s["allows_added"], "syncs_refused": s["syncs_refused"]}


def xadd(redis, fields):
    return redis_command(redis.port, "XADD", LOG_KEY, "*", *fields)


def scenario(redis, a):
    c = SigningBox("C")
    base = counts(a)
    xadd(redis, c.fields(line(7)))
    got = wait_until(lambda: (lambda n: n if n["charged"] >= base["charged"] + 7 and
                              n["live"] == 2 else None)(counts(a)), "C's charge", 10)
    check(got["charged"] == base["charged"] + 7 and got["refused"] == base["refused"] and
          got["live"] == 2, "C's signed 7-packet charge charged exactly, C live", got)

    genuine = c.fields(line(3))
    raised = list(genuine)
    raised[-1] = line(3000)
    forged = {
        "unsigned": [["b", "C", "d", line(10 ** 9)],
                     ["b", "C", "d", b"!allow\t0.0.0.0/0\t315360000000\n"],
                     ["b", "X", "d", b""]],
        "replayed": [genuine],  # written twice: the first is believed, the second refused
        "bad_mac": [raised, c.fields(line(9), secret="wrong" * 13)],
        "unknown_key": [c.fields(line(9), key_id="k2")],
        "too_old": [c.fields(line(9), skew_ms=-2 * BOX_TIMEOUT_S * 1000)],
        "future": [c.fields(line(9), skew_ms=2 * BOX_TIMEOUT_S * 1000)],
        "too_many_boxes": [],  # 4,097 boxes: tests/test_cluster_signing.cpp
    }
    xadd(redis, genuine)
    for reason in REASONS:
        for entry in forged[reason]:
            xadd(redis, entry)
    redis_command(redis.port, "ZADD", BOXES_KEY, int(time.time() * 1000), "X")
    xadd(redis, c.fields(line(5)))  # after them all: once it is charged, all were read
    want = {r: got["by"][r] + len(forged[r]) for r in REASONS}
    total = sum(len(v) for v in forged.values())
    after = wait_until(lambda: (lambda n: n if n["charged"] >= got["charged"] + 8 else None)(
        counts(a)), "C's 5-packet charge after the forged entries", 10)
    check(after["charged"] == got["charged"] + 3 + 5,
          "only C's genuine 3 and 5 packets charged, nothing forged", after)
    check(after["by"] == want and after["refused"] == got["refused"] + total,
          "each forged entry refused and counted by its reason (%d in all)" % total, after)
    check(after["allows_added"] == 0 and after["live"] == 2 and after["syncs_refused"] == 0,
          "no allow added, the live boxes still A and C (X's heartbeat not believed)", after)
    return after


def shown(a, after):
    text = subprocess.run([FLOODCTL, "--socket", a.ctl_sock, "status"], capture_output=True,
                          text=True, timeout=30).stdout
    want = "entries signed with k1 (0 key rotations read); refused: " + " ".join(
        "%s %d" % (r, after["by"][r]) for r in sorted(REASONS) if after["by"][r] > 0)
    check(want in text, "floodctl status shows them: %s" % want, text)
    from prometheus_client.parser import text_string_to_metric_families
    addr = a.ctl.json("status")["daemon"]["metrics"]
    body = urllib.request.urlopen("http://%s/metrics" % addr, timeout=30).read().decode()
    samples = {s.labels["reason"]: s.value for f in text_string_to_metric_families(body)
               for s in f.samples if s.name == "floodgate_cluster_entries_refused_total"}
    check(samples == {r: float(after["by"][r]) for r in REASONS},
          "floodgate_cluster_entries_refused_total{reason} the same", samples)


def no_key(redis, a):
    a.terminate("daemon")
    if a.links.get("daemon") is not None:
        a.links.pop("daemon").close()
    at = a.daemon_cmd.index("--cluster-key-file")
    a.daemon_cmd = a.daemon_cmd[:at] + a.daemon_cmd[at + 2:]
    a.start_daemon()
    seen = wait_until(lambda: (lambda s: s if s.get("keys") == [] and s.get("store_failures", 0)
                               >= 3 else None)(a.store() if os.path.exists(a.ctl_sock) else {}),
                      "A's daemon without a key to fail 3 syncs", 15)
    view = wait_until(states([a], "alone"), "A alone", 10)[0]
    before = counts(a)
    xadd(redis, ["b", "C", "d", line(10 ** 9)])
    xadd(redis, ["b", "C", "d", b"!allow\t198.18.0.0/16\t60000\n"])
    xadd(redis, SigningBox("C").fields(line(5)))
    failures = seen["store_failures"]
    wait_until(lambda: a.store()["store_failures"] >= failures + 5, "5 more syncs without a key",
               10)
    after = counts(a)
    allows = [o for o in a.ask("overrides")["overrides"] if o["list"] == "allow"]
    check("no cluster key" in seen["last_error"] and after["charged"] == before["charged"] and
          after["allows_added"] == 0 and not allows and a.cluster()["state"] == "alone",
          "A's daemon without --cluster-key-file: no sync (\"%s\"), A alone (%s); an unsigned "
          "charge and allow and a signed charge written then: nothing charged (%d), no allow" % (
              seen["last_error"][:40], view["reason"], after["charged"] - before["charged"]),
          (seen, after, allows))


def main():
    def steps(work, redis, boxes):
        shown(boxes[0], scenario(redis, boxes[0]))
        no_key(redis, boxes[0])
    return run_quiet_boxes(
        "fg-cluster-signed-",
        lambda port: RULES.format(name=CLUSTER, port=port, timeout=BOX_TIMEOUT_S, rule=RULE),
        "A", steps, ("dataplane-A.err", "daemon-A.log", "redis.log"))


if __name__ == "__main__":
    sys.exit(main())
