#!/usr/bin/env bash
# Lab test of syn-proxy when things go wrong, with exact counts: an outside namespace (kernel
# clients on addresses it owns, raw clients on addresses it does not, read and written with
# AF_PACKET) and an inside one (a server on 198.18.1.1:80 and [2001:db8:1::1]:80, nothing on
# port 81, nobody at 198.18.1.2), joined through floodgate on net_af_packet with one worker.
# One subnet across it, static neighbour entries both ways (for the raw clients' addresses and
# the silent one too), so that no ARP or ND is needed and every frame goes where it is aimed.
#
#   tests/lab/syn_proxy_faults.sh BUILD_DIR [CASE...]
#
# The rule: match { tcp_flags: "syn !ack", dst_port: [80, 81] }, action syn-proxy. One floodgate
# run per case (its own table settings, counters from zero, no source verified yet):
#   refused  three IPv4 and one IPv6 kernel client connect to port 81, where nothing listens:
#            floodgate completes each handshake, the server's RST to floodgate's SYN reaches
#            each client as its connection's RST (sequence number the cookie + 1: the socket
#            takes it; ECONNRESET, not ECONNREFUSED, since its handshake had completed, from
#            connect() itself when the RST beats the thread back); proxy_server_refused = 4,
#            none established; the failed connections expire one proxy_server_timeout (1 s) later.
#   slow     four kernel clients connect to 198.18.1.2, which nothing answers (proxy_server_timeout
#            1s): two send their request at once (held, then freed at the timeout; the kernel's
#            retransmission after it is answered with a RST), two once the stats show the
#            timeouts; each socket gets ECONNRESET. A raw client (198.18.1.22) sends 6 segments
#            at once (4 held, 2 dropped) and one after the timeouts (RST).
#            proxy_server_timeout = proxy_closed = 5, proxy_held_dropped = 2.
#   vanish   a raw client (198.18.1.21) sends SYN, gets floodgate's SYN-ACK, ACKs it and falls
#            silent (proxy_idle_timeout 1s): the connection opens to the server (its SYN with
#            the client's ISN and options, floodgate's ACK to its SYN-ACK), then expires:
#            proxy_opened = proxy_established = proxy_expired = 1, proxy_connections back to 0.
#   acks     2,000 raw ACKs with random numbers from four sources to port 80: each counted in
#            proxy_cookie_failed and passed to the server unchanged, nothing stored, no answer.
#   storm    proxy_connections_per_core 4, ten raw clients from ten sources one after another
#            (the order in syn_proxy_faults.py, case_storm): four connections proxied, the fifth
#            client's valid ACK finds no room (dropped), the other five SYNs are challenged as
#            syn-auth does; each challenged client answers with the RST its kernel would send,
#            is verified, and its next SYN goes straight to the server. proxy_table_full = 6,
#            answers_by_kind syn_proxy 5 and syn_cookie 5, proxy_cookie_failed 5 (the direct
#            handshakes' ACKs), rules[0].verified 9.
# Default: all five. Exit 0 if every assert passes, 1 otherwise (a PASS or FAIL line each).
# As root; cleans up after itself, also on failure (FG_LAB_KEEP=1 keeps the work directory with
# each case's stats, client results and pcaps of both veths). Only 198.18.0.0/15 and
# 2001:db8::/32, in namespaces and veths the script creates and deletes; every loop is bounded
# in packets and time. About 15 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fgf syn-proxy-faults
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(refused slow vanish acks storm)

# The addresses (syn_proxy_faults.py has the same).
server4=198.18.1.1 server6=2001:db8:1::1 silent4=198.18.1.2
server_mac=02:00:00:00:00:02 client_mac=02:00:00:00:01:10
client4=(198.18.1.10 198.18.1.11 198.18.1.12 198.18.1.13)  # .10 warms the path, .11-.13 refused
client4+=(198.18.1.14 198.18.1.15 198.18.1.16 198.18.1.17)   # slow
client6=(2001:db8:1::10 2001:db8:1::11)
raw4=(198.18.1.21 198.18.1.22 198.18.1.41 198.18.1.42 198.18.1.43 198.18.1.44)
for i in $(seq 51 60); do raw4+=("198.18.1.$i"); done

fg_pid="" server_pid=""

cleanup() { lab_cleanup "$server_pid"; }
trap cleanup EXIT

py=/usr/bin/python3
tools=("$py" "$here/syn_proxy_faults.py")

for c in "${cases[@]}"; do
  case "$c" in
    refused | slow | vanish | acks | storm) ;;
    *) echo "syn_proxy_faults: no case $c"; exit 2 ;;
  esac
