// A worker's sampled refusals for escalation (dataplane/pipeline/refusal_samples.h): which
// refusals are sampled, what a sample names, and a full ring counted, not blocking.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dataplane/pipeline/pipeline.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr uint64_t kOneSecond = 1'000'000'000ull;

Rule limited_dns_rule(const std::string &name, bool escalates, RuleMode mode = RuleMode::enforce) {
    Rule r;
    r.name = name;
    r.match.proto = 17;
    r.rate_count = 1;
    r.rate_period_ns = 1000 * kOneSecond;  // one packet per source, then refused for the whole test
    r.burst_pkts = 1;
    r.mode = mode;
    if (escalates) {
        r.escalate.after_ns = kOneSecond;
        r.escalate.min_refused_count = 100;
    }
    return r;
}

class RefusalSamplesTest : public ::testing::Test {
  protected:
    void build(const Rule &r) {
        Config c;
        c.rules = {r};
        std::string error;
        rules_ = RuleSet::build(c, -1, &error);
        ASSERT_NE(rules_, nullptr) << error;
        table_ = std::make_unique<LimitTable>(c.table_entries_per_core, HashSeed{{1, 2, 3, 4}});
        pipeline_ = std::make_unique<Pipeline>(rules_.get(), table_.get());
        pipeline_->enable_refusal_samples(12345);
    }
    // Each of n sources sends `each` datagrams, all interleaved at random; returns the refusals
    // (every datagram but each source's first).
    uint64_t flood(unsigned n, unsigned each) {
        std::vector<unsigned> order;
        for (unsigned s = 0; s < n; ++s) order.insert(order.end(), each, s);
        std::mt19937 rng(7);
        std::shuffle(order.begin(), order.end(), rng);
        uint64_t now = kOneSecond, refused = 0;
        for (unsigned s : order) {
            const test::Frame f =
                test::PacketBuilder().ipv4(source(s), "198.18.255.1").udp(1000, 53).build();
            const uint8_t *frame = f.data();
            auto len = static_cast<uint32_t>(f.size());
            Verdict v;
            pipeline_->decide(&frame, &len, 1, &now, &v);
            refused += v == Verdict::drop;
            now += 1000;
        }
        return refused;
    }
    static std::string source(unsigned s) {
        return "198.18." + std::to_string(s / 256) + "." + std::to_string(s % 256);
    }
    std::vector<RefusalSample> drain() {
        std::vector<RefusalSample> out(RefusalSampler::kSlots);
        out.resize(pipeline_->refusal_samples()->drain(out.data(), RefusalSampler::kSlots));
        return out;
    }

    std::unique_ptr<RuleSet> rules_;
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<Pipeline> pipeline_;
};

// 1,000 sources refused 400 times each: samples at most 2 * 32 - 1 refusals apart, each naming
// one of the sources with the rule's index and serial and the /32 key, and every source sampled
// (a source goes unsampled only if none of its 400 refusals ends a gap).
TEST_F(RefusalSamplesTest, EveryHeavilyRefusedSourceIsSampledAndNamed) {
    build(limited_dns_rule("dns", true));
    const uint64_t refused = flood(1000, 401);
    ASSERT_EQ(refused, 1000u * 400);
    const std::vector<RefusalSample> samples = drain();
    EXPECT_EQ(samples.size(), pipeline_->refusal_samples()->taken());
    EXPECT_EQ(pipeline_->refusal_samples()->lost(), 0u);
    EXPECT_GE(samples.size(), refused / (2 * RefusalSampler::kMeanGap - 1));
    std::map<std::string, unsigned> per_source;
    for (const RefusalSample &s : samples) {
        EXPECT_EQ(s.rule, 0);
        EXPECT_EQ(s.serial, static_cast<uint32_t>(rules_->serial()));
        EXPECT_EQ(s.family, 4);
        EXPECT_EQ(s.prefix_len, 32);
        const auto *a = reinterpret_cast<const uint8_t *>(&s.addr_hi);
        ASSERT_EQ(a[0], 198);
        ASSERT_EQ(a[1], 18);
        ++per_source[source(a[2] * 256u + a[3])];
    }
    EXPECT_EQ(per_source.size(), 1000u);
    // Each source's share of the samples is its share of the refusals, within sampling noise:
    // 400 / 32 = 12.5 expected; no source is more than 4 times that.
    for (const auto &[src, n] : per_source) EXPECT_LE(n, 50u) << src;
}

TEST_F(RefusalSamplesTest, RulesThatDoNotEscalateAndShadowRulesAreNotSampled) {
    build(limited_dns_rule("dns", false));
    EXPECT_EQ(flood(10, 100), 990u);
    EXPECT_EQ(pipeline_->refusal_samples()->taken(), 0u);
    build(limited_dns_rule("dns", true, RuleMode::shadow));
    EXPECT_EQ(flood(10, 100), 0u);  // a shadow rule passes what it would refuse
    EXPECT_EQ(pipeline_->refusal_samples()->taken(), 0u);
}

// A reader too slow: the ring keeps the oldest kSlots samples, the rest are counted lost.
TEST(RefusalSampler, AFullRingCountsWhatItLoses) {
    RefusalSampler s(99);
    for (unsigned i = 0; i < RefusalSampler::kSlots + 10; ++i) s.take({i, 0, 1, 0, 4, 32});
    EXPECT_EQ(s.taken(), RefusalSampler::kSlots);
    EXPECT_EQ(s.lost(), 10u);
    std::vector<RefusalSample> out(RefusalSampler::kSlots + 10);
    ASSERT_EQ(s.drain(out.data(), RefusalSampler::kSlots + 10), RefusalSampler::kSlots);
    for (unsigned i = 0; i < RefusalSampler::kSlots; ++i) ASSERT_EQ(out[i].addr_hi, i);
    s.take({7, 0, 1, 0, 4, 32});  // room again
    EXPECT_EQ(s.drain(out.data(), 4), 1u);
}

}  // namespace
}  // namespace floodgate
