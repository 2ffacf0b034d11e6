// Answers (dataplane/answer/answer.h). Each kind over IPv4 and IPv6, with and without VLAN tags,
// with and without IPv4 options or IPv6 extension headers, checked field by field against values
// worked out here, and checksums against this file's own RFC 1071 sum; every "never answer"
// case with its reason; and truncated, mutated and random frames, which must never be read or
// written out of bounds (exact-size heap copies, for ASan) nor answered with a longer frame.
// With FG_ANSWER_PCAP set, AnswerPcap writes every kind of answer there for
// tests/answers_tshark.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/core/parse.h"
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

using test::Frame;
using test::PacketBuilder;
// The builder's protocol numbers, not the dataplane's: the tests spell out what they expect.
using test::kProtoGre;
using test::kProtoIcmp;
using test::kProtoIcmpv6;
using test::kProtoTcp;
using test::kProtoUdp;

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

constexpr test::Mac kClientMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x07};
constexpr test::Mac kServerMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x09};
constexpr const char *kClient4 = "198.51.100.7";
constexpr const char *kServer4 = "203.0.113.9";
constexpr const char *kClient6 = "2001:db8::7";
constexpr const char *kServer6 = "2001:db8:1::9";

// ---- The test's own readers and checksum --------------------------------------------------

uint16_t be16(const Frame &f, size_t at) {
    return static_cast<uint16_t>(f.at(at) << 8 | f.at(at + 1));
}
uint32_t be32(const Frame &f, size_t at) {
    return uint32_t{be16(f, at)} << 16 | be16(f, at + 2);
}
void put16(Frame *f, size_t at, uint16_t v) {
    f->at(at) = static_cast<uint8_t>(v >> 8);
    f->at(at + 1) = static_cast<uint8_t>(v);
}
void put32(Frame *f, size_t at, uint32_t v) {
    put16(f, at, static_cast<uint16_t>(v >> 16));
    put16(f, at + 2, static_cast<uint16_t>(v));
}
Frame slice(const Frame &f, size_t from, size_t to) {
    EXPECT_LE(to, f.size());
    to = std::min(to, f.size());
    from = std::min(from, to);
    return Frame(f.begin() + static_cast<ptrdiff_t>(from), f.begin() + static_cast<ptrdiff_t>(to));
}

// RFC 1071: the one's-complement sum of 16-bit big-endian words, folded.
uint16_t ones_sum(const uint8_t *p, size_t n, uint32_t acc = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) acc += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) acc += static_cast<uint32_t>(p[n - 1] << 8);
    while (acc >> 16 != 0) acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(acc);
}

// The sum over the upper layer at l4 (l4_len bytes, checksum field included) and, except for
// ICMPv4, the pseudo-header (RFC 768, RFC 9293 3.1, RFC 8200 8.1): 0xffff when it verifies.
uint16_t l4_sum(const Frame &f, size_t l3, size_t l4, size_t l4_len, uint8_t family,
                uint8_t proto) {
    EXPECT_LE(l4 + l4_len, f.size());
    if (l4 + l4_len > f.size()) return 0;
    uint32_t acc = 0;
    if (!(family == 4 && proto == kProtoIcmp)) {
        const size_t addrs = family == 4 ? l3 + 12 : l3 + 8;
        const size_t addr_bytes = family == 4 ? 8 : 32;
        acc = ones_sum(&f[addrs], addr_bytes);
        acc += proto;
        acc += static_cast<uint32_t>(l4_len);
    }
    return ones_sum(&f[l4], l4_len, acc);
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
    Frame client() const {
        if (family == 4) {
            const auto a = test::ipv4_addr(kClient4);
            return Frame(a.begin(), a.end());
        }
        const auto a = test::ipv6_addr(kClient6);
        return Frame(a.begin(), a.end());
    }
    Frame server() const {
        if (family == 4) {
            const auto a = test::ipv4_addr(kServer4);
            return Frame(a.begin(), a.end());
        }
        const auto a = test::ipv6_addr(kServer6);
        return Frame(a.begin(), a.end());
    }
};

const Net kNets[] = {
    {"ipv4", 4, 0, false},        {"ipv4_vlan", 4, 1, false},    {"ipv4_qinq", 4, 2, false},
    {"ipv4_options", 4, 1, true}, {"ipv6", 6, 0, false},         {"ipv6_vlan", 6, 1, false},
    {"ipv6_ext", 6, 0, true},     {"ipv6_qinq_ext", 6, 2, true},
};
const Net &net4() {
    return kNets[0];
}
const Net &net6() {
    return kNets[4];
}

