// GCRA (generic cell rate algorithm): "rate r, bursts of b" with one number per key, the
// theoretical arrival time (TAT). The read-only profile is split from the per-key state, as in
// rte_meter: a profile is computed once per rule, a key is one 64-bit TAT.
//
// A token bucket is the same limiter written in other words, which is why `algorithm:
// token-bucket` runs this code. The bucket holds at most b tokens, refills continuously at one
// token per T and admits a packet iff a whole token is there, taking it. Keep its tokens as
// credit in ns (one token = T ns): credit = min(b * T, credit + elapsed) before each packet,
// admit iff credit >= T, then credit -= T. With tau = b * T, the GCRA key whose
//     credit = tau - (max(TAT, now) - now)
// makes every decision the bucket makes: refilling is the TAT falling behind now (capped where
// max(TAT, now) = now, a full bucket), "credit >= T" is max(TAT, now) + T - now <= tau, and
// taking a token is TAT += T. Exact in integer ns, with one 64-bit word instead of the
// bucket's two (tokens and the time of the last refill). tests/scenario/test_algorithms.cpp
// runs both on one trace.
#pragma once

#include <cstdint>

namespace floodgate {

// The latest TAT a key can hold. Every TAT update saturates here instead of wrapping: a TAT
// past 2^64 ns would read as long expired and hand a flooding source a fresh burst. The
// config caps one core's tolerance at 2^62 ns, but the merge adds what several cores admitted
// (rate 1/h, burst 2^20: five cores' bursts are 1.9e19 ns). UINT64_MAX itself is the limit
// table's reservation mark.
inline constexpr uint64_t kMaxTatNs = UINT64_MAX - 1;

inline uint64_t tat_add(uint64_t tat_ns, uint64_t delta_ns) {
    uint64_t sum;
    return __builtin_add_overflow(tat_ns, delta_ns, &sum) || sum > kMaxTatNs ? kMaxTatNs : sum;
}

// tat_ns + packets * interval_ns, saturated: a charge of packets admitted elsewhere.
inline uint64_t tat_charge(uint64_t tat_ns, uint64_t packets, uint64_t interval_ns) {
    uint64_t delta;
    return __builtin_mul_overflow(packets, interval_ns, &delta) ? kMaxTatNs
                                                                : tat_add(tat_ns, delta);
}

struct GcraProfile {
    uint64_t interval_ns = 0;   // T = 1e9 / rate (emission interval)
    uint64_t tolerance_ns = 0;  // tau = T * burst: how far the TAT may run ahead of now
};

inline GcraProfile gcra_profile(uint64_t interval_ns, uint32_t burst_pkts) {
    return GcraProfile{interval_ns, interval_ns * burst_pkts};
}

// Decides one packet at now_ns for a key whose stored TAT is tat_ns (0 for a key never seen:
// a TAT in the past and an absent key are the same thing). On admit, *new_tat_ns is what the
// caller stores; on refusal nothing may be stored, so a sender hammering its limit does not
// push its own recovery further away.
// tolerance_ns is the tau this packet is held to: p.tolerance_ns, or less for a caller that
// keeps part of the burst in reserve.
inline bool gcra_admit(const GcraProfile &p, uint64_t tat_ns, uint64_t now_ns,
                       uint64_t tolerance_ns, uint64_t *new_tat_ns) {
    uint64_t tat = tat_ns > now_ns ? tat_ns : now_ns;
    uint64_t next = tat_add(tat, p.interval_ns);
    *new_tat_ns = next;
    return next - now_ns <= tolerance_ns;
}

inline bool gcra_admit(const GcraProfile &p, uint64_t tat_ns, uint64_t now_ns,
                       uint64_t *new_tat_ns) {
    return gcra_admit(p, tat_ns, now_ns, p.tolerance_ns, new_tat_ns);
}

}  // namespace floodgate
