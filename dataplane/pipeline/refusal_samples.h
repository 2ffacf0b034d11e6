// A worker's sampled refusals for escalation (dataplane/service/xdp_feed.h): one refusal of an
// escalating rule in about kMeanGap, with its source, handed to the control thread through a
// single-producer, single-consumer rte_ring. The summaries of top offenders (heavy_hitters.h)
// guarantee nothing to a flood spread over more sources than their 64 counters (mix d's 1,000
// sources, each refused about 350 times a second, are all below n/k); a sample stands for kMeanGap
// refusals of its source, so every source refused well past its rule's min_refused_rate is seen,
// whatever the number of sources, at the cost of a decrement a refusal.
//
// The gaps between samples are random (1 to 2 * kMeanGap - 1, uniform), so that sources refused
// in a fixed rotation are sampled in proportion to their refusals, not by their place in it.
#pragma once

#include <atomic>
#include <cstdint>

struct rte_ring;

namespace floodgate {

struct RefusalSample {
    uint64_t addr_hi;  // the rule's key, as LimitKey (masked to prefix_len)
    uint64_t addr_lo;
    uint32_t serial;  // the RuleSet's (RuleSet::serial): rule is an index into it
    uint16_t rule;
    uint8_t family;      // 4 or 6
    uint8_t prefix_len;  // the rule's key length for the family
};
static_assert(sizeof(RefusalSample) % 4 == 0, "rte_ring elements are multiples of 4 bytes");

class RefusalSampler {
  public:
    static constexpr unsigned kMeanGap = 32;  // refusals a sample stands for
    // Drained every 100 ms: 16,384 samples is 0.1 s of 5 million refusals a second.
    static constexpr unsigned kSlots = 16384;

    explicit RefusalSampler(uint64_t seed);
    ~RefusalSampler();
    RefusalSampler(const RefusalSampler &) = delete;
    RefusalSampler &operator=(const RefusalSampler &) = delete;

    // Worker: whether this refusal is sampled (then take() it).
    bool due() { return --countdown_ == 0; }
    void take(const RefusalSample &s);

    // Control thread (one): up to n samples, oldest first.
    unsigned drain(RefusalSample *out, unsigned n);
    // Samples taken and samples lost to a full ring (the reader too slow), from any thread.
    uint64_t taken() const { return taken_.load(std::memory_order_relaxed); }
    uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

  private:
    uint32_t next_gap();

    rte_ring *ring_ = nullptr;
    uint64_t rng_;
    uint32_t countdown_;
    // Written by the worker only (relaxed stores of its own increments), read by anyone.
    std::atomic<uint64_t> taken_{0}, lost_{0};
};

}  // namespace floodgate
