// The frames an answer is never built for, each with its reason (NoAnswer): addresses that are
// not one host, link-layer group addresses, non-first fragments, each kind's own checks (the
// wrong protocol, a RST or an ICMP error to answer, DNS messages that are not one query), and a
// plan that is not ok building nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/core/parse.h"
#include "tests/answer_frames.h"
#include "tests/pkt_builder.h"

namespace floodgate::answer_test {
namespace {

// ---- Never answer ---------------------------------------------------------------------------

// A frame a kind answers, with other addresses.
Frame valid_frame_between(AnswerKind kind, const Net &n, const char *src, const char *dst) {
    switch (kind) {
        case AnswerKind::syn_cookie:
            return build(n, base(n, src, dst).tcp(40000, 443, kSyn));
        case AnswerKind::dns_truncated:
            return build(n, base(n, src, dst).udp(33333, 53).payload(DnsMsg{}.bytes()));
        case AnswerKind::tcp_rst:
            return build(n, base(n, src, dst).tcp(40000, 443, kAck).payload(10));
        case AnswerKind::syn_proxy:
            return build(n, base(n, src, dst)
                                .tcp(40000, 443, kSyn)
                                .tcp_data_offset(6)
                                .payload(std::vector<uint8_t>{2, 4, 0x05, 0xb4}));
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

}  // namespace
}  // namespace floodgate::answer_test
