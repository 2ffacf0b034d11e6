// What the answer tests read and check in frames, written apart from dataplane/answer/ on
// purpose: big-endian fields, the RFC 1071 sum and the upper-layer checksum with its
// pseudo-header, the offset of an answer's L4 header, and the DNS names and question they ask.
// Used by the answer builders' unit tests (tests/test_answer_*.cpp), the answers through
// `floodgate replay` (tests/scenario/test_replayed_*.cpp) and tests/fuzz/fuzz_answer.cpp; header
// only and without gtest, for the fuzz harness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace floodgate::test {

// Fields of a frame (std::vector<uint8_t>, tests/pkt_builder.h's Frame), bounds-checked.
inline uint16_t be16(const std::vector<uint8_t> &f, size_t at) {
    return static_cast<uint16_t>(f.at(at) << 8 | f.at(at + 1));
}
inline uint32_t be32(const std::vector<uint8_t> &f, size_t at) {
    return uint32_t{be16(f, at)} << 16 | be16(f, at + 2);
}
inline void put16(std::vector<uint8_t> *f, size_t at, uint16_t v) {
    f->at(at) = static_cast<uint8_t>(v >> 8);
    f->at(at + 1) = static_cast<uint8_t>(v);
}
inline void put32(std::vector<uint8_t> *f, size_t at, uint32_t v) {
    put16(f, at, static_cast<uint16_t>(v >> 16));
    put16(f, at + 2, static_cast<uint16_t>(v));
}

// RFC 1071: the one's-complement sum of 16-bit big-endian words, folded.
inline uint16_t ones_sum(const uint8_t *p, size_t n, uint32_t acc = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) acc += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) acc += static_cast<uint32_t>(p[n - 1] << 8);
    while (acc >> 16 != 0) acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(acc);
}

// The sum over the upper layer at frame + l4 (l4_len bytes, checksum field included) and,
// except for ICMPv4 (protocol 1), the pseudo-header of the IP header at frame + l3 (RFC 768,
// RFC 9293 3.1, RFC 8200 8.1): 0xffff when it verifies. The caller keeps it within the frame.
inline uint16_t l4_sum(const uint8_t *frame, size_t l3, size_t l4, size_t l4_len, uint8_t family,
                       uint8_t proto) {
    uint32_t acc = 0;
    if (!(family == 4 && proto == 1)) {
        const size_t addrs = family == 4 ? l3 + 12 : l3 + 8;
        acc = ones_sum(frame + addrs, family == 4 ? 8 : 32);
        acc += proto;
        acc += static_cast<uint32_t>(l4_len);
    }
    return ones_sum(frame + l4, l4_len, acc);
}

// Where the L4 header of an Ethernet frame starts, past its 802.1Q and 802.1ad tags and an IP
// header without options or extension headers (what every answer has).
inline size_t plain_l4_offset(const std::vector<uint8_t> &f) {
    size_t at = 12;
    while (f.size() >= at + 2 && (f[at] == 0x81 || f[at] == 0x88) && f[at + 1] == 0x00) at += 4;
    const bool v6 = f.size() >= at + 2 && f[at] == 0x86 && f[at + 1] == 0xdd;
    return at + 2 + (v6 ? 40 : 20);
}

// A DNS name in wire form: each label after its length, then the root's zero.
inline std::vector<uint8_t> dns_name(const std::vector<std::string> &labels) {
    std::vector<uint8_t> out;
    for (const std::string &l : labels) {
        out.push_back(static_cast<uint8_t>(l.size()));
        out.insert(out.end(), l.begin(), l.end());
    }
    out.push_back(0);
    return out;
}

// One question: the name, QTYPE and QCLASS (by default www.example.com, A, IN).
inline std::vector<uint8_t> dns_question(
    const std::vector<uint8_t> &name = dns_name({"www", "example", "com"}), uint16_t qtype = 1,
    uint16_t qclass = 1) {
    std::vector<uint8_t> q = name;
    q.insert(q.end(), {static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype),
                       static_cast<uint8_t>(qclass >> 8), static_cast<uint8_t>(qclass)});
    return q;
}

}  // namespace floodgate::test
