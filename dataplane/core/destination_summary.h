// Where a rule's traffic goes: its busiest destinations on this core, with the packets offered
// (matched) and passed toward each in the last whole epoch and a baseline of their own
// (rate_baseline.h). A Space-Saving summary (Metwally et al. 2005, as heavy_hitters.h) on the
// packets matched, kSlots counters: memory is fixed whatever the number of destinations. Any
// destination with more than n/kSlots of the rule's n packets on the core is in it; a
// destination takes a counter over from a smallest one and inherits its count as `error`, and
// from then on every packet toward it is counted exactly, so its epoch figures are exact for
// every whole epoch it held the counter through (a taken-over counter starts a new history:
// its first epoch is partial, and its baseline starts afresh).
//
// Cost on the packet path: add() is a compare with the destination the last packet went to (a
// flood repeats its destination) and an increment, else a hash and a scan of kSlots hashes;
// passed_last() one increment. The epoch's end (roll()) walks the counters once a second, out of
// line.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/core/rate_baseline.h"

namespace floodgate {

struct DestinationFigures {
    uint64_t addr_hi = 0;  // same raw layout as LimitKey
    uint64_t addr_lo = 0;
    uint8_t family = 0;
    uint8_t prefix_len = 0;
    uint64_t matched = 0;       // since the counter was taken, plus error
    uint64_t error = 0;         // matched may exceed the truth by at most this
    uint64_t last_matched = 0;  // packets offered in the last whole epoch (a second: a rate)
    uint64_t last_passed = 0;   // ... of which passed
    RateBaseline baseline;
};

class DestinationSummary {
  public:
    static constexpr unsigned kSlots = 32;

    // A packet toward the destination matched the rule. hash() gives any well-mixed hash of
    // it, the same on every core; it is asked for only when the destination is not the last
    // packet's.
    template <class Hash>
    void add(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint8_t prefix_len, Hash &&hash) {
        if (addr_lo == last_lo_ && addr_hi == last_hi_ && family == last_family_) [[likely]] {
            ++matched_[last_];
            return;
        }
        add_slow(addr_hi, addr_lo, family, prefix_len, hash());
    }
    // ... and the packet add() last counted was passed.
    void passed_last() { ++passed_[last_]; }

    // Ends every epoch before `epoch` (an epoch number: clock / kEpochNs): the current one
    // with what it counted, any later ones empty.
    void roll(uint64_t epoch);
    uint64_t epoch() const { return epoch_; }

    // The destinations by packets in the last whole epoch, largest first (ties by address).
    std::vector<DestinationFigures> figures() const;

  private:
    [[gnu::cold]] void add_slow(uint64_t addr_hi, uint64_t addr_lo, uint8_t family,
                                uint8_t prefix_len, uint64_t hash);
    int find(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint64_t hash) const;
    unsigned smallest() const;

    struct Slot {
        uint64_t addr_hi = 0;
        uint64_t addr_lo = 0;
        uint8_t family = 0;
        uint8_t prefix_len = 0;
        uint64_t error = 0;
        uint64_t epoch_matched = 0;  // matched_ and passed_ when the current epoch began
        uint64_t epoch_passed = 0;
        uint64_t last_matched = 0;
        uint64_t last_passed = 0;
        RateBaseline baseline;
    };
    uint64_t hash_[kSlots] = {};
    uint64_t matched_[kSlots] = {};
    uint64_t passed_[kSlots] = {};
    Slot slot_[kSlots];
    unsigned used_ = 0;
    // The counter the last packet went to, and its destination (family 0: none yet).
    unsigned last_ = 0;
    uint64_t last_hi_ = 0;
    uint64_t last_lo_ = 0;
    uint8_t last_family_ = 0;
    uint64_t epoch_ = 0;
};

// Adds one core's figures into the sum of others', rolled to the same epoch: counts and rates
// add, and so do baselines (the average of a sum is the sum of the averages); the history is
// the shorter of the two, so a counter one core took over late holds the signal back until it
// is warm there too.
void add_figures(std::vector<DestinationFigures> *sum, const std::vector<DestinationFigures> &core);

// A destination's hash for the summary where no limit key names it (rules kept per source): a
// fixed mix (every core must agree), not the table's keyed hash. A chosen collision only
// costs its chooser a comparison: counters are told apart by the whole hash and address.
inline uint64_t destination_hash(uint64_t addr_hi, uint64_t addr_lo, uint8_t family) {
    uint64_t h = (addr_hi ^ (addr_lo * 0x9e3779b97f4a7c15ull)) + family;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

}  // namespace floodgate
