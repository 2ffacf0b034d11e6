#!/usr/bin/env bash
# Lab test of floodgate's answers with real clients and servers: an outside namespace (clients,
# and a spoofed SYN flood sent raw by floodgate-tx) and an inside one (a web server, a DNS
# server, port 9 listeners), joined through floodgate as an L2 bump in the wire on
# net_af_packet. One subnet across it: server 198.18.1.1/24 and 2001:db8:1::1/64 inside,
# clients 198.18.1.10, .11 and 2001:db8:1::10 outside; ARP and ND are not IP and pass unjudged.
#
#   tests/lab/answers.sh BUILD_DIR [WORKERS] [check|show|baseline]
#
# Two runs of floodgate, the same traffic each time:
#   baseline  the rules below with action drop and no answers section (what floodgate did
#             before answers): printed for comparison, never asserted;
#   answers   the rules with their answers (syn-auth, dns-truncate, tcp-rst,
#             icmp-unreachable): printed, and asserted by answers_check.py in check mode;
#   proxy     show mode only (the README's demo): the answers run with the syn rule's action
#             syn-proxy, floodgate's best answer to a SYN flood, printed beside syn-auth (a new
#             client's first connection: syn-auth costs it a SYN retransmission, the proxy one
#             round trip to floodgate). tests/lab/syn_proxy.sh asserts the proxy.
# In each run:
#   1. HTTP: floodgate-tx replays floodgate-gen's syn-flood trace (spoofed SYNs from 198.19.0.0/20
#      and 2001:db8:66::/48) on the outside veth at 150,000 frames/s (flood_pps) while curl makes 20
#      sequential requests from 198.18.1.10, 5 from .11 and 5 from 2001:db8:1::10 to
#      python's http.server; a raw receiver counts, per source, the SYNs that reach the
#      server's veth, and the server's TCP counters are read before and after.
#   2. DNS: a query flood (200/s, until the digs are done) from 198.18.1.10 and from
#      2001:db8:1::10 to dnsmasq, and dig from those addresses (over the dns limit: truncated,
#      retried over TCP) and from 198.18.1.11 (under it: answered over UDP).
#   3. Port 9: TCP connects and UDP datagrams over the tcp-other and udp-other limits, from
#      198.18.1.10 and 2001:db8:1::10.
# check (the default) runs both and asserts the answers run; show runs both and prints what
# happened (for the README's demo); baseline runs only the first, the plumbing without the
# feature. As root; cleans up after itself, also on failure. Only 198.18.0.0/15 and
# 2001:db8::/32, in namespaces and veths the test creates and deletes. Every loop is bounded in
# packets and time.
set -euo pipefail
workers="${2:-1}"
mode="${3:-check}"
case "$mode" in check | show | baseline) ;; *) echo "answers: mode $mode: check, show or baseline"; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fga answers

# The lab's addresses. The spoofed sources and the server's addresses and MAC are also those
# of floodgate-gen's syn-flood trace (perf/floodgate_gen.cpp).
server4=198.18.1.1 server6=2001:db8:1::1
client4=198.18.1.10 other4=198.18.1.11 client6=2001:db8:1::10
server_mac=02:00:00:00:00:02 client_mac=02:00:00:00:01:10
www_record=198.18.1.80
# Curl requests per client address: first the one floodgate has to verify, then the others.
curls4=20 curls_other4=5 curls6=5
# The spoofed SYN flood's rate: far over what the syn rule and the answer caps allow, and
# below what one worker on net_af_packet reads on this 2-core VM with the CPUs shared (about
# 230,000 frames/s with a busy loop on one core): a faster flood only measures which frames
# the receive ring drops, and a client's lost SYN then costs it a timeout.
flood_pps=150000

fg_pid="" tx_pid="" syn_pid="" flood_pids=() server_pids=()

cleanup() { lab_cleanup "$syn_pid" "${flood_pids[@]}" "${server_pids[@]}"; }
trap cleanup EXIT

