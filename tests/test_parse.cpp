// Parser cases as one table: {description, frame from the builder, expected result}. Each row is
// its own test; the fuzz-style tests below reuse the valid rows.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "dataplane/core/parse.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

using test::Frame;
using test::PacketBuilder;
using namespace test;  // ethertypes and protocol numbers
// The builder's own protocol numbers, not the dataplane's: tests spell out what they expect.
using test::kProtoIcmp;
using test::kProtoIcmpv6;
using test::kProtoTcp;
using test::kProtoUdp;

constexpr const char *kSrc4 = "198.18.0.1";
constexpr const char *kDst4 = "198.18.1.1";
constexpr const char *kSrc6 = "2001:db8::1";
constexpr const char *kDst6 = "2001:db8:1::2";

PacketBuilder v4() {
    return std::move(PacketBuilder().ipv4(kSrc4, kDst4));
}
PacketBuilder v6() {
    return std::move(PacketBuilder().ipv6(kSrc6, kDst6));
}

struct ParseCase {
    std::string what;  // also the test name, with non-alphanumerics as '_'
    Frame frame;
    ParseStatus status = ParseStatus::ip;
    MalformedReason reason = MalformedReason::none;
    // Checked when status is ip:
    uint8_t family = 0;
    uint8_t l4_proto = 0;
    bool has_l4 = false;
    bool fragment = false;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint8_t tcp_flags = 0;
    uint8_t icmp_type = 0;
    const char *src = nullptr;  // defaults to kSrc4/kSrc6 by family
    const char *dst = nullptr;
    // Checked when status is ip or non_ip:
    uint8_t vlan_tags = 0;
};

void PrintTo(const ParseCase &c, std::ostream *os) {
    *os << c.what;
}

const char *status_name(ParseStatus s) {
    switch (s) {
        case ParseStatus::ip:
            return "ip";
        case ParseStatus::non_ip:
            return "non_ip";
        case ParseStatus::malformed:
            return "malformed";
    }
    return "not a ParseStatus";
}

ParseCase bad(std::string what, Frame frame, MalformedReason reason) {
    return {.what = std::move(what),
            .frame = std::move(frame),
            .status = ParseStatus::malformed,
            .reason = reason};
}

ParseCase non_ip(std::string what, Frame frame, uint8_t vlan_tags = 0) {
    return {.what = std::move(what),
            .frame = std::move(frame),
            .status = ParseStatus::non_ip,
            .vlan_tags = vlan_tags};
}

