// The stats document (dataplane/pipeline/stats_json.h) and its rates (stats_rates.h) for people:
// the one text form that `floodgate replay`, `floodgate run` (on exit and every --stats-interval)
// and `floodctl stats`, `top`, `status` and `watch` print.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// 1234567 -> "1.23 M", 999 -> "999 ".
std::string si(double v);

// A top-refused entry's count as the summary can vouch for it: "1200" when it is exact, else
// "at least 1, at most 163500": Space-Saving's count overestimates by up to its error, so a
// source it began counting late may have sent far fewer than `count`. Counted from samples
// (top_offenders: sampled, past the first refusals of a second), an estimate: "about 52000,
// +-950 at confidence 99%".
std::string refused_bound_text(const nlohmann::json &offender);

// The whole document: totals, drop and answer reasons, a row per rule, the answering and
// aggregate rules' own columns, top refused sources, the XDP tier.
std::string stats_text(const nlohmann::json &stats);

// One rate line per rule and per port, each starting with indent.
std::string rates_text(const nlohmann::json &rates, const std::string &indent = "  ");

// "2026-12-01 21:04:05 UTC"
std::string utc_text(double unix_s);

}  // namespace floodgate
