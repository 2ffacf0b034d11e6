// GCRA (generic cell rate algorithm): "rate r, bursts of b" with one number per key, the
// theoretical arrival time (TAT). The read-only profile is split from the per-key state, as in
// rte_meter: a profile is computed once per rule, a key is one 64-bit TAT.
#pragma once

#include <cstdint>

namespace floodgate {

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
inline bool gcra_admit(const GcraProfile &p, uint64_t tat_ns, uint64_t now_ns,
                       uint64_t *new_tat_ns) {
    uint64_t tat = tat_ns > now_ns ? tat_ns : now_ns;
    uint64_t next = tat + p.interval_ns;
    *new_tat_ns = next;
    return next - now_ns <= p.tolerance_ns;
}

}  // namespace floodgate
