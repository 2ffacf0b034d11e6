#include "control/cluster/sync_latency.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace floodgate {

namespace {

// The nearest-rank percentile of sorted values: the smallest value with at least p of them at or
// below it.
double nearest_rank(const std::vector<double> &sorted, double p) {
    const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

void SyncLatency::add(Clock::time_point at, double ms) {
    samples_.emplace_back(at, ms);
    if (samples_.size() > kMaxSamples) samples_.pop_front();
}

SyncLatency::Figures SyncLatency::figures(Clock::time_point now) {
    while (!samples_.empty() && samples_.front().first + kWindow < now) samples_.pop_front();
    Figures f;
    f.samples = samples_.size();
    if (samples_.empty()) return f;
    std::vector<double> sorted;
    sorted.reserve(samples_.size());
    for (const auto &[at, ms] : samples_) sorted.push_back(ms);
    std::sort(sorted.begin(), sorted.end());
    f.p50_ms = nearest_rank(sorted, 0.50);
    f.p99_ms = nearest_rank(sorted, 0.99);
    f.max_ms = sorted.back();
    return f;
}

}  // namespace floodgate