std::vector<ParseCase> ipv4_cases() {
    using R = MalformedReason;
    return {
        {.what = "IPv4 TCP SYN",
         .frame = v4().tcp(40000, 80, kTcpSyn).payload(10).build(),
         .family = 4,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 40000,
         .dst_port = 80,
         .tcp_flags = kTcpSyn},
        {.what = "IPv4 TCP with options, data offset 8",
         .frame = v4().tcp(1, 443, kTcpAck | kTcpPsh).tcp_data_offset(8).payload(12).build(),
         .family = 4,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 443,
         .tcp_flags = kTcpAck | kTcpPsh},
        {.what = "IPv4 UDP",
         .frame = v4().udp(1234, 53).payload(20).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 1234,
         .dst_port = 53},
        {.what = "IPv4 UDP without payload",
         .frame = v4().udp(65535, 0).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 65535,
         .dst_port = 0},
        {.what = "IPv4 ICMP echo request",
         .frame = v4().icmp(8).payload(32).build(),
         .family = 4,
         .l4_proto = kProtoIcmp,
         .has_l4 = true,
         .icmp_type = 8},
        {.what = "IPv4 with 4 bytes of options",
         .frame = v4().ipv4_options({1, 1, 1, 0}).udp(5000, 53).payload(8).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 5000,
         .dst_port = 53},
        {.what = "IPv4 with 40 bytes of options, IHL 15",
         .frame = v4().ipv4_options(std::vector<uint8_t>(40, 1)).tcp(22, 2222, kTcpAck).build(),
         .family = 4,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 22,
         .dst_port = 2222,
         .tcp_flags = kTcpAck},
        {.what = "IPv4 other addresses",
         .frame = PacketBuilder().ipv4("198.19.255.254", "198.18.0.0").udp(1, 2).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 2,
         .src = "198.19.255.254",
         .dst = "198.18.0.0"},
        {.what = "802.1Q tagged UDP",
         .frame = v4().vlan(100).udp(1234, 53).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 1234,
         .dst_port = 53,
         .vlan_tags = 1},
        {.what = "QinQ tagged TCP",
         .frame = v4().qinq(10).vlan(20).tcp(1000, 80, kTcpFin).build(),
         .family = 4,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 1000,
         .dst_port = 80,
         .tcp_flags = kTcpFin,
         .vlan_tags = 2},
        {.what = "four tags, the most accepted",
         .frame = v4().qinq(1).vlan(2).vlan(3).vlan(4).udp(7, 8).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 7,
         .dst_port = 8,
         .vlan_tags = 4},
        {.what = "trailing Ethernet padding is ignored",
         .frame = v4().udp(4444, 5555).trailing(18).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 4444,
         .dst_port = 5555},
        {.what = "padding that looks like more UDP payload is ignored",
         .frame = v4().udp(4444, 5555).payload(3).trailing(30).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 4444,
         .dst_port = 5555},
        {.what = "IPv4 first fragment",
         .frame = v4().ipv4_fragment(0, true).udp(1111, 53).payload(40).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .fragment = true,
         .src_port = 1111,
         .dst_port = 53},
        {.what = "IPv4 last fragment",
         .frame = v4().ipv4_fragment(185, false).udp(1111, 53).payload(40).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .fragment = true},
        {.what = "IPv4 middle fragment",
         .frame = v4().ipv4_fragment(1, true).tcp(1111, 80, kTcpSyn).build(),
         .family = 4,
         .l4_proto = kProtoTcp,
         .fragment = true},
        {.what = "IPv4 non-first fragment shorter than a UDP header",
         .frame = v4().ipv4_fragment(3, false).ip_proto(kProtoUdp).payload(3).build(),
         .family = 4,
         .l4_proto = kProtoUdp,
         .fragment = true},
        {.what = "IPv4 GRE is IP without L4",
         .frame = v4().ip_proto(kProtoGre).payload(8).build(),
         .family = 4,
         .l4_proto = kProtoGre},
        {.what = "IPv4 header alone",
         .frame = v4().ip_proto(kProtoGre).build(),
         .family = 4,
         .l4_proto = kProtoGre},

        bad("empty frame", {}, R::eth_truncated),
        bad("truncated Ethernet", v4().udp(1, 2).truncate(13).build(), R::eth_truncated),
        bad("truncated VLAN tag", v4().vlan(100).udp(1, 2).truncate(16).build(), R::vlan_truncated),
        bad("truncated second VLAN tag", v4().qinq(1).vlan(2).udp(1, 2).truncate(20).build(),
            R::vlan_truncated),
        bad("five tags", v4().qinq(1).vlan(2).vlan(3).vlan(4).vlan(5).udp(7, 8).build(),
            R::too_many_vlan_tags),
        bad("IPv4 ethertype with no header", PacketBuilder().eth(kEtherTypeIpv4).build(),
            R::ipv4_truncated),
        bad("IPv4 header cut at 19 bytes", v4().udp(1, 2).truncate(14 + 19).build(),
            R::ipv4_truncated),
        bad("IPv4 header cut behind a tag", v4().vlan(7).udp(1, 2).truncate(18 + 10).build(),
            R::ipv4_truncated),
        bad("IPv4 version 5", v4().ip_version(5).udp(1, 2).build(), R::ipv4_bad_version),
        bad("IPv6 packet under the IPv4 ethertype", v6().eth(kEtherTypeIpv4).udp(1, 2).build(),
            R::ipv4_bad_version),
        bad("IPv4 IHL 4", v4().ipv4_ihl(4).udp(1, 2).build(), R::ipv4_bad_ihl),
        bad("IPv4 IHL 0", v4().ipv4_ihl(0).udp(1, 2).build(), R::ipv4_bad_ihl),
        bad("IPv4 total length 19", v4().ipv4_total_length(19).udp(1, 2).build(),
            R::ipv4_bad_total_length),
        bad("IPv4 total length below IHL with options",
            v4().ipv4_options({1, 1, 1, 1}).ipv4_total_length(20).udp(1, 2).build(),
            R::ipv4_bad_total_length),
        bad("IPv4 total length past the frame",
            v4().udp(1, 2).payload(10).truncate(14 + 20 + 8 + 5).build(), R::ipv4_bad_total_length),
        bad("IPv4 total length 1500 in a short frame",
            v4().udp(1, 2).ipv4_total_length(1500).build(), R::ipv4_bad_total_length),
        bad("IPv4 UDP header cut by total length", v4().udp(1, 2).ipv4_total_length(20 + 7).build(),
            R::l4_truncated),
        bad("IPv4 TCP header cut by total length",
            v4().tcp(1, 2, kTcpSyn).ipv4_total_length(20 + 19).build(), R::l4_truncated),
        bad("IPv4 TCP data offset 4", v4().tcp(1, 2, kTcpSyn).tcp_data_offset(4).build(),
            R::l4_truncated),
        bad("IPv4 TCP data offset past the IP payload",
            v4().tcp(1, 2, kTcpSyn).tcp_data_offset(6).build(), R::l4_truncated),
        bad("IPv4 ICMP header cut at 3 bytes", v4().icmp(8).ipv4_total_length(20 + 3).build(),
            R::l4_truncated),
        bad("IPv4 first fragment with a cut UDP header",
            v4().ipv4_fragment(0, true).udp(1, 2).ipv4_total_length(20 + 4).build(),
            R::l4_truncated),
        bad("IPv4 UDP without its header", v4().ip_proto(kProtoUdp).build(), R::l4_truncated),
    };
}

