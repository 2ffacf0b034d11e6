#!/usr/bin/env bash
# Lab test of the XDP tier run standalone (`floodctl xdp attach`), in front of a plain Linux
# host: a sender namespace and a receiver namespace joined by a veth pair; the program on the
# receiver's veth, its block map filled from a rules file's block list and by `floodctl xdp
# add`. A UDP receiver counts what the receiver's kernel got, per source; the program's
# counters say what it dropped. Only 198.18.0.0/15, in namespaces and veths created here and
# deleted on exit; maps pinned in a BPF filesystem of its own. As root; skips (exit 77) where the
# kernel refuses BPF.
#
#   tests/lab/xdp_standalone.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
tag="fgx$$"
snd="$tag-s" rcv="$tag-r"
work="$(mktemp -d /tmp/floodgate-xdp.XXXXXX)"
# A BPF filesystem of the test's own: `ip netns exec` remounts /sys, hiding /sys/fs/bpf, and
# a deployment's pins there are none of this test's business.
mkdir -p "$work/bpffs"
mount -t bpf bpf "$work/bpffs"
export FLOODGATE_XDP_PIN_DIR="$work/bpffs/floodgate"
floodctl="$build/control/floodctl"
# shellcheck source=tests/lab/common.sh
source "$here/common.sh"

cleanup() {
  lab_stop
  ip netns exec "$rcv" "$floodctl" xdp detach "$tag-b" >/dev/null 2>&1
  ip netns del "$snd" 2>/dev/null
  ip netns del "$rcv" 2>/dev/null
  lab_remove
}
trap cleanup EXIT

ip netns add "$snd"
ip netns add "$rcv"
ip link add "$tag-a" type veth peer name "$tag-b"
ip link set "$tag-a" netns "$snd"
ip link set "$tag-b" netns "$rcv"
ip -n "$snd" addr add 198.18.9.1/24 dev "$tag-a"   # to be blocked by the rules file
ip -n "$snd" addr add 198.18.9.2/24 dev "$tag-a"   # a client
ip -n "$snd" addr add 198.18.9.3/24 dev "$tag-a"   # blocked by floodctl xdp add, with a TTL
ip -n "$rcv" addr add 198.18.9.100/24 dev "$tag-b"
for ns in "$snd" "$rcv"; do ip -n "$ns" link set lo up; done
ip -n "$snd" link set "$tag-a" address 02:00:00:00:09:01 up
ip -n "$rcv" link set "$tag-b" address 02:00:00:00:09:64 up
# Fixed neighbours: no ARP to wait for.
ip -n "$snd" neigh add 198.18.9.100 lladdr 02:00:00:00:09:64 dev "$tag-a" nud permanent
for h in 1 2 3; do
  ip -n "$rcv" neigh add "198.18.9.$h" lladdr 02:00:00:00:09:01 dev "$tag-b" nud permanent
done

cat >"$work/rules.yaml" <<'YAML'
block: [198.18.9.1/32]
YAML
if ! out=$(ip netns exec "$rcv" "$floodctl" xdp attach "$tag-b" --config "$work/rules.yaml" 2>&1); then
  echo "$out"
  if grep -qiE "refused the XDP program|Operation not permitted|BPF filesystem" <<<"$out"; then
    echo "xdp: SKIP: the kernel refuses BPF here"; exit 77
  fi
  exit 1
fi
ip netns exec "$rcv" "$floodctl" xdp add 198.18.9.3 --ttl 1h
ip netns exec "$rcv" "$floodctl" xdp list

# 100 datagrams from each source; the receiver counts per source for up to 5 s.
ip netns exec "$rcv" python3 - "$work/got.json" >"$work/recv.log" 2>&1 <<'PY' &
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.9.100", 9999))
s.settimeout(0.2)
print("ready", flush=True)
got, deadline = {}, time.monotonic() + 5
while time.monotonic() < deadline and sum(got.values()) < 300:
    try:
        _, (src, _) = s.recvfrom(2048)
        got[src] = got.get(src, 0) + 1
    except socket.timeout:
        pass
json.dump(got, open(sys.argv[1], "w"))
PY
recv_pid=$!
sleep 0.5  # the receiver binds before anything is sent (a missed datagram fails the count)
ip netns exec "$snd" python3 - <<'PY'
import socket
for src in ("198.18.9.1", "198.18.9.2", "198.18.9.3"):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    for _ in range(100):
        s.sendto(b"x" * 32, ("198.18.9.100", 9999))
PY
wait "$recv_pid"
stats=$(ip netns exec "$rcv" "$floodctl" -j xdp stats)
echo "$stats"
python3 - "$work/got.json" "$stats" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
c = json.loads(sys.argv[2])["counters"]
checks = [
    (got.get("198.18.9.2", 0) == 100, f"the client's 100 datagrams reached the host: {got.get('198.18.9.2', 0)}"),
    (got.get("198.18.9.1", 0) == 0, f"none from the rules file's blocked source: {got.get('198.18.9.1', 0)}"),
    (got.get("198.18.9.3", 0) == 0, f"none from the source blocked by xdp add: {got.get('198.18.9.3', 0)}"),
    (c["block_hits"] == 200, f"the program dropped 200 (block_hits {c['block_hits']})"),
    (c["passed"] >= 100, f"and passed the client's (passed {c['passed']} >= 100)"),
    (c["packets"] == c["passed"] + c["unparsed"] + c["block_hits"] + c["escalated_hits"],
     f"packets {c['packets']} = passed + unparsed + block_hits + escalated_hits"),
]
failed = 0
for ok, what in checks:
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok
sys.exit(1 if failed else 0)
PY
# Removed: the source passes again.
ip netns exec "$rcv" "$floodctl" xdp del 198.18.9.3
ip netns exec "$rcv" "$floodctl" xdp list | grep -q "198.18.9.3" && { echo "FAIL xdp del left 198.18.9.3"; exit 1; }
echo "ok   xdp del removed 198.18.9.3"
# The rules file changed: attaching again makes the maps hold exactly its lists (the block of
# 198.18.9.1 dropped from it goes; an allow inside a new block is written too).
cat >"$work/rules2.yaml" <<'YAML'
allow: [198.18.9.2/32]
block: [198.18.9.0/24]
YAML
ip netns exec "$rcv" "$floodctl" xdp attach "$tag-b" --config "$work/rules2.yaml"
listed=$(ip netns exec "$rcv" "$floodctl" xdp list)
echo "$listed"
grep -q "^198.18.9.1/32 " <<<"$listed" && { echo "FAIL the dropped block of 198.18.9.1 is still there"; exit 1; }
grep -qE "^198.18.9.2/32 +allow +rules" <<<"$listed" || { echo "FAIL no allow entry for 198.18.9.2"; exit 1; }
grep -qE "^198.18.9.0/24 +block +rules" <<<"$listed" || { echo "FAIL no block entry for 198.18.9.0/24"; exit 1; }
echo "ok   attach --config again: the maps hold exactly the new file's lists"
if ip netns exec "$rcv" "$floodctl" xdp del 198.18.9.0/24 2>/dev/null; then
  echo "FAIL xdp del removed the rules file's block"; exit 1
fi
echo "ok   xdp del is refused for the rules file's entries"
ip netns exec "$rcv" "$floodctl" xdp detach "$tag-b"
if ip netns exec "$rcv" "$floodctl" xdp detach "$tag-b" 2>/dev/null; then
  echo "FAIL detach reported success with nothing attached"; exit 1
fi
echo "ok   detach with nothing attached is refused"
