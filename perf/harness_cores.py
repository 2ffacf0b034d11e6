"""The cores case (issue 25): floodgate replay from 1 to 64 workers, steering beside round robin.

What one more worker costs is measured on replay, not on a live port: replay runs the live
path's pipeline and merge on N virtual cores in one process, so its CPU time (user + sys, from
the kernel's rusage of the child) is the whole work the N cores did, whatever the machine's own
number of CPUs (2 here). Per packet it should stay flat as N grows where the cores share
nothing (issue 25's goals).
"""
import datetime
import hashlib
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time

from harness_peers import ROOT, Peers
from harness_processes import log

CORES_WORKERS = (1, 2, 4, 8, 16, 64)
# --spread steering: each source prefix has one owner core, core-local keys never published
# (the change); rr: round robin, every key shared and merged onto every core (the old
# behaviour, for mix b's one-frame-per-source traffic). The baseline first, as in every case.
CORES_SPREADS = ("rr", "steering")
# The table's slack over the keys a core holds, as docs/design.md tells users to size it.
TABLE_SLACK = 1.1
TABLE_SLACK_ENTRIES = 1024
# An upper bound of a table entry's bytes (the table's target is 32; 20 is measured): what a
# round-robin run's N full tables may need, checked against the machine's free memory first.
ENTRY_BYTES_BOUND = 32
REPLAY_TIMEOUT_S = 600
MIX_A_REPEATS = 256  # 4,096 frames of mix a, 256 times: 1,048,576, as many as mix b


class CoresMix:
    """One mix of the case: its capture and the capture's first frame alone, its rules (a
    file with a table line the harness rewrites) and its distinct keys (what the tables must
    hold, summed over the cores)."""

    def __init__(self, name, label, path, rules, keys):
        self.name, self.label, self.path, self.rules, self.keys = name, label, path, rules, keys
        self.first = os.path.splitext(path)[0] + "-first.pcap"


def first_frames(src, out, count):
    """The first `count` frames of src: the same rules and workers over it cost the start-up
    (tables, rings, the per-core state) and almost no packets."""
    with open(src, "rb") as f, open(out, "wb") as o:
        o.write(f.read(24))
        for _ in range(count):
            h = f.read(16)
            if len(h) < 16:
                break
            o.write(h + f.read(int.from_bytes(h[8:12], "little")))
    return out