std::vector<ParseCase> ipv6_cases() {
    using R = MalformedReason;
    return {
        {.what = "IPv6 UDP",
         .frame = v6().udp(5353, 53).payload(12).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 5353,
         .dst_port = 53},
        {.what = "IPv6 TCP SYN ACK",
         .frame = v6().tcp(443, 50000, kTcpSyn | kTcpAck).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 443,
         .dst_port = 50000,
         .tcp_flags = kTcpSyn | kTcpAck},
        {.what = "IPv6 other addresses",
         .frame = PacketBuilder()
                      .ipv6("2001:db8:ffff:ffff:ffff:ffff:ffff:fffe", "2001:db8::")
                      .udp(1, 2)
                      .build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 2,
         .src = "2001:db8:ffff:ffff:ffff:ffff:ffff:fffe",
         .dst = "2001:db8::"},
        {.what = "ICMPv6 echo request",
         .frame = v6().icmpv6(128).payload(8).build(),
         .family = 6,
         .l4_proto = kProtoIcmpv6,
         .has_l4 = true,
         .icmp_type = 128},
        {.what = "ICMPv6 neighbour solicitation",
         .frame = v6().icmpv6(135).payload(20).build(),
         .family = 6,
         .l4_proto = kProtoIcmpv6,
         .has_l4 = true,
         .icmp_type = 135},
        {.what = "802.1Q tagged IPv6",
         .frame = v6().vlan(4094).udp(1, 53).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 53,
         .vlan_tags = 1},
        {.what = "QinQ tagged IPv6",
         .frame = v6().qinq(300).vlan(400).tcp(1, 22, kTcpRst).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 22,
         .tcp_flags = kTcpRst,
         .vlan_tags = 2},
        {.what = "IPv6 trailing padding is ignored",
         .frame = v6().udp(9, 10).trailing(12).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .src_port = 9,
         .dst_port = 10},
        {.what = "IPv6 hop-by-hop then TCP",
         .frame = v6().hop_by_hop().tcp(1, 80, kTcpSyn).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 1,
         .dst_port = 80,
         .tcp_flags = kTcpSyn},
        {.what = "IPv6 hop-by-hop, routing, destination options, first fragment, UDP",
         .frame = v6().hop_by_hop()
                      .routing(24)
                      .dest_opts(16)
                      .ipv6_fragment(0, true)
                      .udp(2000, 53)
                      .payload(30)
                      .build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .fragment = true,
         .src_port = 2000,
         .dst_port = 53},
        {.what = "IPv6 destination options, routing, destination options, TCP",
         .frame = v6().dest_opts().routing().dest_opts(64).tcp(3, 4, kTcpUrg).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 3,
         .dst_port = 4,
         .tcp_flags = kTcpUrg},
        {.what = "IPv6 fragment then destination options then UDP",
         .frame = v6().ipv6_fragment(0, true).dest_opts().udp(5, 6).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .fragment = true,
         .src_port = 5,
         .dst_port = 6},
        {.what = "IPv6 atomic fragment, offset 0 and no M flag",
         .frame = v6().ipv6_fragment(0, false).udp(5, 6).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .fragment = true,
         .src_port = 5,
         .dst_port = 6},
        {.what = "IPv6 AH then TCP",
         .frame = v6().auth_header(24).tcp(7, 8, kTcpAck).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .has_l4 = true,
         .src_port = 7,
         .dst_port = 8,
         .tcp_flags = kTcpAck},
        {.what = "IPv6 8 extension headers, the most accepted",
         .frame = v6().hop_by_hop()
                      .dest_opts()
                      .routing()
                      .dest_opts()
                      .routing()
                      .auth_header()
                      .ipv6_fragment(0, true)
                      .dest_opts()
                      .udp(11, 12)
                      .build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .has_l4 = true,
         .fragment = true,
         .src_port = 11,
         .dst_port = 12},
        {.what = "IPv6 last fragment",
         .frame = v6().ipv6_fragment(100, false).udp(1, 53).payload(16).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .fragment = true},
        {.what = "IPv6 middle fragment after hop-by-hop",
         .frame = v6().hop_by_hop().ipv6_fragment(1, true).tcp(1, 80, kTcpSyn).build(),
         .family = 6,
         .l4_proto = kProtoTcp,
         .fragment = true},
        {.what = "IPv6 non-first fragment shorter than a UDP header",
         .frame = v6().ipv6_fragment(2, false).ip_proto(kProtoUdp).payload(2).build(),
         .family = 6,
         .l4_proto = kProtoUdp,
         .fragment = true},
        {.what = "IPv6 no next header",
         .frame = v6().build(),
         .family = 6,
         .l4_proto = kProtoNoNext},
        {.what = "IPv6 hop-by-hop then no next header",
         .frame = v6().hop_by_hop().payload(6).build(),
         .family = 6,
         .l4_proto = kProtoNoNext},
        {.what = "IPv6 ESP is IP without L4",
         .frame = v6().ip_proto(kProtoEsp).payload(16).build(),
         .family = 6,
         .l4_proto = kProtoEsp},
        {.what = "IPv6 GRE after destination options",
         .frame = v6().dest_opts().ip_proto(kProtoGre).payload(4).build(),
         .family = 6,
         .l4_proto = kProtoGre},

        bad("IPv6 ethertype with no header", PacketBuilder().eth(kEtherTypeIpv6).build(),
            R::ipv6_truncated),
        bad("IPv6 header cut at 39 bytes", v6().udp(1, 2).truncate(14 + 39).build(),
            R::ipv6_truncated),
        bad("IPv6 version 4", v6().ip_version(4).udp(1, 2).build(), R::ipv6_bad_version),
        bad("IPv4 packet under the IPv6 ethertype",
            v4().eth(kEtherTypeIpv6).tcp(1, 2, 0).payload(20).build(), R::ipv6_bad_version),
        bad("IPv6 payload length past the frame",
            v6().udp(1, 2).payload(10).truncate(14 + 40 + 10).build(), R::ipv6_bad_payload_length),
        bad("IPv6 payload length 1000 in a short frame",
            v6().udp(1, 2).ipv6_payload_length(1000).build(), R::ipv6_bad_payload_length),
        bad("IPv6 extension header cut by payload length",
            v6().hop_by_hop(16).udp(1, 2).ipv6_payload_length(8).build(), R::ipv6_ext_truncated),
        bad("IPv6 payload too short for any extension header",
            v6().dest_opts().udp(1, 2).ipv6_payload_length(4).build(), R::ipv6_ext_truncated),
        bad("IPv6 second extension header cut",
            v6().hop_by_hop().routing(32).udp(1, 2).ipv6_payload_length(8 + 16).build(),
            R::ipv6_ext_truncated),
        bad("IPv6 AH cut by payload length",
            v6().auth_header(24).tcp(1, 2, 0).ipv6_payload_length(16).build(),
            R::ipv6_ext_truncated),
        bad("IPv6 9 extension headers",
            v6().hop_by_hop()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .dest_opts()
                .udp(1, 2)
                .build(),
            R::ipv6_ext_chain_too_long),
        bad("IPv6 UDP header cut by payload length", v6().udp(1, 2).ipv6_payload_length(7).build(),
            R::l4_truncated),
        bad("IPv6 TCP header cut after hop-by-hop",
            v6().hop_by_hop().tcp(1, 2, kTcpSyn).ipv6_payload_length(8 + 19).build(),
            R::l4_truncated),
        bad("IPv6 TCP data offset 2", v6().tcp(1, 2, kTcpSyn).tcp_data_offset(2).build(),
            R::l4_truncated),
        bad("ICMPv6 header cut at 3 bytes", v6().icmpv6(128).ipv6_payload_length(3).build(),
            R::l4_truncated),
        bad("IPv6 first fragment with a cut UDP header",
            v6().ipv6_fragment(0, true).udp(1, 2).ipv6_payload_length(8 + 5).build(),
            R::l4_truncated),
    };
}

