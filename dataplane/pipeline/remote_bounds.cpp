#include "dataplane/pipeline/remote_bounds.h"
#include "dataplane/api/saturating.h"

#include <algorithm>

namespace floodgate {

namespace {

// ceil(count x interval / period), without overflow, saturated at UINT64_MAX.
uint64_t packets_in(uint64_t count, uint64_t period_ns, uint64_t interval_ns) {
    if (period_ns == 0) return 0;
    const unsigned __int128 n =
        (static_cast<unsigned __int128>(count) * interval_ns + period_ns - 1) / period_ns;
    return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

uint64_t saturated(unsigned __int128 n) {
    return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

}  // namespace

uint64_t one_box_admits(const Rule &r, uint64_t interval_ns) {
    if (is_window(r.algorithm)) {
        // A fixed window admits N at the end of one window and N again at the start of the
        // next: every window the interval touches may give its whole N.
        const uint64_t windows = packets_in(1, r.rate_period_ns, interval_ns) + 1;
        return saturated(static_cast<unsigned __int128>(windows) * r.rate_count);
    }
    uint64_t rate = packets_in(r.rate_count, r.rate_period_ns, interval_ns);
    if (r.adaptive.enabled)
        rate =
            std::max(rate, packets_in(r.adaptive.max_count, r.adaptive.max_period_ns, interval_ns));
    return saturated(static_cast<unsigned __int128>(rate) + r.burst_pkts);
}

uint64_t remote_charge_bound(const Rule &r, uint64_t interval_ns, uint32_t boxes) {
    const uint64_t others = std::max<uint32_t>(boxes, 2) - 1;
    return saturated(static_cast<unsigned __int128>(one_box_admits(r, interval_ns)) *
                     kRemoteChargeMargin * others);
}

uint64_t remote_charge(const Rule &r, uint64_t interval_ns, uint32_t boxes,
                       std::span<const uint64_t> rows) {
    const uint64_t one = remote_charge_bound(r, interval_ns, 2);
    uint64_t sum = 0;
    for (const uint64_t row : rows) sum = saturating_add(sum, std::min(row, one));
    return std::min(sum, remote_charge_bound(r, interval_ns, boxes));
}

uint64_t remote_escalation_ttl_cap_ns(const Config &config) {
    uint64_t cap = 0;
    for (const Rule &r : config.rules)
        if (r.escalate.enabled()) cap = std::max(cap, r.escalate.ttl_ns);
    return cap != 0 ? cap : EscalateOptions{}.ttl_ns;
}

bool remote_escalation_long_enough(const Config &config, const Prefix &p) {
    unsigned shortest = p.family == 4 ? 32 : 128;
    for (const Rule &r : config.rules)
        if (r.escalate.enabled())
            shortest =
                std::min<unsigned>(shortest, p.family == 4 ? r.key_ipv4_len : r.key_ipv6_len);
    return p.len >= shortest;
}

}  // namespace floodgate
