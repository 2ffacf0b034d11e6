"""The NIC tier on the lab's stand-in NIC (floodgate's memif driver's flow table, dpdk/memif_flow.c):
floodgate run is the memif server on one port with a nic_tier section; floodgate-tx, the memif
client, replays captures made here into it.

Run A (tier ttl 10m): a spread flood from 10,000 sources, 150 of them heavy (about 55 frames a
second each against a rule of 1/s that escalates with nic: true) and 9,850 light (under 1/s,
never refused). The heavy ones are escalated and get rules, at most 20 new a second (each
"nic:" line of the log says how many), never more than the cap of 100; none of the light ones
gets one; nothing is refused. Then a second capture, sent after the rules landed: 7 frames from
each source that holds a rule and one from each of 200 new sources. Exactly: each rule's COUNT
grows by its source's frames in what floodgate-tx sent, floodgate's own count (packets) by the
new sources' frames, and the rule refuses nothing more. A clean stop (SIGTERM) withdraws the 100
rules (withdrawn.stopped, "nic: 100 rules withdrawn"); the flush at start was counted once.

While the rules are held, floodctl nic lists them, the daemon's metrics agree with the stats
(the per-rule series exactly the 7 rules of floodctl nic's listing with most hits, with its
counts; the sums over every rule), the NIC dashboard's queries are all in that scrape, and an
operator's block (floodctl block add) evicts one escalation.

Run B (tier ttl 3s, a port table of 30 under the cap of 100): the same flood for a few seconds;
never more than 30 rules, the rest refused as full, each escalated source inserted or refused;
every rule inserted is withdrawn by the tier's ttl, none left, and the sources' frames reach
floodgate again.

    nic_tier.py BUILD_DIR        (root; TAP output)"""
import ipaddress
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from control_lib import (BUILD, FLOODCTL, FLOODGATE, SRC, DataplaneLink, Floodctl,  # noqa: E402
                         check, finish, wait_until)
import grafana_queries  # noqa: E402

TX = os.path.join(BUILD, "perf", "floodgate-tx")
HEAVY, LIGHT, HEAVY_REPEAT = 150, 9850, 80
CAP, RATE = 100, 20
PORT_ROOM = 30  # run B's stand-in table (flow_rules), smaller than the tier's cap
TOP_RULES = 7  # the daemon's --nic-top-rules: the rules with a series of their own
FLOOD_PPS = 15000
RULES = """\
nic_tier: {{ max_rules: {cap}, inserts_per_second: {rate}, ttl: {ttl} }}
rules:
  - name: dns
    match: {{ proto: udp, dst_port: 53 }}
    limit: {{ rate: 1/s, burst: 2 }}
    escalate: {{ after: 1s, min_refused_rate: 10/s, ttl: 10m, nic: true }}
"""


def frame(src):
    """An Ethernet/IPv4/UDP datagram to 198.18.0.1:53 from src (checksums left 0: floodgate's
    rule reads addresses and ports)."""
    payload = b"\0" * 18
    udp = struct.pack("!HHHH", 40000, 53, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     ipaddress.IPv4Address(src).packed, bytes([198, 18, 0, 1]))
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + udp


def write_pcap(path, sources):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for src in sources:
            data = frame(src)
            f.write(struct.pack("<IIII", 0, 0, len(data), len(data)) + data)
    return list(sources)


def heavy(i):
    return str(ipaddress.IPv4Address("198.19.0.0") + 1 + i)


def light(i):
    return str(ipaddress.IPv4Address("198.20.0.0") + 1 + i)


