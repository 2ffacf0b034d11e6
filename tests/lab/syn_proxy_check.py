#!/usr/bin/env python3
"""Prints, and in check mode asserts, what tests/lab/syn_proxy.sh measured.

  syn_proxy_check.py WORK check|show ROUNDS BIG_MB MID_MB FLOOD_CURLS

WORK is the script's work folder: www.sha256 (the files served), a folder per download run
(r1-proxy, r1-drop, r2-drop, ...) and lab/ (the captured transfers, the raw client, the flood).
In each: stats.json (floodgate run --stats at exit) and snap-STEP.json (the same, read after
each step), and per download NAME: curl-NAME.txt (curl's -w line), sha-NAME.txt (the body's
SHA-256), ss-NAME-{client,server}.txt (ss -tino during the transfer), and
tcp-NAME-{client,server}-{before,after}.json (each namespace's TCP counters around it).
lab/ also has client.pcapng and server.pcapng (dumpcap at both ends, dumpcap-*.log), raw-proxy.json and
raw-auth.json (syn_proxy.py rawclient), syns.json (SYNs that reached the server's veth, per
source), curl-before.txt, curl-flood.txt and tx.log (floodgate-tx).

Each check prints PASS or FAIL and its evidence; the counts it expects are computed from what
the clients and the server saw (their TCP counters, curl, the SYN receiver), not from floodgate.
Speeds and times are printed, never asserted: the machine is shared. The last line is a JSON
summary of the figures. Exit status 1 if a check failed (check mode).
"""
import json
import os
import re
import statistics
import subprocess
import sys

from flood_sources import spoofed  # tests/lab/flood_sources.py
from lab_common import Work

work, mode = sys.argv[1], sys.argv[2]
lab = Work(work)
rounds, big_mb, mid_mb, flood_curls = (int(x) for x in sys.argv[3:7])
VARIANTS = ["v4-ts", "v4-nots", "v6-ts", "v6-nots"]
CAPTURE4, CAPTURE6 = "198.18.1.12", "2001:db8:1:12::12"
LOSSY4, LOSSY6 = "198.18.1.13", "2001:db8:1:13::13"
RAW_PROXY, RAW_AUTH = "198.18.1.20", "198.18.1.21"
BEFORE4, FLOOD4 = "198.18.1.30", "198.18.1.31"
FRESH_BEFORE = [f"198.18.1.{i}" for i in range(40, 45)]
FRESH_FLOOD = [f"198.18.1.{i}" for i in range(50, 55)]
ANNOUNCED_WSCALE = 7  # proxy.yaml's announce.wscale
# Failure counters of syn-proxy that none of this lab's traffic should move.
PROXY_NEVER = ["proxy_server_refused", "proxy_server_timeout", "proxy_table_full",
               "proxy_untranslatable", "proxy_held_dropped"]
# The namespaces' counters of retransmission and SACK, summed per kind of download; and those
# that count a SACK block refused as invalid.
SACK_COUNTERS = ["TcpRetransSegs", "TcpExtTCPLossProbes", "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent",
                 "TcpExtTCPDSACKRecv", "TcpExtTCPSackRecovery",
                 "TcpExtTCPSACKDiscard", "TcpExtTCPDSACKIgnoredOld", "TcpExtTCPDSACKIgnoredDubious",
                 "TcpExtTCPSACKReneging"]
SACK_INVALID = ["TcpExtTCPSACKDiscard", "TcpExtTCPDSACKIgnoredOld", "TcpExtTCPDSACKIgnoredDubious",
                "TcpExtTCPSACKReneging"]
# tshark calls a TCP checksum of 0xFFFF where it computes 0x0000 bad (tcp.checksum.ffff, "should
# be 0x0000, see RFC 1624"); both are zero in one's complement and every receiver takes either.
# Linux writes it itself, 1 segment in 65,536, when it sums in software, as here with the
# offloads off (skb_checksum_help: csum_fold(csum) ?: CSUM_MANGLED_0). Those are counted apart,
# by who wrote them.
TSHARK_BAD = ("(tcp.checksum.status==0 && !tcp.checksum.ffff) || ip.checksum.status==0"
              " || tcp.analysis.ack_lost_segment || tcp.analysis.lost_segment || _ws.malformed")

results = []  # (ok, text)
summary = {}


def check(ok, what):
    results.append((bool(ok), what))
    print(f"{'PASS' if ok else 'FAIL'} {len(results):3d}. {what}", flush=True)
    return ok


def note(what):
    print(f"     {what}", flush=True)


def load(*path, default=None):
    return lab.load(os.path.join(*path), default)


def text(*path):
    return lab.text(os.path.join(*path))


def delta(after, before, key):
    """A counter's change between two stats documents (a top-level name, or kind:NAME for
    answers_by_kind, or rule:RULE:NAME for a rule's)."""
    def get(s):
        if not s:
            return 0
        if key.startswith("kind:"):
            return s["answers_by_kind"][key[5:]]
        if key.startswith("rule:"):
            _, rule, name = key.split(":")
            return next(r[name] for r in s["rules"] if r["name"] == rule)
        return s[key]
    return get(after) - get(before)


