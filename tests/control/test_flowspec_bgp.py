#!/usr/bin/python3
"""FlowSpec announced to a real BGP peer, in the lab of bgp_lab.py: floodctl's gobgpd F and a
"router" R, each in a network namespace.

Checks 1-13 drive control/upstream/flowspec.h's exporter alone through tests/flowspec_driver. Checks 14
on are the operator's path: `floodgate run` on virtual ports and `floodctl daemon --flowspec` in
F's namespace, driven by `floodctl block|allow` as an operator would, each state read on the
router: the rules file's block and allow list, an override and its TTL, an allow lifting a
block, the most at once, a clean stop, a crash whose leftovers the next daemon withdraws, and a
restart of the dataplane under a running daemon. F runs docs/cluster.md's /etc/gobgpd.toml, read
from that file: check 27 shows it takes nothing from the router. Checks 28 on are the issue's
finding: F with the README's former default-import-policy = "reject-route" refuses what floodctl
adds, and floodctl's status, metrics and log say the rule is missing. Check 31: sources
shorter than /16 or inside --flowspec-never-block are never announced, counted by reason.

Prints TAP; needs root (namespaces, DPDK) and gobgpd, else skips; builds nothing. Usage:
test_flowspec_bgp.py BUILD_DIR
"""
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from bgp_lab import API, WAIT_S, Box, Topology, readme_gobgpd_config, settle, sh  # noqa: E402
from control_lib import BUILD, DataplaneLink, check, plan, results, wait_until  # noqa: E402

DRIVER = os.path.join(BUILD, "tests", "flowspec_driver")

DNS = {"source": "198.18.66.6/32", "destination": "198.18.1.1/32", "protocol": 17,
       "destination_port": [53, 53], "origin": "escalated by dns"}
# What the router must hold for DNS: source, destination, protocol ops, port ops, discard.
DNS_SEEN = ("198.18.66.6/32", "198.18.1.1/32", ((0x81, 17),), ((0x81, 53),), True)
V6 = {"source": "2001:db8:66::/48", "destination": "2001:db8:1::1/128", "protocol": 6,
      "destination_port": [1000, 2000], "origin": "block"}
V6_SEEN = ("2001:db8:66::/48", "2001:db8:1::1/128", ((0x81, 6),), ((0x13, 1000), (0xD5, 2000)),
           True)


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
          "(4 RIB reads, 2 adds, 2 families read back)" % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))

    start = time.monotonic()
    reply = d.desire([V6])
    ok, seen, took = settle(lambda: both(topo), {V6_SEEN})
    check(ok and reply["counters"]["withdrawn"] == 1,
          "3. a rule no longer desired is withdrawn from the router, the other kept",
          "router: %s\ndriver: %s" % (seen, reply))
    print("#   gone from the router %.0f ms after the command (reconcile %.0f ms, one del, one read back)"
          % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))

    start = time.monotonic()
    reply = d.desire([DNS, V6])
    settle(lambda: both(topo), {DNS_SEEN, V6_SEEN})
    print("#   one more rule seen on the router %.0f ms after the command (reconcile %.0f ms, "
          "one add, one read back)" % ((time.monotonic() - start) * 1000, reply["elapsed_ms"]))
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
    print("#   the reconcile took %.0f ms: %.1f ms a CLI call (4 reads, 100 adds, 1 read back)"
          % (reply["elapsed_ms"], reply["elapsed_ms"] / 105))
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
    d.close()


# The operator's box: the rules file blocks 198.18.77.0/24, allows 198.18.55.0/24 and has one
# rule.
RULES = """\
table: { entries_per_core: 65536 }
block: [198.18.77.0/24]
allow: [198.18.55.0/24]
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 1/h, burst: 10 }
"""
TRACE = [frames.udp4("198.18.1.1", "198.18.255.1", 4000, 53)] * 4 + [
    frames.udp4("198.18.77.1", "198.18.255.1", 4000, 53)]  # the file's block drops it
TTL_S = 4


