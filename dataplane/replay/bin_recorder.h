// --report's counts per bin (dataplane/replay/report.h), and the capture's clock range the bins
// are laid out over.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/pipeline/pipeline.h"
#include "dataplane/replay/report.h"

namespace floodgate {

// The first and last value of the limiter's clock over a capture (its first timestamp and its
// largest), for --report's bins: a pass over the file before the run.
struct ClockRange {
    uint64_t frames = 0, first_ns = 0, last_ns = 0;
};

bool read_clock_range(const std::string &path, ClockRange *range, std::string *error);

// Every core's cumulative counters read at each bin boundary, less the reading at the one
// before. Exact: offline, a core's counters change only inside decide(), and the trace's run
// (trace_run.h) closes a bin before deciding the first frame past it.
class BinRecorder {
  public:
    BinRecorder(const BinLayout &layout, const RuleSet &rules,
                const std::vector<Pipeline *> &cores);

    // Where the open bin ends: a frame whose clock is there or later belongs to a later bin.
    uint64_t end_ns() const {
        return bins_.size() < layout_.count ? layout_.end_ns(bins_.size()) : UINT64_MAX;
    }

    // Closes every bin that ends at or before clock_ns; every frame decided so far is in them.
    void close_before(uint64_t clock_ns);

    // After the last frame: the open bin, and any left (none when the layout fits the trace).
    std::vector<BinCounts> finish();

  private:
    BinCounts read() const;
    static BinCounts difference(const BinCounts &a, const BinCounts &b);

    BinLayout layout_;
    const RuleSet &rules_;
    std::vector<Pipeline *> cores_;
    BinCounts before_;  // the reading at the end of the last closed bin
    std::vector<BinCounts> bins_;
};

}  // namespace floodgate
