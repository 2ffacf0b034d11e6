#!/usr/bin/python3
"""floodgate's performance harness: every case, side by side with its baseline, as ratios.

    perf/harness.py BUILD_DIR [--seconds S] [--reps N]
                    [--cases 1,2,3,micro,syn,xdp,payload,scaling,cores]
                    [--mixes a,b,c,d,e,e-drop] [--quick]

Writes perf/results/<date>.json; perf/report.py turns it into perf/RESULTS.md. As root.

Mixes (floodgate-gen, 64-byte frames): a one source; b 1,048,576 random sources (b15: the
131,072 of 198.18.0.0/15, for the case that sends on a veth); c IPv6 sources over 65,536 /64s;
d 90% flood from 1,000 sources and 10% legitimate traffic under its limits; e a SYN flood from
1,048,576 random sources, every SYN answered with a SYN-ACK cookie (perf/perf-syn-auth.yaml,
answer caps out of the way), and e-drop the same SYNs, every one refused and dropped
(perf/perf-syn-drop.yaml): case 1 only, the two side by side give the cost of an answer;
a-payload and b-payload are mixes a and b under perf/perf-payload.yaml (the same limit with a
payload pattern every frame holds), case 1 only: beside a and b, the cost of the scan;
f ACKs of 65,536 established TCP connections to port 80 and f-proxy the same under
perf/perf-syn-proxy.yaml (a syn-proxy rule on port 80), case 1 only: what syn-proxy costs the
connections it does not proxy.

Cases, each peer run in turn (baseline first on even repetitions, floodgate first on odd):
  1  in-process I/O: dpdk-testpmd --forward-mode=io and floodgate run (one worker), both
     reading the mix from net_pcap (infinite_rx) and sending to net_null, same EAL options,
     same mbuf pool (count and size). Mixes e and e-drop: net_pcap without tx_pcap, whose TX
     counts and frees what it is given as net_null does (floodgate's answers leave by the
     outside port, the pcap one: written to a file, their cost would be libpcap's).
  2  two processes over shared memory: floodgate-tx writes the mix into net_memif; testpmd
     rxonly, testpmd io (to net_null) or floodgate receive it.
  3  the kernel: floodgate-tx sends the mix over a veth pair between two namespaces
     (198.18.0.0/15 and 2001:db8::/32 only); nftables (a dynamic set with `limit rate over`,
     per source) or floodgate on net_af_xdp (net_af_packet where AF_XDP is refused) judges it;
     with AF_XDP also floodgate with its XDP tier (xdp_prog, perf/perf-xdp.yaml: escalation
     after 1 s), measured once escalation has happened as the frames its XDP program judged a
     second, with the program's own cost per frame (kernel.bpf_stats_enabled).
  micro: perf/bench_decision (per-packet decision at 1K, 1M and 16M live keys) and
     perf/bench_table (the table against rte_hash + rte_meter).
  payload: perf/bench_payload, a payload rule's cost per packet (1, 100, 1,000 literals, 10
     regexes; 64- and 1,500-byte frames) beside the rule without one and a memmem loop.
  xdp: perf/bench_xdp, the XDP program's cost per frame in the kernel's BPF_PROG_TEST_RUN,
     beside a program that only returns XDP_PASS.
  scaling: how the cost grows (issue 15): perf/bench_scaling (live keys 1K-16M, 1-16 matching
     rules and 256 rules of which one matches, 0-1M allow/block prefixes in IPv4 and IPv6, the
     cross-core merge per key and per interval), and case 1's mix b with one worker beside two
     (two RX queues on the pcap port, lcores 0@0,1@0,2@1: the second worker shares CPU 0 with
     the main lcore, which forwards the merge): mix b split in two by source (as RSS would),
     and mix b whole on both queues (every key on both cores).
  cores: what one more core costs (issue 25): floodgate replay --workers N for N = 1, 2, 4, 8,
     16, 64 on mix b, mix a repeated to 1,048,576 frames, and mix b under an aggregate rule
     (perf/cores/aggregate.yaml); --spread steering (each source on its owner core) beside rr
     (every key shared, the way before), alternating: CPU time (user + sys) per packet, peak
     RSS and key copies (table occupancy + reclaims); also each run's start-up (the same
     replay over the mix's first frame). No hugepages: replay runs without them.
  syn: perf/bench_decision's BM_SynFlood alone (1,048,576 sources: frame copy only, every SYN
     dropped, every SYN answered), --bench-reps repetitions interleaved at random, every
     repetition kept.
Rates are medians of one-second samples after a warm-up; each peer's figure is the median of
its repetitions (the cores case: each replay's whole run, the median of the repetitions).
"""
import argparse
import datetime
import os
import subprocess
import sys

from harness_benchmarks import Benchmarks
from harness_cores import Cores
from harness_dpdk_cases import DpdkCases
from harness_kernel_case import KernelCase
from harness_peers import MBUF_SIZE, ROOT
from harness_processes import log
from harness_results import machine, write_results


class Harness(DpdkCases, KernelCase, Benchmarks, Cores):
    """Every case on one build: run by name, each adding its figures to self.results."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=5, help="samples per run (after 2 warm-up)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", default="1,2,3,micro,xdp,payload,scaling,cores",
                    help="of 1,2,3,micro,syn,xdp,payload,scaling,cores")
    ap.add_argument("--mixes",
                    default="a,b,c,d,held-out,e,e-drop,a-payload,b-payload,f,f-proxy",
                    help="e, e-drop, the payload mixes and held-out are case 1's only (cases 2 "
                    "and 3 skip them)")
    ap.add_argument("--bench-reps", type=int, default=10, help="repetitions of the syn case")
    ap.add_argument("--quick", action="store_true", help="1 repetition, 2 samples")
    ap.add_argument("--out", default=os.path.join(ROOT, "perf/results"))
    args = ap.parse_args()
    if args.quick:
        args.reps, args.seconds = 1, 2
    args.mixes = args.mixes.split(",")
    h = Harness(args)
    h.results["machine"] = machine()
    h.results["command"] = " ".join(["perf/harness.py"] + sys.argv[1:])
    h.results["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    h.results["settings"] = {"seconds": args.seconds, "repetitions": args.reps,
                             "mbuf_size": MBUF_SIZE, "config": "perf/perf.yaml"}
    failures = []
    for case in args.cases.split(","):
        try:
            {"1": h.case1, "2": h.case2, "3": h.case3, "micro": h.micro, "syn": h.syn,
             "xdp": h.xdp, "payload": h.payload, "scaling": h.scaling, "cores": h.cores}[case]()
        except Exception as e:  # one case failing still leaves the others' figures
            log("case %s failed: %s" % (case, e))
            failures.append({"case": case, "error": str(e)[-3000:]})
    h.results["failures"] = failures
    path = write_results(h.results, args.out)
    subprocess.run(["umount", os.path.join(h.work, "bpffs")], stderr=subprocess.DEVNULL)
    subprocess.run(["rm", "-rf", h.work])
    print(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
