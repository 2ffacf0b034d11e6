"""Loading rules is bounded in time (issue 31). Issue 31's slow rules files, made here, get
exactly the outcome the payload compile budget gives them (dataplane/patterns/compile_budget.h)
from `floodctl rules check`, `floodgate replay --config` and a load request to a running
dataplane. A load that compiles is answered off the control socket's thread: the dataplane's
stats, and floodctl daemon's status, are answered while it compiles, and a second load meanwhile
is refused as busy. TAP; needs root (DPDK).

The outcomes are counted from the files' shapes, not read from the code: a list of 10,000
regexes is over the 1,000 regexes a ruleset may hold; rules aliasing one list count it once; 256
distinct lists of 2,200 literals pass 20,000 patterns at the tenth (22,000)."""
import json
import os
import subprocess
import sys
import tempfile

import frames
from control_lib import FLOODCTL, FLOODGATE, DataplaneLink, check, plan, results, wait_until

RULE_LINES = 6  # each rule below is six lines: name, match, proto, dst_port, payload, limit


def regexes(n, prefix=""):
    return [{"regex": "%s(a|aa)+%d$" % (prefix, i)} for i in range(n)]


def literals(n, prefix):
    return ["%s%x" % (prefix, i) for i in range(n)]


def flow(items):
    """A list as one YAML flow sequence (one line)."""
    out = []
    for item in items:
        out.append("{regex: '%s'}" % item["regex"] if isinstance(item, dict) else item)
    return "[" + ", ".join(out) + "]"


def ruleset(rules, first, others=(), alias=True):
    """rules rules on UDP ports 1000 + i: the first holds `first` (anchored &p), the next hold
    others[i - 1] where given, the rest alias *p (or hold `first` again when alias is False).
    Returns the YAML text and the document as the control protocol carries it (strings)."""
    lines, doc_rules = ["rules:"], []
    for i in range(rules):
        if i == 0:
            items, written = first, "&p " + flow(first)
        elif i - 1 < len(others):
            items, written = others[i - 1], flow(others[i - 1])
        else:
            items, written = first, "*p" if alias else flow(first)
        lines += ["  - name: r%d" % i, "    match:", "      proto: udp",
                  "      dst_port: %d" % (1000 + i),
                  "      payload: { patterns: %s }" % written,
                  "    limit: { rate: 1/s, burst: 1 }"]
        doc_rules.append({"name": "r%d" % i,
                          "match": {"proto": "udp", "dst_port": str(1000 + i),
                                    "payload": {"patterns": items}},
                          "limit": {"rate": "1/s", "burst": "1"}})
    return "\n".join(lines) + "\n", {"rules": doc_rules}


def list_line(rule):
    return 2 + RULE_LINES * rule + 4  # the rule's payload line


REGEXES_OVER = "10000 regexes, over the ruleset's budget of 1000"
# (name, (yaml, doc), None for accepted or (line, field, reason) for refused)
CASES = [
    ("1 rule with 10,000 regexes", ruleset(1, regexes(10000)),
     (list_line(0), "rules[0].match.payload.patterns", REGEXES_OVER)),
    ("the same list aliased by 10 rules", ruleset(10, regexes(10000)),
     (list_line(0), "rules[0].match.payload.patterns", REGEXES_OVER)),
    ("the same list aliased by 20 rules", ruleset(20, regexes(10000)),
     (list_line(0), "rules[0].match.payload.patterns", REGEXES_OVER)),
    ("10,000 literals aliased by 50 rules", ruleset(50, literals(10000, "l")), None),
    ("10,000 literals aliased by 100 rules", ruleset(100, literals(10000, "l")), None),
    ("256 rules x 2,200 literals, no aliases",
     ruleset(256, literals(2200, "00"), [literals(2200, "%02x" % r) for r in range(1, 256)]),
     (list_line(9), "rules[9].match.payload.patterns",
      "22000 payload patterns, over the ruleset's budget of 20000")),
    ("600 regexes aliased by 45 rules", ruleset(45, regexes(600)), None),
    ("600 regexes written out again by 45 rules", ruleset(45, regexes(600), alias=False), None),
]


