#!/usr/bin/python3
"""floodgate's performance harness: every case, side by side with its baseline, as ratios.

    perf/harness.py BUILD_DIR [--seconds S] [--reps N] [--cases 1,2,3,micro,syn,xdp,scaling]
                    [--mixes a,b,c,d,e,e-drop] [--quick]

Writes perf/results/<date>.json; perf/report.py turns it into perf/RESULTS.md. As root.

Mixes (floodgate-gen, 64-byte frames): a one source; b 1,048,576 random sources (b15: the
131,072 of 198.18.0.0/15, for the case that sends on a veth); c IPv6 sources over 65,536 /64s;
d 90% flood from 1,000 sources and 10% legitimate traffic under its limits; e a SYN flood from
1,048,576 random sources, every SYN answered with a SYN-ACK cookie (perf/perf-syn-auth.yaml,
answer caps out of the way), and e-drop the same SYNs, every one refused and dropped
(perf/perf-syn-drop.yaml): case 1 only, the two side by side give the cost of an answer;
a-payload and b-payload are mixes a and b under perf/perf-payload.yaml (the same limit with a
payload pattern every frame holds), case 1 only: beside a and b, the cost of the scan.

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
  syn: perf/bench_decision's BM_SynFlood alone (1,048,576 sources: frame copy only, every SYN
     dropped, every SYN answered), --bench-reps repetitions interleaved at random, every
     repetition kept.
Rates are medians of one-second samples after a warm-up; each peer's figure is the median of
its repetitions.
"""
import argparse
import datetime
import json
import os
import platform
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIX_FILES = {"a": "mix-a", "b": "mix-b", "b15": "mix-b15", "c": "mix-c", "d": "mix-d",
             "e": "mix-e", "e-drop": "mix-e", "a-payload": "mix-a", "b-payload": "mix-b"}
# Rules per mix (default perf/perf.yaml).
MIX_CONFIG = {"e": "perf/perf-syn-auth.yaml", "e-drop": "perf/perf-syn-drop.yaml",
              "a-payload": "perf/perf-payload.yaml", "b-payload": "perf/perf-payload.yaml"}
# 10.0.0.0/8 sources, the answers need case 1's ports, the payload mixes repeat a and b
CASE1_ONLY = {"e", "e-drop", "a-payload", "b-payload"}
MBUF_SIZE = 256  # data room, headroom included: a 64-byte frame fits; the same for every peer


def log(msg):
    print("harness: " + msg, file=sys.stderr, flush=True)


def eal_memory(mb):
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts/hugepages.sh"), str(mb)],
                         capture_output=True, text=True, check=True).stdout.split()
    return out


class Lines:
    """A process's output, line by line, with a timeout (select on the raw pipe: a buffered
    reader would hold lines select cannot see)."""

    def __init__(self, p):
        self.fd, self.buf, self.eof = p.stdout.fileno(), b"", False

    def next(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf and not self.eof:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            self.eof = not chunk
            self.buf += chunk
        if b"\n" not in self.buf:
            line, self.buf = self.buf, b""
            return line.decode(errors="replace") if line else None
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace") + "\n"


class Sampler:
    """Runs a process and turns its per-second output lines into rate samples."""

    def __init__(self, cmd, parse, cwd=None):
        self.cmd, self.parse, self.cwd = cmd, parse, cwd
        self.lines = []

    def run(self, warmup, samples, timeout):
        p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             cwd=self.cwd, start_new_session=True)
        values, state, out = [], {}, Lines(p)
        end = time.monotonic() + timeout
        try:
            while len(values) < warmup + samples and time.monotonic() < end:
                line = out.next(1.0)
                if line is None:
                    if out.eof or p.poll() is not None:
                        break
                    continue
                self.lines.append(line)
                v = self.parse(line, state)
                if v is not None:
                    values.append(v)
        finally:
            stop(p)
            rest = p.stdout.read() if p.stdout else b""
            self.lines += rest.decode(errors="replace").splitlines(True)
        if len(values) < warmup + samples:
            raise RuntimeError("%s: %d samples of %d; last output:\n%s" % (
                os.path.basename(self.cmd[0]), len(values), warmup + samples,
                "".join(self.lines[-15:])))
        return values[warmup:]


