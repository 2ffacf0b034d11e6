#!/usr/bin/env bash
# The performance harness in one command: installs what is missing (nftables too), builds
# with the benchmarks, reserves hugepages, runs every case side by side with its baseline
# (perf/harness.py, about 25 minutes on 2 cores) and writes perf/results/DATE.json and
# perf/RESULTS.md from it. As root. Extra arguments go to the harness (--quick, --cases 1,
# --mixes e,e-drop).
source "$(dirname "$0")/../scripts/lib.sh"
FG_PACKAGES+=(nftables)
fg_install_deps
fg_build
result=$(/usr/bin/python3 "$FG_ROOT/perf/harness.py" "$FG_BUILD" "$@") || status=$?
[ -n "$result" ] || exit 1
/usr/bin/python3 "$FG_ROOT/perf/report.py" "$result" > "$FG_ROOT/perf/RESULTS.md"
echo "wrote $result and perf/RESULTS.md"
exit "${status:-0}"
