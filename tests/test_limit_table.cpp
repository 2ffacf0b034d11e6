// The per-core limit table: exact lookups, expired entries reused, live entries never
// evicted, and a full table reported rather than silently overwritten.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "dataplane/core/limit_table.h"

namespace floodgate {
namespace {

constexpr HashSeed kSeed = {{1, 3, 5, 7}};

LimitKey key(uint64_t i, uint32_t tag = 0x0004) {
    return LimitKey{i * 0x100000001ull, ~i, tag};
}

LimitEntry *put(LimitTable &t, const LimitKey &k, uint64_t tat, uint64_t now) {
    uint64_t h = t.hash(k);
    uint64_t old;
    LimitEntry *e = t.acquire(h, now, &old);
    if (e != nullptr) t.commit(e, h, tat);
    return e;
}

TEST(LimitTable, FindsWhatWasStored) {
    LimitTable t(1000, kSeed);
    ASSERT_TRUE(t.ok());
    for (uint64_t i = 0; i < 500; ++i) ASSERT_NE(put(t, key(i), 1000 + i, 0), nullptr);
    for (uint64_t i = 0; i < 500; ++i) {
        LimitEntry *e = t.find(t.hash(key(i)));
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->tat_ns, 1000 + i);
    }
    EXPECT_EQ(t.find(t.hash(key(777))), nullptr);
    EXPECT_EQ(t.stats().occupancy, 500u);
}

TEST(LimitTable, SameAddressUnderTwoRulesIsTwoKeys) {
    LimitTable t(100, kSeed);
    put(t, key(1, 0x0004), 10, 0);
    put(t, key(1, 0x0104), 20, 0);
    EXPECT_EQ(t.find(t.hash(key(1, 0x0004)))->tat_ns, 10u);
    EXPECT_EQ(t.find(t.hash(key(1, 0x0104)))->tat_ns, 20u);
}

TEST(LimitTable, FillsToCapacityWithLiveKeysThenReportsFull) {
    const uint64_t capacity = 4096;
    LimitTable t(capacity, kSeed);
    std::vector<uint64_t> stored;
    // Live at now = 0 (TAT 1000 > 0): nothing may be evicted.
    for (uint64_t i = 0; i < capacity; ++i)
        if (put(t, key(i), 1000, 0) != nullptr) stored.push_back(i);
    EXPECT_EQ(stored.size(), capacity) << "the spare slots let the configured capacity fit";
    EXPECT_EQ(t.stats().full_events, 0u);
    for (uint64_t i = capacity; i < 2 * capacity; ++i)
        if (put(t, key(i), 1000, 0) != nullptr) stored.push_back(i);
    EXPECT_LE(stored.size(), t.slots());
    EXPECT_GT(t.stats().full_events, 0u);
    EXPECT_EQ(t.stats().occupancy, stored.size());
    // Every key that was stored is still there with its TAT: a full table evicts nobody.
    for (uint64_t i : stored) {
        LimitEntry *e = t.find(t.hash(key(i)));
        ASSERT_NE(e, nullptr) << i;
        EXPECT_EQ(e->tat_ns, 1000u);
    }
}

TEST(LimitTable, ExpiredEntriesAreReclaimedByInsert) {
    LimitTable t(1024, kSeed);
    // A million one-packet sources, each live for 10 ns, arriving 1 ns apart: at most ~10 are
    // live at once, so the table never fills.
    const uint64_t n = 1000000;
    for (uint64_t i = 0; i < n; ++i) ASSERT_NE(put(t, key(i), i + 10, i), nullptr) << i;
    EXPECT_EQ(t.stats().full_events, 0u);
    EXPECT_GE(t.stats().reclaims, n - t.slots());
    EXPECT_LE(t.stats().occupancy, t.slots());
}

TEST(LimitTable, SweepClearsExpiredEntries) {
    LimitTable t(100, kSeed);
    for (uint64_t i = 0; i < 50; ++i) put(t, key(i), 100, 0);
    for (uint64_t i = 50; i < 60; ++i) put(t, key(i), 1000, 0);
    EXPECT_EQ(t.stats().occupancy, 60u);
    t.sweep(500, static_cast<uint32_t>(t.slots() / kSlotsPerBucket));
    EXPECT_EQ(t.stats().occupancy, 10u);
    EXPECT_EQ(t.stats().reclaims, 50u);
    for (uint64_t i = 50; i < 60; ++i) EXPECT_EQ(t.find(t.hash(key(i)))->tat_ns, 1000u);
}

TEST(LimitTable, ReservationIsNeverTakenAndFollowsMoves) {
    // Reserve a slot for k, then fill the table around it: the reservation counts as live,
    // so k keeps its slot even when moved along cuckoo paths, and commit lands on k.
    LimitTable t(64, kSeed);
    LimitKey k = key(9999);
    uint64_t h = t.hash(k), tat;
    LimitEntry *e = t.acquire(h, 0, &tat);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(tat, 0u);
    std::vector<uint64_t> stored;
    for (uint64_t i = 0; i < 200; ++i)
        if (put(t, key(i), 50, 0) != nullptr) stored.push_back(i);
    EXPECT_GT(t.stats().full_events, 0u);
    EXPECT_EQ(stored.size() + 1, t.stats().occupancy);
    t.commit(e, h, 77);
    ASSERT_NE(t.find(h), nullptr);
    EXPECT_EQ(t.find(h)->tat_ns, 77u);
    for (uint64_t i : stored) EXPECT_EQ(t.find(t.hash(key(i)))->tat_ns, 50u);
}

TEST(LimitTable, ReleasedReservationIsFreeAgain) {
    LimitTable t(1, kSeed);  // 2 buckets of 3: exactly 6 slots, every key may use any
    ASSERT_EQ(t.slots(), 6u);
    for (uint64_t i = 0; i < 5; ++i) ASSERT_NE(put(t, key(i), 100, 0), nullptr);
    uint64_t tat;
    LimitEntry *e = t.acquire(t.hash(key(100)), 0, &tat);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(t.acquire(t.hash(key(101)), 0, &tat), nullptr) << "reserved slot is taken";
    t.release(e, t.hash(key(100)));
    EXPECT_EQ(t.stats().occupancy, 5u);
    EXPECT_NE(t.acquire(t.hash(key(101)), 0, &tat), nullptr) << "released slot is free";
}

TEST(LimitTable, FitsConfiguredCapacityOverManySeeds) {
    // The spare slots make the configured capacity fit; checked over 50 seeds at two sizes.
    for (uint64_t capacity : {1000u, 20000u}) {
        for (uint64_t seed = 1; seed <= 50; ++seed) {
            LimitTable t(capacity, HashSeed{{seed, seed * 3, seed * 5, seed * 7}});
            uint64_t stored = 0;
            for (uint64_t i = 0; i < capacity; ++i) stored += put(t, key(i), 1000, 0) != nullptr;
            ASSERT_EQ(stored, capacity) << "capacity " << capacity << " seed " << seed;
        }
    }
}

// After inserts along cuckoo paths, expiries reused by inserts, sweeps and released
// reservations, every live key is still found, with its own TAT, and every expired or released
// one reads as absent (a table that skips a bucket on lookup, as a one-line-per-lookup layout
// may, loses keys here first: perf/results/one-line-table.md).
TEST(LimitTable, EveryLiveKeyIsFoundThroughChurn) {
    constexpr uint64_t kCapacity = 3000;
    LimitTable t(kCapacity, kSeed);
    std::map<uint64_t, uint64_t> tat_of;  // hash -> TAT, everything ever stored
    uint64_t rng = 12345, now = 0;
    const auto next = [&rng] {
        return rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    };
    for (unsigned round = 0; round < 200; ++round) {
        now += 100;
        for (unsigned i = 0; i < 400; ++i) {
            const uint64_t h = t.hash(key(next() % 20000));
            uint64_t old;
            LimitEntry *e = t.acquire(h, now, &old);
            if (e == nullptr) continue;  // full: nothing stored
            if (next() % 8 == 0) {       // refused: the reservation is given back
                if (old == 0) t.release(e, h);
                continue;
            }
            const uint64_t tat = now + 1 + next() % 2000;
            t.commit(e, h, tat);
            tat_of[h] = tat;
        }
        t.sweep(now, 50);
        for (const auto &[h, tat] : tat_of) {
            const LimitEntry *e = t.find(h);
            if (tat > now) {
                ASSERT_NE(e, nullptr) << "round " << round;
                ASSERT_EQ(e->tat_ns, tat) << "round " << round;
            } else {
                ASSERT_TRUE(e == nullptr || e->tat_ns <= now) << "round " << round;
            }
        }
    }
}

TEST(LimitTable, DifferentSeedsPlaceKeysDifferently) {
    LimitTable a(1 << 16, kSeed), b(1 << 16, HashSeed{{2, 4, 6, 8}});
    int same = 0;
    for (uint64_t i = 0; i < 1000; ++i)
        same += (a.hash(key(i)) & 0xffff) == (b.hash(key(i)) & 0xffff);
    EXPECT_LT(same, 20);
}

}  // namespace
}  // namespace floodgate
