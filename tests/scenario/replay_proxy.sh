#!/usr/bin/env bash
# syn-proxy in `floodgate replay --inside`: floodgate-gen's two-way capture of proxied
# connections (perf/floodgate_gen.cpp, `proxied`: both sides as taps on floodgate's two ports
# would see them, the clients' ACKs carrying the cookies of replay's fixed key) replayed with a
# syn-proxy rule, and what floodgate writes checked against the capture's own numbers by
# tests/scenario/replay_proxy_check.py, reading the files with tshark (every checksum check on):
#
#   replay_proxy.sh BUILD_DIR      exit 77 (skipped) without tshark
set -euo pipefail
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v tshark >/dev/null; then
  echo "tshark is not installed: skipped (apt-get install tshark)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/rules.yaml" <<'EOF'
rules:
  - name: web
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-proxy
EOF
"$build/perf/floodgate-gen" proxied --out "$work/two-way.pcap" >/dev/null
"$build/dataplane/floodgate" replay --config "$work/rules.yaml" --in "$work/two-way.pcap" \
  --inside 198.18.1.1/32,2001:db8:1::1/128 --pass "$work/pass.pcap" --drop "$work/drop.pcap" \
  --answers "$work/answers.pcap" --stats "$work/stats.json" >"$work/replay.txt"
cat "$work/replay.txt"
/usr/bin/python3 "$here/replay_proxy_check.py" "$work"
