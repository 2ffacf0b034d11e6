#include "dataplane/heavy_hitters.h"

#include <algorithm>
#include <tuple>

namespace floodgate {

int HeavyHitters::find(uint64_t hi, uint64_t lo, uint8_t family, uint64_t hash) const {
    for (unsigned i = 0, slot = hash & (kIndexSlots - 1); i < kIndexSlots;
         ++i, slot = (slot + 1) & (kIndexSlots - 1)) {
        int c = index_[slot] - 1;
        if (c < 0) return -1;
        const HeavyHitter &h = counters_[c];
        if (h.addr_hi == hi && h.addr_lo == lo && h.family == family) return c;
    }
    return -1;
}

void HeavyHitters::index_insert(unsigned counter, uint64_t hash) {
    hashes_[counter] = hash;
    unsigned slot = hash & (kIndexSlots - 1);
    while (index_[slot] != 0) slot = (slot + 1) & (kIndexSlots - 1);
    index_[slot] = static_cast<int16_t>(counter + 1);
}

// Linear-probing deletion (Knuth's algorithm R): shift later entries of the run back so that
// every remaining one stays reachable from its home slot.
void HeavyHitters::index_remove(unsigned counter) {
    unsigned slot = hashes_[counter] & (kIndexSlots - 1);
    while (index_[slot] != static_cast<int16_t>(counter + 1)) slot = (slot + 1) & (kIndexSlots - 1);
    index_[slot] = 0;
    for (unsigned next = (slot + 1) & (kIndexSlots - 1); index_[next] != 0;
         next = (next + 1) & (kIndexSlots - 1)) {
        unsigned home = hashes_[index_[next] - 1] & (kIndexSlots - 1);
        // Move it back if its home is not cyclically in (slot, next].
        bool reachable =
            slot <= next ? (home > slot && home <= next) : (home > slot || home <= next);
        if (!reachable) {
            index_[slot] = index_[next];
            index_[next] = 0;
            slot = next;
        }
    }
}

void HeavyHitters::add(uint64_t hi, uint64_t lo, uint8_t family, uint8_t prefix_len,
                       uint64_t hash) {
    int c = find(hi, lo, family, hash);
    if (c >= 0) {
        ++counters_[c].count;
        return;
    }
    if (used_ < kCounters) {
        counters_[used_] = {hi, lo, family, prefix_len, 1, 0};
        index_insert(used_, hash);
        ++used_;
        return;
    }
    // Replace a smallest counter. Many counters share the minimum count, so a cursor that
    // walks on from the last replacement finds one in a step or two; the full rescan for a
    // new minimum runs once per kCounters replacements at most (amortised O(1) per add).
    unsigned victim = kCounters;
    while (victim == kCounters) {
        for (unsigned n = 0; n < kCounters; ++n) {
            unsigned i = (cursor_ + n) % kCounters;
            if (counters_[i].count == min_count_) {
                victim = i;
                break;
            }
        }
        if (victim == kCounters) {
            min_count_ = counters_[0].count;
            for (unsigned i = 1; i < kCounters; ++i)
                if (counters_[i].count < min_count_) min_count_ = counters_[i].count;
        }
    }
    cursor_ = (victim + 1) % kCounters;
    index_remove(victim);
    uint64_t floor = counters_[victim].count;
    counters_[victim] = {hi, lo, family, prefix_len, floor + 1, floor};
    index_insert(victim, hash);
}

std::vector<HeavyHitter> HeavyHitters::top(unsigned n) const {
    std::vector<HeavyHitter> v(counters_, counters_ + used_);
    std::sort(v.begin(), v.end(), [](const HeavyHitter &a, const HeavyHitter &b) {
        return std::tie(b.count, a.family, a.addr_hi, a.addr_lo) <
               std::tie(a.count, b.family, b.addr_hi, b.addr_lo);
    });
    if (v.size() > n) v.resize(n);
    return v;
}

void HeavyHitters::merge(const HeavyHitters &other) {
    for (unsigned i = 0; i < other.used_; ++i) {
        const HeavyHitter &o = other.counters_[i];
        int c = find(o.addr_hi, o.addr_lo, o.family, other.hashes_[i]);
        if (c >= 0) {
            counters_[c].count += o.count;
            counters_[c].error += o.error;
            continue;
        }
        add(o.addr_hi, o.addr_lo, o.family, o.prefix_len, other.hashes_[i]);
        c = find(o.addr_hi, o.addr_lo, o.family, other.hashes_[i]);
        counters_[c].count += o.count - 1;
        counters_[c].error += o.error;
    }
}

}  // namespace floodgate
