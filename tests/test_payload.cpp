// Payload rules (match.payload): the patterns as dataplane/patterns/payload_database.h compiles
// them and as dataplane/core/payload_scan.h scans a packet's window; the rules file's refusals; a
// payload rule deciding in the pipeline. Expected matches are worked out by hand from the bytes
// built here.
#include <gtest/gtest.h>

#include <cstring>

#include <random>

#include <memory>

#include "dataplane/core/payload_scan.h"
#include "dataplane/patterns/payload_database.h"
#include "dataplane/pipeline/pipeline.h"
#include "rules/load.h"
#include "rules/payload_text.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

#define SKIP_WITHOUT_ENGINE() \
    if (!payload_engine_available()) GTEST_SKIP() << "built without Hyperscan"

std::vector<uint8_t> bytes(const std::string &s) {
    return std::vector<uint8_t>(s.begin(), s.end());
}

PayloadPattern literal(const std::string &text, bool caseless = false) {
    PayloadPattern p;
    std::string why;
    EXPECT_TRUE(parse_literal(text, &p.text, &why)) << why;
    p.caseless = caseless;
    return p;
}
PayloadPattern regex(const std::string &text) {
    return {PayloadPattern::Kind::regex, text, false};
}
PayloadPattern dns_suffix(const std::string &domain) {
    return {PayloadPattern::Kind::dns_suffix, domain, false};
}

// A DNS query for name (a header of 12 bytes, then the question).
std::vector<uint8_t> dns_query(const std::string &name) {
    std::vector<uint8_t> q = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
    std::string labels, why;
    EXPECT_TRUE(dns_labels(name, &labels, &why)) << why;
    q.insert(q.end(), labels.begin(), labels.end());
    for (uint8_t b : {0, 1, 0, 1}) q.push_back(b);  // type A, class IN
    return q;
}

class PayloadScan : public ::testing::Test {
  protected:
    void compile(std::vector<PayloadPattern> patterns) {
        std::string error;
        int bad = -1;
        db_ = PayloadDatabase::compile(patterns, &error, &bad);
        ASSERT_NE(db_, nullptr) << error << " (pattern " << bad << ")";
        scratch_ = PayloadScratch::create({db_.get()}, 1, &error);
        ASSERT_NE(scratch_, nullptr) << error;
    }
    bool scan(const test::Frame &f, uint32_t offset = 0, uint32_t depth = 0,
              uint32_t captured = UINT32_MAX) {
        captured = std::min<uint32_t>(captured, static_cast<uint32_t>(f.size()));
        PacketInfo info;
        EXPECT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info, captured),
                  ParseStatus::ip);
        return payload_matches(db_->database(), PayloadLiteral{}, 0, offset, depth, f.data(),
                               captured, info, scratch_->core(0));
    }
    static test::Frame udp(const std::vector<uint8_t> &payload) {
        return test::PacketBuilder()
            .ipv4("198.18.1.10", "198.18.1.1")
            .udp(1000, 53)
            .payload(payload)
            .build();
    }
    std::shared_ptr<const PayloadDatabase> db_;
    std::unique_ptr<PayloadScratch> scratch_;
};

TEST_F(PayloadScan, LiteralsBinaryAndRegexes) {
    SKIP_WITHOUT_ENGINE();
    compile({literal("GET /index.html"), literal("\\x00\\x01\\x00\\x00stats"),
             regex("^M-SEARCH \\* HTTP/1\\.[01]\\r\\n")});
    EXPECT_TRUE(scan(udp(bytes("GET /index.html HTTP/1.1\r\n"))));
    EXPECT_FALSE(scan(udp(bytes("GET /other.html HTTP/1.1\r\n"))));
    EXPECT_TRUE(scan(udp({0x00, 0x01, 0x00, 0x00, 's', 't', 'a', 't', 's', '\r', '\n'})));
    EXPECT_FALSE(scan(udp({0x00, 0x02, 0x00, 0x00, 's', 't', 'a', 't', 's'})));
    EXPECT_TRUE(scan(udp(bytes("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n"))));
    EXPECT_FALSE(scan(udp(bytes("x M-SEARCH * HTTP/1.1\r\n"))));  // ^: the window's start
    // TCP: the payload starts after the data offset, options included.
    test::Frame tcp = test::PacketBuilder()
                          .ipv4("198.18.1.10", "198.18.1.1")
                          .tcp(1000, 80, kTcpAck)
                          .payload(bytes("GET /index.html"))
                          .build();
    EXPECT_TRUE(scan(tcp));
    EXPECT_FALSE(scan(tcp, 1));  // the first byte skipped: no longer "GET /index.html"
}

