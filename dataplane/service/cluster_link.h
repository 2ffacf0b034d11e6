// The dataplane's side of the cluster sync (docs/cluster.md, "Several boxes"). floodctl's daemon,
// the one that speaks to Redis, does three things every sync interval:
//   cluster_take: what this box's workers admitted for shared keys since the last take (each
//                 worker hands it over between its bursts), to push to the store;
//   (the store: push that, pull what the other boxes pushed)
//   cluster_sync: whether the store answered, how many boxes are live, and the other boxes'
//                 consumption, charged to the workers at once.
// So a packet's charge reaches the other boxes at most two intervals after it passed (plus
// the round trips). The charges go to the workers on the cluster ring
// (dataplane/live/merge_rings.h), which they read between bursts like the other cores' merge
// records: the service thread never writes a worker's table.
//
// Joined or alone is ClusterState's to decide (dataplane/pipeline/cluster_state.h); what a box
// admitted while it was alone for a whole interval is not told (it was within its share, and
// telling it after a return would charge the others for the whole outage at once).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/api/control_protocol.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/pipeline/cluster_keys.h"
#include "dataplane/pipeline/cluster_state.h"

namespace floodgate {

// What the cluster sync needs of the running dataplane.
struct ClusterHooks {
    // Appends what every worker admitted for shared keys since the last call; false if a
    // worker did not answer (what it holds is taken next time).
    std::function<bool(std::vector<SharedRecord> *)> take;
    // Publishes the other boxes' consumption to every worker (the service thread only).
    std::function<void(const std::vector<Consumption> &)> charge;
    // A table of this box, for its hash seed (every core has the same).
    const LimitTable *hasher = nullptr;
    // The XDP tier's escalations, when there is one (else empty): those this box made since
    // the last call, with their TTL, to tell the others; and adding one another box made.
    std::function<std::vector<std::pair<Prefix, uint64_t>>()> take_escalations;
    std::function<bool(const Prefix &, uint64_t ttl_ns)> escalate;
};

// One `cluster_sync` request (dataplane/service/request.h decodes it).
struct ClusterSyncRequest {
    bool store_ok = false;
    uint32_t boxes = 1;
    // The other boxes' packets per (rule, key), one row a box: each row is bounded by what one
    // box could admit, and their sum by what all the others could (remote_bounds.h).
    std::map<std::pair<std::string, std::string>, std::vector<uint64_t>> charges;
    // Sources the other boxes escalated: the prefix as they wrote it, and the TTL left.
    std::vector<std::pair<std::string, uint64_t>> escalations;
};
// The most escalations and charges one sync may carry: kMaxClusterEscalations and
// kMaxClusterCharges (dataplane/api/control_protocol.h, which floodctl's daemon keeps to).

class ClusterLink {
  public:
    explicit ClusterLink(ClusterHooks hooks = {}) : hooks_(std::move(hooks)) {}

    // The rules file's cluster section, at start and on every load: a new section (another
    // cluster, another interval) starts alone again; the same one keeps its state.
    void configure(const ClusterOptions &options, uint64_t now_ns);
    bool attached() const { return hooks_.take != nullptr; }

    // This box's consumption since the last take, in (*reply)["consumed"] as [rule, key,
    // packets] rows, and its escalations, in (*reply)["escalated"] as [prefix, ttl_ms] rows.
    void take(const RuleSet &rules, nlohmann::ordered_json *reply);
    // A sync at now_ns under `rules` (the running set): the charges published; true when the
    // box joined or left.
    bool sync(const RuleSet &rules, const ClusterSyncRequest &request, uint64_t now_ns);
    // No sync for three intervals (2 s at least): alone. True when that changed it.
    bool tick(uint64_t now_ns) { return state_.on_tick(now_ns); }

    const ClusterState &state() const { return state_; }
    void adjust(Config *config) const { state_.adjust(config); }
    // For status: the state and the counts.
    nlohmann::ordered_json status(uint64_t now_ns) const;
    // One line for the log when the state changed.
    std::string change_line() const;

  private:
    // The most packets this sync may charge to one key of rule_name (remote_bounds.h).

    ClusterHooks hooks_;
    ClusterOptions options_;
    ClusterState state_;
    bool joined_at_last_take_ = false;
    std::vector<SharedRecord> records_;  // reused
    std::vector<Consumption> charges_;   // reused
    uint64_t told_keys_ = 0, told_packets_ = 0;
    uint64_t untold_alone_packets_ = 0;  // admitted alone for a whole interval
    uint64_t charged_keys_ = 0, charged_packets_ = 0;
    // Charges past what the other boxes could have admitted (remote_bounds.h): each one charged
    // at the bound, and the packets left out.
    uint64_t clamped_charges_ = 0, clamped_packets_ = 0;
    uint64_t refused_charges_ = 0;  // unknown rule, not a key of it, bad count
    std::string last_refusal_;
    uint64_t take_timeouts_ = 0;
    uint64_t escalations_told_ = 0;
    uint64_t escalations_added_ = 0;    // the others', added to the XDP tier here
    uint64_t escalations_skipped_ = 0;  // ... not: under an allow, held already, or no tier
    uint64_t escalations_refused_ = 0;  // ... not a prefix
    // ... shorter than the rules' source keys, past the sync's count (remote_bounds.h), and
    // those whose TTL was clamped.
    uint64_t escalations_short_ = 0, escalations_over_count_ = 0, escalations_ttl_clamped_ = 0;
};

}  // namespace floodgate
