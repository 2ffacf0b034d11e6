#include "dataplane/pipeline/cluster_state.h"

#include <algorithm>

namespace floodgate {

namespace {
// Syncs missed before a box decides floodctl is gone, and at least this long: one slow round
// (a worker sharing its CPU is slow to hand its ledger over; the daemon gives the dataplane a
// second per request) must not flip the box to alone and back.
constexpr uint64_t kSilentIntervals = 3;
constexpr uint64_t kMinSilentNs = 2'000'000'000ull;
}  // namespace

ClusterState::ClusterState(const ClusterOptions &options, uint64_t now_ns)
    : options_(options),
      boxes_(std::max<uint32_t>(1, options.boxes)),
      last_sync_ns_(now_ns),
      alone_since_ns_(now_ns) {}

bool ClusterState::fall_back(const char *reason, uint64_t now_ns) {
    good_in_a_row_ = 0;
    if (!joined_) return false;
    joined_ = false;
    reason_ = reason;
    alone_since_ns_ = now_ns;
    ++changes_;
    return true;
}

bool ClusterState::on_sync(bool store_ok, uint32_t live_boxes, uint64_t now_ns) {
    ++syncs_;
    last_sync_ns_ = now_ns;
    if (!store_ok) {
        ++failed_syncs_;
        if (!joined_) reason_ = "the store did not answer";
        return fall_back("the store did not answer", now_ns);
    }
    boxes_ = std::clamp<uint32_t>(live_boxes, 1, kMaxClusterBoxes);
    if (joined_ || ++good_in_a_row_ < 2) return false;
    joined_ = true;
    reason_.clear();
    alone_before_ns_ += now_ns - alone_since_ns_;
    ++changes_;
    return true;
}

bool ClusterState::on_tick(uint64_t now_ns) {
    const uint64_t silent_ns = std::max(kSilentIntervals * options_.sync_ns, kMinSilentNs);
    if (!options_.set || now_ns - last_sync_ns_ < silent_ns) return false;
    if (!joined_) reason_ = "no sync from floodctl";
    return fall_back("no sync from floodctl", now_ns);
}

uint64_t ClusterState::fallback_ns(uint64_t now_ns) const {
    return alone_before_ns_ + (joined_ || now_ns < alone_since_ns_ ? 0 : now_ns - alone_since_ns_);
}

void divide_limit(Rule *r, uint32_t n) {
    if (n <= 1) return;
    if (is_window(r->algorithm)) {
        r->rate_count = std::max<uint64_t>(1, r->rate_count / n);
        return;
    }
    if (r->rate_count % n == 0)
        r->rate_count /= n;
    else if (r->rate_period_ns <= kMaxRatePeriodNs / n)
        r->rate_period_ns *= n;
    else
        r->rate_count = std::max<uint64_t>(1, r->rate_count / n);
    r->burst_pkts = std::max<uint32_t>(1, r->burst_pkts / n);
}

void ClusterState::adjust(Config *config) const {
    if (joined_) return;
    for (Rule &r : config->rules) {
        if (!r.shared) continue;
        if (r.fallback == ClusterFallback::fail_open)
            r.mode = RuleMode::shadow;
        else
            divide_limit(&r, boxes_);
    }
}

}  // namespace floodgate
