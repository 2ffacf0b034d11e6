"""The benchmark cases (micro, syn, xdp, payload) and scaling, with mix b on one and two workers."""
import json
import os
import statistics
import subprocess

from harness_peers import Peers
from harness_processes import log


class Benchmarks(Peers):
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
