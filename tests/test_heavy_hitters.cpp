#include <gtest/gtest.h>

#include "dataplane/core/geometric_sampler.h"
#include "dataplane/core/heavy_hitters.h"

#include <map>
#include <random>
#include <set>

namespace floodgate {
namespace {

uint64_t h(uint64_t i) {
    return i * 0x9e3779b97f4a7c15ull;
}

TEST(HeavyHitters, ExactWhileFewerSourcesThanCounters) {
    HeavyHitters hh;
    for (uint64_t s = 1; s <= 20; ++s)
        for (uint64_t n = 0; n < s; ++n) hh.add(s, 0, 4, 32, h(s));
    auto top = hh.top(10);
    ASSERT_EQ(top.size(), 10u);
    for (unsigned i = 0; i < 10; ++i) {
        EXPECT_EQ(top[i].addr_hi, 20 - i);
        EXPECT_EQ(top[i].count, 20 - i);
        EXPECT_EQ(top[i].error, 0u);
    }
}

TEST(HeavyHitters, HeavySourcesSurviveAMillionOneOffs) {
    HeavyHitters hh;
    // Three heavy sources interleaved with 1M distinct one-off sources.
    for (uint64_t i = 0; i < 1000000; ++i) {
        hh.add(1000000 + i, 0, 6, 64, h(1000000 + i));
        if (i % 50 == 0)
            for (uint64_t s = 1; s <= 3; ++s) hh.add(s, 0, 4, 32, h(s));
    }
    // Each heavy source was added 20,000 times out of n = 1,060,000: more than n/k (16,563
    // for k = 64), which Space-Saving guarantees to keep, with count - error <= true count.
    auto top = hh.top(3);
    ASSERT_EQ(top.size(), 3u);
    for (const auto &t : top) {
        EXPECT_GE(t.addr_hi, 1u);
        EXPECT_LE(t.addr_hi, 3u);
        EXPECT_GE(t.count, 20000u);
        EXPECT_LE(t.count - t.error, 20000u);
    }
}

TEST(HeavyHitters, MergeSumsCounts) {
    HeavyHitters a, b;
    for (int i = 0; i < 7; ++i) a.add(1, 0, 4, 32, h(1));
    for (int i = 0; i < 5; ++i) b.add(1, 0, 4, 32, h(1));
    for (int i = 0; i < 3; ++i) b.add(2, 0, 4, 32, h(2));
    a.merge(b);
    auto top = a.top(10);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].addr_hi, 1u);
    EXPECT_EQ(top[0].count, 12u);
    EXPECT_EQ(top[1].addr_hi, 2u);
    EXPECT_EQ(top[1].count, 3u);
}

// Space-Saving's invariants after every add, against true counts kept here: no source held
// twice, the counts sum to the adds, each count bounds its source's truth from above and
// count - error from below, and every source above n/k is held. Sources share 8 tags (the
// hash's upper half), so that a tag's hit must be told apart by address.
TEST(HeavyHitters, InvariantsHoldAfterEveryAdd) {
    std::mt19937_64 rng(7);
    for (unsigned round = 0; round < 20; ++round) {
        HeavyHitters hh;
        std::map<uint64_t, uint64_t> truth;
        const unsigned universe = 70 + round * 10;  // just above kCounters, then well above
        for (uint64_t n = 1; n <= 3000; ++n) {
            uint64_t s = 1 + rng() % universe;
            uint64_t hash = (h(s % 8) & ~uint64_t{0xffffffff}) | (h(s) & 0xffffffff);
            hh.add(s, 0, 4, 32, hash);
            ++truth[s];
            auto top = hh.top(HeavyHitters::kCounters);
            std::set<uint64_t> seen;
            uint64_t sum = 0;
            for (const auto &t : top) {
                ASSERT_TRUE(seen.insert(t.addr_hi).second) << "source " << t.addr_hi << " twice";
                sum += t.count;
                ASSERT_TRUE(truth.count(t.addr_hi)) << "source " << t.addr_hi << " never added";
                EXPECT_LE(truth.at(t.addr_hi), t.count);
                EXPECT_LE(t.count - t.error, truth.at(t.addr_hi));
            }
            ASSERT_EQ(sum, n);  // each add raises exactly one counter by one
            ASSERT_TRUE(seen.count(s)) << "the source just added is missing";
            for (const auto &[src, count] : truth) {
                if (count * HeavyHitters::kCounters > n) {
                    ASSERT_TRUE(seen.count(src));
                }
            }
        }
    }
}

// Sampled refusals (weight 16) count 16 each; once a summary has one, every count in it has an
// error at 99%: 16 x (z^2/2 + z sqrt(X + z^2/4)) for X samples (z = 2.5758), the samples
// summed when cores merge.
TEST(HeavyHitters, WeightedSamplesStateTheirError) {
    HeavyHitters hh;
    for (unsigned n = 0; n < 100; ++n) hh.add(7, 0, 4, 32, h(7), 16);
    for (unsigned n = 0; n < 5; ++n) hh.add(7, 0, 4, 32, h(7));
    auto top = hh.top(1);
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top[0].count, 1605u);
    EXPECT_EQ(top[0].error, 0u);
    EXPECT_EQ(top[0].sampling_error, 469u);  // 16 x (3.317 + 2.5758 x sqrt(101.66)) = 468.6
    HeavyHitters other;
    for (unsigned n = 0; n < 100; ++n) other.add(7, 0, 4, 32, h(7), 16);
    other.merge(hh);
    top = other.top(1);
    EXPECT_EQ(top[0].count, 3205u);
    EXPECT_EQ(top[0].sampling_error, 639u);  // 16 x (3.317 + 2.5758 x sqrt(201.66)) = 638.3
    other.add(8, 0, 4, 32, h(8));  // never sampled, in a summary that samples: it may have lost
    for (const HeavyHitter &t : other.top(2))                   // refusals to the draw
        if (t.addr_hi == 8) EXPECT_EQ(t.sampling_error, 107u);  // 16 x (3.317 + 3.317) = 106.2
    HeavyHitters exact;
    exact.add(7, 0, 4, 32, h(7));
    EXPECT_EQ(exact.top(1)[0].sampling_error, 0u);
}

// One event in 16 on average, independently: 1,600,000 events give 100,000 samples within
// three standard deviations (sqrt(1.6M x 1/16 x 15/16) = 306), and no gap is 0.
TEST(GeometricSampler, SamplesOneInItsMeanGap) {
    GeometricSampler s(12345);
    uint64_t samples = 0;
    for (unsigned n = 0; n < 1600000; ++n) samples += s.due();
    EXPECT_NEAR(static_cast<double>(samples), 100000.0, 3 * 306.0);
}

}  // namespace
}  // namespace floodgate
