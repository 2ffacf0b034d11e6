// A ruleset swap keeps each surviving rule's state: its counters, its top offenders and, through
// its key id, the TATs in the table, so a reload hands no source a fresh burst. No EAL: rulesets
// without allow/block prefixes create no DPDK object.
#include <gtest/gtest.h>

#include <memory>

#include "dataplane/pipeline/pipeline.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

Rule rule(const char *name, uint16_t dst_port, uint32_t burst, uint8_t key_ipv4 = 32) {
    Rule r;
    r.name = name;
    r.match.proto = kProtoUdp;
    r.match.dst_ports = {{dst_port, dst_port}};
    r.key_ipv4_len = key_ipv4;
    r.rate_count = 1;
    r.rate_period_ns = 3600ull * 1000000000;  // 1/h: nothing refills within the test
    r.burst_pkts = burst;
    return r;
}

class ReloadTest : public ::testing::Test {
  protected:
    std::unique_ptr<RuleSet> build(std::vector<Rule> rules, const RuleSet *previous) {
        Config c;
        c.table_entries_per_core = 1024;
        c.rules = std::move(rules);
        RuleSetOptions o;
        o.previous = previous;
        std::string error;
        auto rs = RuleSet::build(c, o, &error);
        EXPECT_NE(rs, nullptr) << error;
        return rs;
    }
    // Sends n packets from src to dst_port at now_ns; returns how many passed.
    unsigned send(Pipeline &p, const char *src, uint16_t dst_port, unsigned n, uint64_t now_ns) {
        test::Frame f = test::PacketBuilder().ipv4(src, "198.18.255.1").udp(1000, dst_port).build();
        unsigned passed = 0;
        for (unsigned i = 0; i < n; ++i) {
            const uint8_t *frame = f.data();
            uint32_t len = static_cast<uint32_t>(f.size());
            Verdict v;
            p.decide(&frame, &len, 1, &now_ns, &v);
            passed += v == Verdict::pass;
        }
        return passed;
    }
    const RuleCounters &counters(const RuleSet &rs, const char *name) {
        return rs.find_rule(name)->state->per_core[0].counters;
    }
    LimitTable table_{1024, HashSeed{{1, 2, 3, 4}}};
};

TEST_F(ReloadTest, SurvivingRuleKeepsItsTatsAndCounters) {
    auto v1 = build({rule("dns", 53, 5), rule("ntp", 123, 3)}, nullptr);
    Pipeline p(v1.get(), &table_);
    const uint64_t t = 1000000000;
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);  // the burst, then refused
    EXPECT_EQ(send(p, "198.18.0.1", 123, 4, t), 3u);

    // v2: a new rule first (every index moves), dns at a new rate, ntp unchanged.
    Rule faster = rule("dns", 53, 5);
    faster.rate_count = 2;
    auto v2 = build({rule("new", 9999, 1), faster, rule("ntp", 123, 3)}, v1.get());
    EXPECT_FALSE(v2->kept_state(0));
    EXPECT_TRUE(v2->kept_state(1));
    EXPECT_TRUE(v2->kept_state(2));
    EXPECT_EQ(v2->find_rule("dns")->state, v1->find_rule("dns")->state);
    EXPECT_EQ(v2->find_rule("dns")->key_id, v1->find_rule("dns")->key_id);
    p.set_rules(v2.get());
    v1.reset();  // the old ruleset is gone; the state lives on in v2

    EXPECT_EQ(send(p, "198.18.0.1", 53, 4, t + 1000), 0u);   // no fresh burst
    EXPECT_EQ(send(p, "198.18.0.1", 123, 4, t + 1000), 0u);  // nor for ntp
    EXPECT_EQ(send(p, "198.18.0.2", 53, 6, t + 1000), 5u);   // a new source has its own
    const RuleCounters &dns = counters(*v2, "dns");
    EXPECT_EQ(dns.matched, 8u + 4 + 6);  // counted on from v1's 8
    EXPECT_EQ(dns.passed, 5u + 5);
    EXPECT_EQ(dns.refused, 3u + 4 + 1);
    EXPECT_EQ(counters(*v2, "ntp").passed, 3u);
    EXPECT_EQ(counters(*v2, "new").matched, 0u);
}