TEST_F(PayloadScan, TheWindowsEdges) {
    SKIP_WITHOUT_ENGINE();
    compile({literal("ABCD")});
    const test::Frame f = udp(bytes("xxxxABCDyyyy"));  // ABCD at payload bytes 4-7
    EXPECT_TRUE(scan(f, 4, 4));                        // the window is exactly the pattern
    EXPECT_FALSE(scan(f, 4, 3));                       // one byte short
    EXPECT_FALSE(scan(f, 5, 0));                       // starts after its first byte
    EXPECT_TRUE(scan(f, 0, 8));                        // ends at the window's last byte
    EXPECT_FALSE(scan(f, 0, 7));
    EXPECT_FALSE(scan(f, 12, 0));  // a window past the payload
    EXPECT_FALSE(scan(f, 40, 0));
    EXPECT_TRUE(scan(udp(bytes("xxABCD"))));  // the payload ends with the pattern
    // Ethernet padding after the IP packet is not payload: "CD" in the padding does not
    // complete the pattern.
    test::Frame padded = test::PacketBuilder()
                             .ipv4("198.18.1.10", "198.18.1.1")
                             .udp(1000, 53)
                             .payload(bytes("xxAB"))
                             .trailing(2)
                             .build();
    padded[padded.size() - 2] = 'C';
    padded[padded.size() - 1] = 'D';
    EXPECT_FALSE(scan(padded));
}

TEST_F(PayloadScan, OnlyCapturedBytesAreScanned) {
    SKIP_WITHOUT_ENGINE();
    compile({literal("ABCD")});
    const test::Frame f = udp(bytes("xxxxABCDyyyy"));
    const uint32_t payload_at = static_cast<uint32_t>(f.size()) - 12;
    EXPECT_TRUE(scan(f, 0, 0, payload_at + 8));   // captured up to the pattern's end
    EXPECT_FALSE(scan(f, 0, 0, payload_at + 7));  // cut inside it
    EXPECT_FALSE(scan(f, 6, 0, payload_at + 5));  // cut before the window
}

TEST_F(PayloadScan, DnsSuffixMatchesTheDomainAndNamesUnderItInAnyCase) {
    SKIP_WITHOUT_ENGINE();
    compile({dns_suffix("victim.example")});
    EXPECT_TRUE(scan(udp(dns_query("x7f3k9.victim.example"))));
    EXPECT_TRUE(scan(udp(dns_query("a.b.VICTIM.Example"))));  // 0x20 randomisation
    EXPECT_TRUE(scan(udp(dns_query("victim.example"))));
    EXPECT_FALSE(scan(udp(dns_query("notvictim.example"))));
    EXPECT_FALSE(scan(udp(dns_query("victim.example.org"))));
    EXPECT_FALSE(scan(udp(dns_query("www.other.example"))));
}

TEST(PayloadPatterns, BadOnesAreRefusedWithTheirIndex) {
    SKIP_WITHOUT_ENGINE();
    std::string error;
    int bad = -1;
    EXPECT_EQ(PayloadDatabase::compile({literal("ok"), regex("(unclosed")}, &error, &bad), nullptr);
    EXPECT_EQ(bad, 1);
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(PayloadDatabase::compile({regex("a*")}, &error, &bad), nullptr);  // matches ""
    EXPECT_EQ(bad, 0);
    EXPECT_NE(error.find("empty"), std::string::npos) << error;
}

TEST(PayloadPatterns, LiteralEscapesAndDomains) {
    std::string out, why;
    EXPECT_TRUE(parse_literal("a\\x00\\xFFb\\\\\\r\\n", &out, &why)) << why;
    EXPECT_EQ(out, std::string("a\0\xff"
                               "b\\\r\n",
                               7));
    EXPECT_FALSE(parse_literal("\\x0", &out, &why));
    EXPECT_FALSE(parse_literal("\\q", &out, &why));
    EXPECT_FALSE(parse_literal("caf\xc3\xa9", &out, &why));  // not ASCII: write \xHH
    EXPECT_FALSE(parse_literal("", &out, &why));
    EXPECT_TRUE(dns_labels("victim.example.", &out, &why)) << why;
    EXPECT_EQ(out, std::string("\x06victim\x07"
                               "example\0",
                               16));
    EXPECT_FALSE(dns_labels("a..b", &out, &why));
    EXPECT_FALSE(dns_labels(std::string(64, 'a') + ".example", &out, &why));
}

