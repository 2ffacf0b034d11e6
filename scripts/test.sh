#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs the unit, scenario, control and lab suites, and ends
# with one line "N passed, N failed" counting individual test cases.
source "$(dirname "$0")/lib.sh"
fg_install_deps
fg_build

status=0
meson test -C "$FG_BUILD" --suite unit --suite scenario --suite control --suite lab --print-errorlogs \
  --num-processes "${FG_JOBS:-2}" || status=$?

# Count test cases from meson's JUnit log, which lists each GoogleTest case of a 'gtest'
# protocol test on its own.
python3 - "$FG_BUILD/meson-logs/testlog.junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
root = ET.parse(sys.argv[1]).getroot()
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
