// The live cross-core merge (docs/design.md, "Several cores"): each worker publishes the
// consumption of its shared keys on its own single-producer ring, and every other worker reads that
// ring with a cursor of its own. No forwarder and no locks: a record is written once, whatever the
// number of workers, and a worker that shares nothing publishes nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/pipeline/merge.h"

namespace floodgate {

// One producer, any number of readers, each with its own cursor: a broadcast ring. rte_ring
// keeps one consumer position per ring, so N-1 readers would need N-1 rings and N-1 copies of
// every record; here the producer writes each record once and never waits for a reader. A
// reader that falls more than a ring behind loses the records overwritten meanwhile, and knows
// how many (the producer claims slots before it writes them, as a seqlock's writer does).
// Slots are plain words read and written through std::atomic_ref, relaxed (Counter's way): a
// reader racing an overwrite reads stale or torn words, defined behaviour, and then discards
// them by the claim it reads after.
class BroadcastRing {
  public:
    // capacity: a power of two (ok() is false otherwise). Memory from DPDK on socket
    // (hugepages where given).
    BroadcastRing(unsigned capacity, int socket);
    ~BroadcastRing();
    BroadcastRing(const BroadcastRing &) = delete;
    BroadcastRing &operator=(const BroadcastRing &) = delete;
    bool ok() const { return slots_ != nullptr; }

    // Producer: appends records[0..n); n <= capacity.
    void publish(const Consumption *records, unsigned n);

    // Reader: copies at most max records from *cursor on into out and advances the cursor;
    // returns how many were copied. *lost grows by the records overwritten before they could
    // be read. A cursor starts at 0.
    unsigned read(uint64_t *cursor, Consumption *out, unsigned max, uint64_t *lost) const;

  private:
    static constexpr unsigned kWords = sizeof(Consumption) / 8;
    struct Slot {
        alignas(std::atomic_ref<uint64_t>::required_alignment) uint64_t words[kWords];
    };
    static_assert(sizeof(Consumption) % 8 == 0 && std::atomic_ref<uint64_t>::is_always_lock_free);

    Slot *slots_ = nullptr;
    uint64_t mask_ = 0;
    // Records written (the readers' end) and claimed (being written): each on its own line,
    // written once per publish.
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> claimed_{0};
};

// The cluster ring's records: a sync's charges for 65,536 keys, or several syncs of fewer.
inline constexpr unsigned kClusterRingRecords = 1u << 16;

// Every worker's ring (none with one worker: nothing to merge), and the cluster's: the
// other boxes' consumption of shared keys, published by the service thread
// (dataplane/service/cluster_link.h) and charged by every worker.
class LiveMerger {
  public:
    LiveMerger(unsigned workers, unsigned ring_records, unsigned cluster_records);
    bool ok() const { return ok_; }
    bool merging() const { return !rings_.empty(); }
    unsigned workers() const { return static_cast<unsigned>(rings_.size()); }
    BroadcastRing &ring(unsigned worker) { return *rings_[worker]; }
    BroadcastRing &cluster_ring() { return *cluster_; }

  private:
    std::vector<std::unique_ptr<BroadcastRing>> rings_;
    std::unique_ptr<BroadcastRing> cluster_;
    bool ok_ = true;
};

}  // namespace floodgate
