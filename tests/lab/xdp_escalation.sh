#!/usr/bin/env bash
# Lab test of the XDP tier run by the dataplane (issue 12): floodgate on net_af_xdp with
# floodgate's XDP program (the PMD's xdp_prog) on its outside veth, its maps pinned in a BPF
# filesystem of the test's own. One source floods UDP port 53 (rule dns, 10/s, escalate after
# 1 s at 200 refused/s or more, for 8 s) while a client sends 5 datagrams a second:
#   1. the flood runs until `floodctl xdp list` shows its source escalated (a bounded wait);
#   2. with the entry there, 1,000 more flood frames: every one is dropped by the program
#      (escalated_hits grows by exactly 1,000, so none reaches the AF_XDP socket), and the
#      client's frames still pass;
#   3. after the TTL the entry is gone (a bounded wait) and 3 datagrams from the flooding
#      source pass the program again (passed grows by exactly 3).
# At the end every frame sent was seen by the program, every frame it passed reached the
# dataplane (rx + missed), and every client datagram reached the server. As root; cleans up
# after itself; only 198.18.0.0/15, in namespaces and veths created here. Skips (exit 77) where
# the kernel refuses AF_XDP or BPF.
#
#   tests/lab/xdp_escalation.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fge escalation
fg_pid="" recv_pid="" client_pid="" flood_pid="" ctl_pid=""
flood=198.18.66.6 client=198.18.1.19
ttl_s=8

mkdir -p "$work/bpffs"
mount -t bpf bpf "$work/bpffs"
export FLOODGATE_XDP_PIN_DIR="$work/bpffs/floodgate"
floodctl=("$build/control/floodctl")
send=(python3 "$here/escalation.py")

cleanup() { lab_cleanup "$recv_pid" "$client_pid" "$flood_pid"; }
trap cleanup EXIT

cat >"$work/rules.yaml" <<'YAML'
allow: [198.18.200.0/24]   # traffic.py's end marker
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
    escalate: { after: 1s, min_refused_rate: 200/s, ttl: 8s }
YAML

quiet_wire "$tag" "$out_ns" "$in_ns"

start_xdp_dataplane 512

# The control plane, as an operator uses it: a block override goes into the maps too.
start_daemon "$work" "$work/rules.yaml" || exit 1
"${ctl[@]}" block add 198.18.5.0/24 --ttl 1h
deadline=$(( $(date +%s) + 10 ))
until "${floodctl[@]}" xdp list | grep -qE "^198.18.5.0/24 +block +override"; do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "FAIL the override did not reach the XDP maps"; "${floodctl[@]}" xdp list; exit 1; fi
  sleep 0.1
done
"${floodctl[@]}" xdp list | tee "$work/list-before.txt"
grep -qE "^198.18.200.0/24 +allow +rules +never" "$work/list-before.txt" || {
  echo "FAIL the rules file's allow list is not in the XDP maps"; exit 1; }
echo "ok   the rules file's allow list and a block override are in the XDP maps"

ip netns exec "$in_ns" python3 "$here/traffic.py" receive "$tag-ip" "$work/received.json" 60 >"$work/receiver.log" &
recv_pid=$!
wait_for "$work/receiver.log" "^ready" 10 "$recv_pid"

xdp_counter() { "${floodctl[@]}" -j xdp stats | python3 -c "import json,sys; print(json.load(sys.stdin)['counters']['$1'])"; }
escalated() {  # prints the flood source's entry (origin escalated) if the maps hold it
  "${floodctl[@]}" -j xdp list | python3 -c "
import json, sys
for e in json.load(sys.stdin)['entries']:
    if e['prefix'] == '$flood/32' and e['origin'] == 'escalated': print(json.dumps(e))"
}

# The client, during phases 1 and 2: 5 datagrams a second, at most 60.
ip netns exec "$out_ns" "${send[@]}" send "$tag-op" "$client" 60 5 >"$work/client.json" &
client_pid=$!

# 1. Flood (2,000/s, at most 20 s) until escalated.
t0=$(date +%s.%N)
ip netns exec "$out_ns" "${send[@]}" send "$tag-op" "$flood" 40000 2000 >"$work/flood1.json" &
flood_pid=$!
deadline=$(( $(date +%s) + 15 ))
entry=""
until [ -n "$entry" ]; do
  entry=$(escalated)
  [ -n "$entry" ] && break
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "FAIL $flood was not escalated within 15 s"; cat "$work/floodgate.log"; exit 1; fi
  sleep 0.1
