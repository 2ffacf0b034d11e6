// An adaptive limit (limit.adaptive): the rule's rate, learned from how fast the protected
// server answers, by AIMD as in the seeds' AimdLimiter, on a rate instead of a concurrency:
//   a sample within target: the rate grows by step / window (step per window of samples);
//   a sample over target: the rate is cut to keep_pct percent of itself, at most once per
//     window samples (cutting on every slow reply would collapse it within one round trip).
// The rate lives in one 64-bit word per rule (RuleState), shared by the cores: any core that
// takes a sample (Pipeline, response_samples.h) moves it with a compare-and-swap, and each core
// reads it once a burst into its own GCRA profile. Samples are rare next to packets (one per
// sampled connection), so the word is not contended.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "dataplane/api/rules.h"

namespace floodgate {

// Rates in millipackets per second: 1 ms/s to 2^40 (1.1e9 packets/s).
inline constexpr uint64_t kMilliPerPacketSecond = 1000;
inline uint64_t rate_milli(uint64_t count, uint64_t period_ns) {
    const unsigned __int128 m =
        static_cast<unsigned __int128>(count) * 1'000'000'000'000ull / period_ns;
    return std::clamp<uint64_t>(static_cast<uint64_t>(std::min<unsigned __int128>(m, 1ull << 40)),
                                1, (1ull << 40) - 1);
}
// GCRA's T for a rate: 1e12 / millipackets a second, in whole ns (at least 1).
inline uint64_t interval_of_milli(uint64_t milli) {
    return std::max<uint64_t>(1, 1'000'000'000'000ull / milli);
}

struct AdaptiveProfile {
    uint64_t min_milli = 0;
    uint64_t max_milli = 0;
    uint64_t step_milli = 0;  // added over a window of timely samples
    uint64_t target_ns = 0;
    uint32_t window = 1;
    uint32_t keep_pct = 80;  // of the rate, at a decrease
};

inline AdaptiveProfile adaptive_profile(const AdaptiveOptions &a) {
    AdaptiveProfile p;
    p.min_milli = rate_milli(a.min_count, a.min_period_ns);
    p.max_milli = rate_milli(a.max_count, a.max_period_ns);
    p.step_milli = std::max<uint64_t>(1, p.max_milli * a.increase_pct / 100);
    p.target_ns = a.target_ns;
    p.window = a.window;
    p.keep_pct = 100 - a.decrease_pct;
    return p;
}

// The word: the rate in its high 40 bits, the samples since the last decrease in the low 24.
inline constexpr uint64_t kSinceBits = 24;
inline constexpr uint64_t kSinceMask = (1ull << kSinceBits) - 1;
inline uint64_t adaptive_word(uint64_t milli, uint64_t since) {
    return milli << kSinceBits | std::min(since, kSinceMask);
}
inline uint64_t word_rate(uint64_t word) {
    return word >> kSinceBits;
}

// One sample's step (pure: the tests run it alone). *cut: the rate was decreased.
inline uint64_t aimd_step(const AdaptiveProfile &p, uint64_t word, uint64_t sample_ns, bool *cut) {
    uint64_t rate = std::clamp(word_rate(word), p.min_milli, p.max_milli);
    uint64_t since = (word & kSinceMask) + 1;
    *cut = false;
    if (sample_ns > p.target_ns) {
        if (since >= p.window) {
            rate = std::max(p.min_milli, rate * p.keep_pct / 100);
            since = 0;
            *cut = true;
        }
    } else {
        rate = std::min(p.max_milli, rate + std::max<uint64_t>(1, p.step_milli / p.window));
    }
    return adaptive_word(rate, since);
}

// A rule's learned rate and what moved it, shared by every core (any thread reads it).
struct AdaptiveRate {
    std::atomic<uint64_t> word{0};
    std::atomic<uint64_t> samples{0};  // samples taken
    std::atomic<uint64_t> late{0};     // ... of which over target
    std::atomic<uint64_t> decreases{0};
    std::atomic<uint64_t> last_sample_ns{0};  // on the workers' clock
    std::atomic<uint64_t> last_signal_ns{0};  // the last sample's response time

    void on_sample(const AdaptiveProfile &p, uint64_t sample_ns, uint64_t now_ns) {
        uint64_t w = word.load(std::memory_order_relaxed);
        bool cut = false;
        while (!word.compare_exchange_weak(w, aimd_step(p, w, sample_ns, &cut),
                                           std::memory_order_relaxed)) {
        }
        samples.fetch_add(1, std::memory_order_relaxed);
        if (sample_ns > p.target_ns) late.fetch_add(1, std::memory_order_relaxed);
        if (cut) decreases.fetch_add(1, std::memory_order_relaxed);
        last_sample_ns.store(now_ns, std::memory_order_relaxed);
        last_signal_ns.store(sample_ns, std::memory_order_relaxed);
    }
    uint64_t rate() const { return word_rate(word.load(std::memory_order_relaxed)); }
};

// A core starts at most one sample a millisecond (1,000 a second: a hundred windows of ten),
// so that an admitted SYN costs one comparison, not a hash and a slot, while samples abound
// (perf/results/shape-adaptive-bench.md).
inline constexpr uint64_t kAdaptiveSampleGapNs = 1'000'000;

// How long without a sample before the learned rate is called stale (it stays where it is).
inline constexpr uint64_t kAdaptiveStaleNs = 5'000'000'000ull;

}  // namespace floodgate
