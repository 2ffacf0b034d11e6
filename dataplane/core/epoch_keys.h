// How many keys a rule held packets to in the last whole epoch (a second, rate_baseline.h),
// and how many packets it matched: what the per-source limits would let through in sum is
// keys x rate (the seeds' "total traffic against the sum of what the limits allow").
//
// Distinct keys in fixed memory: a HyperLogLog (Flajolet et al. 2007) of kRegisters one-byte
// registers over the key's keyed hash (the limit table's: an attacker cannot choose it), with
// linear counting below 2.5 x kRegisters. Its standard error is 1.04 / sqrt(kRegisters), 3.25%;
// cores' registers merge by maximum, so a key two cores held is counted once. Cost on the
// packet path: a shift, a count of leading zeros and a max into one byte.
//
// Replay counts exactly as well (keep_exact(), RuleSetOptions::exact_keys): it keeps the epoch's
// key hashes themselves, sorted and merged over the cores at the end of the epoch, so its count is
// that of the keys the limiter tells apart (the table's identity is the same 64-bit hash). Live
// cores do not: that is memory per key each second, beyond the table, whose expired entries are
// reclaimed within the second and so cannot carry a key's "seen" mark to its end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

namespace floodgate {

class EpochKeys {
  public:
    static constexpr unsigned kBits = 10;
    static constexpr unsigned kRegisters = 1u << kBits;
    static constexpr double kStandardError = 1.04 / 32;  // 1.04 / sqrt(kRegisters)

    void keep_exact() { exact_ = true; }
    bool exact() const { return exact_; }

    void add(uint64_t hash) {
        if (exact_) [[unlikely]]
            current_exact_.push_back(hash);
        const unsigned i = static_cast<unsigned>(hash >> (64 - kBits));
        const uint64_t rest = (hash << kBits) | (uint64_t{1} << (kBits - 1));  // never all zero
        const uint8_t rank = static_cast<uint8_t>(__builtin_clzll(rest) + 1);
        current_[i] = std::max(current_[i], rank);
    }
    // The epoch ended with the rule's matched counter at matched (its total so far): the keys
    // and packets of it become the last epoch's. idle: whole epochs after it passed with
    // nothing (the last one is then empty).
    void roll(uint64_t matched, bool idle) {
        if (idle) {
            std::memset(last_, 0, sizeof last_);
            last_matched_ = 0;
            last_exact_.clear();
        } else {
            std::memcpy(last_, current_, sizeof last_);
            last_matched_ = matched - epoch_matched_;
            std::sort(current_exact_.begin(), current_exact_.end());
            current_exact_.erase(std::unique(current_exact_.begin(), current_exact_.end()),
                                 current_exact_.end());
            last_exact_.swap(current_exact_);
        }
        std::memset(current_, 0, sizeof current_);
        current_exact_.clear();
        epoch_matched_ = matched;
    }
    // Another core's last epoch into this one's (keys once, packets summed).
    void merge_last(const EpochKeys &other) {
        for (unsigned i = 0; i < kRegisters; ++i) last_[i] = std::max(last_[i], other.last_[i]);
        last_matched_ += other.last_matched_;
        if (!other.exact_) return;
        exact_ = true;
        std::vector<uint64_t> both;
        both.reserve(last_exact_.size() + other.last_exact_.size());
        std::set_union(last_exact_.begin(), last_exact_.end(), other.last_exact_.begin(),
                       other.last_exact_.end(), std::back_inserter(both));
        last_exact_.swap(both);
    }
    // The last epoch's keys: counted where exact(), else the estimate.
    double last_keys() const;
    uint64_t last_matched() const { return last_matched_; }

  private:
    uint8_t current_[kRegisters] = {};
    uint8_t last_[kRegisters] = {};
    uint64_t epoch_matched_ = 0;  // the rule's matched counter when the current epoch began
    uint64_t last_matched_ = 0;
    bool exact_ = false;
    std::vector<uint64_t> current_exact_;  // the epoch's key hashes as they come (exact_ only)
    std::vector<uint64_t> last_exact_;     // the last epoch's, sorted, each once
};

}  // namespace floodgate
