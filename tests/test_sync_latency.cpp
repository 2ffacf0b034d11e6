// The store's round trip as status and metrics show it (control/cluster/sync_latency.h): the
// median, 99th percentile and maximum by nearest rank, worked out here by hand, over the last
// 10 s only.
#include "control/cluster/sync_latency.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

using Clock = SyncLatency::Clock;
using std::chrono::milliseconds;

TEST(SyncLatency, NearestRankOverTheWindow) {
    SyncLatency l;
    const Clock::time_point t0{};
    EXPECT_EQ(l.figures(t0).samples, 0u);
    EXPECT_EQ(l.figures(t0).max_ms, 0.0);
    // 1..200 ms, one a sync every 10 ms: p50 is the 100th, p99 the 198th, max the 200th.
    for (int i = 200; i >= 1; --i) l.add(t0 + milliseconds(10 * (200 - i)), i);
    const Clock::time_point end = t0 + milliseconds(1990);
    SyncLatency::Figures f = l.figures(end);
    EXPECT_EQ(f.samples, 200u);
    EXPECT_EQ(f.p50_ms, 100.0);
    EXPECT_EQ(f.p99_ms, 198.0);
    EXPECT_EQ(f.max_ms, 200.0);
    // 10 s later, only what came within the window: the last 1 ms sample alone.
    f = l.figures(end + SyncLatency::kWindow);
    EXPECT_EQ(f.samples, 1u);
    EXPECT_EQ(f.p50_ms, 1.0);
    EXPECT_EQ(f.p99_ms, 1.0);
    EXPECT_EQ(f.max_ms, 1.0);
    EXPECT_EQ(l.figures(end + SyncLatency::kWindow + milliseconds(1)).samples, 0u);
}

TEST(SyncLatency, HoldsAtMostItsSamples) {
    SyncLatency l;
    const Clock::time_point t0{};
    for (size_t i = 0; i < SyncLatency::kMaxSamples + 500; ++i) l.add(t0, i < 500 ? 1000.0 : 1.0);
    const SyncLatency::Figures f = l.figures(t0);
    EXPECT_EQ(f.samples, SyncLatency::kMaxSamples);
    EXPECT_EQ(f.max_ms, 1.0);  // the oldest 500, the slow ones, gone
}

}  // namespace
}  // namespace floodgate