std::vector<ParseCase> non_ip_cases() {
    return {
        non_ip("ARP", PacketBuilder().eth(kEtherTypeArp).payload(28).build()),
        non_ip("LLDP", PacketBuilder().eth(kEtherTypeLldp).payload(40).build()),
        non_ip("Ethernet header alone with an unknown type", PacketBuilder().eth(0x88b5).build()),
        non_ip("802.1Q tagged ARP", PacketBuilder().eth(kEtherTypeArp).vlan(5).payload(28).build(),
               1),
        non_ip("QinQ tagged LLDP",
               PacketBuilder().eth(kEtherTypeLldp).qinq(1).vlan(2).payload(40).build(), 2),
    };
}

std::vector<ParseCase> all_cases() {
    std::vector<ParseCase> all = ipv4_cases();
    for (auto *more : {ipv6_cases, non_ip_cases})
        for (ParseCase &c : more()) all.push_back(std::move(c));
    return all;
}

std::array<uint8_t, 16> addr16(uint8_t family, const char *text) {
    std::array<uint8_t, 16> a{};
    if (family == 4) {
        const Ipv4Addr v = ipv4_addr(text);
        std::memcpy(a.data(), v.data(), 4);
    } else {
        a = ipv6_addr(text);
    }
    return a;
}

