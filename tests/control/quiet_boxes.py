"""The run the cluster's control tests without traffic share (test_cluster_signed,
test_cluster_malformed, test_cluster_bounds, test_cluster_key_rotation): a redis-server on a free
loopback port, boxes whose dataplanes read one frame once (no traffic: what a box is charged is
what the others told it) and their daemons, all joined; then the test's scenario; then everything
stopped and the TAP ending."""
import os
import shutil
import tempfile

import frames
from control_lib import check, finish, plan, wait_until
from test_cluster import Box, Redis, free_port, states


def run_quiet_boxes(prefix, rules_for, names, scenario, logs, key_file=""):
    """rules_for(port): the rules file's text for the store's port; key_file(work, name), or "" for
    the tests' shared key; scenario(work, redis, boxes) runs once all are joined. Returns the exit
    code; skips without root (DPDK), fails without redis-server."""
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    if shutil.which("redis-server") is None:
        check(False, "redis-server is installed", "apt-get install redis-server")
        return plan()  # 1: a check failed
    work = tempfile.mkdtemp(prefix=prefix)
    port = free_port()
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(rules_for(port))
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.1", "198.18.255.1", 1024, 80)])
    redis = Redis(work, port)
    boxes = [Box(work, name, rules, trace, 1 if os.cpu_count() > 1 else 0,
                 key_file=key_file(work, name) if key_file else "") for name in names]
    for box in boxes:
        box.dataplane_cmd = [x.replace(",infinite_rx=1", "") for x in box.dataplane_cmd]
    try:
        redis.start()
        for box in boxes:
            box.start_dataplane()
        for box in boxes:
            wait_until(box.up, "%s's dataplane" % box.name, 60)
            box.start_daemon()
        wait_until(states(boxes, "joined"), "%s joined" % " and ".join(names), 20)
        scenario(work, redis, boxes)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for box in boxes:
            box.close()
        redis.stop()
    return finish(work, logs)
