// RuleIndex: for random rules and packets, the candidates it lists and rule_matches_rest()
// together accept exactly the rules a packet matches, in file order, as an independent model
// of the match section (written here from rules.h's documentation, not from rule_match.h)
// says; and the port boundaries 0, 65535 and a rule's overlapping ranges.
#include <gtest/gtest.h>

#include <random>

#include "dataplane/core/rule_index.h"

namespace floodgate {
namespace {

// The match section as documented: an unset field or empty list means any; ports and flags
// only match TCP/UDP packets with a parsed header (flags: TCP only).
bool model_matches(const Rule &r, const PacketInfo &p) {
    const RuleMatch &m = r.match;
    if (m.proto && p.l4_proto != *m.proto) return false;
    const bool names_l4 = !m.dst_ports.empty() || !m.src_ports.empty() ||
                          m.tcp_flags.must_set != 0 || m.tcp_flags.must_clear != 0;
    if (!names_l4) return true;
    if (!p.has_l4 || (p.l4_proto != kProtoTcp && p.l4_proto != kProtoUdp)) return false;
    auto in = [](const std::vector<PortRange> &ranges, uint16_t port) {
        if (ranges.empty()) return true;
        for (const PortRange &pr : ranges)
            if (pr.lo <= port && port <= pr.hi) return true;
        return false;
    };
    if (!in(m.dst_ports, p.dst_port) || !in(m.src_ports, p.src_port)) return false;
    if (m.tcp_flags.must_set != 0 || m.tcp_flags.must_clear != 0) {
        if (p.l4_proto != kProtoTcp) return false;
        if ((p.tcp_flags & m.tcp_flags.must_set) != m.tcp_flags.must_set) return false;
        if ((p.tcp_flags & m.tcp_flags.must_clear) != 0) return false;
    }
    return true;
}

Rule named(const std::string &name) {
    Rule r;
    r.name = name;
    r.rate_count = 10;
    r.rate_period_ns = 1000000000;
    r.burst_pkts = 5;
    return r;
}

const uint8_t kProtos[] = {kProtoTcp, kProtoUdp, kProtoIcmp, kProtoIcmpv6, 47};
// Ports drawn near the few values ranges are made of, so that boundaries are hit.
const uint16_t kPorts[] = {0, 1, 52, 53, 54, 80, 443, 1000, 1001, 65534, 65535};

uint16_t some_port(std::mt19937 &g) {
    return g() % 4 == 0 ? static_cast<uint16_t>(g()) : kPorts[g() % std::size(kPorts)];
}

std::vector<PortRange> some_ranges(std::mt19937 &g) {
    std::vector<PortRange> out(g() % 3 == 0 ? g() % 4 : 0);
    for (PortRange &pr : out) {
        const uint16_t a = some_port(g), b = some_port(g);
        pr = PortRange{std::min(a, b), std::max(a, b)};
    }
    return out;
}

Rule some_rule(std::mt19937 &g, unsigned i) {
    Rule r = named("r" + std::to_string(i));
    if (g() % 2) r.match.proto = kProtos[g() % std::size(kProtos)];
    r.match.dst_ports = some_ranges(g);
    r.match.src_ports = g() % 4 == 0 ? some_ranges(g) : std::vector<PortRange>{};
    if (g() % 5 == 0) r.match.tcp_flags = TcpFlagMatch{kTcpSyn, kTcpAck};
    return r;
}

PacketInfo some_packet(std::mt19937 &g) {
    PacketInfo p{};
    p.family = g() % 2 ? 4 : 6;
    p.l4_proto = kProtos[g() % std::size(kProtos)];
    p.has_l4 = g() % 8 != 0;  // sometimes a non-first fragment
    if (p.has_l4 && (p.l4_proto == kProtoTcp || p.l4_proto == kProtoUdp)) {
        p.dst_port = some_port(g);
        p.src_port = some_port(g);
    }
    if (p.l4_proto == kProtoTcp) p.tcp_flags = g() % 2 ? kTcpSyn : kTcpAck;
    return p;
}

std::vector<uint16_t> by_index(const RuleIndex &index, const std::vector<CompiledRule> &rules,
                               const PacketInfo &p) {
    const RuleBits none;
    std::vector<uint16_t> out;
    const RuleCandidates c = index.candidates(p);
    for (unsigned k = 0; k < c.count; ++k)
        if (rule_matches_rest(rules[c.index[k]], p, none, none)) out.push_back(c.index[k]);
    return out;
}

TEST(RuleIndex, AcceptsExactlyWhatTheModelMatchesInFileOrder) {
    std::mt19937 g(15);
    const RuleBits none;
    size_t matched = 0, checked = 0;
    for (unsigned set = 0; set < 200; ++set) {
        std::vector<Rule> config(1 + g() % 12);
        std::vector<CompiledRule> rules;
        for (unsigned i = 0; i < config.size(); ++i) {
            config[i] = some_rule(g, i);
            rules.push_back(compile_rule(config[i], static_cast<uint16_t>(i)));
        }
        const RuleIndex index(rules);
        for (unsigned n = 0; n < 500; ++n) {
            const PacketInfo p = some_packet(g);
            std::vector<uint16_t> want;
            for (unsigned i = 0; i < config.size(); ++i)
                if (model_matches(config[i], p)) want.push_back(static_cast<uint16_t>(i));
            ASSERT_EQ(by_index(index, rules, p), want) << "ruleset " << set << " packet " << n;
            for (unsigned i = 0; i < config.size(); ++i)
                ASSERT_EQ(rule_matches(rules[i], p, none, none), model_matches(config[i], p));
            matched += want.size();
            ++checked;
        }
    }
    // The draws exercise both outcomes.
    EXPECT_EQ(checked, 100000u);
    EXPECT_GT(matched, 20000u);
    EXPECT_LT(matched, checked * 6);
}

TEST(RuleIndex, PortBoundariesAndOverlappingRanges) {
    Rule low = named("low"), high = named("high"), both = named("both");
    low.match.proto = kProtoUdp;
    low.match.dst_ports = {{0, 0}};
    high.match.dst_ports = {{65535, 65535}};
    // both: two overlapping ranges of one rule: covered until the last one ends
    both.match.dst_ports = {{10, 20}, {15, 30}};
    const std::vector<CompiledRule> rules = {compile_rule(low, 0), compile_rule(high, 1),
                                             compile_rule(both, 2)};
    const RuleIndex index(rules);
    auto udp = [](uint16_t port) {
        PacketInfo p{};
        p.family = 4;
        p.l4_proto = kProtoUdp;
        p.has_l4 = true;
        p.dst_port = port;
        return p;
    };
    using V = std::vector<uint16_t>;
    EXPECT_EQ(by_index(index, rules, udp(0)), V{0});
    EXPECT_EQ(by_index(index, rules, udp(65535)), V{1});
    EXPECT_EQ(by_index(index, rules, udp(9)), V{});
    EXPECT_EQ(by_index(index, rules, udp(10)), V{2});
    EXPECT_EQ(by_index(index, rules, udp(20)), V{2});
    EXPECT_EQ(by_index(index, rules, udp(21)), V{2});
    EXPECT_EQ(by_index(index, rules, udp(30)), V{2});
    EXPECT_EQ(by_index(index, rules, udp(31)), V{});
    PacketInfo tcp0 = udp(0);
    tcp0.l4_proto = kProtoTcp;
    EXPECT_EQ(by_index(index, rules, tcp0), V{});  // low is UDP only
    PacketInfo icmp{};
    icmp.l4_proto = kProtoIcmp;
    icmp.has_l4 = true;
    EXPECT_EQ(by_index(index, rules, icmp), V{});  // every rule names ports
}

// 256 rules of 64 distinct ranges each, the most validation allows: built, and a packet on
// any port is still answered by one lookup.
TEST(RuleIndex, LargestRulesetBuilds) {
    std::vector<CompiledRule> rules;
    for (unsigned i = 0; i < kMaxRules; ++i) {
        Rule r = named("r" + std::to_string(i));
        for (unsigned k = 0; k < kMaxPortRanges; ++k) {
            const auto lo = static_cast<uint16_t>(1 + (i * kMaxPortRanges + k) * 3);
            r.match.dst_ports.push_back(PortRange{lo, static_cast<uint16_t>(lo + 1)});
        }
        rules.push_back(compile_rule(r, static_cast<uint16_t>(i)));
    }
    const RuleIndex index(rules);
    PacketInfo p{};
    p.l4_proto = kProtoTcp;
    p.has_l4 = true;
    p.dst_port = static_cast<uint16_t>(1 + (7 * kMaxPortRanges + 5) * 3 + 1);  // rule 7's 6th
    EXPECT_EQ(by_index(index, rules, p), std::vector<uint16_t>{7});
    p.dst_port = 3;  // between two ranges
    EXPECT_EQ(by_index(index, rules, p), std::vector<uint16_t>{});
    EXPECT_EQ(index.groups(), 1u + kMaxRules);  // none, and each rule alone
}

}  // namespace
}  // namespace floodgate
