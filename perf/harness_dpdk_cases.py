"""Cases 1 and 2: floodgate beside testpmd, in one process and behind floodgate-tx over memif."""
import os

from harness_peers import CASE1_ONLY, MIX_CONFIG, NO_RULES_CONFIG, ROOT, Peers
from harness_processes import Generator, log
from harness_results import summarise


class DpdkCases(Peers):
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
                   "testpmd_io": [], "floodgate_no_rules": [], "floodgate": [],
                   "floodgate_cycles_per_packet": [], "floodgate_counts": []}
            # The I/O floor between the two: floodgate with no rules (perf/perf-no-rules.yaml).
            peers = ["testpmd_io", "floodgate_no_rules", "floodgate"]
            for rep in range(self.args.reps):
                for peer in peers if rep % 2 == 0 else peers[::-1]:
                    what = "case 1, mix %s, repetition %d: %s" % (mix, rep + 1, peer)
                    log(what)
                    if peer == "testpmd_io":
                        row[peer].append(self.guarded(what, lambda: self.measure(self.testpmd(
                            vdevs, "io", self.mbufs(path), "fgp-tp"))))
                    elif peer == "floodgate_no_rules":
                        row[peer].append(self.guarded(what, lambda: self.measure(
                            self.floodgate(vdevs, self.mbufs(path), "fgp-fg",
                                           os.path.join(self.work, "stats-no-rules.json"),
                                           config=os.path.join(ROOT, NO_RULES_CONFIG)))))
                    else:
                        stats = os.path.join(self.work, "stats.json")
                        if os.path.exists(stats):
                            os.unlink(stats)  # the last run's
                        row[peer].append(self.guarded(what, lambda: self.measure(
                            self.floodgate(vdevs, self.mbufs(path), "fgp-fg", stats,
                                           config=config))))
                        row["floodgate_cycles_per_packet"].append(self.cycles_per_packet(stats))
                        row["floodgate_counts"].append(self.answer_counts(stats))
            summarise(row, "floodgate_no_rules", ["testpmd_io"], key="no_rules_ratio_vs_")
            out.append(summarise(row, "floodgate", ["testpmd_io", "floodgate_no_rules"]))
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
