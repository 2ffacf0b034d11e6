// The stats document written by `floodgate replay --stats` (and by `floodgate run` on exit):
// every core's counters summed, per-rule counters, table state and the top refused sources.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/pipeline.h"

namespace floodgate {

inline constexpr unsigned kTopRefusedReported = 10;

// top: how many of each rule's top refused sources to list (at most HeavyHitters::kCounters).
nlohmann::ordered_json stats_to_json(const RuleSet &ruleset,
                                     const std::vector<const Pipeline *> &cores,
                                     unsigned top = kTopRefusedReported);

// Writes the document to path; false if it could not be written whole.
bool write_stats(const std::string &path, const nlohmann::ordered_json &stats);

// A few lines for people: totals, why packets were dropped, per rule, top offenders.
std::string stats_summary(const nlohmann::ordered_json &stats);

}  // namespace floodgate