def tcp_delta(run, name, side):
    b, a = load(run, f"tcp-{name}-{side}-before.json", default={}), load(run, f"tcp-{name}-{side}-after.json", default={})
    return {k: a[k] - b.get(k, 0) for k in a}


def reference():
    sha = {}
    for line in text("www.sha256").splitlines():
        digest, path = line.split()
        sha[os.path.basename(path)] = digest
    return sha


REF = reference()


def curl_line(run, name):
    """curl's -w line: code, bytes, time_connect s, time_total s, speed B/s; None if absent."""
    for line in text(run, f"curl-{name}.txt").splitlines():
        if line.startswith(f"curl {name} "):
            f = line.split()
            return {"code": f[3], "bytes": int(f[4]), "connect_s": float(f[5]),
                    "total_s": float(f[6]), "speed_Bps": float(f[7])}
    return None


def ss_line(run, name, side):
    """The first ss -tino record of the transfer that shows its options: the socket's line and
    its info line, joined."""
    lines = text(run, f"ss-{name}-{side}.txt").splitlines()
    for i, line in enumerate(lines):
        if "wscale:" in line:
            head = lines[i - 1].strip() if i > 0 and not lines[i - 1].startswith(("\t", " ")) else ""
            return (head + " | " + line.strip()) if head else line.strip()
    return ""


def ss_options(line):
    info = line.split("|")[-1]
    m = re.search(r"wscale:(\d+),(\d+)", info)
    return {"ts": re.search(r"(^|\s)ts(\s|$)", info) is not None,
            "sack": re.search(r"(^|\s)sack(\s|$)", info) is not None,
            "wscale": (int(m.group(1)), int(m.group(2))) if m else None}


def short_ss(line):
    """The options part of an ss info line: up to the rto."""
    info = line.split("|")[-1].strip()
    return info.split(" rto:")[0]


# --- 1. correctness, and what 2. measures ------------------------------------------------------
def download_runs():
    runs = []
    for r in range(1, rounds + 1):
        for action in ("proxy", "drop"):
            runs.append((r, action, f"r{r}-{action}"))
    return runs


def check_download(run, name, file, proxied, before, after):
    """One download: its body, and for a proxied one, floodgate's counters against what the
    server's TCP saw. Returns the MB/s."""
    c = curl_line(run, name)
    sha = text(run, f"sha-{name}.txt").split()[:1]
    size = (big_mb if file == "big" else mid_mb) * 1000 * 1000
    ok = c is not None and c["code"] == "200" and c["bytes"] == size and sha == [REF[file]]
    check(ok, f"{run} {name}: curl {c['code'] if c else '?'}, {c['bytes'] if c else 0:,} bytes, "
              f"sha256 {'matches' if sha == [REF[file]] else 'DIFFERS: ' + ' '.join(sha)}"
              + (f"; {c['bytes'] / c['total_s'] / 1e6:.1f} MB/s, time_connect {c['connect_s'] * 1000:.2f} ms" if c else ""))
    if not proxied:
        return c["bytes"] / c["total_s"] / 1e6 if ok else None
    client, server = tcp_delta(run, name, "client"), tcp_delta(run, name, "server")
    syn_retrans = client.get("TcpExtTCPSynRetrans", 0)
    d = {k: delta(after, before, k) for k in ("proxy_opened", "proxy_established", "kind:syn_proxy",
                                               "rule:syn:verified", "proxy_translated")}
    check(d["proxy_opened"] == 1 and d["proxy_established"] == 1 and d["rule:syn:verified"] == 1
          and d["kind:syn_proxy"] == 1 + syn_retrans,
          f"{run} {name} was proxied: proxy_opened +{d['proxy_opened']}, proxy_established "
          f"+{d['proxy_established']}, rule syn verified +{d['rule:syn:verified']} (each 1), SYN-ACKs "
          f"answered (syn_proxy) +{d['kind:syn_proxy']} (the client's SYNs: 1 + {syn_retrans} retransmitted)")
    # Every segment after the handshake is translated: all the client and the server received
    # but the SYN-ACK floodgate wrote the client, and the SYN and ACK it wrote the server (InSegs
    # counts retransmitted copies too). At most what the two sent (OutSegs leaves retransmissions
    # out, RetransSegs has them) but the client's SYN and ACK, and the server's SYN-ACK.
    received = client.get("TcpInSegs", 0) + server.get("TcpInSegs", 0) - 3
    sent = sum(side.get(k, 0) for side in (client, server) for k in ("TcpOutSegs", "TcpRetransSegs")) - 3
    retrans = server.get("TcpRetransSegs", 0) + client.get("TcpRetransSegs", 0)
    if name.startswith("lossy"):  # the client dropped some, after floodgate: what was sent
        check(d["proxy_translated"] == sent and received < sent,
              f"{run} {name}: proxy_translated +{d['proxy_translated']:,} = what the client and the server sent "
              f"{sent:,} ({retrans} retransmitted) but floodgate's SYN-ACK, SYN and ACK; received {received:,} "
              f"(the client dropped {sent - received})")
        return c["bytes"] / c["total_s"] / 1e6 if ok else None
    check(d["proxy_translated"] == received and received <= sent,
          f"{run} {name}: proxy_translated +{d['proxy_translated']:,} = what the client received "
          f"{client.get('TcpInSegs', 0):,} + the server {server.get('TcpInSegs', 0):,} - 3 (floodgate's SYN-ACK, "
          f"SYN, ACK) = {received:,}; both sent {sent:,} ({retrans} retransmitted)")
    return c["bytes"] / c["total_s"] / 1e6 if ok else None


