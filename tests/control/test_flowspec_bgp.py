#!/usr/bin/python3
"""FlowSpec announced to a real BGP peer (control/flowspec.h). Two gobgpd speakers, each in a
network namespace, over a veth pair:

  F  198.18.250.1/30  AS 64512  floodctl's gobgpd, driven by tests/flowspec_driver (the exporter)
  R  198.18.250.2/30  AS 64513  the "router", whose global RIB shows what it received

Both take ipv4-unicast, ipv4-flowspec and ipv6-flowspec; each one's gRPC API is 127.0.0.1:50051
inside its namespace. What the router received is read with
`gobgp -j global rib -a FAMILY` and decoded here from the NLRI's components and operator bytes
(RFC 8955 section 4.2: 1 destination, 2 source, 3 protocol, 5 destination port; op 0x81
"==" last, 0x13 ">=" two bytes, 0xd5 "&<=" two bytes last), independently of the exporter's
reader; the action is the traffic-rate extended community (type 0x80, subtype 6) at rate 0.

Prints TAP; needs root (namespaces) and gobgpd, else skips. Usage: test_flowspec_bgp.py BUILD_DIR
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_lib import BUILD, check, results  # noqa: E402

DRIVER = os.path.join(BUILD, "tests", "flowspec_driver")
API = "127.0.0.1:50051"
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

DNS = {"source": "198.18.66.6/32", "destination": "198.18.1.1/32", "protocol": 17,
       "destination_port": [53, 53], "origin": "escalated by dns"}
# What the router must hold for DNS: source, destination, protocol ops, port ops, discard.
DNS_SEEN = ("198.18.66.6/32", "198.18.1.1/32", ((0x81, 17),), ((0x81, 53),), True)
V6 = {"source": "2001:db8:66::/48", "destination": "2001:db8:1::1/128", "protocol": 6,
      "destination_port": [1000, 2000], "origin": "block"}
V6_SEEN = ("2001:db8:66::/48", "2001:db8:1::1/128", ((0x81, 6),), ((0x13, 1000), (0xD5, 2000)),
           True)


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
        for ns, as_, addr, peer_as, peer in ((self.f, 64512, F_ADDR, 64513, R_ADDR),
                                             (self.r, 64513, R_ADDR, 64512, F_ADDR)):
            with open(os.path.join(self.work, ns + ".toml"), "w") as f:
                f.write(CONFIG.format(as_=as_, addr=addr, peer_as=peer_as, peer=peer,
                                      afi_safis=afi_safis))
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


class Driver:
    """tests/flowspec_driver in F's namespace; one JSON reply a command."""

    def __init__(self, topo, *options):
        self.log = open(os.path.join(topo.work, "driver.log"), "a")
        self.p = subprocess.Popen(["ip", "netns", "exec", topo.f, DRIVER, "--api", API]
                                  + list(options), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.p.stdout],
                         daemon=True).start()

    def send(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return json.loads(self.lines.get(timeout=120))

    def desire(self, rules):
        return self.send("desire " + json.dumps(rules))

    def crash(self):
        self.p.kill()
        self.p.wait(timeout=WAIT_S)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=WAIT_S)