def blocked(prefix):
    """What the router holds for a block of prefix: that source, nothing else, discard."""
    return (prefix, None, (), (), True)


FILE_BLOCK = blocked("198.18.77.0/24")
STATUS_KEYS = {"active", "asked", "in_rib", "missing", "blackholes_asked", "blackholes_in_rib",
               "blackholes_missing", "missing_after_add", "rules", "announced", "withdrawn",
               "stale_withdrawn", "withheld_limit", "withheld_rate", "invalid",
               "refused_short_source", "refused_never_block", "failed_calls", "last_error"}
NEVER_BLOCK = "198.18.88.0/24"  # the operator's infrastructure, say


def metric(text, name, labels):
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def never_announced(topo, box):
    """Blocks inside --flowspec-never-block and shorter than /16 stay off the router,
    refused by reason; then they go, for the checks after."""
    before = both(topo)
    codes = [box.ctl.run("block", "add", p)[0] for p in ("198.18.88.1/32", "10.0.0.0/8")]
    held, fs, _ = settle(lambda: (lambda f: (f.get("refused_never_block"),
                                             f.get("refused_short_source")))(box.flowspec()),
                         (1, 1))
    text = box.metrics()
    code, out, _ = box.ctl.run("status")
    refused = (metric(text, "floodgate_flowspec_refused", 'reason="never_block"'),
               metric(text, "floodgate_flowspec_refused", 'reason="short_source"'))
    check(codes == [0, 0] and held and both(topo) == before and refused == (1, 1)
          and "refused 1 (source too short), 1 (never_block);" in out,
          "31. block add 198.18.88.1/32 (--flowspec-never-block %s) and 10.0.0.0/8 (shorter "
          "than /16): neither reaches the router; status, metrics and floodctl status count "
          "each by reason" % NEVER_BLOCK, "router: %s (before %s)\nstatus refused: %s\n"
          "metrics: %s\n%s" % (both(topo), before, fs, refused, out))
    for p in ("198.18.88.1/32", "10.0.0.0/8"):
        box.ctl.run("block", "del", p)