// Client to server, on n; the addresses may be overridden (the "never answer" cases).
PacketBuilder base(const Net &n, const char *src = nullptr, const char *dst = nullptr) {
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
Frame build(const Net &n, const PacketBuilder &b) {
    Frame f = b.build();
    for (unsigned i = 0; i < n.tags; ++i) f.at(14 + 4 * i) |= 0xb0;
    return f;
}

// A TCP segment with sequence and acknowledgment numbers (which the builder leaves 0) and its
// checksum made right again, so that tshark sees valid requests before the answers.
Frame tcp_frame(const Net &n, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0,
                uint16_t src_port = 40000, uint8_t data_offset_words = 5) {
    Frame f = build(n, base(n)
                           .tcp(src_port, 443, flags)
                           .tcp_data_offset(data_offset_words)
                           .payload(payload + (data_offset_words - 5) * 4u));
    const size_t l4 = n.l4();
    put32(&f, l4 + 4, seq);
    put32(&f, l4 + 8, ack);
    put16(&f, l4 + 16, 0);
    put16(&f, l4 + 16,
          static_cast<uint16_t>(~l4_sum(f, n.l3(), l4, f.size() - l4, n.family, kProtoTcp)));
    return f;
}

std::vector<uint8_t> dns_name(const std::vector<std::string> &labels) {
    std::vector<uint8_t> out;
    for (const std::string &l : labels) {
        out.push_back(static_cast<uint8_t>(l.size()));
        out.insert(out.end(), l.begin(), l.end());
    }
    out.push_back(0);
    return out;
}

const std::vector<uint8_t> kWwwExampleCom = dns_name({"www", "example", "com"});  // 17 bytes
// An OPT record (RFC 6891 6.1.2): root name, type 41, 1232-byte payload, DO 0, no options.
const std::vector<uint8_t> kOptRecord = {0x00, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};

struct DnsMsg {
    uint16_t id = 0x1234;
    uint8_t flags2 = 0x01;  // QR 0, opcode 0, RD
    uint8_t flags3 = 0x20;  // AD, as dig sets it in queries
    uint16_t qdcount = 1, ancount = 0, nscount = 0, arcount = 1;
    std::vector<uint8_t> name = kWwwExampleCom;
    uint16_t qtype = 1, qclass = 1;
    std::vector<uint8_t> rest = kOptRecord;

    std::vector<uint8_t> question() const {
        std::vector<uint8_t> q = name;
        q.insert(q.end(), {static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype),
                           static_cast<uint8_t>(qclass >> 8), static_cast<uint8_t>(qclass)});
        return q;
    }
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

Frame dns_frame(const Net &n, const std::vector<uint8_t> &msg, uint16_t src_port = 33333) {
    return build(n, base(n).udp(src_port, 53).payload(msg));
}
Frame dns_frame(const Net &n, const DnsMsg &m = {}) {
    return dns_frame(n, m.bytes());
}

Frame udp_frame(const Net &n, size_t payload, uint16_t src_port = 5000) {
    return build(n, base(n).udp(src_port, 9999).payload(payload));
}

// A frame each kind answers, on n.
Frame valid_frame(AnswerKind kind, const Net &n) {
    switch (kind) {
        case AnswerKind::syn_cookie:
            return tcp_frame(n, kSyn, 0x11223344, 0);
        case AnswerKind::dns_truncated:
            return dns_frame(n);
        case AnswerKind::tcp_rst:
            return tcp_frame(n, kAck | kPsh, 1000, 2000, 10);
        case AnswerKind::icmp_unreachable:
        case AnswerKind::count:
            break;
    }
    return udp_frame(n, 100);
}

// ---- Answering ------------------------------------------------------------------------------

// A heap buffer of exactly the frame's size, so that ASan sees any access past it.
std::unique_ptr<uint8_t[]> heap_copy(const uint8_t *p, size_t n) {
    auto buf = std::make_unique<uint8_t[]>(n);
    if (n != 0) std::memcpy(buf.get(), p, n);
    return buf;
}

struct Answer {
    AnswerPlan plan;
    Frame frame;  // answer_len bytes
};

Answer answer(AnswerKind kind, const Frame &in, uint32_t cookie = 0) {
    Answer a;
    const auto len = static_cast<uint32_t>(in.size());
    PacketInfo info;
    EXPECT_EQ(parse_packet(in.data(), len, &info), ParseStatus::ip);
    auto buf = heap_copy(in.data(), in.size());
    a.plan = plan_answer(kind, buf.get(), len, info);
    if (!a.plan.ok()) return a;
    EXPECT_LE(a.plan.answer_len, len);
    a.plan.cookie = cookie;
    const uint32_t out = build_answer(a.plan, info, buf.get(), len);
    EXPECT_EQ(out, a.plan.answer_len);
    EXPECT_LE(out, len);
    a.frame.assign(buf.get(), buf.get() + std::min(out, len));
    return a;
}

// Why kind refuses the frame: "none" if it does not.
std::string why(AnswerKind kind, const Frame &in) {
    const Answer a = answer(kind, in);
    EXPECT_EQ(a.plan.ok(), a.plan.why == NoAnswer::none);
    if (!a.plan.ok()) {
        EXPECT_EQ(a.plan.answer_len, 0u);
    }
    return no_answer_name(a.plan.why);
}

// What every answer has: Ethernet addresses swapped, tags kept, a fresh IP header from the
// server to the client, a verified upper-layer checksum, zeros as padding to 60 bytes.
void expect_envelope(const Frame &in, const Frame &out, const Net &n, uint8_t proto,
                     size_t l4_bytes) {
    const size_t l3 = n.l3();
    const size_t ip_end = n.answer_l4() + l4_bytes;
    ASSERT_EQ(out.size(), std::max(ip_end, std::min<size_t>(60, in.size())));
    ASSERT_LE(out.size(), in.size());
    EXPECT_EQ(slice(out, 0, 6), Frame(kClientMac.begin(), kClientMac.end()));
    EXPECT_EQ(slice(out, 6, 12), Frame(kServerMac.begin(), kServerMac.end()));
    EXPECT_EQ(slice(out, 12, l3), slice(in, 12, l3)) << "VLAN tags and ethertype as they were";
    if (n.family == 4) {
        EXPECT_EQ(out[l3], 0x45);
        EXPECT_EQ(out[l3 + 1], 0);
        EXPECT_EQ(be16(out, l3 + 2), 20 + l4_bytes);
        EXPECT_EQ(be16(out, l3 + 4), 0) << "ID";
        EXPECT_EQ(be16(out, l3 + 6), 0x4000) << "DF, offset 0";
        EXPECT_EQ(out[l3 + 8], 64) << "TTL";
        EXPECT_EQ(out[l3 + 9], proto);
        EXPECT_EQ(ones_sum(&out[l3], 20), 0xffff) << "IPv4 header checksum";
        EXPECT_EQ(slice(out, l3 + 12, l3 + 16), n.server());
        EXPECT_EQ(slice(out, l3 + 16, l3 + 20), n.client());
    } else {
        EXPECT_EQ(be32(out, l3), 0x60000000u);
        EXPECT_EQ(be16(out, l3 + 4), l4_bytes);
        EXPECT_EQ(out[l3 + 6], proto) << "no extension headers";
        EXPECT_EQ(out[l3 + 7], 64) << "hop limit";
        EXPECT_EQ(slice(out, l3 + 8, l3 + 24), n.server());
        EXPECT_EQ(slice(out, l3 + 24, l3 + 40), n.client());
    }
    EXPECT_EQ(l4_sum(out, l3, n.answer_l4(), l4_bytes, n.family, proto), 0xffff)
        << "upper-layer checksum";
    for (size_t i = ip_end; i < out.size(); ++i) EXPECT_EQ(out[i], 0) << "padding at " << i;
}

void expect_tcp(const Frame &out, const Net &n, uint32_t seq, uint32_t ack, uint8_t flags) {
    const size_t t = n.answer_l4();
    EXPECT_EQ(be16(out, t), 443) << "source port: the server's";
    EXPECT_EQ(be16(out, t + 2), 40000);
    EXPECT_EQ(be32(out, t + 4), seq) << "seq";
    EXPECT_EQ(be32(out, t + 8), ack) << "ack";
    EXPECT_EQ(out[t + 12], 0x50) << "data offset 5, no options";
    EXPECT_EQ(out[t + 13], flags) << "flags";
    EXPECT_EQ(be16(out, t + 14), 0) << "window";
    EXPECT_EQ(be16(out, t + 18), 0) << "urgent pointer";
}

class AnswerNet : public ::testing::TestWithParam<Net> {};

// ---- syn_cookie -----------------------------------------------------------------------------

TEST_P(AnswerNet, SynCookieIsASynAckAcknowledgingTheCookie) {
    const Net &n = GetParam();
    const Frame in = tcp_frame(n, kSyn, 0x11223344, 0);
    const Answer a = answer(AnswerKind::syn_cookie, in, 0xdeadbeef);
    ASSERT_TRUE(a.plan.ok()) << no_answer_name(a.plan.why);
    ASSERT_NO_FATAL_FAILURE(expect_envelope(in, a.frame, n, kProtoTcp, 20));
    // seq = ~cookie; ack = the cookie, not the client's ISN + 1 (answer_syn_cookie.cpp).
    expect_tcp(a.frame, n, 0x21524110, 0xdeadbeef, kSyn | kAck);

    // A SYN with options and data gets the same answer.
    const Frame with_data = tcp_frame(n, kSyn, 7, 0, 30, 40000, 8);
    const Answer b = answer(AnswerKind::syn_cookie, with_data, 0);
    ASSERT_TRUE(b.plan.ok()) << no_answer_name(b.plan.why);
    ASSERT_NO_FATAL_FAILURE(expect_envelope(with_data, b.frame, n, kProtoTcp, 20));
    expect_tcp(b.frame, n, 0xffffffff, 0, kSyn | kAck);
}

// ---- dns_truncated --------------------------------------------------------------------------

void expect_dns(const Frame &in, const Answer &a, const Net &n, const DnsMsg &q, uint8_t flags2,
                uint8_t flags3) {
    ASSERT_TRUE(a.plan.ok()) << no_answer_name(a.plan.why);
    const std::vector<uint8_t> question = q.question();
    const size_t msg_len = 12 + question.size();
    EXPECT_EQ(a.plan.dns_keep, msg_len);
    ASSERT_NO_FATAL_FAILURE(expect_envelope(in, a.frame, n, kProtoUdp, 8 + msg_len));
    const size_t u = n.answer_l4();
    EXPECT_EQ(be16(a.frame, u), 53);
    EXPECT_EQ(be16(a.frame, u + 2), 33333);
    EXPECT_EQ(be16(a.frame, u + 4), 8 + msg_len) << "UDP length";
    EXPECT_NE(be16(a.frame, u + 6), 0) << "the UDP checksum is computed, also over IPv4";
    const Frame header = {static_cast<uint8_t>(q.id >> 8),
                          static_cast<uint8_t>(q.id),
                          flags2,
                          flags3,
                          0,
                          1,
                          0,
                          0,
                          0,
                          0,
                          0,
                          0};
    EXPECT_EQ(slice(a.frame, u + 8, u + 20), header);
    EXPECT_EQ(slice(a.frame, u + 20, u + 8 + msg_len), Frame(question.begin(), question.end()));
}

TEST_P(AnswerNet, DnsQueryGetsAnEmptyTruncatedResponse) {
    const Net &n = GetParam();
    const DnsMsg q;  // RD and AD, EDNS
    const Frame in = dns_frame(n, q);
    // QR TC RD; RA 0, AD 0 (the query's AD is not a response's), RCODE 0.
    expect_dns(in, answer(AnswerKind::dns_truncated, in), n, q, 0x83, 0x00);

    DnsMsg no_rd_cd;  // RD 0 stays 0; CD is copied (RFC 4035 3.1.6)
    no_rd_cd.id = 0xfffe;
    no_rd_cd.flags2 = 0x00;
    no_rd_cd.flags3 = 0x30;
    no_rd_cd.qtype = 28;
    const Frame in2 = dns_frame(n, no_rd_cd);
    expect_dns(in2, answer(AnswerKind::dns_truncated, in2), n, no_rd_cd, 0x82, 0x10);

    DnsMsg root;  // ". NS", no EDNS: a 17-byte message kept whole
    root.name = {0};
    root.qtype = 2;
    root.arcount = 0;
    root.rest = {};
    const Frame in3 = dns_frame(n, root);
    expect_dns(in3, answer(AnswerKind::dns_truncated, in3), n, root, 0x83, 0x00);
}

// ---- tcp_rst --------------------------------------------------------------------------------

struct RstCase {
    const char *what;
    uint8_t flags;
    uint32_t seq, ack;
    size_t payload;
    uint8_t data_offset_words;
    uint32_t want_seq, want_ack;
    uint8_t want_flags;
};

TEST_P(AnswerNet, RstFollowsRfc9293ResetGeneration) {
    const Net &n = GetParam();
    const RstCase cases[] = {
        {"ACK with data: seq = SEG.ACK", kAck | kPsh, 1000, 0xabcdef01, 10, 5, 0xabcdef01, 0, kRst},
        {"FIN ACK", kFin | kAck, 5, 6, 0, 5, 6, 0, kRst},
        {"SYN ACK to nobody", kSyn | kAck, 5, 0x80000000, 0, 5, 0x80000000, 0, kRst},
        {"SYN: ack = ISN + 1", kSyn, 0x11223344, 0, 0, 5, 0, 0x11223345, kRst | kAck},
        {"SYN with 5 bytes", kSyn, 100, 0, 5, 5, 0, 106, kRst | kAck},
        {"FIN with 3 bytes", kFin, 100, 0, 3, 5, 0, 104, kRst | kAck},
        {"SYN FIN", kSyn | kFin, 100, 0, 0, 5, 0, 102, kRst | kAck},
        {"no flags, 12 bytes of options, 7 of data", 0, 100, 0, 7, 8, 0, 107, kRst | kAck},
        {"SYN at 2^32 - 1 wraps", kSyn, 0xffffffff, 0, 0, 5, 0, 0, kRst | kAck},
    };
    for (const RstCase &c : cases) {
        SCOPED_TRACE(c.what);
        const Frame in = tcp_frame(n, c.flags, c.seq, c.ack, c.payload, 40000, c.data_offset_words);
        const Answer a = answer(AnswerKind::tcp_rst, in);
        ASSERT_TRUE(a.plan.ok()) << no_answer_name(a.plan.why);
        ASSERT_NO_FATAL_FAILURE(expect_envelope(in, a.frame, n, kProtoTcp, 20));
        expect_tcp(a.frame, n, c.want_seq, c.want_ack, c.want_flags);
    }
}

// ---- icmp_unreachable -----------------------------------------------------------------------

void expect_icmp(const Frame &in, const Answer &a, const Net &n, size_t quote) {
    ASSERT_TRUE(a.plan.ok()) << no_answer_name(a.plan.why);
    EXPECT_EQ(a.plan.icmp_quote, quote);
    const uint8_t proto = n.family == 4 ? kProtoIcmp : kProtoIcmpv6;
    ASSERT_NO_FATAL_FAILURE(expect_envelope(in, a.frame, n, proto, 8 + quote));
    const size_t c = n.answer_l4();
    EXPECT_EQ(a.frame[c], n.family == 4 ? 3 : 1) << "type";
    EXPECT_EQ(a.frame[c + 1], n.family == 4 ? 13 : 1) << "code: administratively prohibited";
    EXPECT_EQ(be32(a.frame, c + 4), 0u) << "unused";
    EXPECT_EQ(slice(a.frame, c + 8, c + 8 + quote), slice(in, n.l3(), n.l3() + quote))
        << "the original datagram from its IP header on";
}

TEST_P(AnswerNet, IcmpUnreachableQuotesWhatFits) {
    const Net &n = GetParam();
    const size_t head = n.answer_ip_header() + 8;  // the answer's IP and ICMP headers

    // The frame holds the datagram and no more: the quote gives up the answer's headers' worth.
    const Frame udp = udp_frame(n, 200);
    const size_t datagram = udp.size() - n.l3();
    expect_icmp(udp, answer(AnswerKind::icmp_unreachable, udp), n, datagram - head);

    // Large: at most 576 bytes of IPv4 answer, 1280 of IPv6.
    const Frame big = udp_frame(n, 1400);
    const size_t max_ip = n.family == 4 ? 576 : 1280;
    expect_icmp(big, answer(AnswerKind::icmp_unreachable, big), n, max_ip - head);

    // Ethernet padding after the datagram gives room, but is not quoted.
    const Frame padded = build(n, base(n).udp(5000, 9999).payload(30).trailing(80));
    const size_t padded_datagram = n.ip_header() + 8 + 30;
    expect_icmp(padded, answer(AnswerKind::icmp_unreachable, padded), n, padded_datagram);

    // The least that must be quoted: the original IP header (options and extension headers
    // included) and 8 bytes. A payload of `head` bytes leaves exactly that room.
    const Frame least = udp_frame(n, head);
    expect_icmp(least, answer(AnswerKind::icmp_unreachable, least), n, n.ip_header() + 8);
    const Frame short_by_one = udp_frame(n, head - 1);
    EXPECT_EQ(why(AnswerKind::icmp_unreachable, short_by_one), "too_short");
    EXPECT_EQ(why(AnswerKind::icmp_unreachable, tcp_frame(n, kSyn, 1, 0)), "too_short");

    // A datagram shorter than its header and 8 bytes is quoted whole (here GRE with 4 bytes).
    const Frame gre = build(n, base(n).ip_proto(kProtoGre).payload(4).trailing(60));
    expect_icmp(gre, answer(AnswerKind::icmp_unreachable, gre), n, n.ip_header() + 4);

    // An echo request is no error: answered.
    const Frame echo =
        build(n, n.family == 4 ? base(n).icmp(8).payload(100) : base(n).icmpv6(128).payload(100));
    const size_t echo_datagram = echo.size() - n.l3();
    expect_icmp(echo, answer(AnswerKind::icmp_unreachable, echo), n, echo_datagram - head);
}

// With checksum offload, the answer is the software one except for what the port computes:
// the IPv4 header checksum left 0, and the TCP or UDP checksum field holding the pseudo-header
// sum (not complemented), from which a port's checksum over the segment gives the software
// value. ICMP is never offloaded.
TEST_P(AnswerNet, OffloadedChecksumsAreWhatThePortCompletes) {
    const Net &n = GetParam();
    for (AnswerKind kind : {AnswerKind::syn_cookie, AnswerKind::dns_truncated, AnswerKind::tcp_rst,
                            AnswerKind::icmp_unreachable}) {
        SCOPED_TRACE(answer_kind_name(kind));
        const Frame in = valid_frame(kind, n);
        const Answer soft = answer(kind, in, 0x5eed1234);
        ASSERT_TRUE(soft.plan.ok());

        const auto len = static_cast<uint32_t>(in.size());
        PacketInfo info;
        ASSERT_EQ(parse_packet(in.data(), len, &info), ParseStatus::ip);
        auto buf = heap_copy(in.data(), in.size());
        AnswerPlan plan = plan_answer(kind, buf.get(), len, info);
        plan.cookie = 0x5eed1234;
        plan.offload_checksums = true;
        ASSERT_EQ(build_answer(plan, info, buf.get(), len), soft.plan.answer_len);
        Frame off(buf.get(), buf.get() + soft.plan.answer_len);

        const bool icmp = kind == AnswerKind::icmp_unreachable;
        const uint8_t proto = icmp ? (n.family == 4 ? kProtoIcmp : kProtoIcmpv6)
                                   : (kind == AnswerKind::dns_truncated ? kProtoUdp : kProtoTcp);
        const size_t l3 = n.l3(), l4 = n.answer_l4();
        const size_t l4_len = (n.family == 4 ? be16(off, l3 + 2) - 20u : be16(off, l3 + 4));
        const size_t field = l4 + (proto == kProtoUdp ? 6 : proto == kProtoTcp ? 16 : 2);
        if (icmp) {
            EXPECT_EQ(off, soft.frame);  // computed in software, offload or not
            continue;
        }
        if (n.family == 4) {
            EXPECT_EQ(be16(off, l3 + 10), 0);  // the port's to compute
            put16(&off, l3 + 10, static_cast<uint16_t>(~ones_sum(&off[l3], 20)));
        }
        // The field holds the pseudo-header sum (RFC 768, RFC 9293 3.1, RFC 8200 8.1), folded.
        const size_t addrs = n.family == 4 ? l3 + 12 : l3 + 8;
        const uint16_t pseudo =
            ones_sum(&off[addrs], n.family == 4 ? 8 : 32, proto + static_cast<uint32_t>(l4_len));
        EXPECT_EQ(be16(off, field), pseudo);
        uint16_t port_sum = static_cast<uint16_t>(~ones_sum(&off[l4], l4_len));
        if (proto == kProtoUdp && port_sum == 0) port_sum = 0xffff;
        put16(&off, field, port_sum);
        EXPECT_EQ(off, soft.frame);
    }
}

std::string net_name(const ::testing::TestParamInfo<Net> &info) {
    return info.param.name;
}
INSTANTIATE_TEST_SUITE_P(AnswerNets, AnswerNet, ::testing::ValuesIn(kNets), net_name);

// ---- Never answer ---------------------------------------------------------------------------

constexpr AnswerKind kKinds[] = {AnswerKind::syn_cookie, AnswerKind::dns_truncated,
                                 AnswerKind::tcp_rst, AnswerKind::icmp_unreachable};

// A frame a kind answers, with other addresses.
Frame valid_frame_between(AnswerKind kind, const Net &n, const char *src, const char *dst) {
    switch (kind) {
        case AnswerKind::syn_cookie:
            return build(n, base(n, src, dst).tcp(40000, 443, kSyn));
        case AnswerKind::dns_truncated:
            return build(n, base(n, src, dst).udp(33333, 53).payload(DnsMsg{}.bytes()));
        case AnswerKind::tcp_rst:
            return build(n, base(n, src, dst).tcp(40000, 443, kAck).payload(10));
        case AnswerKind::icmp_unreachable:
        case AnswerKind::count:
            break;
    }
    return build(n, base(n, src, dst).udp(5000, 9999).payload(100));
}

struct AddrCase {
    const char *src;
    const char *dst;
    const char *reason;
};

TEST(AnswerNever, AddressesThatAreNotOneHost) {
    const AddrCase v4[] = {
        {"0.0.0.0", kServer4, "source_not_unicast"},
        {"0.1.2.3", kServer4, "source_not_unicast"},
        {"127.0.0.1", kServer4, "source_not_unicast"},
        {"127.255.255.254", kServer4, "source_not_unicast"},
        {"224.0.0.1", kServer4, "source_not_unicast"},
        {"239.255.255.250", kServer4, "source_not_unicast"},
        {"240.0.0.1", kServer4, "source_not_unicast"},
        {"255.255.255.255", kServer4, "source_not_unicast"},
        {"224.0.0.1", "224.0.0.2", "source_not_unicast"},  // the source is checked first
        {kClient4, "0.0.0.0", "dst_not_unicast"},
        {kClient4, "127.0.0.53", "dst_not_unicast"},
        {kClient4, "224.0.0.251", "dst_not_unicast"},
        {kClient4, "239.1.2.3", "dst_not_unicast"},
        {kClient4, "240.1.2.3", "dst_not_unicast"},
        {kClient4, "255.255.255.255", "dst_not_unicast"},
        // The edges of the ranges, on the unicast side.
        {"1.0.0.0", kServer4, "none"},
        {"126.255.255.255", kServer4, "none"},
        {"128.0.0.0", kServer4, "none"},
        {"223.255.255.255", kServer4, "none"},
        {kClient4, "223.255.255.254", "none"},
    };
    const AddrCase v6[] = {
        {"::", kServer6, "source_not_unicast"},
        {"::1", kServer6, "source_not_unicast"},
        {"ff02::1", kServer6, "source_not_unicast"},
        {"ff0e::1:3", kServer6, "source_not_unicast"},
        {kClient6, "::", "dst_not_unicast"},
        {kClient6, "::1", "dst_not_unicast"},
        {kClient6, "ff02::1:ff00:9", "dst_not_unicast"},
        {"::2", kServer6, "none"},
        {"fe80::1", kServer6, "none"},
        {"fe00::1", kServer6, "none"},
        {"1::", kServer6, "none"},
    };
    for (const AnswerKind kind : kKinds) {
        SCOPED_TRACE(answer_kind_name(kind));
        for (const AddrCase &c : v4) {
            SCOPED_TRACE(std::string(c.src) + " -> " + c.dst);
            EXPECT_EQ(why(kind, valid_frame_between(kind, net4(), c.src, c.dst)), c.reason);
            EXPECT_EQ(why(kind, valid_frame_between(kind, kNets[1], c.src, c.dst)), c.reason);
        }
        for (const AddrCase &c : v6) {
            SCOPED_TRACE(std::string(c.src) + " -> " + c.dst);
            EXPECT_EQ(why(kind, valid_frame_between(kind, net6(), c.src, c.dst)), c.reason);
            EXPECT_EQ(why(kind, valid_frame_between(kind, kNets[6], c.src, c.dst)), c.reason);
        }
    }
}

TEST(AnswerNever, LinkLayerGroupAddresses) {
    const test::Mac multicast4{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
    const test::Mac multicast6{0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
    const test::Mac broadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const test::Mac stp{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00};
    for (const AnswerKind kind : kKinds) {
        SCOPED_TRACE(answer_kind_name(kind));
        for (const Net &n : kNets) {
            SCOPED_TRACE(n.name);
            const Frame ok = valid_frame(kind, n);
            auto with_macs = [&](const test::Mac &src, const test::Mac &dst) {
                Frame f = ok;
                std::copy(dst.begin(), dst.end(), f.begin());
                std::copy(src.begin(), src.end(), f.begin() + 6);
                return f;
            };
            EXPECT_EQ(why(kind, ok), "none");
            EXPECT_EQ(why(kind, with_macs(multicast4, kServerMac)), "source_not_unicast");
            EXPECT_EQ(why(kind, with_macs(broadcast, kServerMac)), "source_not_unicast");
            EXPECT_EQ(why(kind, with_macs(kClientMac, broadcast)), "dst_not_unicast");
            EXPECT_EQ(why(kind, with_macs(kClientMac, multicast4)), "dst_not_unicast");
            EXPECT_EQ(why(kind, with_macs(kClientMac, multicast6)), "dst_not_unicast");
            EXPECT_EQ(why(kind, with_macs(kClientMac, stp)), "dst_not_unicast");
        }
    }
}

TEST(AnswerNever, NonFirstFragments) {
    for (const AnswerKind kind : kKinds) {
        SCOPED_TRACE(answer_kind_name(kind));
        for (const Net &n : kNets) {
            SCOPED_TRACE(n.name);
            const uint8_t protos[] = {kProtoTcp, kProtoUdp, kProtoIcmp, kProtoGre};
            for (const uint8_t proto : protos) {
                PacketBuilder b = base(n);
                if (n.family == 4)
                    b.ipv4_fragment(100, true);
                else
                    b.ipv6_fragment(100, false);
                EXPECT_EQ(why(kind, build(n, b.ip_proto(proto).payload(200))),
                          "not_first_fragment");
            }
        }
    }
    // A first fragment carries the L4 header: it may be answered.
    for (const Net &n : kNets) {
        PacketBuilder b = base(n);
        if (n.family == 4)
            b.ipv4_fragment(0, true);
        else
            b.ipv6_fragment(0, true);
        EXPECT_EQ(why(AnswerKind::syn_cookie, build(n, b.tcp(40000, 443, kSyn))), "none") << n.name;
    }
}

struct KindCase {
    const char *what;
    AnswerKind kind;
    Frame frame;
    const char *reason;
};

std::vector<KindCase> kind_cases(const Net &n) {
    using K = AnswerKind;
    const bool v4 = n.family == 4;
    auto icmp = [&](uint8_t type) {
        return build(n, (v4 ? base(n).icmp(type) : base(n).icmpv6(type)).payload(100));
    };
    auto dns = [&](const DnsMsg &m) { return dns_frame(n, m); };
    auto dns_with = [&](auto change) {
        DnsMsg m;
        change(&m);
        return dns_frame(n, m);
    };
    const Frame gre = build(n, base(n).ip_proto(kProtoGre).payload(100));
    std::vector<KindCase> cases = {
        {"SYN cookie for UDP", K::syn_cookie, udp_frame(n, 100), "wrong_protocol"},
        {"SYN cookie for ICMP", K::syn_cookie, icmp(8), "wrong_protocol"},
        {"SYN cookie for GRE", K::syn_cookie, gre, "wrong_protocol"},
        {"SYN cookie for ACK", K::syn_cookie, tcp_frame(n, kAck, 1, 2), "wrong_protocol"},
        {"SYN cookie for SYN ACK", K::syn_cookie, tcp_frame(n, kSyn | kAck, 1, 2),
         "wrong_protocol"},
        {"SYN cookie for FIN", K::syn_cookie, tcp_frame(n, kFin, 1, 2), "wrong_protocol"},
        {"SYN cookie for SYN RST", K::syn_cookie, tcp_frame(n, kSyn | kRst, 1, 2), "answers_rst"},
        {"SYN cookie for SYN ECE CWR", K::syn_cookie, tcp_frame(n, kSyn | 0xc0, 1, 0), "none"},
        {"RST for UDP", K::tcp_rst, udp_frame(n, 100), "wrong_protocol"},
        {"RST for ICMP", K::tcp_rst, icmp(8), "wrong_protocol"},
        {"RST for GRE", K::tcp_rst, gre, "wrong_protocol"},
        {"RST for RST", K::tcp_rst, tcp_frame(n, kRst, 1, 0), "answers_rst"},
        {"RST for RST ACK", K::tcp_rst, tcp_frame(n, kRst | kAck, 1, 2), "answers_rst"},
        {"DNS for TCP", K::dns_truncated, tcp_frame(n, kAck, 1, 2, 40), "wrong_protocol"},
        {"DNS for ICMP", K::dns_truncated, icmp(8), "wrong_protocol"},
        {"DNS for GRE", K::dns_truncated, gre, "wrong_protocol"},
        {"ICMP for GRE", K::icmp_unreachable, gre, "none"},
        {"ICMP for TCP", K::icmp_unreachable, tcp_frame(n, kAck, 1, 2, 100), "none"},
    };
    const uint8_t errors4[] = {3, 4, 5, 11, 12};
    const uint8_t fine4[] = {0, 8, 13, 17};
    const uint8_t errors6[] = {1, 2, 3, 4, 100, 127, 137};  // 137: redirect, RFC 4443 2.4 (e.2)
    const uint8_t fine6[] = {128, 129, 130, 136, 138, 255};
    for (uint8_t t : v4 ? std::vector<uint8_t>(std::begin(errors4), std::end(errors4))
                        : std::vector<uint8_t>(std::begin(errors6), std::end(errors6)))
        cases.push_back({"ICMP error type", K::icmp_unreachable, icmp(t), "answers_icmp_error"});
    for (uint8_t t : v4 ? std::vector<uint8_t>(std::begin(fine4), std::end(fine4))
                        : std::vector<uint8_t>(std::begin(fine6), std::end(fine6)))
        cases.push_back({"ICMP informational type", K::icmp_unreachable, icmp(t), "none"});

    // DNS messages that are not one query.
    const std::vector<uint8_t> query = DnsMsg{}.bytes();
    std::vector<uint8_t> long_label = {64};
    long_label.insert(long_label.end(), 64, 'a');
    long_label.push_back(0);
    const std::string l63(63, 'a');
    const std::vector<uint8_t> name255 = dns_name({l63, l63, l63, std::string(61, 'b')});
    const std::vector<uint8_t> name256 = dns_name({l63, l63, l63, std::string(62, 'b')});
    Frame udp_len_past_ip = dns(DnsMsg{});
    put16(&udp_len_past_ip, n.l4() + 4, be16(udp_len_past_ip, n.l4() + 4) + 1);
    Frame udp_len_under_8 = dns(DnsMsg{});
    put16(&udp_len_under_8, n.l4() + 4, 7);
    // A UDP length that ends inside the question, and one that ends after it (the rest of the
    // IP payload is not the message's, and the answer does not need it).
    Frame udp_len_cuts_question = dns(DnsMsg{});
    put16(&udp_len_cuts_question, n.l4() + 4, 8 + 12 + 5);
    Frame udp_len_drops_opt = dns(DnsMsg{});
    put16(&udp_len_drops_opt, n.l4() + 4, 8 + 12 + 21);
    std::vector<uint8_t> two_questions_bytes = [] {
        DnsMsg m;
        m.qdcount = 2;
        m.arcount = 0;
        m.rest = DnsMsg{}.question();
        return m.bytes();
    }();
    const std::vector<KindCase> dns_cases = {
        {"DNS response", K::dns_truncated, dns_with([](DnsMsg *m) { m->flags2 = 0x81; }),
         "not_a_query"},
        {"DNS IQUERY", K::dns_truncated, dns_with([](DnsMsg *m) { m->flags2 = 1 << 3; }),
         "not_a_query"},
        {"DNS STATUS", K::dns_truncated, dns_with([](DnsMsg *m) { m->flags2 = 2 << 3; }),
         "not_a_query"},
        {"DNS NOTIFY", K::dns_truncated, dns_with([](DnsMsg *m) { m->flags2 = 4 << 3; }),
         "not_a_query"},
        {"DNS UPDATE", K::dns_truncated, dns_with([](DnsMsg *m) { m->flags2 = 5 << 3 | 1; }),
         "not_a_query"},
        {"DNS QDCOUNT 0", K::dns_truncated, dns_with([](DnsMsg *m) {
             m->qdcount = 0;
             m->name = {};
             m->rest = {};
         }),
         "not_a_query"},
        {"DNS QDCOUNT 2", K::dns_truncated, dns_frame(n, two_questions_bytes), "not_a_query"},
        {"DNS compression pointer", K::dns_truncated, dns_with([](DnsMsg *m) {
             m->name = {0xc0, 0x0c};
         }),
         "not_a_query"},
        {"DNS pointer after a label", K::dns_truncated,
         dns_with([](DnsMsg *m) { m->name = {3, 'w', 'w', 'w', 0xc0, 0x0c}; }), "not_a_query"},
        {"DNS label of 64", K::dns_truncated, dns_with([&](DnsMsg *m) { m->name = long_label; }),
         "not_a_query"},
        {"DNS extended label type 0x40", K::dns_truncated, dns_with([](DnsMsg *m) {
             m->name = {0x41, 0, 0};
         }),
         "not_a_query"},
        {"DNS name of 256 bytes", K::dns_truncated, dns_with([&](DnsMsg *m) { m->name = name256; }),
         "not_a_query"},
        {"DNS name of 255 bytes", K::dns_truncated, dns_with([&](DnsMsg *m) { m->name = name255; }),
         "none"},
        {"DNS name past the message", K::dns_truncated,
         dns_frame(n, std::vector<uint8_t>(query.begin(), query.begin() + 12 + 10)), "not_a_query"},
        {"DNS name without its zero", K::dns_truncated,
         dns_frame(n, std::vector<uint8_t>(query.begin(), query.begin() + 12 + 16)), "not_a_query"},
        {"DNS QTYPE without QCLASS", K::dns_truncated,
         dns_frame(n, std::vector<uint8_t>(query.begin(), query.begin() + 12 + 17 + 2)),
         "not_a_query"},
        {"DNS question exactly", K::dns_truncated,
         dns_frame(n, std::vector<uint8_t>(query.begin(), query.begin() + 12 + 17 + 4)), "none"},
        {"DNS 11-byte message", K::dns_truncated,
         dns_frame(n, std::vector<uint8_t>(query.begin(), query.begin() + 11)), "not_a_query"},
        {"DNS empty UDP", K::dns_truncated, dns_frame(n, std::vector<uint8_t>{}), "not_a_query"},
        {"DNS UDP length past the IP payload", K::dns_truncated, udp_len_past_ip, "not_a_query"},
        {"DNS UDP length under 8", K::dns_truncated, udp_len_under_8, "not_a_query"},
        {"DNS UDP length inside the question", K::dns_truncated, udp_len_cuts_question,
         "not_a_query"},
        {"DNS UDP length before the OPT record", K::dns_truncated, udp_len_drops_opt, "none"},
    };
    cases.insert(cases.end(), dns_cases.begin(), dns_cases.end());
    return cases;
}

TEST(AnswerNever, KindsOwnChecks) {
    for (const Net &n : kNets) {
        SCOPED_TRACE(n.name);
        for (const KindCase &c : kind_cases(n)) {
            SCOPED_TRACE(c.what);
            EXPECT_EQ(why(c.kind, c.frame), c.reason);
        }
    }
}

TEST(AnswerNever, FirstDnsFragmentIsNotReadPastItsEnd) {
    // The UDP length of a first fragment is the whole datagram's, longer than what is here.
    for (const Net &n : kNets) {
        PacketBuilder b = base(n);
        if (n.family == 4)
            b.ipv4_fragment(0, true);
        else
            b.ipv6_fragment(0, true);
        Frame f = build(n, b.udp(33333, 53).payload(DnsMsg{}.bytes()));
        const size_t udp = n.l4() + (n.family == 6 ? 8 : 0);  // after the fragment header
        put16(&f, udp + 4, 1400);
        EXPECT_EQ(why(AnswerKind::dns_truncated, f), "not_a_query") << n.name;
    }
}

TEST(AnswerNever, NotAKind) {
    const Frame f = valid_frame(AnswerKind::icmp_unreachable, net4());
    PacketInfo info;
    ASSERT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info), ParseStatus::ip);
    const AnswerPlan p =
        plan_answer(AnswerKind::count, f.data(), static_cast<uint32_t>(f.size()), info);
    EXPECT_FALSE(p.ok());
    EXPECT_EQ(p.why, NoAnswer::wrong_protocol);
    Frame copy = f;
    EXPECT_EQ(build_answer(p, info, copy.data(), static_cast<uint32_t>(copy.size())), 0u);
    EXPECT_EQ(copy, f) << "a plan that is not ok builds nothing";
}

TEST(AnswerNames, FollowTheLists) {
    EXPECT_STREQ(answer_kind_name(AnswerKind::syn_cookie), "syn_cookie");
    EXPECT_STREQ(answer_kind_name(AnswerKind::dns_truncated), "dns_truncated");
    EXPECT_STREQ(answer_kind_name(AnswerKind::tcp_rst), "tcp_rst");
    EXPECT_STREQ(answer_kind_name(AnswerKind::icmp_unreachable), "icmp_unreachable");
    EXPECT_STREQ(answer_kind_name(AnswerKind::count), "unknown");
    EXPECT_STREQ(no_answer_name(NoAnswer::none), "none");
    EXPECT_STREQ(no_answer_name(NoAnswer::not_contiguous), "not_contiguous");
    EXPECT_STREQ(no_answer_name(NoAnswer::dst_not_unicast), "dst_not_unicast");
    EXPECT_STREQ(no_answer_name(NoAnswer::count), "unknown");
    // Never renumbered: the pipeline's counters and the metric labels follow these values.
    EXPECT_EQ(static_cast<int>(NoAnswer::not_contiguous), 8);
    EXPECT_EQ(static_cast<int>(NoAnswer::dst_not_unicast), 9);
}

// ---- Any frame ------------------------------------------------------------------------------

// Every kind on one frame of len bytes (an exact-size heap copy): a plan that is refused says
// why and costs nothing; an answer is no longer than the frame, parses as the packet it claims
// to be (from the original destination back to its source) and its checksums verify.
// *built counts the answers built.
void answer_any(const uint8_t *data, size_t size, uint32_t cookie, uint64_t *built) {
    const auto len = static_cast<uint32_t>(size);
    const auto frame = heap_copy(data, size);
    PacketInfo info;
    if (parse_packet(frame.get(), len, &info) != ParseStatus::ip) return;
    for (const AnswerKind kind : kKinds) {
        AnswerPlan plan = plan_answer(kind, frame.get(), len, info);
        ASSERT_EQ(plan.ok(), plan.why == NoAnswer::none) << answer_kind_name(kind);
        ASSERT_LT(static_cast<unsigned>(plan.why), static_cast<unsigned>(NoAnswer::count));
        if (!plan.ok()) {
            ASSERT_EQ(plan.answer_len, 0u);
            continue;
        }
        ASSERT_EQ(plan.kind, kind);
        ASSERT_LE(plan.answer_len, len) << answer_kind_name(kind);
        plan.cookie = cookie;
        const auto out = heap_copy(frame.get(), size);
        const uint32_t n = build_answer(plan, info, out.get(), len);
        ASSERT_EQ(n, plan.answer_len) << answer_kind_name(kind);
        ASSERT_EQ(std::memcmp(out.get() + n, data + n, len - n), 0) << "written past the answer";
        ++*built;

        const Frame a(out.get(), out.get() + n);
        PacketInfo back;
        ASSERT_EQ(parse_packet(a.data(), n, &back), ParseStatus::ip) << answer_kind_name(kind);
        ASSERT_EQ(back.family, info.family);
        ASSERT_TRUE(back.has_l4);
        ASSERT_EQ(back.l3_offset, info.l3_offset);
        ASSERT_EQ(std::memcmp(back.src, info.dst, 16), 0);
        ASSERT_EQ(std::memcmp(back.dst, info.src, 16), 0);
        if (kind != AnswerKind::icmp_unreachable) {
            ASSERT_EQ(back.src_port, info.dst_port);
            ASSERT_EQ(back.dst_port, info.src_port);
        }
        ASSERT_EQ(std::memcmp(a.data(), data + 6, 6), 0) << "Ethernet addresses swapped";
        ASSERT_EQ(std::memcmp(a.data() + 6, data, 6), 0);
        ASSERT_EQ(std::memcmp(a.data() + 12, data + 12, info.l3_offset - 12), 0) << "tags kept";
        const uint32_t ip_end = uint32_t{back.l4_offset} + back.l4_len;
        ASSERT_EQ(n, std::max(ip_end, std::min(60u, len))) << "padded to 60, no further";
        for (uint32_t i = ip_end; i < n; ++i) ASSERT_EQ(a[i], 0) << "padding at " << i;
        if (back.family == 4) {
            ASSERT_EQ(ones_sum(&a[back.l3_offset], 20), 0xffff);
        }
        ASSERT_EQ(
            l4_sum(a, back.l3_offset, back.l4_offset, back.l4_len, back.family, back.l4_proto),
            0xffff)
            << answer_kind_name(kind);
    }
}

std::vector<Frame> seed_frames() {
    std::vector<Frame> seeds;
    for (const Net &n : kNets) {
        for (const AnswerKind kind : kKinds) seeds.push_back(valid_frame(kind, n));
        seeds.push_back(tcp_frame(n, kSyn, 1, 0, 0));
        seeds.push_back(udp_frame(n, 1400));
        seeds.push_back(build(n, base(n).udp(5000, 9999).payload(30).trailing(80)));
        DnsMsg root;
        root.name = {0};
        root.rest = {};
        root.arcount = 0;
        seeds.push_back(dns_frame(n, root));
    }
    return seeds;
}

// The frame cut to its first len bytes with its IP length (and the UDP length) made to end
// there, so that the cut reaches the planners, not only the parser: a question cut short, a
// quote with no room. The lengths are only rewritten where their fields are within the cut.
Frame cut_to_fit(const Frame &f, size_t len, const PacketInfo &info) {
    Frame c(f.begin(), f.begin() + static_cast<ptrdiff_t>(len));
    const size_t l3 = info.l3_offset;
    if (info.family == 4 && len >= l3 + 20) put16(&c, l3 + 2, static_cast<uint16_t>(len - l3));
    if (info.family == 6 && len >= l3 + 40) put16(&c, l3 + 4, static_cast<uint16_t>(len - l3 - 40));
    if (info.l4_proto == kProtoUdp && info.l4_offset != 0 && len >= info.l4_offset + 8u)
        put16(&c, info.l4_offset + 4, static_cast<uint16_t>(len - info.l4_offset));
    return c;
}

TEST(AnswerFuzz, EveryTruncationOfValidFrames) {
    uint64_t built = 0;
    for (const Frame &f : seed_frames()) {
        PacketInfo info;
        ASSERT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info), ParseStatus::ip);
        for (size_t len = 0; len <= f.size(); ++len) {
            ASSERT_NO_FATAL_FAILURE(answer_any(f.data(), len, 0x01020304, &built))
                << "cut to " << len;
            const Frame fitted = cut_to_fit(f, len, info);
            ASSERT_NO_FATAL_FAILURE(answer_any(fitted.data(), fitted.size(), 7, &built))
                << "cut to " << len << ", lengths fitted";
        }
    }
    EXPECT_GE(built, 10'000u);  // the fitted cuts are answered, as far as each kind can
}

