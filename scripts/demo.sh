#!/usr/bin/env bash
# The main job on the default config: installs what is missing, builds, then runs floodgate
# live between two network namespaces (an outside one with clients and attackers, an inside
# one with the server, joined by veth pairs, on net_af_packet with two workers), sends a short
# mixed flood (10 well-behaved clients; a DNS flood; spoofed SYNs; an IPv6 flood rotating in
# one /64; an ICMP flood), prints what reached the server and floodgate's per-rule counters,
# and cleans up. Then the same attack is replayed offline with `floodgate replay`, writing the
# answers floodgate would send and its report (per rule over time, one HTML file). Last, real
# clients through answers (tests/lab/answers.sh show): curl against a web server under a spoofed
# SYN flood, dig against dnsmasq under a DNS flood, with and without the answers, and the SYN
# flood once more with the SYN proxy, floodgate's best answer, beside syn-auth.
source "$(dirname "$0")/lib.sh"
fg_install_deps
fg_build

echo "==> live: floodgate run between two namespaces, config/default.yaml"
bash "$FG_ROOT/tests/lab/lab.sh" "$FG_BUILD" 2 show

out="$(mktemp -d /tmp/floodgate-demo.XXXXXX)"
"$FG_BUILD/perf/floodgate-gen" lab --out "$out/attack.pcap" >/dev/null
echo "==> offline: floodgate replay --config config/default.yaml --in $out/attack.pcap"
"$FG_BUILD/dataplane/floodgate" replay --config "$FG_ROOT/config/default.yaml" \
  --in "$out/attack.pcap" --pass "$out/passed.pcap" --drop "$out/dropped.pcap" \
  --answers "$out/answers.pcap" --stats "$out/stats.json" --report "$out/report.html"
echo "==> passed frames: $out/passed.pcap, dropped: $out/dropped.pcap, answers: $out/answers.pcap, counters: $out/stats.json"
echo "==> the report, one HTML file to open in any browser or mail on: $out/report.html"

echo "==> real clients: curl and dig through floodgate under spoofed SYN and DNS floods (drop, syn-auth, syn-proxy)"
bash "$FG_ROOT/tests/lab/answers.sh" "$FG_BUILD" 1 show
