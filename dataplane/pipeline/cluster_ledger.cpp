#include "dataplane/pipeline/cluster_ledger.h"

#include <bit>
#include <cstring>

namespace floodgate {

ClusterLedger::ClusterLedger(uint32_t capacity)
    : capacity_(capacity),
      mask_(std::bit_ceil(uint64_t{capacity} * 2) - 1),
      slots_(static_cast<Slot *>(std::calloc(mask_ + 1, sizeof(Slot)))),
      records_(static_cast<SharedRecord *>(std::calloc(capacity, sizeof(SharedRecord)))) {}

bool ClusterLedger::add(const SharedRecord &r, uint32_t packets) {
    // The hash is keyed (an attacker cannot choose collisions); at most half the slots are
    // used, so probes stay short.
    for (uint64_t i = r.hash & mask_;; i = (i + 1) & mask_) {
        Slot &s = slots_[i];
        if (s.generation != generation_) {
            if (size_ == capacity_) return false;
            s = Slot{generation_, size_};
            records_[size_] = r;
            records_[size_].packets = packets;
            ++size_;
            return true;
        }
        SharedRecord &have = records_[s.record];
        if (have.hash == r.hash && have.key_id == r.key_id) {
            have.packets += packets;
            return true;
        }
    }
}

bool ClusterLedger::absorb(ClusterLedger &other) {
    bool all = true;
    for (uint32_t i = 0; i < other.size_; ++i)
        all &= add(other.records_[i], other.records_[i].packets);
    other.clear();
    return all;
}

void ClusterLedger::take(std::vector<SharedRecord> *out) {
    out->insert(out->end(), records_.get(), records_.get() + size_);
    clear();
}

void ClusterLedger::clear() {
    size_ = 0;
    if (++generation_ == 0) {  // wrapped (after 2^32 clears): every stamp is stale again
        std::memset(slots_.get(), 0, (mask_ + 1) * sizeof(Slot));
        generation_ = 1;
    }
}

}  // namespace floodgate
