#!/usr/bin/env bash
# Answers through a port that computes their checksums: DPDK's net_tap offers TX checksum
# offload (IPv4, TCP, UDP), so floodgate leaves those sums to the port (answer.h). The tap
# interface is moved into a namespace of its own, where the kernel's TCP stack is the client:
# it connects to an address behind floodgate, floodgate answers the SYN with its SYN-ACK
# cookie, and only if the SYN-ACK's checksums are right does the kernel answer it with the
# RST that verifies the source (a segment with a bad checksum is dropped without a word, and
# counted in TcpInCsumErrors). Its retransmitted SYN then passes.
#
#   tests/lab/tap_offload.sh BUILD_DIR
#
# As root; cleans up after itself. Addresses: 198.18.5.0/24 and 2001:db8:5::/64 only, on the
# tap in the test's namespace. Exits 77 (skipped) where net_tap cannot be created.
set -euo pipefail
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
tag="fgt$$"
ns="$tag-ns" tap="$tag"
work="$(mktemp -d /tmp/floodgate-tap.XXXXXX)"
fg_pid=""
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"

cleanup() {
  lab_stop
  ip netns del "$ns" 2>/dev/null
  lab_remove
}
trap cleanup EXIT

cat >"$work/rules.yaml" <<'EOF'
rules:
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 100/s, burst: 10 }
    action: syn-auth
EOF

# Outside: the tap (answers leave by it); inside: net_null, which takes what passes.
"$build/dataplane/floodgate" run -l 0,1 --no-huge -m 256 --no-pci --file-prefix="$tag" \
  --log-level=error --vdev="net_tap0,iface=$tap" --vdev=net_null0 \
  -- --config "$work/rules.yaml" --stats "$work/stats.json" --control none \
  >"$work/floodgate.log" 2>&1 &
fg_pid=$!
deadline=$(( $(date +%s) + 30 ))
until grep -q "^floodgate: " "$work/floodgate.log"; do
  if ! kill -0 "$fg_pid" 2>/dev/null; then
    cat "$work/floodgate.log"; echo "tap: floodgate did not start (no net_tap here?): skipped"
    fg_pid=""; exit 77
  fi
  [ "$(date +%s)" -ge "$deadline" ] && { echo "tap: floodgate did not start in 30 s"; exit 1; }
  sleep 0.1
done
grep "^port 0:" "$work/floodgate.log"

ip netns add "$ns"
ip link set "$tap" netns "$ns"
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up
in_ns ip link set "$tap" up
in_ns ip addr add 198.18.5.1/24 dev "$tap"
in_ns ip -6 addr add 2001:db8:5::1/64 dev "$tap" nodad
# The server "behind" floodgate: a neighbour entry, so the kernel sends to it without ARP/ND
# (any MAC: floodgate's ports are promiscuous).
in_ns ip neigh add 198.18.5.2 lladdr 02:00:00:00:05:02 dev "$tap"
in_ns ip -6 neigh add 2001:db8:5::2 lladdr 02:00:00:00:05:02 dev "$tap"

csum_before=$(in_ns nstat -az TcpInCsumErrors | awk '/TcpInCsumErrors/ {print $2}')
# One connection attempt to each, 3 s at most: nobody listens behind floodgate, so the
# attempt ends in a timeout; what matters is what floodgate and the kernel counted.
in_ns python3 - <<'PY'
import socket
for family, addr in ((socket.AF_INET, "198.18.5.2"), (socket.AF_INET6, "2001:db8:5::2")):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((addr, 80))
    except OSError as e:
        print(f"connect {addr}: {e.__class__.__name__} (expected: nothing listens)")
    finally:
        s.close()
PY
csum_after=$(in_ns nstat -az TcpInCsumErrors | awk '/TcpInCsumErrors/ {print $2}')
stop "$fg_pid"
fg_pid=""

python3 - "$work/stats.json" "$work/floodgate.log" "$csum_before" "$csum_after" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
before, after = int(sys.argv[3] or 0), int(sys.argv[4] or 0)
syn = next(r for r in stats["rules"] if r["name"] == "syn")
failures = 0
def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    failures += not cond
check("port 0: 1 queue pairs, one queue, answers' checksums offloaded to the port" in log,
      "the tap port computes the answers' checksums (floodgate's log)")
check(stats["answers_by_kind"]["syn_cookie"] >= 2,
      f"SYN-ACK cookies sent: {stats['answers_by_kind']['syn_cookie']} (>= 2: one per family)")
check(syn["verified"] == 2 and stats["syn_auth_replies"] >= 2,
      f"the kernel answered both SYN-ACKs with the cookie's RST: {syn['verified']} sources "
      f"verified, {stats['syn_auth_replies']} replies (it drops a segment with a bad checksum)")
check(after - before == 0, f"the kernel counted {after - before} TCP checksum errors")
check(syn["passed"] >= 2, f"retransmitted SYNs passed to the inside: {syn['passed']} (>= 2)")
sys.exit(1 if failures else 0)
PY
