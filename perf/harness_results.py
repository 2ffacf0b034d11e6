"""What a run records: medians and ratios to the baselines, the machine, the DATE.json written."""
import datetime
import json
import os
import platform
import statistics
import subprocess

from harness_peers import ROOT


def summarise(row, ours, baselines, key="ratio_vs_"):
    for k in [ours] + baselines:
        vals = [v for v in row[k] if v is not None]
        row[k + "_median_pps"] = statistics.median(vals) if vals else None
    for b in baselines:
        a, z = row[ours + "_median_pps"], row[b + "_median_pps"]
        row[key + b] = a / z if a and z else None
    return row


def machine():
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


def write_results(results, out):
    """Writes the results to DATE.json in out, or DATE-2.json and on for a later run the same
    day (earlier runs are kept: perf/run.sh reports them all); returns its path."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, datetime.date.today().isoformat() + ".json")
    n = 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(out, "%s-%d.json" % (datetime.date.today().isoformat(), n))
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    return path
