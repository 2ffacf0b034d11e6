#!/usr/bin/env bash
# Lab test of several boxes as one (issue 26) with real traffic: two `floodgate run` boxes, A
# and B, each an L2 bump in the wire on net_af_packet between its own outside namespace (a
# sender) and one inside namespace (the protected server), and their two `floodctl daemon`s
# sharing one limit through a redis-server this script starts on a free loopback port.
#
#   tests/lab/cluster.sh BUILD_DIR [check|show]
#
# The wire:
#
#   ns A: sender 198.18.1.10 | TAGa-op -- TAGa-o | box A | TAGa-i -- TAGa-ip |
#                                                                             | bridge, server
#   ns B: sender 198.18.1.11 | TAGb-op -- TAGb-o | box B | TAGb-i -- TAGb-ip |  198.18.1.1
#                                                                               (ns IN)
#
# Both boxes forward into one L2 segment (ARP passes them unjudged), so the server gets what
# the two pass together. The rule, the same on both boxes: UDP to port 5353, key dst (one key),
# 1000/s, burst 50, no reserve, `share: cluster` (sync every 100 ms, 2 boxes).
#
# Two runs, the same traffic each time: each sender sends 2,500 datagrams/s (several source
# ports, paced every millisecond) to 198.18.1.1:5353 for 8 s, both starting together, and the
# server (tests/lab/cluster.py serve) keeps each datagram's kernel receive time:
#   shared  the rule as above, the daemons running; the traffic starts once both dataplanes
#           say `joined` (floodctl status -j, within 20 s);
#   local   the dataplanes restarted on the same rule without `share` and no cluster
#           section (no daemons): what the pair passes unshared, for comparison.
# cluster_check.py then prints the runs and, in check mode (the default), asserts them: over
# the steady part of the sending (its first second left out), joined, the server receives at
# most docs/cluster.md's bound (worst excess over one GCRA of its receive times <= (N - 1)(b +
# ceil(L / T)) = 350, L = 3 sync intervals) and at least 0.8 x 1000/s; unshared, at least
# 1.6 x 1000/s. Exit status: 0 when every check passed; 77 (skipped) without redis-server.
#
# As root; cleans up after itself, also on failure (namespaces, veths, processes, DPDK runtime
# directories, Redis). Only 198.18.0.0/15, in namespaces and veths the test creates and
# deletes, named for its process id. Every loop and wait is bounded; about 30 s in all.
set -euo pipefail
build="$(cd "$1" && pwd)"
mode="${2:-check}"
case "$mode" in check | show) ;; *) echo "cluster: mode $mode: check or show"; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "cluster: redis-server and redis-cli are needed (scripts/lib.sh installs them): skipped"
  exit 77
fi
tag="fgc$$"
a_ns="$tag-a" b_ns="$tag-b" in_ns="$tag-in"
work="$(mktemp -d /tmp/floodgate-cluster.XXXXXX)"

server4=198.18.1.1 a4=198.18.1.10 b4=198.18.1.11
server_port=5353
# The offered load: each sender 2.5 x the limit, so that each box alone would pass the whole
# limit and the pair unshared twice it; modest, for a 2-core machine.
send_pps=2500 send_seconds=8
sync_ms=100
join_deadline_s=20

fg_a="" fg_b="" ctl_a="" ctl_b="" redis_pid="" server_pid="" send_a="" send_b=""

# shellcheck source=tests/lab/common.sh
source "$here/common.sh"

