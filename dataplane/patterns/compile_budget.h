// What compiling a ruleset's payload patterns may cost, checked before anything is compiled, so
// that any rules file or load request the loader accepts is compiled in a few seconds
// (docs/limits.md, "Payload rules": the budget and the measurements behind it). Counted over the
// ruleset's distinct pattern lists: rules that share a list (a YAML alias, or equal lists) share
// one database and are counted once.
//
// Hyperscan's compile time grows with the number of patterns and their bytes, and for regexes
// with the size of their expansion: a bounded repeat x{m,n} costs about n copies of x
// (`a.{0,1000}b` compiles in ~50 ms, `(a|aa)+1$` in ~2 ms). A regex's weight estimates that
// size: one per atom, a repeat multiplying what it repeats by its upper bound (its lower bound
// when unbounded), nested repeats multiplying again. Syntax that hides what it holds from this
// reading (comments, \Q...\E, extended mode) weighs the most; a regex that is not well formed
// is weighed as it stands, and Hyperscan refuses it with its own message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/api/rules.h"

namespace floodgate {

// The ruleset's budget over its distinct lists (measured: perf/results/notes.md, issue 31).
inline constexpr size_t kMaxRulesetPayloadPatterns = 20000;
inline constexpr size_t kMaxRulesetPayloadBytes = 1u << 20;
inline constexpr size_t kMaxRulesetRegexes = 1000;
inline constexpr uint64_t kMaxRulesetRegexWeight = 5000;
// One regex's weight at most: a single pattern must not take the whole budget's time alone
// (`a.{0,1000}b.{0,1000}c`, weight 2003, compiles in ~2 s).
inline constexpr uint64_t kMaxRegexWeight = 1024;

// A regex's weight as above; saturates at kMaxRegexWeight + 1 (enough to refuse it).
uint64_t regex_weight(const std::string &regex);

// What one list costs.
struct PatternCost {
    size_t patterns = 0;
    size_t bytes = 0;
    size_t regexes = 0;
    uint64_t regex_weight = 0;
    PatternCost &operator+=(const PatternCost &o) {
        patterns += o.patterns;
        bytes += o.bytes;
        regexes += o.regexes;
        regex_weight += o.regex_weight;
        return *this;
    }
};
PatternCost pattern_cost(const std::vector<PayloadPattern> &patterns);

// Empty when total is within the budget; otherwise what it exceeds, for a message.
std::string over_budget(const PatternCost &total);

}  // namespace floodgate
