"""The seeds' botnet, live, through a real Prometheus (issue 43): floodgate run on one veth of a
pair the test makes (its peer in a namespace of the test's own) and its floodctl daemon, scraped
every second by Debian's prometheus with config/prometheus/floodgate-destination-alerts.yaml
loaded. One per-source rule (20/s per source). A sender in the namespace sends 50 packets a
second to 198.18.8.8 from 5 sources for 12 s (the destination's normal), then 600 a second from
600 sources, each at 1/s, far under its limit: total load high, no key over its limit.

Checks: after the normal phase Prometheus holds the destination's baseline (about 50/s) and the
signal is 0; in the botnet phase the rule's floodgate_rule_load_high_destinations reaches 1,
floodgate_destination_load_high is 1 for 198.18.8.8/32 alone, and the alert
FloodgateDestinationLoadHigh is pending (its `for: 1m` not waited out here: promtool's test
covers it firing); SIGINT: floodgate exits 0.

    destinations_live.py BUILD_DIR

Needs root and prometheus; cleans up after itself. Every traffic phase is bounded in packets and
time. Addresses: raw frames of 198.18.0.0/15 only. TAP output."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "control"))
sys.path.insert(0, HERE)
from lab_common import veth_into_namespace  # noqa: E402
from control_lib import FLOODCTL, FLOODGATE, check, finish, wait_until  # noqa: E402

SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
ALERTS = os.path.join(SRC, "config", "prometheus", "floodgate-destination-alerts.yaml")
RULES = """\
rules:
  - name: per_source
    match: { proto: udp, dst_port: 53 }
    key: src
    limit: { rate: 20/s, burst: 20 }
