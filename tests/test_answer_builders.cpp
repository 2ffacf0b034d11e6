// The answer builders (dataplane/answer/answer.h), unit by unit: each kind over IPv4 and IPv6,
// with and without VLAN tags, with and without IPv4 options or IPv6 extension headers, checked
// field by field against values worked out here, and checksums against tests/answer_bytes.h's
// own RFC 1071 sum; with checksum offload too. The frames they refuse are in
// test_answer_refusals.cpp; truncated, mutated and random frames in test_answer_any_frame.cpp.
// With FG_ANSWER_PCAP set, AnswerPcap writes every kind of answer there for
// tests/answers_tshark.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/core/parse.h"
#include "tests/answer_frames.h"
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"

namespace floodgate::answer_test {
namespace {

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

// ---- syn_proxy ------------------------------------------------------------------------------

// The SYN-ACK a server would send: seq = the cookie, ack = ISN + 1, the window and MSS floodgate
// announces, and each option the SYN offered answered (no timestamps), in 4-byte words.
struct ProxyCase {
    std::vector<uint8_t> syn_options;
    std::vector<uint8_t> answer_options;
    uint8_t offered;
};

TEST_P(AnswerNet, SynProxyIsTheSynAckOfAServer) {
    const Net &n = GetParam();
    const ProxyCase cases[] = {
        {kLinuxSynOptions,
         {2, 4, 0x05, 0xa0, 1, 1, 4, 2, 1, 3, 3, 9},
         kOfferedMss | kOfferedSack | kOfferedWscale},
        // MSS 1400, NOP, window scale 6 (no SACK): a tunnel client.
        {{2, 4, 0x05, 0x78, 1, 3, 3, 6},
         {2, 4, 0x05, 0xa0, 1, 3, 3, 9},
         kOfferedMss | kOfferedWscale},
        // SACK-permitted alone: no MSS is announced (the client assumes the default).
        {{4, 2, 0, 0}, {1, 1, 4, 2}, kOfferedSack},
        {{}, {}, 0},
    };
    for (const ProxyCase &c : cases) {
        SCOPED_TRACE(c.syn_options.size());
        const Frame in = syn_with_options(n, c.syn_options, 0xfffffffe);
        Answer a;
        {
            const auto len = static_cast<uint32_t>(in.size());
            PacketInfo info;
            ASSERT_EQ(parse_packet(in.data(), len, &info), ParseStatus::ip);
            auto buf = heap_copy(in.data(), in.size());
            a.plan = plan_answer(AnswerKind::syn_proxy, buf.get(), len, info);
            ASSERT_TRUE(a.plan.ok()) << no_answer_name(a.plan.why);
            EXPECT_EQ(a.plan.offered, c.offered);
            a.plan.cookie = 0xc0ffee11;
            a.plan.mss = 1440;
            a.plan.wscale = 9;
            a.plan.window = 29200;
            const uint32_t out = build_answer(a.plan, info, buf.get(), len);
            ASSERT_EQ(out, a.plan.answer_len);
            ASSERT_LE(out, len) << "never longer than the SYN";
            a.frame.assign(buf.get(), buf.get() + out);
        }
        const size_t tcp_bytes = 20 + c.answer_options.size();
        ASSERT_NO_FATAL_FAILURE(expect_envelope(in, a.frame, n, kProtoTcp, tcp_bytes));
        const size_t t = n.answer_l4();
        EXPECT_EQ(be16(a.frame, t), 443);
        EXPECT_EQ(be16(a.frame, t + 2), 40000);
        EXPECT_EQ(be32(a.frame, t + 4), 0xc0ffee11u) << "seq: the cookie";
        EXPECT_EQ(be32(a.frame, t + 8), 0xffffffffu) << "ack: the client's ISN + 1";
        EXPECT_EQ(a.frame[t + 12], tcp_bytes / 4 << 4);
        EXPECT_EQ(a.frame[t + 13], kSyn | kAck);
        EXPECT_EQ(be16(a.frame, t + 14), 29200) << "window";
        EXPECT_EQ(slice(a.frame, t + 20, t + tcp_bytes), c.answer_options);
    }
}

TEST_P(AnswerNet, SynProxyKeepsWhatTheCookieCarries) {
    const Net &n = GetParam();
    const Answer a = answer(AnswerKind::syn_proxy, syn_with_options(n, kLinuxSynOptions));
    ASSERT_TRUE(a.plan.ok());
    EXPECT_EQ(a.plan.client, (ProxiedOptions{1460, 7, true}));
    const Answer bare = answer(AnswerKind::syn_proxy, syn_with_options(n, {}));
    ASSERT_TRUE(bare.plan.ok());
    EXPECT_EQ(bare.plan.client, (ProxiedOptions{static_cast<uint16_t>(n.family == 4 ? 536 : 1220),
                                                kNoWindowScale, false}));
    // Malformed options are not answered (a real stack never sends them).
    EXPECT_EQ(why(AnswerKind::syn_proxy, syn_with_options(n, {2, 3, 5, 0})), "bad_tcp_options");
    EXPECT_EQ(why(AnswerKind::syn_proxy, tcp_frame(n, kSyn | kAck, 1, 2)), "wrong_protocol");
    EXPECT_EQ(why(AnswerKind::syn_proxy, tcp_frame(n, kSyn | kRst, 1, 0)), "answers_rst");
    EXPECT_EQ(why(AnswerKind::syn_proxy, udp_frame(n, 10)), "wrong_protocol");
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
    EXPECT_EQ(static_cast<int>(NoAnswer::bad_tcp_options), 10);
    EXPECT_EQ(static_cast<int>(AnswerKind::syn_proxy), 4);
    EXPECT_STREQ(answer_kind_name(AnswerKind::syn_proxy), "syn_proxy");
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
        pair(AnswerKind::syn_proxy, syn_with_options(n, kLinuxSynOptions, 0x11223344, port++));
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
}  // namespace floodgate::answer_test
