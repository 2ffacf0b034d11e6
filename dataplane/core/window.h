// Window limits, "N packets per window W", in the one 64-bit word per key that the limit table
// gives every limiter (LimitEntry::tat_ns). The table reads that word as the key's expiry
// (<= now: free), so each encoding is built to be in the future exactly as long as the state
// still matters. Plain functions over integers, like gcra.h: unit-tested without DPDK
// (tests/test_window.cpp) and checked against an independent model in the scenario tests.
//
// Windows are aligned to multiples of W on the clock the pipeline is given (now_ns: packet time
// in replay, the core's clock live). E, the end of the window holding now, is
// (now / W + 1) * W.
//
// Fixed window: state = E + c, c the packets admitted in the window ending at E (0 <= c <= N).
// N < W makes the decoding exact: c = state % W, E = state - c. Admit iff c < N (c is 0 when
// the stored window is not the current one). The state expires at E + c, so a key holds its
// slot only while its window runs (and c ns more). At a window boundary the count starts over:
// N packets just before it and N just after are all admitted (the seeds' double burst).
//
// Sliding window (the two-counter approximation): state = E + W + x, x = p * (N + 1) + c,
// p the previous window's count and c the current one's (both <= N). (N + 1)^2 <= W makes
// x < W, so x = state % W and E = state - x - W. The state expires at the end of the next
// window, while p still counts. The estimate of the packets in the sliding window of length W
// ending at now weights the previous window by the part of it still inside:
//     estimate = p * (E - now) / W + c
// and a packet is admitted iff estimate + 1 <= N, compared exactly in integers:
//     p * (E - now) + (c + 1) * W <= N * W
// (no rounding anywhere: the rational estimate itself is compared). Rolling: if the stored
// window is the previous one, p = its c and c = 0; if it is older, p = c = 0.
//
// The clock is taken to be below 2^63 ns (292 years: pcap seconds are 32-bit, live clocks
// count from boot); the functions clamp it there, and validation keeps W <= kMaxWindowNs, so
// E + W + x never wraps and never reaches the table's reservation mark.
#pragma once

#include <cstdint>

#include "dataplane/core/gcra.h"

namespace floodgate {

inline constexpr uint64_t kMaxWindowClockNs = (1ull << 63) - 1;
// The longest window validation accepts (a bit over a year): E + 2W + W stays below 2^64.
inline constexpr uint64_t kMaxWindowNs = 1ull << 55;
static_assert(kMaxWindowClockNs + 3 * kMaxWindowNs < kMaxTatNs);

// The end of the window of length window_ns holding now_ns.
inline uint64_t window_end(uint64_t now_ns, uint64_t window_ns) {
    const uint64_t now = now_ns < kMaxWindowClockNs ? now_ns : kMaxWindowClockNs;
    return (now / window_ns + 1) * window_ns;
}

// --- Fixed window -------------------------------------------------------------------------

// The count of the window ending at end_ns in a stored state (0: another window, or none).
inline uint64_t fixed_window_count(uint64_t state, uint64_t window_ns, uint64_t end_ns) {
    const uint64_t c = state % window_ns;
    return state - c == end_ns ? c : 0;
}

// Decides one packet. limit_pkts is the window's N as this packet sees it (the caller may
// pass less than the rule's N, never more). On admit, *new_state is what to store; on refusal
// nothing may be stored.
inline bool fixed_window_admit(uint64_t window_ns, uint64_t limit_pkts, uint64_t state,
                               uint64_t now_ns, uint64_t *new_state) {
    const uint64_t end = window_end(now_ns, window_ns);
    const uint64_t c = fixed_window_count(state, window_ns, end);
    *new_state = end + c + 1;
    return c < limit_pkts;
}

// packets admitted elsewhere (the cross-core merge), added to the current window's count and
// capped at the rule's N: a charge that arrives after a boundary counts in the new window.
inline uint64_t fixed_window_charge(uint64_t window_ns, uint64_t window_pkts, uint64_t state,
                                    uint64_t now_ns, uint64_t packets) {
    const uint64_t end = window_end(now_ns, window_ns);
    const uint64_t c = fixed_window_count(state, window_ns, end);
    return end + (c + packets >= window_pkts ? window_pkts : c + packets);
}

// --- Sliding window -----------------------------------------------------------------------

struct WindowCounts {
    uint64_t previous = 0;  // p: the window before the current one
    uint64_t current = 0;   // c
};

// The counts as of the window ending at end_ns, rolled forward from a stored state.
inline WindowCounts sliding_window_counts(uint64_t state, uint64_t window_ns, uint64_t window_pkts,
                                          uint64_t end_ns) {
    const uint64_t x = state % window_ns;
    const uint64_t base = state - x;  // the stored window's end + W
    if (base == end_ns + window_ns) return {x / (window_pkts + 1), x % (window_pkts + 1)};
    if (base == end_ns) return {x % (window_pkts + 1), 0};  // stored: the previous window
    return {};                                              // older, or no state
}

inline uint64_t sliding_window_state(uint64_t end_ns, uint64_t window_ns, uint64_t window_pkts,
                                     WindowCounts n) {
    return end_ns + window_ns + n.previous * (window_pkts + 1) + n.current;
}

// Whether the estimate with one more packet stays within limit_pkts (<= the rule's N).
inline bool sliding_window_fits(WindowCounts n, uint64_t window_ns, uint64_t limit_pkts,
                                uint64_t end_ns, uint64_t now_ns) {
    using u128 = unsigned __int128;
    const uint64_t left_ns = end_ns - (now_ns < kMaxWindowClockNs ? now_ns : kMaxWindowClockNs);
    return u128(n.previous) * left_ns + u128(n.current + 1) * window_ns <=
           u128(limit_pkts) * window_ns;
}

inline bool sliding_window_admit(uint64_t window_ns, uint64_t window_pkts, uint64_t limit_pkts,
                                 uint64_t state, uint64_t now_ns, uint64_t *new_state) {
    const uint64_t end = window_end(now_ns, window_ns);
    WindowCounts n = sliding_window_counts(state, window_ns, window_pkts, end);
    const bool fits = sliding_window_fits(n, window_ns, limit_pkts, end, now_ns);
    ++n.current;  // <= limit_pkts <= window_pkts when it fits
    *new_state = sliding_window_state(end, window_ns, window_pkts, n);
    return fits;
}

inline uint64_t sliding_window_charge(uint64_t window_ns, uint64_t window_pkts, uint64_t state,
                                      uint64_t now_ns, uint64_t packets) {
    const uint64_t end = window_end(now_ns, window_ns);
    WindowCounts n = sliding_window_counts(state, window_ns, window_pkts, end);
    n.current = n.current + packets >= window_pkts ? window_pkts : n.current + packets;
    return sliding_window_state(end, window_ns, window_pkts, n);
}

}  // namespace floodgate
