// The store's round trip as the sync thread meets it, for the seeds' "limiter check latency
// (p99) and store timeout rate": each sync's time (connect, TLS and login when it needs them, and
// the one EVALSHA), kept for the last kWindow, read as its median, 99th percentile and maximum.
// Nearest rank on the samples themselves: exact, and at most kMaxSamples of them (a sync every
// 10 ms at the most the rules allow).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <utility>

namespace floodgate {

class SyncLatency {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr Clock::duration kWindow = std::chrono::seconds(10);
    static constexpr size_t kMaxSamples = 1000;

    struct Figures {
        double p50_ms = 0, p99_ms = 0, max_ms = 0;
        size_t samples = 0;  // in the window (0: no sync in it, the figures 0)
    };

    void add(Clock::time_point at, double ms);
    // Over the samples of the window that ends at now (older ones are forgotten).
    Figures figures(Clock::time_point now);

  private:
    std::deque<std::pair<Clock::time_point, double>> samples_;
};

}  // namespace floodgate
