// Whether this box counts its shared rules with the cluster or alone, and what its shared
// rules are while it is alone (docs/cluster.md, "Several boxes"). The control plane delivers a sync
// every interval, saying whether the store answered and how many boxes are live; the box falls
// back when the store did not answer, or when no sync came for three intervals and at least
// 2 s (floodctl stopped, or stuck). It rejoins after two good syncs in a row, so for the whole
// first interval after a return the box still holds to its share, while the others' consumption
// of that interval reaches it: the boxes resynchronise without a burst. (What a box admitted
// while alone is not told: see dataplane/service/cluster_link.h.)
//
// Fallback, per rule: local divides the limit by the last known number of live boxes (before
// any sync, the rules file's cluster.boxes); fail-open refuses nothing and counts what it would
// have refused (the rule runs as a shadow rule).
//
// Not thread-safe: the service's lock, or replay's one thread.
#pragma once

#include <cstdint>
#include <string>

#include "dataplane/api/rules.h"

namespace floodgate {

class ClusterState {
  public:
    ClusterState() = default;
    ClusterState(const ClusterOptions &options, uint64_t now_ns);

    // A sync delivered at now_ns. True when the box joined or left the cluster.
    bool on_sync(bool store_ok, uint32_t live_boxes, uint64_t now_ns);
    // Time passing without syncs. True when the box fell back.
    bool on_tick(uint64_t now_ns);

    bool joined() const { return joined_; }
    uint32_t boxes() const { return boxes_; }
    // Why the box is alone ("not synced yet", "the store did not answer", "no sync from
    // floodctl"), or "" when it is joined.
    const std::string &reason() const { return reason_; }
    // Time spent alone since start, up to now_ns.
    uint64_t fallback_ns(uint64_t now_ns) const;
    uint64_t changes() const { return changes_; }
    uint64_t syncs() const { return syncs_; }
    uint64_t failed_syncs() const { return failed_syncs_; }
    uint64_t sync_interval_ns() const { return options_.sync_ns; }
    bool configured() const { return options_.set; }

    // The rules as they run now: unchanged while joined; alone, each shared rule's fallback.
    void adjust(Config *config) const;

  private:
    bool fall_back(const char *reason, uint64_t now_ns);

    ClusterOptions options_;
    bool joined_ = false;
    uint32_t boxes_ = 1;
    std::string reason_ = "not synced yet";
    unsigned good_in_a_row_ = 0;
    uint64_t last_sync_ns_ = 0;
    uint64_t alone_since_ns_ = 0;
    uint64_t alone_before_ns_ = 0;  // closed spells
    uint64_t changes_ = 0;
    uint64_t syncs_ = 0;
    uint64_t failed_syncs_ = 0;
};

// A rule's limit divided by n, exactly where it can be (a GCRA rate's count, or else its
// period multiplied), its burst divided and at least 1.
void divide_limit(Rule *r, uint32_t n);

}  // namespace floodgate