def check_ss(run, name, proxied):
    cl, sv = ss_line(run, name, "client"), ss_line(run, name, "server")
    co, so = ss_options(cl), ss_options(sv)
    ok = bool(cl and sv) and co["sack"] and so["sack"] and co["wscale"] and so["wscale"]
    what = f"{run} {name}: ss during the transfer, client: {short_ss(cl) or 'nothing'}; server: {short_ss(sv) or 'nothing'}"
    if proxied:
        # The SYN-ACK announces the rule's shift, and offers no timestamps (docs/answers.md:
        # what is lost).
        ok = ok and co["wscale"][0] == ANNOUNCED_WSCALE and not co["ts"] and not so["ts"]
        check(ok, what + f" (sack and wscale both ends, the client told wscale {ANNOUNCED_WSCALE}, no ts)")
    else:
        # The control: the variant's timestamps setting is what the connection has.
        want_ts = name.endswith("-ts")
        ok = ok and co["ts"] == want_ts and so["ts"] == want_ts
        check(ok, what + f" (sack and wscale both ends, ts {'on' if want_ts else 'off'})")
    return cl, sv


def part_downloads():
    print(f"=== 1-2. {big_mb} MB downloads through syn-proxy and through drop ===")
    speeds = {v: {"proxy": [], "drop": []} for v in VARIANTS}
    connects = {"proxy": [], "drop": []}
    ss_seen = {}
    tcp_sums = {"proxy": {}, "drop": {}}
    for r, action, run in download_runs():
        proxied = action == "proxy"
        stats = load(run, "stats.json")
        if not check(stats is not None, f"{run}: floodgate ran and wrote its stats"):
            continue
        before = load(run, "snap-start.json")
        for v in VARIANTS:
            after = load(run, f"snap-{v}.json")
            mbps = check_download(run, v, "big", proxied, before, after)
            if mbps is not None:
                speeds[v][action].append(mbps)
                connects[action].append(curl_line(run, v)["connect_s"] * 1000)
            cl, sv = check_ss(run, v, proxied)
            ss_seen.setdefault(f"{action} {v}", {"client": short_ss(cl), "server": short_ss(sv)})
            for side in ("client", "server"):
                for k, n in tcp_delta(run, v, side).items():
                    if k in SACK_COUNTERS:
                        tcp_sums[action][f"{side} {k}"] = tcp_sums[action].get(f"{side} {k}", 0) + n
            before = after
        if proxied:
            check(all(stats[k] == 0 for k in PROXY_NEVER),
                  f"{run}: " + ", ".join(f"{k} {stats[k]}" for k in PROXY_NEVER) + " (each 0)")
        else:
            rule = next(x for x in stats["rules"] if x["name"] == "syn")
            check(rule["refused"] == 0 and stats["proxy_opened"] == 0 and rule["matched"] >= len(VARIANTS),
                  f"{run}: rule syn matched {rule['matched']}, refused {rule['refused']} (0: nothing "
                  f"refused for one client), proxy_opened {stats['proxy_opened']}")
    # SACK blocks crossed the proxy, translated: D-SACKs the clients sent reached the servers,
    # and neither end discarded a SACK block as outside its window (what a block left in the
    # other side's sequence space would be).
    p = tcp_sums["proxy"]
    check(all(p.get(f"{side} {k}", 0) == 0 for side in ("client", "server") for k in SACK_INVALID),
          "all syn-proxy downloads: " + ", ".join(f"{side} {k} {p.get(f'{side} {k}', 0)}" for side in ("client", "server")
                                                  for k in SACK_INVALID) + " (each 0)")
    for action in ("proxy", "drop"):
        t = tcp_sums[action]
        note(f"{action} downloads, TCP counters summed: " + ", ".join(f"{k} {n}" for k, n in sorted(t.items()) if n))
    summary["tcp_counters"] = tcp_sums
    print("--- throughput (MB/s, medians of the rounds; reported, not asserted) ---")
    table = {}
    for v in VARIANTS:
        p, d = speeds[v]["proxy"], speeds[v]["drop"]
        if p and d:
            mp, md = statistics.median(p), statistics.median(d)
            table[v] = {"syn_proxy_MBps": round(mp, 1), "drop_MBps": round(md, 1), "ratio": round(mp / md, 3),
                        "syn_proxy_rounds": [round(x, 1) for x in p], "drop_rounds": [round(x, 1) for x in d]}
            note(f"{v:8s} syn-proxy {mp:6.1f} (rounds {', '.join(f'{x:.1f}' for x in p)})  drop {md:6.1f} "
                 f"(rounds {', '.join(f'{x:.1f}' for x in d)})  ratio {mp / md:.3f} (target >= 0.8)")
    allp = [x for v in VARIANTS for x in speeds[v]["proxy"]]
    alld = [x for v in VARIANTS for x in speeds[v]["drop"]]
    if allp and alld:
        ratio = statistics.median(allp) / statistics.median(alld)
        note(f"all      syn-proxy {statistics.median(allp):6.1f}  drop {statistics.median(alld):6.1f}  "
             f"ratio of medians {ratio:.3f} ({'meets' if ratio >= 0.8 else 'BELOW'} the 0.8 target)")
        summary["throughput"] = {"per_variant": table, "syn_proxy_median_MBps": round(statistics.median(allp), 1),
                                 "drop_median_MBps": round(statistics.median(alld), 1), "ratio": round(ratio, 3)}
    if connects["proxy"] and connects["drop"]:
        note(f"time_connect of the downloads: syn-proxy median {statistics.median(connects['proxy']):.2f} ms "
             f"(floodgate answers the SYN), drop median {statistics.median(connects['drop']):.2f} ms (the server does)")
        summary["download_time_connect_ms"] = {"syn_proxy_median": round(statistics.median(connects["proxy"]), 3),
                                               "drop_median": round(statistics.median(connects["drop"]), 3)}
    summary["ss"] = ss_seen


