"""One run's Markdown: cases 1-3, the benchmarks, scaling, the targets and what failed."""
import re

from report_format import (TARGET_ANSWER_OVER_DROP, TARGET_BYTES_PER_KEY, TARGET_CASE1_MIX_E,
                           TARGET_CASE1_ROUND_TWO, TARGET_CASE3, TARGET_DECISION_NS_16M,
                           TARGET_DECISION_NS_16M_ROUND_FOUR, TARGET_NO_RULES, TARGET_PAYLOAD,
                           TARGET_SYN_PROXY, TARGETS_CASE1,
                           cycles_range, median, met, mpps, ratio, spread)
from report_scaling import scaling

MIX_NAMES = {"a": "a: one source", "b": "b: 1,048,576 random sources",
             "b15": "b15: 131,072 random sources (198.18.0.0/15)",
             "c": "c: IPv6 over 65,536 /64s", "d": "d: 90% flood, 10% legitimate",
             "e": "e: SYN flood, 1,048,576 random sources, every SYN answered",
             "e-drop": "e-drop: the same SYN flood, every SYN dropped",
             "a-payload": "a-payload: mix a under a payload rule (perf-payload.yaml)",
             "b-payload": "b-payload: mix b under a payload rule (perf-payload.yaml)",
             "f": "f: ACKs of 65,536 established TCP connections to port 80",
             "f-proxy": "f-proxy: mix f beside a syn-proxy rule (perf-syn-proxy.yaml)",
             "held-out": "held-out: 262,144 random sources, Zipf, UDP and TCP, IPv4 and IPv6, "
                         "a fresh seed each run"}
SYN_REGIMES = {0: "frame copy only", 1: "every SYN dropped", 2: "every SYN answered (syn-auth)",
               3: "every SYN answered (syn-proxy)"}


def answer_cost(rows, h, targets):
    """Mixes e and e-drop of case 1, side by side: the cycles of an answered SYN against a
    dropped one, and what the runs' counters say was answered and refused."""
    by_mix = {row["mix"]: row for row in rows}
    if "e" not in by_mix or "e-drop" not in by_mix:
        return []
    ans, drop = by_mix["e"], by_mix["e-drop"]
    ca = median(ans["floodgate_cycles_per_packet"])
    cd = median(drop["floodgate_cycles_per_packet"])
    r = ca / cd if ca and cd else None

    def share(row, key):
        counts = [c for c in row.get("floodgate_counts", []) if c and c["packets"]]
        if not counts:
            return "-"
        vals = [c[key] / c["packets"] for c in counts]
        return "%.4f-%.4f" % (min(vals), max(vals)) if len(vals) > 1 else "%.4f" % vals[0]

    out = [h + " Case 1: the cost of an answer (mix e against mix e-drop)", "",
           "cycles/packet is `floodgate run --stats` `cycles.per_packet`: TSC cycles of the "
           "worker's non-empty bursts (receive, decide, build the answers, hand them and the "
           "drops back) over the packets received, whole run. Answered and refused are the "
           "runs' `answered` and `rate_limited` over `packets`, warm-up included (mix e-drop "
           "admits each source's first SYN); every answer left by the outside port "
           "(its TX count equals `answered`: %s)." % (
               "yes" if all(c and c["outside_tx"] == c["answered"]
                            for c in ans.get("floodgate_counts", [])) else "**no**"), "",
           "| | every SYN dropped (e-drop) | every SYN answered (e) | answered / dropped |",
           "|---|---|---|---|",
           "| floodgate Mpps | %s%s | %s%s | %s |" % (
               mpps(drop["floodgate_median_pps"]), spread(drop["floodgate"]),
               mpps(ans["floodgate_median_pps"]), spread(ans["floodgate"]),
               ratio(drop["floodgate_median_pps"] / ans["floodgate_median_pps"]
                     if ans["floodgate_median_pps"] and drop["floodgate_median_pps"] else None)
               + " (dropped Mpps / answered Mpps)"),
           "| cycles/packet | %s | %s | %s |" % (
               cycles_range(drop["floodgate_cycles_per_packet"]),
               cycles_range(ans["floodgate_cycles_per_packet"]), ratio(r)),
           "| answered / packets | %s | %s | |" % (share(drop, "answered"), share(ans, "answered")),
           "| refused / packets | %s | %s | |" % (share(drop, "rate_limited"),
                                                   share(ans, "rate_limited")), ""]
    targets.append(("answering a SYN <= %.0f x dropping it: case 1 cycles/packet, e / e-drop" %
                    TARGET_ANSWER_OVER_DROP, ratio(r), met(r, TARGET_ANSWER_OVER_DROP, False)))
    return out