"""
# The sender: phases of PPS:SOURCES:SECONDS, paced by the clock, each source its turn; a line on
# stdout as each phase starts. At most 50 x 12 + 600 x 40 frames.
SENDER = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
def frame(src):
    udp = struct.pack(">HHHH", 1024, 53, 26, 0) + b"q" * 18
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton("198.18.8.8"))
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + udp
for n, phase in enumerate(sys.argv[2:]):
    pps, sources, seconds = (int(x) for x in phase.split(":"))
    frames = [frame("198.18.%d.%d" % (100 + i // 250, 1 + i % 250)) for i in range(sources)]
    print("phase", n, flush=True)
    start = time.monotonic()
    for k in range(pps * seconds):
        due = start + k / pps
        while (wait := due - time.monotonic()) > 0:  # read once: a second read may be past due
            time.sleep(min(0.002, wait))
        s.send(frames[k % sources])
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, work, target):
        self.port, self.work = free_port(), work
        self.config = os.path.join(work, "prometheus.yml")
        with open(self.config, "w") as f:  # JSON is YAML
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                       "rule_files": [ALERTS],
                       "scrape_configs": [{"job_name": "floodgate", "scrape_interval": "1s",
                                           "static_configs": [{"targets": [target]}]}]}, f)
        self.process = subprocess.Popen(
            ["prometheus", "--config.file=" + self.config,
             "--storage.tsdb.path=" + os.path.join(work, "prometheus-data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))

    def query(self, q):
        """The query's samples: {labels: value}, or None while Prometheus does not answer."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode(
            {"query": q}))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                result = json.load(r)["data"]["result"]
        except OSError:
            if self.process.poll() is not None:
                raise RuntimeError("prometheus exited with %d" % self.process.returncode)
            return None
        return {tuple(sorted(x["metric"].items())): float(x["value"][1]) for x in result}

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def run(work, tag, ns):
    dev, peer = tag + "-o", tag + "-op"
    dp_sock, ctl_sock = os.path.join(work, "dataplane.sock"), os.path.join(work, "floodctl.sock")
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES)
    metrics = "127.0.0.1:%d" % free_port()
    fg = subprocess.Popen(
        [FLOODGATE, "run", "--lcores", "0@0,1@%d" % (1 if os.cpu_count() > 1 else 0),
         "--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--file-prefix", tag,
         "--vdev", "net_af_packet0,iface=%s,qpairs=1" % dev, "--", "--config", rules,
         "--control", dp_sock], stdout=open(os.path.join(work, "floodgate.log"), "w"),
        stderr=subprocess.STDOUT)
    daemon = sender = prometheus = None
    try:
        wait_until(lambda: os.path.exists(dp_sock) or fg.poll() is not None, "floodgate", 60)
        daemon = subprocess.Popen([FLOODCTL, "--socket", ctl_sock, "daemon", "--dataplane",
                                   dp_sock, "--metrics", metrics],
                                  stdout=open(os.path.join(work, "daemon.log"), "w"),
                                  stderr=subprocess.STDOUT)
        prometheus = Prometheus(work, metrics)
        wait_until(lambda: prometheus.query("up") == {(("__name__", "up"), ("instance", metrics),
                                                       ("job", "floodgate")): 1.0},
                   "Prometheus to scrape floodctl", 60)
        sender = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c", SENDER, peer,
                                   "50:5:12", "600:600:40"], stdout=subprocess.PIPE, text=True)
        assert sender.stdout.readline().strip() == "phase 0"
        assert sender.stdout.readline().strip() == "phase 1"  # 12 s of the normal sent
        dst = '{rule="per_source",destination="198.18.8.8/32"}'
        base = prometheus.query("floodgate_destination_baseline_packets_per_second" + dst)
        quiet = prometheus.query('floodgate_rule_load_high_destinations{rule="per_source"}')
        check(base is not None and len(base) == 1 and 40 <= list(base.values())[0] <= 60 and
              quiet is not None and list(quiet.values()) == [0.0],
              "after 12 s at 50/s: 198.18.8.8's baseline in Prometheus %s/s, the signal 0" % (
                  list((base or {}).values())), (base, quiet))
        fired = wait_until(lambda: (lambda v: v if v and list(v.values()) == [1.0] else None)(
            prometheus.query('floodgate_rule_load_high_destinations{rule="per_source"}')),
            "the signal in Prometheus", 30)
        high = prometheus.query("floodgate_destination_load_high == 1")
        ratio = prometheus.query("floodgate_destination_baseline_ratio" + dst)
        pending = wait_until(lambda: prometheus.query(
            'ALERTS{alertname="FloodgateDestinationLoadHigh"}'), "the alert to be pending", 10)
        check([dict(k).get("destination") for k in high] == ["198.18.8.8/32"] and fired,
              "600/s from 600 sources, each at 1/s under its 20/s: the signal 1 in Prometheus, "
              "for 198.18.8.8/32 alone (ratio to its baseline %s)" % list(ratio.values()),
              (high, ratio))
        check(len(pending) == 1 and dict(list(pending)[0]).get("alertstate") in ("pending",
                                                                               "firing"),
              "FloodgateDestinationLoadHigh %s in Prometheus on the live scrape" %
              dict(list(pending)[0]).get("alertstate") if pending else "-", pending)
        sender.kill()
        sender.wait()
        fg.send_signal(signal.SIGINT)
        check(fg.wait(timeout=30) == 0, "floodgate exits 0 on SIGINT")
    finally:
        for p in (sender, daemon, fg):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if prometheus is not None:
            prometheus.stop()


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (namespaces, veths, DPDK)")
        return 0
    tag = "fgdl%d" % (os.getpid() % 100000)
    work = tempfile.mkdtemp(prefix="fg-destinations-")
    try:
        with veth_into_namespace(tag) as ns:
            run(work, tag, ns)
    except Exception as e:  # a failed wait or command ends the run, counted
        check(False, "the lab ran to the end", repr(e))
    return finish(work, ("floodgate.log", "daemon.log", "prometheus.log"))


if __name__ == "__main__":
    sys.exit(main())