# --- 5. tshark -------------------------------------------------------------------------------
def tshark(path, *args):
    # TCP, not HTTP: HTTP's reassembly calls a retransmission of what it has seen malformed, and
    # without it HTTP reads the body's random bytes as headers.
    r = subprocess.run(["tshark", "-r", path, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
                        "-o", "tcp.desegment_tcp_streams:FALSE", "--disable-protocol", "http", *args],
                       capture_output=True, text=True, timeout=120)
    return r.stdout


def fields(path, filt, *names):
    out = tshark(path, "-Y", filt, "-T", "fields", "-E", "separator=;", *sum((["-e", n] for n in names), []))
    return [line.split(";") for line in out.splitlines() if line]


CAPTURED = [("proxied-v4", "capture-v4"), ("proxied-v6", "capture-v6"), ("direct-v4", "capture-direct"),
            ("lossy-v4", "lossy-v4"), ("lossy-v6", "lossy-v6")]
FRAME_FIELDS = ["tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "tcp.flags", "tcp.seq", "tcp.ack", "tcp.len",
                "tcp.window_size", "tcp.options.sack_le", "tcp.options.sack_re", "tcp.seq_raw", "tcp.checksum.status",
                "ip.checksum.status", "ip.version", "_ws.col.Info"]


def frames(path):
    """Every TCP frame of a capture as a dict of FRAME_FIELDS (relative sequence numbers; the
    window as scaled by the shift of its sender's SYN)."""
    return [dict(zip(FRAME_FIELDS, f)) for f in fields(path, "tcp", *FRAME_FIELDS)]


def label_streams(rows):
    """{tcp.stream: label}: each connection by its client end (floodgate keeps addresses and
    ports) and, for the two from CAPTURE4, their order."""
    first = {}
    for r in rows:
        if r["tcp.flags"] == "0x0002":
            first.setdefault(r["tcp.stream"], (r["ip.src"] or r["ipv6.src"], len(first)))
    by_src = {}
    for stream, (src, order) in sorted(first.items(), key=lambda x: x[1][1]):
        by_src.setdefault(src, []).append(stream)
    labels = {}
    for src, lab in ((CAPTURE4, ["proxied-v4", "direct-v4"]), (CAPTURE6, ["proxied-v6"]),
                     (LOSSY4, ["lossy-v4"]), (LOSSY6, ["lossy-v6"])):
        for stream, name in zip(by_src.get(src, []), lab):
            labels[stream] = name
    return labels, first


def segments(rows, stream):
    """A stream's segments each way, past the handshake: client to server after its SYN and
    handshake ACK, server to client after the SYN-ACK; each as what translation must keep
    (flags, relative seq and ack, length, scaled window, SACK blocks)."""
    keep = ("tcp.flags", "tcp.seq", "tcp.ack", "tcp.len", "tcp.window_size", "tcp.options.sack_le", "tcp.options.sack_re")
    mine = [r for r in rows if r["tcp.stream"] == stream]
    c2s = [tuple(r[k] for k in keep) for r in mine if r["tcp.srcport"] != "80"][2:]
    s2c = [tuple(r[k] for k in keep) for r in mine if r["tcp.srcport"] == "80"][1:]
    return c2s, s2c


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"#{i}: {x} / {y}"
    return f"lengths {len(a)} / {len(b)}"