TEST(PayloadConfig, RefusalsNameTheFieldLineAndIndex) {
    SKIP_WITHOUT_ENGINE();
    const auto refused = [](const std::string &yaml) -> std::string {
        try {
            parse_config(yaml, "rules.yaml");
        } catch (const ConfigError &e) {
            return e.what();
        }
        return "";
    };
    const std::string head =
        "rules:\n  - name: dns\n    limit: { rate: 1/s, burst: 1 }\n    match:\n"
        "      payload:\n        patterns:\n";
    EXPECT_EQ(refused(head + "          - 'ok'\n          - { regex: '(' }\n")
                  .rfind("rules.yaml:8: rules[0].match.payload.patterns[1]: pattern 1: ", 0),
              0u)
        << refused(head + "          - 'ok'\n          - { regex: '(' }\n");
    EXPECT_NE(refused(head + "          - 'a\\q'\n").find("patterns[0]: unknown escape"),
              std::string::npos);
    EXPECT_NE(refused(head + "          - { dns_suffix: 'a..b' }\n").find("dns_suffix"),
              std::string::npos);
    EXPECT_NE(refused(head + "          - { regex: 'x', literal: 'y' }\n")
                  .find("one of literal, regex or dns_suffix"),
              std::string::npos);
    EXPECT_NE(refused(head + "          - { regex: \"GET\\0/x\" }\n").find("control byte"),
              std::string::npos);
    const std::string gre =
        "rules:\n  - name: gre\n    limit: { rate: 1/s, burst: 1 }\n    match:\n"
        "      proto: 47\n      payload: { patterns: ['x'] }\n";
    EXPECT_NE(refused(gre).find("payload needs proto tcp, udp, icmp or icmpv6"), std::string::npos)
        << refused(gre);
    const std::string syn =
        "rules:\n  - name: syn\n    limit: { rate: 1/s, burst: 1 }\n    action: syn-auth\n"
        "    match: { tcp_flags: \"syn !ack\", payload: { patterns: ['x'] } }\n";
    EXPECT_NE(refused(syn).find("carry no payload"), std::string::npos) << refused(syn);
    const Config ok = parse_config(
        head +
            "          - 'GET / '\n          - { regex: 'x+y', caseless: true }\n"
            "          - { dns_suffix: victim.example }\n        offset: 12\n        depth: 300\n",
        "rules.yaml");
    const PayloadMatch &m = ok.rules[0].match.payload;
    ASSERT_EQ(m.patterns.size(), 3u);
    EXPECT_EQ(m.patterns[1].kind, PayloadPattern::Kind::regex);
    EXPECT_TRUE(m.patterns[1].caseless);
    EXPECT_EQ(m.offset, 12u);
    EXPECT_EQ(m.depth, 300u);
    EXPECT_NE(m.compiled, nullptr);
}

// A water-torture flood: random names under one domain, limited by a payload rule; queries
// for other names on the same port are not the rule's and pass.
TEST(PayloadPipeline, ARuleLimitsOnlyThePacketsItsPatternsMatch) {
    SKIP_WITHOUT_ENGINE();
    Config c;
    Rule r;
    r.name = "water-torture";
    r.match.proto = kProtoUdp;
    r.match.dst_ports = {{53, 53}};
    r.match.payload.patterns = {dns_suffix("victim.example")};
    r.match.payload.offset = 12;  // the question, after the DNS header
    r.key_kind = KeyKind::none;   // the whole flood as one bucket, whatever the source
    r.reserve = ClassReserve{0, 0, 0};
    r.rate_count = 1;
    r.rate_period_ns = 1'000'000'000;
    r.burst_pkts = 2;
    c.rules = {r};
    std::string error;
    std::unique_ptr<RuleSet> rules = RuleSet::build(c, -1, &error);
    ASSERT_NE(rules, nullptr) << error;
    LimitTable table(1024, HashSeed{{1, 2, 3, 4}});
    Pipeline p(rules.get(), &table);
    unsigned passed_flood = 0, passed_other = 0;
    for (int i = 0; i < 20; ++i) {
        const bool flood = i % 2 == 0;
        const test::Frame f =
            test::PacketBuilder()
                .ipv4("198.18.5." + std::to_string(i), "198.18.1.1")
                .udp(1000, 53)
                .payload(dns_query(flood ? "q" + std::to_string(i) + "x.victim.example"
                                         : "www" + std::to_string(i) + ".other.example"))
                .build();
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        uint64_t now = 1'000'000;  // the same instant: only the burst passes
        Verdict v;
        p.decide(&frame, &len, 1, &now, &v);
        (flood ? passed_flood : passed_other) += v == Verdict::pass ? 1 : 0;
    }
    EXPECT_EQ(passed_flood, 2u);   // the burst
    EXPECT_EQ(passed_other, 10u);  // none of them matched the rule
    const RuleCounters &rc = rules->rules()[0].state->per_core[0].counters;
    EXPECT_EQ(rc.matched, 10u);
    EXPECT_EQ(rc.refused, 8u);
}