class ParseTable : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseTable, Parses) {
    const ParseCase &c = GetParam();
    const Frame frame = c.frame;  // a heap copy of the exact size, so sanitizers see overreads
    PacketInfo info;
    const ParseStatus status =
        parse_packet(frame.data(), static_cast<uint32_t>(frame.size()), &info);

    ASSERT_STREQ(status_name(status), status_name(c.status));
    EXPECT_STREQ(malformed_reason_name(info.malformed), malformed_reason_name(c.reason));
    if (c.status == ParseStatus::malformed) return;
    EXPECT_EQ(+info.vlan_tags, +c.vlan_tags);
    if (c.status != ParseStatus::ip) return;

    EXPECT_EQ(info.l3_offset, 14 + 4 * c.vlan_tags);
    EXPECT_EQ(+info.family, +c.family);
    EXPECT_EQ(+info.l4_proto, +c.l4_proto);
    EXPECT_EQ(info.has_l4, c.has_l4);
    EXPECT_EQ(info.fragment, c.fragment);
    EXPECT_EQ(info.src_port, c.src_port);
    EXPECT_EQ(info.dst_port, c.dst_port);
    EXPECT_EQ(+info.tcp_flags, +c.tcp_flags);
    EXPECT_EQ(+info.icmp_type, +c.icmp_type);