def part_tshark():
    print("=== 5. tshark on both veths: two proxied transfers, a direct one, two proxied with SACK ===")
    before = load("lab", "snap-start.json")
    for lab, name in CAPTURED:
        after = load("lab", f"snap-{name}.json")
        proxied = not lab.startswith("direct")
        check_download("lab", name, "mid", proxied, before, after)
        if not proxied:
            check(delta(after, before, "proxy_opened") == 0 and delta(after, before, "proxy_translated") == 0,
                  f"lab {name}, from {CAPTURE4} again (verified): not proxied, proxy_opened "
                  f"+{delta(after, before, 'proxy_opened')}, proxy_translated +{delta(after, before, 'proxy_translated')}")
        before = after
    for name in ("lossy-v4", "lossy-v6"):
        client, server = tcp_delta("lab", name, "client"), tcp_delta("lab", name, "server")
        check(server.get("TcpExtTCPSackRecovery", 0) >= 1 and server.get("TcpExtTCPSACKDiscard", 0) == 0
              and server.get("TcpRetransSegs", 0) >= 1,
              f"lab {name}: the server recovered with SACK: TCPSackRecovery +{server.get('TcpExtTCPSackRecovery', 0)}, "
              f"TcpRetransSegs +{server.get('TcpRetransSegs', 0)}, TCPSACKDiscard +{server.get('TcpExtTCPSACKDiscard', 0)} "
              f"(SACK blocks refused as invalid: 0); the client's TCPOFOQueue +{client.get('TcpExtTCPOFOQueue', 0)}")
    figures, rows, labels = {}, {}, {}
    for side in ("client", "server"):
        path = os.path.join(work, "lab", f"{side}.pcapng")
        if not check(os.path.exists(path), f"{side}'s capture exists"):
            continue
        rows[side] = frames(path)
        labels[side], first = label_streams(rows[side])
        check(len(first) == len(CAPTURED) and sorted(labels[side].values()) == sorted(lab for lab, _ in CAPTURED),
              f"{side}'s veth: the {len(CAPTURED)} connections by client end: "
              + ", ".join(f"{labels[side].get(st, '?')} {src} (stream {st})" for st, (src, _) in first.items()))
        tcp = rows[side]
        tcp_good = sum(1 for r in tcp if r["tcp.checksum.status"] == "1")
        ffff = {}
        for f in fields(path, "tcp.checksum.ffff", "tcp.stream", "tcp.srcport"):
            lab = labels[side].get(f[0], f[0])
            from_server = f[1] == "80"
            # Written by the sender's kernel, unless floodgate rewrote it on the way (a proxied
            # connection's segment, seen on the far side from its sender).
            rewritten = not lab.startswith("direct") and from_server == (side == "client")
            writer = "floodgate" if rewritten else ("the server" if from_server else "the client")
            key = f"{lab} {'server to client' if from_server else 'client to server'}, written by {writer}"
            ffff[key] = ffff.get(key, 0) + 1
        v4 = [r for r in tcp if r["ip.version"] == "4"]
        v4_good = sum(1 for r in v4 if r["ip.checksum.status"] == "1")
        bad = fields(path, TSHARK_BAD, "frame.number", "tcp.stream", "_ws.col.Info")
        m = re.search(r"received/dropped on interface .*: (\d+)/(\d+)", text("lab", f"dumpcap-{side}.log"))
        dropped = int(m.group(2)) if m else None
        check(tcp and tcp_good + sum(ffff.values()) == len(tcp) and v4_good == len(v4) and not bad and dropped == 0,
              f"{side}'s veth: dumpcap dropped {dropped} frames; {len(tcp):,} TCP frames, TCP checksum good in "
              f"{tcp_good:,}, 0xFFFF for 0x0000 in {sum(ffff.values())} ({ffff or 'none'}), IPv4 header checksum "
              f"good in {v4_good:,} of {len(v4):,}; frames matching "
              f"'{TSHARK_BAD}': {len(bad)}" + (f" (first: {bad[:3]})" if bad else ""))
        # The rest of tshark's expert analysis, per connection, for the record.
        name_of = labels[side]
        warnings = {}
        for f in fields(path, "_ws.expert.severity >= 0x600000", "tcp.stream", "_ws.expert.message"):
            for msg in f[1].split(","):
                w = warnings.setdefault(name_of.get(f[0], f[0]), {})
                w[msg] = w.get(msg, 0) + 1
        marked = {}
        for f in fields(path, "tcp.analysis.retransmission || tcp.analysis.out_of_order || tcp.analysis.duplicate_ack",
                        "tcp.stream"):
            marked[name_of.get(f[0], f[0])] = marked.get(name_of.get(f[0], f[0]), 0) + 1
        sacks = {}
        for r in tcp:
            if r["tcp.options.sack_le"]:
                sacks[name_of.get(r["tcp.stream"])] = sacks.get(name_of.get(r["tcp.stream"]), 0) + 1
        note(f"{side}'s expert warnings (and above) by connection: {warnings or 'none'}")
        note(f"{side}'s retransmissions, out-of-order and duplicate ACKs: {marked or 'none'}; segments with SACK "
             f"blocks: {sacks or 'none'}")
        figures[side] = {"tcp_frames": len(tcp), "checksum_good": tcp_good, "checksum_ffff": ffff, "bad_or_lost": len(bad),
                         "warnings": warnings, "retrans_ooo_dupack": marked, "with_sack_blocks": sacks}
    if len(rows) < 2:
        return
    stream = {side: {lab: st for st, lab in labels[side].items()} for side in rows}
    for lab, _ in CAPTURED:
        if lab not in stream["client"] or lab not in stream["server"]:
            check(False, f"{lab}: found in both captures")
            continue
        cs, cc = stream["client"][lab], stream["server"][lab]
        syn = {side: [r for r in rows[side] if r["tcp.stream"] == stream[side][lab] and r["tcp.flags"] in ("0x0002", "0x0012")]
               for side in rows}
        synack = {side: next((r for r in syn[side] if r["tcp.flags"] == "0x0012"), None) for side in rows}
        isn = {side: synack[side]["tcp.seq_raw"] if synack[side] else "?" for side in rows}
        same = isn["client"] == isn["server"] and isn["client"] != "?"
        proxied = not lab.startswith("direct")
        check((not same and "?" not in isn.values()) if proxied else same,
              f"{lab}: SYN-ACK sequence number at the client {isn['client']}, at the server {isn['server']}: "
              + ("different: the client got floodgate's cookie, the server answered floodgate's SYN" if not same else "the same"))
        c2s_c, s2c_c = segments(rows["client"], cs)
        c2s_s, s2c_s = segments(rows["server"], cc)
        with_sack = sum(1 for x in c2s_c if x[5])
        ok = c2s_c == c2s_s and s2c_c == s2c_s and c2s_c and s2c_c
        if lab.startswith("lossy"):
            ok = ok and with_sack > 0
        check(ok, f"{lab}: past the handshake, every segment the same at both ends in relative sequence and "
                  f"acknowledgment numbers, length, flags, scaled window and SACK blocks: client to server "
                  f"{len(c2s_c):,} / {len(c2s_s):,} ({with_sack} with SACK blocks), server to client "
                  f"{len(s2c_c):,} / {len(s2c_s):,}"
                  + ("" if c2s_c == c2s_s else f"; client to server differs at {first_difference(c2s_c, c2s_s)}")
                  + ("" if s2c_c == s2c_s else f"; server to client differs at {first_difference(s2c_c, s2c_s)}"))
        if lab in ("proxied-v4", "proxied-v6"):
            info = {}
            for side in rows:
                for r in syn[side]:
                    info.setdefault((side, r["tcp.flags"]), r["_ws.col.Info"].split("] ", 1)[-1])
            note(f"{lab}: the client's SYN:               {info.get(('client', '0x0002'))}")
            note(f"{lab}: floodgate's SYN-ACK:            {info.get(('client', '0x0012'))}")
            note(f"{lab}: floodgate's SYN to the server:  {info.get(('server', '0x0002'))}")
            note(f"{lab}: the server's SYN-ACK:           {info.get(('server', '0x0012'))}")
    summary["tshark"] = figures


