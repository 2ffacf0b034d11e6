#!/usr/bin/env bash
# Lab test with real traffic: an outside namespace (clients and attackers) and an inside one
# (the server), joined to floodgate by two veth pairs; floodgate runs on them with
# net_af_packet. Asserts what reaches the server and that floodgate's counters add up.
#
#   tests/lab/lab.sh BUILD_DIR WORKERS      (as root; cleans up after itself, also on failure)
#
# Addresses: 198.18.0.0/15 and 2001:db8::/32 only, in frames sent raw on the test's own veths.
set -euo pipefail
build="$(cd "$1" && pwd)"
workers="${2:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tag="fgl$$"
out_ns="$tag-out" in_ns="$tag-in"
work="$(mktemp -d /tmp/floodgate-lab.XXXXXX)"
fg_pid=""

cleanup() {
  [ -n "$fg_pid" ] && kill -INT "$fg_pid" 2>/dev/null && wait "$fg_pid" 2>/dev/null || true
  ip netns del "$out_ns" 2>/dev/null || true
  ip netns del "$in_ns" 2>/dev/null || true
  ip link del "$tag-o" 2>/dev/null || true
  ip link del "$tag-i" 2>/dev/null || true
  rm -rf "/var/run/dpdk/$tag" "$work"
}
trap cleanup EXIT

quiet_link() {  # up, no IPv6 (no router solicitations or ND among the test's frames)
  local ns="$1" dev="$2" run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  "${run[@]}" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$dev/disable_ipv6"
  "${run[@]}" ip link set "$dev" up
}

ip netns add "$out_ns"
ip netns add "$in_ns"
ip link add "$tag-o" type veth peer name "$tag-op"
ip link add "$tag-i" type veth peer name "$tag-ip"
ip link set "$tag-op" netns "$out_ns"
ip link set "$tag-ip" netns "$in_ns"
quiet_link "" "$tag-o"
quiet_link "" "$tag-i"
quiet_link "$out_ns" "$tag-op"
quiet_link "$in_ns" "$tag-ip"

"$build/perf/floodgate-gen" lab --out "$work/lab.pcap" >/dev/null

# floodgate between the two: lcore 0 is the main lcore, then one lcore per worker (they may
# share a CPU on a small machine).
lcores="0@0"
for w in $(seq 1 "$workers"); do lcores="$lcores,$w@$(( w % $(nproc) ))"; done
"$build/dataplane/floodgate" run --lcores="$lcores" --no-huge -m 512 --no-pci --no-shconf \
  --file-prefix="$tag" --log-level=error \
  --vdev="net_af_packet0,iface=$tag-o,qpairs=$workers" \
  --vdev="net_af_packet1,iface=$tag-i,qpairs=$workers" \
  -- --config "$root/config/default.yaml" --stats "$work/stats.json" >"$work/floodgate.log" 2>&1 &
fg_pid=$!

wait_for() {  # wait_for FILE PATTERN SECONDS: bounded wait for a line a process prints
  local deadline=$(( $(date +%s) + $3 ))
  until grep -q "$2" "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "lab: timed out waiting for '$2' in $1"; cat "$1"; return 1; fi
    kill -0 "$fg_pid" 2>/dev/null || { echo "lab: floodgate exited"; cat "$work/floodgate.log"; return 1; }
    sleep 0.1
  done
}
wait_for "$work/floodgate.log" "^floodgate: " 30

ip netns exec "$in_ns" python3 "$here/traffic.py" receive "$tag-ip" "$work/received.json" 30 >"$work/receiver.log" &
recv_pid=$!
wait_for "$work/receiver.log" "^ready" 10
ip netns exec "$out_ns" python3 "$here/traffic.py" send "$tag-op" "$work/lab.pcap" >"$work/sent.json"
wait "$recv_pid"
kill -INT "$fg_pid"
wait "$fg_pid" || true
fg_pid=""

python3 "$here/check.py" "$work/sent.json" "$work/received.json" "$work/stats.json" "$workers"
