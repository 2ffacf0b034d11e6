"""TAP output for the Python tests in tests/: one line a check, a failure's detail as comments,
and the plan with the counts at the end."""
import sys

results = []


def check(ok, what, detail=""):
    results.append(bool(ok))
    print(("ok" if ok else "not ok") + " %d - %s" % (len(results), what))
    for line in ([] if ok else str(detail).splitlines()):
        print("#   " + line)
    sys.stdout.flush()
    return ok


def plan():
    """Prints the plan and the counts; returns the exit code."""
    print("1..%d" % len(results))
    passed = sum(results)
    print("# %d passed, %d failed" % (passed, len(results) - passed))
    return 0 if all(results) else 1