def syn_bench(rows, h, targets):
    by, with_options = {}, {}
    for b in rows:
        regime = int(re.search(r"regime:(\d+)", b["name"]).group(1))
        options = re.search(r"options:(\d+)", b["name"])
        (with_options if options and options.group(1) == "1" else by)[regime] = b
    out = [h + " Per-packet cost of a SYN flood (`perf/bench_decision` BM_SynFlood, bursts of 32)",
           "", "1,048,576 sources, each once per pass; each frame rewritten from a template "
           "before its burst (the copy regime measures that alone); drop: a drop rule (burst 1, "
           "1/min) with every source pre-warmed; answer: a syn-auth rule, answer caps at 10^9/s "
           "burst 2^20, and build_answer on every answered frame. Median of %d repetitions "
           "(lowest-highest)." % max(len(b["ns"]) for b in rows), "",
           "| regime | ns/packet | answered | refused |", "|---|---|---|---|"]
    for k in sorted(by):
        b = by[k]
        out.append("| %s | %.1f (%.1f-%.1f) | %s | %s |" % (
            SYN_REGIMES.get(k, k), b["median_ns"], min(b["ns"]), max(b["ns"]),
            "%.4f" % b["answered"] if "answered" in b else "-",
            "%.4f" % b["refused"] if "refused" in b else "-"))
    out.append("")
    if 1 in by and 2 in by:
        copy = by[0]["median_ns"] if 0 in by else 0.0
        raw = by[2]["median_ns"] / by[1]["median_ns"]
        net = (by[2]["median_ns"] - copy) / (by[1]["median_ns"] - copy)
        # Per repetition, paired in order, for the ratio's own spread.
        pairs = [a / d for a, d in zip(by[2]["ns"], by[1]["ns"])]
        out += ["answered / dropped: %.2f (the k-th repetitions of each, paired: %.2f-%.2f); net of the "
                "frame copy (%.1f ns): %.2f; an answer costs %.1f ns more than a drop." % (
                    raw, min(pairs), max(pairs), copy, net,
                    by[2]["median_ns"] - by[1]["median_ns"]), ""]
        targets.append(("answering a SYN <= %.0f x dropping it: bench_decision ns/packet, net "
                        "of the frame copy" % TARGET_ANSWER_OVER_DROP, ratio(net),
                        met(net, TARGET_ANSWER_OVER_DROP, False)))
    if with_options:
        out += ["The same SYNs with Linux's 20 bytes of options (74-byte frames):", "",
                "| regime | ns/packet | answered |", "|---|---|---|"]
        for k in sorted(with_options):
            b = with_options[k]
            out.append("| %s | %.1f (%.1f-%.1f) | %s |" % (
                SYN_REGIMES.get(k, k), b["median_ns"], min(b["ns"]), max(b["ns"]),
                "%.4f" % b["answered"] if "answered" in b else "-"))
        out.append("")
    for name, table in (("bare SYNs", by), ("SYNs with options", with_options)):
        if 2 in table and 3 in table:
            r = table[3]["median_ns"] / table[2]["median_ns"]
            targets.append(("a SYN answered by syn-proxy <= syn-auth's answer (%s): "
                            "bench_decision ns/packet" % name, ratio(r), met(r, 1.0, False)))
    return out


def time_shares(rows):
    """Per mix, a packet's time in floodgate split three ways (issue 46): the I/O (testpmd io's
    time a packet), floodgate's own path before the decision (no rules less testpmd) and the
    decision (the perf rules less no rules), each a share of floodgate's time."""
    out = []
    for row in rows:
        io, bare, full = (row.get(k + "_median_pps") for k in
                          ("testpmd_io", "floodgate_no_rules", "floodgate"))
        if not (io and bare and full):
            continue
        t_io, t_bare, t_full = 1e9 / io, 1e9 / bare, 1e9 / full
        if not out:
            out = ["A packet's time in floodgate (ns, and its share): the I/O (testpmd io's time), "
                   "floodgate's path before the decision (no rules less testpmd io), the "
                   "decision (the mix's rules less no rules).", "",
                   "| mix | floodgate ns | I/O | before the decision | the decision |",
                   "|---|---|---|---|---|"]
        out.append("| %s | %.1f | %.1f (%.0f%%) | %.1f (%.0f%%) | %.1f (%.0f%%) |" % (
            row["mix"], t_full, t_io, 100 * t_io / t_full, t_bare - t_io,
            100 * (t_bare - t_io) / t_full, t_full - t_bare, 100 * (t_full - t_bare) / t_full))
    return out + [""] if out else []


