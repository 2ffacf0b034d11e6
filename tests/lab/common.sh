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

wait_for() {  # wait_for FILE PATTERN SECONDS PID: bounded wait for a line PID prints
  local deadline=$(( $(date +%s) + $3 ))
  until grep -q "$2" "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "$lab_name: timed out waiting for '$2' in $1"; cat "$1"; return 1; fi
    if ! kill -0 "$4" 2>/dev/null; then echo "$lab_name: the process writing $1 exited"; cat "$1"; return 1; fi
    sleep 0.1
  done
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
