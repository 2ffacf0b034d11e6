"""The harness's base: the build, the mixes, the peers' command lines and floodgate's --stats."""
import json
import os
import statistics
import subprocess
import tempfile

from harness_processes import Sampler, floodgate_parser, log, testpmd_parser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIX_FILES = {"a": "mix-a", "b": "mix-b", "b15": "mix-b15", "c": "mix-c", "d": "mix-d",
             "e": "mix-e", "e-drop": "mix-e", "a-payload": "mix-a", "b-payload": "mix-b",
             "f": "mix-f", "f-proxy": "mix-f", "held-out": "mix-held-out"}
# Rules per mix (default perf/perf.yaml).
MIX_CONFIG = {"e": "perf/perf-syn-auth.yaml", "e-drop": "perf/perf-syn-drop.yaml",
              "a-payload": "perf/perf-payload.yaml", "b-payload": "perf/perf-payload.yaml",
              "f": "perf/perf-established.yaml", "f-proxy": "perf/perf-syn-proxy.yaml"}
# Case 1's I/O floor: floodgate receiving, parsing and forwarding, deciding nothing.
NO_RULES_CONFIG = "perf/perf-no-rules.yaml"
# 10.0.0.0/8 sources, the answers need case 1's ports, the payload mixes repeat a and b
CASE1_ONLY = {"e", "e-drop", "a-payload", "b-payload", "f", "f-proxy", "held-out"}
MBUF_SIZE = 256  # data room, headroom included: a 64-byte frame fits; the same for every peer


def eal_memory(mb):
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts/hugepages.sh"), str(mb)],
                         capture_output=True, text=True, check=True).stdout.split()
    return out



class Peers:
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
        # The held-out mix's seed: drawn for this run, never one the developers tuned with,
        # and recorded so that the run's frames can be made again.
        self.held_out_seed = int.from_bytes(os.urandom(4), "little")

    def mix(self, name):
        path = os.path.join(self.work, MIX_FILES[name] + ".pcap")
        if not os.path.exists(path):
            seed = []
            if name == "held-out":
                seed = ["--seed", str(self.held_out_seed)]
                self.results["held_out_seed"] = self.held_out_seed
            subprocess.run([self.bin["gen"], MIX_FILES[name]] + seed + ["--out", path],
                           check=True, stdout=subprocess.DEVNULL)
        return path

    @staticmethod
    def frames(path):
        with open(path, "rb") as f:
            f.read(24)
            n = 0
            while True:
                h = f.read(16)
                if len(h) < 16:
                    return n
                f.seek(int.from_bytes(h[8:12], "little"), 1)
                n += 1

    def mbufs(self, path):
        # net_pcap keeps the whole capture in mbufs (infinite_rx); room for the rings on top.
        return self.frames(path) + 32768

    def eal(self, prefix, lcores, mb):
        return ["--lcores", lcores, "--no-pci", "--file-prefix", prefix, "--log-level", "error"] + \
            eal_memory(mb)

    def lcores(self):
        return "0@0,1@%d" % self.cpu_worker

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

    def tx_memory_mb(self, path):
        """The EAL memory floodgate-tx needs to hold path's frames, as it computes it."""
        return int(subprocess.run([self.bin["tx"], "--memory-mb", path], capture_output=True,
                                  text=True, check=True).stdout)

    def generator_cmd(self, vdev, path, netns=None):
        """floodgate-tx on CPU 0 sending `path` on vdev, for longer than any run lasts (the
        measurement stops it)."""
        return self.netns(netns) + [
            self.bin["tx"], "--lcores", "0@0", "--no-pci", "--file-prefix", "fgp-gen",
            "--log-level", "error"] + eal_memory(self.tx_memory_mb(path)) + [
            "--vdev", vdev, "--", "--pcap", path, "--seconds", str(self.args.seconds + 60)]

    def guarded(self, what, fn):
        """One measurement; a failure is recorded (and reported) instead of ending the run."""
        try:
            return fn()
        except Exception as e:
            log("%s failed: %s" % (what, e))
            self.results.setdefault("errors", []).append({"run": what, "error": str(e)[-3000:]})
            return None
