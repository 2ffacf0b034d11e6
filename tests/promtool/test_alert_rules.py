#!/usr/bin/python3
"""The alert rules that ship (config/prometheus/*.yaml), TAP, one case per check:
  - `promtool check rules` on every rules file;
  - `promtool test rules` on every tests/promtool/*_test.yaml (each alert fires on a series
    that should fire it, silent on one that should not);
  - every metric name an alert's expression uses is one `floodctl daemon` writes: both read
    by tests/control/grafana_queries.py (written_metric_names: control/metrics/*.cpp's
    literals and dataplane/api/stats.h's X-macro counters; metric_names: the PromQL reader).
New files in either folder are taken as they come.

Usage: test_alert_rules.py SOURCE_ROOT"""
import glob
import os
import subprocess
import sys

import yaml

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "tests", "control"))
from grafana_queries import metric_names, written_metric_names  # noqa: E402

RULE_FILES = sorted(glob.glob(os.path.join(ROOT, "config", "prometheus", "*.yaml")))
TEST_FILES = sorted(glob.glob(os.path.join(ROOT, "tests", "promtool", "*_test.yaml")))


def alert_exprs(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            yield rule.get("alert") or rule.get("record"), rule["expr"]


def main():
    checks = []
    for path in RULE_FILES:
        checks.append((f"promtool check rules {os.path.relpath(path, ROOT)}",
                       ["promtool", "check", "rules", path], None))
    for path in TEST_FILES:
        checks.append((f"promtool test rules {os.path.relpath(path, ROOT)}",
                       ["promtool", "test", "rules", os.path.basename(path)],
                       os.path.dirname(path)))
    exported = written_metric_names(ROOT)
    print(f"1..{len(checks) + len(RULE_FILES) + 1}")
    n, failed = 0, 0
    for name, cmd, cwd in checks:
        n += 1
        run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
        if run.returncode == 0:
            print(f"ok {n} - {name}")
        else:
            failed += 1
            print(f"not ok {n} - {name} (exit {run.returncode})")
            for line in (run.stdout + run.stderr).splitlines():
                print(f"# {line}")
    for path in RULE_FILES:
        n += 1
        unknown, used = [], 0
        for alert, expr in alert_exprs(path):
            for metric in metric_names(expr):
                used += 1
                if metric not in exported:
                    unknown.append(f"{alert}: {metric}")
        rel = os.path.relpath(path, ROOT)
        if unknown or used == 0:
            failed += 1
            print(f"not ok {n} - {rel}: metric names floodctl daemon does not write")
            for line in unknown:
                print(f"# {line}")
        else:
            print(f"ok {n} - {rel}: its {used} metric names are all written by control/metrics/")
    n += 1
    # The reader finds what it should: a name the code writes through each X-macro, a nested
    # list's and a literal; and not one it does not write.
    expected = {"floodgate_packets_total", "floodgate_rule_refused_total",
                "floodgate_proxy_opened_total", "floodgate_port_up"}
    if expected <= exported and "floodgate_rule_up" not in exported:
        print(f"ok {n} - {len(exported)} metric names read from control/metrics/, "
              "the X-macros' and nested lists' among them")
    else:
        failed += 1
        print(f"not ok {n} - the names read lack {sorted(expected - exported)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