# --- 4. the raw client -------------------------------------------------------------------------
def part_raw():
    print("=== 4. an RFC 9293 client with a 1 s RTO (raw socket) ===")
    syns = (load("lab", "syns.json", default={}) or {}).get("syns", {})
    p, a = load("lab", "raw-proxy.json", default={}), load("lab", "raw-auth.json", default={})
    before = load("lab", "snap-lossy-v6.json")
    mid, after = load("lab", "snap-raw-proxy.json"), load("lab", "snap-raw-auth.json")
    check(p.get("syns") == 1 and p.get("rsts") == 0 and [s["ack_ok"] for s in p.get("synacks", [])] == [True]
          and p.get("status") == "HTTP/1.0 200 OK" and p.get("body_ok") and p.get("closed_s") is not None
          and syns.get(RAW_PROXY) == 1,
          f"syn-proxy (port 80, from {RAW_PROXY}): {p.get('syns')} SYN, {p.get('rsts')} RST, SYN-ACKs "
          f"{p.get('synacks')}, connected at {fmt_ms(p.get('connected_s'))}, reply '{p.get('status')}' "
          f"body {'matches' if p.get('body_ok') else 'DIFFERS'} at {fmt_ms(p.get('reply_s'))}, closed "
          f"{fmt_ms(p.get('closed_s'))}; SYNs that reached the server from it: {syns.get(RAW_PROXY, 0)} "
          f"(floodgate's); error {p.get('error')}")
    d = {k: delta(mid, before, k) for k in ("proxy_opened", "proxy_established", "proxy_held", "kind:syn_proxy")}
    check(d["proxy_opened"] == 1 and d["proxy_established"] == 1 and d["kind:syn_proxy"] == 1,
          f"its counters: proxy_opened +{d['proxy_opened']}, proxy_established +{d['proxy_established']}, "
          f"syn_proxy answers +{d['kind:syn_proxy']}, proxy_held +{d['proxy_held']} (its GET, sent with the "
          f"ACK, when it beat the server's SYN-ACK)")
    acks = [s["ack_ok"] for s in a.get("synacks", [])]
    check(a.get("syns") == 2 and a.get("rsts") == 1 and acks == [False, True] and (a.get("connected_s") or 0) >= 1.0
          and a.get("status") == "HTTP/1.0 200 OK" and a.get("body_ok") and syns.get(RAW_AUTH) == 1,
          f"syn-auth (port 81, from {RAW_AUTH}): {a.get('syns')} SYNs, {a.get('rsts')} RST (seq = the "
          f"challenge's ACK), SYN-ACKs {a.get('synacks')}, connected at {fmt_ms(a.get('connected_s'))} "
          f"(>= its 1 s RTO), reply '{a.get('status')}' body {'matches' if a.get('body_ok') else 'DIFFERS'}; "
          f"SYNs that reached the server from it: {syns.get(RAW_AUTH, 0)} (the second); error {a.get('error')}")
    d = {k: delta(after, mid, k) for k in ("kind:syn_cookie", "rule:syn-auth:verified", "syn_auth_replies", "proxy_opened")}
    check(d["kind:syn_cookie"] == 1 and d["rule:syn-auth:verified"] == 1 and d["syn_auth_replies"] == 1
          and d["proxy_opened"] == 0,
          f"its counters: syn_cookie answers +{d['kind:syn_cookie']}, rule syn-auth verified "
          f"+{d['rule:syn-auth:verified']}, syn_auth_replies +{d['syn_auth_replies']}, proxy_opened +{d['proxy_opened']}")
    summary["raw_client"] = {
        "syn_proxy": {"syns": p.get("syns"), "rsts": p.get("rsts"), "connected_ms": ms(p.get("connected_s")),
                      "reply_ms": ms(p.get("reply_s"))},
        "syn_auth": {"syns": a.get("syns"), "rsts": a.get("rsts"), "connected_ms": ms(a.get("connected_s")),
                     "reply_ms": ms(a.get("reply_s"))}}