    const bool is_v4 = c.family == 4;
    std::array<uint8_t, 16> src{}, dst{};
    std::memcpy(src.data(), info.src, 16);
    std::memcpy(dst.data(), info.dst, 16);
    EXPECT_EQ(src, addr16(c.family, c.src ? c.src : is_v4 ? kSrc4 : kSrc6));
    EXPECT_EQ(dst, addr16(c.family, c.dst ? c.dst : is_v4 ? kDst4 : kDst6));
}

std::string test_name(const ::testing::TestParamInfo<ParseCase> &info) {
    std::string name;
    for (char ch : info.param.what) {
        const bool word = std::isalnum(static_cast<unsigned char>(ch)) != 0;
        if (word)
            name += ch;
        else if (!name.empty() && name.back() != '_')
            name += '_';
    }
    while (!name.empty() && name.back() == '_') name.pop_back();
    return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, ParseTable, ::testing::ValuesIn(all_cases()), test_name);

TEST(ParseReasons, NamesFollowTheList) {
    EXPECT_STREQ(malformed_reason_name(MalformedReason::none), "none");
    EXPECT_STREQ(malformed_reason_name(MalformedReason::ipv4_bad_ihl), "ipv4_bad_ihl");
    EXPECT_STREQ(malformed_reason_name(MalformedReason::l4_truncated), "l4_truncated");
    EXPECT_NE(malformed_reason_name(MalformedReason::count), nullptr);
}

// A capture cut by its snap length: lengths are judged by the wire length, headers read only
// from the captured bytes.
TEST(ParseCapture, SnapLengthCutIsJudgedByWireLength) {
    const Frame f =
        PacketBuilder().ipv4("198.18.0.1", "198.18.1.1").udp(1234, 53).payload(400).build();
    const uint32_t wire = static_cast<uint32_t>(f.size());
    PacketInfo info;
    // 96 bytes captured hold every header: a valid packet with its ports.
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 96), ParseStatus::ip);
    EXPECT_EQ(info.dst_port, 53);
    // Without the wire length, the same 96 bytes look like a total length past the frame.
    ASSERT_EQ(parse_packet(f.data(), 96, &info), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::ipv4_bad_total_length);
    // 40 bytes captured end inside the UDP header: it cannot be read.
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 40), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::capture_truncated);
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 20), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::capture_truncated);
}

TEST(ParseCapture, Ipv6ExtensionChainCutByCapture) {
    const Frame f = PacketBuilder()
                        .ipv6("2001:db8::1", "2001:db8::2")
                        .hop_by_hop()
                        .routing(16)
                        .udp(1, 53)
                        .payload(300)
                        .build();
    const uint32_t wire = static_cast<uint32_t>(f.size());
    PacketInfo info;
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 14 + 40 + 8 + 16 + 8), ParseStatus::ip);
    EXPECT_EQ(info.dst_port, 53);
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 14 + 40 + 4), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::capture_truncated);
    ASSERT_EQ(parse_packet(f.data(), wire, &info, 14 + 40 + 8 + 16 + 4), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::capture_truncated);
}

