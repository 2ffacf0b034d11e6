// The frames the answer builders' unit tests (tests/test_answer_builders.cpp,
// test_answer_refusals.cpp, test_answer_any_frame.cpp) ask answers for, and how they ask: each
// carried on every Net (IPv4 and IPv6, tags, options and extension headers), from a client to a
// server; plan_answer() and build_answer() on exact-size heap copies (for ASan), and the reason
// a kind refuses a frame.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/core/parse.h"
#include "tests/answer_bytes.h"
#include "tests/pkt_builder.h"

namespace floodgate::answer_test {

using test::Frame;
using test::PacketBuilder;
// The builder's protocol numbers, not the dataplane's: the tests spell out what they expect.
using test::kProtoGre;
using test::kProtoIcmp;
using test::kProtoIcmpv6;
using test::kProtoTcp;
using test::kProtoUdp;
// The tests' own readers and checksum (tests/answer_bytes.h).
using test::be16;
using test::be32;
using test::dns_name;
using test::ones_sum;
using test::put16;
using test::put32;

inline constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

inline constexpr test::Mac kClientMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x07};
inline constexpr test::Mac kServerMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x09};
inline constexpr const char *kClient4 = "198.51.100.7";
inline constexpr const char *kServer4 = "203.0.113.9";
inline constexpr const char *kClient6 = "2001:db8::7";
inline constexpr const char *kServer6 = "2001:db8:1::9";

// The upper-layer checksum sum of tests/answer_bytes.h over a frame, which must hold the
// upper layer (0 when it does not): 0xffff when it verifies.
inline uint16_t l4_sum(const Frame &f, size_t l3, size_t l4, size_t l4_len, uint8_t family,
                       uint8_t proto) {
    EXPECT_LE(l4 + l4_len, f.size());
    if (l4 + l4_len > f.size()) return 0;
    return test::l4_sum(f.data(), l3, l4, l4_len, family, proto);
}

// Bytes [from, to) of a frame (expected to hold them).
inline Frame slice(const Frame &f, size_t from, size_t to) {
    EXPECT_LE(to, f.size());
    to = std::min(to, f.size());
    from = std::min(from, to);
    return Frame(f.begin() + static_cast<ptrdiff_t>(from), f.begin() + static_cast<ptrdiff_t>(to));
}

// ---- Frames ---------------------------------------------------------------------------------

// Where a frame's packet is carried: the answer must keep the tags, and write a fresh IP header
// (shorter than one with options or extension headers).
struct Net {
    const char *name;
    uint8_t family;
    unsigned tags;  // 0; 1: 802.1Q 100; 2: 802.1ad 10 outside 802.1Q 100
    // IPv4: 8 bytes of options (Router Alert, 3 NOP, EOL); IPv6: hop-by-hop (8) and
    // destination options (16).
    bool extra_headers;

    size_t l3() const { return 14 + 4 * tags; }
    size_t ip_header() const {
        return family == 4 ? (extra_headers ? 28 : 20) : (extra_headers ? 64 : 40);
    }
    size_t l4() const { return l3() + ip_header(); }
    size_t answer_ip_header() const { return family == 4 ? 20 : 40; }
    size_t answer_l4() const { return l3() + answer_ip_header(); }
    // The client's and the server's addresses on this family, in network order.
    Frame client() const { return address(kClient4, kClient6); }
    Frame server() const { return address(kServer4, kServer6); }
    Frame address(const char *v4, const char *v6) const {
        if (family == 4) {
            const auto a = test::ipv4_addr(v4);
            return Frame(a.begin(), a.end());
        }
        const auto a = test::ipv6_addr(v6);
        return Frame(a.begin(), a.end());
    }
};

inline constexpr Net kNets[] = {
    {"ipv4", 4, 0, false},        {"ipv4_vlan", 4, 1, false},    {"ipv4_qinq", 4, 2, false},
    {"ipv4_options", 4, 1, true}, {"ipv6", 6, 0, false},         {"ipv6_vlan", 6, 1, false},
    {"ipv6_ext", 6, 0, true},     {"ipv6_qinq_ext", 6, 2, true},
};
inline const Net &net4() {
    return kNets[0];
}
inline const Net &net6() {
    return kNets[4];
}