def spread(n):
    return [{"source": "198.18.%d.%d/32" % (100 + i // 250, i % 250), "origin": "spread"}
            for i in range(n)]


def both(topo):
    return topo.received("ipv4-flowspec") | topo.received("ipv6-flowspec")


def scenario(topo, drivers):
    ok, _, took = settle(topo.established, True)
    if not check(ok, "1. the BGP session F-R is established", "not after %d s" % WAIT_S):
        return
    print("#   established %.1f s after the speakers started" % took)

    d = Driver(topo)
    drivers.append(d)
    start = time.monotonic()
    reply = d.desire([DNS, V6])
    ok, seen, took = settle(lambda: both(topo), {DNS_SEEN, V6_SEEN})
    check(ok and reply["counters"]["announced"] == 2 and reply["counters"]["in_rib"] == 2,
          "2. two rules desired: the router holds exactly them (source, destination, protocol, "
          "port, discard)", "router: %s\ndriver: %s" % (seen, reply))
    print("#   seen on the router %.0f ms after the command; the reconcile took %.0f ms "
          "(4 RIB reads, 2 adds)" % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))

    start = time.monotonic()
    reply = d.desire([V6])
    ok, seen, took = settle(lambda: both(topo), {V6_SEEN})
    check(ok and reply["counters"]["withdrawn"] == 1,
          "3. a rule no longer desired is withdrawn from the router, the other kept",
          "router: %s\ndriver: %s" % (seen, reply))
    print("#   gone from the router %.0f ms after the command (reconcile %.0f ms, one del)"
          % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))

    start = time.monotonic()
    reply = d.desire([DNS, V6])
    settle(lambda: both(topo), {DNS_SEEN, V6_SEEN})
    print("#   one more rule seen on the router %.0f ms after the command (reconcile %.0f ms, "
          "one add)" % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))
    start = time.monotonic()
    reply = d.send("withdraw_all")
    ok, seen, _ = settle(lambda: both(topo), set())
    check(ok and reply["counters"]["in_rib"] == 0 and reply["counters"]["withdrawn"] == 3,
          "4. withdraw_all: the router holds nothing", "router: %s\ndriver: %s" % (seen, reply))
    print("#   withdraw_all (one del all a family) took %.0f ms, the router empty after %.0f ms"
          % (reply["elapsed_ms"], (time.monotonic() - start) * 1000))

    d.desire([DNS])
    settle(lambda: both(topo), {DNS_SEEN})
    d.crash()
    check(both(topo) == {DNS_SEEN},
          "5. a driver killed without withdrawing leaves its rule in gobgpd", both(topo))
    d = Driver(topo)
    drivers.append(d)
    reply = d.desire([])
    ok, seen, _ = settle(lambda: both(topo), set())
    c = reply["counters"]
    check(ok and c["stale_withdrawn"] == 1 and c["withdrawn"] == 0 and c["in_rib"] == 0,
          "6. a new driver with nothing desired withdraws the stale rule on its first call",
          "router: %s\ndriver: %s" % (seen, reply))
    d.close()

    d = Driver(topo, "--max-announced", "100", "--max-new-per-s", "1000")
    drivers.append(d)
    flood = spread(1000)
    reply = d.desire(flood)
    first = {(r["source"], None, (), (), True) for r in flood[:100]}
    ok, seen, _ = settle(lambda: topo.received("ipv4-flowspec"), first)
    c = reply["counters"]
    check(ok and c["announced"] == 100 and c["in_rib"] == 100 and c["withheld_limit"] == 900
          and c["withheld_rate"] == 0,
          "7. a spread flood of 1,000 sources, max_announced 100: the router holds exactly the "
          "first 100, 900 withheld", "router: %d routes, %d of the first 100\ndriver: %s"
          % (len(seen), len(seen & first), reply))
    print("#   the reconcile took %.0f ms: %.1f ms a CLI call (4 reads, 100 adds)"
          % (reply["elapsed_ms"], reply["elapsed_ms"] / 104))
    reply = d.send("withdraw_all")
    ok, seen, _ = settle(lambda: both(topo), set())
    check(ok and reply["counters"]["withdrawn"] == 100,
          "8. withdraw_all takes the 100 back", "router: %d routes\ndriver: %s"
          % (len(seen), reply))
    print("#   withdraw_all of 100 rules took %.0f ms" % reply["elapsed_ms"])
    d.close()

    d = Driver(topo, "--rtbh")
    drivers.append(d)
    reply = d.desire([DNS])
    ok, seen, _ = settle(topo.blackholes, {"198.18.66.6/32"})
    check(ok and both(topo) == {DNS_SEEN} and reply["counters"]["blackholes_in_rib"] == 1,
          "9. rtbh: the single-address source is also a host route with community 65535:666",
          "router: %s %s\ndriver: %s" % (seen, both(topo), reply))
    reply = d.desire([])
    ok, seen, _ = settle(lambda: (topo.blackholes(), both(topo)), (set(), set()))
    check(ok, "10. rtbh: both routes withdrawn when not desired", "router: %s\ndriver: %s"
          % (seen, reply))

    d.desire([DNS])
    settle(lambda: both(topo), {DNS_SEEN})
    start = time.monotonic()
    topo.kill_gobgpd(topo.f)
    ok, seen, took = settle(lambda: both(topo), set())
    check(ok, "11. gobgpd F killed: the router drops its routes", seen)
    print("#   the router dropped them %.0f ms after the kill" % (took * 1000))
    reply = d.desire([DNS, V6])
    c = reply["counters"]
    check(c["failed_calls"] == 1 and c["withheld_rate"] == 1 and reply["error"],
          "12. with gobgpd down a reconcile fails, counted, with the CLI's error", reply)
    print("#   the failed reconcile took %.0f ms: %s" % (reply["elapsed_ms"], reply["error"]))
    topo.start_gobgpd(topo.f)
    ok, _, took = settle(topo.established, True)
    reply = d.desire([DNS, V6])
    ok, seen, _ = settle(lambda: both(topo), {DNS_SEEN, V6_SEEN})
    check(ok and reply["counters"]["in_rib"] == 2,
          "13. gobgpd F restarted (empty): the next reconcile reads its RIB and announces again",
          "router: %s\ndriver: %s" % (seen, reply))
    d.send("withdraw_all")


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (network namespaces)")
        return 0
    if not shutil.which("gobgpd") or not shutil.which("gobgp"):
        print("1..0 # SKIP gobgpd is not installed (apt-get install gobgpd)")
        return 0
    # meson's timeout sends SIGTERM: leave through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = tempfile.mkdtemp(prefix="fg-flowspec-")
    topo, drivers = None, []
    try:
        topo = Topology(work)
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
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