def run(cmd, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def offline_checks(work, trace):
    for name, (text, _), refused in CASES:
        path = os.path.join(work, "case.yaml")
        with open(path, "w") as f:
            f.write(text)
        p = run([FLOODCTL, "rules", "check", path])
        if refused is None:
            check(p.returncode == 0 and p.stdout.startswith(path + ": valid: "),
                  "rules check accepts: " + name, p.stdout + p.stderr)
        else:
            line, field, reason = refused
            where = "%s:%d: %s: %s" % (path, line, field, reason)
            check(p.returncode == 1 and p.stderr.startswith(where),
                  "rules check refuses: " + name, "want %s\ngot %s" % (where, p.stderr))
        p = run([FLOODGATE, "replay", "--config", path, "--in", trace, "--pass",
                 os.path.join(work, "pass.pcap"), "--quiet"])
        if refused is None:
            check(p.returncode == 0, "replay --config accepts: " + name, p.stderr)
        else:
            line, field, reason = refused
            want = "floodgate replay: %s:%d: %s: %s" % (path, line, field, reason)
            check(p.returncode == 1 and p.stderr.startswith(want),
                  "replay --config refuses: " + name, "want %s\ngot %s" % (want, p.stderr))


def Conn(path):
    return DataplaneLink(path, timeout=120)


def answered_meanwhile(sock, slow, ask_other, what):
    """Sends `slow` on one connection; until its reply comes, asks ask_other on a second and
    a second load on a third. Checks that the others were answered while the slow one was
    outstanding and that the second load was refused as busy; returns the slow reply."""
    loader, other, second = Conn(sock), Conn(sock), Conn(sock)
    try:
        loader.send(slow)
        busy = second.ask(slow)
        answered, failed = 0, 0

        def one_more():
            nonlocal answered, failed
            reply = other.ask(ask_other)
            outstanding = not loader.replied()
            if reply.get("ok"):
                answered += outstanding
            else:
                failed += 1
            return not outstanding

        wait_until(one_more, what + " answered")
        check(answered >= 1 and failed == 0,
              "%s: %s answered while the load compiled (%d, %d failed)" %
              (what, ask_other["cmd"], answered, failed))
        check(not busy.get("ok") and busy.get("error", "").startswith("busy: "),
              what + ": a second load meanwhile is refused as busy", json.dumps(busy)[:300])
        return loader.reply()
    finally:
        for c in (loader, other, second):
            c.close()


def slow_load():
    """A file within the budget that compiles for a while: 600 regexes and 15,000 literals."""
    return ruleset(3, regexes(600), [literals(7500, "s"), literals(7500, "t")])


def live_checks(work, trace):
    prefix = "fgload%d" % os.getpid()
    dp_sock = os.path.join(work, "dataplane.sock")
    ctl_sock = os.path.join(work, "floodctl.sock")
    startup = os.path.join(work, "startup.yaml")
    with open(startup, "w") as f:
        f.write("rules:\n  - name: dns\n    match: { proto: udp, dst_port: 53 }\n"
                "    limit: { rate: 10/s, burst: 10 }\n")
    dataplane = subprocess.Popen(
        [FLOODGATE, "run", "--lcores", "0@0,1@0", "--no-huge", "--no-pci", "--no-shconf",
         "-m", "512", "--file-prefix", prefix,
         "--vdev", "net_pcap0,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null" % trace,
         "--vdev", "net_null0,no-rx=1", "--", "--config", startup, "--control", dp_sock],
        stdout=open(os.path.join(work, "dataplane.log"), "w"), stderr=subprocess.STDOUT)
    daemon = None
    try:
        wait_until(lambda: os.path.exists(dp_sock) or dataplane.poll() is not None,
                   "the dataplane's socket")
        for name, (text, doc), refused in CASES:
            reply = Conn(dp_sock)
            try:
                r = reply.ask({"cmd": "load", "source": "case.yaml", "text": text, "rules": doc})
            finally:
                reply.close()
            if refused is None:
                check(r.get("ok") is True, "a load request is accepted: " + name,
                      json.dumps(r)[:300])
            else:
                _, field, reason = refused  # a JSON document has no lines: line 0
                check(r.get("ok") is False and r.get("line") == 0 and
                      r.get("field") == field and reason in r.get("error", ""),
                      "a load request is refused: " + name, json.dumps(r)[:300])

        text, doc = slow_load()
        r = answered_meanwhile(dp_sock, {"cmd": "load", "source": "slow.yaml", "text": text,
                                         "rules": doc}, {"cmd": "stats"}, "dataplane")
        check(r.get("ok") is True, "the dataplane's slow load is applied", json.dumps(r)[:300])

        daemon = subprocess.Popen(
            [FLOODCTL, "--socket", ctl_sock, "daemon", "--dataplane", dp_sock, "--metrics",
             "none"], stdout=open(os.path.join(work, "daemon.log"), "w"),
            stderr=subprocess.STDOUT)
        wait_until(lambda: os.path.exists(ctl_sock) or daemon.poll() is not None,
                   "the daemon's socket")
        r = answered_meanwhile(ctl_sock, {"cmd": "rules_load", "source": "slow.yaml",
                                          "text": text, "dry_run": False},
                               {"cmd": "status"}, "floodctl daemon")
        check(r.get("ok") is True, "the daemon's slow load is applied", json.dumps(r)[:300])
    finally:
        for p in (daemon, dataplane):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + prefix])


def main():
    work = tempfile.mkdtemp(prefix="fg-load-compile-")
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.1", "198.18.255.1", 4000, 53)] * 4)
    try:
        offline_checks(work, trace)
        live_checks(work, trace)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "ran to the end", repr(e))
    if not all(results):
        for log in ("dataplane.log", "daemon.log"):
            path = os.path.join(work, log)
            if os.path.exists(path):
                print("# --- " + log)
                with open(path) as f:
                    for line in f.read().splitlines()[-30:]:
                        print("# " + line)
    else:
        subprocess.run(["rm", "-rf", work])
    return plan()


if __name__ == "__main__":
    sys.exit(main())
