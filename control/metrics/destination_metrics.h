// The families of each rule's destinations (the stats document's "destinations", the last
// whole second: dataplane/pipeline/stats_json.cpp): rate offered and passed, the limit and
// headroom where the rule is kept per destination, the baseline and the ratio to it, and the
// signal "total load high, no key over its limit"; per rule, its keys in that second and what
// its limit allows them in sum, against what it matched. Internal to control/metrics/metrics.cpp;
// like it, never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// stats: the dataplane's stats document.
void destination_metrics(const nlohmann::json *stats, std::string &out);

}  // namespace floodgate