done
t1=$(date +%s.%N)
kill -TERM "$flood_pid"; wait "$flood_pid" || true; flood_pid=""
echo "escalated after $(python3 -c "print(f'{$t1 - $t0:.2f}')") s of flood: $entry"

# 2. The entry holds: 1,000 more flood frames, all dropped by the program.
hits_before=$(xdp_counter escalated_hits)
ip netns exec "$out_ns" "${send[@]}" send "$tag-op" "$flood" 1000 2000 >"$work/flood2.json"
hits_after=$(xdp_counter escalated_hits)
still=$(escalated)
wait "$client_pid" || true; client_pid=""

# 3. After the TTL, let out: the entry goes, and the source's datagrams pass the program.
deadline=$(( $(date +%s) + ttl_s + 10 ))
until [ -z "$(escalated)" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "FAIL the escalated entry outlived its TTL by 10 s"; exit 1; fi
  sleep 0.2
done
passed_before=$(xdp_counter passed)
ip netns exec "$out_ns" "${send[@]}" send "$tag-op" "$flood" 3 10 >"$work/flood3.json"
passed_after=$(xdp_counter passed)
ip netns exec "$out_ns" "${send[@]}" marker "$tag-op"
wait "$recv_pid" || true; recv_pid=""
"${floodctl[@]}" -j xdp stats >"$work/xdp.json"
"${ctl[@]}" stats | tee "$work/stats.txt"
grep -q "^xdp on $tag-o: " "$work/stats.txt" || { echo "FAIL floodctl stats does not show the XDP tier"; exit 1; }
# Removing the override removes its entry.
"${ctl[@]}" block del 198.18.5.0/24
deadline=$(( $(date +%s) + 10 ))
while "${floodctl[@]}" xdp list | grep -q "^198.18.5.0/24 "; do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "FAIL the removed override stayed in the XDP maps"; exit 1; fi
  sleep 0.1
done
echo "ok   a removed override leaves the XDP maps"
stop "$ctl_pid"; ctl_pid=""
stop "$fg_pid"; fg_pid=""

python3 - "$work" "$hits_before" "$hits_after" "$passed_before" "$passed_after" "$still" "$ttl_s" <<'PY'
import json, sys
work, hits_before, hits_after, passed_before, passed_after = sys.argv[1], *map(int, sys.argv[2:6])
still, ttl_s = sys.argv[6], int(sys.argv[7])
load = lambda name: json.load(open(f"{work}/{name}"))
client, f1, f2, f3 = (load(n)["sent"] for n in ("client.json", "flood1.json", "flood2.json", "flood3.json"))
got, stats, xdp = load("received.json"), load("stats.json"), load("xdp.json")["counters"]
esc = stats["xdp"]["escalations"]
rx = stats["ports"]["outside_to_inside"]["rx"]
missed = stats["nic"][0]["rx_missed"]
sent = client + f1 + f2 + f3 + 16  # and the end markers (traffic.MARKER_FLOWS)
checks = [
    (hits_after - hits_before == f2,
     f"with the entry there, all {f2} flood frames were dropped by the program "
     f"(escalated_hits +{hits_after - hits_before})"),
    (still != "", "the entry still held after them"),
    (passed_after - passed_before == f3 == 3,
     f"after its TTL the source is let out: {f3} datagrams, passed +{passed_after - passed_before}"),
    (esc["total"] == 1 and esc["expired"] == 1 and esc["failed"] == 0,
     f"escalations: {esc['total']} made, {esc['expired']} expired, {esc['failed']} failed"),
    (xdp["packets"] == sent, f"the program saw every frame sent: {xdp['packets']} of {sent}"),
    (xdp["packets"] == xdp["passed"] + xdp["unparsed"] + xdp["block_hits"] + xdp["escalated_hits"],
     "program counters add up: packets = passed + unparsed + block_hits + escalated_hits"),
    (rx + missed == xdp["passed"] + xdp["unparsed"],
     f"every frame the program passed reached the dataplane: rx {rx} + missed {missed} = "
     f"passed {xdp['passed']} + unparsed {xdp['unparsed']}"),
    (xdp["escalated_hits"] >= f2, f"escalated_hits {xdp['escalated_hits']} >= {f2}"),
    (got.get("198.18.1.19", 0) == client, f"the client's {client} datagrams all reached the server "
     f"({got.get('198.18.1.19', 0)})"),
    (got.get("198.18.66.6", 0) >= 3, f"the flood source's datagrams after its TTL reached the server "
     f"({got.get('198.18.66.6', 0)} of its frames passed in all)"),
]
failed = 0
for ok, what in checks:
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok
print(f"{failed} failed")
sys.exit(1 if failed else 0)
PY