// What must hold for any input, valid or not.
void expect_consistent(const Frame &frame, ParseStatus status, const PacketInfo &info) {
    const bool known = status == ParseStatus::ip || status == ParseStatus::non_ip ||
                       status == ParseStatus::malformed;
    ASSERT_TRUE(known) << "status " << static_cast<int>(status) << " for a frame of "
                       << frame.size() << " bytes";
    ASSERT_LT(static_cast<unsigned>(info.malformed), static_cast<unsigned>(MalformedReason::count));
    ASSERT_EQ(status == ParseStatus::malformed, info.malformed != MalformedReason::none)
        << "status " << status_name(status) << ", reason " << malformed_reason_name(info.malformed);
    if (status == ParseStatus::ip) {
        ASSERT_TRUE(info.family == 4 || info.family == 6);
    }
}

void parse_and_check(const Frame &frame) {
    PacketInfo info;
    const ParseStatus status =
        parse_packet(frame.data(), static_cast<uint32_t>(frame.size()), &info);
    expect_consistent(frame, status, info);
}

TEST(ParseFuzz, EveryTruncationOfValidFrames) {
    for (const ParseCase &c : all_cases()) {
        if (c.status == ParseStatus::malformed) continue;
        SCOPED_TRACE(c.what);
        for (size_t len = 0; len <= c.frame.size(); ++len) {
            const Frame cut(c.frame.begin(), c.frame.begin() + static_cast<ptrdiff_t>(len));
            ASSERT_NO_FATAL_FAILURE(parse_and_check(cut)) << "cut to " << len << " bytes";
        }
    }
}

TEST(ParseFuzz, RandomBytes) {
    // Fully random frames rarely get past the ethertype, so half of them get a tag or IP type.
    static constexpr uint16_t kTypes[] = {kEtherTypeIpv4, kEtherTypeIpv6, kTpidVlan, kTpidQinq};
    std::mt19937_64 rng(20240613);
    for (int i = 0; i < 100'000; ++i) {
        Frame frame(rng() % 129);
        for (uint8_t &b : frame) b = static_cast<uint8_t>(rng());
        if (frame.size() >= 14 && rng() % 2 == 0) {
            const uint16_t type = kTypes[rng() % 4];
            frame[12] = static_cast<uint8_t>(type >> 8);
            frame[13] = static_cast<uint8_t>(type);
            if (type == kEtherTypeIpv4 && frame.size() > 14) frame[14] = 0x45;
            if (type == kEtherTypeIpv6 && frame.size() > 14) frame[14] = 0x60;
        }
        ASSERT_NO_FATAL_FAILURE(parse_and_check(frame)) << "random frame " << i;
    }
}

TEST(ParseFuzz, MutatedValidFrames) {
    std::vector<Frame> seeds;
    for (const ParseCase &c : all_cases())
        if (c.status == ParseStatus::ip) seeds.push_back(c.frame);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 50'000; ++i) {
        Frame frame = seeds[rng() % seeds.size()];
        for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
            frame[rng() % frame.size()] = static_cast<uint8_t>(rng());
        ASSERT_NO_FATAL_FAILURE(parse_and_check(frame)) << "mutation " << i;
    }
}

// The pipeline reuses one PacketInfo per burst slot. Found by tests/fuzz/fuzz_packet (its
// corpus keeps the input, regress-empty-frame-stale-l3-offset): a frame cut short before its IP
// header left the previous frame's l3_offset, and one whose IP header was valid but whose L4
// header was not kept its family, though neither was an IP packet to judge.
TEST(ParseReuse, MalformedFramesLeaveNothingFromBefore) {
    const Frame tagged =
        PacketBuilder().vlan(7).ipv4("198.18.0.1", "198.18.1.1").udp(1234, 53).build();
    PacketInfo info;
    ASSERT_EQ(parse_packet(tagged.data(), static_cast<uint32_t>(tagged.size()), &info),
              ParseStatus::ip);
    ASSERT_EQ(info.l3_offset, 18);
    const Frame empty;
    ASSERT_EQ(parse_packet(empty.data(), 0, &info), ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::eth_truncated);
    EXPECT_EQ(info.l3_offset, 0);
    EXPECT_EQ(+info.family, 0);

    // A valid IPv4 header whose payload is 16 bytes: too short for TCP.
    Frame cut_tcp = PacketBuilder()
                        .ipv4("198.18.0.1", "198.18.1.1")
                        .ipv4_total_length(36)
                        .tcp(1, 2, kTcpSyn)
                        .build();
    cut_tcp.resize(14 + 36);
    ASSERT_EQ(parse_packet(cut_tcp.data(), static_cast<uint32_t>(cut_tcp.size()), &info),
              ParseStatus::malformed);
    EXPECT_EQ(info.malformed, MalformedReason::l4_truncated);
    EXPECT_EQ(+info.family, 0);
    EXPECT_EQ(info.l3_offset, 14);
}

