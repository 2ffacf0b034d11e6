// The window algorithms of dataplane/core/window.h and the dispatch of
// dataplane/core/limit_admit.h. Expected verdicts and states are worked out by hand in the comments
// (the seeds' sliding window example among them), not computed with the code under test; the token
// bucket of the last test is written out here as the seeds describe it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "dataplane/core/limit_admit.h"

namespace floodgate {
namespace {

constexpr uint64_t kMilli = 1000000;
constexpr uint64_t kMin = 60'000 * kMilli;

// One key of a profile, sending at the given times.
struct WindowKey {
    LimitProfile profile;
    uint64_t state = 0;
    bool send(uint64_t now) {
        uint64_t next;
        if (!limit_admit(profile, state, now, profile.allowance(), &next)) return false;
        state = next;
        return true;
    }
    unsigned send_n(uint64_t now, unsigned n) {
        unsigned admitted = 0;
        for (unsigned i = 0; i < n; ++i) admitted += send(now);
        return admitted;
    }
};

LimitProfile fixed(uint64_t n, uint64_t window_ns) {
    return LimitProfile{LimitKind::fixed_window, {}, window_ns, n};
}
LimitProfile sliding(uint64_t n, uint64_t window_ns) {
    return LimitProfile{LimitKind::sliding_window, {}, window_ns, n};
}

TEST(Window, EndIsTheNextMultipleOfW) {
    EXPECT_EQ(window_end(0, 10), 10u);
    EXPECT_EQ(window_end(9, 10), 10u);
    EXPECT_EQ(window_end(10, 10), 20u);  // a window holds its start, not its end
    // The clock is clamped at 2^63 - 1: nothing wraps even at the end of time.
    EXPECT_EQ(window_end(UINT64_MAX, 1ull << 55), (1ull << 63));
}

// "3 per 10 minutes": windows [0, 10 min), [10 min, 20 min), ...
TEST(FixedWindow, ThreePerTenMinutes) {
    WindowKey k{fixed(3, 10 * kMin)};
    EXPECT_EQ(k.send_n(1 * kMin, 5), 3u);
    EXPECT_EQ(k.state, 10 * kMin + 3);  // E + c
    EXPECT_FALSE(k.send(10 * kMin - 1));
    EXPECT_EQ(k.state, 10 * kMin + 3);  // a refusal stores nothing
    EXPECT_TRUE(k.send(10 * kMin));     // the next window starts over
    EXPECT_EQ(k.state, 20 * kMin + 1);
}

// The seeds' double burst: N in the last millisecond of a window and N in the first of the
// next are all admitted, 2N within 2 ms.
TEST(FixedWindow, DoubleBurstAtTheBoundary) {
    WindowKey k{fixed(100, 60 * 1000 * kMilli)};
    EXPECT_EQ(k.send_n(60'000 * kMilli - 1 * kMilli, 150), 100u);
    EXPECT_EQ(k.send_n(60'000 * kMilli + 1 * kMilli, 150), 100u);
}

// The table frees a slot whose word is <= now: the fixed window's E + c is in the future for
// the whole window, and c ns past it (harmless: the count reads as 0 there).
TEST(FixedWindow, StateIsLiveForItsWindow) {
    WindowKey k{fixed(5, 1000)};
    k.send_n(0, 2);
    EXPECT_EQ(k.state, 1002u);
    EXPECT_EQ(fixed_window_count(k.state, 1000, window_end(999, 1000)), 2u);
    EXPECT_EQ(fixed_window_count(k.state, 1000, window_end(1001, 1000)), 0u);
    EXPECT_EQ(fixed_window_count(0, 1000, window_end(5, 1000)), 0u);  // no state
}

TEST(FixedWindow, ChargesAddToTheCurrentWindowCappedAtN) {
    // 2 admitted here in [0, 1000), 2 charged from elsewhere: 4 of 5, one more fits.
    uint64_t s = fixed_window_charge(1000, 5, 1002, 500, 2);
    EXPECT_EQ(s, 1004u);
    s = fixed_window_charge(1000, 5, s, 600, 9);
    EXPECT_EQ(s, 1005u);  // capped at N
    // A charge after the boundary counts in the new window.
    EXPECT_EQ(fixed_window_charge(1000, 5, 1002, 1000, 3), 2003u);
}

// The seeds' example (SlidingWindowCounter(10, 1000 ms)).
TEST(SlidingWindow, TheSeedsExample) {
    WindowKey k{sliding(10, 1000 * kMilli)};
    EXPECT_EQ(k.send_n(900 * kMilli, 12), 10u);  // the first window fills at 0.9 s
    // At 1.1 s, 90% of the previous window is still inside: 9 + c + 1 <= 10 for c = 0 only.
    EXPECT_EQ(k.send_n(1100 * kMilli, 12), 1u);
    // At 1.5 s: 10 * 0.5 + c + 1 <= 10 for c = 1..4.
    EXPECT_EQ(k.send_n(1500 * kMilli, 12), 4u);
    // State: E = 2 s, p = 10, c = 5: E + W + p * (N + 1) + c.
    EXPECT_EQ(k.state, 2000 * kMilli + 1000 * kMilli + 10 * 11 + 5);
    // At 3.2 s the stored window [1 s, 2 s) is two back: a full window of silence clears it.
    EXPECT_EQ(k.send_n(3200 * kMilli, 12), 10u);
}

// The estimate is compared exactly (as a rational number; the same as rounding it up): N = 3,
// W = 16 ns, the previous window [0, 16) full (p = 3).
TEST(SlidingWindow, EstimateIsExact) {
    const LimitProfile p = sliding(3, 16);
    const uint64_t full = sliding_window_state(16, 16, 3, {0, 3});  // [0, 16) with c = 3
    // now = 26: 6 ns of [0, 16) still inside: 3 * 6 / 16 = 1.125; 1.125 + 1 + 1 > 3, so one
    // packet only (rounding 1.125 down would admit a second).
    WindowKey a{p, full};
    EXPECT_EQ(a.send_n(26, 5), 1u);
    // now = 27: 3 * 5 / 16 = 0.9375; 0.9375 + 1 + 1 <= 3: two.
    WindowKey b{p, full};
    EXPECT_EQ(b.send_n(27, 5), 2u);
    // At the window's first instant the whole previous window counts: 3 + 0 + 1 > 3.
    WindowKey c{p, full};
    EXPECT_EQ(c.send_n(16, 5), 0u);
    // At its last instant 3 * 1 / 16 = 0.1875 of it: 0.1875 + 1 + 1 <= 3, then 3.1875: two.
    WindowKey d{p, full};
    EXPECT_EQ(d.send_n(31, 5), 2u);
}

// The state must outlive the current window (the table frees it at <= now): it is E + W + x,
// in the future until the end of the next window, and the counts roll as they should.
TEST(SlidingWindow, StateRollsAndLivesThroughTheNextWindow) {
    const uint64_t w = 1000, n = 20;  // (N + 1)^2 = 441 <= W
    WindowKey k{sliding(n, w)};
    EXPECT_EQ(k.send_n(100, 7), 7u);  // [0, 1000): c = 7
    EXPECT_EQ(k.state, 1000 + 1000 + 7u);
    const WindowCounts next = sliding_window_counts(k.state, w, n, window_end(1500, w));
    EXPECT_EQ(next.previous, 7u);
    EXPECT_EQ(next.current, 0u);
    EXPECT_GT(k.state, 1999u);  // live through [1000, 2000)
    const WindowCounts later = sliding_window_counts(k.state, w, n, window_end(2000, w));
    EXPECT_EQ(later.previous, 0u);
    EXPECT_EQ(later.current, 0u);
    // The largest state of a window: p = c = N, x = N * (N + 1) + N = (N + 1)^2 - 1 < W.
    const uint64_t top = sliding_window_state(1000, w, n, {n, n});
    EXPECT_EQ(top, 1000 + 1000 + 440u);
    const WindowCounts back = sliding_window_counts(top, w, n, 1000);
    EXPECT_EQ(back.previous, n);
    EXPECT_EQ(back.current, n);
}

TEST(SlidingWindow, ChargesAddToTheCurrentWindowCappedAtN) {
    const uint64_t w = 1000, n = 20;
    uint64_t s = sliding_window_charge(w, n, 0, 100, 5);  // [0, 1000): c = 5
    EXPECT_EQ(s, 2005u);
    s = sliding_window_charge(w, n, s, 1100, 30);  // rolled: p = 5, c = min(30, 20)
    EXPECT_EQ(s, 3000 + 5 * 21 + 20u);
}

// limit_admit passes the caller's allowance through: tau for GCRA, N for windows.
TEST(LimitAdmit, AllowanceIsTheCallersTauOrN) {
    const LimitProfile g{LimitKind::gcra, gcra_profile(100, 4)};  // T = 100, tau = 400
    EXPECT_EQ(g.allowance(), 400u);
    uint64_t s = 0, next;
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(limit_admit(g, s, 0, 200, &next));  // a tau of 200: two at once
        s = next;
    }
    EXPECT_FALSE(limit_admit(g, s, 0, 200, &next));
    EXPECT_TRUE(limit_admit(g, s, 0, 400, &next));  // the full tau: two more

    const LimitProfile f = fixed(4, 1000);
    EXPECT_EQ(f.allowance(), 4u);
    EXPECT_TRUE(limit_admit(f, 1001, 0, 2, &next));  // c = 1 < 2
    EXPECT_FALSE(limit_admit(f, 1002, 0, 2, &next));
    EXPECT_TRUE(limit_admit(f, 1002, 0, 4, &next));
    EXPECT_EQ(next, 1003u);
}

TEST(LimitCharge, GcraChargesTAt) {
    // max(TAT, now) + packets * T
    EXPECT_EQ(limit_charge(LimitKind::gcra, 100, 0, 50, 1000, 3), 1300u);
    EXPECT_EQ(limit_charge(LimitKind::gcra, 100, 0, 5000, 1000, 3), 5300u);
    EXPECT_EQ(limit_charge(LimitKind::gcra, 1ull << 62, 0, 0, 1, 1u << 20), kMaxTatNs);
}

// A token bucket as the seeds define it, written here on its own: capacity b tokens, one
// token per T refilled continuously, admit iff a whole token is there. Tokens are kept as
// credit in ns (a token is T ns of credit) so that the refill is exact.
struct TokenBucket {
    uint64_t interval_ns, capacity_ns, credit_ns, last_ns;
    TokenBucket(uint64_t t, uint64_t b)
        : interval_ns(t), capacity_ns(t * b), credit_ns(t * b), last_ns(0) {}
    bool take(uint64_t now) {
        credit_ns = std::min(capacity_ns, credit_ns + (now - last_ns));
        last_ns = now;
        if (credit_ns < interval_ns) return false;
        credit_ns -= interval_ns;
        return true;
    }
};

TEST(TokenBucket, SameAdmissionsAsGcra) {
    for (const auto &[t, b] :
         {std::pair<uint64_t, uint64_t>{100, 1}, {100, 5}, {333, 7}, {7, 64}}) {
        TokenBucket bucket(t, b);
        WindowKey gcra{LimitProfile{LimitKind::gcra, gcra_profile(t, static_cast<uint32_t>(b))}};
        uint64_t now = 0, x = 12345, admitted = 0;
        for (int i = 0; i < 20000; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            now += (x >> 62) == 0 ? (x >> 33) % (3 * t) : 0;  // ties, and gaps up to 3T
            const bool want = bucket.take(now);
            ASSERT_EQ(gcra.send(now), want) << "T " << t << " b " << b << " packet " << i;
            admitted += want;
        }
        EXPECT_GT(admitted, 0u);
        EXPECT_LT(admitted, 20000u);
    }
}

}  // namespace
}  // namespace floodgate
