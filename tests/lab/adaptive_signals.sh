#!/usr/bin/env bash
# Lab: which inline signal follows a protected server's overload? (adaptive new-connection limit)
#
#   tests/lab/adaptive_signals.sh [OUTDIR] [SCENARIO...]      (as root; not part of meson/CI)
#
# floodgate sees both directions of every handshake; this lab measures, with no floodgate in the
# path, the signals it could follow from the wire alone (see adaptive_signals.py for the exact
# definitions): (a) first SYN -> SYN-ACK time of completed handshakes, (b) share of SYNs that are
# retransmissions, (c) first request byte -> first response byte time.
#
# The wire: two namespaces made for this run, one veth pair, only 198.18.0.0/15:
#   ns fgc$$ (client 198.18.2.10/24) veth fgc$$v -- fgs$$v (server 198.18.2.1/24) ns fgs$$
# Server: python ThreadingHTTPServer on :8080, listen backlog $BACKLOG (socketserver's default 5),
# a ~700-byte page, $CPU_MS ms of CPU burnt per request, in its own CPU cgroup (v2 cpu.max when
# /sys/fs/cgroup is cgroup2 with the cpu controller, else cgroup v1 cpu.cfs_quota_us).
# Capture: AF_PACKET on the server veth (adaptive_signals.py capture: kernel timestamps, pcap).
# Client: asyncio open loop, $RATE new connections/s, one GET each, 3 s deadline, for
# 3 x $PHASE s: healthy, slowed, recovered. Scenarios (the capacity change at t=$PHASE, undone at
# t=2*$PHASE):
#   cpu         CPU quota $QUOTA/100000 us on the server (backlog $BACKLOG)
#   cpu-bl128   the same with listen backlog 128 (backlog no longer overflows quickly)
#   link        tc tbf rate $LINK (burst 4kb, latency 1s) on the server veth's egress: the path
#               to the clients shrinks (backlog $BACKLOG)
#   netem       tc netem delay $DELAY on the server veth's egress (backlog $BACKLOG); skipped
#               (with a message) when the kernel has no sch_netem, as on the 6.18 lab kernel
# Before the runs, a closed-loop probe (32 workers, 4 s) measures the server's capacity healthy,
# under the CPU quota and behind the tbf link. Results: OUTDIR (default /tmp/adaptive-signals.$$): per scenario a
# pcap, the client CSV, events JSON, the series JSON, and report.md with the tables.
# Cleans up (processes, namespaces, veth, qdisc, cgroup) on exit, also on failure; every wait
# is bounded. About 2 minutes in all.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3
helper="$here/adaptive_signals.py"
out="${1:-/tmp/adaptive-signals.$$}"
shift || true
scenarios=("${@:-cpu cpu-bl128 link netem}")
read -r -a scenarios <<<"${scenarios[*]}"

RATE=${RATE:-150}
PHASE=${PHASE:-8}
CPU_MS=${CPU_MS:-2}
BACKLOG=${BACKLOG:-5}
QUOTA=${QUOTA:-5000}
DELAY=${DELAY:-100ms}
LINK=${LINK:-200kbit}
BIN=${BIN:-0.5}

[ "$(id -u)" = 0 ] || { echo "adaptive_signals: needs root"; exit 77; }
mkdir -p "$out"
nc="fgc$$" ns="fgs$$" vc="fgc$$v" vs="fgs$$v"
cip=198.18.2.10 sip=198.18.2.1
pids=()
cg=""

cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  ip netns del "$nc" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- CPU cgroup: v2 cpu.max when available, else v1 cfs quota --------------------------------
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] &&
  grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control; then
  cg=/sys/fs/cgroup/fg_adaptive_$$
  mkdir "$cg"
  cg_limit() { echo "$QUOTA 100000" >"$cg/cpu.max"; }
  cg_unlimit() { echo "max 100000" >"$cg/cpu.max"; }
  cgkind="cgroup v2 cpu.max \"$QUOTA 100000\" / \"max 100000\""