def ms(s):
    return None if s is None else round(s * 1000, 3)


def fmt_ms(s):
    return "never" if s is None else f"{s * 1000:.1f} ms"


# --- 3. the flood --------------------------------------------------------------------------------
def curls(name):
    out = []
    for line in text("lab", name).splitlines():
        src, i, code, connect, total = line.split()
        out.append({"src": src, "ok": code == "200", "connect_ms": float(connect) * 1000, "total_ms": float(total) * 1000})
    return out


def part_flood():
    print(f"=== 3. a spoofed SYN flood while {flood_curls} curls run from one client ===")
    tx = {}
    rates = []
    for line in text("lab", "tx.log").splitlines():
        if line.startswith("{"):
            tx = json.loads(line)
        elif line.startswith("tx ") and line.endswith(" pps"):
            rates.append(int(line.split()[1]))
    times = load("lab", "times.json", default={}) or {}
    note(f"floodgate-tx: {tx.get('sent', 0):,} spoofed SYNs in {tx.get('seconds', '?')} s, "
         f"{tx.get('pps', 0):,.0f}/s on average (per second: {', '.join(f'{r:,}' for r in rates)}); "
         f"the curls under it took {times.get('flood_curls_s', '?')} s")
    before_all, flood_all = curls("curl-before.txt"), curls("curl-flood.txt")
    before = [c for c in before_all if c["src"] == BEFORE4]
    flood = [c for c in flood_all if c["src"] == FLOOD4]
    fresh_before = [c for c in before_all if c["src"] in FRESH_BEFORE]
    fresh_flood = [c for c in flood_all if c["src"] in FRESH_FLOOD]
    check(len(before) == 2 and len(fresh_before) == len(FRESH_BEFORE) and all(c["ok"] for c in before_all),
          f"before the flood: {BEFORE4} {sum(c['ok'] for c in before)}/2 ok, {FRESH_BEFORE[0]}-{FRESH_BEFORE[-1].split('.')[-1]} "
          f"{sum(c['ok'] for c in fresh_before)}/{len(FRESH_BEFORE)} ok")
    check(len(flood) == flood_curls and all(c["ok"] for c in flood),
          f"under the flood, {FLOOD4}: {sum(c['ok'] for c in flood)}/{flood_curls} ok")
    check(len(fresh_flood) == len(FRESH_FLOOD) and all(c["ok"] for c in fresh_flood),
          f"under the flood, {FRESH_FLOOD[0]}-{FRESH_FLOOD[-1].split('.')[-1]} (one proxied connection each): "
          f"{sum(c['ok'] for c in fresh_flood)}/{len(FRESH_FLOOD)} ok")
    syns = (load("lab", "syns.json", default={}) or {}).get("syns", {})
    spoofed_syns = sum(n for s, n in syns.items() if spoofed(s))
    client = load("lab", "tcp-flood-client-after.json", default={})
    client_b = load("lab", "tcp-flood-client-before.json", default={})
    syn_retrans = client.get("TcpExtTCPSynRetrans", 0) - client_b.get("TcpExtTCPSynRetrans", 0)
    # Every SYN that may reach the server, per source, from what the clients did: one per
    # connection (floodgate's own SYN for a proxied one, the client's for a verified source's),
    # the flooded client's retransmitted SYNs at most on top.
    expected = {CAPTURE4: 2, CAPTURE6: 1, LOSSY4: 1, LOSSY6: 1, RAW_PROXY: 1, RAW_AUTH: 1, BEFORE4: 2,
                **{a: 1 for a in FRESH_BEFORE + FRESH_FLOOD}}
    unexpected = {s: n for s, n in syns.items() if s not in expected and s != FLOOD4}
    exact = all(syns.get(s, 0) == n for s, n in expected.items())
    flood_syns = syns.get(FLOOD4, 0)
    check(spoofed_syns == 0 and not unexpected and exact and flood_curls <= flood_syns <= flood_curls + syn_retrans,
          f"SYNs that reached the server: {spoofed_syns} from spoofed sources ({tx.get('sent', 0):,} sent); "
          f"per client source {dict(sorted(syns.items()))}, expected {expected} and {flood_curls} "
          f"(+ at most {syn_retrans} retransmitted) from {FLOOD4}; others: {unexpected or 'none'}")
    b, f = load("lab", "snap-before.json"), load("lab", "snap-flood.json")
    d = {k: delta(f, b, k) for k in ("proxy_opened", "proxy_established", "kind:syn_proxy", "answer_capped",
                                     "rule:syn:refused", "proxy_cookie_failed")}
    n = 1 + len(FRESH_FLOOD)
    check(d["proxy_opened"] == n and d["proxy_established"] == n,
          f"during the flood: proxy_opened +{d['proxy_opened']}, proxy_established +{d['proxy_established']} "
          f"({n} each: {FLOOD4}'s first connection and one each from {FRESH_FLOOD[0]}-{FRESH_FLOOD[-1].split('.')[-1]}; "
          f"spoofers never return a cookie), SYN-ACKs sent "
          f"(syn_proxy) +{d['kind:syn_proxy']:,}, answer_capped +{d['answer_capped']:,}, rule syn refused "
          f"+{d['rule:syn:refused']:,}, proxy_cookie_failed +{d['proxy_cookie_failed']}")
    if len(before) == 2 and flood:
        later = [c["connect_ms"] for c in flood[1:]]
        first_before = [before[0]["connect_ms"]] + [c["connect_ms"] for c in fresh_before]
        first_flood = [flood[0]["connect_ms"]] + [c["connect_ms"] for c in fresh_flood]
        note(f"time_connect before the flood: {BEFORE4} #1 (proxied) {before[0]['connect_ms']:.2f} ms, "
             f"#2 (verified, direct) {before[1]['connect_ms']:.2f} ms")
        note(f"time_connect under the flood: {FLOOD4} #1 (proxied) {flood[0]['connect_ms']:.2f} ms "
             f"({flood[0]['connect_ms'] - before[0]['connect_ms']:+.2f} ms against {BEFORE4} #1; target within 2 ms), "
             f"#2-#{len(flood)} (direct) median {statistics.median(later):.2f} ms, max {max(later):.2f} ms")
        note(f"first (proxied) connections' time_connect, {len(first_before)} sources each: before the flood median "
             f"{statistics.median(first_before):.2f} ms ({', '.join(f'{x:.2f}' for x in first_before)}), under it "
             f"median {statistics.median(first_flood):.2f} ms ({', '.join(f'{x:.2f}' for x in first_flood)}): "
             f"{statistics.median(first_flood) - statistics.median(first_before):+.2f} ms")
        summary["flood"] = {
            "spoofed_syns_sent": tx.get("sent"), "flood_pps": round(tx.get("pps", 0)), "spoofed_syns_at_server": spoofed_syns,
            "curls_ok": f"{sum(c['ok'] for c in flood)}/{flood_curls}",
            "time_connect_ms": {"before_proxied": round(before[0]["connect_ms"], 3),
                                "before_direct": round(before[1]["connect_ms"], 3),
                                "flood_first_proxied": round(flood[0]["connect_ms"], 3),
                                "flood_later_direct_median": round(statistics.median(later), 3),
                                "flood_later_direct_max": round(max(later), 3),
                                "first_connections_before_median": round(statistics.median(first_before), 3),
                                "first_connections_flood_median": round(statistics.median(first_flood), 3)}}


