// Top refused sources per rule: a Space-Saving summary (Metwally, Agrawal, El Abbadi 2005).
// k counters; a new source that finds no counter takes over a smallest one and inherits its
// count as an error bound. Any source refused more than n/k times is guaranteed to be present,
// and its reported count overestimates the truth by at most its error. Per core, single writer.
//
// A refusal may stand for several (sampled top offenders, Pipeline::note_refusal): added with
// the weight w = 1/p it was sampled with, a source's count is then an unbiased estimate, and
// each counter also counts its own samples. Once a summary has taken a sample, every count in
// it may have missed refusals (a source can lose them all to the draw), so top() states a
// sampling error for every one: w times the half-width of the score interval of a Poisson
// count of samples at kSamplingConfidence, z^2/2 + z sqrt(X + z^2/4) for X samples (107
// refusals for a source never sampled, 469 for one sampled 100 times at w = 16).
//
// Refusals are the common case under a flood, so add() is built for it: a 32-bit tag per
// counter is compared sixteen at a time with AVX-512 (eight with AVX2, four with SSE2: 64 tags,
// 256 bytes, no branches), and the counts sit in their own array for the minimum search.
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
    // The sampling error of count at kConfidence (0: every refusal counted): the true count
    // lies within count - error - sampling_error and count + sampling_error, at kConfidence.
    uint64_t sampling_error = 0;
};

// The confidence at which HeavyHitter::sampling_error is stated, and its normal quantile.
inline constexpr double kSamplingConfidence = 0.99;
inline constexpr double kSamplingZ = 2.5758;

class HeavyHitters {
  public:
    static constexpr unsigned kCounters = 64;

    // hash: any well-mixed hash of the source (the table's keyed hash). weight: the refusals
    // this one stands for (1 / the probability it was sampled with); one summary, one weight
    // above 1 (the last given is the one top() states errors with).
    void add(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint8_t prefix_len, uint64_t hash,
             uint32_t weight = 1);
    // The top n by count, largest first; ties broken by address so output is deterministic.
    std::vector<HeavyHitter> top(unsigned n) const;
    // Adds another core's summary into this one (counts of the same source are summed). The
    // hashes must come from the same seed on every core: sources are found by hash tag.
    void merge(const HeavyHitters &other);

  private:
    struct Source {
        uint64_t addr_hi;
        uint64_t addr_lo;
        uint64_t error;
        uint64_t samples;  // adds of a weight above 1 to this source
        uint8_t family;
        uint8_t prefix_len;
    };
    int find(uint64_t addr_hi, uint64_t addr_lo, uint8_t family, uint32_t tag) const;
    unsigned smallest();

    alignas(64) uint32_t tag_[kCounters] = {};
    alignas(64) uint64_t count_[kCounters] = {};
    Source source_[kCounters] = {};
    uint64_t hash_[kCounters] = {};  // kept for merge()
    unsigned used_ = 0;
    uint64_t min_count_ = 0;      // no counter is below this once all are used
    unsigned cursor_ = 0;         // where the search for a counter at min_count_ resumes
    unsigned last_ = 0;           // the counter the last add() went to
    uint32_t sample_weight_ = 1;  // above 1 once a sample was added (or merged)
};

}  // namespace floodgate
