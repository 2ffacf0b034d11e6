// The families of the NIC tier (stats.nic_tier, dataplane/service/nic_feed.h): the rte_flow drop
// rules the outside port holds, what they dropped (their COUNT), and what the tier inserted,
// withdrew, skipped and the port refused, by reason. Internal to control/metrics/metrics.cpp;
// like it, never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// stats: the dataplane's stats reply; nothing is written without its "nic_tier" section.
void nic_tier_metrics(const nlohmann::json *stats, std::string &out);

}  // namespace floodgate
