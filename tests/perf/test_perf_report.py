#!/usr/bin/python3
"""perf/report.py on a made-up scaling run (in a temporary directory, so that no picture lands
in perf/results): the memory-floor table's cells, the decision less the memory computed here,
issue 15's targets at 16M keys, and the hand-written notes appended as they are.

    test_perf_report.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

FAILED, CHECKED = [], []


def check(what, ok):
    CHECKED.append(what)
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILED.append(what)


def row(name, cpu_ns):
    return {"name": name + "/real_time", "time": cpu_ns + 5, "cpu_time": cpu_ns, "time_unit": "ns"}


def main(src):
    keys = {1024: (40.0, 60.0), 1 << 24: (68.5, 102.25)}
    floor = {1024: ((4.5, 5.0), (3.5, 4.0)), 1 << 24: ((26.0, 31.5), (27.75, 29.5))}
    rows = []
    for k, (admit, refuse) in keys.items():
        rows += [row("BM_Keys/keys:%d/refuse:0" % k, admit), row("BM_Keys/keys:%d/refuse:1" % k, refuse)]
    for k, regimes in floor.items():
        for refuse, (same, ahead) in enumerate(regimes):
            rows += [row("BM_MemoryFloor/keys:%d/refuse:%d/ahead:0" % (k, refuse), same),
                     row("BM_MemoryFloor/keys:%d/refuse:%d/ahead:1" % (k, refuse), ahead)]
    run = {"machine": {"cpu": "test", "cpus": 2, "memory_gib": 1.0, "kernel": "k", "dpdk": "d",
                       "nftables": "n", "commit": "c"},
           "command": "made up", "date": "2026-12-02T00:00:00+00:00",
           "settings": {"seconds": 1, "repetitions": 1, "mbuf_size": 256, "config": "perf/perf.yaml"},
           "cases": {}, "scaling": {"bench_scaling": rows, "cpu": 1}, "failures": []}
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "run.json")
        with open(path, "w") as f:
            json.dump(run, f)
        notes = os.path.join(work, "notes.md")
        with open(notes, "w") as f:
            f.write("## A finding\n\nWritten by hand.\n")
        out = subprocess.run([sys.executable, os.path.join(src, "perf/report.py"), "--notes", notes,
                              path], capture_output=True, text=True, timeout=60)
        check("report.py exits 0 (%s)" % out.stderr.strip()[-200:], out.returncode == 0)
        text = out.stdout
    lines = text.splitlines()
    for k, regimes in floor.items():
        admit, refuse = keys[k]
        (a_same, a_ahead), (r_same, r_ahead) = regimes
        want = "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            "{:,}".format(k), a_same, a_ahead, admit, admit - a_same, r_same, r_ahead, refuse,
            refuse - r_same)
        check("floor row for %d keys: %s" % (k, want), want in lines)
    check("admitted target at 16M keys not met at 68.5 ns",
          "| decision <= 40 ns/packet at 16,777,216 keys, every packet admitted (issue 15) | 68.5 ns "
          "| **not met** |" in lines)
    check("refused target at 16M keys not met at 102.2 ns",
          any(l.startswith("| decision <= 40 ns/packet at 16,777,216 keys, every packet refused")
              and "102.2 ns" in l and "**not met**" in l for l in lines))
    check("the notes come last, as written", text.rstrip().endswith("## A finding\n\nWritten by hand."))
    print("%d passed, %d failed" % (len(CHECKED) - len(FAILED), len(FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
