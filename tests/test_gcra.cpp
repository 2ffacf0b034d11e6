// GCRA as the issue defines it: T = 1e9 / rate, tau = T * burst; admit iff
// max(TAT, now) + T - now <= tau, then TAT = max(TAT, now) + T. Expected values are worked out
// by hand in the comments, not computed with the code under test.
#include <gtest/gtest.h>

#include "dataplane/core/gcra.h"
#include "tests/time_units.h"

namespace floodgate {
namespace {

struct Key {
    GcraProfile profile;
    uint64_t tat = 0;
    bool send(uint64_t now) {
        uint64_t next;
        if (!gcra_admit(profile, tat, now, &next)) return false;
        tat = next;
        return true;
    }
};

TEST(Gcra, FiveAPerSecondBurstFive) {
    Key k{gcra_profile(200 * kMs, 5)};  // 5/s: T = 200 ms, tau = 1 s
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(k.send(0)) << i;
    EXPECT_FALSE(k.send(0));
    EXPECT_EQ(k.tat, 1000 * kMs);     // the refusal stored nothing
    EXPECT_TRUE(k.send(200 * kMs));   // one interval later: one more
    EXPECT_FALSE(k.send(200 * kMs));  // and not a second
    EXPECT_EQ(k.tat, 1200 * kMs);
}

TEST(Gcra, RefusalsDoNotPushRecoveryAway) {
    Key k{gcra_profile(100 * kMs, 1)};
    EXPECT_TRUE(k.send(0));
    for (uint64_t t = 1; t < 100 * kMs; t += 7 * kMs) EXPECT_FALSE(k.send(t));
    EXPECT_TRUE(k.send(100 * kMs));  // exactly T after the first
}

TEST(Gcra, IdleKeyEarnsBackExactlyItsBurst) {
    Key k{gcra_profile(10 * kMs, 3)};
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(k.send(0));
    EXPECT_FALSE(k.send(0));
    // After a long silence the TAT is in the past: the same as a key never seen.
    uint64_t later = 10000 * kMs;
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(k.send(later));
    EXPECT_FALSE(k.send(later));
}

TEST(Gcra, SteadySenderAtTheRateIsNeverRefused) {
    Key k{gcra_profile(1 * kMs, 1)};
    for (uint64_t i = 0; i < 1000; ++i) EXPECT_TRUE(k.send(i * kMs)) << i;
    EXPECT_FALSE(k.send(999 * kMs + kMs / 2));
}

TEST(Gcra, BurstBoundary) {
    // Burst 1, T = 5 ns: admits at 0, refuses at 1..4, admits at 5.
    Key k{gcra_profile(5, 1)};
    EXPECT_TRUE(k.send(0));
    for (uint64_t t = 1; t < 5; ++t) EXPECT_FALSE(k.send(t));
    EXPECT_TRUE(k.send(5));
}

// A TAT that would pass 2^64 ns stays at the latest one instead of wrapping to the past,
// where it would read as expired and admit a fresh burst.
TEST(Gcra, TatArithmeticSaturates) {
    EXPECT_EQ(tat_add(kMaxTatNs - 5, 5), kMaxTatNs);
    EXPECT_EQ(tat_add(kMaxTatNs - 5, 6), kMaxTatNs);
    EXPECT_EQ(tat_add(UINT64_MAX - 3, 10), kMaxTatNs);
    EXPECT_EQ(tat_add(7, 5), 12u);
    EXPECT_EQ(tat_charge(1000, 3, 10), 1030u);
    EXPECT_EQ(tat_charge(1000, 1u << 20, UINT64_MAX / 1000), kMaxTatNs);  // the product wraps
    EXPECT_EQ(tat_charge(UINT64_MAX / 2, 3, UINT64_MAX / 4), kMaxTatNs);  // the sum wraps
    // A saturated key is refused, however far its tolerance reaches.
    const GcraProfile p = gcra_profile(3600ull * 1000000000, 1u << 20);
    uint64_t next;
    EXPECT_FALSE(gcra_admit(p, kMaxTatNs, 1000000000, &next));
    EXPECT_FALSE(gcra_admit(p, kMaxTatNs - 1, 1000000000, &next));
    EXPECT_EQ(next, kMaxTatNs);
}

TEST(Gcra, ProfileFromRate) {
    GcraProfile p = gcra_profile(100000000, 5);  // 10/s
    EXPECT_EQ(p.interval_ns, 100000000u);
    EXPECT_EQ(p.tolerance_ns, 500000000u);
}

}  // namespace
}  // namespace floodgate
