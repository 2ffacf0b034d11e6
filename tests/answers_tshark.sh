#!/usr/bin/env bash
# Every kind of answer (dataplane/answer/answer.h) judged by Wireshark's dissectors, which know nothing
# of floodgate: tests/test_answer_builders.cpp's AnswerPcap test writes each request and its
# answer, on IPv4 and IPv6, untagged, 802.1Q and QinQ, with IPv4 options and IPv6 extension
# headers, and tshark (4.0) reads the file back with every checksum check on:
#
#   tshark -r answers.pcap -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
#          -o udp.check_checksum:TRUE -V
#
# (ICMP and ICMPv6 checksums are always checked: those dissectors have no preference for it.)
# It fails on a bad checksum, a malformed packet, or any Warning or Error expert item, but two
# that are the answers' purpose, each only on the frames it belongs to:
#   "Connection reset (RST)"                  on a RST (tshark flags every RST);
#   "ACKed segment that wasn't captured ..."  on the SYN-ACK, which acknowledges the cookie,
#                                             not the SYN (answer_syn_cookie.cpp).
# Expert items inside an ICMP error's quote are the quoted datagram's, not the answer's: tshark
# checks the TCP checksum of a quoted segment cut short, which cannot match (the quote keeps the
# segment's first bytes only). Malformed is checked there too.
# Then it checks what tshark decodes: DNS responses with TC set, SYN-ACKs with the cookie as
# ack, syn-proxy's SYN-ACKs with the cookie as seq and a server's options, the two kinds of RST, ICMP 3/13 and ICMPv6 1/1, and every top-level checksum "Good".
#
#   answers_tshark.sh UNIT_TESTS_BINARY     exit 77 (skipped) without tshark
set -euo pipefail
unit_tests=$1
if ! command -v tshark > /dev/null; then
  echo "tshark is not installed: skipped (apt-get install tshark)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pcap=$work/answers.pcap

FG_ANSWER_PCAP=$pcap "$unit_tests" --gtest_filter='AnswerPcap.*' > "$work/gtest.txt" ||
  { cat "$work/gtest.txt"; exit 1; }
[ -s "$pcap" ] || { echo "FAIL: $unit_tests wrote no $pcap"; cat "$work/gtest.txt"; exit 1; }

prefs=(-o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE)
tshark -r "$pcap" "${prefs[@]}" -V > "$work/verbose.txt" 2> "$work/tshark-err.txt" ||
  { cat "$work/tshark-err.txt"; exit 1; }
count() { tshark -r "$pcap" "${prefs[@]}" -Y "$1" 2> /dev/null | wc -l; }

