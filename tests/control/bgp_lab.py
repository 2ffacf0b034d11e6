"""The lab of test_flowspec_bgp.py: two gobgpd speakers, each in a network namespace, over a
veth pair, and the box (floodgate run and floodctl daemon) in the first one:

  F  198.18.250.1/30  AS 64512  floodctl's gobgpd, configured with docs/cluster.md's
                                /etc/gobgpd.toml as it is there; the box runs here, its
                                daemon's --flowspec at F's API
  R  198.18.250.2/30  AS 64513  the "router", whose global RIB shows what it received

Both take ipv4-unicast, ipv4-flowspec and ipv6-flowspec; each one's gRPC API is 127.0.0.1:50051
inside its namespace. What the router received is read with `gobgp -j global rib -a FAMILY` and
decoded here from the NLRI's components and operator bytes (RFC 8955 section 4.2: 1
destination, 2 source, 3 protocol, 5 destination port), independently of the exporter's reader;
the action is the traffic-rate extended community (type 0x80, subtype 6) at rate 0.

The box's sockets are paths in the work directory, which every namespace reaches (a path-bound
UNIX socket is not scoped by network namespace), so floodctl and the dataplane link run here;
its metrics endpoint is on F's loopback and is read from inside F.
"""
import json
import os
import signal
import subprocess
import time

import frames
from control_lib import FLOODCTL, FLOODGATE, DataplaneLink, Floodctl, wait_until

API = "127.0.0.1:50051"
CLUSTER_DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "cluster.md")
F_ADDR, R_ADDR = "198.18.250.1", "198.18.250.2"
WAIT_S = 30  # longest any one state is waited for
BLACKHOLE = 0xFFFF029A  # 65535:666

CONFIG = """\
[global.config]
  as = {as_}
  router-id = "{addr}"
  local-address-list = ["{addr}"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "{peer}"
    peer-as = {peer_as}
  [neighbors.transport.config]
    local-address = "{addr}"
{afi_safis}"""
AFI_SAFI = """  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "{0}"
"""



def readme_gobgpd_config():
    """docs/cluster.md's /etc/gobgpd.toml: from its first line to the blank line after it."""
    with open(CLUSTER_DOC) as f:
        text = f.read()
    start = text.index("# /etc/gobgpd.toml")
    return text[start:text.index("\n\n", start) + 1]


# Reads the daemon's metrics endpoint from inside F, where it listens on the loopback.
FETCH = ("import sys, urllib.request; "
         "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())")


def sh(*args, ns=None, check_rc=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check_rc and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr + p.stdout))
    return p.stdout


def settle(read, want, timeout=WAIT_S):
    """Polls read() until it equals want or the deadline; (held, last value, seconds)."""
    start = time.monotonic()
    while True:
        value = read()
        if value == want or time.monotonic() - start > timeout:
            return value == want, value, time.monotonic() - start
        time.sleep(0.005)


def ops(parts, component):
    """A numeric component's (operator byte, value) pairs."""
    return tuple((o["op"], o["value"]) for o in parts.get(component, []))


