#!/usr/bin/env python3
"""Prints, and in check mode asserts, what tests/lab/aggregate.sh measured.

  aggregate_check.py WORK check|show

WORK is the script's work folder: aggregate.yaml (the rules), stats.json (floodgate run
--stats), floodgate.log, tx.log (floodgate-tx), first.json (when the flood's first frame
reached floodgate's outside veth), watch.json (the segments to port 80 that reached the
server's veth, per source), clients.json, newclient.json, drops-before/after-host.json and
times.json. The figures asserted come from the lab's own receivers, clients and floodgate-tx,
not from floodgate; floodgate's counters are checked against them and against their
invariants.
"""
import ipaddress
import json
import re
import statistics
import sys

from lab_common import Checks, Work, clock_allowance, dpdk_tsc_khz

SPOOFED = [ipaddress.ip_network("198.19.0.0/20"), ipaddress.ip_network("2001:db8:66::/48")]
work, mode = sys.argv[1], sys.argv[2]
lab = Work(work)


def spoofed(src):
    a = ipaddress.ip_address(src)
    return any(a.version == n.version and a in n for n in SPOOFED)


def limit():
    """The aggregate rule's rate (per s), burst and reserve (percent), from the rules file."""
    config = lab.text("aggregate.yaml")
    m = re.search(r"limit:\s*\{\s*rate:\s*(\d+)/s,\s*burst:\s*(\d+)", config)
    r = re.search(r"reserve:\s*\{\s*established:\s*(\d+)%,\s*verified:\s*(\d+)%,\s*known:\s*(\d+)%", config)
    return int(m.group(1)), int(m.group(2)), tuple(int(x) for x in r.groups())


def tx_summary():
    summary, rates = {}, []
    for line in lab.text("tx.log").splitlines():
        if line.startswith("{"):
            summary = json.loads(line)
        elif line.startswith("tx ") and line.endswith(" pps"):
            rates.append(int(line.split()[1]))
    return summary, rates


def clock_ratio():
    """How much faster floodgate's clock may run than the real one (lab_common.tsc_ratio), from
    its log's TSC rate. (ratio, how it was found)."""
    return clock_allowance(dpdk_tsc_khz(lab.text("floodgate.log")))


stats = lab.load("stats.json", {}) or {}
times = lab.load("times.json", {}) or {}
watch = lab.load("watch.json", {}) or {}
first = (lab.load("first.json", {}) or {}).get("first_spoofed_syn") or {}
clients = (lab.load("clients.json", {}) or {}).get("clients", {})
client_plan = lab.load("clients.json", {}) or {}
new = lab.load("newclient.json", {}) or {}
addresses = times.get("addresses", {})
established_srcs = addresses.get("established", [])
new_src = addresses.get("new", "")
rate, burst, reserve = limit()
summary, rates = tx_summary()
rules = {r["name"]: r for r in stats.get("rules", [])}
rule = rules.get("web-total", {})

# Per destination (the rule's key): the spoofed SYNs that reached the server and, for the
# one toward its address, the new client's segments; the rule allows each destination
# rate x window + burst. The window holds every decision that let those through: from the
# flood's first frame at floodgate's outside veth (no spoofed SYN can be decided before it
# reached floodgate; the new client starts a second into the flood) to the last of them at the
# server's veth (none can be received before it was decided). Both are the kernel's receive
# times, one clock in every namespace. The established clients' segments are not counted:
# some of them were decided before the window.
flood, sources = watch.get("flood", {}), watch.get("sources", {})
newc = sources.get(new_src, {})
t0 = first.get("t")
ratio, ratio_how = clock_ratio()
per_dst = {}
for dst in list(addresses.get("servers", [])) + sorted(set(flood) - set(addresses.get("servers", []))):
    f = flood.get(dst, {})
    got = f.get("syns", 0) + f.get("others", 0)
    ends = [f.get("last_t")]
    if newc.get("destination") == dst:
        got += newc.get("syns", 0) + newc.get("others", 0)
        ends.append(newc.get("last_t"))
    ends = [t for t in ends if t]
    window = max(ends) - t0 if t0 and ends else None
    per_dst[dst] = {"counted": got, "spoofed_syns": f.get("syns", 0), "sources": f.get("sources", 0),
                    "window": window,
                    "allowance": rate * window * ratio + burst if window is not None else None}
