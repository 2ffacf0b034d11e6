// A rule's payload match on one packet (match.payload; dataplane/patterns/payload_database.h
// compiles the patterns): Hyperscan's block scan over the rule's window of the L4 payload, with the
// core's scratch space. No allocation, no lock. Only captured bytes are scanned (a capture cut
// before the window does not match), and never past the IP length (Ethernet padding is not
// payload).
#pragma once

#include <cstdint>

#include "dataplane/api/rules.h"
#include "dataplane/core/parse.h"

struct hs_database;
struct hs_scratch;

namespace floodgate {

// Where the L4 payload starts and ends in the frame (end <= captured); start >= end when
// there is none. TCP's data offset, UDP's and ICMP's 8 bytes; other protocols have no header
// here (their payload is everything after the IP header).
struct PayloadSpan {
    uint32_t start = 0;
    uint32_t end = 0;
};
PayloadSpan l4_payload(const uint8_t *frame, uint32_t captured, const PacketInfo &p);

// A rule whose only pattern is a literal of 2-16 bytes, matched case-sensitively (len 0: not
// such a rule). Its window's first positions are searched for it before Hyperscan is called: a
// flood's fixed payload usually holds it there, and a Hyperscan call costs ~30 ns more when it
// matches than when it does not (perf/results/payload-literal.md).
struct PayloadLiteral {
    uint8_t bytes[16] = {};
    uint8_t len = 0;
};
inline constexpr uint32_t kLiteralSpan = 16;  // positions searched with one SSE2 compare

// Whether lit is in w[0, len) at a position below kLiteralSpan: 1 yes; 0 no, and no position is
// left (the window is that short); -1 no, and the rest of the window is Hyperscan's to search.
int literal_near_start(const uint8_t *w, uint32_t len, const PayloadLiteral &lit);

// The bytes the shortest of the patterns needs, when every one is a literal or a DNS suffix
// (its labels' wire form); 0 when one is a regular expression (its width is the engine's).
uint32_t shortest_pattern(const std::vector<PayloadPattern> &patterns);

// Whether one of db's patterns matches frame's payload in [offset, offset + depth) (depth 0:
// to the end). False for a packet without an L4 header. lit: the rule's literal, if it is one;
// min_len: shortest_pattern(), a shorter window is not searched (bench_payload: a flood of
// small frames against a rule of longer literals costs no engine call).
bool payload_matches(const hs_database *db, const PayloadLiteral &lit, uint32_t min_len,
                     uint32_t offset, uint32_t depth, const uint8_t *frame, uint32_t captured,
                     const PacketInfo &p, hs_scratch *scratch);

}  // namespace floodgate
