#!/usr/bin/env bash
# The performance harness in one command: installs what is missing (nftables and matplotlib
# too), builds with the benchmarks, reserves hugepages, runs every case side by side with its
# baseline (perf/harness.py, about 35 minutes on 2 cores) and writes perf/results/DATE.json,
# perf/RESULTS.md and the scaling case's pictures (perf/results/DATE-*.png) from it. As root.
# Extra arguments go to the harness (--quick, --cases 1, --mixes e,e-drop).
source "$(dirname "$0")/../scripts/lib.sh"
FG_PACKAGES+=(nftables python3-matplotlib)  # matplotlib: report.py's pictures
fg_install_deps
fg_build
result=$(/usr/bin/python3 "$FG_ROOT/perf/harness.py" "$FG_BUILD" "$@") || status=$?
[ -n "$result" ] || exit 1
/usr/bin/python3 "$FG_ROOT/perf/report.py" "$result" > "$FG_ROOT/perf/RESULTS.md"
echo "wrote $result and perf/RESULTS.md"
exit "${status:-0}"
