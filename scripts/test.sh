#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs the unit, scenario, control and lab suites;
# then the unit and scenario suites again under ASan and UBSan; then each fuzz harness over its
# corpus and for $FUZZ_SECONDS (20) of fuzzing. Ends with one line "N passed, N failed"
# counting individual test cases of all three build directories.
source "$(dirname "$0")/lib.sh"
fg_install_deps
fg_build

status=0
logs=()
step() { echo "==> $1 ($(date -u +%T))"; }
# A step that cannot build still counts: its suites are one failed case.
build_failed=0

# Which memory the labs' DPDK processes get (scripts/hugepages.sh): hugepages wherever the
# machine can reserve them, as on every bare-metal box; ordinary memory (--no-huge) only where
# it cannot, and then the hugepage path is untried: said here so that a run shows which.
step "EAL memory for the labs: $(fg_hugepage_path)"
step "release build: unit, scenario, control and lab suites"
meson test -C "$FG_BUILD" --suite unit --suite scenario --suite control --suite lab --print-errorlogs \
  --num-processes "${FG_JOBS:-2}" || status=$?
logs+=("$FG_BUILD/meson-logs/testlog.junit.xml")

step "ASan and UBSan build: unit and scenario suites"
if fg_build_asan; then
  meson test -C "$FG_ASAN_BUILD" --no-rebuild --suite unit --suite scenario --print-errorlogs \
    --num-processes "${FG_JOBS:-2}" || status=$?
  logs+=("$FG_ASAN_BUILD/meson-logs/testlog.junit.xml")
else
  status=1 build_failed=$((build_failed + 1))
fi

step "fuzz harnesses: each corpus, then ${FUZZ_SECONDS:-20} s of fuzzing each"
if fg_build_fuzz; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-20}" meson test -C "$FG_FUZZ_BUILD" --no-rebuild --suite fuzz \
    --print-errorlogs --num-processes "${FG_JOBS:-2}" || status=$?
  logs+=("$FG_FUZZ_BUILD/meson-logs/testlog.junit.xml")
else
  status=1 build_failed=$((build_failed + 1))
fi
step "done"

# Count test cases from meson's JUnit logs, which list each GoogleTest case of a 'gtest'
# protocol test on its own.
python3 - "$build_failed" "${logs[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
passed, failed, skipped = 0, int(sys.argv[1]), 0
for log in sys.argv[2:]:
    try:
        root = ET.parse(log).getroot()
    except (OSError, ET.ParseError) as e:  # a suite that never ran counts as one failure
        print(f"no test log: {e}", file=sys.stderr)
        failed += 1
        continue
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit "$status"
