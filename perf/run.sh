#!/usr/bin/env bash
# The performance harness in one command: installs what is missing (matplotlib and valgrind
# too), builds with the benchmarks, reserves hugepages, runs every case side by side with its
# baseline (perf/harness.py, about 45 minutes on 2 cores, the cores case 10 of them) and writes perf/results/DATE.json,
# perf/RESULTS.md (with the earlier runs of perf/results/index.txt) and the scaling case's
# pictures (perf/results/DATE-*.png) from it. As root.
# Extra arguments go to the harness (--quick, --cases 1, --mixes e,e-drop).
source "$(dirname "$0")/../scripts/lib.sh"
FG_PACKAGES+=(python3-matplotlib valgrind)  # matplotlib: report.py's pictures
fg_install_deps
fg_build
result=$(/usr/bin/python3 "$FG_ROOT/perf/harness.py" "$FG_BUILD" "$@") || status=$?
[ -n "$result" ] || exit 1
# RESULTS.md: every run listed in results/index.txt, oldest first, this one last (added to the
# list), then the findings written by hand (results/notes.md).
# A run written elsewhere (--out) is reported alone.
index="$FG_ROOT/perf/results/index.txt"
if [ "$(dirname "$(realpath "$result")")" = "$(realpath "$FG_ROOT/perf/results")" ]; then
  grep -qxF "$(basename "$result")" "$index" || basename "$result" >> "$index"
  mapfile -t runs < <(sed "s|^|$FG_ROOT/perf/results/|" "$index")
else
  runs=("$result")
fi
/usr/bin/python3 "$FG_ROOT/perf/report.py" --notes "$FG_ROOT/perf/results/notes.md" "${runs[@]}" \
  > "$FG_ROOT/perf/RESULTS.md"
# Where a packet's instructions go (callgrind; valgrind does not run AVX-512, hence a build
# for the baseline x86-64 with line information).
cg_build="$FG_ROOT/build-callgrind"
[ -f "$cg_build/build.ninja" ] ||
  meson setup "$cg_build" "$FG_ROOT" --buildtype=release -Ddebug=true -Dnative=false -Dtests=disabled
ninja -C "$cg_build" -j "${FG_JOBS:-2}" perf/bench_decision
{
  echo
  echo "## Instructions per packet by stage (perf/callgrind_breakdown.py)"
  echo
  echo "callgrind's count of the instructions inside Pipeline::prepare, decide_prepared and"
  echo "build_answer per packet decided in the timed loop (the warm-up left out), by the source"
  echo "file they come from; exact and the same on every run, but instructions, not cycles."
  echo
  /usr/bin/python3 "$FG_ROOT/perf/callgrind_breakdown.py" "$cg_build"
} >> "$FG_ROOT/perf/RESULTS.md" || status=1
echo "wrote $result and perf/RESULTS.md"
exit "${status:-0}"
