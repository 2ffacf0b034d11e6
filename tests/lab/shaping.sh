#!/usr/bin/env bash
# Lab test of shaping (action: shape) with a real UDP server: a burst that a rule's limit would
# refuse is held by floodgate and reaches the server at exactly the rule's rate.
#
#   tests/lab/shaping.sh BUILD_DIR [check|show]
#
# The wire (common.sh's make_wire): floodgate an L2 bump in the wire on net_af_packet, one
# worker, between an outside namespace (the sender, 198.18.1.10) and an inside one (the
# server, 198.18.1.1:5300, tests/lab/shaping.py serve: each datagram's sequence number and
# kernel receive time).
#
# The rule: UDP to port 5300, key dst (one key: the server), 100/s, burst 1, no trust-class
# reserve (so that the burst is 1 for every source), action shape. Three runs, each with its
# own floodgate and stats file; each time the sender (shaping.py burst) sends 1,000 datagrams,
# numbered, as fast as it can:
#   queue   queue: { packets: 1000 }: the first datagram passes at once and the 999 others are
#           held and sent 10 ms apart; the server gets all 1,000, in order, over 9.99 s;
#   small   queue: { packets: 100 }: about 100 are held, the rest dropped (shape_dropped); the
#           server gets exactly the rule's passed, and received + shape_dropped = 1,000;
#   stop    queue 1000 again, floodgate stopped (SIGTERM) about 1 s into the releases: what it
#           still held is dropped and counted (shape_flushed = delayed - shaped, held 0) and
#           the server got exactly shaped + 1.
# shaping_check.py then prints the figures and, in check mode (the default), asserts them (its
# docstring gives the margins). Exit status 0 when every check passed.
#
# As root; cleans up after itself, also on failure (namespaces, veths, processes, DPDK runtime
# directories). Only 198.18.0.0/15, in namespaces and veths the test creates and deletes,
# named for its process id. Ordinary memory (--no-huge). Every loop and wait is bounded; about
# 20 s in all.
set -euo pipefail
build="$(cd "$1" && pwd)"
mode="${2:-check}"
case "$mode" in check | show) ;; *) echo "shaping: mode $mode: check or show"; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
tag="fgs$$"
out_ns="$tag-out" in_ns="$tag-in"
work="$(mktemp -d /tmp/floodgate-shaping.XXXXXX)"

server4=198.18.1.1 sender4=198.18.1.10
port=5300
count=1000
rate=100

fg_pid="" server_pid="" sender_pid=""

# shellcheck source=tests/lab/common.sh
source "$here/common.sh"

cleanup() { lab_cleanup "$sender_pid" "$server_pid"; }
trap cleanup EXIT

tools=(python3 "$here/shaping.py")
offload_off=(python3 "$here/answers.py" offload-off)

wait_exit() {  # wait_exit PID SECONDS: bounded wait for PID to end; its status, 124 on timeout
  local deadline=$(( $(date +%s) + $2 ))
  while kill -0 "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124; fi
    sleep 0.05
  done
  local rc=0
  wait "$1" || rc=$?
  return "$rc"
}

rules() {  # rules PACKETS: the shape rule with a queue of PACKETS per key
  cat <<EOF
# tests/lab/shaping.sh: everything to the server's port shaped to 100/s, one key (the server).
rules:
  - name: shaped
    match: { proto: udp, dst_port: $port }
    key: dst
    limit: { rate: $rate/s, burst: 1 }
    reserve: { established: 0%, verified: 0%, known: 0% }
    action: shape
    queue: { packets: $1 }
EOF
}

# --- the wire: outside ns | tag-op -- tag-o | floodgate | tag-i -- tag-ip | inside ns -------
make_wire "$tag" "$out_ns" "$in_ns"
# Software checksums everywhere: net_af_packet forwards frames as the kernel hands them over
# (answers.py offload-off says why).
"${offload_off[@]}" "$tag-o" "$tag-i"
quiet_link "" "$tag-o"
quiet_link "" "$tag-i"
in_out ip link set lo up
in_out "${offload_off[@]}" "$tag-op"
in_out ip addr add "$sender4/24" dev "$tag-op"
quiet_link "$out_ns" "$tag-op"
in_in ip link set lo up
in_in "${offload_off[@]}" "$tag-ip"
in_in ip addr add "$server4/24" dev "$tag-ip"
quiet_link "$in_ns" "$tag-ip"

