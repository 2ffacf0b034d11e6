// Top refused sources per rule: a Space-Saving summary (Metwally, Agrawal, El Abbadi 2005).
// k counters; a new source that finds no counter takes over the smallest one and inherits its
// count as an error bound. Any source refused more than n/k times is guaranteed to be present,
// and its reported count overestimates the truth by at most its error. Per core, single writer.
#pragma once

#include <cstdint>
#include <vector>

namespace floodgate {

struct HeavyHitter {
    uint64_t addr_hi = 0;  // same raw layout as LimitKey
    uint64_t addr_lo = 0;
    uint8_t family = 0;
    uint8_t prefix_len = 0;
    uint64_t count = 0;
    uint64_t error = 0;  // count may exceed the true count by at most this
};

class HeavyHitters {
  public:
    static constexpr unsigned kCounters = 64;
    static constexpr unsigned kIndexSlots = 128;  // open-addressing index, power of two

    void add(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint8_t prefix_len, uint64_t hash);
    // The top n by count, largest first; ties broken by address so output is deterministic.
    std::vector<HeavyHitter> top(unsigned n) const;
    // Adds another core's summary into this one (counts of the same source are summed).
    void merge(const HeavyHitters &other);

  private:
    int find(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint64_t hash) const;
    void index_insert(unsigned counter, uint64_t hash);
    void index_remove(unsigned counter);

    HeavyHitter counters_[kCounters];
    uint64_t hashes_[kCounters] = {};
    int16_t index_[kIndexSlots] = {};  // counter + 1, 0 = empty
    unsigned used_ = 0;
    uint64_t min_count_ = 0;  // no counter is below this once all are used
    unsigned cursor_ = 0;     // where the search for a counter at min_count_ resumes
};

}  // namespace floodgate
