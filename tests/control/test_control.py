#!/usr/bin/python3
"""Control-plane integration test: `floodgate run` on virtual ports with continuous traffic,
`floodctl daemon` and the `floodctl` CLI, as an operator would use them.

Traffic: net_pcap replays a small trace forever (infinite_rx) on two RX queues, one per worker;
passed frames go to net_null. Every source sends millions of packets a second, so the rules
use rates of 1 or 2 per hour: within this test (minutes) a source whose burst is spent is
admitted nothing more, unless a reload hands it a fresh burst. That makes "no fresh burst"
an exact check. The rules (counts independent of floodgate's code):

  dns  udp/53 from 198.18.1.1, 1/h burst 10, key /32: passes its burst on each of the 2
       cores before the merge catches up: between 10 and 21 packets in all (docs/design.md's bound
       b + (N-1)(b + ceil(L/T)) with b = 10, N = 2, L << T), then never again.
  web  tcp/80 from 198.18.2.0/24, 10^9/s: never refuses.
  ntp  udp/123 from 198.18.3.1, 1/h burst 5: between 5 and 11 passed.

Its helpers are in control_lib.py; the checks of what an operator meets (--metrics addresses,
floodctl watch, the CLI's behaviour) in operator_checks.py.

Prints TAP; needs root (DPDK) and builds nothing. Usage: test_control.py BUILD_DIR
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from control_lib import (FLOODCTL, FLOODGATE, SRC, DataplaneLink, Floodctl,  # noqa: E402
                         check, http_status, raw_request, plan, results, stats_invariants,
                         still_open, telemetry, wait_until)
from operator_checks import cli_behaviour, live_view, metrics_endpoint_addresses  # noqa: E402


RULES = """\
# line 1
table: {{ entries_per_core: 65536 }}
block: [{block}]
rules:
{extra}  - name: {first}
    match: {{ proto: {first_proto}, {first_match} }}
    limit: {{ rate: {first_rate}, burst: {first_burst} }}
  - name: web
    match: {{ proto: tcp, src: 198.18.2.0/24 }}
    limit: {{ rate: 1000000000/s, burst: 1048576 }}
  - name: ntp
    match: {{ proto: udp, dst_port: 123 }}
    key: {{ ipv4: {ntp_key} }}
    limit: {{ rate: 1/h, burst: 5 }}
