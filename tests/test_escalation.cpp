// Escalation decided from samples of a rule's top refused sources (dataplane/service/escalation.h):
// each sample's refusals and times are given, and the expected escalations computed by hand
// from the rule's after / min_refused_rate / ttl.
#include <gtest/gtest.h>

#include <algorithm>

#include "dataplane/service/escalation.h"
#include "dataplane/service/sampled_refusals.h"

namespace floodgate {
namespace {

constexpr uint64_t kS = 1'000'000'000ull;

Prefix host(const char *text) {
    std::string why;
    return parse_prefix(text, &why).value();
}

Rule escalating(const std::string &name, uint64_t after_s, uint64_t per_s, uint64_t ttl_s) {
    Rule r;
    r.name = name;
    r.escalate.after_ns = after_s * kS;
    r.escalate.min_refused_count = per_s;
    r.escalate.min_refused_period_ns = kS;
    r.escalate.ttl_ns = ttl_s * kS;
    return r;
}

TEST(Escalation, ASourceRefusedFastEnoughForAfterIsEscalatedWithItsTtl) {
    Escalator e;
    e.set_rules({escalating("dns", 3, 1000, 60)});
    const Prefix flood = host("198.18.66.6");
    // 1000/s exactly counts (>=); first sight at t = 10 s only starts the track.
    EXPECT_TRUE(e.sample(10 * kS, {{"dns", flood, 500}}).empty());
    EXPECT_TRUE(e.sample(11 * kS, {{"dns", flood, 1500}}).empty());  // over since 10 s
    EXPECT_TRUE(e.sample(12 * kS, {{"dns", flood, 2600}}).empty());  // 2 s over
    const std::vector<Escalation> out = e.sample(13 * kS, {{"dns", flood, 3700}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].rule, "dns");
    EXPECT_EQ(out[0].key, flood);
    EXPECT_EQ(out[0].expires_ns, 73 * kS);
    EXPECT_EQ(out[0].refused_per_s, 1100u);
    EXPECT_EQ(e.tracked(), 0u);  // starts again from nothing
}

TEST(Escalation, OneSlowIntervalStartsTheDelayAgain) {
    Escalator e;
    e.set_rules({escalating("dns", 2, 1000, 60)});
    const Prefix s = host("198.18.66.7");
    e.sample(0, {{"dns", s, 0}});
    e.sample(1 * kS, {{"dns", s, 1000}});
    e.sample(2 * kS, {{"dns", s, 1999}});                       // 999/s: under
    EXPECT_TRUE(e.sample(3 * kS, {{"dns", s, 3000}}).empty());  // over since 2 s only
    EXPECT_EQ(e.sample(4 * kS, {{"dns", s, 4000}}).size(), 1u);
}

TEST(Escalation, OnlyEscalatingRulesAndSourcesStillInTheTopCount) {
    Escalator e;
    Rule quiet;
    quiet.name = "web";
    e.set_rules({escalating("dns", 1, 100, 60), quiet});
    const Prefix a = host("198.18.66.8"), b = host("2001:db8:66::/64");
    e.sample(0, {{"dns", a, 0}, {"web", b, 0}});
    EXPECT_EQ(e.tracked(), 1u);              // web does not escalate
    e.sample(1 * kS, {{"web", b, 10'000}});  // a left the top: forgotten
    EXPECT_EQ(e.tracked(), 0u);
    EXPECT_TRUE(e.sample(2 * kS, {{"dns", a, 10'000}}).empty());  // seen again: a new start
    EXPECT_EQ(e.sample(3 * kS, {{"dns", a, 10'100}}).size(), 1u);
}

TEST(Escalation, ACountThatWentDownStartsAgainAndChangedOptionsForgetTracks) {
    Escalator e;
    e.set_rules({escalating("dns", 1, 100, 60)});
    const Prefix a = host("198.18.66.9");
    e.sample(0, {{"dns", a, 5000}});
    EXPECT_TRUE(e.sample(1 * kS, {{"dns", a, 10}}).empty());  // a reload reset the counters
    EXPECT_EQ(e.sample(2 * kS, {{"dns", a, 110}}).size(), 1u);
    e.sample(3 * kS, {{"dns", a, 200}});
    EXPECT_EQ(e.tracked(), 1u);
    e.set_rules({escalating("dns", 1, 100, 60)});  // the same options: kept
    EXPECT_EQ(e.tracked(), 1u);
    e.set_rules({escalating("dns", 2, 100, 60)});
    EXPECT_EQ(e.tracked(), 0u);
}

TEST(Escalation, HugeCountsAndPeriodsDoNotWrap) {
    Escalator e;
    Rule r = escalating("dns", 1, 1, 60);
    r.escalate.min_refused_period_ns = 86'400 * kS;  // 1 a day
    e.set_rules({r});
    const Prefix a = host("198.18.66.10");
    e.sample(0, {{"dns", a, 0}});
    // 2^40 refusals in a second: far over 1/day, and 2^40 * 86400e9 does not fit 64 bits.
    EXPECT_EQ(e.sample(1 * kS, {{"dns", a, 1ull << 40}}).size(), 1u);
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

Prefix spread_source(unsigned i) {  // 198.18.0.0 - 198.18.3.231, as perf's mix d
    return host(("198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256)).c_str());
}

// A flood spread over 1,000 sources, none of which a 64-counter summary can hold: their sampled
// counts (each sample standing for 32 refusals) escalate every source refused at 14 samples a
// second (448/s) against a rule's 100/s after 1 s, and none of the ones at 2 samples (64/s).
TEST(SampledRefusals, EverySourceOfASpreadFloodIsEscalated) {
    SampledRefusals counts;
    Escalator e;
    e.set_rules({escalating("per_source", 1, 100, 600)});
    std::vector<Prefix> escalated;
    for (uint64_t second = 1; second <= 3; ++second) {
        std::vector<RefusedSource> samples;
        for (unsigned i = 0; i < 1000; ++i)
            for (unsigned k = 0; k < 14; ++k)
                samples.push_back({"per_source", spread_source(i), 32});
        for (unsigned i = 1000; i < 1010; ++i)
            for (unsigned k = 0; k < 2; ++k)
                samples.push_back({"per_source", spread_source(i), 32});
        counts.add(samples, second * kS);
        for (const Escalation &x : e.sample(second * kS, counts.counts(second * kS))) {
            EXPECT_EQ(x.refused_per_s, 448u);
            EXPECT_EQ(x.expires_ns, (second + 600) * kS);
            escalated.push_back(x.key);
        }
        // First sight at 1 s starts the tracks; 2 s is one second over: escalated then.
        EXPECT_EQ(escalated.size(), second >= 2 ? 1000u : 0u) << "at " << second << " s";
    }
    std::sort(escalated.begin(), escalated.end());
    for (unsigned i = 0; i < 1000; ++i) EXPECT_EQ(escalated[i], spread_source(i));
    EXPECT_EQ(counts.sources(), 1010u);
    EXPECT_EQ(counts.untracked(), 0u);
}

TEST(SampledRefusals, BoundedAndForgetting) {
    SampledRefusals counts;
    std::vector<RefusedSource> samples;
    for (unsigned i = 0; i < SampledRefusals::kMaxSources + 5; ++i) {
        Prefix p = host("2001:db8::");
        p.len = 128;
        p.addr[12] = static_cast<uint8_t>(i >> 24);
        p.addr[13] = static_cast<uint8_t>(i >> 16);
        p.addr[14] = static_cast<uint8_t>(i >> 8);
        p.addr[15] = static_cast<uint8_t>(i);
        samples.push_back({"r", p, 32});
    }
    counts.add(samples, 1 * kS);
    EXPECT_EQ(counts.sources(), SampledRefusals::kMaxSources);
    EXPECT_EQ(counts.untracked(), 5u);
    // One source sampled again at 5 s; at 11 s (10 s after the others' last sample) only it is
    // left, with both samples' refusals.
    counts.add({samples[7]}, 5 * kS);
    const std::vector<RefusedSource> left = counts.counts(11 * kS);
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].key, samples[7].key);
    EXPECT_EQ(left[0].refused, 64u);
    EXPECT_EQ(counts.sources(), 1u);
}

}  // namespace
}  // namespace floodgate
