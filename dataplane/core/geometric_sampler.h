// One event in about kMeanGap, each independently of the others (probability 1 / kMeanGap):
// the gaps between samples are geometric, so the samples of any one source are binomial in its
// events whatever order the events come in, and an event not sampled costs a decrement. The
// gap is drawn once a sample (a logarithm). Sampled top offenders (Pipeline::note_refusal) count
// each sample for kMeanGap events, an unbiased estimate with a known variance.
#pragma once

#include <cmath>
#include <cstdint>

namespace floodgate {

class GeometricSampler {
  public:
    static constexpr uint32_t kMeanGap = 16;

    explicit GeometricSampler(uint64_t seed) : rng_(seed | 1) { countdown_ = next_gap(); }

    // Whether this event is sampled.
    bool due() {
        if (--countdown_ != 0) [[likely]]
            return false;
        countdown_ = next_gap();
        return true;
    }

  private:
    uint32_t next_gap() {
        rng_ ^= rng_ << 13;  // xorshift64
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        const double u = (static_cast<double>(rng_ >> 11) + 0.5) * 0x1p-53;  // in (0, 1)
        // The trials up to the first success: 1 + floor(ln u / ln(1 - p)), at most ~600.
        return 1 + static_cast<uint32_t>(std::log(u) / log_miss_);
    }

    double log_miss_ = std::log1p(-1.0 / kMeanGap);
    uint64_t rng_;
    uint32_t countdown_ = 1;
};

}  // namespace floodgate
