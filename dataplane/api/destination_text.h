// The stats document's destinations (each rule's "destinations", dataplane/pipeline/
// stats_json.cpp) for people: the nearest first, in one line each, as `floodctl top --dst`,
// `floodctl watch`, `floodctl stats` and `floodgate replay` print them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace floodgate {

struct DestinationRow {
    std::string rule;
    nlohmann::json destination;  // one element of the rule's "destinations"
    double nearness = 0;         // 1 or more: at its limit, or past the signal's ratio
};

// Every rule's destinations (only `rule`'s when it is not empty), nearest first: by the larger
// of rate / limit (rules kept per destination) and ratio / the rule's load_high_ratio, the
// signalled ones first.
std::vector<DestinationRow> nearest_destinations(const nlohmann::json &stats,
                                                 const std::string &rule = "");

// "rule  10.0.0.1/32  rate 5.00 k/s  passed 5.00 k/s  limit 20.0 k/s  headroom 15.0 k/s
//  baseline 100 /s x50.0  LOAD HIGH".
std::string destination_line(const DestinationRow &row, size_t rule_width = 12);

// A header naming destination_line's columns.
std::string destination_header(size_t rule_width = 12);

}  // namespace floodgate