// Client to server, on n; the addresses may be overridden (the "never answer" cases).
inline PacketBuilder base(const Net &n, const char *src = nullptr, const char *dst = nullptr) {
    PacketBuilder b;
    b.macs(kClientMac, kServerMac).ttl(55);  // not the answers' 64
    if (n.tags == 2) b.qinq(10);
    if (n.tags >= 1) b.vlan(100);
    if (n.family == 4) {
        b.ipv4(src != nullptr ? src : kClient4, dst != nullptr ? dst : kServer4);
        if (n.extra_headers) b.ipv4_options({0x94, 0x04, 0x00, 0x00, 1, 1, 1, 0});
    } else {
        b.ipv6(src != nullptr ? src : kClient6, dst != nullptr ? dst : kServer6);
        if (n.extra_headers) b.hop_by_hop().dest_opts(16);
    }
    return b;
}

// The builder writes tags with priority 0; PCP 5 and DEI 1 show that the answer keeps them.
inline Frame build(const Net &n, const PacketBuilder &b) {
    Frame f = b.build();
    for (unsigned i = 0; i < n.tags; ++i) f.at(14 + 4 * i) |= 0xb0;
    return f;
}

// A TCP segment with sequence and acknowledgment numbers (which the builder leaves 0) and its
// checksum made right again, so that tshark sees valid requests before the answers.
inline Frame with_seq_ack(Frame f, const Net &n, uint32_t seq, uint32_t ack) {
    const size_t l4 = n.l4();
    put32(&f, l4 + 4, seq);
    put32(&f, l4 + 8, ack);
    put16(&f, l4 + 16, 0);
    put16(&f, l4 + 16,
          static_cast<uint16_t>(~l4_sum(f, n.l3(), l4, f.size() - l4, n.family, kProtoTcp)));
    return f;
}
inline Frame tcp_frame(const Net &n, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0,
                       uint16_t src_port = 40000, uint8_t data_offset_words = 5) {
    return with_seq_ack(build(n, base(n)
                                     .tcp(src_port, 443, flags)
                                     .tcp_data_offset(data_offset_words)
                                     .payload(payload + (data_offset_words - 5) * 4u)),
                        n, seq, ack);
}

// Linux 6.x's SYN options: MSS 1460, SACK-permitted, timestamps, NOP, window scale 7.
inline const std::vector<uint8_t> kLinuxSynOptions = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                                      0x12, 0x34, 0,    0,    0, 0, 1, 3,  3, 7};

// A SYN whose header carries options (a multiple of 4 bytes).
inline Frame syn_with_options(const Net &n, const std::vector<uint8_t> &options,
                              uint32_t seq = 0x11223344, uint16_t src_port = 40000) {
    const auto words = static_cast<uint8_t>(5 + options.size() / 4);
    return with_seq_ack(
        build(n, base(n).tcp(src_port, 443, kSyn).tcp_data_offset(words).payload(options)), n, seq,
        0);
}

inline const std::vector<uint8_t> kWwwExampleCom = dns_name({"www", "example", "com"});  // 17 bytes
// An OPT record (RFC 6891 6.1.2): root name, type 41, 1232-byte payload, DO 0, no options.
inline const std::vector<uint8_t> kOptRecord = {0x00, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};

struct DnsMsg {
    uint16_t id = 0x1234;
    uint8_t flags2 = 0x01;  // QR 0, opcode 0, RD
    uint8_t flags3 = 0x20;  // AD, as dig sets it in queries
    uint16_t qdcount = 1, ancount = 0, nscount = 0, arcount = 1;
    std::vector<uint8_t> name = kWwwExampleCom;
    uint16_t qtype = 1, qclass = 1;
    std::vector<uint8_t> rest = kOptRecord;

