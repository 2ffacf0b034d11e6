// The replay report's table of a rule's destinations (the stats document's "destinations":
// the last whole second of the capture's clock), the same figures floodctl top --dst shows:
// rate, passed, limit and headroom, baseline, ratio and the load-high signal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// One rule's element of the stats document's "rules", as HTML (a heading, a table, a note).
std::string report_destinations(const nlohmann::ordered_json &rule);

}  // namespace floodgate