// A reload that changes a rule's patterns keeps its keys' state: the burst the flood spent
// under the old patterns stays spent under the new ones.
TEST(PayloadPipeline, AReloadThatChangesThePatternsKeepsTheState) {
    SKIP_WITHOUT_ENGINE();
    const auto config = [](std::vector<PayloadPattern> patterns) {
        Config c;
        Rule r;
        r.name = "flood";
        r.match.proto = kProtoUdp;
        r.match.payload.patterns = std::move(patterns);
        r.rate_count = 1;
        r.rate_period_ns = 1'000'000'000;
        r.burst_pkts = 1;
        c.rules = {r};
        return c;
    };
    std::string error;
    std::unique_ptr<RuleSet> before = RuleSet::build(config({literal("attack")}), -1, &error);
    ASSERT_NE(before, nullptr) << error;
    LimitTable table(1024, HashSeed{{1, 2, 3, 4}});
    const auto send = [&](const RuleSet *rs, const std::string &payload) {
        Pipeline p(rs, &table);
        const test::Frame f = test::PacketBuilder()
                                  .ipv4("198.18.5.5", "198.18.1.1")
                                  .udp(1000, 9)
                                  .payload(bytes(payload))
                                  .build();
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        uint64_t now = 5'000'000;
        Verdict v;
        p.decide(&frame, &len, 1, &now, &v);
        return v;
    };
    EXPECT_EQ(send(before.get(), "an attack"), Verdict::pass);  // the burst of one
    EXPECT_EQ(send(before.get(), "an attack"), Verdict::drop);
    RuleSetOptions o;
    o.previous = before.get();
    std::unique_ptr<RuleSet> after =
        RuleSet::build(config({literal("attack"), literal("assault")}), o, &error);
    ASSERT_NE(after, nullptr) << error;
    EXPECT_TRUE(after->kept_state(0));
    EXPECT_EQ(send(after.get(), "an assault"), Verdict::drop);  // the same source, still spent
    EXPECT_EQ(send(after.get(), "harmless"), Verdict::pass);    // not the rule's
}

// A rule of one short literal searches its window's first positions itself before Hyperscan
// is called: against a naive search, on random windows of every length and literals of every
// length, over a two-letter alphabet so that matches and near misses abound.
TEST(PayloadLiteral, TheSearchOfTheWindowsStartAgreesWithANaiveOne) {
    std::mt19937 rng(28);
    for (int round = 0; round < 20000; ++round) {
        PayloadLiteral lit;
        lit.len = static_cast<uint8_t>(2 + rng() % 15);
        for (unsigned i = 0; i < lit.len; ++i) lit.bytes[i] = static_cast<uint8_t>('a' + rng() % 2);
        std::vector<uint8_t> w(rng() % 64);
        for (uint8_t &b : w) b = static_cast<uint8_t>('a' + rng() % 2);
        int first = -1;  // the literal's first position, naively
        for (size_t i = 0; first < 0 && i + lit.len <= w.size(); ++i)
            if (std::memcmp(w.data() + i, lit.bytes, lit.len) == 0) first = static_cast<int>(i);
        const size_t positions = w.size() >= lit.len ? w.size() - lit.len + 1 : 0;
        const int got = literal_near_start(w.data(), static_cast<uint32_t>(w.size()), lit);
        if (first >= 0 && first < static_cast<int>(kLiteralSpan))
            EXPECT_EQ(got, 1) << round;
        else if (positions <= kLiteralSpan)
            EXPECT_EQ(got, 0) << round;
        else
            EXPECT_EQ(got, -1) << round;
    }
}

// The window length below which a rule's payload cannot match: its shortest literal, a DNS
// suffix's wire form (length bytes and labels), none with a regular expression.
TEST(PayloadShortest, ShortestPatternIsTheLeastBytesAMatchNeeds) {
    using K = PayloadPattern::Kind;
    EXPECT_EQ(shortest_pattern({{K::literal, "abcdefgh", false}, {K::literal, "xyz", true}}), 3u);
    EXPECT_EQ(shortest_pattern({{K::dns_suffix, "example.com", false}}), 13u);  // 7example3com
    EXPECT_EQ(shortest_pattern({{K::literal, "abcdefgh", false}, {K::regex, "a+", false}}), 0u);
    EXPECT_EQ(shortest_pattern({}), 0u);
}

}  // namespace
}  // namespace floodgate
