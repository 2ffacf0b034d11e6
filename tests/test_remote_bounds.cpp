// What another box may make this one do, even holding valid keys (issue 42): the bound on a
// remote charge, worked out here by hand from each rule's limit as written.
#include <gtest/gtest.h>

#include "dataplane/api/prefix.h"
#include "dataplane/pipeline/remote_bounds.h"
#include "rules/load.h"
#include "tests/config_cases.h"
#include "tests/time_units.h"

namespace floodgate {
namespace {

const Config kRules = parse_config(
    R"(cluster: { name: e, redis: "h:1" }
rules:
  - { name: gcra, key: dst, limit: { rate: 1000/s, burst: 50 }, share: cluster }
  - { name: slow, key: dst, limit: { rate: 7/s, burst: 3 }, share: cluster }
  - { name: fixed, key: dst, algorithm: fixed-window, limit: { rate: 100/s }, share: cluster }
  - { name: sliding, key: dst, algorithm: sliding-window, limit: { rate: 60/min }, share: cluster }
  - name: learned
    match: { proto: tcp, dst_port: 80, tcp_flags: "syn !ack" }
    key: dst
    limit: { rate: 100/s, burst: 10, adaptive: { min: 10/s, max: 5000/s, target: 50ms } }
    share: cluster
)");

const Rule &rule(size_t i) {
    return kRules.rules.at(i);
}

TEST(RemoteBounds, OneBoxAdmitsRateTimesIntervalPlusBurst) {
    EXPECT_EQ(one_box_admits(rule(0), 100 * kMs), 100u + 50);  // 1000/s x 0.1 s + 50
    EXPECT_EQ(one_box_admits(rule(0), 10 * kMs), 10u + 50);
    EXPECT_EQ(one_box_admits(rule(1), 100 * kMs), 1u + 3);  // 0.7 rounded up, + 3
    EXPECT_EQ(one_box_admits(rule(1), 1000 * kMs), 7u + 3);
    // A window's whole N in each window the interval touches: two for 0.1 s of 1 s windows.
    EXPECT_EQ(one_box_admits(rule(2), 100 * kMs), 2u * 100);
    EXPECT_EQ(one_box_admits(rule(2), 2500 * kMs), 4u * 100);  // 2.5 windows touch 4
    EXPECT_EQ(one_box_admits(rule(3), 100 * kMs), 2u * 60);
    // An adaptive rule at the highest rate it may learn: 5000/s.
    EXPECT_EQ(one_box_admits(rule(4), 100 * kMs), 500u + 10);
}

TEST(RemoteBounds, AChargeIsTwiceWhatEachOtherBoxCouldAdmit) {
    EXPECT_EQ(kRemoteChargeMargin, 2u);
    EXPECT_EQ(remote_charge_bound(rule(0), 100 * kMs, 2), 2u * 150);
    EXPECT_EQ(remote_charge_bound(rule(0), 100 * kMs, 3), 2u * 2 * 150);
    EXPECT_EQ(remote_charge_bound(rule(0), 100 * kMs, 1024), 2u * 1023 * 150);
    // A box that knows of no other still takes one box's worth (the count may lag).
    EXPECT_EQ(remote_charge_bound(rule(0), 100 * kMs, 1), 2u * 150);
    EXPECT_EQ(remote_charge_bound(rule(0), 100 * kMs, 0), 2u * 150);
}

// Each box's row bounded on its own (2 x 150 here), then their sum by all the others' bound: one
// box cannot spend the others' share, and many rows cannot pass the live boxes' sum.
TEST(RemoteBounds, EachBoxsRowIsBoundedOnItsOwn) {
    const uint64_t rows_a[] = {1'000'000'000};
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 3, rows_a), 300u);  // not 2 x 2 x 150
    const uint64_t rows_b[] = {1'000'000'000, 7};
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 3, rows_b), 307u);  // the honest 7 whole
    const uint64_t rows_c[] = {299, 300, 301};
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 4, rows_c), 899u);
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 3, rows_c), 600u);  // 2 others live: 2 x 300
    const uint64_t rows_d[] = {UINT64_MAX, UINT64_MAX};
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 1024, rows_d), 600u);
    EXPECT_EQ(remote_charge(rule(0), 100 * kMs, 2, {}), 0u);
}

