#!/usr/bin/env bash
# The main job on the default config: installs what is missing, builds, generates a demo
# attack (a DNS flood, a spoofed SYN flood, an ICMP flood, an IPv6 /64 rotation, a blocked
# network and broken frames, over 20 well-behaved clients) and replays it through floodgate
# with config/default.yaml, printing what was dropped and why.
source "$(dirname "$0")/lib.sh"
fg_install_deps
fg_build

out="$(mktemp -d /tmp/floodgate-demo.XXXXXX)"
"$FG_BUILD/perf/floodgate-gen" demo --out "$out/attack.pcap"
echo "==> floodgate replay --config config/default.yaml --in $out/attack.pcap"
"$FG_BUILD/dataplane/floodgate" replay --config "$FG_ROOT/config/default.yaml" \
  --in "$out/attack.pcap" --pass "$out/passed.pcap" --drop "$out/dropped.pcap" \
  --stats "$out/stats.json"
echo "==> passed frames: $out/passed.pcap, dropped: $out/dropped.pcap, counters: $out/stats.json"