class Topology:
    def __init__(self, work):
        self.tag = "fgfs%d" % os.getpid()
        self.work = work
        self.f, self.r = self.tag + "-f", self.tag + "-r"
        self.gobgpd = {}

    def setup(self):
        tag = self.tag
        for ns in (self.f, self.r):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", tag + "f", "type", "veth", "peer", "name", tag + "r")
        for ns, dev, addr in ((self.f, tag + "f", F_ADDR), (self.r, tag + "r", R_ADDR)):
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", addr + "/30", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        afi_safis = "".join(AFI_SAFI.format(a)
                            for a in ("ipv4-unicast", "ipv4-flowspec", "ipv6-flowspec"))
        self.configure(self.f, readme_gobgpd_config())
        self.configure(self.r, CONFIG.format(as_=64513, addr=R_ADDR, peer_as=64512, peer=F_ADDR,
                                             afi_safis=afi_safis))

    def configure(self, ns, config):
        """(Re)starts ns's gobgpd with config."""
        if ns in self.gobgpd:
            self.kill_gobgpd(ns)
        with open(os.path.join(self.work, ns + ".toml"), "w") as f:
            f.write(config)
        self.start_gobgpd(ns)

    def start_gobgpd(self, ns):
        log = open(os.path.join(self.work, ns + ".log"), "a")
        # ip netns exec execs gobgpd: the process is gobgpd itself.
        self.gobgpd[ns] = subprocess.Popen(
            ["ip", "netns", "exec", ns, "gobgpd", "-f", os.path.join(self.work, ns + ".toml"),
             "--api-hosts", API, "--pprof-disable", "-p"], stdout=log, stderr=subprocess.STDOUT)

    def kill_gobgpd(self, ns):
        p = self.gobgpd.pop(ns)
        p.kill()
        p.wait(timeout=WAIT_S)

    def established(self):
        try:
            peers = json.loads(sh("gobgp", "-j", "neighbor", ns=self.r))
            return [p["state"].get("session_state") for p in peers] == [6]  # ESTABLISHED
        except (RuntimeError, ValueError, KeyError, TypeError):
            return False

    def received(self, family):
        """The flowspec routes R received from F, as (source, destination, protocol ops,
        port ops, discard) tuples."""
        routes = set()
        for paths in json.loads(sh("gobgp", "-j", "global", "rib", "-a", family,
                                   ns=self.r)).values():
            for path in paths:
                if path.get("neighbor-ip") != F_ADDR:
                    continue
                parts = {c["type"]: c["value"] for c in path["nlri"]["value"]}
                discard = any(e.get("type") == 0x80 and e.get("subtype") == 6
                              and e.get("rate") == 0
                              for a in path["attrs"] if a["type"] == 16 for e in a["value"])
                routes.add((parts.get(2, {}).get("prefix"), parts.get(1, {}).get("prefix"),
                            ops(parts, 3), ops(parts, 5), discard))
        return routes

    def taken_from_router(self, family):
        """(routes F received from R before its import policy, paths from R in F's RIB)."""
        adj_in = json.loads(sh("gobgp", "-j", "neighbor", R_ADDR, "adj-in", "-a", family,
                               ns=self.f) or "{}")
        rib = json.loads(sh("gobgp", "-j", "global", "rib", "-a", family, ns=self.f))
        return len(adj_in), sum(p.get("neighbor-ip") == R_ADDR
                                for paths in rib.values() for p in paths)

    def blackholes(self):
        """The unicast routes R received from F with the BLACKHOLE community."""
        out = set()
        for prefix, paths in json.loads(sh("gobgp", "-j", "global", "rib", "-a", "ipv4",
                                           ns=self.r)).items():
            for path in paths:
                if path.get("neighbor-ip") == F_ADDR and any(
                        BLACKHOLE in a.get("communities", []) for a in path["attrs"]):
                    out.add(prefix)
        return out

    def close(self):
        for ns in list(self.gobgpd):
            self.kill_gobgpd(ns)
        # Whatever setup reached: the pair, if it never left this namespace, and both.
        subprocess.run(["ip", "link", "del", self.tag + "f"], capture_output=True)
        for ns in (self.f, self.r):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Box:
    """floodgate run on virtual ports and floodctl daemon, both in F's namespace; at most one
    daemon at a time, on the same socket (a new one takes over the stale path of a killed one).
    The dataplane is started first and waited for: a daemon that finds no dataplane at its
    start aborts today (control/cluster/cluster_sync.cpp reads a null status), which is not what this
    lab is about.
    """

    def __init__(self, topo):
        self.topo = topo
        self.work = topo.work
        self.prefix = "fgfsbox%d" % os.getpid()  # DPDK's --file-prefix: its runtime directory
        self.dp_sock = os.path.join(self.work, "dataplane.sock")
        self.ctl = Floodctl(os.path.join(self.work, "floodctl.sock"))
        self.dataplane = None
        self.daemon = None

    def start_dataplane(self, rules_text, trace_frames):
        """Runs rules_text on a trace of trace_frames replayed forever."""
        rules = os.path.join(self.work, "rules.yaml")
        with open(rules, "w") as f:
            f.write(rules_text)
        trace = os.path.join(self.work, "trace.pcap")
        frames.write_pcap(trace, trace_frames)
        # The main lcore and the worker time-share CPU 1, leaving CPU 0 to this test, the
        # speakers and the daemon on a 2-CPU machine.
        cpu = 1 if os.cpu_count() > 1 else 0
        log = open(os.path.join(self.work, "dataplane.log"), "a")
        self.dataplane = subprocess.Popen(
            ["ip", "netns", "exec", self.topo.f, FLOODGATE, "run",
             "--lcores", "0@%d,1@%d" % (cpu, cpu), "--no-huge", "--no-pci", "--no-shconf",
             "-m", "512", "--file-prefix", self.prefix,
             "--vdev", "net_pcap0,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null" % trace,
             "--vdev", "net_null0,no-rx=1", "--", "--config", rules, "--control", self.dp_sock],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.work)
        wait_until(self.dataplane_answers, "the dataplane to answer", timeout=WAIT_S)

    def dataplane_answers(self):
        try:
            link = DataplaneLink(self.dp_sock, timeout=5)
            try:
                return link.ask({"cmd": "status"})["ok"]
            finally:
                link.close()
        except OSError:
            return False

    def stop_dataplane(self):
        self.dataplane.send_signal(signal.SIGTERM)
        return self.dataplane.wait(timeout=WAIT_S)

    def start_daemon(self, *options):
        """floodctl daemon (ip netns exec execs it: the process is the daemon itself)."""
        assert self.daemon is None or self.daemon.poll() is not None
        log = open(os.path.join(self.work, "daemon.log"), "a")
        self.daemon = subprocess.Popen(
            ["ip", "netns", "exec", self.topo.f, FLOODCTL, "--socket", self.ctl.socket,
             "daemon", "--dataplane", self.dp_sock, "--metrics", "127.0.0.1:0"] + list(options),
            stdout=log, stderr=subprocess.STDOUT)

    def stop_daemon(self, sig):
        """Signals the daemon and waits for it; its exit status (negative: killed by a signal).
        """
        self.daemon.send_signal(sig)
        return self.daemon.wait(timeout=WAIT_S)

    def status(self):
        return self.ctl.json("status")

    def flowspec(self):
        return self.status()["flowspec"]

    def wait_up(self):
        """Until the daemon answers and reaches the dataplane; its status then."""
        def up():
            code, out, _ = self.ctl.run("-j", "status")
            reply = json.loads(out) if code == 0 and out.startswith("{") else None
            return reply if reply and reply["dataplane_up"] else None
        return wait_until(up, "the daemon to reach the dataplane", timeout=WAIT_S)

    def metrics(self):
        address = self.status()["daemon"]["metrics"]
        return sh("python3", "-c", FETCH, "http://%s/metrics" % address, ns=self.topo.f)

    def close(self):
        for p in (self.daemon, self.dataplane):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=WAIT_S)
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + self.prefix])
