// The families of the daemon's FlowSpec feed (control/upstream/flowspec_feed.h): what it asked
// gobgpd to hold, what gobgpd's RIB held when read back, rule by rule, and its changes. Internal
// to control/metrics/metrics.cpp; like it, never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// f: FlowspecFeed::status().
void flowspec_metrics(const nlohmann::json *f, std::string &out);

}  // namespace floodgate