def operator_path(topo, box):
    ok, _, _ = settle(topo.established, True)
    if not check(ok and both(topo) == set(),
                 "14. before the box starts, the session is up and the router holds nothing",
                 both(topo)):
        return
    box.start_dataplane(RULES, TRACE)
    start = time.monotonic()
    box.start_daemon("--flowspec", API, "--flowspec-never-block", NEVER_BLOCK)
    box.wait_up()

    def router_then_status(want, in_rib, timeout=WAIT_S):
        """Waits for the router to hold exactly want, then for the daemon's status to say
        in_rib rules; (both held, router, status's flowspec, when the router held it)."""
        ok, seen, _ = settle(lambda: both(topo), want, timeout)
        reached = time.monotonic()
        held, _, _ = settle(lambda: box.flowspec().get("in_rib"), in_rib, 5)
        return ok and held, seen, box.flowspec(), reached

    ok, seen, fs, reached = router_then_status({FILE_BLOCK}, 1)
    check(ok and set(fs) == STATUS_KEYS and fs["active"] and fs["announced"] == 1
          and fs["stale_withdrawn"] == 0 and fs["failed_calls"] == 0,
          "15. floodctl daemon --flowspec: the router holds exactly the rules file's block "
          "(source 198.18.77.0/24, discard); status in_rib 1", "router: %s\nstatus: %s"
          % (seen, fs))
    print("#   on the router %.0f ms after the daemon started" % ((reached - start) * 1000))

    # The allowed block first: once the second is on the router, the feed has read both.
    allowed = box.ctl.run("block", "add", "198.18.55.5/32")
    start = time.monotonic()
    code, out, err = box.ctl.run("block", "add", "198.18.66.6/32", "--ttl", "%ds" % TTL_S)
    ok, seen, fs, reached = router_then_status({FILE_BLOCK, blocked("198.18.66.6/32")}, 2)
    check(allowed[0] == 0 and code == 0 and ok, "16. block add 198.18.55.5/32 (the file's allow "
          "covers it), then 198.18.66.6/32 --ttl %ds: the router holds the second, never the "
          "first" % TTL_S, "floodctl: %s, %d %s%s\nrouter: %s\nstatus: %s"
          % (allowed, code, out, err, seen, fs))
    print("#   on the router %.0f ms after the command" % ((reached - start) * 1000))
    ok, seen, fs, reached = router_then_status({FILE_BLOCK}, 1,
                                               timeout=start + 10 - time.monotonic())
    listed = box.ctl.json("block", "list")
    check(ok and fs["withdrawn"] == 1 and "198.18.66.6/32" not in json.dumps(listed),
          "17. after its TTL the override is gone from the router (within 10 s of the command) "
          "and from status", "router: %s\nstatus: %s\nblock list: %s" % (seen, fs, listed))
    print("#   gone from the router %.0f ms after the TTL ran out"
          % ((reached - start - TTL_S) * 1000))

    box.ctl.run("block", "add", "198.18.66.7/32")
    settle(lambda: both(topo), {FILE_BLOCK, blocked("198.18.66.7/32")})
    start = time.monotonic()
    code, out, err = box.ctl.run("allow", "add", "198.18.66.0/24")
    ok, seen, fs, reached = router_then_status({FILE_BLOCK}, 1)
    check(code == 0 and ok, "18. block add 198.18.66.7/32, then allow add 198.18.66.0/24: the "
          "block the allow covers is withdrawn from the router", "floodctl: %d %s%s\nrouter: "
          "%s\nstatus: %s" % (code, out, err, seen, fs))
    print("#   withdrawn from the router %.0f ms after the allow" % ((reached - start) * 1000))
    start = time.monotonic()
    code, out, err = box.ctl.run("allow", "del", "198.18.66.0/24")
    ok, seen, fs, reached = router_then_status({FILE_BLOCK, blocked("198.18.66.7/32")}, 2)
    check(code == 0 and ok, "19. allow del 198.18.66.0/24: the block is announced again",
          "floodctl: %d %s%s\nrouter: %s\nstatus: %s" % (code, out, err, seen, fs))
    print("#   on the router again %.0f ms after the allow went" % ((reached - start) * 1000))

    never_announced(topo, box)
    start = time.monotonic()
    rc = box.stop_daemon(signal.SIGTERM)
    ok, seen, _ = settle(lambda: both(topo), set(), timeout=5)
    took = time.monotonic() - start
    with open(os.path.join(box.work, "daemon.log")) as f:
        said = [line for line in f if "withdrew every announcement" in line]
    check(ok and rc == 0 and said[-1:] == ["floodctl daemon: flowspec: withdrew every "
                                           "announcement (0 left)\n"],
          "20. SIGTERM: the daemon withdraws everything and exits 0; the router holds nothing "
          "within 5 s", "exit %s, router: %s, log: %s" % (rc, seen, said))
    print("#   the router empty %.0f ms after the SIGTERM" % (took * 1000))

    # The file's block, then the overrides in the order they were added: the first two are
    # the file's and 198.18.66.7/32's, the other four (66.8 to 66.11) wait.
    box.start_daemon("--flowspec", API, "--flowspec-max", "2")
    box.wait_up()
    for i in range(8, 12):
        box.ctl.run("block", "add", "198.18.66.%d/32" % i)
    # Until the feed's first reconcile, its status is {"active": true} alone.
    held, fs, _ = settle(lambda: (lambda f: (f.get("withheld_limit"), f.get("in_rib")))(
        box.flowspec()), (4, 2))
    seen = both(topo)
    text = box.metrics()
    limit = metric(text, "floodgate_flowspec_withheld", 'reason="limit"')
    rules = metric(text, "floodgate_flowspec_rules", 'form="flowspec"')
    check(held and seen == {FILE_BLOCK, blocked("198.18.66.7/32")},
          "21. --flowspec-max 2, the file's block and block overrides 198.18.66.7 to .11: the "
          "router holds exactly the first 2; status withheld_limit 4",
          "router: %s\nstatus (withheld_limit, in_rib): %s" % (seen, fs))
    announced = metric(text, "floodgate_flowspec_changes_total", 'change="announced"')
    failed = re.search(r"^floodgate_flowspec_failed_calls_total 0$", text, re.M)
    code, out, err = box.ctl.run("status")
    check(limit == 4 and rules == 2 and announced == 2 and failed and "upstream:  FlowSpec "
          "rules 2 asked, 2 in gobgpd's RIB, 0 MISSING; RTBH routes 0 asked, 0 in the RIB, 0 "
          "missing; 2 announced, 0 withdrawn, 0 stale withdrawn, 0 missing after their add in "
          "all; withheld 4 (limit), 0 (rate); refused 0 (source too short), 0 (never_block); 0 "
          "failed calls\n" in out,
          "22. /metrics says floodgate_flowspec_withheld{reason=\"limit\"} 4, "
          "floodgate_flowspec_rules{form=\"flowspec\"} 2, 2 announced, 0 failed calls; "
          "floodctl status says the same", "\n".join(
              line for line in (text + out).splitlines() if "flowspec" in line or "upstream" in
              line))

    rc = box.stop_daemon(signal.SIGKILL)
    seen = both(topo)
    check(rc == -signal.SIGKILL and seen == {FILE_BLOCK, blocked("198.18.66.7/32")},
          "23. SIGKILL: the daemon's 2 rules stay in gobgpd, and on the router", seen)
    # The overrides go while no daemon runs, through the dataplane's own socket.
    link = DataplaneLink(box.dp_sock)
    replies = [link.ask({"cmd": "override_del", "list": "block", "prefix": "198.18.66.%d/32" % i})
               for i in range(7, 12)]
    link.close()
    start = time.monotonic()
    box.start_daemon("--flowspec", API)
    box.wait_up()
    ok, seen, fs, reached = router_then_status({FILE_BLOCK}, 1)
    check(ok and all(r["ok"] for r in replies) and fs["stale_withdrawn"] == 1
          and fs["announced"] == 0 and fs["withdrawn"] == 0,
          "24. overrides deleted meanwhile, a new daemon withdraws the stale rule on start "
          "(stale_withdrawn 1) and keeps the file's block as it is (announced 0)",
          "override_del: %s\nrouter: %s\nstatus: %s" % (replies, seen, fs))
    print("#   the stale rule gone from the router %.0f ms after the daemon started"
          % ((reached - start) * 1000))

    # An upgrade of the dataplane: the daemon reconnects, and what the router holds stays as it
    # is meanwhile (the feed leaves the RIB alone while the dataplane does not answer).
    connects = box.status()["daemon"]["dataplane_connects"]
    box.stop_dataplane()
    held = {frozenset(both(topo))}
    box.start_dataplane(RULES, TRACE)

    def reconnected():
        held.add(frozenset(both(topo)))
        return box.daemon.poll() is not None or box.status()["daemon"][
            "dataplane_connects"] > connects
    wait_until(reconnected, "the daemon to reconnect or exit", timeout=WAIT_S)
    check(box.daemon.poll() is None and held == {frozenset({FILE_BLOCK})},
          "25. floodgate run restarted: the daemon carries on and reconnects; the router holds "
          "the file's block throughout", "daemon exit %s, router states seen: %s"
          % (box.daemon.poll(), held))
    if box.daemon.poll() is not None:  # for the check below
        box.start_daemon("--flowspec", API)
        box.wait_up()
    rc = box.stop_daemon(signal.SIGTERM)
    ok, seen, _ = settle(lambda: both(topo), set(), timeout=5)
    check(ok and rc == 0, "26. its SIGTERM leaves the router empty too", "exit %s, router: %s"
          % (rc, seen))