tools=(python3 "$here/answers.py")  # tests/lab/answers.py, run in either namespace

# --- the rules: the answers run's config, and the baseline's derived from it ----------------
cat >"$work/answers.yaml" <<'EOF'
# tests/lab/answers.sh, the answers run. Caps: the defaults, written out.
answers:
  per_destination: { rate: 1000/s, burst: 100, ipv4: 24, ipv6: 64 }
  per_core: { rate: 100000/s, burst: 1000 }
rules:
  # Web: connection attempts from unverified sources are answered with a SYN-ACK cookie.
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-auth
    verified_ttl: 10m
  # DNS over UDP: every query over the limit answered TC=1 (TCP/53 is under no rule). A query
  # a minute past the burst: once a flooding client has spent its 5, none of its queries (its
  # dig's included) passes during the test; at 10/s, one in twenty of a 200/s flood did, and
  # so did a dig's now and then.
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 1/min, burst: 5 }
    action: dns-truncate
    slip: 1
  - name: tcp-other
    match: { proto: tcp, dst_port: 9 }
    limit: { rate: 1/s, burst: 2 }
    action: tcp-rst
  - name: udp-other
    match: { proto: udp, dst_port: 9 }
    limit: { rate: 1/s, burst: 2 }
    action: icmp-unreachable
EOF
# Same rules, same limits; drop, no answers section, no answer options.
sed -e '/^answers:/,/^rules:/{/^rules:/!d}' -e 's/action: .*/action: drop/' \
  -e '/verified_ttl:/d' -e '/slip:/d' -e 's/the answers run\. .*/the baseline run (no answers)./' \
  "$work/answers.yaml" >"$work/baseline.yaml"
# Same rules and answers; the syn rule proxies the handshake instead of answering with a cookie.
sed -e 's/action: syn-auth/action: syn-proxy/' -e 's/the answers run\. .*/the proxy run (syn-proxy)./' \
  "$work/answers.yaml" >"$work/proxy.yaml"

# --- the wire: outside ns | tag-op -- tag-o | floodgate | tag-i -- tag-ip | inside ns -------
make_wire "$tag" "$out_ns" "$in_ns" "$workers"
floodgate_sides "$tag"
host_end "$out_ns" "$tag-op" "$client_mac" "$client4/24" "$other4/24" "$client6/64"
host_end "$in_ns" "$tag-ip" "$server_mac" "$server4/24" "$server6/64"
# Replies to the spoofed sources (in the baseline, where their SYNs reach the server) go back
# out through floodgate to the outside namespace, which does not forward them: a server on a
# network with a default route.
in_in ip route add default via "$client4"
in_in ip -6 route add default via "$client6"

# --- the servers, up for both runs ----------------------------------------------------------
mkdir -p "$work/www"
echo "floodgate answers lab" >"$work/www/index.html"
ip netns exec "$in_ns" python3 -m http.server 80 --bind "$server4" --directory "$work/www" >"$work/http4.log" 2>&1 &
server_pids+=($!)
ip netns exec "$in_ns" python3 -m http.server 80 --bind "$server6" --directory "$work/www" >"$work/http6.log" 2>&1 &
server_pids+=($!)
ip netns exec "$in_ns" dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
  --listen-address="$server4" --listen-address="$server6" --host-record="www.lab.test,$www_record" \
  --pid-file="$work/dnsmasq.pid" >"$work/dnsmasq.log" 2>&1 &
