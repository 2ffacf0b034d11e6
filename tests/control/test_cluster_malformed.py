#!/usr/bin/python3
"""Malformed entries in the cluster's store (issue 42), end to end: one box, a `floodgate run`
and its `floodctl daemon`, joined to a cluster through a redis-server this test starts on a free
loopback port; another box's entries are written to the stream with plain XADDs, signed with the
cluster's key (tests/control/cluster_entries.py): malformed data from a box that holds it, the
worst case, since an unsigned entry is refused before its lines are read.

Checks, in order:
  1. bytes that are not UTF-8 in a line's rule or key, beside a valid 7-packet charge in the same
     entry: each bad line refused and counted on its own, the 7 packets charged exactly, and no
     sync lost;
  2. oversized fields, each in an entry of its own beside a valid 5-packet charge: a rule, a
     key, a box id, a payload past the store's bounds, each refused and counted once;
  3. 1,200 boxes heard from (a signed entry each) and a boxes set of 1,102 members (this box
     and 1,101 written with ZADD, plus 5 stamped in the store's future): the daemon counts the
     1,202 it believes live (those, C and itself), not the set's members, tells the dataplane
     1,024 (its most), and syncs go on, none refused;
  4. a dataplane that refuses every cluster_sync (a stand-in on the daemon's dataplane socket,
     answering as floodgate did to a boxes set past its bound): each refusal a lost sync in the
     daemon's status and one log line (tests/test_metrics.cpp shows the status's counts as
     floodgate_cluster_syncs_lost_total).
Expected counts are the entries this test wrote, counted here.

Prints TAP; needs root (DPDK) and redis-server; builds nothing.
Usage: test_cluster_malformed.py BUILD_DIR
"""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quiet_boxes import run_quiet_boxes  # noqa: E402
from control_lib import check, wait_until  # noqa: E402
from cluster_entries import CLUSTER, SigningBox  # noqa: E402
from test_cluster import Box, redis_command, states  # noqa: E402

RULE = "total"
KEY = "198.18.255.1/32"  # the rule's one key: its destination, at /32
BOX_TIMEOUT_S = 60  # the boxes heard from stay live for the whole check
HEARD = 1200  # boxes that write one signed entry each
LIVE = HEARD + 2  # ... with this box and C, heard from in the steps before

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


def line(rule, key, packets):
    return rule + b"\t" + key + b"\t" + str(packets).encode() + b"\n"


def counts(box):
    """What the test reads back after each step: the dataplane's and the daemon's figures. (A
    round the dataplane did not answer in time, on a loaded machine, is not this test's subject:
    dataplane_failures is shown in the details, never asserted.)"""
    c, s = box.cluster(), box.store()
    return {"charged": c["charged_packets"], "refused": s["refused"],
            "refused_charges": c["refused_charges"], "syncs_refused": s["syncs_refused"],
            "dataplane_failures": s["dataplane_failures"], "state": c["state"],
            "last_error": s["last_error"], "syncs": s["syncs"]}


def wait_for(box, charged, refused, what):
    """Waits until the box's charges and refusals reach the figures given, then checks they
    are exactly those, and no sync refused by the dataplane."""
    got = wait_until(lambda: (lambda c: c if c["charged"] >= charged and c["refused"] >= refused
                              else None)(counts(box)), what, 10)
    check(got["charged"] == charged and got["refused"] == refused and
          got["syncs_refused"] == 0 and got["refused_charges"] == 0,
          "%s: charged %d packets, %d refused in the store, no sync refused" % (
              what, charged, refused), got)
    return got


