// Escalation decided from samples of a rule's top refused sources (dataplane/service/escalation.h):
// each sample's refusals and times are given, and the expected escalations computed by hand
// from the rule's after / min_refused_rate / ttl.
#include <gtest/gtest.h>

#include "dataplane/service/escalation.h"

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
