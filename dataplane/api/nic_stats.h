// What the dataplane's stats section of the NIC tier (nic_tier, dataplane/service/nic_feed.h)
// and its reader (control/metrics/nic_tier_metrics.h) agree on beyond its JSON keys.
#pragma once

#include <cstdint>

namespace floodgate {

// nic_tier.top_by_hits lists at most this many rules, and Prometheus shows at most these
// (floodctl daemon --nic-top-rules): a series for each of thousands of rules would swamp it.
inline constexpr uint32_t kNicTopRules = 100;

}  // namespace floodgate