def takes_nothing_from_peers(topo):
    """docs/cluster.md's configuration of F: the router's own FlowSpec route reaches F and stays
    out of its RIB, while floodctl's routes (checks 2 on) are taken."""
    route = ["global", "rib", "-a", "ipv4-flowspec", "add", "match", "source", "198.18.99.1/32",
             "then", "discard"]
    sh("gobgp", *route, ns=topo.r)
    ok, seen, _ = settle(lambda: topo.taken_from_router("ipv4-flowspec"), (1, 0))
    check(ok, "27. with docs/cluster.md's gobgpd.toml, F receives the router's own route and keeps "
          "it out of its RIB", "(received, in F's RIB): %s" % (seen,))
    sh("gobgp", "global", "rib", "-a", "ipv4-flowspec", "del", "all", ns=topo.r)


def refused_by_policy(topo, box):
    """The issue's finding: the README's former gobgpd.toml (default-import-policy =
    "reject-route") makes gobgpd refuse what floodctl adds, while the CLI exits 0; floodctl
    says the rule is missing, exactly."""
    reject_all = re.sub(r"\[global\.apply-policy\.config\].*?(?=\[\[neighbors\]\])",
                        '[global.apply-policy.config]\n  default-import-policy = "reject-route"\n',
                        readme_gobgpd_config(), flags=re.S)
    topo.configure(topo.f, reject_all)
    ok, _, _ = settle(topo.established, True)
    box.start_daemon("--flowspec", API)
    box.wait_up()
    held, fs, _ = settle(lambda: box.flowspec().get("missing"), 1)
    fs = box.flowspec()
    match = "match source 198.18.77.0/24 then discard"
    f_rib = json.loads(sh("gobgp", "-j", "global", "rib", "-a", "ipv4-flowspec", ns=topo.f))
    check(ok and held and f_rib == {} and both(topo) == set() and fs["asked"] == 1
          and fs["in_rib"] == 0 and fs["missing"] == 1 and fs["missing_after_add"] == 1
          and fs["announced"] == 1 and fs["failed_calls"] == 0
          and fs["rules"] == [{"match": match, "origin": "block", "in_rib": False}]
          and "not in gobgpd's RIB" in fs["last_error"],
          "28. gobgpd with default-import-policy = \"reject-route\": F's RIB and the router "
          "hold nothing, and status says the file's block is asked 1, in_rib 0, missing 1",
          "F's RIB: %s\nrouter: %s\nstatus: %s" % (f_rib, both(topo), fs))
    text = box.metrics()
    code, out, _ = box.ctl.run("status")
    seen = {name: metric(text, name, labels) for name, labels in (
        ("floodgate_flowspec_asked", 'form="flowspec"'),
        ("floodgate_flowspec_rules", 'form="flowspec"'),
        ("floodgate_flowspec_missing", 'form="flowspec"'),
        ("floodgate_flowspec_rule_in_rib", 'match="%s",origin="block"' % match))}
    added = re.search(r"^floodgate_flowspec_missing_after_add_total 1$", text, re.M)
    check(seen == {"floodgate_flowspec_asked": 1, "floodgate_flowspec_rules": 0,
                   "floodgate_flowspec_missing": 1, "floodgate_flowspec_rule_in_rib": 0}
          and added and code == 0
          and "FlowSpec rules 1 asked, 0 in gobgpd's RIB, 1 MISSING;" in out
          and "  MISSING  %s (block)\n" % match in out,
          "29. /metrics and floodctl status say the same, rule by rule", "%s\n%s" % (seen, out))
    with open(os.path.join(box.work, "daemon.log")) as f:
        said = [line for line in f if "added but not in gobgpd's RIB" in line]
    check(len(said) == 1 and "source 198.18.77.0/24 then discard (block)" in said[0],
          "30. the daemon's log says so, once", said)
    box.stop_daemon(signal.SIGTERM)


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
    topo, drivers, box = None, [], None
    try:
        topo = Topology(work)
        topo.setup()
        scenario(topo, drivers)
        takes_nothing_from_peers(topo)
        box = Box(topo)
        operator_path(topo, box)
        refused_by_policy(topo, box)
    except Exception as e:  # a failed command or reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for d in drivers:
            if d.p.poll() is None:
                d.p.kill()
                d.p.wait()
        if box is not None:  # before the namespace it runs in
            box.close()
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