spoofed_total = sum(f.get("syns", 0) + f.get("others", 0) for f in flood.values())
nic = {n["role"]: n for n in stats.get("nic", [])}
outside_rx = nic.get("outside", {}).get("rx_packets", 0)
b, a = lab.load("drops-before-host.json", {}) or {}, lab.load("drops-after-host.json", {}) or {}
outside_dev = next((d for d in a if d.endswith("-o")), None)
offered = a[outside_dev]["rx_packets"] - b.get(outside_dev, {}).get("rx_packets", 0) if outside_dev else None
seen_at_server = sum(f.get("syns", 0) + f.get("others", 0) for f in flood.values()) + sum(
    c["syns"] + c["others"] for c in sources.values())

print("=== aggregate lab ===")
print(f"rule web-total: TCP port 80, key dst, {rate:,}/s burst {burst:,}, reserve established "
      f"{reserve[0]}% verified {reserve[1]}% known {reserve[2]}% (new sources: "
      f"{burst * (100 - sum(reserve)) // 100:,} of the burst)")
print(f"spoofed SYN flood (floodgate-tx at {times.get('flood_pps', 0):,}/s): {summary.get('sent', 0):,} frames "
      f"in {summary.get('seconds', 0)} s, {summary.get('pps', 0):,.0f}/s (per second: "
      f"{', '.join(f'{r:,}' for r in rates)})")
if offered is not None:
    print(f"floodgate's outside veth took in {offered:,} frames while the receivers ran; floodgate's "
          f"outside port received {outside_rx:,} in all (lost in its ring: about "
          f"{max(offered - outside_rx, 0):,})")
for dst, d in per_dst.items():
    if d["allowance"] is None:
        print(f"toward {dst}: no flood window")
        continue
    print(f"toward {dst}: {d['spoofed_syns']:,} spoofed SYNs from {d['sources']:,} sources reached "
          f"the server, {d['counted']:,} counted with the new client's segments, in a window of "
          f"{d['window']:.3f} s; the aggregate allows {rate:,}/s x {d['window']:.3f} s x {ratio:.5f} + "
          f"{burst:,} = {d['allowance']:,.0f} ({d['counted'] / d['allowance']:.1%} used; "
          f"{d['counted'] / max(rate * d['window'], 1):.1%} of the rate alone)")
print(f"floodgate's clock: {ratio_how}")
print(f"new client {new_src}: {newc.get('syns', 0)} SYNs and {newc.get('others', 0)} other segments "
      f"reached the server; established clients: "
      + ", ".join(f"{s} {sources.get(s, {}).get('syns', 0) + sources.get(s, {}).get('others', 0)} segments"
                  for s in established_srcs)
      + f"; the server's receiver lost {watch.get('socket_dropped', '?')} frames")
for src in established_srcs:
    c = clients.get(src, {})
    rs = c.get("requests", [])
    lat = [r["seconds"] for r in rs if "seconds" in r]
    print(f"established client {src}: before the flood {'ok' if c.get('before') else 'FAILED'}; "
          f"during it {sum(r.get('ok', False) for r in rs)}/{len(rs)} requests ok on one connection "
          f"(port {c.get('local_port')}); latency median {statistics.median(lat or [0]) * 1000:.1f} ms, "
          f"max {max(lat or [0]) * 1000:.1f} ms"
          + "".join(f"; {r['error']}" for r in rs if r.get("error"))[:300])
print(f"new client {new_src}: {new.get('result', '?')} after {new.get('seconds', '?')} s"
      + (f" (connected in {new['connected_s']} s)" if "connected_s" in new else "")
      + f" (timeout {new.get('timeout', '?')} s; not asserted)")
