// Rule matching and source keying on parsed packets (PacketInfo filled by hand, so these tests
// do not depend on the parser). Prefix lists are matched through the RuleSet's prefix tables,
// which need the EAL: tests/eal/test_prefix_table.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "dataplane/core/rule_match.h"

namespace floodgate {
namespace {

PacketInfo v4(const char *src, uint8_t proto = 17, uint16_t dport = 0, uint8_t flags = 0,
              bool l4 = true) {
    PacketInfo p{};
    p.family = 4;
    p.l4_proto = proto;
    p.has_l4 = l4;
    p.dst_port = dport;
    p.src_port = 40000;
    p.tcp_flags = flags;
    inet_pton(AF_INET, src, p.src);
    inet_pton(AF_INET, "198.18.255.1", p.dst);
    return p;
}

PacketInfo v6(const char *src, uint8_t proto = 17, uint16_t dport = 53) {
    PacketInfo p{};
    p.family = 6;
    p.l4_proto = proto;
    p.has_l4 = true;
    p.dst_port = dport;
    inet_pton(AF_INET6, src, p.src);
    inet_pton(AF_INET6, "2001:db8:ffff::1", p.dst);
    return p;
}

Rule base_rule() {
    Rule r;
    r.name = "r";
    r.rate_count = 10;
    r.rate_period_ns = 1000000000;
    r.burst_pkts = 5;
    return r;
}

struct MatchCase {
    const char *description;
    Rule rule;
    PacketInfo packet;
    bool expected;
};

std::vector<MatchCase> match_cases() {
    std::vector<MatchCase> cases;
    Rule any = base_rule();
    cases.push_back({"no match section matches udp", any, v4("198.18.0.1", 17, 53), true});
    cases.push_back({"no match section matches non-first fragment", any,
                     v4("198.18.0.1", 17, 0, 0, false), true});

    Rule dns = base_rule();
    dns.match.proto = 17;
    dns.match.dst_ports = {{53, 53}};
    cases.push_back({"udp/53", dns, v4("198.18.0.1", 17, 53), true});
    cases.push_back({"udp/54", dns, v4("198.18.0.1", 17, 54), false});
    cases.push_back({"tcp/53 against udp rule", dns, v4("198.18.0.1", 6, 53), false});
    cases.push_back({"udp fragment without L4", dns, v4("198.18.0.1", 17, 0, 0, false), false});
    cases.push_back({"ipv6 udp/53", dns, v6("2001:db8::1"), true});

    Rule ports = base_rule();  // ports without proto: TCP or UDP
    ports.match.dst_ports = {{80, 80}, {1000, 2000}};
    cases.push_back({"range low edge", ports, v4("198.18.0.1", 6, 1000), true});
    cases.push_back({"range high edge", ports, v4("198.18.0.1", 17, 2000), true});
    cases.push_back({"past the range", ports, v4("198.18.0.1", 6, 2001), false});
    cases.push_back({"list entry", ports, v4("198.18.0.1", 6, 80), true});
    cases.push_back({"icmp never matches ports", ports, v4("198.18.0.1", 1, 80), false});

    Rule syn = base_rule();
    syn.match.proto = 6;
    syn.match.tcp_flags = {kTcpSyn, kTcpAck};
    cases.push_back({"syn", syn, v4("198.18.0.1", 6, 80, kTcpSyn), true});
    cases.push_back({"syn-ack", syn, v4("198.18.0.1", 6, 80, kTcpSyn | kTcpAck), false});
    cases.push_back({"ack", syn, v4("198.18.0.1", 6, 80, kTcpAck), false});
    cases.push_back({"syn on udp", syn, v4("198.18.0.1", 17, 80, kTcpSyn), false});

    Rule icmp = base_rule();
    icmp.match.proto = 1;
    cases.push_back({"icmp", icmp, v4("198.18.0.1", 1), true});
    cases.push_back({"icmpv6 is another protocol", icmp, v6("2001:db8::1", 58, 0), false});
    return cases;
}

TEST(RuleMatch, Table) {
    const RuleBits none;
    for (const MatchCase &c : match_cases()) {
        CompiledRule r = compile_rule(c.rule, 0);
        EXPECT_EQ(rule_matches(r, c.packet, none, none), c.expected) << c.description;
    }
}

// A rule with a list matches only when the prefix tables put the packet's address in it.
TEST(RuleMatch, PrefixListsReadTheirBit) {
    Rule rule = base_rule();
    rule.match.src = {Prefix{}};
    rule.match.dst = {Prefix{}};
    const CompiledRule r = compile_rule(rule, 3);
    RuleBits in, out;
    in.set(3);
    out.set(2);
    const PacketInfo p = v4("198.18.0.1", 17, 53);
    EXPECT_TRUE(rule_matches(r, p, in, in));
    EXPECT_FALSE(rule_matches(r, p, out, in));
    EXPECT_FALSE(rule_matches(r, p, in, out));
}

LimitKey key_for(uint8_t v4_len, uint8_t v6_len, const PacketInfo &p, uint16_t index = 0) {
    Rule r = base_rule();
    r.key_ipv4_len = v4_len;
    r.key_ipv6_len = v6_len;
    return rule_key(compile_rule(r, index), p);
}

bool same_key(const LimitKey &a, const LimitKey &b) {
    return a.addr_hi == b.addr_hi && a.addr_lo == b.addr_lo && a.tag == b.tag;
}

TEST(RuleKey, Ipv4PrefixLengths) {
    EXPECT_TRUE(same_key(key_for(32, 64, v4("198.18.0.1")), key_for(32, 64, v4("198.18.0.1"))));
    EXPECT_FALSE(same_key(key_for(32, 64, v4("198.18.0.1")), key_for(32, 64, v4("198.18.0.2"))));
    EXPECT_TRUE(same_key(key_for(24, 64, v4("198.18.0.1")), key_for(24, 64, v4("198.18.0.254"))));
    EXPECT_FALSE(same_key(key_for(24, 64, v4("198.18.0.1")), key_for(24, 64, v4("198.18.1.1"))));
    EXPECT_TRUE(same_key(key_for(0, 64, v4("198.18.0.1")), key_for(0, 64, v4("198.19.9.9"))));
    EXPECT_FALSE(same_key(key_for(31, 64, v4("198.18.0.1")), key_for(31, 64, v4("198.18.0.2"))));
    EXPECT_TRUE(same_key(key_for(31, 64, v4("198.18.0.2")), key_for(31, 64, v4("198.18.0.3"))));
}

TEST(RuleKey, Ipv6PrefixLengths) {
    EXPECT_TRUE(same_key(key_for(32, 64, v6("2001:db8:0:1::1")),
                         key_for(32, 64, v6("2001:db8:0:1:ffff::9"))));
    EXPECT_FALSE(
        same_key(key_for(32, 64, v6("2001:db8:0:1::1")), key_for(32, 64, v6("2001:db8:0:2::1"))));
    EXPECT_FALSE(
        same_key(key_for(32, 128, v6("2001:db8::1")), key_for(32, 128, v6("2001:db8::2"))));
    EXPECT_TRUE(
        same_key(key_for(32, 48, v6("2001:db8:1:2::")), key_for(32, 48, v6("2001:db8:1:3::"))));
    EXPECT_TRUE(same_key(key_for(32, 127, v6("2001:db8::2")), key_for(32, 127, v6("2001:db8::3"))));
}

TEST(RuleKey, RuleAndFamilySeparateKeys) {
    PacketInfo p = v4("198.18.0.1");
    EXPECT_FALSE(same_key(key_for(32, 64, p, 0), key_for(32, 64, p, 1)));
    // ::c612:1 (bytes of 198.18.0.1 at the front of an IPv6 address) is not the IPv4 source.
    PacketInfo q{};
    q.family = 6;
    std::memcpy(q.src, p.src, 4);
    EXPECT_FALSE(same_key(key_for(32, 128, p), key_for(32, 128, q)));
}

}  // namespace
}  // namespace floodgate
