#!/usr/bin/python3
"""FlowSpec received by a second BGP implementation: BIRD 2 as the router, configured with
docs/cluster.md's /etc/bird/bird.conf as it is there, in place of test_flowspec_bgp.py's gobgpd
router R; floodctl's gobgpd F runs docs/cluster.md's /etc/gobgpd.toml, and
control/upstream/flowspec.h's exporter is driven through tests/flowspec_driver.

What BIRD holds is read with `birdc show route table flowtab4|flowtab6 all` and read here,
independently of the exporter: each route's match as BIRD prints it, whether BIRD marks it
unreachable (invalid under RFC 8955 section 6's validation), and the discard action (the
traffic-rate extended community, type 0x80 subtype 6, rate 0). docs/cluster.md's configuration
with `validate on` shows what a validating router does with floodctl's rules: a source alone
is invalid, a rule whose destination F routes is valid.

Prints TAP; needs root (namespaces), gobgpd and bird2, else skips; builds nothing. Usage:
test_flowspec_bird.py BUILD_DIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bgp_lab import CLUSTER_DOC, Topology, sh, settle  # noqa: E402
from control_lib import check, plan, results  # noqa: E402
from test_flowspec_bgp import DNS, V6, Driver  # noqa: E402

BLOCK = {"source": "198.18.77.0/24", "origin": "block"}
# BIRD's words for DNS, V6 and BLOCK.
DNS_BIRD = "dst 198.18.1.1/32; src 198.18.66.6/32; proto 17; dport 53;"
V6_BIRD = "dst 2001:db8:1::1/128; src 2001:db8:66::/48; next header 6; dport 1000..2000;"
BLOCK_BIRD = "src 198.18.77.0/24;"
DISCARD = "BGP.ext_community: (generic, 0x80060000, 0x0)"


def readme_bird_config():
    """docs/cluster.md's /etc/bird/bird.conf: from its first line to the blank line after it."""
    with open(CLUSTER_DOC) as f:
        text = f.read()
    start = text.index("# /etc/bird/bird.conf")
    return text[start:text.index("\n\n", start) + 1]


class BirdRouter(Topology):
    """bgp_lab's topology with BIRD in R's namespace in place of gobgpd."""

    def configure(self, ns, config):
        if ns != self.r:
            return super().configure(ns, config)
        self.bird_conf = os.path.join(self.work, "bird.conf")
        self.bird_sock = os.path.join(self.work, "bird.ctl")
        with open(self.bird_conf, "w") as f:
            f.write(readme_bird_config())
        log = open(os.path.join(self.work, "bird.log"), "a")
        self.gobgpd[ns] = subprocess.Popen(
            ["ip", "netns", "exec", ns, "bird", "-f", "-c", self.bird_conf, "-s", self.bird_sock],
            stdout=log, stderr=subprocess.STDOUT)

    def birdc(self, *args):
        return sh("birdc", "-s", self.bird_sock, *args)

    def established(self):
        try:
            return "Established" in self.birdc("show", "protocols", "floodctl")
        except RuntimeError:
            return False

    def validate(self, on):
        """BIRD's configuration with validate on or off, as it runs."""
        with open(self.bird_conf, "w") as f:
            f.write(readme_bird_config().replace("validate off", "validate " +
                                                 ("on" if on else "off")))
        self.birdc("configure")

    def flows(self):
        """{(table, match): (valid, discard)} of what BIRD holds from F."""
        out = {}
        for table in ("flowtab4", "flowtab6"):
            route = None
            for line in self.birdc("show", "route", "table", table, "all").splitlines():
                m = re.match(r"^flow[46] \{ (.*) \}\s*(unreachable)?", line)
                if m:
                    route = (table, m.group(1))
                    out[route] = (m.group(2) is None, False)
                elif route and line.strip() == DISCARD:
                    out[route] = (out[route][0], True)
        return out


def scenario(topo, drivers):
    ok, _, took = settle(topo.established, True)
    if not check(ok, "1. BIRD's session with F (docs/cluster.md's bird.conf) is established",
                 topo.birdc("show", "protocols", "all", "floodctl")):
        return
    print("#   established %.1f s after the speakers started" % took)
    d = Driver(topo)
    drivers.append(d)
    reply = d.desire([DNS, V6, BLOCK])
    want = {("flowtab4", DNS_BIRD): (True, True), ("flowtab6", V6_BIRD): (True, True),
            ("flowtab4", BLOCK_BIRD): (True, True)}
    ok, seen, took = settle(topo.flows, want)
    check(ok and reply["counters"]["in_rib"] == 3,
          "2. BIRD holds exactly the three rules (IPv4 with destination, protocol and port; "
          "IPv6 with a port range; a source alone), each valid, each with the discard action",
          "bird: %s\ndriver: %s" % (seen, reply))
    print("#   in BIRD's tables %.0f ms after the reconcile returned" % (took * 1000))
    d.desire([V6])
    ok, seen, _ = settle(topo.flows, {("flowtab6", V6_BIRD): (True, True)})
    check(ok, "3. two withdrawn: BIRD holds the IPv6 rule alone", seen)

    # A validating router: the source alone is invalid, the destination F routes makes DNS valid.
    topo.validate(True)
    d.desire([DNS, BLOCK])
    want = {("flowtab4", DNS_BIRD): (False, True), ("flowtab4", BLOCK_BIRD): (False, True)}
    ok, seen, _ = settle(topo.flows, want)
    check(ok, "4. BIRD with validate on: both rules unreachable (invalid), no unicast route for "
          "DNS's destination from F", seen)
    sh("gobgp", "global", "rib", "-a", "ipv4", "add", "198.18.1.0/24", "nexthop",
       "198.18.250.1", ns=topo.f)
    want = {("flowtab4", DNS_BIRD): (True, True), ("flowtab4", BLOCK_BIRD): (False, True)}
    ok, seen, _ = settle(topo.flows, want)
    check(ok, "5. F routes 198.18.1.0/24: DNS's rule becomes valid; the source alone stays "
          "invalid (RFC 8955 section 6 needs a destination)", seen)
    reply = d.send("withdraw_all")
    ok, seen, _ = settle(topo.flows, {})
    check(ok and reply["counters"]["in_rib"] == 0, "6. withdraw_all: BIRD holds nothing",
          "bird: %s\ndriver: %s" % (seen, reply))
    d.close()


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (network namespaces)")
        return 0
    if not all(shutil.which(p) for p in ("gobgpd", "gobgp", "bird", "birdc")):
        print("1..0 # SKIP gobgpd or bird2 is not installed (apt-get install gobgpd bird2)")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = tempfile.mkdtemp(prefix="fg-flowspec-bird-")
    topo, drivers = None, []
    try:
        topo = BirdRouter(work)
        topo.setup()
        scenario(topo, drivers)
    except Exception as e:  # a failed command or reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for d in drivers:
            if d.p.poll() is None:
                d.p.kill()
                d.p.wait()
        if topo is not None:
            topo.close()
    if not all(results):
        for name in sorted(os.listdir(work)):
            if name.endswith(".log"):
                print("# --- " + name)
                with open(os.path.join(work, name)) as f:
                    for line in f.read().splitlines()[-20:]:
                        print("# " + line)
    shutil.rmtree(work, ignore_errors=True)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
