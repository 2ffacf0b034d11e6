#include "dataplane/core/destination_summary.h"

#include <algorithm>
#include <tuple>

namespace floodgate {

int DestinationSummary::find(uint64_t hi, uint64_t lo, uint8_t family, uint64_t hash) const {
    for (unsigned i = 0; i < used_; ++i)
        if (hash_[i] == hash && slot_[i].addr_lo == lo && slot_[i].addr_hi == hi &&
            slot_[i].family == family)
            return static_cast<int>(i);
    return -1;
}

unsigned DestinationSummary::smallest() const {
    return static_cast<unsigned>(std::min_element(matched_, matched_ + kSlots) - matched_);
}

void DestinationSummary::add_slow(uint64_t hi, uint64_t lo, uint8_t family, uint8_t prefix_len,
                                  uint64_t hash) {
    last_hi_ = hi;
    last_lo_ = lo;
    last_family_ = family;
    const int found = find(hi, lo, family, hash);
    if (found >= 0) {
        last_ = static_cast<unsigned>(found);
        ++matched_[last_];
        return;
    }
    unsigned i;
    uint64_t floor = 0;
    if (used_ < kSlots) {
        i = used_++;
    } else {
        i = smallest();
        floor = matched_[i];
    }
    // The inherited count is error, never this epoch's: the epoch starts from it.
    hash_[i] = hash;
    matched_[i] = floor + 1;
    passed_[i] = 0;
    slot_[i] = Slot{hi, lo, family, prefix_len, floor, floor, 0, 0, 0, RateBaseline{}};
    last_ = i;
}

void DestinationSummary::roll(uint64_t epoch) {
    if (epoch <= epoch_) return;
    // Never rolled (a new rule): what it counted is its first, partial epoch.
    const uint64_t ended = epoch_ == 0 ? 1 : epoch - epoch_;
    for (unsigned i = 0; i < used_; ++i) {
        Slot &s = slot_[i];
        s.last_matched = matched_[i] - s.epoch_matched;
        s.last_passed = passed_[i] - s.epoch_passed;
        s.baseline.end_epoch(static_cast<double>(s.last_matched));
        if (ended > 1) {
            // The epochs since were empty: the last whole one had nothing in it.
            s.baseline.end_idle_epochs(ended - 1);
            s.last_matched = 0;
            s.last_passed = 0;
        }
        s.epoch_matched = matched_[i];
        s.epoch_passed = passed_[i];
    }
    epoch_ = epoch;
}

void add_figures(std::vector<DestinationFigures> *sum,
                 const std::vector<DestinationFigures> &core) {
    for (const DestinationFigures &f : core) {
        auto same = [&](const DestinationFigures &x) {
            return x.family == f.family && x.addr_hi == f.addr_hi && x.addr_lo == f.addr_lo &&
                   x.prefix_len == f.prefix_len;
        };
        auto it = std::find_if(sum->begin(), sum->end(), same);
        if (it == sum->end()) {
            sum->push_back(f);
            continue;
        }
        it->matched += f.matched;
        it->error += f.error;
        it->last_matched += f.last_matched;
        it->last_passed += f.last_passed;
        it->baseline.baseline += f.baseline.baseline;
        it->baseline.epochs = std::min(it->baseline.epochs, f.baseline.epochs);
    }
}

std::vector<DestinationFigures> DestinationSummary::figures() const {
    std::vector<DestinationFigures> v;
    for (unsigned i = 0; i < used_; ++i) {
        const Slot &s = slot_[i];
        v.push_back({s.addr_hi, s.addr_lo, s.family, s.prefix_len, matched_[i], s.error,
                     s.last_matched, s.last_passed, s.baseline});
    }
    std::sort(v.begin(), v.end(), [](const DestinationFigures &a, const DestinationFigures &b) {
        return std::tie(b.last_matched, b.matched, a.family, a.addr_hi, a.addr_lo) <
               std::tie(a.last_matched, a.matched, b.family, b.addr_hi, b.addr_lo);
    });
    return v;
}

}  // namespace floodgate
