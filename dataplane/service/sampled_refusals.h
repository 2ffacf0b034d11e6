// The workers' sampled refusals (dataplane/pipeline/refusal_samples.h), summed per rule and
// source into running counts for an Escalator of their own (xdp_feed.h): the escalation of
// sources that the top-offender summaries cannot hold, a flood spread over thousands of
// sources. A count is an estimate (each sample stands for RefusalSampler::kMeanGap refusals, 32):
// a second's growth of n samples is off by about sqrt(n) samples, so a source refused near its
// rule's min_refused_rate is over it in some seconds and not in others, and one refused at
// several times the rate is over it in almost every second (mix d of perf/: 1,000 sources
// refused about 350 times a second, 11 samples each, against perf-xdp.yaml's 100/s, 3 samples).
//
// Bounded: at most kMaxSources sources (more are counted, not tracked), and a source with no
// sample for kForgetNs is forgotten. Pure logic, no clock of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/service/escalation.h"

namespace floodgate {

class SampledRefusals {
  public:
    static constexpr size_t kMaxSources = 65536;
    static constexpr uint64_t kForgetNs = 10'000'000'000ull;

    // Samples taken at now_ns: each names a rule and a source and stands for `refused`
    // refusals.
    void add(const std::vector<RefusedSource> &samples, uint64_t now_ns);
    // The running count of every source sampled in the last kForgetNs (the others forgotten),
    // for Escalator::sample.
    std::vector<RefusedSource> counts(uint64_t now_ns);
    size_t sources() const { return counts_.size(); }
    uint64_t untracked() const { return untracked_; }  // samples of sources past kMaxSources

  private:
    struct Count {
        uint64_t refused = 0;
        uint64_t last_ns = 0;
    };
    std::map<std::pair<std::string, Prefix>, Count> counts_;
    uint64_t untracked_ = 0;
};

}  // namespace floodgate