TEST(AnswerFuzz, MutatedValidFrames) {
    uint64_t built = 0;
    const std::vector<Frame> seeds = seed_frames();
    std::mt19937_64 rng(20261201);
    for (int i = 0; i < 60'000; ++i) {
        Frame f = seeds[rng() % seeds.size()];
        for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
            f[rng() % f.size()] = static_cast<uint8_t>(rng());
        if (rng() % 4 == 0) f.resize(rng() % (f.size() + 1));
        ASSERT_NO_FATAL_FAILURE(
            answer_any(f.data(), f.size(), static_cast<uint32_t>(rng()), &built))
            << "mutation " << i;
    }
    EXPECT_GE(built, 10'000u);
}

TEST(AnswerFuzz, RandomIpFrames) {
    uint64_t built = 0;
    std::mt19937_64 rng(99);
    for (int i = 0; i < 60'000; ++i) {
        Frame f(14 + rng() % 200);
        for (uint8_t &b : f) b = static_cast<uint8_t>(rng());
        const bool v6 = rng() % 2 == 0;
        f[12] = v6 ? 0x86 : 0x08;
        f[13] = v6 ? 0xdd : 0x00;
        if (f.size() > 14) f[14] = v6 ? 0x60 : 0x45;
        if (f.size() >= 34 && !v6) {  // a total length that fits, so that parsing gets to L4
            put16(&f, 16, static_cast<uint16_t>(f.size() - 14));
            put16(&f, 20, 0);  // not a fragment
            f[23] = std::array<uint8_t, 3>{kProtoTcp, kProtoUdp, kProtoIcmp}[rng() % 3];
        }
        if (f.size() > 54 && v6) {
            put16(&f, 18, static_cast<uint16_t>(f.size() - 54));
            f[20] = std::array<uint8_t, 3>{kProtoTcp, kProtoUdp, kProtoIcmpv6}[rng() % 3];
        }
        ASSERT_NO_FATAL_FAILURE(
            answer_any(f.data(), f.size(), static_cast<uint32_t>(rng()), &built))
            << "random frame " << i;
    }
    EXPECT_GE(built, 1'000u);
}

// ---- For tshark -----------------------------------------------------------------------------

// Each request, then its answer, on several nets: tests/answers_tshark.sh reads the file.
TEST(AnswerPcap, EveryKindForTshark) {
    const char *path = std::getenv("FG_ANSWER_PCAP");
    if (path == nullptr) GTEST_SKIP() << "FG_ANSWER_PCAP not set (tests/answers_tshark.sh sets it)";
    test::PcapWriter w(path, test::PcapPrecision::micro);
    uint64_t ts_ns = 1'700'000'000'000'000'000ull;
    uint16_t port = 41000;  // one connection per pair, so that tshark's TCP analysis keeps apart
    auto pair = [&](AnswerKind kind, const Frame &in, uint32_t cookie = 0x5eed1234) {
        const Answer a = answer(kind, in, cookie);
        ASSERT_TRUE(a.plan.ok()) << answer_kind_name(kind) << ": " << no_answer_name(a.plan.why);
        w.write(ts_ns, in);
        w.write(ts_ns + 1000, a.frame);
        ts_ns += 1'000'000;
    };
    for (const Net &n : kNets) {
        SCOPED_TRACE(n.name);
        pair(AnswerKind::syn_cookie, tcp_frame(n, kSyn, 0x11223344, 0, 0, port++));
        pair(AnswerKind::dns_truncated, dns_frame(n, DnsMsg{}.bytes(), port++));
        pair(AnswerKind::tcp_rst, tcp_frame(n, kSyn, 0x11223344, 0, 0, port++));
        pair(AnswerKind::tcp_rst, tcp_frame(n, kAck | kPsh, 1000, 2000, 10, port++));
        pair(AnswerKind::icmp_unreachable, udp_frame(n, 200, port++));
        pair(AnswerKind::icmp_unreachable,
             tcp_frame(n, kAck | kPsh, 1000, 2000, n.family == 4 ? 40 : 60, port++));
    }
    w.close();
}

}  // namespace
}  // namespace floodgate
