// The prefix tables a RuleSet matches sources and destinations with (allow/block and the rules'
// src/dst lists in one longest-prefix-match lookup per direction), against a linear model that
// checks every prefix: nested lists, lists nested in allow/block prefixes, /0, overrides, IPv6,
// 100,000 prefixes, and random configurations.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "dataplane/core/ruleset.h"

namespace floodgate {
namespace {

Prefix pfx(const std::string &s) {
    std::string why;
    auto p = parse_prefix(s, &why);
    EXPECT_TRUE(p.has_value()) << s << ": " << why;
    return p.value_or(Prefix{});
}

Rule rule(const std::string &name, std::vector<Prefix> src = {}, std::vector<Prefix> dst = {}) {
    Rule r;
    r.name = name;
    r.rate_count = 10;
    r.rate_period_ns = 1000000000;
    r.burst_pkts = 5;
    r.match.src = std::move(src);
    r.match.dst = std::move(dst);
    return r;
}

PacketInfo packet(const std::string &src, const std::string &dst = "") {
    PacketInfo p{};
    const bool v6 = src.find(':') != std::string::npos;
    p.family = v6 ? 6 : 4;
    p.l4_proto = kProtoUdp;
    p.has_l4 = true;
    p.dst_port = 53;
    inet_pton(v6 ? AF_INET6 : AF_INET, src.c_str(), p.src);
    inet_pton(v6 ? AF_INET6 : AF_INET,
              (dst.empty() ? (v6 ? "2001:db8::1" : "198.19.0.1") : dst).c_str(), p.dst);
    return p;
}

std::unique_ptr<RuleSet> build(const Config &c, std::vector<PrefixOverride> overrides = {}) {
    RuleSetOptions o;
    o.overrides = std::move(overrides);
    std::string error;
    auto rs = RuleSet::build(c, o, &error);
    EXPECT_NE(rs, nullptr) << error;
    return rs;
}

// Which rules of rs match p, by name, and the source's verdict.
struct Seen {
    PrefixVerdict verdict;
    std::vector<std::string> rules;
    bool operator==(const Seen &) const = default;
};
Seen classify(const RuleSet &rs, const PacketInfo &p) {
    const PrefixClass source = rs.classify_source(p);
    Seen s{source.verdict, {}};
    for (const CompiledRule &r : rs.rules())
        if (rule_matches(r, p, *source.rules, rs.dst_rules(p))) s.rules.push_back(r.name);
    return s;
}

std::ostream &operator<<(std::ostream &o, const Seen &s) {
    o << "verdict " << static_cast<int>(s.verdict) << ", rules";
    for (const auto &r : s.rules) o << " " << r;
    return o;
}

constexpr auto kNone = PrefixVerdict::none;
constexpr auto kAllow = PrefixVerdict::allow;
constexpr auto kBlock = PrefixVerdict::block;

TEST(PrefixTable, SrcAndDstListsOfBothFamilies) {
    Config c;
    c.rules = {rule("src", {pfx("198.18.0.0/24"), pfx("2001:db8:1::/48")}),
               rule("dst", {}, {pfx("198.19.255.0/24")})};
    auto rs = build(c);
    EXPECT_EQ(classify(*rs, packet("198.18.0.200")), (Seen{kNone, {"src"}}));
    EXPECT_EQ(classify(*rs, packet("198.18.1.1")), (Seen{kNone, {}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:1:2::3")), (Seen{kNone, {"src"}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:2::3")), (Seen{kNone, {}}));
    EXPECT_EQ(classify(*rs, packet("198.18.1.1", "198.19.255.9")), (Seen{kNone, {"dst"}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:1::1", "2001:db8:ff::1")), (Seen{kNone, {"src"}}))
        << "a v4 dst list never holds a v6 destination";
}

TEST(PrefixTable, NestedListsKeepWhatTheEnclosingPrefixSays) {
    Config c;
    c.allow = {pfx("198.18.0.0/16")};
    c.block = {pfx("198.18.7.128/25")};
    c.rules = {rule("wide", {pfx("198.18.0.0/15")}), rule("narrow", {pfx("198.18.7.0/24")})};
    auto rs = build(c);
    EXPECT_EQ(classify(*rs, packet("198.18.7.1")), (Seen{kAllow, {"wide", "narrow"}}));
    EXPECT_EQ(classify(*rs, packet("198.18.7.129")), (Seen{kBlock, {"wide", "narrow"}}));
    EXPECT_EQ(classify(*rs, packet("198.18.8.1")), (Seen{kAllow, {"wide"}}));
    EXPECT_EQ(classify(*rs, packet("198.19.0.1")), (Seen{kNone, {"wide"}}));
    EXPECT_EQ(classify(*rs, packet("198.20.0.1")), (Seen{kNone, {}}));
}

TEST(PrefixTable, ZeroLengthPrefixes) {
    Config c;
    c.allow = {pfx("::/0")};
    c.block = {pfx("2001:db8:bad::/48")};
    c.rules = {rule("all4", {pfx("0.0.0.0/0")}), rule("some4", {pfx("198.18.0.0/24")})};
    auto rs = build(c);
    EXPECT_EQ(classify(*rs, packet("198.18.0.1")), (Seen{kNone, {"all4", "some4"}}));
    EXPECT_EQ(classify(*rs, packet("203.0.113.1")), (Seen{kNone, {"all4"}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8::1")), (Seen{kAllow, {}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:bad::1")), (Seen{kBlock, {}}));
}

TEST(PrefixTable, AnOverrideReplacesTheFilesEntry) {
    Config c;
    c.allow = {pfx("198.18.1.0/24")};
    c.rules = {rule("r", {pfx("198.18.1.0/24")})};
    PrefixOverride o;
    o.prefix = pfx("198.18.1.0/24");
    o.verdict = kBlock;
    auto rs = build(c, {o});
    EXPECT_EQ(classify(*rs, packet("198.18.1.1")), (Seen{kBlock, {"r"}}));
}

// A rule listing 100,000 /32s: each listed address matches and its unlisted neighbour does not,
// at the cost of one lookup.
TEST(PrefixTable, HundredThousandPrefixesInOneList) {
    Config c;
    std::vector<Prefix> list;
    for (uint32_t i = 0; i < 100000; ++i) {
        Prefix p;
        p.family = 4;
        p.len = 32;
        const uint32_t a = 0xc6120000u + 2 * i;  // 198.18.0.0/15, every other address
        p.addr[0] = a >> 24, p.addr[1] = a >> 16 & 0xff, p.addr[2] = a >> 8 & 0xff,
        p.addr[3] = a & 0xff;
        list.push_back(p);
    }
    c.rules = {rule("many", list)};
    auto rs = build(c);
    for (uint32_t i = 0; i < 100000; i += 997) {
        const uint32_t a = 0xc6120000u + 2 * i;
        char text[INET_ADDRSTRLEN], next[INET_ADDRSTRLEN];
        const uint32_t be = htonl(a), be_next = htonl(a + 1);
        inet_ntop(AF_INET, &be, text, sizeof text);
        inet_ntop(AF_INET, &be_next, next, sizeof next);
        EXPECT_EQ(classify(*rs, packet(text)).rules.size(), 1u) << text;
        EXPECT_EQ(classify(*rs, packet(next)).rules.size(), 0u) << next;
    }
}

// IPv6 lists as operators write them: many /64s of one /48 and many /128s of one /64. Each
// shares its path with its siblings (rte_fib6's TRIE reserved 5 and 13 tbl8 groups for each
// whatever they share, and refused the 60th /64 of a /48 and the 20th /128).
TEST(PrefixTable, ManyIpv6PrefixesOfOnePath) {
    Config c;
    auto v6 = [](const char *stem, unsigned i, unsigned len) {
        char text[64];
        std::snprintf(text, sizeof text, stem, i);
        Prefix p = pfx(std::string(text) + "/" + std::to_string(len));
        return p;
    };
    for (unsigned i = 0; i < 4096; ++i) c.block.push_back(v6("2001:db8:1:%x::", i, 64));
    std::vector<Prefix> hosts;
    for (unsigned i = 1; i <= 20000; ++i) hosts.push_back(v6("2001:db8:2::%x", i, 128));
    c.rules = {rule("hosts", hosts)};
    auto rs = build(c);
    ASSERT_NE(rs, nullptr);
    EXPECT_EQ(classify(*rs, packet("2001:db8:1:fff::1")), (Seen{kBlock, {}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:1:1000::1")), (Seen{kNone, {}}));
    EXPECT_EQ(classify(*rs, packet("2001:db8:2::4e20")), (Seen{kNone, {"hosts"}}));  // 20000
    EXPECT_EQ(classify(*rs, packet("2001:db8:2::4e21")), (Seen{kNone, {}}));
    // Runtime overrides of /128s, as `floodctl block add` makes them, one ruleset each time.
    std::vector<PrefixOverride> overrides;
    for (unsigned i = 1; i <= 200; ++i) {
        PrefixOverride o;
        o.prefix = v6("2001:db8:3::%x", i, 128);
        overrides.push_back(o);
    }
    auto with_overrides = build(c, overrides);
    ASSERT_NE(with_overrides, nullptr);
    EXPECT_EQ(classify(*with_overrides, packet("2001:db8:3::c8")), (Seen{kBlock, {}}));
}

// Random allow/block lists and four rules' src lists in 198.18.0.0/15, with much nesting,
// against the definition: the longest allow or block prefix decides the verdict, and a rule
// matches when any prefix of its list holds the address.
TEST(PrefixTable, RandomConfigurationsAgreeWithTheLinearModel) {
    std::mt19937 rng(20261201);
    for (int round = 0; round < 5; ++round) {
        Config c;
        for (int r = 0; r < 4; ++r) c.rules.push_back(rule("r" + std::to_string(r)));
        std::vector<std::pair<Prefix, PrefixVerdict>> listed;
        for (int i = 0; i < 2000; ++i) {
            Prefix p;
            p.family = 4;
            p.len = static_cast<uint8_t>(15 + rng() % 18);
            IpAddr a{};
            const uint32_t v = 0xc6120000u | (rng() & 0x1ffff);
            a[0] = v >> 24, a[1] = v >> 16 & 0xff, a[2] = v >> 8 & 0xff, a[3] = v & 0xff;
            mask_addr(&a, p.len);
            p.addr = a;
            const unsigned where = rng() % 6;
            if (where < 4) {
                c.rules[where].match.src.push_back(p);
            } else {
                bool taken = false;  // a prefix may not be in both lists
                for (const auto &[q, v] : listed) taken |= q == p;
                if (taken) continue;
                (where == 4 ? c.allow : c.block).push_back(p);
                listed.push_back({p, where == 4 ? kAllow : kBlock});
            }
        }
        auto rs = build(c);
        for (int n = 0; n < 20000; ++n) {
            const uint32_t v = 0xc6120000u | (rng() & 0x1ffff);
            const uint32_t be = htonl(v);
            char text[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &be, text, sizeof text);
            const PacketInfo p = packet(text);
            IpAddr addr{};
            std::memcpy(addr.data(), p.src, 16);
            Seen want{kNone, {}};
            int longest = -1;
            for (const auto &[q, verdict] : listed)
                if (prefix_contains(q, 4, addr) && q.len > longest) {
                    longest = q.len;
                    want.verdict = verdict;
                }
            for (const Rule &r : c.rules)
                for (const Prefix &q : r.match.src)
                    if (prefix_contains(q, 4, addr)) {
                        want.rules.push_back(r.name);
                        break;
                    }
            ASSERT_EQ(classify(*rs, p), want) << text << " (round " << round << ")";
        }
    }
}

}  // namespace
}  // namespace floodgate
