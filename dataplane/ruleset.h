// The compiled, immutable ruleset a worker decides with: the rules in file order and the
// allow/block prefixes in DPDK LPM tables. Built once from a validated Config; limiter state
// (the TATs) lives in the per-core LimitTable, not here, so a ruleset can be swapped by
// pointer without forgetting what sources have spent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "control/config.h"
#include "dataplane/parse.h"
#include "dataplane/rule_match.h"

struct rte_lpm;
struct rte_lpm6;

namespace floodgate {

enum class PrefixVerdict : uint8_t { none, allow, block };

class RuleSet {
  public:
    // Needs the EAL (the LPM tables live in DPDK memory on socket_id). Returns nullptr and
    // sets *error when a table cannot be built (out of DPDK memory).
    static std::unique_ptr<RuleSet> build(const Config &config, int socket_id, std::string *error);
    // DPDK memory the prefix tables of config take (the EAL must be given at least this).
    static uint64_t dpdk_memory_bytes(const Config &config);
    ~RuleSet();
    RuleSet(const RuleSet &) = delete;
    RuleSet &operator=(const RuleSet &) = delete;

    // Longest-prefix match of the packet's source over allow and block.
    PrefixVerdict classify_source(const PacketInfo &p) const;

    const std::vector<CompiledRule> &rules() const { return rules_; }
    const Config &config() const { return config_; }

  private:
    RuleSet() = default;
    Config config_;
    std::vector<CompiledRule> rules_;
    rte_lpm *lpm4_ = nullptr;
    rte_lpm6 *lpm6_ = nullptr;
    // rte_lpm has no depth 0: a /0 allow or block sets the verdict for misses instead.
    PrefixVerdict miss_verdict_[2] = {PrefixVerdict::none, PrefixVerdict::none};
};

}  // namespace floodgate