def repeat_pcap(src, out, times):
    """src's frames `times` times over, each repetition's timestamps shifted to follow the
    last (one inter-frame gap after it), so that replay's clock, the packet time, only
    advances: limits and merge intervals see one long capture, not the same second again."""
    with open(src, "rb") as f:
        header = f.read(24)
        records = []
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            records.append((h, f.read(int.from_bytes(h[8:12], "little"))))
    # 0xa1b23c4d is the nanosecond pcap; 0xa1b2c3d4 the microsecond one (floodgate-gen's).
    sub = 10**9 if int.from_bytes(header[:4], "little") == 0xa1b23c4d else 10**6

    def ts(h):
        return int.from_bytes(h[0:4], "little") * sub + int.from_bytes(h[4:8], "little")
    first, last = ts(records[0][0]), ts(records[-1][0])
    gap = last - ts(records[-2][0]) if len(records) > 1 else 1
    span = last - first + max(gap, 1)
    with open(out, "wb") as f:
        f.write(header)
        for k in range(times):
            for h, frame in records:
                t = ts(h) + k * span
                f.write((t // sub).to_bytes(4, "little") + (t % sub).to_bytes(4, "little") +
                        h[8:] + frame)
    return out


def rusage_run(cmd, timeout):
    """Runs cmd to its end; its exit status, wall time and rusage (wait4: the child's own CPU
    time and peak RSS, not the harness's). Killed, with its process group, after timeout."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)

    def kill():
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended as the timer fired
            pass
    killer = threading.Timer(timeout, kill)
    start = time.monotonic()
    killer.start()
    try:
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return p.returncode, time.monotonic() - start, ru, err.decode(errors="replace")


def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


class Cores(Peers):
    def snapshot_floodgate(self):
        """A copy of the floodgate binary, run by every replay of the case: the build
        directory may be rebuilt while the case runs (the machine is shared), and one case must
        not mix two builds. Its digest and build time go into the results."""
        src = self.bin["floodgate"]
        copy = os.path.join(self.work, "floodgate-cores")
        shutil.copy2(src, copy)
        with open(copy, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        built = datetime.datetime.fromtimestamp(os.stat(copy).st_mtime, datetime.timezone.utc)
        return copy, {"path": src, "sha256_16": digest,
                      "built": built.isoformat(timespec="seconds")}

    def cores_mixes(self):
        """Mix b, mix a made as long as mix b, and mix b under an aggregate rule."""
        b = self.mix("b")
        a = os.path.join(self.work, "mix-a-1m.pcap")
        if not os.path.exists(a):
            repeat_pcap(self.mix("a"), a, MIX_A_REPEATS)
        for path in (a, b):
            first_frames(path, os.path.splitext(path)[0] + "-first.pcap", 1)
        perf = os.path.join(ROOT, "perf/perf.yaml")
        return [
            CoresMix("b", "mix b: 1,048,576 random sources, each once", b, perf, 1 << 20),
            CoresMix("a", "mix a: one source, 1,048,576 frames (4,096 repeated 256 times)", a,
                     perf, 1),
            CoresMix("b-aggregate", "mix b under a per-source and an aggregate (`key: dst`) "
                     "rule", b, os.path.join(ROOT, "perf/cores/aggregate.yaml"), 1 << 20)]

    @staticmethod
    def entries_per_core(mix, workers, spread):
        """Steering: each core holds its share of the keys (docs/design.md's sizing for N
        workers). Round robin: every core holds every key, as before the change."""
        share = mix.keys / workers if spread == "steering" else mix.keys
        return math.ceil(TABLE_SLACK * share) + TABLE_SLACK_ENTRIES

    def cores_rules(self, mix, entries):
        """mix.rules with its table line rewritten for `entries` per core; the file's path."""
        with open(mix.rules) as f:
            text = f.read()
        text, n = re.subn(r"(?m)^table:.*$", "table: { entries_per_core: %d }" % entries, text)
        if n != 1:
            raise RuntimeError("%s: no single top-level table line to rewrite" % mix.rules)
        path = os.path.join(self.work, "cores-%s-%d.yaml" % (os.path.basename(mix.rules), entries))
        with open(path, "w") as f:
            f.write(text)
        return path

    def replay(self, trace, workers, spread, rules):
        """floodgate replay of trace to its end; its rusage, wall time and --stats."""
        stats = os.path.join(self.work, "cores-stats.json")
        if os.path.exists(stats):
            os.unlink(stats)
        # Pinned, as the scaling case's benchmarks are: replay decides every virtual core's
        # frames on one thread, and a thread that migrates between the CPUs of a shared
        # machine varies more.
        cmd = ["taskset", "-c", str(self.cpu_worker), self.cores_bin, "replay", "--workers",
               str(workers), "--spread", spread, "--config", rules, "--in", trace, "--pass",
               "/dev/null", "--stats", stats, "--quiet"]
        rc, wall_s, ru, err = rusage_run(cmd, REPLAY_TIMEOUT_S)
        if rc != 0:
            raise RuntimeError("floodgate replay exited %d (%s):\n%s" % (
                rc, "killed after %d s" % REPLAY_TIMEOUT_S if rc == -signal.SIGKILL else
                "failed", err[-2000:]))
        return ru, wall_s, self.read_stats(stats)

    def replay_once(self, mix, workers, spread, entries):
        """One replay of the mix, then of its first frame alone; the mix's CPU time per
        packet, with and without the start-up's (the first frame's CPU time: what N workers
        cost before any packet, which is not a cost per packet however the whole run's time
        divides it), peak RSS and key copies (the keys inserted into the tables, summed over
        the cores: occupancy + reclaims)."""
        rules = self.cores_rules(mix, entries)
        ru, wall_s, s = self.replay(mix.path, workers, spread, rules)
        start, _, _ = self.replay(mix.first, workers, spread, rules)
        table = s.get("table", {})
        cpu_s = ru.ru_utime + ru.ru_stime
        startup_s = start.ru_utime + start.ru_stime
        return {"cpu_s": cpu_s, "user_s": ru.ru_utime, "sys_s": ru.ru_stime, "wall_s": wall_s,
                "cpu_ns_per_packet": cpu_s * 1e9 / s["packets"], "startup_cpu_s": startup_s,
                "net_cpu_ns_per_packet": (cpu_s - startup_s) * 1e9 / s["packets"],
                "peak_rss_kb": ru.ru_maxrss,  # Linux: kilobytes
                "key_copies": table.get("occupancy", 0) + table.get("reclaims", 0),
                "table_capacity": table.get("capacity"), "table_bytes": table.get("memory_bytes"),
                "full_events": table.get("full_events"), "packets": s["packets"],
                "passed": s["passed"], "rate_limited": s["rate_limited"],
                "merge_table_full": s.get("merge_table_full")}

    @staticmethod
    def too_big(workers, entries):
        """Why a run's tables would not fit in the machine's free memory (half of it: the
        machine is shared), or None."""
        need = workers * entries * ENTRY_BYTES_BOUND
        free = mem_available_bytes()
        if need > free // 2:
            return "%d tables of %d entries need up to %.1f GB; %.1f GB free" % (
                workers, entries, need / 1e9, free / 1e9)
        return None

    def cores_row(self, mix, workers, capped):
        """Both spreads at one number of workers, alternating (the baseline first on even
        repetitions); each spread's medians. A spread in `capped` (it failed or would not fit
        at fewer workers) is not run again and says why."""
        row = {"workers": workers}
        for spread in CORES_SPREADS:
            entries = self.entries_per_core(mix, workers, spread)
            row[spread] = {"entries_per_core": entries, "runs": []}
            why = capped.get(spread) or self.too_big(workers, entries)
            if why:
                capped.setdefault(spread, why)
                row[spread]["skipped"] = why
        for rep in range(self.args.reps):
            for spread in (CORES_SPREADS if rep % 2 == 0 else CORES_SPREADS[::-1]):
                side = row[spread]
                if "skipped" in side:
                    continue
                what = "cores, %s, %d workers, repetition %d: %s" % (mix.name, workers, rep + 1,
                                                                      spread)
                log(what)
                run = self.guarded(what, lambda: self.replay_once(mix, workers, spread,
                                                                  side["entries_per_core"]))
                if run is None:  # larger N would only fail too (or take longer)
                    capped[spread] = side["skipped"] = "failed at %d workers" % workers
                    continue
                side["runs"].append(run)
        for spread in CORES_SPREADS:
            side = row[spread]
            for k in ("cpu_ns_per_packet", "net_cpu_ns_per_packet", "startup_cpu_s",
                      "peak_rss_kb", "key_copies", "wall_s"):
                vals = [run[k] for run in side["runs"]]
                side[k] = statistics.median(vals) if vals else None
        return row

    def cores(self):
        """Every mix at every number of workers, steering beside round robin. The load
        average before and after each mix is kept: CPU time is less disturbed than wall time by
        other processes, not immune (caches, the CPU's clock)."""
        self.cores_bin, binary = self.snapshot_floodgate()
        mixes = []
        for mix in self.cores_mixes():
            capped, load_before = {}, os.getloadavg()[0]
            rows = [self.cores_row(mix, n, capped) for n in CORES_WORKERS]
            mixes.append({"mix": mix.name, "label": mix.label, "frames": self.frames(mix.path),
                          "keys": mix.keys, "config": os.path.relpath(mix.rules, ROOT),
                          "rows": rows, "capped": capped,
                          "loadavg_1min": [load_before, os.getloadavg()[0]]})
        self.results["cores"] = {"workers": list(CORES_WORKERS), "spreads": list(CORES_SPREADS),
                                 "table_slack": [TABLE_SLACK, TABLE_SLACK_ENTRIES],
                                 "binary": binary, "mixes": mixes}