TEST_F(ReloadTest, RekeyedOrRemovedRuleStartsAfresh) {
    auto v1 = build({rule("dns", 53, 5)}, nullptr);
    Pipeline p(v1.get(), &table_);
    const uint64_t t = 1000000000;
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);

    // Same name, /24 key: a different key definition, so a new state and a new burst.
    auto v2 = build({rule("dns", 53, 5, 24)}, v1.get());
    EXPECT_FALSE(v2->kept_state(0));
    EXPECT_NE(v2->find_rule("dns")->key_id, v1->find_rule("dns")->key_id);
    p.set_rules(v2.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);
    EXPECT_EQ(counters(*v2, "dns").matched, 8u);

    // Removed, then added back: it does not find the TATs its old self left in the table.
    auto v3 = build({}, v2.get());
    auto v4 = build({rule("dns", 53, 5, 24)}, v3.get());
    EXPECT_FALSE(v4->kept_state(0));
    p.set_rules(v4.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);
}

// A key's state word means what its algorithm says (window.h): it is kept only while it
// still reads the same. GCRA and token-bucket share their TATs; a window's state starts
// afresh when the window, or a sliding window's N, changes.
TEST_F(ReloadTest, AlgorithmChangeKeepsStateOnlyWhereItReadsTheSame) {
    auto v1 = build({rule("dns", 53, 5)}, nullptr);
    Pipeline p(v1.get(), &table_);
    const uint64_t t = 1000000000;
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);

    Rule bucket = rule("dns", 53, 5);
    bucket.algorithm = RuleAlgorithm::token_bucket;
    auto v2 = build({bucket}, v1.get());
    EXPECT_TRUE(v2->kept_state(0));
    p.set_rules(v2.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 2, t), 0u);  // the same TAT: still empty

    Rule fixed = rule("dns", 53, 0);  // 1 per hour, as a fixed window
    fixed.algorithm = RuleAlgorithm::fixed_window;
    auto v3 = build({fixed}, v2.get());
    EXPECT_FALSE(v3->kept_state(0));
    p.set_rules(v3.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 3, t), 1u);  // a fresh window of 1

    Rule fixed_n = fixed;  // same W, another N: a fixed window's count reads the same
    fixed_n.rate_count = 2;
    auto v4 = build({fixed_n}, v3.get());
    EXPECT_TRUE(v4->kept_state(0));
    p.set_rules(v4.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 3, t), 1u);  // 1 of 2 already spent

    Rule sliding = fixed_n;
    sliding.algorithm = RuleAlgorithm::sliding_window;
    auto v5 = build({sliding}, v4.get());
    EXPECT_FALSE(v5->kept_state(0));
    Rule sliding_n = sliding;
    sliding_n.rate_count = 3;
    auto v6 = build({sliding_n}, v5.get());
    EXPECT_FALSE(v6->kept_state(0));  // p * (N + 1) + c reads differently with another N
    Rule sliding_w = sliding_n;
    sliding_w.rate_period_ns *= 2;
    auto v7 = build({sliding_w}, v6.get());
    EXPECT_FALSE(v7->kept_state(0));
    auto v8 = build({sliding_w}, v7.get());
    EXPECT_TRUE(v8->kept_state(0));
}

TEST_F(ReloadTest, ShadowSwitchKeepsState) {
    auto v1 = build({rule("dns", 53, 5)}, nullptr);
    Pipeline p(v1.get(), &table_);
    const uint64_t t = 1000000000;
    EXPECT_EQ(send(p, "198.18.0.1", 53, 8, t), 5u);
    Rule shadow = rule("dns", 53, 5);
    shadow.mode = RuleMode::shadow;
    auto v2 = build({shadow}, v1.get());
    p.set_rules(v2.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 4, t), 4u);  // shadow: counted, not dropped
    EXPECT_EQ(counters(*v2, "dns").shadow_refused, 4u);
    auto v3 = build({rule("dns", 53, 5)}, v2.get());
    p.set_rules(v3.get());
    EXPECT_EQ(send(p, "198.18.0.1", 53, 4, t), 0u);  // shadow spent nothing, gave nothing
}

}  // namespace
}  // namespace floodgate
