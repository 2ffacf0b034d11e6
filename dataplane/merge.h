// Cross-core merge: every core's consumption since the last merge (keys and admitted packet
// counts, from Pipeline::publish) is charged to every other core's TATs (Pipeline::apply), so
// a key whose packets land on several cores is held to its limit across them, within a bound
// that grows with the merge interval (README, "Several cores").
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/api/counter.h"
#include "dataplane/pipeline.h"

struct rte_ring;

namespace floodgate {

// Merges the cores at now_ns, in one thread (replay). scratch is reused between calls.
void merge_cores(const std::vector<Pipeline *> &cores, uint64_t now_ns,
                 std::vector<Consumption> *scratch);

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
