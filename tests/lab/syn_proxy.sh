#!/usr/bin/env bash
# Lab test of syn-proxy (issue 29) with real clients: an outside namespace (curl, a raw-socket
# TCP client, and a spoofed SYN flood sent raw by floodgate-tx) and an inside one (python's
# http.server), joined through `floodgate run` as an L2 bump in the wire on net_af_packet, as
# tests/lab/answers.sh does. One subnet across it: the server 198.18.1.1/24 and 2001:db8:1::1/64
# inside, the clients' addresses outside: 198.18.1.10-13, .30, .31, .40-.44 and .50-.54,
# 2001:db8:1::10 and one in each of 2001:db8:1:10::/64 to 1:13::/64 (a rule's IPv6 key is a /64:
# one source each); .20 and .21 are the raw client's, which the outside kernel does not own.
#
#   tests/lab/syn_proxy.sh BUILD_DIR [check|show]
#
# A proxied handshake verifies its source, whose later SYNs then bypass the proxy: every
# connection that must be proxied comes from a source that run of floodgate has not seen.
#   1-2. Downloads, $rounds times: a floodgate with the syn rule's action syn-proxy, and one with
#        action drop (the same limit, which one client stays under: nothing refused), started
#        in turn (proxy, drop; drop, proxy; ...). Each downloads $big_mb MB of random bytes with
#        curl, hashed on the fly, four ways: IPv4 and IPv6, the client's TCP timestamps on and
#        off (net.ipv4.tcp_timestamps, which IPv6 follows too). ss -tino is read in both
#        namespaces while each transfer runs (its reader held until ss saw both); floodgate's
#        stats are read after each download, and both namespaces' TCP counters before and
#        after it.
#   3-5. One more syn-proxy floodgate ("lab"), a receiver counting the SYNs that reach the
#        server's veth per source all along:
#     5. $mid_mb MB over IPv4 and over IPv6 (and once more from the IPv4 source, verified by then:
#        direct; and over both from a client that drops 1 segment in 100, so that its ACKs
#        carry SACK blocks), captured on the client's and the server's veths for tshark to
#        check (checksums, sequence analysis, every segment the same at both ends once
#        translated);
#     4. the raw client (tests/lab/syn_proxy.py rawclient, a 1 s RTO) against syn-proxy (port
#        80) and against a syn-auth rule (port 81);
#     3. two curls from .30 and one from each of .40-.44 before a flood, then floodgate-tx
#        replaying floodgate-gen's syn-flood trace at $flood_pps while $flood_curls sequential
#        curls run from .31, and one from each of .50-.54.
# syn_proxy_check.py prints what happened and, in check mode (the default), asserts it; its
# last line is a JSON summary of the figures. As root; everything in namespaces and veths the
# script creates and deletes, only 198.18.0.0/15 and 2001:db8::/32; cleans up after itself,
# also on failure. Every loop is bounded in packets and time. About a minute.
set -euo pipefail
mode="${2:-check}"
case "$mode" in check | show) ;; *) echo "syn_proxy: mode $mode: check or show"; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"
lab_begin "$1" fsp syn-proxy

# The server's addresses and MAC are those of floodgate-gen's syn-flood trace
# (perf/floodgate_gen.cpp), whose spoofed sources are 198.19.0.0/20 and 2001:db8:66::/48.
server4=198.18.1.1 server6=2001:db8:1::1
server_mac=02:00:00:00:00:02 client_mac=02:00:00:00:01:10
# The download variants: name, source, URL host. Timestamps on for *-ts, off for *-nots.
variants=("v4-ts 198.18.1.10 $server4" "v4-nots 198.18.1.11 $server4"
  "v6-ts 2001:db8:1:10::10 [$server6]" "v6-nots 2001:db8:1:11::11 [$server6]")
