#!/usr/bin/python3
"""A cluster key rotated while two boxes sync (issue 42), end to end: two `floodgate run`s and
their `floodctl daemon --cluster-key-file`, joined through a redis-server this test starts on a
free loopback port. The key is rotated as docs/cluster.md says, one box at a time, each step the
box's key file rewritten as configuration management does (a new file renamed over the old),
the daemons running on: the new key second on every box, then first, then alone.

Checks, after each box's step: its daemon read the new keys (its status's keys and rotations),
both daemons synced 5 more times, both count 2 live boxes, no entry was refused on either, and
neither dataplane fell back (its count of state changes is what it was after the first join).
Before the last step, A's file is rewritten readable by all: refused, said in A's status and
metrics, the keys in use kept, and nothing else changes; then mended.

Prints TAP; needs root (DPDK) and redis-server; builds nothing.
Usage: test_cluster_key_rotation.py BUILD_DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quiet_boxes import run_quiet_boxes  # noqa: E402
from control_lib import check, wait_until  # noqa: E402
from test_cluster import metrics_samples, states  # noqa: E402
from test_cluster_signed import CLUSTER, RULE, RULES  # noqa: E402

OLD, NEW = "k2026a " + "a" * 64, "k2026b " + "b" * 64
STEPS = [[OLD], [OLD, NEW], [NEW, OLD], [NEW]]  # the key file's lines at each step


def write_key_file(path, lines, mode=0o600):
    """A new file renamed over the old one: the daemon never reads half a file."""
    with open(os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path + ".new", mode)
    os.rename(path + ".new", path)


def key_path(work, box):
    return os.path.join(work, "%s.key" % box.name)


def synced_on(boxes):
    """Both daemons sync 5 more times; then 2 live on both, nothing refused, no fallback."""
    before = [b.store()["syncs"] for b in boxes]
    for box, n in zip(boxes, before):
        wait_until(lambda: box.store()["syncs"] >= n + 5, "%s's daemon to sync 5 more times" %
                   box.name, 20)
    stores = [b.store() for b in boxes]
    views = [b.cluster() for b in boxes]
    refused = [sum(s["store"]["entries_refused"].values()) for s in stores]
    return stores, views, refused


def rotation(work, boxes):
    joined = wait_until(states(boxes, "joined", boxes_live=2), "both joined", 20)
    changes = [view["changes"] for view in joined]
    rotations = 0
    for step in range(1, len(STEPS)):
        if step == len(STEPS) - 1:
            refused_file(work, boxes)
        rotations += 1
        for box in boxes:
            write_key_file(key_path(work, box), STEPS[step])
            ids = [k.split()[0] for k in STEPS[step]]
            wait_until(lambda: box.store()["keys"] == ids, "%s's daemon to read keys %s" % (
                box.name, ids), 10)
            stores, views, refused = synced_on(boxes)
            check(all(s["live_boxes"] == 2 for s in stores) and refused == [0, 0] and
                  [v["state"] for v in views] == ["joined", "joined"] and
                  [v["changes"] for v in views] == changes and
                  box.store()["key_reloads"] == rotations,
                  "step %d on %s (keys %s, read without a restart, rotation %d): 2 live on "
                  "both, nothing refused, no fallback" % (step, box.name, " ".join(ids),
                                                          rotations), (stores, views))


def refused_file(work, boxes):
    """A's file rewritten readable by all, then mended: refused, the keys kept meanwhile."""
    a = boxes[0]
    kept = a.store()["keys"]
    reloads = a.store()["key_reloads"]
    write_key_file(key_path(work, a), STEPS[-1], mode=0o644)
    seen = wait_until(lambda: (lambda s: s if s["key_file_refused"] else None)(a.store()),
                      "A to refuse its key file", 10)
    stores, views, refused = synced_on(boxes)
    check("chmod 600" in seen["key_file_refused"] and stores[0]["keys"] == kept and
          stores[0]["key_reloads"] == reloads and refused == [0, 0] and
          all(s["live_boxes"] == 2 for s in stores) and
          [v for (n, _), v in metrics_samples(a)[1].items()
           if n == "floodgate_cluster_key_file_refused"] == [1.0],
          "A's key file made readable by all: refused (\"%s\"), keys %s kept, 2 live on both, "
          "nothing refused, floodgate_cluster_key_file_refused 1" % (
              seen["key_file_refused"], kept), stores)
    write_key_file(key_path(work, a), STEPS[-2])  # mended, as it was
    wait_until(lambda: not a.store()["key_file_refused"], "A to take its mended file", 10)
    check(a.store()["key_reloads"] == reloads and a.store()["keys"] == kept,
          "the file mended as it was: A takes it, no rotation counted", a.store())


def main():
    def first_key_file(work, name):
        write_key_file(os.path.join(work, "%s.key" % name), STEPS[0])
        return os.path.join(work, "%s.key" % name)
    return run_quiet_boxes(
        "fg-cluster-rotation-",
        lambda port: RULES.format(name=CLUSTER, port=port, timeout=3, rule=RULE), "AB",
        lambda work, redis, boxes: rotation(work, boxes),
        ("dataplane-A.err", "dataplane-B.err", "daemon-A.log", "daemon-B.log"),
        key_file=first_key_file)


if __name__ == "__main__":
    sys.exit(main())