def flood_order():
    """One cycle of the flood: each heavy source HEAVY_REPEAT times, each light one once,
    spread evenly."""
    out = []
    light_at = 0
    per_round = -(-LIGHT // HEAVY_REPEAT)
    for _ in range(HEAVY_REPEAT):
        out += [heavy(i) for i in range(HEAVY)]
        out += [light(i) for i in range(light_at, min(LIGHT, light_at + per_round))]
        light_at += per_round
    return out


def sent_per_source(order, sent):
    """What floodgate-tx sent of `order`, round and round, in `sent` frames, by source."""
    counts = {}
    full, rest = divmod(sent, len(order))
    for i, src in enumerate(order):
        counts[src] = counts.get(src, 0) + full + (1 if i < rest else 0)
    return counts


class Run:
    def __init__(self, work, name, ttl, flow_rules=8192):
        self.work, self.name = work, name
        with open(os.path.join(work, name + ".yaml"), "w") as f:
            f.write(RULES.format(cap=CAP, rate=RATE, ttl=ttl))
        self.log_path = os.path.join(work, name + ".log")
        self.socket = os.path.join(work, name + ".sock")
        self.sent_total = 0
        self.fg = subprocess.Popen(
            [FLOODGATE, "run", "-l", "0-1", "--no-huge", "-m", "512", "--no-pci",
             "--file-prefix", "fgnic%s%d" % (name, os.getpid()),
             "--vdev", "net_memif0,role=server,socket=%s,socket-abstract=no,flow_rules=%d"
             % (self.socket, flow_rules),
             "--", "--config", os.path.join(work, name + ".yaml"),
             "--stats", os.path.join(work, name + ".stats.json"),
             "--control", os.path.join(work, name + ".ctl")],
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)
        wait_until(lambda: self.fg.poll() is not None or "\nfloodgate: " in "\n" + self.log(),
                   "floodgate's start")
        self.link = DataplaneLink(os.path.join(work, name + ".ctl"))

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stats(self):
        reply = wait_until(lambda: (lambda r: r if r.get("ok") else None)(
            self.link.ask({"cmd": "stats"})), "a stats reading")
        return reply["stats"]

    def send(self, pcap, seconds, pps, until=None):
        """floodgate-tx into the port for `seconds` (or until until() holds: then SIGINT);
        returns the frames it sent."""
        memory = subprocess.run([TX, "--memory-mb", pcap], capture_output=True, text=True,
                                check=True).stdout.strip()
        log = os.path.join(self.work, self.name + ".tx.log")
        tx = subprocess.Popen(
            ["nice", "-n", "10", TX, "-l", "0", "--no-huge", "-m", memory, "--no-pci",
             "--file-prefix", "fgnictx%s%d" % (self.name, os.getpid()), "--log-level=error",
             "--vdev", "net_memif0,role=client,socket=%s,socket-abstract=no" % self.socket,
             "--", "--pcap", pcap, "--seconds", "%g" % seconds, "--pps", str(pps),
             "--wait-link", "30"],
            stdout=open(log, "w"), stderr=subprocess.STDOUT)
        if until is not None:
            try:
                wait_until(lambda: tx.poll() is not None or until(), "the flood's effect",
                           seconds + 30)
            finally:
                if tx.poll() is None:
                    tx.send_signal(signal.SIGINT)
        tx.wait(timeout=60)
        with open(log) as f:
            summary = [ln for ln in f.read().splitlines() if ln.startswith("{")]
        if not summary:
            raise RuntimeError("floodgate-tx ended with status %d and no summary" % tx.returncode)
        sent = json.loads(summary[-1])["sent"]
        self.sent_total += sent
        return sent

    def quiet(self):
        """Once floodgate-tx has left: the port down (nothing more can arrive) and a tick of the
        NIC tier after that (the rules' COUNT read since): a reading that no longer changes."""
        down = wait_until(lambda: (lambda s: s if s["nic"][0]["link"] == "down" else None)(
            self.stats()), "the port down once floodgate-tx left")
        ticks = down["nic_tier"]["ticks"]
        return wait_until(lambda: (lambda s: s if s["nic_tier"]["ticks"] > ticks else None)(
            self.stats()), "a tick of the NIC tier")

    def stop(self):
        self.link.close()
        self.fg.send_signal(signal.SIGTERM)
        self.fg.wait(timeout=60)
        with open(os.path.join(self.work, self.name + ".stats.json")) as f:
            return json.load(f)


def nic_lines(log):
    """(rules, new) of each "nic: N rules on PORT (K new), W waiting" line."""
    out = []
    for ln in log.splitlines():
        if ln.startswith("nic: ") and " rules on " in ln:
            words = ln.split()
            out.append((int(words[1]), int(words[5].lstrip("("))))
    return out


def run_a(work):
    a = Run(work, "a", "10m")
    check("nic: the tier on port 0" in a.log(), "run A: the NIC tier is on the memif port", a.log())
    order = write_pcap(os.path.join(work, "flood.pcap"), flood_order())
    a.send(os.path.join(work, "flood.pcap"), 60, FLOOD_PPS,
           until=lambda: a.stats()["nic_tier"]["rules"] >= CAP)
    s = a.quiet()
    nic = s["nic_tier"]
    ruled = {r["prefix"].split("/")[0] for r in nic["listed"]}
    heavy_set = {heavy(i) for i in range(HEAVY)}
    check(nic["rules"] == CAP and nic["inserted"] == CAP,
          "a spread flood from %d sources: rules for %d escalated sources, the cap" %
          (len(set(order)), nic["rules"]), json.dumps({k: v for k, v in nic.items() if k != "listed"}))
    check(ruled <= heavy_set, "every rule is a heavy source's, no light one's",
          sorted(ruled - heavy_set)[:10])
    lines = nic_lines(a.log())
    check(lines and all(new <= RATE and rules <= CAP for rules, new in lines),
          "at most %d new rules a second, never more than %d (%d ticks with changes: %s)"
          % (RATE, CAP, len(lines), " ".join("+%d" % n for _, n in lines)))
    check(sum(nic["refused"].values()) == 0 and nic["flushed_at_start"] == 1,
          "nothing refused; the flush at start counted once", json.dumps(nic["refused"]))

    print("# run A, the flood: %d frames sent, %d of them (%.1f %%) dropped by the NIC tier's "
          "rules before floodgate's workers saw them" % (a.sent_total, nic["hits"],
                                                         100.0 * nic["hits"] / a.sent_total))
    # After the rules landed: exact counts.
    second = [src for src in sorted(ruled) for _ in range(7)]
    second += [str(ipaddress.IPv4Address("198.21.0.1") + i) for i in range(200)]
    write_pcap(os.path.join(work, "after.pcap"), second)
    before = {r["prefix"].split("/")[0]: r["hits"] for r in nic["listed"]}
    packets, refused = s["packets"], s["rules"][0]["refused"]
    sent = a.send(os.path.join(work, "after.pcap"), 1, len(second))
    t = a.quiet()
    per = sent_per_source(second, sent)
    after = {r["prefix"].split("/")[0]: r["hits"] for r in t["nic_tier"]["listed"]}
    wrong = ["%s: +%d, sent %d" % (src, after.get(src, 0) - before[src], per.get(src, 0))
             for src in sorted(ruled) if after.get(src, 0) - before[src] != per.get(src, 0)]
    check(sent > 0 and not wrong,
          "after the rules landed: each rule's COUNT grew by exactly what was sent from its "
          "source (%d frames over %d rules)" % (sum(per.get(x, 0) for x in ruled), len(ruled)),
          "\n".join(wrong[:10]))
    new_frames = sum(n for src, n in per.items() if src not in ruled)
    counted = (t["packets"] + t["nic_tier"]["hits"]) - (s["packets"] + s["nic_tier"]["hits"])
    check(counted == sent, "every one of the %d frames sent was counted, by floodgate or by a "
          "rule (%d)" % (sent, counted))
    check(t["packets"] - packets == new_frames and t["rules"][0]["refused"] == refused,
          "floodgate counted exactly the %d frames of the sources without a rule, refused "
          "nothing more" % new_frames,
          "packets +%d, refused +%d" % (t["packets"] - packets, t["rules"][0]["refused"] - refused))

    watched(work, a, t)
    final = a.stop()
    check(a.fg.returncode == 0 and "nic: %d rules withdrawn" % CAP in a.log() and
          final["nic_tier"]["withdrawn"]["stopped"] == CAP and final["nic_tier"]["rules"] == 0,
          "a clean stop withdraws the %d rules (rte_flow_destroy each)" % CAP,
          a.log()[-1500:])


def top_rules_agree(nic, body):
    """The scrape's per-rule series are the TOP_RULES rules of floodctl nic's listing (every
    rule: fewer than its 10,000) with most hits, ties in prefix order, with their counts; and
    the sums are every listed rule's."""
    rows = sorted(nic["listed"], key=lambda r: (
        -r["hits"], ipaddress.ip_network(r["prefix"]).version,
        ipaddress.ip_network(r["prefix"]).prefixlen,
        int(ipaddress.ip_network(r["prefix"]).network_address), r["origin"]))
    want = {(r["prefix"], r["origin"]): (r["hits"], r["bytes"]) for r in rows[:TOP_RULES]}
    got = {}
    for line in body.splitlines():
        m = re.match(r'floodgate_nic_rule_(hits|bytes)\{port="([^"]*)",prefix="([^"]*)",'
                     r'origin="([^"]*)"\} (\d+)$', line)
        if m and m.group(2) == nic["port"]:
            key = (m.group(3), m.group(4))
            got.setdefault(key, [0, 0])[m.group(1) == "bytes"] = int(m.group(5))
    got = {k: tuple(v) for k, v in got.items()}
    check(len(rows) == nic["rules"] and got == want,
          "metrics: exactly the %d rules of floodctl nic's %d with most hits, each with its "
          "frames and bytes (%s)" % (TOP_RULES, len(rows), ", ".join(
              "%s %d" % (p, h) for (p, _), (h, _) in sorted(want.items(), key=lambda x: -x[1][0]))),
          "want %s\ngot %s" % (want, got))
    nic_samples = [x for x in body.splitlines() if x.startswith("floodgate_nic_")]
    print("# metrics: %d samples of floodgate_nic_* for %d rules, %d of them per rule" %
          (len(nic_samples), len(rows), sum(x.startswith("floodgate_nic_rule_") and "prefix=" in x
                                             for x in nic_samples)))
    held = sum(r["hits"] for r in rows), sum(r["bytes"] for r in rows)
    sums = ["floodgate_nic_held_hits %d" % held[0], "floodgate_nic_held_bytes %d" % held[1],
            "floodgate_nic_withdrawn_hits_total %d" % (nic["hits"] - held[0]),
            "floodgate_nic_hits_total %d" % nic["hits"], "floodgate_nic_rule_rows_unreadable 0"]
    check(all(x in body.splitlines() for x in sums),
          "metrics: what the rules held dropped, summed over all %d (%d frames, %d bytes), and "
          "the withdrawn rules' (%d)" % (len(rows), held[0], held[1], nic["hits"] - held[0]),
          "\n".join(x for x in sums if x not in body.splitlines()))


def watched(work, a, t):
    """What an operator sees of the rules held: floodctl nic through the daemon, its metrics,
    and the NIC dashboard's queries against that scrape."""
    ctl_sock = os.path.join(work, "a.fctl")
    daemon = subprocess.Popen(
        [FLOODCTL, "--socket", ctl_sock, "daemon", "--dataplane", os.path.join(work, "a.ctl"),
         "--metrics", "127.0.0.1:0", "--nic-top-rules", str(TOP_RULES)],
        stdout=open(os.path.join(work, "daemon.log"), "w"), stderr=subprocess.STDOUT)
    try:
        ctl = Floodctl(ctl_sock)

        def up():
            try:
                st = ctl.json("status")
            except RuntimeError:  # its socket not there yet
                return None
            return st if st.get("daemon", {}).get("metrics") and st.get("dataplane_up") else None
        status = wait_until(up, "the daemon up, with its metrics")
        code, out, _ = ctl.run("nic")
        nic = t["nic_tier"]
        head = "%d rules of %d (0 block, %d escalated), %d waiting" % (CAP, CAP, CAP,
                                                                         nic["waiting"])
        check(code == 0 and head in out and len(out.splitlines()) == 2 + CAP,
              "floodctl nic: '%s' and a line for each rule" % head, out[:600])
        body = urllib.request.urlopen("http://%s/metrics" % status["daemon"]["metrics"],
                                      timeout=30).read().decode()
        want = ['floodgate_nic_rules{origin="escalated"} %d' % CAP,
                "floodgate_nic_inserted_total %d" % nic["inserted"],
                "floodgate_nic_hits_total %d" % nic["hits"],
                'floodgate_nic_withdrawn_total{reason="stopped"} 0']
        check(all(w in body.splitlines() for w in want),
              "metrics: the rules, inserts and the rules' COUNT as the stats have them",
              "\n".join(w for w in want if w not in body.splitlines()))
        top_rules_agree(ctl.json("nic")["nic_tier"], body)
        queries, names, unknown = grafana_queries.check(
            os.path.join(SRC, "config", "grafana", "floodgate-nic.json"), body)
        check(queries and not unknown,
              "every metric the NIC dashboard's %d queries use (%d names) is exported" %
              (len(queries), len(names)), unknown)
        # An operator's block with every rule taken by escalations: it evicts one.
        code, out, err = ctl.run("block", "add", "203.0.113.0/24", "--ttl", "10m")
        u = wait_until(lambda: (lambda s: s if s["nic_tier"]["rules_by_origin"]["block"] == 1
                                else None)(a.stats()), "the block in the NIC")
        check(code == 0 and u["nic_tier"]["rules"] == CAP and
              u["nic_tier"]["withdrawn"]["evicted"] == 1 and
              "203.0.113.0/24" in {r["prefix"] for r in u["nic_tier"]["listed"]},
              "floodctl block add with the rules all taken: the block evicts an escalation "
              "(%d rules, 1 block, 1 evicted)" % CAP, out + err)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def run_b(work):
    b = Run(work, "b", "3s", flow_rules=PORT_ROOM)
    b.send(os.path.join(work, "flood.pcap"), 60, FLOOD_PPS,
           until=lambda: b.stats()["nic_tier"]["inserted"] >= RATE)
    held = set()  # every source seen with a rule (each is held 3 s, read every 50 ms or so)
    most = [0]

    def all_withdrawn():
        s = b.stats()
        held.update(r["prefix"].split("/")[0] for r in s["nic_tier"]["listed"])
        most[0] = max(most[0], s["nic_tier"]["rules"])
        return s if s["nic_tier"]["rules"] == 0 and s["nic_tier"]["waiting"] == 0 else None
    s = wait_until(all_withdrawn, "every rule withdrawn by the tier's ttl, none waiting")
    nic = s["nic_tier"]
    check(nic["inserted"] > 0 and nic["withdrawn"]["ttl"] == nic["inserted"] and
          len(held) == nic["inserted"],
          "run B (ttl 3s): the %d rules inserted were all withdrawn at their ttl" % nic["inserted"],
          json.dumps({k: v for k, v in nic.items() if k != "listed"}))
    full = nic["refused"]["full"]
    check(most[0] <= PORT_ROOM and full > 0 and
          nic["inserted"] + full == nic["escalations"]["live"] and
          sum(nic["refused"].values()) == full,
          "a port table of %d under a cap of %d: at most %d rules held (%d), %d refused as full, "
          "each escalated source inserted or refused (%d)" % (
              PORT_ROOM, CAP, PORT_ROOM, most[0], full, nic["escalations"]["live"]),
          json.dumps(nic["refused"]))
    # Not put back for the same escalation: a frame or two from each (within the rule's burst,
    # so that nothing is refused or escalated anew) all reach floodgate.
    again = write_pcap(os.path.join(work, "again.pcap"), sorted(held))
    sent = b.send(os.path.join(work, "again.pcap"), 1, len(again))
    t = b.quiet()
    check(sent > 0 and t["packets"] - s["packets"] == sent and
          t["nic_tier"]["hits"] == nic["hits"] and t["nic_tier"]["rules"] == 0 and
          t["nic_tier"]["inserted"] == nic["inserted"],
          "after the ttl the sources reach floodgate again: all %d frames counted by floodgate, "
          "none by a rule, no rule put back" % sent,
          "packets +%d, hits +%d, rules %d" % (t["packets"] - s["packets"],
                                              t["nic_tier"]["hits"] - nic["hits"],
                                              t["nic_tier"]["rules"]))
    final = b.stop()
    check(b.fg.returncode == 0 and final["nic_tier"]["withdrawn"]["stopped"] == 0 and
          final["nic_tier"]["flushed_at_start"] == 1,
          "run B stops cleanly with nothing left to withdraw")


def main():
    work = tempfile.mkdtemp(prefix="fg-nic-")
    try:
        run_a(work)
        run_b(work)
    except (TimeoutError, OSError, ValueError, KeyError, RuntimeError) as e:
        check(False, "the lab ran to its end", repr(e))
    return finish(work, ["a.log", "a.tx.log", "daemon.log", "b.log", "b.tx.log"])


if __name__ == "__main__":
    sys.exit(main())