capture4=198.18.1.12 capture6=2001:db8:1:12::12  # 5: the captured transfers
lossy4=198.18.1.13 lossy6=2001:db8:1:13::13      # 5: ... whose client drops 1 segment in 100
raw_proxy=198.18.1.20 raw_auth=198.18.1.21     # 4: the raw client's, not the kernel's
before4=198.18.1.30 flood4=198.18.1.31         # 3: before the flood, under it
# 3: one proxied connection each, before the flood and under it: a median of first connections.
fresh_before=(198.18.1.40 198.18.1.41 198.18.1.42 198.18.1.43 198.18.1.44)
fresh_flood=(198.18.1.50 198.18.1.51 198.18.1.52 198.18.1.53 198.18.1.54)
# check (CI): every download's checks, once each on 20 MB; show: the throughput, medians of 3
# rounds of 100 MB (in check mode it is reported, never asserted, and 3 x 100 MB took 3 minutes).
if [ "$mode" = check ]; then rounds=1 big_mb=20; else rounds=3 big_mb=100; fi
mid_mb=2
flood_curls=30
# The spoofed SYN flood's rate, as answers.sh's: below what one worker on net_af_packet reads
# on this 2-core VM with the CPUs shared.
flood_pps=150000
stats_interval_s=0.2  # how soon a snapshot of floodgate's stats sees what just happened

fg_pid="" tx_pid="" syn_pid="" cap_pids=() server_pids=()

cleanup() { lab_cleanup "$syn_pid" "${cap_pids[@]}" "${server_pids[@]}"; }
trap cleanup EXIT

tools=(python3 "$here/answers.py")  # tests/lab/answers.py, run in either namespace
mine=(python3 "$here/syn_proxy.py")

