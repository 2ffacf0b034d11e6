// The live cross-core merge (README, "Several cores"): each worker's consumption moves through
// rte_rings, without locks, from the core that admitted it to every other core.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/api/counter.h"
#include "dataplane/pipeline/merge.h"

struct rte_ring;

namespace floodgate {

// The live merge, without locks: each worker publishes its consumption on its own
// single-producer ring ("out"); the merger on the main lcore moves every record to the
// "in" ring of every other worker, which applies them between bursts.
struct MergeRings {
    rte_ring *out = nullptr;  // worker -> merger
    rte_ring *in = nullptr;   // merger -> worker
};

class LiveMerger {
  public:
    // One pair of rings per worker, each holding ring_records Consumption records.
    LiveMerger(unsigned workers, unsigned ring_records);
    ~LiveMerger();
    bool ok() const { return ok_; }
    const MergeRings &rings(unsigned worker) const { return rings_[worker]; }
    // Moves everything published so far; returns how many records were forwarded.
    uint64_t forward();
    // Records that found an "in" ring full; read by the stats from the control thread.
    uint64_t dropped() const { return dropped_; }

  private:
    std::vector<MergeRings> rings_;
    std::vector<Consumption> scratch_;
    Counter dropped_;
    bool ok_ = true;
};

}  // namespace floodgate