// Where the upper-layer header starts, how long the IP lengths make it, and the TCP numbers:
// what the answers (dataplane/answer/answer.h) are built from. Ethernet padding is not in l4_len; a
// non-first fragment has neither.
TEST(ParseOffsets, UpperLayerOffsetLengthAndTcpNumbers) {
    auto with_numbers = [](Frame f, size_t tcp_at) {
        const uint8_t numbers[8] = {0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67};
        std::memcpy(&f[tcp_at + 4], numbers, sizeof numbers);
        return f;
    };
    struct Case {
        const char *what;
        Frame frame;
        uint16_t l3_offset, l4_offset, l4_len;
    };
    const Case cases[] = {
        {"IPv4", with_numbers(v4().tcp(1, 2, kTcpAck).payload(10).build(), 34), 14, 34, 30},
        {"IPv4 with options and padding",
         with_numbers(v4().ipv4_options({1, 1, 1, 1}).tcp(1, 2, kTcpAck).trailing(6).build(), 38),
         14, 38, 20},
        {"IPv4 VLAN", with_numbers(v4().vlan(7).tcp(1, 2, kTcpAck).payload(10).build(), 38), 18, 38,
         30},
        {"IPv6 with a hop-by-hop header",
         with_numbers(v6().hop_by_hop(16).tcp(1, 2, kTcpAck).payload(3).build(), 14 + 40 + 16), 14,
         70, 23},
        {"IPv6 QinQ with routing and destination options",
         with_numbers(v6().qinq(1).vlan(2).routing().dest_opts().tcp(1, 2, kTcpAck).build(),
                      22 + 40 + 16),
         22, 78, 20},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        PacketInfo info;
        ASSERT_EQ(parse_packet(c.frame.data(), static_cast<uint32_t>(c.frame.size()), &info),
                  ParseStatus::ip);
        EXPECT_EQ(info.l3_offset, c.l3_offset);
        EXPECT_EQ(info.l4_offset, c.l4_offset);
        EXPECT_EQ(info.l4_len, c.l4_len);
        EXPECT_EQ(info.tcp_seq, 0x89abcdefu);
        EXPECT_EQ(info.tcp_ack, 0x01234567u);
    }

    PacketInfo info;
    const Frame udp = v6().dest_opts().udp(5, 53).payload(12).build();
    ASSERT_EQ(parse_packet(udp.data(), static_cast<uint32_t>(udp.size()), &info), ParseStatus::ip);
    EXPECT_EQ(info.l4_offset, 14 + 40 + 8);
    EXPECT_EQ(info.l4_len, 8 + 12);
    EXPECT_EQ(info.tcp_seq, 0u);
    EXPECT_EQ(info.tcp_ack, 0u);
    const Frame gre = v4().ip_proto(kProtoGre).payload(9).build();
    ASSERT_EQ(parse_packet(gre.data(), static_cast<uint32_t>(gre.size()), &info), ParseStatus::ip);
    EXPECT_EQ(info.l4_offset, 34) << "also for a protocol the parser does not read";
    EXPECT_EQ(info.l4_len, 9);
    const Frame later = v4().ipv4_fragment(10, false).ip_proto(kProtoTcp).payload(40).build();
    ASSERT_EQ(parse_packet(later.data(), static_cast<uint32_t>(later.size()), &info),
              ParseStatus::ip);
    EXPECT_EQ(info.l4_offset, 0);
    EXPECT_EQ(info.l4_len, 0);
}

}  // namespace
}  // namespace floodgate