# --- the rules --------------------------------------------------------------------------------
cat >"$work/proxy.yaml" <<'EOF'
# tests/lab/syn_proxy.sh, the syn-proxy runs. Table and announce: the defaults, written out.
table: { proxy_connections_per_core: 65536, proxy_server_timeout: 3s, proxy_idle_timeout: 15m }
rules:
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-proxy
    verified_ttl: 10m
    announce: { mss: 1460, wscale: 7, window: 65535 }
  # The raw client's other server: syn-auth's challenge, for comparison.
  - name: syn-auth
    match: { tcp_flags: "syn !ack", dst_port: 81 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-auth
    verified_ttl: 10m
EOF
cat >"$work/drop.yaml" <<'EOF'
# tests/lab/syn_proxy.sh, the drop runs: the same limit, which one client stays under.
rules:
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: drop
EOF

# --- the wire: outside ns | tag-op -- tag-o | floodgate | tag-i -- tag-ip | inside ns -------
make_wire "$tag" "$out_ns" "$in_ns" 1
floodgate_sides "$tag"
for dev in "$tag-o" "$tag-i"; do
  # Every frame floodgate reads through one CPU's backlog. A veth queues a frame on the backlog
  # of the CPU that sent it, and a TCP sender sends from several (its process, and softirq on
  # ACKs), so the two backlogs reached floodgate's ring out of order now and then: 21 segments
  # of a 100 MB download 0.4 ms late, then 2,173 spurious retransmissions, in a drop run as
  # much as in a syn-proxy one. No NIC reorders a flow.
  echo 1 > "/sys/class/net/$dev/queues/rx-0/rps_cpus"
done
out4=(198.18.1.10 198.18.1.11 "$capture4" "$lossy4" "$before4" "$flood4" "${fresh_before[@]}" "${fresh_flood[@]}")
out6=(2001:db8:1::10 2001:db8:1:10::10 2001:db8:1:11::11 "$capture6" "$lossy6")
host_end "$out_ns" "$tag-op" "$client_mac" "${out4[@]/%//24}" "${out6[@]/%//64}"
host_end "$in_ns" "$tag-ip" "$server_mac" "$server4/24" "$server6/64"
in_in ip -6 route add 2001:db8:1::/48 dev "$tag-ip"  # the clients' other /64s, on the link
# The lossy client's kernel drops 1 in 100 segments from the server after the capture saw them
# (AF_PACKET taps before netfilter): its ACKs then carry SACK blocks for floodgate to translate.
in_out nft -f - <<EOF
table inet fsp_loss {
  chain input {
    type filter hook input priority 0;
    ip daddr $lossy4 tcp sport 80 tcp flags & (syn | fin | rst) == 0 numgen inc mod 100 == 50 drop
    ip6 daddr $lossy6 tcp sport 80 tcp flags & (syn | fin | rst) == 0 numgen inc mod 100 == 50 drop
  }
}
EOF
# The raw client's addresses: nobody answers ARP for them, so the server is told where they are.
for a in "$raw_proxy" "$raw_auth"; do
  in_in ip neigh replace "$a" lladdr "$client_mac" dev "$tag-ip" nud permanent
done

# --- the server: http.server on ports 80 (the syn rule), 81 (syn-auth) and 82 (no rule) ------
mkdir -p "$work/www"
echo "floodgate syn-proxy lab" >"$work/www/index.html"
head -c "$(( big_mb * 1000 * 1000 ))" /dev/urandom >"$work/www/big"
head -c "$(( mid_mb * 1000 * 1000 ))" /dev/urandom >"$work/www/mid"
sha256sum "$work/www/big" "$work/www/mid" >"$work/www.sha256"
for port in 80 81 82; do  # --bind ::, dual-stack: IPv4 clients too
  ip netns exec "$in_ns" python3 -m http.server "$port" --bind :: --directory "$work/www" \
    >"$work/http$port.log" 2>&1 &
  server_pids+=($!)
done
deadline=$(( $(date +%s) + 30 ))
until [ "$(in_in ss -Hltn | grep -cE ':(80|81|82) ')" -ge 3 ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "syn_proxy: the servers did not start"; in_in ss -ltn; cat "$work"/http*.log; exit 1
  fi
  sleep 0.2
done
"$build/perf/floodgate-gen" syn-flood --out "$work/syn.pcap" >/dev/null

lcores="0@0,1@$(( 1 % $(nproc) ))"  # the main lcore and one worker

start_floodgate() {  # start_floodgate DIR CONFIG: floodgate run between the veths; sets fg_pid
  # shellcheck disable=SC2046 # the memory options are words
  "$build/dataplane/floodgate" run --lcores="$lcores" $("$root/scripts/hugepages.sh" 512) --no-pci \
    --file-prefix="$tag" --log-level=error \
    --vdev="net_af_packet0,iface=$tag-o,qpairs=1,framecnt=4096" \
    --vdev="net_af_packet1,iface=$tag-i,qpairs=1,framecnt=4096" \
    -- --config "$2" --stats "$1/stats.json" --stats-interval "$stats_interval_s" >"$1/floodgate.log" 2>&1 &
  fg_pid=$!
  if ! wait_for "$1/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
    wait "$fg_pid" 2>/dev/null || true
    fg_pid=""
    echo "syn_proxy: floodgate did not start on $2"
    exit 1
  fi
  # ARP and ND through floodgate, and the path itself (port 82: under no rule).
  in_out "${tools[@]}" warm 198.18.1.10 "$server4" 82
  in_out "${tools[@]}" warm 2001:db8:1::10 "$server6" 82
}

stop_floodgate() {  # stop_floodgate DIR: SIGINT, and its exit status checked
  local rc=0
  stop "$fg_pid" || rc=$?
  fg_pid=""
  if [ "$rc" -ne 0 ]; then echo "syn_proxy: floodgate exited with $rc after SIGINT"; cat "$1/floodgate.log"; exit 1; fi
}

snapshot() {  # snapshot DIR NAME: floodgate's stats as they are now, in DIR/snap-NAME.json
  "${mine[@]}" snapshot "$1/stats.json" "$1/snap-$2.json" 5
}

both_closed() {  # both namespaces: no port-80 connection left but in TIME-WAIT (bounded)
  in_out "${mine[@]}" closed 80 10
  in_in "${mine[@]}" closed 80 10
}

# watch_ss PREFIX PID GATE: ss -tino on both ends while PID runs, until both show the connection,
# then opens GATE. The download's reader waits on GATE, so the connection stays established
# (its windows full) until ss has seen both ends, however fast the transfer would have been.
watch_ss() {
  local i
  for i in $(seq 1 150); do
    kill -0 "$2" 2>/dev/null || break
    # -o too: this ss (iproute2 6.1) prints "ts sack" only with it.
    in_out ss -Htino state established '( dport = :80 )' >>"$1-client.txt" 2>/dev/null || true
    in_in ss -Htino state established '( sport = :80 )' >>"$1-server.txt" 2>/dev/null || true
    if grep -q "wscale:" "$1-client.txt" && grep -q "wscale:" "$1-server.txt"; then break; fi
  done
  timeout 10 sh -c 'echo go >"$1"' sh "$3" || true
}

# download DIR NAME SRC HOST FILE: one curl GET of http://HOST/FILE from SRC, its body hashed on
# the fly; ss watched meanwhile, the namespaces' TCP counters around it, floodgate's stats after.
download() {
  local dir="$1" name="$2" src="$3" host="$4" file="$5" pid
  in_out "${tools[@]}" counters "$dir/tcp-$name-client-before.json"
  in_in "${tools[@]}" counters "$dir/tcp-$name-server-before.json"
  : >"$dir/ss-$name-client.txt"
  : >"$dir/ss-$name-server.txt"
  rm -f "$dir/gate-$name" && mkfifo "$dir/gate-$name"
  ( in_out curl -sS -g --interface "$src" --connect-timeout 10 -m 120 -o - \
      -w "%{stderr}curl $name $src %{http_code} %{size_download} %{time_connect} %{time_total} %{speed_download}\n" \
      "http://$host/$file" 2>"$dir/curl-$name.txt" |
      { read -r _ <"$dir/gate-$name"; sha256sum >"$dir/sha-$name.txt"; } ) &
  pid=$!
  watch_ss "$dir/ss-$name" "$pid" "$dir/gate-$name"
  wait "$pid" || true
  both_closed
  in_out "${tools[@]}" counters "$dir/tcp-$name-client-after.json"
  in_in "${tools[@]}" counters "$dir/tcp-$name-server-after.json"
  snapshot "$dir" "$name"
}

# downloads NAME CONFIG: a floodgate, the four download variants through it; in $work/NAME/.
downloads() {
  local dir="$work/$1" v name src host
  mkdir -p "$dir"
  echo "syn_proxy: $1 ($(basename "$2"))"
  start_floodgate "$dir" "$2"
  snapshot "$dir" start
  for v in "${variants[@]}"; do
    read -r name src host <<<"$v"
    case "$name" in *-nots) in_out sysctl -qw net.ipv4.tcp_timestamps=0 ;; *) in_out sysctl -qw net.ipv4.tcp_timestamps=1 ;; esac
    download "$dir" "$name" "$src" "$host" big
  done
  in_out sysctl -qw net.ipv4.tcp_timestamps=1
  stop_floodgate "$dir"
}

