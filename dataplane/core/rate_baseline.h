// A destination's own normal: the baseline is a slow moving average of its rate per epoch, and
// "total load high, no key over its limit" is a rate far above it that its rule still passes.
// Pure arithmetic, the same for every core, replay and the tests (docs/replay.md, "Destinations").
//
// Epochs are whole seconds of the core's clock (packet time in replay). The first epoch a
// destination is seen in is partial (it arrived mid-epoch), so it sets nothing; the first whole
// one sets the baseline, and every later one moves it by 1/kBaselineWeight of the difference
// (an exponential average with a time constant of about kBaselineWeight epochs: 256 s). The
// signal waits for kWarmEpochs whole epochs, so a new destination is never "far above" a
// baseline made of nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace floodgate {

inline constexpr uint64_t kEpochNs = 1'000'000'000;
inline constexpr double kBaselineWeight = 256;
inline constexpr uint32_t kWarmEpochs = 8;
// The signal: over kLoadHighRatio times the baseline while the rule passes at least
// kLoadHighPassedShare of the destination's packets (refuses almost nothing).
inline constexpr double kLoadHighRatio = 4;
inline constexpr double kLoadHighPassedShare = 0.99;

struct RateBaseline {
    double baseline = 0;  // packets a second; meaningful once epochs >= 2
    uint32_t epochs = 0;  // epochs ended since the destination was first seen (the first partial)

    // One epoch ended with `rate` packets in it (a second's worth: packets a second).
    void end_epoch(double rate) {
        if (epochs == 1)
            baseline = rate;
        else if (epochs > 1)
            baseline += (rate - baseline) / kBaselineWeight;
        ++epochs;
    }
    // `idle` further epochs ended with nothing in them (a core that saw no packet): what as
    // many end_epoch(0) would do, in closed form.
    void end_idle_epochs(uint64_t idle) {
        if (idle == 0) return;
        if (epochs == 0) {
            epochs = 1;
            --idle;
        }
        if (idle == 0) return;
        if (epochs == 1) {
            baseline = 0;
        } else {
            baseline *= std::pow(1 - 1 / kBaselineWeight, static_cast<double>(idle));
        }
        epochs = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{epochs} + idle, UINT32_MAX));
    }
    bool set() const { return epochs >= 2; }
    bool warm() const { return epochs >= kWarmEpochs; }
};

// The current rate over the baseline; 0 while there is no baseline, and a rate over a zero
// baseline counts as infinitely far above it.
inline double baseline_ratio(double rate, const RateBaseline &b) {
    if (!b.set()) return 0;
    if (b.baseline <= 0) return rate > 0 ? __builtin_inf() : 0;
    return rate / b.baseline;
}

inline bool load_high(double rate, double passed_rate, const RateBaseline &b) {
    return b.warm() && rate > 0 && baseline_ratio(rate, b) > kLoadHighRatio &&
           passed_rate >= kLoadHighPassedShare * rate;
}

}  // namespace floodgate