    std::vector<uint8_t> question() const { return test::dns_question(name, qtype, qclass); }
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> m = {static_cast<uint8_t>(id >> 8),
                                  static_cast<uint8_t>(id),
                                  flags2,
                                  flags3,
                                  static_cast<uint8_t>(qdcount >> 8),
                                  static_cast<uint8_t>(qdcount),
                                  static_cast<uint8_t>(ancount >> 8),
                                  static_cast<uint8_t>(ancount),
                                  static_cast<uint8_t>(nscount >> 8),
                                  static_cast<uint8_t>(nscount),
                                  static_cast<uint8_t>(arcount >> 8),
                                  static_cast<uint8_t>(arcount)};
        const std::vector<uint8_t> q = question();
        m.insert(m.end(), q.begin(), q.end());
        m.insert(m.end(), rest.begin(), rest.end());
        return m;
    }
};

inline Frame dns_frame(const Net &n, const std::vector<uint8_t> &msg, uint16_t src_port = 33333) {
    return build(n, base(n).udp(src_port, 53).payload(msg));
}
inline Frame dns_frame(const Net &n, const DnsMsg &m = {}) {
    return dns_frame(n, m.bytes());
}

inline Frame udp_frame(const Net &n, size_t payload, uint16_t src_port = 5000) {
    return build(n, base(n).udp(src_port, 9999).payload(payload));
}

// A frame each kind answers, on n.
inline Frame valid_frame(AnswerKind kind, const Net &n) {
    switch (kind) {
        case AnswerKind::syn_cookie:
            return tcp_frame(n, kSyn, 0x11223344, 0);
        case AnswerKind::dns_truncated:
            return dns_frame(n);
        case AnswerKind::tcp_rst:
            return tcp_frame(n, kAck | kPsh, 1000, 2000, 10);
        case AnswerKind::syn_proxy:
            return syn_with_options(n, kLinuxSynOptions);
        case AnswerKind::icmp_unreachable:
        case AnswerKind::count:
            break;
    }
    return udp_frame(n, 100);
}

// ---- Answering ------------------------------------------------------------------------------

// A heap buffer of exactly the frame's size, so that ASan sees any access past it.
inline std::unique_ptr<uint8_t[]> heap_copy(const uint8_t *p, size_t n) {
    auto buf = std::make_unique<uint8_t[]>(n);
    if (n != 0) std::memcpy(buf.get(), p, n);
    return buf;
}

struct Answer {
    AnswerPlan plan;
    Frame frame;  // answer_len bytes
};

inline Answer answer(AnswerKind kind, const Frame &in, uint32_t cookie = 0) {
    Answer a;
    const auto len = static_cast<uint32_t>(in.size());
    PacketInfo info;
    EXPECT_EQ(parse_packet(in.data(), len, &info), ParseStatus::ip);
    auto buf = heap_copy(in.data(), in.size());
    a.plan = plan_answer(kind, buf.get(), len, info);
    if (!a.plan.ok()) return a;
    EXPECT_LE(a.plan.answer_len, len);
    a.plan.cookie = cookie;
    if (kind == AnswerKind::syn_proxy) {  // what a pipeline announces for a Linux server
        a.plan.mss = 1460;
        a.plan.wscale = 7;
        a.plan.window = 65535;
    }
    const uint32_t out = build_answer(a.plan, info, buf.get(), len);
    EXPECT_EQ(out, a.plan.answer_len);
    EXPECT_LE(out, len);
    a.frame.assign(buf.get(), buf.get() + std::min(out, len));
    return a;
}

// Why kind refuses the frame: "none" if it does not.
inline std::string why(AnswerKind kind, const Frame &in) {
    const Answer a = answer(kind, in);
    EXPECT_EQ(a.plan.ok(), a.plan.why == NoAnswer::none);
    if (!a.plan.ok()) {
        EXPECT_EQ(a.plan.answer_len, 0u);
    }
    return no_answer_name(a.plan.why);
}

inline constexpr AnswerKind kKinds[] = {AnswerKind::syn_cookie, AnswerKind::dns_truncated,
                                        AnswerKind::tcp_rst, AnswerKind::icmp_unreachable,
                                        AnswerKind::syn_proxy};

}  // namespace floodgate::answer_test
