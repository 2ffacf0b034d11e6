// The stats document written by `floodgate replay --stats` (and by `floodgate run` on exit and
// for floodctl): every core's counters summed, per-rule counters, table state and the top
// refused sources. Each core is read once (CoreReading) and every number of the document,
// totals included, comes from those readings, so the invariants of dataplane/api/stats.h hold
// in the document as a whole.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

inline constexpr unsigned kTopRefusedReported = 10;

// One core as it stood between two of its bursts (Pipeline::read_stats).
struct CoreReading {
    Pipeline::Stats stats;
    uint64_t table_capacity = 0;
};

// Reads a core (which may be running) for the rules of `rules`; throws std::runtime_error if
// no consistent copy could be had.
CoreReading read_core(const RuleSet &rules, const Pipeline &core);

// top: how many of each rule's top refused sources to list (at most HeavyHitters::kCounters).
nlohmann::ordered_json stats_to_json(const RuleSet &ruleset, const std::vector<CoreReading> &cores,
                                     unsigned top = kTopRefusedReported);

// One core's top refused sources per rule, for the rules that refused any on it: with
// steering, a source's refusals are all on its owner core (live stats' per-core rows).
nlohmann::ordered_json core_top_refused(const RuleSet &ruleset, const CoreReading &core,
                                        unsigned top);

// Writes the document to path: a regular file is replaced at once (a new file beside it,
// renamed over it), anything else (/dev/null) written to; false if it could not be written
// whole.
bool write_stats(const std::string &path, const nlohmann::ordered_json &stats);

}  // namespace floodgate
