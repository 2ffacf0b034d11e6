// What a rule accumulates while it runs, apart from the per-key TATs: per core, its counters,
// its top refused sources, its busiest destinations and the shared bucket for keys that found the
// table full. A RuleSet points at one RuleState per rule; a reload hands the same RuleState to the
// rule's successor (same name, same key), so counters and limits carry on across a swap. Each core
// writes only its own RuleCoreState, and while it runs copies it for readers itself
// (Pipeline::read_stats).
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/api/stats.h"
#include "dataplane/core/adaptive_limit.h"
#include "dataplane/core/destination_summary.h"
#include "dataplane/core/epoch_keys.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/core/limit_admit.h"

namespace floodgate {

struct alignas(64) RuleCoreState {
    RuleCounters counters;
    HeavyHitters top_refused;
    // top_refused changed since the core last copied it for a reader (it copies only those).
    bool top_refused_changed = false;
    // Refusals counted one by one this epoch: past kCountedRefusalsPerEpoch, a rule with
    // sampled top offenders adds only sampled ones (Pipeline::note_refusal).
    uint32_t refusals_in_epoch = 0;
    DestinationSummary destinations;  // where the rule's packets go, per epoch
    EpochKeys keys;                   // its distinct keys and packets, per epoch
    uint64_t overflow_tat_ns = 0;     // the shared bucket for keys with no room in the table
    uint32_t slip_count = 0;          // dns-truncate: refusals since the last one answered
    // An adaptive rule's limit as this core holds it: the learned rate it was made from
    // (RuleState::adaptive, read once a burst), its GCRA profile and each class's allowance.
    uint64_t adapted_milli = 0;
    LimitProfile adapted;
    uint64_t adapted_allowance[kTrustClasses] = {};
};

struct RuleState {
    explicit RuleState(unsigned cores, uint32_t key_id) : key_id(key_id), per_core(cores) {}
    // Goes into LimitKey::tag: never reused within a process, so a new rule can never find
    // TATs left by a removed one.
    const uint32_t key_id;
    std::vector<RuleCoreState> per_core;
    AdaptiveRate adaptive;  // limit.adaptive: the learned rate, shared by the cores
};

}  // namespace floodgate
