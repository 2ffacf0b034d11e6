// The destinations' figures (dataplane/core/destination_summary.h), their baseline arithmetic
// (rate_baseline.h) and the rules' keys per epoch (epoch_keys.h), against sums, averages and
// counts the tests keep themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "dataplane/core/destination_summary.h"
#include "dataplane/core/epoch_keys.h"
#include "dataplane/core/rate_baseline.h"

namespace floodgate {
namespace {

TEST(RateBaseline, FirstEpochPartialSecondSetsThenMovesBy1Over256) {
    RateBaseline b;
    b.end_epoch(7);  // the partial epoch the destination appeared in: sets nothing
    EXPECT_FALSE(b.set());
    EXPECT_EQ(baseline_ratio(100, b), 0);
    b.end_epoch(100);
    ASSERT_TRUE(b.set());
    EXPECT_EQ(b.baseline, 100);
    b.end_epoch(356);
    EXPECT_DOUBLE_EQ(b.baseline, 101);  // 100 + (356 - 100) / 256
    EXPECT_DOUBLE_EQ(baseline_ratio(404, b), 4);
}

TEST(RateBaseline, IdleEpochsAreEmptyEpochsInClosedForm) {
    RateBaseline stepped, closed;
    for (RateBaseline *b : {&stepped, &closed}) {
        b->end_epoch(1);
        b->end_epoch(1000);
    }
    for (int i = 0; i < 300; ++i) stepped.end_epoch(0);
    closed.end_idle_epochs(300);
    EXPECT_EQ(closed.epochs, stepped.epochs);
    EXPECT_NEAR(closed.baseline, stepped.baseline, 1e-9 * stepped.baseline);
    EXPECT_NEAR(closed.baseline, 1000 * std::pow(255.0 / 256, 300), 1e-9);
    // From nothing: the first idle epoch is the partial one, the second sets a zero baseline.
    RateBaseline fresh;
    fresh.end_idle_epochs(2);
    EXPECT_TRUE(fresh.set());
    EXPECT_EQ(fresh.baseline, 0);
}

TEST(RateBaseline, SignalNeedsWarmHistoryRatioAndPassing) {
    RateBaseline b;
    b.end_epoch(0);
    for (uint32_t i = 1; i < kWarmEpochs; ++i) b.end_epoch(100);
    ASSERT_TRUE(b.warm());
    EXPECT_FALSE(load_high(400, 400, b));  // exactly 4 times: not over
    EXPECT_TRUE(load_high(401, 401, b));
    EXPECT_TRUE(load_high(1000, 990, b));   // refuses 1%: still "almost nothing"
    EXPECT_FALSE(load_high(1000, 989, b));  // its rule is holding it: not this signal
    RateBaseline young;
    young.end_epoch(0);
    young.end_epoch(100);
    EXPECT_FALSE(load_high(10000, 10000, young));  // not warm
}

// Epoch figures per destination, exact while the destinations fit.
TEST(DestinationSummary, EpochFiguresExactAndBaselinePerDestination) {
    DestinationSummary s;
    s.roll(10);
    std::map<uint64_t, RateBaseline> model;
    for (uint64_t epoch = 10; epoch < 30; ++epoch) {
        for (uint64_t d = 1; d <= 5; ++d) {
            const uint64_t n = epoch >= 25 && d == 3 ? 1000 : 10 * d;
            for (uint64_t i = 0; i < n; ++i) {
                s.add(d, 0, 4, 32, [=] { return destination_hash(d, 0, 4); });
                if (i % 10 != 0) s.passed_last();
            }
        }
        s.roll(epoch + 1);
        for (uint64_t d = 1; d <= 5; ++d)
            model[d].end_epoch(epoch >= 25 && d == 3 ? 1000 : 10.0 * d);
    }
    const auto f = s.figures();
    ASSERT_EQ(f.size(), 5u);
    EXPECT_EQ(f[0].addr_hi, 3u);  // the busiest in the last epoch first
    EXPECT_EQ(f[0].last_matched, 1000u);
    EXPECT_EQ(f[0].last_passed, 900u);
    EXPECT_EQ(f[0].error, 0u);
    for (const DestinationFigures &x : f) {
        EXPECT_DOUBLE_EQ(x.baseline.baseline, model[x.addr_hi].baseline);
        EXPECT_EQ(x.baseline.epochs, model[x.addr_hi].epochs);
    }
    EXPECT_NEAR(baseline_ratio(1000, f[0].baseline), 1000 / model[3].baseline, 1e-9);
}

// Space-Saving's bound: with n packets and kSlots counters, a destination with more than
// n / kSlots of them keeps its counter, its count over the truth by at most its error, and
// its epoch figures exact once it holds the counter for a whole epoch.
TEST(DestinationSummary, HeavyDestinationSurvivesASprayWithinItsError) {
    DestinationSummary s;
    s.roll(1);
    uint64_t n = 0, heavy = 0;
    for (uint64_t i = 0; i < 200000; ++i) {
        s.add(1000 + i, 7, 6, 128,
              [=] { return destination_hash(1000 + i, 7, 6); });  // sprayed: one each
        ++n;
        if (i % 8 == 0) {
            s.add(1, 0, 4, 32, [=] { return destination_hash(1, 0, 4); });
            ++n;
            ++heavy;
        }
    }
    ASSERT_GT(heavy, n / DestinationSummary::kSlots);
    s.roll(2);
    const auto f = s.figures();
    ASSERT_FALSE(f.empty());
    const DestinationFigures &d = f[0];
    EXPECT_EQ(d.addr_hi, 1u);
    EXPECT_GE(d.matched, heavy);
    EXPECT_LE(d.matched - d.error, heavy);
    EXPECT_LE(d.error, n / DestinationSummary::kSlots);
    // Every other counter holds a one-off: none overstated past its error.
    for (size_t i = 1; i < f.size(); ++i) EXPECT_LE(f[i].matched - f[i].error, 1u);
}

TEST(DestinationSummary, CoresAddUpRolledToTheNewestEpoch) {
    DestinationSummary a, b;
    a.roll(5);
    b.roll(5);
    for (uint64_t e = 5; e < 15; ++e) {
        for (int i = 0; i < 30; ++i) a.add(9, 0, 4, 32, [=] { return destination_hash(9, 0, 4); });
        a.roll(e + 1);
        if (e < 13) {  // b goes quiet for the last two epochs
            for (int i = 0; i < 10; ++i)
                b.add(9, 0, 4, 32, [=] { return destination_hash(9, 0, 4); });
            b.roll(e + 1);
        }
    }
    b.roll(a.epoch());
    std::vector<DestinationFigures> sum;
    add_figures(&sum, a.figures());
    add_figures(&sum, b.figures());
    ASSERT_EQ(sum.size(), 1u);
    EXPECT_EQ(sum[0].last_matched, 30u);
    EXPECT_EQ(sum[0].matched, 380u);
    RateBaseline ma, mb;
    for (uint64_t e = 5; e < 15; ++e) {
        ma.end_epoch(30);
        mb.end_epoch(e < 13 ? 10 : 0);
    }
    EXPECT_NEAR(sum[0].baseline.baseline, ma.baseline + mb.baseline, 1e-9);
    EXPECT_EQ(sum[0].baseline.epochs, 10u);
}

uint64_t mixed(uint64_t x) {  // splitmix64: the well-mixed hash the keyed table hash gives
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// The estimate within three standard errors (1.04 / 32) of the keys' true number, at every
// scale; repeats of a key change nothing.
TEST(EpochKeys, EstimateWithinItsStatedError) {
    for (uint64_t n : {1ull, 10ull, 100ull, 2000ull, 20200ull, 1000000ull}) {
        EpochKeys k;
        for (uint64_t i = 0; i < n; ++i) {
            k.add(mixed(i));
            k.add(mixed(i));
        }
        k.roll(2 * n, false);
        const double want = static_cast<double>(n);
        EXPECT_NEAR(k.last_keys(), want, 3 * EpochKeys::kStandardError * want + 0.5) << n;
        EXPECT_EQ(k.last_matched(), 2 * n);
    }
}

TEST(EpochKeys, CoresMergeAsAUnionAndIdleEpochsAreEmpty) {
    EpochKeys a, b;
    for (uint64_t i = 0; i < 30000; ++i) a.add(mixed(i));
    for (uint64_t i = 10000; i < 40000; ++i) b.add(mixed(i));  // 20,000 in common
    a.roll(30000, false);
    b.roll(30000, false);
    a.merge_last(b);
    EXPECT_NEAR(a.last_keys(), 40000, 3 * EpochKeys::kStandardError * 40000);
    EXPECT_EQ(a.last_matched(), 60000u);
    // The next epoch counts afresh from the counter's value at the roll; seconds with nothing
    // after it leave an empty last epoch.
    b.add(mixed(1));
    b.roll(30005, false);
    EXPECT_NEAR(b.last_keys(), 1, 0.5);
    EXPECT_EQ(b.last_matched(), 5u);
    b.add(mixed(2));
    b.roll(30006, true);
    EXPECT_EQ(b.last_keys(), 0);
    EXPECT_EQ(b.last_matched(), 0u);
}

// Replay's exact count: repeats once, cores as a union, an idle epoch empty, and the merge of a
// core that kept no keys (a live one) leaves the count exact.
TEST(EpochKeys, ExactCountsEveryKeyOnce) {
    EpochKeys a, b, merged;
    a.keep_exact();
    b.keep_exact();
    for (uint64_t i = 0; i < 30000; ++i) a.add(mixed(i)), a.add(mixed(i));
    for (uint64_t i = 10000; i < 40000; ++i) b.add(mixed(i));  // 20,000 in common
    a.roll(60000, false);
    b.roll(30000, false);
    EXPECT_EQ(a.last_keys(), 30000);
    merged.merge_last(a);
    merged.merge_last(b);
    merged.merge_last(EpochKeys{});
    EXPECT_TRUE(merged.exact());
    EXPECT_EQ(merged.last_keys(), 40000);
    EXPECT_EQ(merged.last_matched(), 90000u);
    a.add(mixed(7));
    a.roll(60001, true);
    EXPECT_EQ(a.last_keys(), 0);
}

}  // namespace
}  // namespace floodgate
