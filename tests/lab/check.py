#!/usr/bin/env python3
"""Checks a lab run: sent.json (traffic.py send), received.json (traffic.py receive),
stats.json (floodgate run --stats), number of workers. Limits are those of
config/default.yaml; the flood allowances are burst + rate x (send time + 1 s), plus the
cross-core bound of (workers - 1) x (burst + rate x merge lag) with a 10 ms lag allowance."""
import json
import sys

sent, received, stats = (json.load(open(p)) for p in sys.argv[1:4])
workers = int(sys.argv[4])
seconds = sent["seconds"] + 1.0
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def allowance(rate, burst):
    return burst + rate * seconds + (workers - 1) * (burst + rate * 0.010)


# Well-behaved clients: 6 DNS queries and 60 TCP packets each in 3 s, all under every limit.
for c in range(10):
    src = f"198.18.1.{10 + c}"
    check(received.get(src, 0) == 66, f"client {src}: {received.get(src, 0)} of 66 arrived")
check(received.get("198.18.66.6", 0) <= allowance(10, 5),
      f"DNS flood 198.18.66.6: {received.get('198.18.66.6', 0)} <= {allowance(10, 5):.0f}")
check(received.get("198.18.77.7", 0) <= allowance(5, 5),
      f"ICMP flood 198.18.77.7: {received.get('198.18.77.7', 0)} <= {allowance(5, 5):.0f}")
rotating = sum(n for s, n in received.items() if s.startswith("2001:db8:66:1:"))
check(rotating <= allowance(10, 5), f"IPv6 /64 rotation: {rotating} <= {allowance(10, 5):.0f}")
check(stats["packets"] == stats["passed"] + stats["dropped"],
      f"counters: packets {stats['packets']} = passed {stats['passed']} + dropped {stats['dropped']}")
check(stats["dropped"] == stats["rate_limited"] + stats["malformed"] + stats["block_hits"],
      f"every drop has a reason: {stats['dropped']} = rate-limited {stats['rate_limited']} + "
      f"malformed {stats['malformed']} + blocked {stats['block_hits']}")
port = stats["ports"]["outside_to_inside"]
check(port["rx"] == stats["packets"] and port["tx"] == stats["passed"] and port["tx_failed"] == 0,
      f"outside port: rx {port['rx']} decided, tx {port['tx']} passed, {port['tx_failed']} TX failures")
merge = stats["merge"]
check(merge["records_lost"] == 0 and stats["merge_unshared_keys"] == 0 and stats["merge_table_full"] == 0,
      f"merge complete: {merge['records_lost']} records lost, {stats['merge_unshared_keys']} unshared, "
      f"{stats['merge_table_full']} table full")
check(workers == 1 or merge["max_lag_ns"] <= 50_000_000,
      f"merge lag {merge['max_lag_ns'] / 1e6:.3f} ms (the bound above allows 10 ms; workers may share CPUs)")
check(stats["packets"] >= sent["sent"], f"floodgate saw all {sent['sent']} frames sent (saw {stats['packets']})")
arrived = sum(received.values())
check(0 <= stats["passed"] - arrived <= 3,
      f"server got what floodgate passed: {arrived} arrived, {stats['passed']} passed (3 end markers)")
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