# --- 1-2. the downloads, syn-proxy and drop in turn --------------------------------------------
for r in $(seq 1 "$rounds"); do
  if [ $(( r % 2 )) -eq 1 ]; then order=(proxy drop); else order=(drop proxy); fi
  for action in "${order[@]}"; do downloads "r$r-$action" "$work/$action.yaml"; done
done

# --- 3-5. the lab run ------------------------------------------------------------------------
dir="$work/lab"
mkdir -p "$dir"
echo "syn_proxy: lab (proxy.yaml): captured transfers, the raw client, the flood"
start_floodgate "$dir" "$work/proxy.yaml"
# Background jobs by ip netns exec itself, not through in_in: $! is then the process to signal.
ip netns exec "$in_ns" "${tools[@]}" syns "$tag-ip" "$dir/syns.json" 240 >"$dir/syns.log" 2>&1 &
syn_pid=$!
wait_for "$dir/syns.log" "^ready" 10 "$syn_pid"
snapshot "$dir" start

# 5. Two proxied transfers captured at both ends, for tshark, a third from the first one's
# source, verified by then: a connection floodgate does not translate, for comparison; then two
# more, proxied, whose client loses segments and answers with SACK blocks.
# dumpcap (what tshark captures with) prints "File: ..." once its socket is open.
ip netns exec "$out_ns" dumpcap -q -i "$tag-op" -f "tcp port 80" -B 64 -w "$dir/client.pcapng" >"$dir/dumpcap-client.log" 2>&1 &
cap_pids+=($!)
ip netns exec "$in_ns" dumpcap -q -i "$tag-ip" -f "tcp port 80" -B 64 -w "$dir/server.pcapng" >"$dir/dumpcap-server.log" 2>&1 &
cap_pids+=($!)
wait_for "$dir/dumpcap-client.log" "^File: " 30 "${cap_pids[0]}"
wait_for "$dir/dumpcap-server.log" "^File: " 30 "${cap_pids[1]}"
download "$dir" capture-v4 "$capture4" "$server4" mid
download "$dir" capture-v6 "$capture6" "[$server6]" mid
download "$dir" capture-direct "$capture4" "$server4" mid
download "$dir" lossy-v4 "$lossy4" "$server4" mid
download "$dir" lossy-v6 "$lossy6" "[$server6]" mid
# SIGTERM: a background job of a non-interactive shell ignores SIGINT, and so does dumpcap then.
for pid in "${cap_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${cap_pids[@]}"; do wait "$pid" || true; done
cap_pids=()

