// Answers: what floodgate sends back, in place of a packet a rule did not admit. Two steps, both
// pure functions over a frame's bytes (no EAL, no mbuf: only DPDK's inline checksum helpers
// from <rte_ip.h>; unit-tested and fuzzed like the parser):
//
//   plan_answer()  decides whether this packet may be answered with this kind at all (RFC 1122
//                  and RFC 4443's "never answer" list, the DNS query's shape, room to quote)
//                  and records what the builder needs, reading the frame only;
//   build_answer() rewrites the frame in place into the answer and returns its length.
//
// Between the two the pipeline charges the answer caps, so that an answer that would not be
// sent costs nothing to build. Every answer goes back to the packet's source, out of the port
// it came in on: Ethernet addresses swapped, VLAN tags kept as they were, a fresh IP header
// (IPv6 extension headers are not echoed), checksums computed in software. An answer is never
// longer than the frame it answers (the builders guarantee it: tests/test_answer_builders.cpp), so
// floodgate can never amplify a spoofed flood toward its victim.
//
// One file per kind (answer_syn_cookie.cpp, answer_syn_proxy.cpp, answer_dns.cpp,
// answer_rst.cpp, answer_icmp.cpp), picked through a table in answer.cpp generated from
// FG_ANSWER_KINDS; what they share (the "never answer" checks, Ethernet and IP headers,
// checksums) is in answer_kinds.h.
//
// The answers, byte for byte (IP header: IPv4 IHL 5, TOS 0, ID 0, DF, TTL 64; IPv6 traffic
// class and flow label 0, hop limit 64, no extension headers; addresses swapped):
//   syn_cookie        TCP SYN-ACK, ports swapped, seq = ~cookie, ack = cookie, window 0, no
//                     options (answer_syn_cookie.cpp says why the ack is not ISN + 1).
//   dns_truncated     UDP, ports swapped: the query's header and question, with QR and TC set,
//                     RD and CD kept, everything else 0 and one question (EDNS is dropped).
//   tcp_rst           TCP RST as RFC 9293 3.10.7.1 says: seq = SEG.ACK if the segment had ACK,
//                     else seq 0, ack = SEG.SEQ + SEG.LEN and RST|ACK. Window 0, no payload.
//   syn_proxy         TCP SYN-ACK, ports swapped, seq = cookie, ack = SEG.SEQ + 1, window and
//                     options as a server's: MSS, SACK-permitted and window scale, each only if
//                     the SYN offered it; no timestamps (answer_syn_proxy.cpp).
//   icmp_unreachable  ICMPv4 3/13 or ICMPv6 1/1 (administratively prohibited) quoting the
//                     IP datagram from its IP header on, as much as fits in the frame (at most
//                     576 bytes of IPv4 answer, RFC 1812 4.3.2.3; 1280 of IPv6, RFC 4443 2.4).
// A frame shorter than 60 bytes (the Ethernet minimum without FCS) is padded with zeros up to
// min(60, the original frame's length); answer_len counts the padding.
#pragma once

#include <cstdint>

#include "dataplane/answer/proxy_cookie.h"
#include "dataplane/api/answers.h"
#include "dataplane/core/parse.h"

namespace floodgate {

inline constexpr uint8_t kOfferedMss = 1;
inline constexpr uint8_t kOfferedSack = 2;
inline constexpr uint8_t kOfferedWscale = 4;

// As written in counters, metric labels and messages.
const char *answer_kind_name(AnswerKind k);
const char *no_answer_name(NoAnswer r);

struct AnswerPlan {
    AnswerKind kind = AnswerKind::count;  // count: no answer (see why)
    NoAnswer why = NoAnswer::none;
    // syn_cookie: the acknowledgment number the SYN-ACK carries (deliberately not the
    // client's ISN + 1, see answer_syn_cookie.cpp); syn_proxy: the SYN-ACK's own sequence
    // number (proxy_cookie.h). Set by the pipeline after planning.
    uint32_t cookie = 0;
    // syn_proxy: which options the SYN offered (kOffered*: each is answered) and what the
    // client asked for (the cookie carries it), from the planner; what floodgate announces
    // for the server behind it (MSS, window scale, window), from the pipeline.
    uint8_t offered = 0;
    ProxiedOptions client;
    uint16_t mss = 0;
    uint8_t wscale = 0;
    uint16_t window = 0;
    // dns_truncated: bytes of the DNS message kept (header + the one question).
    uint16_t dns_keep = 0;
    // icmp_unreachable: bytes of the original IP datagram quoted, from its IP header on.
    uint16_t icmp_quote = 0;
    uint32_t answer_len = 0;  // frame length of the answer build_answer() will write
    // Leave the IPv4 header checksum and the TCP or UDP checksum to the port (the answer then
    // carries the pseudo-header sum in its L4 checksum field, as TX checksum offload wants);
    // set by the pipeline where the port offers it, never for ICMP (no port computes those).
    bool offload_checksums = false;
    bool ok() const { return kind != AnswerKind::count; }
};

// Whether the frame (len bytes present and on the wire: a frame to be answered is always
// whole) may be answered with kind; info is what parse_packet found (status ip). Reads only
// frame[0, len), and only where info says headers are. The shared checks come first, in this
// order: source then destination unicast (Ethernet and IP), then not_first_fragment; then the
// kind's own. not_contiguous is the pipeline's to give: this function sees one buffer.
AnswerPlan plan_answer(AnswerKind kind, const uint8_t *frame, uint32_t len, const PacketInfo &info);

// Rewrites the frame into the planned answer, in place; returns plan.answer_len (<= len).
// plan, info and the frame must be those plan_answer saw (plus plan.cookie); a plan that is
// not ok, or not for a frame of len bytes, builds nothing and returns 0.
uint32_t build_answer(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t len);

}  // namespace floodgate
