"""What the report's tables share: the targets, number formats, medians, paths relative to perf/."""
import os

TARGETS_CASE1 = {"a": 0.9, "b": 0.8, "d": 0.9}  # floodgate / testpmd io-forward
TARGET_CASE3 = 3.0  # floodgate / nftables
TARGET_PAYLOAD = 0.8  # floodgate with a payload rule / without (issue 13)
TARGET_SYN_PROXY = 0.8  # floodgate beside a syn-proxy rule / without, established flows (29)
TARGET_DECISION_NS_16M = 50.0
TARGET_DECISION_NS_16M_ROUND_TWO = 40.0  # issue 15, admitted and refused each
TARGET_CASE1_ROUND_TWO = 0.5  # issue 15: floodgate / testpmd io on every mix of case 1
TARGET_NO_RULES = 0.8  # issue 46: floodgate with no rules / testpmd io, case 1
TARGET_CASE1_MIX_E = 0.3  # issue 46: floodgate / testpmd io, case 1, every SYN answered
TARGET_DECISION_NS_16M_ROUND_FOUR = {False: 35.0, True: 40.0}  # issue 46: admitted, refused
TARGET_BYTES_PER_KEY = 32.0
TARGET_ANSWER_OVER_DROP = 2.0  # cost of answering a SYN / cost of dropping it
PERF_DIR = os.path.dirname(os.path.abspath(__file__))  # where RESULTS.md is


def mpps(v):
    return "-" if v is None else "%.2f" % (v / 1e6)


def ratio(v):
    return "-" if v is None else "%.2f" % v


def met(value, target, higher_is_better=True):
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "**not met**"


def spread(values):
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return ""
    return " (%s-%s)" % (mpps(min(vals)), mpps(max(vals)))


def median(values):
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    n = len(vals)
    return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2


def name(path):
    """The path relative to perf/ (where RESULTS.md is)."""
    return os.path.relpath(os.path.abspath(path), PERF_DIR)


def cycles_range(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return "-"
    return "%.0f (%.0f-%.0f)" % (median(vals), min(vals), max(vals))


def mpps_of_ns(ns):
    return 1e3 / ns if ns else None