def malformed(redis, a):
    base = counts(a)
    charged, refused = base["charged"], base["refused"]
    good = line(RULE.encode(), KEY.encode(), 7)
    bad = [line(RULE.encode(), b"\xff", 1),                   # the fuzzer's byte, in the key
           line(b"\xfftotal", KEY.encode(), 1),               # ... in the rule
           line(RULE.encode(), b"198.18.255.1/3\xc0\xb2", 1)]  # an overlong '2'
    c = SigningBox("C")
    redis_command(redis.port, "XADD", LOG_KEY, "*", *c.fields(bad[0] + good + b"".join(bad[1:])))
    charged, refused = charged + 7, refused + len(bad)
    wait_for(a, charged, refused, "3 lines not UTF-8 beside a 7-packet charge in one entry")

    five = line(RULE.encode(), KEY.encode(), 5)
    oversized = {
        "a rule of 65 bytes": (b"C", line(b"r" * 65, KEY.encode(), 1)),
        "a key of 129 bytes": (b"C", line(RULE.encode(), b"k" * 129, 1)),
        "a box id of 65 bytes": (b"C" * 65, five),
        "a payload past 1 MiB": (b"C", five * (1 + (1 << 20) // len(five))),
    }
    for what, (box_id, payload) in oversized.items():
        signer = c if box_id == b"C" else SigningBox(box_id)
        redis_command(redis.port, "XADD", LOG_KEY, "*", *signer.fields(payload))
        redis_command(redis.port, "XADD", LOG_KEY, "*", *c.fields(five))
        charged, refused = charged + 5, refused + 1
        wait_for(a, charged, refused, what + ", then a 5-packet charge")


def many_boxes(redis, a):
    # 1,101 members at the store's clock, 5 an hour ahead of it; this box is the 1,102nd.
    redis_command(redis.port, "EVAL", """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000
        for i = 1, 1101 do redis.call('ZADD', KEYS[1], now, 'forged' .. i) end
        for i = 1, 5 do redis.call('ZADD', KEYS[1], now + 3600000, 'ahead' .. i) end
        return 0""", 1, BOXES_KEY)
    for i in range(HEARD):
        redis_command(redis.port, "XADD", LOG_KEY, "*", *SigningBox("heard%d" % i).fields(b""))
    seen = wait_until(lambda: (lambda s: s if s["live_boxes"] == LIVE else None)(a.store()),
                      "the daemon to count %d boxes" % LIVE, 10)
    views = wait_until(states([a], "joined", boxes_live=1024), "the dataplane at 1,024 boxes", 10)
    before = counts(a)
    wait_until(lambda: a.cluster()["syncs"] >= views[0]["syncs"] + 10, "10 more syncs", 10)
    after, store = counts(a), a.store()
    check(seen["boxes_told"] == 1024 and store["live_boxes"] == LIVE and
          after["syncs"] > before["syncs"] and after["syncs_refused"] == 0 and
          redis_command(redis.port, "ZCARD", BOXES_KEY) == 1102,
          "%d boxes heard from, 1,101 members forged and 5 from the store's future: %d live, "
          "1,024 told the dataplane, the future members removed, syncs go on (%d -> %d), none "
          "refused" % (HEARD, LIVE, before["syncs"], after["syncs"]), (seen, store, after))


class RefusingDataplane:
    """A stand-in on a dataplane socket: a cluster configured in its status, nothing admitted,
    and every cluster_sync refused as floodgate refused a boxes set past its bound. Counts the
    refusals it gave; once stopped, it refuses cluster_take too, so that no round reaches a
    cluster_sync and the count holds still while its status is still answered."""
    REASON = 'field "boxes" is out of range'

    def __init__(self, path, redis_port):
        self.path, self.refused, self.lock = path, 0, threading.Lock()
        self.stopped = False
        self.cluster = {"configured": True, "name": CLUSTER, "redis": "127.0.0.1:%d" % redis_port,
                        "sync_ms": 100, "box_timeout_ms": 3000, "state": "alone",
                        "reason": "no sync from floodctl", "boxes": 1, "syncs": 0,
                        "failed_syncs": 0}
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def answer(self, cmd):
        if cmd == "status":
            return {"ok": True, "cluster": self.cluster}
        if cmd == "cluster_take":
            if self.stopped:
                return {"ok": False, "error": "stopped"}
            return {"ok": True, "consumed": [], "escalated": []}
        if cmd == "cluster_sync":
            with self.lock:
                self.refused += 1
            return {"ok": False, "error": self.REASON}
        return {"ok": False, "error": "not this stand-in's"}

    def serve(self, conn):
        with conn, conn.makefile("rwb") as f:
            for request in f:
                f.write(json.dumps(self.answer(json.loads(request).get("cmd"))).encode() + b"\n")
                f.flush()

    def close(self):
        self.server.close()


def refused_syncs(work, redis):
    stand_in = RefusingDataplane(os.path.join(work, "refusing.sock"), redis.port)
    box = Box(work, "R", None, None, 0)
    box.dp_sock = stand_in.path
    box.daemon_cmd[box.daemon_cmd.index("--dataplane") + 1] = stand_in.path
    try:
        box.start_daemon()
        wait_until(lambda: os.path.exists(box.ctl_sock), "the daemon's socket", 10)
        wait_until(lambda: box.store().get("syncs_refused", 0) >= 3, "3 refused syncs", 10)
        stand_in.stopped = True
        store = wait_until(lambda: (lambda s: s if s.get("dataplane_failures", 0) > 0 else None)(
            box.store()), "the daemon to find cluster_take refused", 10)
        check(store["syncs_refused"] == stand_in.refused and store["syncs"] == 0,
              "a dataplane refusing every sync: %d refusals, %d lost syncs in the daemon's "
              "status, none counted done" % (stand_in.refused, store["syncs_refused"]), store)
        with open(box.daemon_log) as f:
            logged = [ln for ln in f.read().splitlines()
                      if "the dataplane refused the sync: " + stand_in.REASON in ln]
        check(len(logged) == 1, "the refusal logged once (its reason did not change)", logged)
    finally:
        box.close()
        stand_in.close()


def main():
    def steps(work, redis, boxes):
        malformed(redis, boxes[0])
        many_boxes(redis, boxes[0])
        refused_syncs(work, redis)
    return run_quiet_boxes(
        "fg-cluster-malformed-",
        lambda port: RULES.format(name=CLUSTER, port=port, timeout=BOX_TIMEOUT_S, rule=RULE),
        "A", steps, ("dataplane-A.err", "daemon-A.log", "daemon-R.log", "redis.log"))


if __name__ == "__main__":
    sys.exit(main())