def part_end():
    print("=== the lab run's end ===")
    s = load("lab", "snap-drained.json")
    if not check(s is not None, "lab: every proxied connection ended and was swept (proxy_connections 0)"):
        return
    check(s["proxy_closed"] + s["proxy_expired"] == s["proxy_established"] and all(s[k] == 0 for k in PROXY_NEVER),
          f"lab: proxy_established {s['proxy_established']} = proxy_closed {s['proxy_closed']} + proxy_expired "
          f"{s['proxy_expired']}; " + ", ".join(f"{k} {s[k]}" for k in PROXY_NEVER) + " (each 0)")
    if s["proxy_expired"] and not s["proxy_closed"]:
        note("NOTE: every connection here ended by a FIN each way, yet all count as proxy_expired and none as "
             "proxy_closed (stats.h: closed = 'ended by a FIN each way or a RST'): the sweep removes a closing "
             "connection after proxy_server_timeout and counts it as timed out")
    summary["lab_counters"] = {k: s[k] for k in s if k.startswith("proxy_")}
    summary["lab_counters"]["answers_by_kind"] = s["answers_by_kind"]


part_downloads()
part_tshark()
part_raw()
part_flood()
part_end()
failed = [t for ok, t in results if not ok]
print(f"=== {len(results) - len(failed)}/{len(results)} checks passed ===")
summary["checks"] = {"passed": len(results) - len(failed), "failed": len(failed)}
print(json.dumps(summary, sort_keys=True))
if mode == "check" and failed:
    sys.exit(1)
