#!/usr/bin/env bash
# Lab test of an aggregate limit (issue 11) with real TCP clients: connections established
# before a distributed spoofed SYN flood keep working while the flood is held to the aggregate
# cap. The wire is answers.sh's: an outside namespace (the clients, and the flood sent raw by
# floodgate-tx), an inside one (a keep-alive HTTP/1.1 server, tests/lab/aggregate.py serve),
# and floodgate between them as an L2 bump in the wire on net_af_packet. One subnet across it:
# server 198.18.1.1/24 and 2001:db8:1::1/64 inside; clients 198.18.1.10, .11 and
# 2001:db8:1::10, and a new client 198.18.1.12, outside.
#
#   tests/lab/aggregate.sh BUILD_DIR [check|show]
#
# One run of floodgate (one worker) with an aggregate rule on TCP port 80 (key dst: the total
# toward each server address, 2,000/s, burst 1,000, with the default reserve):
#   1. the three clients each open one keep-alive connection and make a request (the server's
#      replies going out mark them established);
#   2. floodgate-tx replays floodgate-gen's syn-flood trace (spoofed SYNs from 198.19.0.0/20
#      and 2001:db8:66::/48) at flood_pps frames/s;
#   3. during the flood, each client makes client_rate requests a second for client_seconds
#      on its connection, and the new client (one the server never answered) tries to connect
#      and fetch the page once;
#   4. a raw receiver on the server's veth counts, per source, the TCP segments to port 80 that
#      got through, with the kernel's receive times of the spoofed SYNs; another, on
#      floodgate's outside veth, the receive time of the flood's first frame.
# aggregate_check.py then prints the run and, in check mode (the default), asserts it. As
# root; cleans up after itself, also on failure. Only 198.18.0.0/15 and 2001:db8::/32, in
# namespaces and veths the test creates and deletes. Every loop and wait is bounded.
set -euo pipefail
mode="${2:-check}"
case "$mode" in check | show) ;; *) echo "aggregate: mode $mode: check or show"; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fgg aggregate

# The lab's addresses; the spoofed sources and the server's addresses and MAC are those of
# floodgate-gen's syn-flood trace (perf/floodgate_gen.cpp).
server4=198.18.1.1 server6=2001:db8:1::1
client4=198.18.1.10 other4=198.18.1.11 client6=2001:db8:1::10 new4=198.18.1.12
server_mac=02:00:00:00:00:02 client_mac=02:00:00:00:01:10
# The flood: 75 times the aggregate's rate, and below what one worker on net_af_packet reads
# on a 2-core VM with the CPUs shared (answers.sh: about 230,000 frames/s with a busy loop on
# one core), so that the flood, not the receive ring, decides what is dropped.
flood_pps=150000
# The established clients' requests during the flood, per client.
client_rate=10 client_seconds=5
# The new client's connection attempt: its SYN and two retransmissions (at 1 s and 3 s).
new_timeout=6

fg_pid="" tx_pid="" watch_pid="" first_pid="" clients_pid="" new_pid="" server_pid=""

cleanup() { lab_cleanup "$watch_pid" "$first_pid" "$clients_pid" "$new_pid" "$server_pid"; }
trap cleanup EXIT

# Processes signalled later are started with ip netns exec itself (it execs the command), not
# through these functions: $! is then the process, not a subshell that would die of the signal.
tools=(python3 "$here/aggregate.py")
answers_tools=(python3 "$here/answers.py")  # drops

wait_exit() {  # wait_exit PID SECONDS: bounded wait for PID to end; its status, 124 on timeout
  local deadline=$(( $(date +%s) + $2 ))
  while kill -0 "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124; fi
    sleep 0.1
  done
  local rc=0
  wait "$1" || rc=$?
  return "$rc"
}
now() { date +%s.%N; }

# --- the rules ------------------------------------------------------------------------------
cat >"$work/aggregate.yaml" <<'EOF'
# tests/lab/aggregate.sh: the total toward each server address on port 80, whatever the
# source. The reserve is the default, written out: established sources may use the whole
# burst, new ones 40% of it.
established: { ttl: 10m }
rules:
  - name: web-total
    match: { proto: tcp, dst_port: 80 }
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 2000/s, burst: 1000 }
    reserve: { established: 30%, verified: 20%, known: 10% }
    action: drop
EOF

# --- the wire: outside ns | tag-op -- tag-o | floodgate | tag-i -- tag-ip | inside ns -------
make_wire "$tag" "$out_ns" "$in_ns"
floodgate_sides "$tag"
host_end "$out_ns" "$tag-op" "$client_mac" "$client4/24" "$other4/24" "$new4/24" "$client6/64"
host_end "$in_ns" "$tag-ip" "$server_mac" "$server4/24" "$server6/64"
# The server's SYN-ACKs to the spoofed sources that get through go back out through floodgate
# to the outside namespace, which does not forward them: a server on a network with a default
# route.
in_in ip route add default via "$client4"
in_in ip -6 route add default via "$client6"

