// What one core admitted for the keys of shared rules (`share: cluster`) since the control
// plane last took it: the box's side of the cluster sync (docs/cluster.md, "Several boxes"). A key
// is kept by its rule and its addresses, not by its hash, since the other boxes hash with seeds of
// their own (dataplane/pipeline/cluster_keys.h names it for them).
//
// Fixed capacity, open addressing on the key's table hash, cleared in O(1) by a generation
// stamp; nothing is allocated after construction.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace floodgate {

struct SharedRecord {
    uint64_t hash = 0;    // the key's table hash on this box (rule_key_hash)
    uint32_t key_id = 0;  // its rule's RuleState::key_id
    uint32_t packets = 0;
    uint8_t family = 0;  // 4 or 6; 0 for key none
    // The packet's addresses masked to the rule's key: dst keys the destination, (src, dst)
    // pairs both, none neither (zero).
    uint8_t src[16] = {};
    uint8_t dst[16] = {};
};

// Most shared keys one core lists between two syncs; past it, a key's packets are not shared
// (counted in cluster_unshared_keys).
inline constexpr uint32_t kMaxSharedKeysPerCore = 4096;

class ClusterLedger {
  public:
    explicit ClusterLedger(uint32_t capacity = kMaxSharedKeysPerCore);

    // Counts packets for the record's key; false when the ledger is full and the key new.
    bool add(const SharedRecord &r, uint32_t packets);
    // Moves every record of other into this one (false if some found it full), clearing other.
    bool absorb(ClusterLedger &other);
    // Appends the records to out and clears the ledger.
    void take(std::vector<SharedRecord> *out);
    uint32_t size() const { return size_; }

  private:
    void clear();

    struct Slot {
        uint32_t generation;
        uint32_t record;
    };
    struct Free {
        void operator()(void *p) const { std::free(p); }
    };
    uint32_t capacity_;
    uint64_t mask_;  // slots - 1
    // Zeroed by calloc (fresh pages: untouched until used), so generation 0 is "empty".
    std::unique_ptr<Slot[], Free> slots_;
    std::unique_ptr<SharedRecord[], Free> records_;
    uint32_t size_ = 0;
    uint32_t generation_ = 1;
};

}  // namespace floodgate