"""


def rules_text(dns_rate="1/h", ntp_key=32, block="198.19.255.0/24", extra=""):
    return RULES.format(block=block, first="dns", first_proto="udp", first_match="dst_port: 53",
                        first_rate=dns_rate, first_burst=10, ntp_key=ntp_key, extra=extra)


V1 = rules_text()
# A new rule first (every other rule moves down one place), dns at 2/h (same key: state
# kept), a block prefix more.
V2 = rules_text(dns_rate="2/h", block="198.19.0.0/16",
                extra="  - name: extra\n    match: { proto: udp, dst_port: 9999 }\n"
                      "    limit: { rate: 5/s, burst: 5 }\n")
V3 = rules_text(ntp_key=24)  # ntp re-keyed: its state starts afresh
BAD = V1.replace("rate: 1/h, burst: 10", "rate: 10/q, burst: 10")  # on line 7


def main():
    work = tempfile.mkdtemp(prefix="fg-control-")
    prefix = "fgctl%d" % os.getpid()
    dp_sock = os.path.join(work, "dataplane.sock")
    ctl_sock = os.path.join(work, "floodctl.sock")
    for name, text in (("v1.yaml", V1), ("v2.yaml", V2), ("v3.yaml", V3), ("bad.yaml", BAD)):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    trace = [frames.udp4("198.18.1.1", "198.18.255.1", 4000, 53)] * 4
    trace += [frames.tcp4("198.18.2.%d" % i, "198.18.255.1", 4000 + i, 80, 0x10) for i in (1, 2, 3)]
    trace += [frames.udp4("198.18.3.1", "198.18.255.1", 4000, 123)] * 2
    trace += [frames.udp6("2001:db8:1::1", "2001:db8:ff::1", 4000, 5353)]  # matches no rule
    frames.write_pcap(os.path.join(work, "trace.pcap"), trace)

    stats_file = os.path.join(work, "stats.json")
    # Two workers time-share CPU 1 so that CPU 0 is left for this test, the main lcore and
    # the daemon on a 2-core machine.
    cpu = 1 if os.cpu_count() > 1 else 0
    dataplane_cmd = [
        FLOODGATE, "run", "--lcores", "0@0,1@%d,2@%d" % (cpu, cpu), "--no-huge", "--no-pci",
        "--no-shconf", "-m", "1024", "--file-prefix", prefix,
        "--vdev", "net_pcap0,rx_pcap=%s,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null,"
                  "tx_pcap=/dev/null" % ((os.path.join(work, "trace.pcap"),) * 2),
        "--vdev", "net_null0,no-rx=1", "--",
        "--config", os.path.join(work, "v1.yaml"), "--control", dp_sock, "--stats", stats_file,
        "--stats-interval", "1"]
    dp_log = open(os.path.join(work, "dataplane.log"), "w")
    dataplane = subprocess.Popen(dataplane_cmd, stdout=dp_log, stderr=subprocess.STDOUT,
                                 cwd=work)
    daemon_cmd = [FLOODCTL, "--socket", ctl_sock, "daemon", "--config",
                  os.path.join(work, "v1.yaml"), "--dataplane", dp_sock,
                  "--metrics", "127.0.0.1:0"]
    daemon_log = open(os.path.join(work, "daemon.log"), "a")
    daemon = subprocess.Popen(daemon_cmd, stdout=daemon_log, stderr=subprocess.STDOUT)
    ctl = Floodctl(ctl_sock)
    try:
        scenario(ctl, work, prefix, dp_sock, ctl_sock, dataplane, dataplane_cmd, daemon,
                 daemon_cmd, daemon_log, stats_file)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for p in (daemon, dataplane):
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in (globals().get("restarted"),):
            if p is not None and p.poll() is None:
                p.kill()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + prefix])
    if not all(results):
        for log in ("dataplane.log", "daemon.log"):
            print("# --- " + log)
            with open(os.path.join(work, log)) as f:
                for line in f.read().splitlines()[-40:]:
                    print("# " + line)
    else:
        subprocess.run(["rm", "-rf", work])
    return plan()


def scenario(ctl, work, prefix, dp_sock, ctl_sock, dataplane, dataplane_cmd, daemon, daemon_cmd,
             daemon_log, stats_file):
    global restarted
    status = wait_until(lambda: (lambda s: s if s["dataplane_up"] else None)(
        ctl.json("status")) if ctl.run("status")[0] == 0 else None,
        "the daemon to reach the dataplane")
    check(status["dataplane_up"] and status["dataplane"]["workers"] == 2,
          "status: dataplane up with 2 workers", status)
    check(status["dataplane"]["ruleset"]["version"] == 1 and
          status["dataplane"]["ruleset"]["origin"] == "startup",
          "daemon adopted the dataplane's startup rules (same as --config): version 1", status)
    # Steering: net_pcap has no RSS, so each worker hands packets to their source's owner, and
    # every rule of v1 (per source, /32 and /64) is core-local.
    steering = status["dataplane"]["steering"]
    check(steering["mode"] == "software" and steering["ipv4_len"] == 32 and
          steering["ipv6_len"] == 64 and steering["rules"] and
          all(r["scope"] == "core-local" for r in steering["rules"]),
          "status: software steering by /32 and /64, every rule core-local", steering)
    code, out, err = ctl.run("status")
    check(code == 0 and "steering:  software, each source prefix (IPv4 /32, IPv6 /64) on one "
          "worker" in out and re.search(r"rule ntp +core-local", out) is not None,
          "floodctl status says the steering and each rule's scope", out + err)
    # Rates from the first reply on: since the dataplane's start until two samples exist.
    first = status
    code, out, err = ctl.run("status")
    since = "over the dataplane's first" if "over the dataplane's first" in out else "over the last"
    check(first["rates"] is not None and "packets" in first["rates"] and code == 0 and
          since in out and "rule dns" in out and "none yet" not in out,
          "status shows rates from its first reply (that one %s; the next %s)" %
          ("since the start" if first["rates_since_start"] else "over the last second", since),
          out + err)

    # The flood settles: every core has spent the burst and the merge has spread it.
    dns0 = wait_until(lambda: (lambda r: r if r["refused"] > 200000 else None)(ctl.rule("dns")),
                      "dns to refuse")
    settled = wait_until(lambda: (lambda r: r if r["refused"] > dns0["refused"] + 200000 else None)(
        ctl.rule("dns")), "more dns refusals")
    passed0 = settled["passed"]
    check(10 <= passed0 <= 21, "dns passed its burst once per core at most (10..21): %d" % passed0)
    web0 = ctl.rule("web")
    ntp0 = ctl.rule("ntp")
    check(5 <= ntp0["passed"] <= 11, "ntp passed 5..11: %d" % ntp0["passed"])

    # Readings taken while both workers run flat out: every one must add up.
    link = DataplaneLink(dp_sock)
    readings, broken, moved, last = 2000, [], 0, None
    for _ in range(readings):
        reply = link.ask({"cmd": "stats"})
        bad = stats_invariants(reply["stats"])
        if bad and len(broken) < 5:
            broken.append(bad)
        moved += last is not None and reply["stats"]["packets"] != last
        last = reply["stats"]["packets"]
    link.close()
    check(not broken and moved >= readings // 2,
          "%d stats readings under traffic all keep the invariants (%d saw new packets)" %
          (readings, moved), broken)

    # Dry run: shows the change, applies nothing.
    code, out, err = ctl.run("rules", "load", os.path.join(work, "v2.yaml"), "--dry-run")
    check(code == 0 and "rule extra: added" in out and "dns: limit 1/h burst 10 -> 2/h burst 10"
          in out and "block + 198.19.0.0/16" in out and "dry run" in out,
          "rules load --dry-run shows the difference", out + err)
    check(ctl.json("status")["dataplane"]["ruleset"]["version"] == 1,
          "dry run changed nothing")

    # 40 reloads under traffic, alternating two files (rule positions and rates change).
    failures = []
    for i in range(40):
        code, out, err = ctl.run("rules", "load", os.path.join(work, "v2.yaml" if i % 2 == 0 else
                                                                "v1.yaml"))
        if code != 0:
            failures.append(err)
    status = ctl.json("status")["dataplane"]
    check(not failures and status["ruleset"]["version"] == 41 and status["reloads"]["ok"] == 40,
          "40 reloads under traffic applied (version 41)", failures or status)
    rules = ctl.json("rules", "show")
    check([r["name"] for r in rules["rules"]] == ["dns", "web", "ntp"] and
          all(r["state"] == "kept" for r in rules["rules"]),
          "every rule kept its state across the reloads", rules["rules"])

    before = ctl.rule("dns")
    after = wait_until(lambda: (lambda r: r if r["refused"] > before["refused"] + 200000 else None)(
        ctl.rule("dns")), "dns refusals after the reloads")
    check(after["passed"] == passed0,
          "no fresh burst: dns passed stayed %d across 40 reloads (now %d)" % (passed0,
                                                                             after["passed"]))
    web1 = ctl.rule("web")
    check(web1["refused"] == 0 and web1["passed"] > web0["passed"] and
          web1["matched"] == web1["passed"],
          "web: counters carried on, nothing refused (%d -> %d passed)" % (web0["passed"],
                                                                          web1["passed"]))

    # A bad file: refused with file, line and field; nothing changes.
    bad = os.path.join(work, "bad.yaml")
    code, out, err = ctl.run("rules", "load", bad)
    check(code == 1 and bad + ":7: rules[0].limit.rate" in err,
          "a bad file is refused naming file:line: field", err)
    code, out, err = ctl.run("rules", "check", bad)
    check(code == 1 and ":7: rules[0].limit.rate" in err, "rules check: exit 1 on a bad file", err)
    code, out, err = ctl.run("rules", "check", os.path.join(work, "v1.yaml"))
    check(code == 0 and "valid" in out, "rules check: exit 0 on a good file", out + err)
    check(ctl.json("status")["dataplane"]["ruleset"]["version"] == 41,
          "the bad file changed nothing (still version 41)")

    # Re-keying a rule starts its state afresh, as the diff warns.
    code, out, err = ctl.run("rules", "load", os.path.join(work, "v3.yaml"))
    check(code == 0 and "ntp: key ipv4 /32, ipv6 /64 -> ipv4 /24, ipv6 /64" in out,
          "re-keying ntp is shown in the diff", out + err)
    # Its IPv4 keys are now coarser than the steering prefix, which stays /32: shared.
    scopes = {r["name"]: r["scope"] for r in ctl.json("status")["dataplane"]["steering"]["rules"]}
    check(scopes.get("ntp") == "shared (IPv4 /24 coarser than the steering /32)" and
          scopes.get("dns") == "core-local",
          "re-keyed ntp is shared for IPv4, the steering unchanged", scopes)
    ntp1 = wait_until(lambda: (lambda r: r if r["refused"] > 100000 else None)(ctl.rule("ntp")),
                      "ntp refusals under its new key")
    check(5 <= ntp1["passed"] <= 11, "re-keyed ntp got one fresh burst (5..11): %d" %
          ntp1["passed"])

    # Shadow and back, one rule only.
    code, out, err = ctl.run("rule", "dns", "shadow")
    check(code == 0, "rule dns shadow", err)
    modes = {r["name"]: r["mode"] for r in ctl.json("rules", "show")["rules"]}
    check(modes == {"dns": "shadow", "web": "enforce", "ntp": "enforce"},
          "only dns switched to shadow", modes)
    wait_until(lambda: ctl.rule("dns")["shadow_refused"] > 100000, "dns shadow refusals")
    code, out, err = ctl.run("rule", "dns", "enforce")
    check(code == 0, "rule dns enforce", err)
    d1 = ctl.rule("dns")
    d2 = wait_until(lambda: (lambda r: r if r["refused"] > d1["refused"] + 200000 else None)(
        ctl.rule("dns")), "dns to refuse again")
    check(d2["passed"] == d1["passed"] and d2["shadow_refused"] == d1["shadow_refused"],
          "back in enforce, dns admits nothing (no fresh burst from shadow mode)", (d1, d2))

    # An override with a TTL blocks web's sources, then expires on its own.
    code, out, err = ctl.run("block", "add", "198.18.2.0/24", "--ttl", "2s")
    check(code == 0 and "198.18.2.0/24" in out, "block add --ttl 2s", out + err)
    b0 = ctl.json("stats")["stats"]["block_hits"]
    wait_until(lambda: ctl.json("stats")["stats"]["block_hits"] > b0 + 100000, "block hits")
    wait_until(lambda: not ctl.json("block", "list")["overrides"], "the override to expire", 30)
    w0 = ctl.rule("web")["matched"]
    wait_until(lambda: ctl.rule("web")["matched"] > w0 + 100000, "web traffic after expiry")
    check(ctl.json("status")["dataplane"]["overrides_expired"] == 1,
          "the expired override is gone and web passes again")

    # Hostile messages on both sockets: refused, logged, nobody crashes.
    hostile = [b"not json\n", b"[" * 100000 + b"\n", b"\xff\xfe\x00garbage\n", b"{}\n",
               b'{"cmd": 5}\n', b'{"cmd": "override_add", "list": "block", "prefix": 123}\n',
               b'{"cmd": "override_add", "list": "block", "prefix": "198.18.0.0/15", '
               b'"ttl_s": -5}\n',
               b'{"cmd": "override_add", "list": "both", "prefix": "198.18.0.0/15"}\n',
               b'{"cmd": "override_add", "list": "block", "prefix": "10.0.0.1/8"}\n',
               b'{"cmd": "load", "source": "x", "text": "rules: [[[["}\n',
               b'{"cmd": "mode", "rule": "nosuch", "mode": "shadow"}\n',
               b'{"cmd": "stats", "top": 1000000}\n', b'{"cmd": "reboot"}\n']
    replies_ok = True
    for path in (dp_sock, ctl_sock):
        for payload in hostile:
            reply = raw_request(path, payload)
            replies_ok &= reply is not None and json.loads(reply)["ok"] is False
        raw_request(path, b'{"cmd": "status"', read=False)  # half a line, then gone
        reply = raw_request(path, b"x" * (65 << 20))  # past the 64 MiB line limit
        replies_ok &= reply is not None and "too long" in reply
    check(replies_ok, "every hostile message got an error reply")
    check(dataplane.poll() is None and daemon.poll() is None, "both processes still run")
    status = ctl.json("status")["dataplane"]
    check(status["requests_refused"] >= len(hostile) and status["ruleset"]["overrides"] == 0,
          "the dataplane counted the refused requests and changed nothing", status)

    # Prometheus: scrape, parse with the reference parser, compare with floodctl's numbers.
    # The scrape is made while other clients hold connections: five that sent nothing, one
    # that sent half a request, one that asked and reads nothing. A server that serves one
    # connection at a time cannot answer it before it has closed those it accepted first.
    from prometheus_client.parser import text_string_to_metric_families
    metrics_addr = ctl.json("status")["daemon"]["metrics"]
    host, port = metrics_addr.rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(5)]
    half = socket.create_connection((host, int(port)), timeout=30)
    half.sendall(b"GET /metrics HTTP/1.1\r\nHost: floodgate\r\n")  # no blank line: unfinished
    deaf = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # before connect: a tiny window
    deaf.connect((host, int(port)))
    deaf.sendall(b"GET /metrics HTTP/1.1\r\nHost: floodgate\r\n\r\n" * 8)
    try:
        started = time.monotonic()
        body = urllib.request.urlopen("http://%s/metrics" % metrics_addr,
                                      timeout=30).read().decode()
        took_s = time.monotonic() - started  # shown, not asserted
        held = [still_open(c) for c in idle + [half]]
        check(all(held), "metrics: scraped (in %.3f s) while 5 idle connections and a half "
              "request stay open (%d of 6 open)" % (took_s, sum(held)))
    finally:
        for c in idle + [half, deaf]:
            c.close()
    code_404, _ = http_status("http://%s/nosuch" % metrics_addr)
    code_405, headers_405 = http_status("http://%s/metrics" % metrics_addr, "POST")
    check(code_404 == 404 and code_405 == 405 and "GET" in headers_405.get("Allow", ""),
          "metrics: another path is 404 (%s), another method 405 (%s)" % (code_404, code_405))
    families = {f.name: f for f in text_string_to_metric_families(body)}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}
    version = ctl.json("status")["dataplane"]["ruleset"]["version"]
    check(samples.get(("floodgate_dataplane_up", ())) == 1, "metrics: floodgate_dataplane_up 1")
    check(samples.get(("floodgate_ruleset_version", ())) == version,
          "metrics: ruleset version %d" % version)
    dns_passed = ctl.rule("dns")["passed"]
    check(samples.get(("floodgate_rule_passed_total", (("rule", "dns"),))) == dns_passed,
          "metrics: floodgate_rule_passed_total{rule=\"dns\"} == floodctl stats (%d)" %
          dns_passed)
    check(samples.get(("floodgate_rule_refused_total", (("rule", "web"),))) == 0,
          "metrics: web refused 0")
    cores = [k for k in samples if k[0] == "floodgate_packets_total"]
    check(len(cores) == 2, "metrics: per-core packet counters for 2 cores", cores)
    check(all(families[n].documentation and families[n].type != "unknown" for n in families),
          "metrics: every family has HELP and TYPE")
    check(("floodgate_reloads_total", (("result", "ok"),)) in samples and
          ("floodgate_table_occupancy", (("core", "0"),)) in samples and
          ("floodgate_merge_max_lag_seconds", (("core", "1"),)) in samples,
          "metrics: reloads, table occupancy and merge lag present")
    # The reasons as the source lists them (FG_MALFORMED_REASONS), none excepted.
    with open(os.path.join(SRC, "dataplane", "api", "malformed.h")) as f:
        macro = re.search(r"#define FG_MALFORMED_REASONS\(X\)(.*?)\n\n", f.read(), re.S).group(1)
    listed = set(re.findall(r"X\((\w+)\)", macro)) - {"none"}
    reasons = {dict(k[1])["reason"] for k in samples if k[0] == "floodgate_malformed_by_reason_total"}
    check(listed and reasons >= listed,
          "metrics: every malformed reason listed from the first scrape, seen or not (%d)" %
          len(listed), sorted(listed - reasons))

    import grafana_queries
    queries, names, unknown = grafana_queries.check(
        os.path.join(SRC, "config", "grafana", "floodgate.json"), body)
    check(len(queries) > 50 and len(names) > 50 and not unknown,
          "metrics: every metric the Grafana dashboard's %d queries use (%d names) is exported" %
          (len(queries), len(names)), unknown)

    metrics_endpoint_addresses(work)

    # DPDK telemetry, through the tool DPDK ships.
    tool = subprocess.run(["/usr/bin/python3", "/usr/bin/dpdk-telemetry.py", "-f", prefix],
                          input="/floodgate/status\n/floodgate/rule,dns\n", capture_output=True,
                          text=True, timeout=60)
    check('"ruleset_version": %d' % version in tool.stdout and '"refused"' in tool.stdout,
          "dpdk-telemetry.py shows /floodgate/status and /floodgate/rule,dns", tool.stdout +
          tool.stderr)

    live_view(ctl, work)
    cli_behaviour(ctl, work, prefix)

    # The control plane dies; the dataplane filters on and expires an override by itself.
    code, out, err = ctl.run("block", "add", "198.19.7.0/24", "--ttl", "1s")
    check(code == 0, "block add 198.19.7.0/24 --ttl 1s", err)
    daemon.kill()
    daemon.wait()
    t0 = telemetry(prefix, "/floodgate/stats")
    dns_t0 = telemetry(prefix, "/floodgate/rule,dns")
    wait_until(lambda: telemetry(prefix, "/floodgate/overrides") == [],
               "the dataplane to expire the override with no daemon", 30)
    t1 = wait_until(lambda: (lambda s: s if s["rate_limited"] > t0["rate_limited"] + 200000
                             else None)(telemetry(prefix, "/floodgate/stats")),
                    "filtering with no daemon")
    dns_t1 = telemetry(prefix, "/floodgate/rule,dns")
    check(t1["packets"] > t0["packets"] and dns_t1["passed"] == dns_t0["passed"] and
          dns_t1["refused"] > dns_t0["refused"],
          "with the daemon killed the dataplane keeps filtering (dns passed stays %d)" %
          dns_t0["passed"])
    version_before = telemetry(prefix, "/floodgate/status")["ruleset_version"]

    # A restarted daemon reads the running state and carries on without pushing anything.
    restarted = subprocess.Popen(daemon_cmd, stdout=daemon_log, stderr=subprocess.STDOUT)
    status = wait_until(lambda: ctl.run("-j", "status")[0] == 0 and ctl.json("status"),
                        "the restarted daemon")
    rs = status["dataplane"]["ruleset"]
    check(rs["version"] == version_before and rs["origin"] == "floodctl" and
          rs["source"].endswith("v3.yaml"),
          "the restarted daemon adopted the running ruleset (version %d from v3.yaml)" %
          version_before, rs)
    check(ctl.rule("dns")["passed"] == dns_t1["passed"], "and dns still has no fresh burst")

    # Stop the dataplane: every received frame was decided and every passed one sent.
    code, out, err = ctl.run("allow", "add", "198.18.9.0/24", "--ttl", "1h")
    check(code == 0, "allow add 198.18.9.0/24 --ttl 1h", err)
    dataplane.send_signal(signal.SIGTERM)
    check(dataplane.wait(timeout=60) == 0, "the dataplane stops cleanly on SIGTERM")
    with open(stats_file) as f:
        final = json.load(f)
    d = final["ports"]["outside_to_inside"]
    check(d["rx"] == final["packets"] == final["passed"] + final["dropped"] and
          d["tx"] == final["passed"] and d["tx_failed"] == 0,
          "no frame lost: rx %d = decided %d = passed %d + dropped %d; tx %d" %
          (d["rx"], final["packets"], final["passed"], final["dropped"], d["tx"]))
    check(final["merge"]["records_lost"] == 0, "no merge record lost")
    with open(os.path.join(work, "dataplane.log")) as f:
        log = f.read()
    intervals = re.findall(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\] over (\d+\.\d\d) s: "
                           r"outside rx (\d+) pps", log, re.M)
    check(len(intervals) >= 3 and all(float(t) > 0 and int(rx) > 0 for t, rx in intervals) and
          re.search(r"^  rule dns +matched", log, re.M) and "outside rx %d:" % final["packets"]
          not in log,
          "--stats-interval 1 printed %d timestamped lines of rates, per rule too" %
          len(intervals))

    # The dataplane comes back on its startup file; the daemon applies again what was changed
    # through it: the last loaded file and the override, with what is left of its hour.
    second = dataplane_cmd[:]
    second[second.index("--stats") + 1] = stats_file + ".2"
    again = subprocess.Popen(second, stdout=open(os.path.join(work, "dataplane2.log"), "w"),
                             stderr=subprocess.STDOUT, cwd=work)
    try:
        status = wait_until(lambda: (lambda s: s if s["dataplane_up"] and s["dataplane"][
            "ruleset"]["origin"] == "floodctl" and s["dataplane"]["ruleset"]["overrides"] == 1
            else None)(ctl.json("status")), "the daemon to re-apply its changes")
        rs = status["dataplane"]["ruleset"]
        allow = ctl.json("allow", "list")["overrides"]
        check(rs["source"].endswith("v3.yaml") and len(allow) == 1 and
              allow[0]["prefix"] == "198.18.9.0/24" and 3000 < allow[0]["ttl_left_s"] <= 3600,
              "after a dataplane restart the daemon re-applied v3.yaml and the override", (rs,
                                                                                       allow))
    finally:
        again.send_signal(signal.SIGTERM)
        check(again.wait(timeout=60) == 0, "the second dataplane stops cleanly")
    restarted.terminate()
    check(restarted.wait(timeout=30) == 0, "the daemon stops cleanly on SIGTERM")


restarted = None

if __name__ == "__main__":
    sys.exit(main())