# --- the server -----------------------------------------------------------------------------
ip netns exec "$in_ns" "${tools[@]}" serve 120 "$server4" "$server6" >"$work/server.log" 2>&1 &
server_pid=$!
wait_for "$work/server.log" "^ready" 10 "$server_pid"

"$build/perf/floodgate-gen" syn-flood --out "$work/syn.pcap" >/dev/null

# --- floodgate ------------------------------------------------------------------------------
# One worker (the main lcore, then the worker), 4096-frame receive rings (answers.sh), no
# control socket (another lab run may hold the default one). EAL's debug log says at what
# rate floodgate's clock counts the TSC (aggregate_check.py reads it).
# shellcheck disable=SC2046 # the memory options are words
"$build/dataplane/floodgate" run --lcores="0@0,1@$(( 1 % $(nproc) ))" $("$root/scripts/hugepages.sh" 512) \
  --no-pci --file-prefix="$tag" '--log-level=*:error' --log-level=lib.eal:debug \
  --vdev="net_af_packet0,iface=$tag-o,qpairs=1,framecnt=4096" \
  --vdev="net_af_packet1,iface=$tag-i,qpairs=1,framecnt=4096" \
  -- --config "$work/aggregate.yaml" --stats "$work/stats.json" --control none >"$work/floodgate.log" 2>&1 &
fg_pid=$!
if ! wait_for "$work/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
  wait "$fg_pid" 2>/dev/null || true
  fg_pid=""
  echo "aggregate: floodgate did not start"
  exit 1
fi

# --- the receivers, then the established clients ---------------------------------------------
"${tools[@]}" first "$tag-o" "$work/first.json" 90 >"$work/first.log" 2>&1 &
first_pid=$!
wait_for "$work/first.log" "^ready" 10 "$first_pid"
ip netns exec "$in_ns" "${tools[@]}" watch "$tag-ip" "$work/watch.json" 90 >"$work/watch.log" 2>&1 &
watch_pid=$!
wait_for "$work/watch.log" "^ready" 10 "$watch_pid"
"${answers_tools[@]}" drops "$work/drops-before-host.json" "$tag-o" "$tag-i"
ip netns exec "$out_ns" "${tools[@]}" clients "$work/clients.json" "$client_rate" "$client_seconds" \
  "$client4,$server4" "$other4,$server4" "$client6,$server6" >"$work/clients.log" 2>&1 &
clients_pid=$!
wait_for "$work/clients.log" "^ready" 30 "$clients_pid"

# --- the flood, and the clients during it ---------------------------------------------------
# The generator is niced: on a small machine it shares CPUs with floodgate, the clients and
# the server, which stand for other machines.
tx_launch=$(now)
# shellcheck disable=SC2046
ip netns exec "$out_ns" nice -n 10 "$build/perf/floodgate-tx" --lcores=0@0 $(tx_memory "$work/syn.pcap") \
  --no-pci --file-prefix="$tag-tx" --log-level=error \
  --vdev="net_af_packet0,iface=$tag-op,qpairs=1" \
  -- --pcap "$work/syn.pcap" --seconds 60 --wait-link 10 --pps "$flood_pps" >"$work/tx.log" 2>&1 &
tx_pid=$!
wait_for "$work/tx.log" "^tx " 20 "$tx_pid"  # sending, a second in
clients_go=$(now)
kill -USR1 "$clients_pid"
ip netns exec "$out_ns" "${tools[@]}" newclient "$new4" "$server4" "$new_timeout" "$work/newclient.json" \
  >"$work/newclient.log" 2>&1 &
new_pid=$!
clients_rc=0
wait_exit "$clients_pid" $(( client_seconds + 30 )) || clients_rc=$?
clients_pid=""
new_rc=0
wait_exit "$new_pid" $(( 2 * new_timeout + 5 )) || new_rc=$?
new_pid=""
clients_done=$(now)
stop "$tx_pid" || true
tx_pid=""
tx_stopped=$(now)
# The last frames through floodgate: the watcher stops once no spoofed SYN came for 0.5 s.
kill -USR1 "$watch_pid"
watch_rc=0
wait_exit "$watch_pid" 10 || watch_rc=$?
watch_pid=""
first_rc=0
wait_exit "$first_pid" 5 || first_rc=$?
first_pid=""
"${answers_tools[@]}" drops "$work/drops-after-host.json" "$tag-o" "$tag-i"
fg_rc=0
stop "$fg_pid" || fg_rc=$?
fg_pid=""

cat >"$work/times.json" <<EOF
{"tx_launch": $tx_launch, "clients_go": $clients_go, "clients_done": $clients_done,
 "tx_stopped": $tx_stopped, "flood_pps": $flood_pps,
 "exit": {"clients": $clients_rc, "newclient": $new_rc, "watch": $watch_rc, "first": $first_rc,
          "floodgate": $fg_rc},
 "addresses": {"established": ["$client4", "$other4", "$client6"], "new": "$new4",
               "servers": ["$server4", "$server6"]}}
EOF
python3 "$here/aggregate_check.py" "$work" "$mode"
