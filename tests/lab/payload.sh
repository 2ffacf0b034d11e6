#!/usr/bin/env bash
# Lab test of a payload rule (issue 13) with real DNS: dnsmasq in an inside namespace, dig and a
# water-torture flood (a new name under victim.example each query, tests/lab/answers.py
# dnsflood) in an outside one, floodgate between them on net_af_packet with one rule that
# matches the flood by its query names (dns_suffix) and limits it as a whole, loaded into the
# running dataplane by floodctl (its compiled patterns carried by the load request). While the flood
# runs, dig asks for another name five times: every answer arrives. Checked: the rule matched
# every flood query and none of dig's, passed no more than its burst and rate allow, and
# dnsmasq saw exactly the flood queries floodgate passed. As root; cleans up after itself; only
# 198.18.0.0/15, in namespaces and veths created here.
#
#   tests/lab/payload.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fgw payload
fg_pid="" dns_pid="" flood_pid="" ctl_pid=""
server=198.18.1.1 client=198.18.1.10 flooder=198.18.1.11
flood_rate=500 flood_seconds=4

cleanup() { lab_cleanup "$flood_pid" "$dns_pid"; }
trap cleanup EXIT
tools=(python3 "$here/answers.py")  # offload-off, dnsflood

# floodgate starts without the rule; floodctl loads it into the running dataplane (the
# compiled patterns travel with the load request).
printf 'rules: []\n' >"$work/empty.yaml"
cat >"$work/rules.yaml" <<'YAML'
rules:
  # Any query for a name under victim.example, whoever sends it: 5/s in all.
  - name: water-torture
    match:
      proto: udp
      dst_port: 53
      payload: { patterns: [{ dns_suffix: victim.example }], offset: 12 }
    key: none
    reserve: { established: 0%, verified: 0%, known: 0% }
    limit: { rate: 5/s, burst: 5 }
YAML

make_wire "$tag" "$out_ns" "$in_ns"
for dev in "$tag-o" "$tag-i"; do quiet_link "" "$dev"; "${tools[@]}" offload-off "$dev"; done
quiet_link "$out_ns" "$tag-op"
quiet_link "$in_ns" "$tag-ip"
in_out ip link set lo up
in_in ip link set lo up
in_out ip addr add "$client/24" dev "$tag-op"
in_out ip addr add "$flooder/24" dev "$tag-op"
in_in ip addr add "$server/24" dev "$tag-ip"
in_out "${tools[@]}" offload-off "$tag-op"
in_in "${tools[@]}" offload-off "$tag-ip"

ip netns exec "$in_ns" dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts \
  --bind-interfaces --listen-address="$server" --host-record=www.lab.test,198.18.1.80 \
  --address=/victim.example/198.18.1.99 --log-queries --log-facility="$work/dnsmasq.log" \
  --pid-file="$work/dnsmasq.pid" >"$work/dnsmasq.out" 2>&1 &
dns_pid=$!

# shellcheck disable=SC2046 # the memory options are words
"$build/dataplane/floodgate" run --lcores=0@0,1@$(( 1 % $(nproc) )) $("$root/scripts/hugepages.sh" 512) \
  --no-pci --file-prefix="$tag" --log-level=error \
  "--vdev=net_af_packet0,iface=$tag-o,qpairs=1,framecnt=4096" \
  "--vdev=net_af_packet1,iface=$tag-i,qpairs=1,framecnt=4096" \
  -- --config "$work/empty.yaml" --stats "$work/stats.json" --control "$work/dataplane.sock" \
  >"$work/floodgate.log" 2>&1 &
fg_pid=$!
wait_for "$work/floodgate.log" "^floodgate: " 30 "$fg_pid"
start_daemon "$work" "$work/empty.yaml" || exit 1
"${ctl[@]}" -j rules load "$work/rules.yaml" >"$work/load.json"

ask() {  # ask NAME OUT: dig from the client, one try of 2 s
  in_out dig -b "$client" "@$server" "$1" A +time=2 +tries=1 +short >"$2" 2>&1 || true
}
# ARP through floodgate and dnsmasq up: bounded retries of one query before anything counts.
deadline=$(( $(date +%s) + 20 ))
until ask www.lab.test "$work/warm.txt" && grep -qx 198.18.1.80 "$work/warm.txt"; do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "payload: no answer from dnsmasq"; cat "$work"/*.log "$work/warm.txt"; exit 1; fi
  sleep 0.2
done

t0=$(date +%s.%N)
ip netns exec "$out_ns" "${tools[@]}" dnsflood "$flooder" "$server" "$flood_rate" "$flood_seconds" \
  "$work/flood.json" victim.example >"$work/flood.log" 2>&1 &
flood_pid=$!
wait_for "$work/flood.log" "over the limit" 10 "$flood_pid"
for i in 1 2 3 4 5; do ask www.lab.test "$work/dig$i.txt"; done
ask x1.victim.example "$work/dig-victim.txt"  # reported, not asserted: the flood's bucket
wait "$flood_pid" || true; flood_pid=""
t1=$(date +%s.%N)
stop "$ctl_pid"; ctl_pid=""
stop "$fg_pid"; fg_pid=""
kill -TERM "$dns_pid" 2>/dev/null; wait "$dns_pid" 2>/dev/null || true; dns_pid=""

python3 - "$work" "$t0" "$t1" <<'PY'
import glob, json, re, sys
work, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
stats, flood = json.load(open(f"{work}/stats.json")), json.load(open(f"{work}/flood.json"))
rule = next(r for r in stats["rules"] if r["name"] == "water-torture")
digs = [open(f"{work}/dig{i}.txt").read().split() for i in range(1, 6)]
log = open(f"{work}/dnsmasq.log").read()
victim_seen = len(re.findall(r"query\[A\] \S*victim\.example from", log))
other_seen = len(re.findall(r"query\[A\] www\.lab\.test from 198\.18\.1\.10", log))
victim_dig = open(f"{work}/dig-victim.txt").read().split()
load = json.load(open(f"{work}/load.json"))
bound = 5 + int((t1 - t0 + 1) * 5)  # burst + rate x the flood's time, and a second
checks = [
    (load.get("ok") and load["payload_databases"] == {"precompiled": 1, "compiled_here": 0},
     f"floodctl rules load: the dataplane took the compiled patterns ({load.get('payload_databases')})"),
    (all(d == ["198.18.1.80"] for d in digs), f"dig for www.lab.test during the flood: {sum(d == ['198.18.1.80'] for d in digs)} of 5 answered"),
    (rule["matched"] == flood["sent"] + 1, f"the rule matched every flood query and the victim dig ({rule['matched']} = {flood['sent']} + 1), none of the other digs"),
    (rule["refused"] > 0 and rule["passed"] <= bound, f"passed {rule['passed']} <= {bound} (burst 5 + 5/s over {t1 - t0:.1f} s + 1 s), refused {rule['refused']}"),
    (victim_seen == rule["passed"], f"dnsmasq saw exactly the flood queries floodgate passed: {victim_seen} = {rule['passed']}"),
    (other_seen >= 6, f"dnsmasq saw the client's queries for www.lab.test ({other_seen}, warm-up included)"),
    (stats["packets"] == stats["passed"] + stats["dropped"], "floodgate's counters add up: packets = passed + dropped"),
]
print(f"info the dig for x1.victim.example during the flood: {'answered' if victim_dig == ['198.18.1.99'] else 'no answer'}")
failed = 0
for ok, what in checks:
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok
print(f"{failed} failed")
sys.exit(1 if failed else 0)
PY
