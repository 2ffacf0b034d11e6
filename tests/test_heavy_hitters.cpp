#include <gtest/gtest.h>

#include "dataplane/heavy_hitters.h"

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

}  // namespace
}  // namespace floodgate