if stats:
    print(f"floodgate: packets {stats['packets']:,}, passed {stats['passed']:,}, dropped "
          f"{stats['dropped']:,}, rate-limited {stats['rate_limited']:,}; established_marked "
          f"{stats.get('established_marked', 0):,}, established_full {stats.get('established_full', 0):,}")
    for r in stats["rules"]:
        print(f"  rule {r['name']}: matched {r['matched']:,}, passed {r['passed']:,}, refused "
              f"{r['refused']:,}, overruled {r['overruled']:,}; refused by class: "
              + ", ".join(f"{k} {r.get('refused_' + k, 0):,}" for k in ("established", "verified", "known", "new"))
              + "; from the reserve: "
              + ", ".join(f"{k} {r.get('reserve_' + k, 0):,}" for k in ("established", "verified", "known")))
    print(f"  segments to port 80 the server's veth saw: {seen_at_server:,} (rule web-total passed "
          f"{rule.get('passed', 0):,})")

if mode != "check":
    sys.exit(0)

print("=== checks ===")
check = Checks()


ex = times.get("exit", {})
check(all(v == 0 for v in ex.values()),
      "every part ran to its end: " + ", ".join(f"{k} exit {v}" for k, v in ex.items()))
check(t0 is not None and all(d["window"] for d in per_dst.values()) and watch.get("drained")
      and watch.get("socket_dropped") == 0,
      f"the receivers timed the flood (windows: "
      + ", ".join(f"{dst} {d['window'] or 0:.3f} s" for dst, d in per_dst.items())
      + f"), the server's stopped once the flood's last frames were through (drained: "
      f"{watch.get('drained')}) and lost none ({watch.get('socket_dropped')} dropped)")
count = client_plan.get("count", 0)
for src in established_srcs:
    c = clients.get(src, {})
    rs = c.get("requests", [])
    check(c.get("before") and len(rs) == count and count > 0 and all(r.get("ok") for r in rs),
          f"established client {src}: {sum(r.get('ok', False) for r in rs)} of {count} requests during "
          f"the flood succeeded, all on the connection opened before it")
for dst, d in per_dst.items():
    check(d["allowance"] is not None and d["counted"] <= d["allowance"],
          f"toward {dst} the flood was held to the aggregate cap: {d['counted']:,} SYNs (and new-client "
          f"segments) reached the server <= {rate:,}/s x {d['window'] or 0:.3f} s x {ratio:.5f} + burst "
          f"{burst:,} = {d['allowance'] or 0:,.0f}")
allowed = sum(d["allowance"] or 0 for d in per_dst.values())
check(summary.get("sent", 0) > allowed and spoofed_total < summary.get("sent", 0),
      f"the flood exceeded the caps and was refused: floodgate-tx sent {summary.get('sent', 0):,} "
      f"> {allowed:,.0f} allowed toward both addresses; {spoofed_total:,} reached the server")
if not stats:
    check(False, "floodgate wrote its stats")
    check.finish()
check(rule.get("refused_new", 0) > 0 and rule.get("refused_established", -1) == 0,
      f"rule web-total refused new sources ({rule.get('refused_new', 0):,}) and no established "
      f"one ({rule.get('refused_established', 0):,})")
check(rule.get("reserve_established", 0) > 0,
      f"the established clients' packets passed from their reserve: reserve_established "
      f"{rule.get('reserve_established', 0):,}")
check(stats.get("established_marked", 0) > 0,
      f"replies going out marked their destinations: established_marked "
      f"{stats.get('established_marked', 0):,} (established_full {stats.get('established_full', 0):,})")
for name, r in rules.items():
    check(r["matched"] == r["passed"] + r["refused"] + r["overruled"],
          f"rule {name}: matched {r['matched']:,} = passed {r['passed']:,} + refused {r['refused']:,} "
          f"+ overruled {r['overruled']:,}")
    by_class = [r.get("refused_" + k, 0) for k in ("established", "verified", "known", "new")]
    check(r["refused"] == sum(by_class),
          f"rule {name}: refused {r['refused']:,} = " + " + ".join(f"{v:,}" for v in by_class)
          + " (established, verified, known, new)")
check(stats["packets"] == stats["passed"] + stats["dropped"],
      f"packets {stats['packets']:,} = passed {stats['passed']:,} + dropped {stats['dropped']:,}")
check.finish()
