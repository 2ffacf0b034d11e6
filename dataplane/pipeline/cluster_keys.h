// Shared keys as the boxes of a cluster name them to each other (docs/cluster.md, "Several boxes"):
// the rule and the key's prefixes as text, the same on every box, since each box hashes its keys
// with a secret seed of its own.
//   key dst:   the destination prefix at the rule's length, "198.18.1.1/32"
//   key none:  "*"
//   (src, dst) pairs: "198.18.0.0/16>198.18.1.1/32"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/core/limit_table.h"
#include "dataplane/core/rule_match.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/pipeline/cluster_ledger.h"
#include "dataplane/pipeline/merge.h"

namespace floodgate {

inline constexpr size_t kMaxSharedKeyText = 128;

std::string shared_key_text(const CompiledRule &r, const SharedRecord &rec);

// The hash under which this box keeps rule r's key named text (what a packet of that key
// would be charged to). False, with *why, when text is not one of r's keys: not its shape,
// not its prefix lengths, or host bits set.
bool shared_key_hash(const CompiledRule &r, const std::string &text, const LimitTable &table,
                     uint64_t *hash, std::string *why);

// Packets per shared key, by (rule name, key text): what a box tells the others, or was told.
using SharedTotals = std::map<std::pair<std::string, std::string>, uint64_t>;
// Most packets one told key may carry (what a sync interval could admit at 100 Gb/s, and far
// more): larger is refused as bad data.
inline constexpr uint64_t kMaxSharedPackets = 1ull << 40;

// Adds the records' packets to *totals under their rules' names in `rules` (the records of a
// rule no longer there are dropped).
void add_shared_totals(const RuleSet &rules, const std::vector<SharedRecord> &records,
                       SharedTotals *totals);

// Appends to *out the consumption records that charge `packets` of rule_name's key `key` to a
// core of this box (several when packets pass 2^32 - 1). False, with *why, when the rule is not
// a shared rule of `rules`, the key not one of its keys, or packets 0 or past kMaxSharedPackets.
bool shared_charges(const RuleSet &rules, const std::string &rule_name, const std::string &key,
                    uint64_t packets, const LimitTable &table, std::vector<Consumption> *out,
                    std::string *why);

}  // namespace floodgate
