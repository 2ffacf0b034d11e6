// One rule's limit as the pipeline checks it: which algorithm, its constants, and the one
// dispatch the hot path calls for every (packet, rule) pair. GCRA (and token-bucket, the same
// admissions; gcra.h) is the fast path: the branch on the kind is the same for every packet
// of a rule, so it predicts; the window algorithms (window.h) sit behind it, out of line.
#pragma once

#include <cstdint>

#include "dataplane/core/gcra.h"
#include "dataplane/core/window.h"

namespace floodgate {

// How a key's 64-bit state word is read. token-bucket rules compile to gcra.
enum class LimitKind : uint8_t { gcra, fixed_window, sliding_window };

struct LimitProfile {
    LimitKind kind = LimitKind::gcra;
    GcraProfile gcra;          // gcra: T and tau
    uint64_t window_ns = 0;    // windows: W
    uint64_t window_pkts = 0;  // windows: N, the packets a window admits

    // What limit_admit's allowance is when nothing is held in reserve: tau in ns for GCRA, N
    // packets for a window. A caller may pass less (a share kept for other traffic), never more.
    uint64_t allowance() const { return kind == LimitKind::gcra ? gcra.tolerance_ns : window_pkts; }
};

[[gnu::noinline]] inline bool window_admit(const LimitProfile &p, uint64_t state, uint64_t now_ns,
                                           uint64_t limit_pkts, uint64_t *new_state) {
    if (p.kind == LimitKind::fixed_window)
        return fixed_window_admit(p.window_ns, limit_pkts, state, now_ns, new_state);
    return sliding_window_admit(p.window_ns, p.window_pkts, limit_pkts, state, now_ns, new_state);
}

// Decides one packet at now_ns for a key whose stored state is `state` (0 for a key never
// seen). allowance: see LimitProfile::allowance(). On admit, *new_state is what the caller
// stores; on refusal nothing may be stored.
inline bool limit_admit(const LimitProfile &p, uint64_t state, uint64_t now_ns, uint64_t allowance,
                        uint64_t *new_state) {
    if (p.kind == LimitKind::gcra) [[likely]]
        return gcra_admit(p.gcra, state, now_ns, allowance, new_state);
    return window_admit(p, state, now_ns, allowance, new_state);
}

// A key's state after packets admitted by another core are charged to it at now_ns (the
// cross-core merge): GCRA adds packets * T to max(TAT, now); a window adds them to the current
// window's count, capped at N. interval_ns is T for GCRA and W for a window.
inline uint64_t limit_charge(LimitKind kind, uint64_t interval_ns, uint64_t window_pkts,
                             uint64_t state, uint64_t now_ns, uint64_t packets) {
    switch (kind) {
        case LimitKind::fixed_window:
            return fixed_window_charge(interval_ns, window_pkts, state, now_ns, packets);
        case LimitKind::sliding_window:
            return sliding_window_charge(interval_ns, window_pkts, state, now_ns, packets);
        case LimitKind::gcra:
        default:
            return tat_charge(state > now_ns ? state : now_ns, packets, interval_ns);
    }
}

}  // namespace floodgate