# --- floodgate --------------------------------------------------------------------------------
# The worker on CPU 1, the main lcore on CPU 0 with the sender and the server. 4096-frame
# receive rings (the whole burst fits even if the worker is descheduled while it comes), no
# control socket (another lab run may hold the default one). The default --shape-share (25%)
# gives the worker room for 1,898 held mbufs, more than the 999 the first run holds. EAL's
# debug log says at what rate floodgate's clock counts the TSC (shaping_check.py prints it).
cpu=$(( $(nproc) > 1 ? 1 : 0 ))
start_floodgate() {  # start_floodgate RUN: floodgate on RUN/rules.yaml; sets fg_pid
  "$build/dataplane/floodgate" run --lcores="0@0,1@$cpu" --no-huge --no-shconf -m 256 \
    --no-pci --file-prefix="$tag" '--log-level=*:error' --log-level=lib.eal:debug \
    --vdev="net_af_packet0,iface=$tag-o,qpairs=1,framecnt=4096" \
    --vdev="net_af_packet1,iface=$tag-i,qpairs=1,framecnt=4096" \
    -- --config "$work/$1/rules.yaml" --stats "$work/$1/stats.json" --control none \
    >"$work/$1/floodgate.log" 2>&1 &
  fg_pid=$!
  if ! wait_for "$work/$1/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
    wait "$fg_pid" 2>/dev/null || true
    fg_pid=""
    echo "shaping: floodgate did not start ($1)"
    exit 1
  fi
}

stop_floodgate() {  # stop_floodgate RUN: SIGTERM, up to 15 s to write its stats; exit status kept
  local rc=0
  kill -TERM "$fg_pid" 2>/dev/null || true
  wait_exit "$fg_pid" 15 || rc=$?
  fg_pid=""
  echo "$rc" >"$work/$1/floodgate.exit"
}

# run NAME PACKETS SERVER_SECONDS: floodgate with a queue of PACKETS, the server (stopping once
# it has all the datagrams, after 2 s without any, or after SERVER_SECONDS), a probe through
# floodgate (ARP resolved before the burst), then the burst. For the runs that let every
# release happen, the server is waited for, then floodgate stopped. The stop run goes on below.
run() {
  local name="$1"
  mkdir -p "$work/$name"
  rules "$2" >"$work/$name/rules.yaml"
  start_floodgate "$name"
  ip netns exec "$in_ns" "${tools[@]}" serve "$server4" "$port" "$3" "$count" 2 \
    "$work/$name/server.json" >"$work/$name/server.log" 2>&1 &
  server_pid=$!
  wait_for "$work/$name/server.log" "^ready" 10 "$server_pid"
  # A datagram to port 9 (no rule matches it) and the ICMP error back, through floodgate.
  if ! in_out python3 "$here/cluster.py" probe "$sender4" "$server4" >"$work/$name/probe.log" 2>&1; then
    echo "shaping: nothing came back from $server4 through floodgate ($name)"
    cat "$work/$name/probe.log" "$work/$name/floodgate.log"
    exit 1
  fi
  if ! in_out "${tools[@]}" burst "$sender4" "$server4" "$port" "$count" "$work/$name/sent.json" \
      >"$work/$name/sender.log" 2>&1; then
    echo "shaping: the sender failed ($name)"; cat "$work/$name/sender.log"; exit 1
  fi
}

finish() {  # finish NAME SECONDS: the server's end (bounded), then floodgate's
  local rc=0
  wait_exit "$server_pid" "$2" || rc=$?
  server_pid=""
  if [ "$rc" -ne 0 ]; then echo "shaping: the server failed ($1, $rc)"; cat "$work/$1/server.log"; exit 1; fi
  stop_floodgate "$1"
}

# --- run 1: a queue for the whole burst: 9.99 s of releases -------------------------------
run queue 1000 20
finish queue 25

# --- run 2: a queue of 100: the rest dropped ------------------------------------------------
run small 100 10
finish small 15

# --- run 3: floodgate stopped while it holds most of the burst -------------------------------
run stop 1000 15
wait_for "$work/stop/server.log" "^first" 5 "$server_pid"
sleep 1  # about 100 releases; any time in the 10 s would do
stop_floodgate stop
kill -USR1 "$server_pid" 2>/dev/null || true  # the last frames sent are in by 0.5 s of quiet
rc=0
wait_exit "$server_pid" 10 || rc=$?
server_pid=""
if [ "$rc" -ne 0 ]; then echo "shaping: the server failed (stop, $rc)"; cat "$work/stop/server.log"; exit 1; fi

python3 "$here/shaping_check.py" "$work" "$mode"
