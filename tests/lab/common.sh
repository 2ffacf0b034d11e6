# shellcheck shell=bash
# What the lab scripts share; sourced, not run.

stop() {  # stop PID: SIGINT, up to 10 s to finish, then SIGKILL
  local pid="$1" deadline=$(( $(date +%s) + 10 ))
  kill -INT "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null; break; fi
    sleep 0.1
  done
  wait "$pid" 2>/dev/null
}

lab_name="$(basename "$0" .sh)"

# lab_begin BUILD_DIR TAG NAME: what a lab script sets first, after sourcing this file from
# $here: $build (BUILD_DIR, absolute), $root (the source tree), $tag (TAG and the script's
# pid: its veths' and DPDK runtime directories' names), $out_ns and $in_ns (make_wire's
# namespaces), $work (a new /tmp/floodgate-NAME.XXXXXX), and the hugepages count before the
# run ($hugepages_before, which lab_remove gives back).
# shellcheck disable=SC2034,SC2154  # sets what the sourcing script uses; $here: set by it
lab_begin() {
  build="$(cd "$1" && pwd)"
  root="$(cd "$here/../.." && pwd)"
  tag="$2$$"
  out_ns="$tag-out" in_ns="$tag-in"
  work="$(mktemp -d "/tmp/floodgate-$3.XXXXXX")"
  hugepages=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  hugepages_before=$(cat "$hugepages" 2>/dev/null || echo "")
}

in_out() { ip netns exec "$out_ns" "$@"; }  # a command in make_wire's outside namespace
in_in() { ip netns exec "$in_ns" "$@"; }    # ... in its inside one

wait_for() {  # wait_for FILE PATTERN SECONDS PID: bounded wait for a line PID prints
  local deadline=$(( $(date +%s) + $3 ))
  until grep -q "$2" "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "$lab_name: timed out waiting for '$2' in $1"; cat "$1"; return 1; fi
    if ! kill -0 "$4" 2>/dev/null; then echo "$lab_name: the process writing $1 exited"; cat "$1"; return 1; fi
    sleep 0.1
  done
}

# start_daemon WORK CONFIG: floodctl daemon for the dataplane socket WORK/dataplane.sock, its
# own WORK/floodctl.sock, no metrics; sets ctl (floodctl talking to it) and ctl_pid, and waits,
# bounded, until it answers. Needs $build.
start_daemon() {
  ctl=("$build/control/floodctl" --socket "$1/floodctl.sock")
  "${ctl[@]}" daemon --config "$2" --dataplane "$1/dataplane.sock" --metrics none \
    >"$1/floodctl.log" 2>&1 &
  ctl_pid=$!
  local deadline=$(( $(date +%s) + 10 ))
  until "${ctl[@]}" status >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "$lab_name: floodctl daemon did not answer"; cat "$1/floodctl.log"; return 1
    fi
    sleep 0.1
  done
}

# make_wire TAG OUT_NS IN_NS [QUEUES]: the two namespaces and floodgate's veths, TAG-o (its
# outside, peer TAG-op in OUT_NS) and TAG-i (its inside, peer TAG-ip in IN_NS), with QUEUES
# queue pairs on each side (AF_XDP binds to queues; default 1).
make_wire() {
  local q="${4:-1}"
  ip netns add "$2"
  ip netns add "$3"
  ip link add "$1-o" numrxqueues "$q" numtxqueues "$q" type veth peer name "$1-op" numrxqueues "$q" numtxqueues "$q"
  ip link add "$1-i" numrxqueues "$q" numtxqueues "$q" type veth peer name "$1-ip" numrxqueues "$q" numtxqueues "$q"
  ip link set "$1-op" netns "$2"
  ip link set "$1-ip" netns "$3"
}

quiet_link() {  # quiet_link NS|"" DEV: up, no IPv6 (no router solicitations or ND among the frames)
  local ns="$1" dev="$2" run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  "${run[@]}" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$dev/disable_ipv6"
  "${run[@]}" ip link set "$dev" up
}

# floodgate_sides TAG: floodgate's veths TAG-o and TAG-i, for a wire whose ends are hosts
# (host_end): no IPv6 of their own, checksum offloads off (answers.py offload-off says why), up.
# shellcheck disable=SC2154  # $here: set by the sourcing script
floodgate_sides() {
  local dev
  for dev in "$1-o" "$1-i"; do
    echo 1 > "/proc/sys/net/ipv6/conf/$dev/disable_ipv6"
    python3 "$here/answers.py" offload-off "$dev"
    ip link set "$dev" up
  done
}

# host_end NS DEV MAC ADDR/LEN...: one end of the wire as a host: lo up, DEV with MAC and IPv6
# on, the addresses in order (IPv6 ones without duplicate address detection, so that they are
# usable at once), checksum offloads off, up.
# shellcheck disable=SC2154  # $here: set by the sourcing script
host_end() {
  local ns="$1" dev="$2" mac="$3" a
  shift 3
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip link set "$dev" address "$mac"
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=0"
  for a in "$@"; do
    case "$a" in
      *:*) ip netns exec "$ns" ip addr add "$a" dev "$dev" nodad ;;
      *) ip netns exec "$ns" ip addr add "$a" dev "$dev" ;;
    esac
  done
  ip netns exec "$ns" python3 "$here/answers.py" offload-off "$dev"
  ip netns exec "$ns" ip link set "$dev" up
}

