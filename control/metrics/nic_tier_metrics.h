// The families of the NIC tier (stats.nic_tier, dataplane/service/nic_feed.h): the rte_flow drop
// rules the outside port holds, what they dropped (their COUNT: summed over every rule, and per
// rule for the top_rules with most hits, so that thousands of rules stay a bounded number of
// series), and what the tier inserted, withdrew, skipped and the port refused, by reason.
// Internal to control/metrics/metrics.cpp; like it, never throws: a row it cannot read is left
// out and counted (floodgate_nic_rule_rows_unreadable).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// stats: the dataplane's stats reply; nothing is written without its "nic_tier" section.
// top_rules: how many rules get series of their own (at most kNicTopRules).
void nic_tier_metrics(const nlohmann::json *stats, size_t top_rules, std::string &out);

}  // namespace floodgate
