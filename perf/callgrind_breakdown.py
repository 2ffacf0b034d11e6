#!/usr/bin/python3
"""Where a packet's instructions go: bench_decision's cases run under callgrind (valgrind),
instructions counted inside Pipeline::prepare, decide_prepared and build_answer only (the
worker's pipelined decision, which the benchmarks use), and only in the timed loop
(bench_common.h starts and stops callgrind's instrumentation around it), attributed to the
stage whose source file they come from (inlined code keeps its own file with -g), per packet.

This VM has no hardware counters; callgrind's instruction counts are exact and the same on
every run, so a stage's share can be compared across changes where timings cannot. They count
instructions, not cycles: cache misses (the table at 16M keys) are not in them.

    perf/callgrind_breakdown.py BUILD_DIR [CASE ...]   # prints a markdown table

BUILD_DIR must be configured with -Dnative=false (valgrind does not run AVX-512) and
-Ddebug=true; perf/run.sh makes build-callgrind so.
"""
import os
import re
import subprocess
import sys
import tempfile

# callgrind_annotate's file:function -> stage, first match wins
STAGES = [
    ("parse", r"dataplane/core/parse\.(cpp|h):"),
    ("prefix lists", r"dataplane/core/(ruleset\.cpp|prefix_table\.(cpp|h)):|rte_fib|rte_lpm"),
    ("rule match", r"dataplane/core/rule_(match|index)\.(cpp|h):"),
    ("key hash", r"dataplane/core/keyed_hash\.h:"),
    ("table", r"dataplane/core/limit_table\.(cpp|h):"),
    ("limit (GCRA)", r"dataplane/core/(gcra|limit_admit|window)\.h:"),
    ("top offenders", r"dataplane/core/heavy_hitters\.(cpp|h):|emmintrin|smmintrin"),
    ("answers", r"dataplane/answer/[a-z_]*\.(cpp|h):"),
    ("payload", r"dataplane/core/payload_scan\.(cpp|h):|libhs"),
]
OTHER = "pipeline (loops, counters, verdicts)"

CASES = ["BM_Decide/keys:1024/refuse:0/", "BM_Decide/keys:1024/refuse:1/",
         "BM_DecideAggregate/rules:3/refuse:0/",  # no rules: the path before any decision
         "BM_SynFlood/regime:1/", "BM_SynFlood/regime:2/"]


def stage_of(entry):
    """entry: callgrind_annotate's file:function."""
    for name, pattern in STAGES:
        if re.search(pattern, entry):
            return name
    return OTHER


# Every bench_decision case decides whole bursts of kMaxBurst frames (bench_common.h).
BURST = 32


def packets_in(out_file):
    """parse_burst's calls (one a burst, inside the collected functions) times BURST: the
    packets decided in every timed loop the benchmark ran, its trial runs included."""
    names, calls, current = {}, 0, None
    with open(out_file) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "cfn":
                    current = names.get(m.group(2), "")
                continue
            m = re.match(r"calls=(\d+)", line)
            if m and current and current.startswith("floodgate::parse_burst("):
                calls += int(m.group(1))
    return calls * BURST


def breakdown(build, case, work):
    out_file = os.path.join(work, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file,
                    "--instr-atstart=no",
                    "--toggle-collect=floodgate::Pipeline::prepare(*",
                    "--toggle-collect=floodgate::Pipeline::decide_prepared(*",
                    "--toggle-collect=floodgate::build_answer(*",
                    os.path.join(build, "perf", "bench_decision"), "--benchmark_filter=" + case,
                    "--benchmark_min_time=0.05"],
                   check=True, capture_output=True, timeout=1800)
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--show-percs=no", "--threshold=100", out_file],
                          check=True, capture_output=True, text=True).stdout
    by_stage, total = {}, None
    for line in text.splitlines():
        t = re.match(r"\s*([\d,]+)\s+PROGRAM TOTALS", line)
        if t:
            total = int(t.group(1).replace(",", ""))
            continue
        m = re.match(r"\s*([\d,]+)\s+(\S+?):(.*?)(?: \[(\S+)\])?$", line)
        if not m:
            continue
        path, function = m.group(2), m.group(3)
        stage = stage_of(path + ":" + function)
        by_stage[stage] = by_stage.get(stage, 0) + int(m.group(1).replace(",", ""))
    counted = sum(by_stage.values())
    if total is None or abs(counted - total) > total // 100:
        raise SystemExit("%s: the stages add up to %d instructions, callgrind's total to %s" %
                         (case, counted, total))
    return by_stage, packets_in(out_file)


def main(argv):
    build = argv[1]
    cases = argv[2:] or CASES
    columns = [name for name, _ in STAGES] + [OTHER]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            by_stage, packets = breakdown(build, case, work)
            if packets == 0:
                raise SystemExit("%s: no packet decided" % case)
            rows.append((case, packets, {k: v / packets for k, v in by_stage.items()}))
    shown = [c for c in columns if any(r[2].get(c, 0) >= 0.5 for r in rows)]
    print("| case | " + " | ".join(shown) + " | total |")
    print("|---" * (len(shown) + 2) + "|")
    for case, packets, per in rows:
        print("| `%s` | " % case.rstrip("/") + " | ".join("%.0f" % per.get(c, 0) for c in shown) +
              " | **%.0f** |" % sum(per.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
