#!/usr/bin/python3
"""A cluster key rotated while two boxes sync (issue 42), end to end: two `floodgate run`s and
their `floodctl daemon --cluster-key-file`, joined through a redis-server this test starts on a
free loopback port. The key is rotated as the README says, one box at a time, each step a
daemon restarted with the next file: the new key second on every box, then first, then alone.

Checks, after each box's step: the restarted daemon has synced again and so has the other, both
daemons count 2 live boxes, no entry was refused on either, and neither dataplane fell back (its
count of state changes is what it was after the first join).

Prints TAP; needs root (DPDK) and redis-server; builds nothing.
Usage: test_cluster_key_rotation.py BUILD_DIR
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from control_lib import check, finish, results, wait_until  # noqa: E402
from test_cluster import Box, Redis, free_port, states  # noqa: E402
from test_cluster_signed import CLUSTER, RULE, RULES  # noqa: E402

OLD, NEW = "k2026a " + "a" * 64, "k2026b " + "b" * 64
STEPS = [[OLD], [OLD, NEW], [NEW, OLD], [NEW]]  # the key file's lines at each step


def key_file(work, box, step):
    path = os.path.join(work, "%s-%d.key" % (box.name, step))
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("\n".join(STEPS[step]) + "\n")
    return path


def restart_daemon(work, box, step):
    check(box.terminate("daemon") == 0, "%s's daemon stops cleanly for step %d" % (box.name, step))
    link = box.links.pop("daemon", None)
    if link is not None:
        link.close()
    box.daemon_cmd = box.base_cmd + ["--cluster-key-file", key_file(work, box, step)]
    box.start_daemon()


def rotation(work, boxes):
    joined = wait_until(states(boxes, "joined", boxes_live=2), "both joined", 20)
    changes = [view["changes"] for view in joined]
    for step in range(1, len(STEPS)):
        for box in boxes:
            other = boxes[1] if box is boxes[0] else boxes[0]
            others_syncs = other.store()["syncs"]
            restart_daemon(work, box, step)
            wait_until(lambda: os.path.exists(box.ctl_sock) and box.store().get("syncs", 0) >= 5,
                       "%s's daemon to sync 5 times" % box.name, 20)
            wait_until(lambda: other.store()["syncs"] >= others_syncs + 5,
                       "%s's daemon to sync 5 more times" % other.name, 20)
            stores = [b.store() for b in boxes]
            views = [b.cluster() for b in boxes]
            refused = [sum(s["store"]["entries_refused"].values()) for s in stores]
            check(all(s["live_boxes"] == 2 for s in stores) and refused == [0, 0] and
                  [v["state"] for v in views] == ["joined", "joined"] and
                  [v["changes"] for v in views] == changes,
                  "step %d on %s (keys %s): 2 live on both, nothing refused, no fallback" % (
                      step, box.name, " ".join(k.split()[0] for k in STEPS[step])),
                  (stores, views))


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    if shutil.which("redis-server") is None:
        check(False, "redis-server is installed", "apt-get install redis-server")
        print("1..%d" % len(results))
        return 1
    work = tempfile.mkdtemp(prefix="fg-cluster-rotation-")
    port = free_port()
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES.format(name=CLUSTER, port=port, timeout=3, rule=RULE))
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.1", "198.18.255.1", 1024, 80)])
    redis = Redis(work, port)
    boxes = [Box(work, name, rules, trace, 1 if os.cpu_count() > 1 else 0) for name in "AB"]
    for box in boxes:
        box.dataplane_cmd = [x.replace(",infinite_rx=1", "") for x in box.dataplane_cmd]
        box.base_cmd = list(box.daemon_cmd)
        box.daemon_cmd = box.base_cmd + ["--cluster-key-file", key_file(work, box, 0)]
    try:
        redis.start()
        for box in boxes:
            box.start_dataplane()
        for box in boxes:
            wait_until(box.up, "%s's dataplane" % box.name, 60)
            box.start_daemon()
        rotation(work, boxes)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for box in boxes:
            box.close()
        redis.stop()
    return finish(work, ("dataplane-A.err", "dataplane-B.err", "daemon-A.log", "daemon-B.log"))


if __name__ == "__main__":
    sys.exit(main())