# quiet_wire TAG OUT_NS IN_NS [QUEUES]: make_wire's wire with its four ends quiet_link'ed, for
# a lab that sends raw frames and adds no addresses.
quiet_wire() {
  make_wire "$@"
  quiet_link "" "$1-o"
  quiet_link "" "$1-i"
  quiet_link "$2" "$1-op"
  quiet_link "$3" "$1-ip"
}

# tx_memory PCAP: the EAL memory options for a floodgate-tx that sends PCAP: what it says it
# needs to hold the capture's frames (floodgate-tx --memory-mb), as hugepages where the machine
# can reserve them (scripts/hugepages.sh).
# shellcheck disable=SC2154  # $build, $root: set by the sourcing script
tx_memory() {
  "$root/scripts/hugepages.sh" "$("$build/perf/floodgate-tx" --memory-mb "$1")"
}

# start_xdp_dataplane MB: floodgate run between the wire's veths, its outside TAG-o on
# net_af_xdp with floodgate's XDP program (maps pinned in $FLOODGATE_XDP_PIN_DIR), its inside
# TAG-i on net_af_packet, MB of hugepages, $work/rules.yaml, --stats $work/stats.json and
# --control $work/dataplane.sock; sets fg_pid and waits, bounded, until it runs with the program
# taken over. Exits the script: 77 where AF_XDP or BPF is refused, 1 on any other failure.
# Needs $build, $root, $tag and $work.
# shellcheck disable=SC2154  # $build, $root, $tag, $work: set by the sourcing script
start_xdp_dataplane() {
  # shellcheck disable=SC2046 # the memory options are words
  "$build/dataplane/floodgate" run --lcores=0@0,1@$(( 1 % $(nproc) )) $("$root/scripts/hugepages.sh" "$1") \
    --no-pci --file-prefix="$tag" --log-level=error \
    "--vdev=net_af_xdp0,iface=$tag-o,start_queue=0,queue_count=1,xdp_prog=$build/bpf/floodgate_xdp.bpf.o" \
    "--vdev=net_af_packet1,iface=$tag-i,qpairs=1" \
    -- --config "$work/rules.yaml" --stats "$work/stats.json" --control "$work/dataplane.sock" \
    --xdp-pin-dir "$FLOODGATE_XDP_PIN_DIR" >"$work/floodgate.log" 2>&1 &
  fg_pid=$!
  if ! wait_for "$work/floodgate.log" "^floodgate: " 30 "$fg_pid"; then
    if grep -qiE "af_xdp|xsk|XDP program|refused" "$work/floodgate.log"; then
      echo "$lab_name: SKIP: AF_XDP or BPF is refused here"; exit 77
    fi
    exit 1
  fi
  grep -q "^xdp: floodgate's program on $tag-o" "$work/floodgate.log" || {
    echo "FAIL floodgate did not take over the XDP program"; cat "$work/floodgate.log"; exit 1; }
}

# remove_wire TAG OUT_NS IN_NS: the namespaces, floodgate's veths TAG-o and TAG-i, and the
# DPDK runtime directories of floodgate (TAG) and floodgate-tx (TAG-tx).
remove_wire() {
  ip netns del "$2" 2>/dev/null || true
  ip netns del "$3" 2>/dev/null || true
  ip link del "$1-o" 2>/dev/null || true
  ip link del "$1-i" 2>/dev/null || true
  rm -rf "/var/run/dpdk/$1" "/var/run/dpdk/$1-tx"
}

# lab_stop [PID...]: the first half of a lab script's EXIT trap. Turns errexit off, so that
# every step of the cleanup runs whatever the ones before did; kills (SIGKILL) and reaps each
# PID given (clients, servers, floods); stops floodgate-tx, the floodctl daemon and floodgate
# ($tx_pid, $ctl_pid, $fg_pid, those that are set).
lab_stop() {
  set +e
  local pid
  for pid in "$@"; do
    [ -n "$pid" ] || continue
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  [ -n "${tx_pid:-}" ] && stop "$tx_pid"
  [ -n "${ctl_pid:-}" ] && stop "$ctl_pid"
  [ -n "${fg_pid:-}" ] && stop "$fg_pid"
  return 0
}

# lab_remove: the second half: the wire of make_wire ($tag, $out_ns, $in_ns, where the script
# has one) and the DPDK runtime directories, a bpffs the script mounted on $work/bpffs, $work
# itself (kept, and said so, with FG_LAB_KEEP set), and the hugepages scripts/hugepages.sh
# reserved for this run ($hugepages_before, where the script read it).
# shellcheck disable=SC2154  # $tag, $in_ns, $work, $hugepages: set by the sourcing script
lab_remove() {
  set +e
  if [ -n "${out_ns:-}" ]; then
    remove_wire "$tag" "$out_ns" "$in_ns"
  else
    rm -rf "/var/run/dpdk/$tag" "/var/run/dpdk/$tag-tx"
  fi
  mountpoint -q "$work/bpffs" 2>/dev/null && umount "$work/bpffs"
  if [ -n "${FG_LAB_KEEP:-}" ]; then echo "$lab_name: kept $work"; else rm -rf "$work"; fi
  [ -n "${hugepages_before:-}" ] && echo "$hugepages_before" > "$hugepages" 2>/dev/null
  return 0
}

# lab_cleanup [PID...]: the whole EXIT trap of a script with nothing of its own to undo.
lab_cleanup() {
  lab_stop "$@"
  lab_remove
}