fail=0
# -V prints each top-level protocol at column 0 and its fields indented by 4; a quoted
# datagram is a protocol indented by 4 inside the ICMP layer.
awk '
  function problem(msg) { print "FAIL: frame " frame ": " msg; bad = 1 }
  /^Frame [0-9]+:/ { frame = $2 + 0; layer = ""; quote = 0; flags[frame] = ""
                     frames++; next }
  /^[^ ]/ { layer = $0; quote = 0
            if (layer ~ /^Internet Protocol Version 4/) v4++ }
  layer ~ /^Internet Control Message Protocol/ && /^    Internet Protocol Version/ { quote = 1 }
  layer ~ /^Transmission Control Protocol/ && /^    Flags: 0x/ { flags[frame] = $0 }
  /Malformed/ { problem($0) }
  quote { if (/\[Expert Info \((Warning|Error)\//) quoted++; next }
  /^    \[Header checksum status: Good\]/ && layer ~ /^Internet Protocol Version 4/ { v4_good++ }
  /^    \[Checksum Status: Good\]/ && layer ~ /^(Transmission Control|User Datagram|Internet Control Message) Protocol/ { l4_good++ }
  /Bad checksum|incorrect, should be/ { problem($0) }
  /\[Expert Info \((Warning|Error)\// {
    msg = $0; sub(/^ *\[Expert Info \([A-Za-z]+\/[A-Za-z]+\): /, "", msg); sub(/\]$/, "", msg)
    if (msg == "Connection reset (RST)" && flags[frame] ~ /RST/) { rst++; next }
    if (msg ~ /^ACKed segment that wasn.t captured/ && flags[frame] ~ /\(SYN, ACK\)/) { synack++; next }
    problem(msg)
  }
  END {
    if (frames == 0) { print "FAIL: no frames"; exit 1 }
    if (l4_good != frames) { print "FAIL: " l4_good " of " frames " upper-layer checksums Good"; bad = 1 }
    if (v4_good != v4) { print "FAIL: " v4_good " of " v4 " IPv4 header checksums Good"; bad = 1 }
    print "tshark -V: " frames " frames, " l4_good " upper-layer and " v4_good " IPv4 header checksums Good"
    print "tshark -V: expert items let pass: " rst + 0 " \"Connection reset (RST)\" on RSTs, " synack + 0 \
      " \"ACKed segment that wasn'"'"'t captured\" on SYN-ACKs, " quoted + 0 " inside ICMP quotes"
    exit bad
  }' "$work/verbose.txt" || fail=1

nets=$(count 'dns.flags.response == 0')
frames=$(count 'frame')
expect() {  # what, expected count, display filter
  local got
  got=$(count "$3")
  if [ "$got" -eq "$2" ]; then echo "ok: $1: $got"; else echo "FAIL: $1: $got, not $2 ($3)"; fail=1; fi
}
if [ "$nets" -lt 1 ] || [ "$frames" -ne $((14 * nets)) ]; then
  echo "FAIL: $frames frames for $nets nets: AnswerPcap writes 14 a net"
  fail=1
fi
expect "DNS responses, TC set, header and question only" "$nets" \
  'udp.srcport == 53 && dns.flags.response == 1 && dns.flags.truncated == 1 && dns.flags.opcode == 0 && dns.flags.authoritative == 0 && dns.flags.recdesired == 1 && dns.flags.recavail == 0 && dns.flags.rcode == 0 && dns.count.queries == 1 && dns.count.answers == 0 && dns.count.auth_rr == 0 && dns.count.add_rr == 0 && dns.qry.name == "www.example.com"'
expect "SYN-ACKs, ack = the cookie, seq = ~cookie, window 0" "$nets" \
  'tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.ack_raw == 0x5eed1234 && tcp.seq_raw == 0xa112edcb && tcp.window_size_value == 0 && tcp.len == 0'
expect "syn-proxy's SYN-ACKs: seq = the cookie, ack = ISN + 1, a server's window and options" "$nets" \
  'tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.seq_raw == 0x5eed1234 && tcp.ack_raw == 0x11223345 && tcp.window_size_value == 65535 && tcp.options.mss_val == 1460 && tcp.options.sack_perm && tcp.options.wscale.shift == 7 && !tcp.options.timestamp.tsval && tcp.len == 0'
expect "RST|ACK for a SYN, ack = ISN + 1" "$nets" \
  'tcp.flags.reset == 1 && tcp.flags.ack == 1 && tcp.seq_raw == 0 && tcp.ack_raw == 0x11223345 && tcp.len == 0'
expect "RST for an ACK, seq = its ack" "$nets" \
  'tcp.flags.reset == 1 && tcp.flags.ack == 0 && tcp.seq_raw == 2000 && tcp.len == 0'
expect "ICMP administratively prohibited" "$((2 * nets))" \
  '(icmp.type == 3 && icmp.code == 13) || (icmpv6.type == 1 && icmpv6.code == 1)'
# The requests have TTL 55, so that 64 can only be the answer's (a quote is a second IP layer).
expect "answers with TTL / hop limit 64" "$((7 * nets))" \
  '(ip.src == 203.0.113.9 && ip.ttl == 64 && ip.flags.df == 1) || (ipv6.src == 2001:db8:1::9 && ipv6.hlim == 64)'

if [ "$fail" -ne 0 ]; then
  echo "tshark's verdict on the answers failed; its view of them:"
  tshark -r "$pcap" "${prefs[@]}" 2> /dev/null || true
  exit 1
fi
echo "PASS: tshark finds every answer well-formed, with good checksums"
