// What changes when a rules file replaces the running one, in words an operator can check
// before applying it (`floodctl rules load FILE --dry-run`), including which rules keep their
// limiter state (same name and key) and which start afresh.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/api/rules.h"

namespace floodgate {

struct RulesDiff {
    std::vector<std::string> changes;  // one line each, in file order; empty: no change
    std::vector<std::string> kept;     // rules whose limiter state and counters carry on
    std::vector<std::string> reset;    // rules that start with a fresh state (new or re-keyed)
    std::vector<std::string> removed;  // rules whose state is dropped
};

RulesDiff diff_rules(const Config &running, const Config &next);

// One-line descriptions, also used by `floodctl rules show`.
std::string describe_match(const RuleMatch &m);
std::string describe_limit(const Rule &r);
std::string describe_key(const Rule &r);

// A rule as structured fields, as `nft -j` gives them (`floodctl -j rules show`): match (each
// field as its own value), key, limit, action, mode; `text` keeps the one-line descriptions.
nlohmann::json rule_json(const Rule &r);

}  // namespace floodgate
