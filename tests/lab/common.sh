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
