#!/usr/bin/env bash
# Lab test with real traffic: an outside namespace (clients and attackers) and an inside one
# (the server), joined to floodgate by two veth pairs; floodgate runs on them with
# net_af_packet. Asserts what reaches the server and that floodgate's counters add up.
#
#   tests/lab/lab.sh BUILD_DIR WORKERS [check|show] [af_packet|af_xdp]
#
# As root; cleans up after itself, also on failure. With af_xdp, exits 77 (skipped) when the
# kernel does not let DPDK open AF_XDP sockets on the veths.
#
# check (the default) asserts; show prints what reached the server and floodgate's counters,
# with `floodctl daemon` attached to the running dataplane to show `floodctl status` and `top`.
#
# Addresses: 198.18.0.0/15 and 2001:db8::/32 only, in frames sent raw on the test's own veths.
set -euo pipefail
workers="${2:-1}"
mode="${3:-check}"
pmd="${4:-af_packet}"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fgl lab
fg_pid=""
recv_pid=""
ctl_pid=""

cleanup() { lab_cleanup "$recv_pid"; }
trap cleanup EXIT

quiet_wire "$tag" "$out_ns" "$in_ns" "$workers"  # one queue pair per worker

"$build/perf/floodgate-gen" lab --out "$work/lab.pcap" >/dev/null

port_args() {  # port_args INDEX IFACE: the --vdev for one side
  if [ "$pmd" = af_xdp ]; then
    echo "--vdev=net_af_xdp$1,iface=$2,start_queue=0,queue_count=$workers"
  else
    echo "--vdev=net_af_packet$1,iface=$2,qpairs=$workers"
  fi
}

# floodgate between the two: lcore 0 is the main lcore, then one lcore per worker (they may
# share a CPU on a small machine).
lcores="0@0"
for w in $(seq 1 "$workers"); do lcores="$lcores,$w@$(( w % $(nproc) ))"; done
# shellcheck disable=SC2046 # the memory options are words
"$build/dataplane/floodgate" run --lcores="$lcores" $("$root/scripts/hugepages.sh" 512) --no-pci \
  --file-prefix="$tag" --log-level=error \
  $(port_args 0 "$tag-o") $(port_args 1 "$tag-i") \
  -- --config "$root/config/default.yaml" --stats "$work/stats.json" \
  --control "$work/dataplane.sock" >"$work/floodgate.log" 2>&1 &
fg_pid=$!

wait_for() {  # wait_for FILE PATTERN SECONDS: bounded wait for a line a process prints
  local deadline=$(( $(date +%s) + $3 ))
  until grep -q "$2" "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "lab: timed out waiting for '$2' in $1"; cat "$1"; return 1; fi
    if ! kill -0 "$fg_pid" 2>/dev/null; then
      echo "lab: floodgate exited"; cat "$work/floodgate.log"
      [ "$pmd" = af_xdp ] && { echo "lab: AF_XDP is not available here: skipped"; exit 77; }
      return 1
    fi
    sleep 0.1
  done
}
wait_for "$work/floodgate.log" "^floodgate: " 30

if [ "$mode" = show ]; then
  # The control plane, as an operator would use it on the running dataplane: the live view
  # during the flood, then status and the top refused sources.
  ctl=("$build/control/floodctl" --socket "$work/floodctl.sock")
  "${ctl[@]}" daemon --config "$root/config/default.yaml" --dataplane "$work/dataplane.sock" \
    --metrics 127.0.0.1:0 >"$work/floodctl.log" 2>&1 &
  ctl_pid=$!
  deadline=$(( $(date +%s) + 10 ))
  until "${ctl[@]}" status >/dev/null 2>&1 || [ "$(date +%s)" -ge "$deadline" ]; do sleep 0.1; done
fi
ip netns exec "$in_ns" python3 "$here/traffic.py" receive "$tag-ip" "$work/received.json" 30 >"$work/receiver.log" &
recv_pid=$!
wait_for "$work/receiver.log" "^ready" 10
watch_pid=""
if [ "$mode" = show ]; then
  # Piped, watch prints its frames as plain lines; --count bounds it (the flood lasts 3 s).
  echo "\$ floodctl watch --interval 1 --count 3"
  "${ctl[@]}" watch --interval 1 --count 3 | cat &
  watch_pid=$!
fi
ip netns exec "$out_ns" python3 "$here/traffic.py" send "$tag-op" "$work/lab.pcap" >"$work/sent.json"
wait "$recv_pid"
recv_pid=""
if [ "$mode" = show ]; then
  wait "$watch_pid" || true
  echo "\$ floodctl status"; "${ctl[@]}" status || true
  echo "\$ floodctl top -n 3"; "${ctl[@]}" top -n 3 || true
  stop "$ctl_pid"
  ctl_pid=""
fi
fg_rc=0
stop "$fg_pid" || fg_rc=$?
fg_pid=""
if [ "$fg_rc" -ne 0 ]; then echo "lab: floodgate exited with $fg_rc after SIGINT"; cat "$work/floodgate.log"; exit 1; fi

if [ "$mode" = show ]; then
  python3 - "$work/sent.json" "$work/received.json" <<'PY'
import json, sys
sent, got = (json.load(open(p)) for p in sys.argv[1:3])
print(f"sent {sent['sent']} frames in {sent['seconds']} s from the outside namespace; the server received:")
groups = {"10 well-behaved clients (198.18.1.10-19)": lambda s: s.startswith("198.18.1."),
          "DNS flood from 198.18.66.6": lambda s: s == "198.18.66.6",
          "spoofed SYN flood from 198.19.0.0/16 (syn-auth: answered by floodgate)": lambda s: s.startswith("198.19."),
          "IPv6 flood rotating in 2001:db8:66:1::/64": lambda s: s.startswith("2001:db8:66:1:"),
          "ICMP flood from 198.18.77.7": lambda s: s == "198.18.77.7"}
for name, match in groups.items():
    print(f"  {sum(n for s, n in got.items() if match(s)):6d}  {name}")
PY
  echo "floodgate's counters:"
  sed -n '/^packets /,$p' "$work/floodgate.log"
  exit 0
fi
python3 "$here/check.py" "$work/sent.json" "$work/received.json" "$work/stats.json" "$workers"
