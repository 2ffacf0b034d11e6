// `floodgate replay --boxes N`: the boxes of a cluster (docs/cluster.md, "Several boxes"), one core
// each, run over one capture on packet time. Frames reach a box by their full source address,
// as an ECMP hash would send them; each box keeps its own limits (per-source keys are whole on
// their box) and, every sync interval S, its shared rules' consumption goes through a model
// of the store: every box tells what it admitted since the last sync, and is charged what the
// others told, at the same instant, so a packet's charge reaches the other boxes at most S
// after it passed (the lag L = S of the bound). The same code as the live path names the keys
// (dataplane/pipeline/cluster_keys.h) and decides joining and falling back
// (dataplane/pipeline/cluster_state.h); --store-down FROM-TO takes the store away between
// two instants of the capture (seconds from its first frame), as a Redis outage would.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/core/ruleset.h"
#include "dataplane/pipeline/cluster_keys.h"
#include "dataplane/pipeline/cluster_state.h"
#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

struct BoxesOptions {
    unsigned boxes = 1;
    uint64_t sync_ns = 0;        // 0: the rules file's cluster.sync_ms
    uint64_t down_from_ns = 0;   // the store's outage, from the capture's first frame
    uint64_t down_until_ns = 0;  // (none when equal)
};

class BoxesSync {
  public:
    // Builds the first ruleset: the boxes start alone, as a live box does, until two syncs.
    BoxesSync(const Config &config, const BoxesOptions &options, const RuleSetOptions &base,
              std::string *error);
    bool ok() const { return rules_ != nullptr; }
    const RuleSet *rules() const { return rules_.get(); }

    // The boxes' pipelines (one per box), and the capture's first instant.
    void start(const std::vector<Pipeline *> &boxes, uint64_t first_ns);
    uint64_t next_sync_ns() const { return next_sync_ns_; }
    // The sync at next_sync_ns(); then the next one is due. False, with *error, when a
    // ruleset could not be built.
    bool sync(std::string *error);

    // What the syncs did, for STATS.json's "cluster" (times up to the last sync).
    nlohmann::ordered_json stats() const;

  private:
    ClusterOptions cluster_options() const;
    bool store_up(uint64_t now_ns) const;

    Config config_;
    BoxesOptions options_;
    RuleSetOptions base_;
    ClusterState state_;
    std::unique_ptr<RuleSet> rules_;
    std::vector<std::unique_ptr<RuleSet>> retired_;  // the boxes may still point at them
    std::vector<Pipeline *> boxes_;
    std::vector<SharedTotals> untold_;  // per box: taken, not yet in the store
    uint64_t first_ns_ = 0;
    uint64_t next_sync_ns_ = UINT64_MAX;
    bool joined_since_last_ = false;
    uint64_t told_ = 0;           // deltas stored
    uint64_t charged_ = 0;        // packets charged to boxes by others' deltas
    uint64_t dropped_alone_ = 0;  // packets admitted alone, not told
    uint64_t refused_ = 0;
};

}  // namespace floodgate