def render(r, h, targets_title):
    out = []
    targets = []
    cases = r["cases"]

    if "1" in cases:
        out += [h + " Case 1: in-process I/O (net_pcap infinite_rx to net_null, one worker)", "",
                "| mix | testpmd io Mpps | floodgate, no rules, Mpps | no rules / testpmd | "
                "floodgate Mpps | floodgate / testpmd | cycles/packet in floodgate |",
                "|---|---|---|---|---|---|---|"]
        if "held_out_seed" in r:
            out[-2:-2] = ["The held-out mix was drawn with seed %d (`floodgate-gen mix-held-out "
                          "--seed %d`)." % (r["held_out_seed"], r["held_out_seed"]), ""]
        for row in cases["1"]:
            cyc = [c for c in row.get("floodgate_cycles_per_packet", []) if c]
            out.append("| %s | %s%s | %s%s | %s | %s%s | %s | %s |" % (
                MIX_NAMES[row["mix"]], mpps(row["testpmd_io_median_pps"]),
                spread(row["testpmd_io"]), mpps(row.get("floodgate_no_rules_median_pps")),
                spread(row.get("floodgate_no_rules", [])),
                ratio(row.get("no_rules_ratio_vs_testpmd_io")), mpps(row["floodgate_median_pps"]),
                spread(row["floodgate"]), ratio(row["ratio_vs_testpmd_io"]),
                "%.0f" % (sorted(cyc)[len(cyc) // 2]) if cyc else "-"))
            if row.get("no_rules_ratio_vs_testpmd_io") is not None:
                targets.append(("case 1, mix %s: floodgate with no rules >= %.1f x testpmd io "
                                "(issue 46)" % (row["mix"], TARGET_NO_RULES),
                                ratio(row["no_rules_ratio_vs_testpmd_io"]),
                                met(row["no_rules_ratio_vs_testpmd_io"], TARGET_NO_RULES)))
            if row["mix"] in TARGETS_CASE1:
                t = TARGETS_CASE1[row["mix"]]
                targets.append(("case 1, mix %s: floodgate >= %.1f x testpmd io" % (row["mix"], t),
                                ratio(row["ratio_vs_testpmd_io"]),
                                met(row["ratio_vs_testpmd_io"], t)))
            if row["mix"] in ("a", "b", "c", "d", "held-out", "e"):
                t = TARGET_CASE1_ROUND_TWO
                targets.append(("case 1, mix %s: floodgate >= %.1f x testpmd io (issues 15, 28)" %
                                (row["mix"], t), ratio(row["ratio_vs_testpmd_io"]),
                                met(row["ratio_vs_testpmd_io"], t)))
            if row["mix"] == "e":
                targets.append(("case 1, mix e: floodgate >= %.1f x testpmd io (issue 46)" %
                                TARGET_CASE1_MIX_E, ratio(row["ratio_vs_testpmd_io"]),
                                met(row["ratio_vs_testpmd_io"], TARGET_CASE1_MIX_E)))
        out.append("")
        out += time_shares(cases["1"])
        # A payload rule's cost: floodgate on mix X under perf-payload.yaml beside mix X.
        by_mix = {row["mix"]: row for row in cases["1"]}
        for m in ("a", "b"):
            if m in by_mix and m + "-payload" in by_mix:
                a, z = by_mix[m + "-payload"]["floodgate_median_pps"], by_mix[m]["floodgate_median_pps"]
                v = a / z if a and z else None
                targets.append(("case 1, mix %s: floodgate with a payload rule >= %.1f x without"
                                % (m, TARGET_PAYLOAD), ratio(v), met(v, TARGET_PAYLOAD)))
        for m in ("f",):
            if m in by_mix and m + "-proxy" in by_mix:
                a, z = by_mix[m + "-proxy"]["floodgate_median_pps"], by_mix[m]["floodgate_median_pps"]
                v = a / z if a and z else None
                targets.append(("case 1, mix %s: floodgate beside a syn-proxy rule >= %.1f x "
                                "without (issue 29)" % (m, TARGET_SYN_PROXY), ratio(v),
                                met(v, TARGET_SYN_PROXY)))
        out += answer_cost(cases["1"], h, targets)

    if "2" in cases:
        out += [h + " Case 2: two processes over shared memory (floodgate-tx into net_memif)", "",
                "| mix | generator Mpps | testpmd rxonly Mpps | testpmd io Mpps | floodgate Mpps | "
                "floodgate / testpmd io |", "|---|---|---|---|---|---|"]
        for row in cases["2"]:
            gen = [g for g in row["generator"] if g]
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                MIX_NAMES[row["mix"]], mpps(sorted(gen)[len(gen) // 2] if gen else None),
                mpps(row["testpmd_rxonly_median_pps"]), mpps(row["testpmd_io_median_pps"]),
                mpps(row["floodgate_median_pps"]), ratio(row["ratio_vs_testpmd_io"])))
        out += ["", "Pktgen-DPDK is not installed on this machine, so its column is absent; "
                "`perf/pktgen/` has the scripts.", ""]

    if "3" in cases:
        out += [h + " Case 3: the kernel (veth between namespaces, floodgate-tx on net_af_packet)",
                "", "| mix | floodgate PMD | generator Mpps | nftables Mpps | floodgate Mpps | "
                "floodgate / nftables | with the XDP tier Mpps | XDP tier / nftables | dropped in "
                "the driver | XDP program ns/frame |", "|---|---|---|---|---|---|---|---|---|---|"]
        for row in cases["3"]:
            gen = [g for g in row["generator"] if g]
            esc = [e for e in row.get("xdp_escalated", []) if e is not None]
            cost = [c for c in row.get("xdp_ns_per_frame", []) if c is not None]
            med = lambda v: sorted(v)[len(v) // 2] if v else None  # noqa: E731
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                MIX_NAMES[row["mix"]], row["pmd"], mpps(med(gen)),
                mpps(row["nftables_median_pps"]), mpps(row["floodgate_median_pps"]),
                ratio(row["ratio_vs_nftables"]), mpps(row.get("floodgate_xdp_median_pps")),
                ratio(row.get("xdp_ratio_vs_nftables")),
                "%.0f%%" % (100 * med(esc)) if esc else "-",
                "%.0f" % med(cost) if cost else "-"))
            targets.append(("case 3, mix %s: floodgate >= 3 x nftables" % row["mix"],
                            ratio(row["ratio_vs_nftables"]),
                            met(row["ratio_vs_nftables"], TARGET_CASE3)))
            if "floodgate_xdp" in row and row["mix"] in ("a", "d"):
                targets.append((
                    "case 3, mix %s: floodgate with the XDP tier >= 3 x nftables" % row["mix"],
                    ratio(row.get("xdp_ratio_vs_nftables")),
                    met(row.get("xdp_ratio_vs_nftables"), TARGET_CASE3)))
        out.append("")

    if r.get("xdp"):
        out += [h + " The XDP program per frame (`perf/bench_xdp`, BPF_PROG_TEST_RUN)", "",
                "ns per frame as the kernel times a test run (its own per-run overhead "
                "included: the baseline is a program that only returns XDP_PASS).", "",
                "| regime | ns/frame | minus the baseline |", "|---|---|---|"]
        base = next((b["ns_per_frame"] for b in r["xdp"] if b["name"].startswith("BM_XdpBaseline")),
                    None)
        for b in r["xdp"]:
            name = b["name"].replace("BM_XdpProgram/", "").replace("/manual_time", "")
            out.append("| %s | %.1f | %s |" % (name, b["ns_per_frame"],
                                              "%.1f" % (b["ns_per_frame"] - base) if base and
                                              not name.startswith("BM_XdpBaseline") else "-"))
        out.append("")

    if r.get("payload"):
        out += [h + " A payload rule per packet (`perf/bench_payload`, bursts of 32)", "",
                "Frames whose payloads hold no pattern (every scan reads its whole window), "
                "beside the same rule without a payload match and a memmem loop over the same "
                "literals.", "", "| regime | ns/packet |", "|---|---|"]
        for b in r["payload"]:
            out.append("| %s | %.1f |" % (b["name"].replace("BM_", ""), b["ns_per_packet"]))
        out.append("")

    micro = r.get("micro", {})
    if "bench_decision" in micro:
        out += [h + " Per-packet decision (`perf/bench_decision`, bursts of 32)", "",
                "| live keys | every packet admitted, ns/packet | every packet refused, "
                "ns/packet | table MiB |", "|---|---|---|---|"]
        by_keys = {}
        for b in micro["bench_decision"]:
            if not b["name"].startswith("BM_Decide/"):
                continue  # BM_DecideWithSourceList, BM_SynFlood: not in this table
            keys = int(re.search(r"keys:(\d+)", b["name"]).group(1))
            refuse = "refuse:1" in b["name"]
            by_keys.setdefault(keys, {})[refuse] = b
        for keys in sorted(by_keys):
            d = by_keys[keys]
            out.append("| %s | %.1f | %.1f | %.1f |" % (
                "{:,}".format(keys), d[False]["ns"], d[True]["ns"],
                d[False].get("table_MiB", 0)))
            if keys == 1 << 24:
                worst = max(d[False]["ns"], d[True]["ns"])
                targets.append(("decision <= 50 ns/packet at 16M keys (worse of admit/refuse)",
                                "%.1f ns" % worst, met(worst, TARGET_DECISION_NS_16M, False)))
                for refuse, what in ((False, "admitted"), (True, "refused")):
                    t = TARGET_DECISION_NS_16M_ROUND_FOUR[refuse]
                    targets.append(("decision <= %.0f ns/packet at 16M keys, every packet %s "
                                    "(issue 46)" % (t, what), "%.1f ns" % d[refuse]["ns"],
                                    met(d[refuse]["ns"], t, False)))
        out.append("")
    if "bench_syn_flood" in micro:
        out += syn_bench(micro["bench_syn_flood"], h, targets)
    if "bench_table" in micro:
        out += [h + " The table against rte_hash + rte_meter (`perf/bench_table`, bursts of 32)",
                "", "| keys | floodgate ns/burst | floodgate bytes/key | rte_hash + rte_meter "
                "ns/burst | rte_hash + rte_meter bytes/key | rte_hash / floodgate |",
                "|---|---|---|---|---|---|"]
        rows = {}
        for b in micro["bench_table"]:
            keys = int(re.search(r"/(\d+)", b["name"]).group(1))
            side = "fg" if b["name"].startswith("BM_Floodgate") else "rte"
            rows.setdefault(keys, {})[side] = b
        for keys in sorted(rows):
            fg, rte = rows[keys].get("fg"), rows[keys].get("rte")
            if not fg or not rte:
                continue
            out.append("| %s | %.0f | %.1f | %.0f | %.1f | %.2f |" % (
                "{:,}".format(keys), fg["ns"], fg.get("bytes_per_key", 0), rte["ns"],
                rte.get("bytes_per_key", 0), rte["ns"] / fg["ns"]))
            targets.append(("table not slower than rte_hash + rte_meter, %s keys" %
                            "{:,}".format(keys), "%.2f x faster" % (rte["ns"] / fg["ns"]),
                            met(rte["ns"] / fg["ns"], 1.0)))
            if keys == max(rows):
                bpk = fg.get("bytes_per_key")
                targets.append(("table <= 32 bytes per key", "%.1f" % bpk if bpk else "-",
                                met(bpk, TARGET_BYTES_PER_KEY, False)))
        out.append("")

    if r.get("scaling"):
        out += scaling(r, h, targets)

    if targets:
        out += [h + " " + targets_title, "", "| target | measured | |", "|---|---|---|"]
        out += ["| %s | %s | %s |" % t for t in targets]
        out.append("")
    if r.get("errors"):
        out += [h + " Runs that failed (their figures are left out above)", ""]
        out += ["- %s: `%s`" % (e["run"], (e["error"].strip().splitlines() or [""])[-1])
                for e in r["errors"]]
        out.append("")
    if r.get("failures"):
        out += [h + " Cases that failed to run", ""]
        out += ["- case %s: `%s`" % (f["case"], f["error"].splitlines()[-1] if f["error"] else "")
                for f in r["failures"]]
        out.append("")
    return out