elif [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
  cg=/sys/fs/cgroup/cpu/fg_adaptive_$$
  mkdir "$cg"
  echo 100000 >"$cg/cpu.cfs_period_us"
  cg_limit() { echo "$QUOTA" >"$cg/cpu.cfs_quota_us"; }
  cg_unlimit() { echo -1 >"$cg/cpu.cfs_quota_us"; }
  cgkind="cgroup v1 cpu.cfs_period_us=100000, cpu.cfs_quota_us $QUOTA / -1 (no cgroup2 cpu controller here)"
else
  echo "adaptive_signals: no CPU cgroup controller"; exit 77
fi
echo "cpu limit via $cgkind"

# ---- namespaces and veth -----------------------------------------------------------------------
ip netns add "$nc"
ip netns add "$ns"
ip link add "$vc" type veth peer name "$vs"
ip link set "$vc" netns "$nc"
ip link set "$vs" netns "$ns"
ip -n "$nc" addr add "$cip/24" dev "$vc"
ip -n "$ns" addr add "$sip/24" dev "$vs"
for n in "$nc" "$ns"; do ip -n "$n" link set lo up; done
ip -n "$nc" link set "$vc" up
ip -n "$ns" link set "$vs" up
ip netns exec "$ns" sysctl -qw net.core.somaxconn=4096

start_server() { # $1 backlog
  ip netns exec "$ns" "$py" "$helper" server --addr "$sip" --backlog "$1" --cpu-ms "$CPU_MS" \
    --duration 120 &
  srv=$!
  pids+=("$srv")
  echo "$srv" >"$cg/cgroup.procs"
  cg_unlimit
  for _ in $(seq 50); do # bounded wait for the listener
    ip netns exec "$nc" "$py" -c "import socket; socket.create_connection(('$sip', 8080), 0.2).close()" \
      2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not come up"; exit 1
}
stop_server() {
  kill "$srv" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
}
now() { date +%s.%N; }

# ---- capacity probe ----------------------------------------------------------------------------
start_server "$BACKLOG"
{
  echo "healthy: $(ip netns exec "$nc" "$py" "$helper" capacity --host "$sip" --duration 4 --conc 32)"
  cg_limit
  sleep 0.5
  echo "cpu quota $QUOTA/100000: $(ip netns exec "$nc" "$py" "$helper" capacity --host "$sip" --duration 4 --conc 32)"
  cg_unlimit
  ip netns exec "$ns" tc qdisc add dev "$vs" root tbf rate "$LINK" burst 4kb latency 1s
  sleep 0.5
  echo "tbf $LINK: $(ip netns exec "$nc" "$py" "$helper" capacity --host "$sip" --duration 4 --conc 32)"
  ip netns exec "$ns" tc qdisc del dev "$vs" root
  echo "client rate for the runs: $RATE/s"
} | tee "$out/capacity.txt"
stop_server
sleep 1

# ---- runs ----------------------------------------------------------------------------------------
: >"$out/report.md"
for sc in "${scenarios[@]}"; do
  case "$sc" in
    cpu) bl=$BACKLOG; desc="CPU quota $QUOTA/100000 us (cgroup), backlog $bl, $CPU_MS ms CPU/request, $RATE conn/s" ;;
    cpu-bl128) bl=128; desc="CPU quota $QUOTA/100000 us (cgroup), backlog $bl, $CPU_MS ms CPU/request, $RATE conn/s" ;;
    link) bl=$BACKLOG; desc="tc tbf rate $LINK burst 4kb latency 1s on server veth egress, backlog $bl, $CPU_MS ms CPU/request, $RATE conn/s" ;;
    netem) bl=$BACKLOG; desc="tc netem delay $DELAY on server veth egress, backlog $bl, $CPU_MS ms CPU/request, $RATE conn/s" ;;
    *) echo "unknown scenario $sc"; exit 2 ;;
  esac
  if [ "$sc" = netem ] && ! ip netns exec "$ns" tc qdisc add dev "$vs" root netem delay "$DELAY" 2>/dev/null; then
    echo "== $sc: skipped, this kernel has no sch_netem" | tee -a "$out/report.md"
    continue
  fi
  [ "$sc" = netem ] && ip netns exec "$ns" tc qdisc del dev "$vs" root
  echo "== $sc: $desc"
  start_server "$bl"
  rm -f "$out/$sc.ready"
  dur=$((3 * PHASE + 8))
  ip netns exec "$ns" "$py" "$helper" capture --iface "$vs" --out "$out/$sc.pcap" \
    --duration "$dur" --ready "$out/$sc.ready" &
  cap=$!
  pids+=("$cap")
  for _ in $(seq 50); do [ -e "$out/$sc.ready" ] && break; sleep 0.1; done
  sleep 0.3
  t_start=$(now)
  ip netns exec "$nc" "$py" "$helper" client --host "$sip" --rate "$RATE" --duration $((3 * PHASE)) \
    --timeout 3 --out "$out/$sc.csv" &
  cli=$!
  pids+=("$cli")
  sleep "$PHASE"
  t_slow=$(now)
  case "$sc" in
    cpu*) cg_limit ;;
    netem) ip netns exec "$ns" tc qdisc add dev "$vs" root netem delay "$DELAY" limit 10000 ;;
    link) ip netns exec "$ns" tc qdisc add dev "$vs" root tbf rate "$LINK" burst 4kb latency 1s ;;
  esac
  sleep "$PHASE"
  t_rec=$(now)
  case "$sc" in
    cpu*) cg_unlimit ;;
    netem | link) ip netns exec "$ns" tc qdisc del dev "$vs" root ;;
  esac
  sleep "$PHASE"
  t_end=$(now)
  # client: its own deadline is 3 s after its last connection; bounded wait
  for _ in $(seq 100); do kill -0 "$cli" 2>/dev/null || break; sleep 0.1; done
  wait "$cli" || true
  sleep 0.5
  kill "$cap" 2>/dev/null || true
  wait "$cap" || true
  stop_server
  cat >"$out/$sc.events.json" <<EOF
{"name": "$sc", "desc": "$desc", "server_ip": "$sip", "port": 8080,
 "start": $t_start, "slow": $t_slow, "recover": $t_rec, "end": $t_end}
EOF
  "$py" "$helper" analyze --pcap "$out/$sc.pcap" --client "$out/$sc.csv" \
    --events "$out/$sc.events.json" --bin "$BIN" --md "$out/report.md" --json "$out/$sc.series.json"
  sleep 1
done
echo "results in $out (report.md)"