cleanup() {
  set +e
  local pid
  for pid in "$send_a" "$send_b" "$server_pid"; do
    [ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  done
  for pid in "$ctl_a" "$ctl_b" "$fg_a" "$fg_b"; do [ -n "$pid" ] && stop "$pid"; done
  [ -n "$redis_pid" ] && { kill -KILL "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; }
  ip netns del "$a_ns" 2>/dev/null
  ip netns del "$b_ns" 2>/dev/null
  ip netns del "$in_ns" 2>/dev/null
  for dev in "${tag}a-o" "${tag}a-i" "${tag}b-o" "${tag}b-i"; do
    ip link del "$dev" 2>/dev/null
  done
  rm -rf "/var/run/dpdk/${tag}a" "/var/run/dpdk/${tag}b"
  if [ -n "${FG_LAB_KEEP:-}" ]; then echo "cluster: kept $work"; else rm -rf "$work"; fi
  return 0
}
trap cleanup EXIT

tools=(python3 "$here/cluster.py")
offload_off=(python3 "$here/answers.py" offload-off)
now() { date +%s.%N; }

# --- the rules: shared, then the same rule alone on each box ----------------------------------
redis_port=$("${tools[@]}" free-port)
rule() {  # rule SHARE: the rule, with SHARE as its last line
  cat <<EOF
rules:
  - name: to_server
    match: { proto: udp, dst_port: $server_port }
    key: dst
    limit: { rate: 1000/s, burst: 50 }
    reserve: { established: 0%, verified: 0%, known: 0% }
$1
EOF
}
{
  echo "cluster: { name: lab, redis: \"127.0.0.1:$redis_port\", sync_ms: $sync_ms, boxes: 2 }"
  rule "    share: cluster"
} >"$work/shared.yaml"
rule "" >"$work/local.yaml"

# --- the wire ---------------------------------------------------------------------------------
ip netns add "$a_ns"
ip netns add "$b_ns"
ip netns add "$in_ns"
ip netns exec "$in_ns" ip link set lo up
ip netns exec "$in_ns" ip link add br0 type bridge
quiet_link "$in_ns" br0
ip netns exec "$in_ns" ip addr add "$server4/24" dev br0
for box in a b; do
  ns="$tag-$box" t="$tag$box"
  ip link add "$t-o" type veth peer name "$t-op"
  ip link add "$t-i" type veth peer name "$t-ip"
  ip link set "$t-op" netns "$ns"
  ip link set "$t-ip" netns "$in_ns"
  # Software checksums everywhere: net_af_packet forwards frames as the kernel hands them over
  # (answers.py offload-off says why).
  "${offload_off[@]}" "$t-o" "$t-i"
  quiet_link "" "$t-o"
  quiet_link "" "$t-i"
  ip netns exec "$ns" "${offload_off[@]}" "$t-op"
  ip netns exec "$ns" ip link set lo up
  quiet_link "$ns" "$t-op"
  ip netns exec "$in_ns" "${offload_off[@]}" "$t-ip"
  ip netns exec "$in_ns" ip link set "$t-ip" master br0
  quiet_link "$in_ns" "$t-ip"
done
ip netns exec "$a_ns" ip addr add "$a4/24" dev "${tag}a-op"
ip netns exec "$b_ns" ip addr add "$b4/24" dev "${tag}b-op"

# --- Redis --------------------------------------------------------------------------------------
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$work" >"$work/redis.log" 2>&1 &
redis_pid=$!
deadline=$(( $(date +%s) + 15 ))
until [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]; do
  if [ "$(date +%s)" -ge "$deadline" ] || ! kill -0 "$redis_pid" 2>/dev/null; then
    echo "cluster: redis-server did not answer on port $redis_port"; cat "$work/redis.log"; exit 1
  fi
  sleep 0.1
done

# --- the boxes ----------------------------------------------------------------------------------
# Both workers time-share CPU 1, leaving CPU 0 to the main lcores, the daemons, Redis, the
# senders and the server on a 2-core machine (tests/control/test_cluster.py does the same).
# Ordinary memory (--no-huge): two dataplanes, and no hugepages taken from a lab run beside
# this one. EAL's debug log says at what rate floodgate's clock counts the TSC
# (cluster_check.py reads it).
cpu=$(( $(nproc) > 1 ? 1 : 0 ))
start_box() {  # start_box a|b RULES RUN: floodgate on the box's veths; sets fg_a or fg_b
  local t="$tag$1" pid
  "$build/dataplane/floodgate" run --lcores="0@0,1@$cpu" --no-huge --no-shconf -m 256 \
    --no-pci --file-prefix="$t" '--log-level=*:error' --log-level=lib.eal:debug \
    --vdev="net_af_packet0,iface=$t-o,qpairs=1" --vdev="net_af_packet1,iface=$t-i,qpairs=1" \
    -- --config "$2" --stats "$work/$3/stats-$1.json" --control "$work/dataplane-$1.sock" \
    >"$work/$3/floodgate-$1.log" 2>&1 &
  pid=$!
  if [ "$1" = a ]; then fg_a=$pid; else fg_b=$pid; fi
  wait_for "$work/$3/floodgate-$1.log" "^floodgate: " 30 "$pid"
}
stop_boxes() {  # stop_boxes RUN: both dataplanes, their exit status kept
  local rc=0
  stop "$fg_a" || rc=$?
  echo "$rc" >"$work/$1/exit-a"
  fg_a=""
  rc=0
  stop "$fg_b" || rc=$?
  echo "$rc" >"$work/$1/exit-b"
  fg_b=""
}

# probe_through RUN: a datagram from each sender to the server's port 9 and the ICMP error
# back, through its box (ARP resolved on the way, before the traffic).
probe_through() {
  local box src
  for box in a b; do
    src=$([ "$box" = a ] && echo "$a4" || echo "$b4")
    if ! ip netns exec "$tag-$box" "${tools[@]}" probe "$src" "$server4" \
        >>"$work/$1/probe.log" 2>&1; then
      echo "cluster: nothing came back from $server4 to $src through box $box"
      cat "$work/$1/probe.log"
      exit 1
    fi
  done
}

# traffic RUN: the server, then both senders from the same instant, for send_seconds; the
# server stopped once the last datagrams are in.
traffic() {
  ip netns exec "$in_ns" "${tools[@]}" serve "$server4" "$server_port" 40 "$work/$1/server.json" \
    >"$work/$1/server.log" 2>&1 &
  server_pid=$!
  wait_for "$work/$1/server.log" "^ready" 10 "$server_pid"
  local start
  start=$(python3 -c 'import time; print(f"{time.time() + 0.5:.3f}")')
  ip netns exec "$a_ns" "${tools[@]}" send "$a4" "$server4" "$server_port" "$send_pps" \
    "$send_seconds" "$start" "$work/$1/sent-a.json" >"$work/$1/send-a.log" 2>&1 &
  send_a=$!
  ip netns exec "$b_ns" "${tools[@]}" send "$b4" "$server4" "$server_port" "$send_pps" \
    "$send_seconds" "$start" "$work/$1/sent-b.json" >"$work/$1/send-b.log" 2>&1 &
  send_b=$!
  local rc=0
  wait "$send_a" || rc=$?
  send_a=""
  wait "$send_b" || rc=$?
  send_b=""
  kill -USR1 "$server_pid"
  wait "$server_pid" || rc=$?
  server_pid=""
  if [ "$rc" -ne 0 ]; then
    echo "cluster: a sender or the server failed"; cat "$work/$1"/send-?.log "$work/$1/server.log"
    exit 1
  fi
}

# status BOX OUT: the daemon's floodctl status -j
status() {
  "$build/control/floodctl" --socket "$work/floodctl-$1.sock" -j status >"$2" 2>/dev/null || true
}

# --- run 1: shared ---------------------------------------------------------------------------
mkdir -p "$work/shared" "$work/local"
# The cluster key both daemons sign and check entries with (without one they do not sync).
(umask 077 && echo "lab $(openssl rand -hex 32)" >"$work/cluster.key")
start_box a "$work/shared.yaml" shared
start_box b "$work/shared.yaml" shared
for box in a b; do
  "$build/control/floodctl" --socket "$work/floodctl-$box.sock" daemon \
    --dataplane "$work/dataplane-$box.sock" --box "${box^^}" --metrics none \
    --cluster-key-file "$work/cluster.key" \
    >"$work/shared/daemon-$box.log" 2>&1 &
  if [ "$box" = a ]; then ctl_a=$!; else ctl_b=$!; fi
done
probe_through shared
daemons_started=$(now)
deadline=$(( $(date +%s) + join_deadline_s ))
until [ "$("${tools[@]}" state "$build/control/floodctl" "$work/floodctl-a.sock")" = joined ] &&
      [ "$("${tools[@]}" state "$build/control/floodctl" "$work/floodctl-b.sock")" = joined ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "cluster: the boxes did not both join within $join_deadline_s s"
    for box in a b; do
      "$build/control/floodctl" --socket "$work/floodctl-$box.sock" status || true
      tail -n 20 "$work/shared/daemon-$box.log" "$work/shared/floodgate-$box.log"
    done
    exit 1
  fi
  for pid in "$ctl_a" "$ctl_b" "$fg_a" "$fg_b" "$redis_pid"; do
    kill -0 "$pid" 2>/dev/null || { echo "cluster: process $pid exited before the join"; exit 1; }
  done
  sleep 0.2
done
joined=$(now)
for box in a b; do status "$box" "$work/shared/status-before-$box.json"; done
traffic shared
for box in a b; do status "$box" "$work/shared/status-after-$box.json"; done
stop "$ctl_a" || true
ctl_a=""
stop "$ctl_b" || true
ctl_b=""
stop_boxes shared

# --- run 2: the same rule on each box alone --------------------------------------------------
start_box a "$work/local.yaml" local
start_box b "$work/local.yaml" local
probe_through local
traffic local
stop_boxes local

cat >"$work/times.json" <<EOF
{"daemons_started": $daemons_started, "joined": $joined, "sync_ms": $sync_ms,
 "send_pps": $send_pps, "send_seconds": $send_seconds,
 "senders": {"A": "$a4", "B": "$b4"}}
EOF
python3 "$here/cluster_check.py" "$work" "$mode"