# 4. The raw client: syn-proxy, then syn-auth.
in_out "${mine[@]}" rawclient "$tag-op" "$client_mac" "$server_mac" "$raw_proxy" "$server4" 80 \
  /index.html "$work/www/index.html" "$dir/raw-proxy.json"
snapshot "$dir" raw-proxy
in_out "${mine[@]}" rawclient "$tag-op" "$client_mac" "$server_mac" "$raw_auth" "$server4" 81 \
  /index.html "$work/www/index.html" "$dir/raw-auth.json"
snapshot "$dir" raw-auth

# 3. Before the flood, then under it.
curls() {  # curls SRC COUNT FILE: sequential requests, 0.1 s apart (the syn rule allows 20/s)
  local i
  for i in $(seq 1 "$2"); do
    in_out curl -sS -o /dev/null --interface "$1" --connect-timeout 10 -m 20 \
      -w "$1 $i %{http_code} %{time_connect} %{time_total}\n" "http://$server4/" >>"$3" \
      2>>"$dir/curl-errors.txt" || true
    sleep 0.1
  done
}
: >"$dir/curl-before.txt"
: >"$dir/curl-flood.txt"
curls "$before4" 2 "$dir/curl-before.txt"
for a in "${fresh_before[@]}"; do curls "$a" 1 "$dir/curl-before.txt"; done
both_closed
snapshot "$dir" before
in_out "${tools[@]}" counters "$dir/tcp-flood-client-before.json"
in_in "${tools[@]}" counters "$dir/tcp-flood-server-before.json"
# The generator is niced: on a small machine it shares CPUs with floodgate, the clients and
# the server, which stand for other machines.
# shellcheck disable=SC2046
ip netns exec "$out_ns" nice -n 10 "$build/perf/floodgate-tx" --lcores=0@0 $(tx_memory "$work/syn.pcap") \
  --no-pci --file-prefix="$tag-tx" --log-level=error \
  --vdev="net_af_packet0,iface=$tag-op,qpairs=1" \
  -- --pcap "$work/syn.pcap" --seconds 60 --wait-link 10 --pps "$flood_pps" >"$dir/tx.log" 2>&1 &
tx_pid=$!
wait_for "$dir/tx.log" "^tx " 20 "$tx_pid"  # sending, a second in
flood_start=$(date +%s.%N)
curls "$flood4" "$flood_curls" "$dir/curl-flood.txt"
for a in "${fresh_flood[@]}"; do curls "$a" 1 "$dir/curl-flood.txt"; done
flood_stop=$(date +%s.%N)
stop "$tx_pid" || true
tx_pid=""
both_closed
in_out "${tools[@]}" counters "$dir/tcp-flood-client-after.json"
in_in "${tools[@]}" counters "$dir/tcp-flood-server-after.json"
snapshot "$dir" flood
kill -TERM "$syn_pid" 2>/dev/null || true
wait "$syn_pid" || true
syn_pid=""
# Every proxied connection over (FIN each way, then proxy_server_timeout) and swept.
"${mine[@]}" snapshot "$dir/stats.json" "$dir/snap-drained.json" 15 drained
stop_floodgate "$dir"
awk "BEGIN { printf \"{\\\"flood_curls_s\\\": %.3f}\\n\", $flood_stop - $flood_start }" >"$dir/times.json"

python3 "$here/syn_proxy_check.py" "$work" "$mode" "$rounds" "$big_mb" "$mid_mb" "$flood_curls"