TEST(RemoteBounds, NoOverflowAtTheLargestLimits) {
    Rule r = rule(0);
    r.rate_count = UINT64_MAX;
    r.rate_period_ns = 1;
    r.burst_pkts = UINT32_MAX;
    EXPECT_EQ(one_box_admits(r, 10'000 * kMs), UINT64_MAX);
    EXPECT_EQ(remote_charge_bound(r, 10'000 * kMs, 1024), UINT64_MAX);
}

TEST(RemoteBounds, EscalationTtlsCappedByTheRulesOwn) {
    const Config c = parse_config(R"(rules:
  - { name: a, key: src, limit: { rate: 10/s, burst: 10 }, escalate: { after: 10s, ttl: 2m } }
  - { name: b, key: src, limit: { rate: 10/s, burst: 10 }, escalate: { after: 10s, ttl: 5m } }
  - { name: c, key: src, limit: { rate: 10/s, burst: 10 } }
)");
    const uint64_t cap = 300'000 * kMs;
    EXPECT_EQ(remote_escalation_ttl_cap_ns(c), cap);  // the longest of the rules': b's
    EXPECT_EQ(remote_escalation_ttl_cap_ns(kRules), 600'000 * kMs);  // none escalates: 10 min
    EXPECT_EQ(clamp_remote_ttl(0, cap), cap);                        // "never expires" is the cap
    EXPECT_EQ(clamp_remote_ttl(cap + 1, cap), cap);
    EXPECT_EQ(clamp_remote_ttl(UINT64_MAX, cap), cap);
    EXPECT_EQ(clamp_remote_ttl(cap, cap), cap);
    EXPECT_EQ(clamp_remote_ttl(1, cap), 1u);
    EXPECT_EQ(remote_escalations_bound(1), kRemoteEscalationsPerBox);
    EXPECT_EQ(remote_escalations_bound(2), kRemoteEscalationsPerBox);
    EXPECT_EQ(remote_escalations_bound(5), 4 * kRemoteEscalationsPerBox);
}

TEST(RemoteBounds, NoEscalationShorterThanTheRulesSourceKeys) {
    const Config c = parse_config(R"(rules:
  - name: a
    key: { ipv4: 24, ipv6: 56 }
    limit: { rate: 10/s, burst: 10 }
    escalate: { after: 10s }
  - { name: b, key: src, limit: { rate: 10/s, burst: 10 }, escalate: { after: 10s } }
)");
    std::string why;
    const auto long_enough = [&](const Config &config, const char *text) {
        return remote_escalation_long_enough(config, *parse_prefix(text, &why));
    };
    EXPECT_TRUE(long_enough(c, "198.18.0.0/24"));
    EXPECT_TRUE(long_enough(c, "198.18.0.1/32"));
    EXPECT_FALSE(long_enough(c, "198.18.0.0/23"));
    EXPECT_FALSE(long_enough(c, "0.0.0.0/0"));
    EXPECT_TRUE(long_enough(c, "2001:db8::/56"));
    EXPECT_FALSE(long_enough(c, "2001:db8::/48"));
    EXPECT_FALSE(long_enough(c, "::/0"));
    // A box none of whose rules escalate takes hosts only.
    EXPECT_TRUE(long_enough(kRules, "198.18.0.1/32"));
    EXPECT_FALSE(long_enough(kRules, "198.18.0.0/31"));
    EXPECT_TRUE(long_enough(kRules, "2001:db8::1/128"));
}

TEST(RemoteBounds, TheClusterSectionsAllowOptions) {
    const Config d = parse_config("cluster: { name: e, redis: \"h:1\" }\n");
    EXPECT_TRUE(d.cluster.remote_allows);
    EXPECT_EQ(d.cluster.remote_allow_max_ttl_ns, 3'600'000 * kMs);
    EXPECT_EQ(d.cluster.remote_allow_min_ipv4, 24u);
    EXPECT_EQ(d.cluster.remote_allow_min_ipv6, 48u);
    const Config c = parse_config(
        "cluster: { name: e, redis: \"h:1\", remote_allows: false, remote_allow_max_ttl: 10m,\n"
        "           remote_allow_min_ipv4: 28, remote_allow_min_ipv6: 56 }\n");
    EXPECT_FALSE(c.cluster.remote_allows);
    EXPECT_EQ(c.cluster.remote_allow_max_ttl_ns, 600'000 * kMs);
    EXPECT_EQ(c.cluster.remote_allow_min_ipv4, 28u);
    EXPECT_EQ(c.cluster.remote_allow_min_ipv6, 56u);
}

}  // namespace
}  // namespace floodgate
