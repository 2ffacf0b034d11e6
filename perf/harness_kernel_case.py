"""Case 3, the kernel: a veth pair, floodgate on AF_XDP and with its XDP tier beside nftables."""
import json
import os
import statistics
import subprocess
import time

from harness_peers import CASE1_ONLY, ROOT, Peers
from harness_processes import Generator, Lines, log, stop
from harness_results import summarise


class KernelCase(Peers):
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
                # The XDP tier only has a flood to escalate in mixes a and d: b15 and c send each
                # source a few frames a second at this generator's rate, under perf-xdp.yaml's
                # 100/s, so nothing is refused and the tier rightly stays empty.
                escalates = pmd == "af_xdp" and mix in ("a", "d")
                peers = ["nftables", "floodgate"] + (["floodgate_xdp"] if escalates else [])
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
