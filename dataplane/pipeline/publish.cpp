// This core's side of the cross-core merge (merge.h): what it admitted since it last
// published, and what the other cores admitted, charged to its own TATs.
#include <algorithm>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

void Pipeline::enable_merge() {
    merging_ = true;
    unpublished_.reserve(kMaxUnpublishedKeys);
    unpublished_verifications_.reserve(kMaxUnpublishedKeys);
}

// Counts an admitted packet for the next publish. A key that finds the list full is left
// unmarked, so that it is listed again by its first packet after the next publish.
void Pipeline::note_admitted(LimitEntry *e, uint64_t hash, const LimitProfile &limit) {
    if (e->unpublished == 0) {
        if (unpublished_.size() == kMaxUnpublishedKeys) {
            ++counters_.merge_unshared_keys;
            return;
        }
        unpublished_.push_back(Consumption::of(hash, limit));
    }
    ++e->unpublished;
}

void Pipeline::publish(std::vector<Consumption> *out) {
    out->insert(out->end(), unpublished_verifications_.begin(), unpublished_verifications_.end());
    unpublished_verifications_.clear();
    for (Consumption &c : unpublished_) {
        LimitEntry *e = table_->find(c.hash);
        if (e == nullptr || e->unpublished == 0) continue;  // expired and reused since
        c.packets = e->unpublished;
        out->push_back(c);
        e->unpublished = 0;
    }
    unpublished_.clear();
}

void Pipeline::apply(const Consumption &c, uint64_t now_ns) {
    uint64_t tat_ns;
    LimitEntry *e = table_->acquire(c.hash, now_ns, &tat_ns);
    if (e == nullptr) {
        ++counters_.merge_table_full;
        return;
    }
    if (c.packets == 0) {  // a verification: verified until at least now + its TTL
        table_->commit(e, c.hash, std::max(tat_ns, tat_add(now_ns, c.interval_ns)));
        remembered_.add(c.hash);
        return;
    }
    table_->commit(e, c.hash,
                   limit_charge(static_cast<LimitKind>(c.kind), c.interval_ns, c.window_pkts,
                                tat_ns, now_ns, c.packets));
}

}  // namespace floodgate