def stop(p, grace=20):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def testpmd_parser(port):
    """testpmd --stats-period 1 prints each port's block in port order; Rx-pps of `port`."""
    def parse(line, state):
        if "NIC statistics for port" in line:
            state["port"] = int(re.search(r"port (\d+)", line).group(1))
        m = re.search(r"Rx-pps:\s+(\d+)", line)
        if m and state.get("port") == port:
            return float(m.group(1))
        return None
    return parse


def floodgate_parser(line, state):
    """floodgate run --stats-interval 1: "[time] over T s: outside rx N pps; ..." lines, each
    the rate over its interval on the dataplane's clock."""
    m = re.search(r"\] over [\d.]+ s: outside rx (\d+) pps", line)
    return float(m.group(1)) if m else None


class Generator:
    """floodgate-tx in the background, as a context: started and waited for until its port
    is up on entry; on exit stopped, and its median rate (None if it sent nothing) appended
    to `rates`. A generator that sent nothing fails the run."""

    def __init__(self, cmd, rates):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        self.out, self.text, self.rates = Lines(self.p), "", rates

    def __enter__(self):
        self.wait_ready()
        return self

    def __exit__(self, *exc):
        sent = None
        try:
            sent = self.finish()
        finally:
            self.rates.append(sent)
        return False

    def wait_ready(self, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self.out.eof:
            line = self.out.next(1.0)
            if line:
                self.text += line
                if line.startswith("floodgate-tx: ready"):
                    return
        raise RuntimeError("floodgate-tx did not start:\n" + self.text[-2000:])

    def finish(self):
        """Stops it; returns its median sending rate (raises if it sent nothing)."""
        stop(self.p)
        while not self.out.eof:
            line = self.out.next(5.0)
            if line is None:
                break
            self.text += line
        sent = [v for v in (tx_parser(l, {}) for l in self.text.splitlines()) if v]
        if not sent:
            raise RuntimeError("floodgate-tx sent nothing:\n" + self.text[-2000:])
        return statistics.median(sent)


def tx_parser(line, state):
    m = re.match(r"tx (\d+) pps", line)
    return float(m.group(1)) if m else None


class Harness:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.bin = {
            "floodgate": os.path.join(self.build, "dataplane/floodgate"),
            "gen": os.path.join(self.build, "perf/floodgate-gen"),
            "tx": os.path.join(self.build, "perf/floodgate-tx"),
            "bench_decision": os.path.join(self.build, "perf/bench_decision"),
            "bench_table": os.path.join(self.build, "perf/bench_table"),
            "bench_xdp": os.path.join(self.build, "perf/bench_xdp"),
            "bench_payload": os.path.join(self.build, "perf/bench_payload"),
            "bench_scaling": os.path.join(self.build, "perf/bench_scaling"),
        }
        self.work = tempfile.mkdtemp(prefix="floodgate-perf-")
        self.config = os.path.join(ROOT, "perf/perf.yaml")
        self.cpu_worker = 1 if os.cpu_count() > 1 else 0
        self.results = {"cases": {}}

    def mix(self, name):
        path = os.path.join(self.work, MIX_FILES[name] + ".pcap")
        if not os.path.exists(path):
            subprocess.run([self.bin["gen"], MIX_FILES[name], "--out", path], check=True,
                           stdout=subprocess.DEVNULL)
        return path

    @staticmethod
    def frames(path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            f.read(24)
            n = 0
            while True:
                h = f.read(16)
                if len(h) < 16:
                    return n
                f.seek(int.from_bytes(h[8:12], "little"), 1)
                n += 1
        return size

    def mbufs(self, path):
        # net_pcap keeps the whole capture in mbufs (infinite_rx); room for the rings on top.
        return self.frames(path) + 32768

    def eal(self, prefix, lcores, mb):
        return ["--lcores", lcores, "--no-pci", "--file-prefix", prefix, "--log-level", "error"] + \
            eal_memory(mb)

    def lcores(self):
        return "0@0,1@%d" % self.cpu_worker

    # --- peers -------------------------------------------------------------------------
    def testpmd(self, ports_vdevs, mode, mbufs, prefix, rx_port=0, netns=None):
        cmd = ["dpdk-testpmd"] + self.eal(prefix, self.lcores(), 2048) + ports_vdevs + [
            "--", "--forward-mode=" + mode, "--total-num-mbufs=%d" % mbufs,
            "--mbuf-size=%d" % MBUF_SIZE, "--rxd=1024", "--txd=1024", "--burst=32",
            "--stats-period", "1", "--rxq=1", "--txq=1"]
        return Sampler(self.netns(netns) + cmd, testpmd_parser(rx_port))

    def floodgate(self, ports_vdevs, mbufs, prefix, stats, netns=None, mbuf_size=MBUF_SIZE,
                  config=None, lcores=None):
        cmd = [self.bin["floodgate"], "run"] + self.eal(prefix, lcores or self.lcores(), 2048) + \
            ports_vdevs + ["--", "--config", config or self.config, "--control", "none",
                           "--stats-interval", "1", "--stats", stats, "--mbufs", str(mbufs),
                           "--mbuf-size", str(mbuf_size)]
        return Sampler(self.netns(netns) + cmd, floodgate_parser)

    @staticmethod
    def netns(ns):
        return ["ip", "netns", "exec", ns] if ns else []

    def measure(self, sampler):
        a = self.args
        values = sampler.run(warmup=2, samples=a.seconds, timeout=a.seconds + 120)
        return statistics.median(values)

    @staticmethod
    def read_stats(stats):
        """floodgate's --stats JSON (written as it stops), or {} without one."""
        try:
            with open(stats) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def cycles_per_packet(self, stats):
        return self.read_stats(stats).get("cycles", {}).get("per_packet")

    def answer_counts(self, stats):
        """The whole run's packets, refusals and answers (warm-up included), and the frames
        the outside port sent: every answer is one."""
        s = self.read_stats(stats)
        if "packets" not in s:
            return None
        nic = [n for n in s.get("nic", []) if n.get("role") == "outside"]
        return {"packets": s["packets"], "rate_limited": s["rate_limited"],
                "answered": s["answered"], "answer_capped": s["answer_capped"],
                "outside_tx": nic[0].get("tx_packets") if nic else None}

    # --- case 1 ------------------------------------------------------------------------
    def case1(self):
        out = []
        for mix in self.args.mixes:
            path = self.mix(mix)
            # Without tx_pcap net_pcap's TX frees and counts (where the answers go).
            tx = "" if mix in CASE1_ONLY else ",tx_pcap=/dev/null"
            vdevs = ["--vdev", "net_pcap0,rx_pcap=%s,infinite_rx=1%s" % (path, tx),
                     "--vdev", "net_null0,no-rx=1"]
            config = os.path.join(ROOT, MIX_CONFIG.get(mix, "perf/perf.yaml"))
            row = {"mix": mix, "frames": self.frames(path), "config": os.path.relpath(config, ROOT),
                   "testpmd_io": [], "floodgate": [], "floodgate_cycles_per_packet": [],
                   "floodgate_counts": []}
            for rep in range(self.args.reps):
                order = ["testpmd_io", "floodgate"] if rep % 2 == 0 else ["floodgate",
                                                                          "testpmd_io"]
                for peer in order:
                    what = "case 1, mix %s, repetition %d: %s" % (mix, rep + 1, peer)
                    log(what)
                    if peer == "testpmd_io":
                        row[peer].append(self.guarded(what, lambda: self.measure(self.testpmd(
                            vdevs, "io", self.mbufs(path), "fgp-tp"))))
                    else:
                        stats = os.path.join(self.work, "stats.json")
                        if os.path.exists(stats):
                            os.unlink(stats)  # the last run's
                        row[peer].append(self.guarded(what, lambda: self.measure(
                            self.floodgate(vdevs, self.mbufs(path), "fgp-fg", stats,
                                           config=config))))
                        row["floodgate_cycles_per_packet"].append(self.cycles_per_packet(stats))
                        row["floodgate_counts"].append(self.answer_counts(stats))
            out.append(summarise(row, "floodgate", ["testpmd_io"]))
        self.results["cases"]["1"] = out

    # --- case 2 ------------------------------------------------------------------------
    def case2(self):
        out = []
        sock = os.path.join(self.work, "memif.sock")
        for mix in [m for m in self.args.mixes if m not in CASE1_ONLY]:
            path = self.mix(mix)
            memif = "net_memif0,role=client,socket=%s,socket-abstract=no" % sock
            row = {"mix": mix, "frames": self.frames(path), "testpmd_rxonly": [],
                   "testpmd_io": [], "floodgate": [], "generator": []}
            peers = ["testpmd_rxonly", "testpmd_io", "floodgate"]
            for rep in range(self.args.reps):
                for peer in (peers if rep % 2 == 0 else peers[::-1]):
                    what = "case 2, mix %s, repetition %d: %s" % (mix, rep + 1, peer)
                    log(what)
                    row[peer].append(self.guarded(
                        what, lambda: self.memif_run(peer, path, sock, memif, row)))
            out.append(summarise(row, "floodgate", ["testpmd_io", "testpmd_rxonly"]))
        self.results["cases"]["2"] = out

    def memif_run(self, peer, path, sock, memif, row):
        if os.path.exists(sock):
            os.unlink(sock)  # left by the last generator
        with Generator(self.generator_cmd(
                "net_memif0,role=server,socket=%s,socket-abstract=no" % sock, path),
                row["generator"]):
            if peer == "testpmd_rxonly":
                s = self.testpmd(["--vdev", memif], "rxonly", 65536, "fgp-tp")
            elif peer == "testpmd_io":
                s = self.testpmd(["--vdev", memif, "--vdev", "net_null0,no-rx=1"], "io", 65536,
                                 "fgp-tp")
            else:
                s = self.floodgate(["--vdev", memif, "--vdev", "net_null0,no-rx=1"], 65536,
                                   "fgp-fg", os.path.join(self.work, "stats.json"))
            return self.measure(s)

    def generator_cmd(self, vdev, path, netns=None):
        """floodgate-tx on CPU 0 sending `path` on vdev, for longer than any run lasts (the
        measurement stops it)."""
        return self.netns(netns) + [
            self.bin["tx"], "--lcores", "0@0", "--no-pci", "--file-prefix", "fgp-gen",
            "--log-level", "error"] + eal_memory(2048) + [
            "--vdev", vdev, "--", "--pcap", path, "--seconds", str(self.args.seconds + 60)]

    def guarded(self, what, fn):
        """One measurement; a failure is recorded (and reported) instead of ending the run."""
        try:
            return fn()
        except Exception as e:
            log("%s failed: %s" % (what, e))
            self.results.setdefault("errors", []).append({"run": what, "error": str(e)[-3000:]})
            return None

    # --- case 3 ------------------------------------------------------------------------
    def case3(self):
        out = []
        tag = "fgp%d" % os.getpid()
        gen_ns, flt_ns = tag + "-gen", tag + "-flt"
        try:
            self.veth(tag, gen_ns, flt_ns)
            pmd = "af_xdp" if self.af_xdp_works(tag, flt_ns) else "af_packet"
            for mix in [m if m != "b" else "b15" for m in self.args.mixes
                        if m not in CASE1_ONLY]:
                path = self.mix(mix)
                row = {"mix": mix, "frames": self.frames(path), "pmd": pmd, "nftables": [],
                       "floodgate": [], "floodgate_xdp": [], "xdp_ns_per_frame": [],
                       "xdp_escalated": [], "generator": []}
                peers = ["nftables", "floodgate"] + (["floodgate_xdp"] if pmd == "af_xdp" else [])
                for rep in range(self.args.reps):
                    order = peers if rep % 2 == 0 else peers[::-1]
                    for peer in order:
                        what = "case 3, mix %s, repetition %d: %s" % (mix, rep + 1, peer)
                        log(what)
                        row[peer].append(self.guarded(what, lambda: self.kernel_run(
                            peer, tag, gen_ns, flt_ns, pmd, path, row)))
                summarise(row, "floodgate_xdp", ["nftables"], key="xdp_ratio_vs_")
                out.append(summarise(row, "floodgate", ["nftables"]))
        finally:
            for ns in (gen_ns, flt_ns):
                subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.results["cases"]["3"] = out

    def veth(self, tag, gen_ns, flt_ns):
        sh = lambda *c: subprocess.run(list(c), check=True)  # noqa: E731
        sh("ip", "netns", "add", gen_ns)
        sh("ip", "netns", "add", flt_ns)
        sh("ip", "link", "add", tag + "-g", "type", "veth", "peer", "name", tag + "-f")
        sh("ip", "link", "set", tag + "-g", "netns", gen_ns)
        sh("ip", "link", "set", tag + "-f", "netns", flt_ns)
        for ns, dev in ((gen_ns, tag + "-g"), (flt_ns, tag + "-f")):
            sh("ip", "netns", "exec", ns, "sh", "-c",
               "echo 1 > /proc/sys/net/ipv6/conf/%s/disable_ipv6" % dev)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")

    def af_xdp_works(self, tag, flt_ns):
        """Whether floodgate starts on net_af_xdp on the veth (the kernel may refuse)."""
        p = subprocess.Popen(self.netns(flt_ns) + [
            self.bin["floodgate"], "run"] + self.eal("fgp-probe", self.lcores(), 512) + [
            "--vdev", "net_af_xdp0,iface=%s-f,start_queue=0,queue_count=1" % tag, "--vdev",
            "net_null0,no-rx=1", "--", "--config", self.config, "--control", "none"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        started, out = False, Lines(p)
        end = time.monotonic() + 30
        while time.monotonic() < end and not out.eof:
            line = out.next(1.0)
            if line and line.startswith("floodgate: "):
                started = True
                break
        stop(p)
        log("net_af_xdp on the veth: " + ("works" if started else "refused, using net_af_packet"))
        return started

    def kernel_run(self, peer, tag, gen_ns, flt_ns, pmd, path, row):
        dev = tag + "-f"
        with Generator(self.generator_cmd("net_af_packet0,iface=%s-g" % tag, path, gen_ns),
                       row["generator"]):
            if peer == "nftables":
                return self.nft_rate(flt_ns, dev, "c" in os.path.basename(path))
            if peer == "floodgate_xdp":
                return self.xdp_rate(flt_ns, dev, row)
            vdev = ("net_af_xdp0,iface=%s,start_queue=0,queue_count=1" % dev
                    if pmd == "af_xdp" else "net_af_packet0,iface=%s,qpairs=1" % dev)
            # net_af_packet and net_af_xdp want whole-page frames: 2176-byte mbufs.
            return self.measure(self.floodgate(
                ["--vdev", vdev, "--vdev", "net_null0,no-rx=1"], 65536, "fgp-fg",
                os.path.join(self.work, "stats.json"), netns=flt_ns, mbuf_size=2176))

    def xdp_rate(self, ns, dev, row):
        """floodgate on net_af_xdp with its XDP program (maps in a BPF filesystem of the run's
        own, emptied before each run): frames the program judged a second, sampled like
        nft_rate once the flood's sources are escalated (escalated_hits growing), and the
        program's run time per frame from the kernel's BPF statistics."""
        pin = os.path.join(self.work, "bpffs")
        if not os.path.ismount(pin):
            os.makedirs(pin, exist_ok=True)
            subprocess.run(["mount", "-t", "bpf", "bpf", pin], check=True)
        pin_dir = os.path.join(pin, "floodgate")
        subprocess.run(["rm", "-rf", pin_dir])
        env = dict(os.environ, FLOODGATE_XDP_PIN_DIR=pin_dir)
        obj = os.path.join(self.build, "bpf/floodgate_xdp.bpf.o")
        cmd = self.netns(ns) + [self.bin["floodgate"], "run"] + \
            self.eal("fgp-fg", self.lcores(), 2048) + [
                "--vdev", "net_af_xdp0,iface=%s,start_queue=0,queue_count=1,xdp_prog=%s" % (dev, obj),
                "--vdev", "net_null0,no-rx=1", "--", "--config",
                os.path.join(ROOT, "perf/perf-xdp.yaml"), "--control", "none", "--mbufs", "65536",
                "--mbuf-size", "2176", "--xdp-pin-dir", pin_dir]

        def counters():
            out = subprocess.run([os.path.join(self.build, "control/floodctl"), "-j", "xdp",
                                  "stats"], capture_output=True, text=True, env=env, check=True)
            return json.loads(out.stdout)["counters"]

        subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            out, end = Lines(p), time.monotonic() + 60
            while time.monotonic() < end and not out.eof:
                line = out.next(1.0)
                if line and line.startswith("floodgate: "):
                    break
            else:
                raise RuntimeError("floodgate with the XDP tier did not start")
            # Escalation: the flood's sources go into the map within a few seconds.
            end = time.monotonic() + 30
            while counters()["escalated_hits"] == 0:
                if time.monotonic() > end or out.eof:
                    raise RuntimeError("no source was escalated in 30 s")
                time.sleep(0.5)
            time.sleep(2)  # the rest of the flood's sources follow
            values, prev = [], None
            for _ in range(self.args.seconds + 1):
                c, now = counters(), time.monotonic()
                if prev is not None:
                    values.append((c["packets"] - prev[1]["packets"]) / (now - prev[0]))
                prev = (now, c)
                time.sleep(1)
            row["xdp_escalated"].append(prev[1]["escalated_hits"] / max(prev[1]["packets"], 1))
            progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"],
                                              capture_output=True, text=True).stdout or "[]")
            ours = [q for q in progs if q.get("name") == "floodgate_xdp" and q.get("run_cnt")]
            best = max(ours, key=lambda q: q["run_cnt"]) if ours else None
            row["xdp_ns_per_frame"].append(best["run_time_ns"] / best["run_cnt"] if best else None)
            return statistics.median(values)
        finally:
            stop(p)
            subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=0"])

    def nft_rate(self, ns, dev, ipv6):
        """The same limit as perf/perf.yaml (100/s, burst 50 per source; IPv6 per /64) in a
        netdev ingress chain; the rate is the chain's packet counter over one-second steps."""
        key = "ip6 saddr and ffff:ffff:ffff:ffff::" if ipv6 else "ip saddr"
        keytype = "ipv6_addr" if ipv6 else "ipv4_addr"
        proto = "ip6" if ipv6 else "ip"
        ruleset = """
table netdev floodgate_perf {
  set sources { type %s; size 1048576; flags dynamic,timeout; timeout 10s; }
  chain ingress {
    type filter hook ingress device "%s" priority 0; policy accept;
    counter name seen
    meta protocol %s update @sources { %s limit rate over 100/second burst 50 packets } counter name over drop
  }
  counter seen { }
  counter over { }
}
""" % (keytype, dev, proto, key)
        nft = self.netns(ns) + ["nft"]
        subprocess.run(nft + ["-f", "-"], input=ruleset, text=True, check=True)
        try:
            values, prev = [], None
            for _ in range(self.args.seconds + 3):
                time.sleep(1)
                out = subprocess.run(nft + ["-j", "list", "counter", "netdev", "floodgate_perf",
                                            "seen"], capture_output=True, text=True,
                                     check=True).stdout
                packets = json.loads(out)["nftables"][1]["counter"]["packets"]
                now = time.monotonic()
                if prev is not None:
                    values.append((packets - prev[1]) / (now - prev[0]))
                prev = (now, packets)
            return statistics.median(values[2:])
        finally:
            subprocess.run(nft + ["delete", "table", "netdev", "floodgate_perf"])

    # --- micro -------------------------------------------------------------------------
    def gbench_medians(self, name, cpu=None):
        """A Google Benchmark binary's median aggregates over --reps repetitions; on CPU cpu
        when given (the EAL of a benchmark pins it to the first CPU it may run on, which every
        other EAL benchmark on the machine picks too)."""
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        p = subprocess.run(pin + [self.bin[name], "--benchmark_min_time=1",
                            "--benchmark_repetitions=%d" % self.args.reps,
                            "--benchmark_report_aggregates_only=true",
                            "--benchmark_format=json"], capture_output=True, text=True,
                           timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(name + ": " + p.stderr[-2000:])
        return [b for b in json.loads(p.stdout)["benchmarks"] if b.get("aggregate_name") == "median"]

    def micro(self):
        res = {}
        for name in ("bench_decision", "bench_table"):
            rows = []
            for b in self.gbench_medians(name):
                row = {"name": b["run_name"], "ns": b["real_time"]}
                for k in ("bytes_per_key", "keys_live", "table_MiB"):
                    if k in b:
                        row[k] = b[k]
                rows.append(row)
            res[name] = rows
        # Beside the syn case's bench_syn_flood, which may have run first.
        self.results.setdefault("micro", {}).update(res)

    def medians_in_ns(self, name, counter):
        """The medians of an inverted-rate counter (seconds per item), in ns."""
        return [{"name": b["run_name"], counter: b[counter] * 1e9}
                for b in self.gbench_medians(name)]

    def xdp(self):
        """perf/bench_xdp: the XDP program's cost per frame (BPF_PROG_TEST_RUN), beside a
        program that only returns XDP_PASS."""
        self.results["xdp"] = self.medians_in_ns("bench_xdp", "ns_per_frame")

    def payload(self):
        """perf/bench_payload: a payload rule's cost per packet beside the same rule without one
        and a memmem loop."""
        self.results["payload"] = self.medians_in_ns("bench_payload", "ns_per_packet")

    def syn(self):
        """BM_SynFlood alone, every repetition kept (medians and ranges in the report)."""
        p = subprocess.run([self.bin["bench_decision"], "--benchmark_filter=^BM_SynFlood/",
                            "--benchmark_min_time=1",
                            "--benchmark_repetitions=%d" % self.args.bench_reps,
                            # The regimes' repetitions shuffled together, so that a noisy
                            # spell of the machine falls on all of them alike.
                            "--benchmark_enable_random_interleaving=true",
                            "--benchmark_format=json"], capture_output=True, text=True,
                           timeout=3600)
        if p.returncode != 0:
            raise RuntimeError("bench_decision: " + p.stderr[-2000:])
        rows = {}
        for b in json.loads(p.stdout)["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            row = rows.setdefault(b["run_name"], {"name": b["run_name"], "ns": []})
            row["ns"].append(b["real_time"])
            for k in ("answered", "refused", "answer_bytes", "keys_live"):
                if k in b:
                    row[k] = b[k]
        for row in rows.values():
            row["median_ns"] = statistics.median(row["ns"])
        self.results.setdefault("micro", {})["bench_syn_flood"] = list(rows.values())

    # --- scaling -----------------------------------------------------------------------
    SCALING_COUNTERS = ("keys_live", "table_MiB", "passed", "records", "publish_ns_per_key",
                        "forward_ns_per_key", "apply_ns_per_key", "records_lost", "keys_live_b")

    def scaling(self):
        """perf/bench_scaling's medians, then mix b on one worker and on two."""
        rows = []
        for b in self.gbench_medians("bench_scaling", cpu=self.cpu_worker):
            # cpu_time beside real_time: on a shared machine real time also counts the spells
            # another process held the CPU (BM_Merge's manual time is already CPU time).
            row = {"name": b["run_name"], "time": b["real_time"], "cpu_time": b["cpu_time"],
                   "time_unit": b["time_unit"]}
            row.update({k: b[k] for k in self.SCALING_COUNTERS if k in b})
            rows.append(row)
        self.results["scaling"] = {"bench_scaling": rows, "cpu": self.cpu_worker}
        self.results["scaling"]["workers"] = self.workers()

    def split_by_source(self, path):
        """Mix b's frames in two pcaps by a hash of the IPv4 source (as RSS would spread them)."""
        outs = [os.path.join(self.work, "mix-b-half%d.pcap" % i) for i in (0, 1)]
        with open(path, "rb") as f:
            header = f.read(24)
            files = [open(o, "wb") for o in outs]
            for o in files:
                o.write(header)
            while True:
                h = f.read(16)
                if len(h) < 16:
                    break
                frame = f.read(int.from_bytes(h[8:12], "little"))
                src = int.from_bytes(frame[26:30], "big")
                files[(src * 2654435761 >> 31) & 1].write(h + frame)
            for o in files:
                o.close()
        return outs

    def workers(self):
        """Case 1's mix b (perf/perf.yaml) with one worker and with two, side by side: each
        peer's outside rx rate, cycles per packet and merge figures from its --stats."""
        path = self.mix("b")
        halves = self.split_by_source(path)
        null = "--vdev", "net_null0,no-rx=1"
        one_cpu = "0@0,1@%d" % self.cpu_worker
        two = "0@0,1@0,2@%d" % self.cpu_worker
        peers = {
            "1 worker": (["--vdev", "net_pcap0,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null" % path],
                         one_cpu, self.frames(path)),
            "2 workers, split by source": (
                ["--vdev", "net_pcap0,rx_pcap=%s,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null,"
                 "tx_pcap=/dev/null" % tuple(halves)], two, self.frames(path)),
            "2 workers, every key on both": (
                ["--vdev", "net_pcap0,rx_pcap=%s,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null,"
                 "tx_pcap=/dev/null" % (path, path)], two, 2 * self.frames(path)),
        }
        rows = [{"peer": p, "lcores": lc, "pps": [], "cycles_per_packet": [], "merge": []}
                for p, (_, lc, _) in peers.items()]
        for rep in range(self.args.reps):
            for row in (rows if rep % 2 == 0 else rows[::-1]):
                vdevs, lcores, frames = peers[row["peer"]]
                what = "scaling, mix b, repetition %d: %s" % (rep + 1, row["peer"])
                log(what)
                stats = os.path.join(self.work, "stats.json")
                if os.path.exists(stats):
                    os.unlink(stats)
                row["pps"].append(self.guarded(what, lambda: self.measure(self.floodgate(
                    vdevs + list(null), frames + 65536, "fgp-sc", stats, lcores=lcores))))
                s = self.read_stats(stats)
                row["cycles_per_packet"].append(s.get("cycles", {}).get("per_packet"))
                row["merge"].append(s.get("merge"))
        for row in rows:
            vals = [v for v in row["pps"] if v is not None]
            row["median_pps"] = statistics.median(vals) if vals else None
        return rows

    def machine(self):
        cpu = "unknown"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem_kb = int(f.readline().split()[1])
        def ver(*c):
            try:
                return subprocess.run(list(c), capture_output=True, text=True).stdout.strip()
            except FileNotFoundError:  # nft, when only cases without nftables run
                return c[0] + " not installed"
        return {"cpu": cpu, "cpus": os.cpu_count(), "memory_gib": round(mem_kb / 2**20, 1),
                "kernel": platform.release(), "dpdk": ver("pkg-config", "--modversion", "libdpdk"),
                "nftables": ver("nft", "--version"),
                "commit": ver("git", "-C", ROOT, "rev-parse", "--short", "HEAD")}


def summarise(row, ours, baselines, key="ratio_vs_"):
    for k in [ours] + baselines:
        vals = [v for v in row[k] if v is not None]
        row[k + "_median_pps"] = statistics.median(vals) if vals else None
    for b in baselines:
        a, z = row[ours + "_median_pps"], row[b + "_median_pps"]
        row[key + b] = a / z if a and z else None
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=5, help="samples per run (after 2 warm-up)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", default="1,2,3,micro,xdp,payload,scaling",
                    help="of 1,2,3,micro,syn,xdp,payload,scaling")
    ap.add_argument("--mixes", default="a,b,c,d,e,e-drop,a-payload,b-payload",
                    help="e and e-drop are case 1's only (cases 2 and 3 skip them)")
    ap.add_argument("--bench-reps", type=int, default=10, help="repetitions of the syn case")
    ap.add_argument("--quick", action="store_true", help="1 repetition, 2 samples")
    ap.add_argument("--out", default=os.path.join(ROOT, "perf/results"))
    args = ap.parse_args()
    if args.quick:
        args.reps, args.seconds = 1, 2
    args.mixes = args.mixes.split(",")
    h = Harness(args)
    h.results["machine"] = h.machine()
    h.results["command"] = " ".join(["perf/harness.py"] + sys.argv[1:])
    h.results["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    h.results["settings"] = {"seconds": args.seconds, "repetitions": args.reps,
                             "mbuf_size": MBUF_SIZE, "config": "perf/perf.yaml"}
    failures = []
    for case in args.cases.split(","):
        try:
            {"1": h.case1, "2": h.case2, "3": h.case3, "micro": h.micro, "syn": h.syn,
             "xdp": h.xdp, "payload": h.payload, "scaling": h.scaling}[case]()
        except Exception as e:  # one case failing still leaves the others' figures
            log("case %s failed: %s" % (case, e))
            failures.append({"case": case, "error": str(e)[-3000:]})
    h.results["failures"] = failures
    os.makedirs(args.out, exist_ok=True)
    # DATE.json, or DATE-2.json and on for a later run the same day (earlier runs are kept:
    # perf/run.sh reports them all).
    path = os.path.join(args.out, datetime.date.today().isoformat() + ".json")
    n = 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(args.out, "%s-%d.json" % (datetime.date.today().isoformat(), n))
    with open(path, "w") as f:
        json.dump(h.results, f, indent=1)
    subprocess.run(["umount", os.path.join(h.work, "bpffs")], stderr=subprocess.DEVNULL)
    subprocess.run(["rm", "-rf", h.work])
    print(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