done

# --- the wire: outside ns | tag-op -- tag-o | floodgate | tag-i -- tag-ip | inside ns -------
make_wire "$tag" "$out_ns" "$in_ns"
floodgate_sides "$tag"
host_end "$out_ns" "$tag-op" "$client_mac" "${client4[@]/%//24}" "${client6[@]/%//64}"
in_out ip neigh replace "$server4" lladdr "$server_mac" dev "$tag-op" nud permanent
in_out ip neigh replace "$silent4" lladdr "$server_mac" dev "$tag-op" nud permanent
in_out ip -6 neigh replace "$server6" lladdr "$server_mac" dev "$tag-op" nud permanent
host_end "$in_ns" "$tag-ip" "$server_mac" "$server4/24" "$server6/64"
for a in "${client4[@]}" "${raw4[@]}"; do
  in_in ip neigh replace "$a" lladdr "$client_mac" dev "$tag-ip" nud permanent
done
for a in "${client6[@]}"; do
  in_in ip -6 neigh replace "$a" lladdr "$client_mac" dev "$tag-ip" nud permanent
done

# --- the server, up for every case: port 80 on both addresses, nothing on 81 ----------------
ip netns exec "$in_ns" "${tools[@]}" serve 170 "$server4" "$server6" >"$work/server.log" 2>&1 &
server_pid=$!
wait_for "$work/server.log" "^ready" 10 "$server_pid"

# config CASE: the case's floodgate config.
config() {
  local table=""
  case "$1" in
    refused) table="table: { proxy_connections_per_core: 64, proxy_server_timeout: 1s }" ;;
    slow) table="table: { proxy_connections_per_core: 64, proxy_server_timeout: 1s }" ;;
    vanish) table="table: { proxy_connections_per_core: 64, proxy_idle_timeout: 1s }" ;;
    acks) table="table: { proxy_connections_per_core: 64 }" ;;
    storm) table="table: { proxy_connections_per_core: 4 }" ;;
  esac
  cat <<EOF
# tests/lab/syn_proxy_faults.sh, case $1.
$table
rules:
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: [80, 81] }
    limit: { rate: 20/s, burst: 10 }
    action: syn-proxy
EOF
}

failed=0
for c in "${cases[@]}"; do
  dir="$work/$c"
  mkdir -p "$dir"
  config "$c" >"$dir/rules.yaml"
  echo "syn_proxy_faults: case $c"
  # shellcheck disable=SC2046 # the memory options are words
  "$build/dataplane/floodgate" run --lcores=0@0,1@$(( 1 % $(nproc) )) $("$root/scripts/hugepages.sh" 512) \
    --no-pci --file-prefix="$tag" --log-level=error \
    --vdev="net_af_packet0,iface=$tag-o,qpairs=1,framecnt=4096" \
    --vdev="net_af_packet1,iface=$tag-i,qpairs=1,framecnt=4096" \
    -- --config "$dir/rules.yaml" --stats "$dir/stats.json" --stats-interval 0.2 \
    --control "$dir/dataplane.sock" \
    >"$dir/floodgate.log" 2>&1 &
  fg_pid=$!
  if ! wait_for "$dir/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
    echo "FAIL $c: floodgate did not start"; failed=1
    stop "$fg_pid" || true; fg_pid=""; continue
  fi
  if ! "${tools[@]}" warm "$out_ns" "$tag-op" "$in_ns" "$tag-ip" >"$dir/warm.log" 2>&1; then
    echo "FAIL $c: no path through floodgate"; cat "$dir/warm.log"; failed=1
    stop "$fg_pid" || true; fg_pid=""; continue
  fi
  "${tools[@]}" run "$c" "$work" "$out_ns" "$tag-op" "$in_ns" "$tag-ip" >"$dir/run.log" 2>&1 || {
    echo "FAIL $c: the clients failed"; cat "$dir/run.log"; failed=1; }
  fg_rc=0
  stop "$fg_pid" || fg_rc=$?
  fg_pid=""
  if [ "$fg_rc" -ne 0 ]; then
    echo "FAIL $c: floodgate exited with $fg_rc"; tail -5 "$dir/floodgate.log"; failed=1
  fi
  if [ -f "$dir/result.json" ]; then
    "$py" "$here/syn_proxy_faults_check.py" "$c" "$work" || failed=1
  else
    echo "FAIL $c: no client results"; failed=1
  fi
done
if [ "$failed" -ne 0 ]; then echo "syn_proxy_faults: FAIL"; exit 1; fi
echo "syn_proxy_faults: PASS"