server_pids+=($!)
ip netns exec "$in_ns" "${tools[@]}" serve9 280 "$server4" "$server6" >"$work/serve9.log" 2>&1 &
server_pids+=($!)
# Bounded wait for the 6 TCP listeners: ports 80, 53 and 9 on both addresses.
deadline=$(( $(date +%s) + 30 ))
until [ "$(in_in ss -Hltn | grep -cE '(198\.18\.1\.1|\[2001:db8:1::1\]):(80|53|9) ')" -ge 6 ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "answers: the servers did not start"; in_in ss -ltn; cat "$work"/*.log; exit 1
  fi
  sleep 0.2
done

"$build/perf/floodgate-gen" syn-flood --out "$work/syn.pcap" >/dev/null

lcores="0@0"  # the main lcore, then one per worker (they may share a CPU on a small machine)
for w in $(seq 1 "$workers"); do lcores="$lcores,$w@$(( w % $(nproc) ))"; done

drops() {  # drops PREFIX: where frames were lost (the veths, the CPUs' backlogs), as PREFIX-*.json
  "${tools[@]}" drops "$1-host.json" "$tag-o" "$tag-i"
  in_out "${tools[@]}" drops "$1-out.json" "$tag-op"
  in_in "${tools[@]}" drops "$1-in.json" "$tag-ip"
}
now() { date +%s.%N; }
since() { awk "BEGIN { printf \"%.3f\", ${2:-$(now)} - $1 }"; }  # since T0 [T1]: seconds

# run NAME CONFIG: one floodgate run and all three parts; results in $work/NAME/.
run() {
  local name="$1" config="$2" dir="$work/$1"
  mkdir -p "$dir"
  echo "answers: $name run ($workers worker(s), $(basename "$config"))"
  local fg_start; fg_start=$(now)
  # shellcheck disable=SC2046 # the memory options are words
  "$build/dataplane/floodgate" run --lcores="$lcores" $("$root/scripts/hugepages.sh" 512) --no-pci \
    --file-prefix="$tag" --log-level=error \
    --vdev="net_af_packet0,iface=$tag-o,qpairs=$workers,framecnt=4096" \
    --vdev="net_af_packet1,iface=$tag-i,qpairs=$workers,framecnt=4096" \
    -- --config "$config" --stats "$dir/stats.json" >"$dir/floodgate.log" 2>&1 &
  fg_pid=$!
  if ! wait_for "$dir/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
    wait "$fg_pid" 2>/dev/null || true
    fg_pid=""
    echo "answers: floodgate did not start on $config"
    return 1
  fi
  # ARP and ND through floodgate, and the path itself, before anything is timed (TCP/53 is
  # under no rule).
  for src in "$client4" "$other4"; do in_out "${tools[@]}" warm "$src" "$server4" 53; done
  in_out "${tools[@]}" warm "$client6" "$server6" 53

  # 1. HTTP under a spoofed SYN flood.
  in_in "${tools[@]}" counters "$dir/tcp-before.json"
  drops "$dir/drops-before"
  ip netns exec "$in_ns" "${tools[@]}" syns "$tag-ip" "$dir/syns.json" 120 >"$dir/syns.log" 2>&1 &
  syn_pid=$!
  wait_for "$dir/syns.log" "^ready" 10 "$syn_pid"
  # The generator is niced: on a small machine it shares CPUs with floodgate, the clients and
  # the servers, which stand for other machines.
  # shellcheck disable=SC2046
  ip netns exec "$out_ns" nice -n 10 "$build/perf/floodgate-tx" --lcores=0@0 $(tx_memory "$work/syn.pcap") \
    --no-pci --file-prefix="$tag-tx" --log-level=error \
    --vdev="net_af_packet0,iface=$tag-op,qpairs=1" \
    -- --pcap "$work/syn.pcap" --seconds 60 --wait-link 10 --pps "$flood_pps" >"$dir/tx.log" 2>&1 &
  tx_pid=$!
  wait_for "$dir/tx.log" "^tx " 20 "$tx_pid"  # sending, a second in
  local flood_start; flood_start=$(now)
  : >"$dir/curl.txt"
  curls() {  # curls SRC URL COUNT: sequential requests, 0.1 s apart (the syn rule allows 20/s)
    local i
    for i in $(seq 1 "$3"); do
      in_out curl -sS -g -o /dev/null --interface "$1" --connect-timeout 10 -m 20 \
        -w "$1 $i %{http_code} %{time_connect} %{time_total}\n" "$2" >>"$dir/curl.txt" \
        2>>"$dir/curl.err" || true
      sleep 0.1
    done
  }
  curls "$client4" "http://$server4/" "$curls4"
  curls "$other4" "http://$server4/" "$curls_other4"
  curls "$client6" "http://[$server6]/" "$curls6"
  local flood_stop; flood_stop=$(now)
  stop "$tx_pid" || true
  tx_pid=""
  sleep 0.5  # the last frames through floodgate
  kill -TERM "$syn_pid"; wait "$syn_pid" || true
  syn_pid=""
  in_in "${tools[@]}" counters "$dir/tcp-after.json"
  drops "$dir/drops-after"

  # 2. DNS: the flooding clients' own queries over the dns limit, and a quiet client's.
  # The floods go on until the digs are done (SIGTERM), 20 s at most.
  ip netns exec "$out_ns" "${tools[@]}" dnsflood "$client4" "$server4" 200 20 "$dir/dnsflood-4.json" \
    >"$dir/dnsflood-4.log" &
  flood_pids+=($!)
  wait_for "$dir/dnsflood-4.log" "^over the limit" 10 "${flood_pids[0]}"
  ip netns exec "$out_ns" "${tools[@]}" dnsflood "$client6" "$server6" 200 20 "$dir/dnsflood-6.json" \
    >"$dir/dnsflood-6.log" &
  flood_pids+=($!)
  wait_for "$dir/dnsflood-6.log" "^over the limit" 10 "${flood_pids[1]}"
  in_out dig -b "$client4" "@$server4" www.lab.test A +time=2 +tries=1 >"$dir/dig-flooded4.txt" 2>&1 || true
  in_out dig -b "$client6" "@$server6" www.lab.test A +time=2 +tries=1 >"$dir/dig-flooded6.txt" 2>&1 || true
  in_out dig -b "$other4" "@$server4" www.lab.test A +time=2 +tries=1 >"$dir/dig-quiet4.txt" 2>&1 || true
  kill -TERM "${flood_pids[@]}" 2>/dev/null || true
  wait "${flood_pids[@]}" || true
  flood_pids=()

  # 3. Port 9, over the tcp-other and udp-other limits.
  in_out "${tools[@]}" tcp9 "$client4" "$server4" 6 "$dir/tcp9-4.json"
  in_out "${tools[@]}" tcp9 "$client6" "$server6" 6 "$dir/tcp9-6.json"
  in_out "${tools[@]}" udp9 "$client4" "$server4" 6 "$dir/udp9-4.json"
  in_out "${tools[@]}" udp9 "$client6" "$server6" 6 "$dir/udp9-6.json"

  local fg_rc=0
  stop "$fg_pid" || fg_rc=$?
  fg_pid=""
  cat >"$dir/times.json" <<EOF
{"floodgate_s": $(since "$fg_start"), "flood_s": $(since "$flood_start" "$flood_stop"),
 "workers": $workers, "curls": {"$client4": $curls4, "$other4": $curls_other4, "$client6": $curls6}}
EOF
  if [ "$fg_rc" -ne 0 ]; then echo "answers: floodgate exited with $fg_rc after SIGINT"; cat "$dir/floodgate.log"; return 1; fi
}

run baseline "$work/baseline.yaml"
if [ "$mode" = baseline ]; then
  python3 "$here/answers_check.py" "$work" show baseline
  exit 0
fi
answers_rc=0
run answers "$work/answers.yaml" || answers_rc=$?
if [ "$answers_rc" -ne 0 ]; then
  python3 "$here/answers_check.py" "$work" show baseline
  echo "answers: the answers run did not complete"
  exit 1
fi
if [ "$mode" = show ]; then
  run proxy "$work/proxy.yaml" || echo "answers: the proxy run did not complete"
  python3 "$here/answers_check.py" "$work" show baseline answers proxy
  exit 0
fi
python3 "$here/answers_check.py" "$work" "$mode" baseline answers
