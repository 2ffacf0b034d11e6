#include "dataplane/core/limit_table.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <x86intrin.h>

#include <cstdlib>

// How many moves a cuckoo path may make (overridable to measure, see buckets_for).
#ifndef FG_CUCKOO_DEPTH
#define FG_CUCKOO_DEPTH 4
#endif

namespace floodgate {

HashSeed random_hash_seed() {
    HashSeed s{};
    if (getrandom(s.k, sizeof s.k, 0) != static_cast<ssize_t>(sizeof s.k)) {
        for (auto &k : s.k) k = __rdtsc() * 0x9e3779b97f4a7c15ull;
    }
    return s;
}

TableMemory heap_table_memory() {
    TableMemory m;
    m.alloc = [](size_t bytes, void *) -> void * {
        // 2 MiB alignment and MADV_HUGEPAGE: transparent huge pages spare big tables most TLB
        // misses (a 4 KiB page walk per lookup costs as much as the lookup).
        constexpr size_t kHuge = size_t{2} << 20;
        bytes = (bytes + kHuge - 1) & ~(kHuge - 1);
        void *p = std::aligned_alloc(kHuge, bytes);
        if (p == nullptr) return nullptr;
        madvise(p, bytes, MADV_HUGEPAGE);
        std::memset(p, 0, bytes);
        return p;
    };
    m.free = [](void *p, void *) { std::free(p); };
    return m;
}

namespace {
uint64_t buckets_for(uint64_t entries) {
    // 15% spare slots: with three slots per bucket and a depth-4 cuckoo search the first
    // insert failure comes at 90.9-92.0% occupancy (measured over 6 seeds at 1M entries), so
    // `entries` live keys (87% of the slots) fit with room to spare. Depth 5 would reach 94%
    // but search up to 728 buckets for an insert into a full table; depth 4 searches 242.
    uint64_t slots = entries + entries * 15 / 100 + kSlotsPerBucket;
    uint64_t buckets = slots / kSlotsPerBucket;
    return buckets < 2 ? 2 : buckets;
}
}  // namespace

uint64_t LimitTable::bytes_for(uint64_t entries) {
    return buckets_for(entries) * sizeof(LimitBucket);
}

LimitTable::LimitTable(uint64_t entries, const HashSeed &seed, TableMemory mem)
    : n_buckets_(buckets_for(entries)), capacity_(entries), seed_(seed), mem_(mem) {
    buckets_ = static_cast<LimitBucket *>(mem_.alloc(n_buckets_ * sizeof(LimitBucket), mem_.ctx));
}

LimitTable::~LimitTable() {
    if (buckets_ != nullptr) mem_.free(buckets_, mem_.ctx);
}

LimitEntry *LimitTable::insert(uint64_t h, uint64_t now_ns) {
    // Breadth-first search for a free slot, over at most kMaxNodes buckets reachable by moving
    // one entry to its other bucket at each step (depth FG_CUCKOO_DEPTH from the two home
    // buckets). Only a nearly full table searches past the two home buckets.
    constexpr unsigned kFanout = kSlotsPerBucket;
    constexpr unsigned kMaxNodes = [] {
        unsigned nodes = 0, level = 2;
        for (unsigned d = 0; d <= FG_CUCKOO_DEPTH; ++d, level *= kFanout) nodes += level;
        return nodes;
    }();
    struct Node {
        uint64_t bucket;
        int parent;            // index into nodes, -1 for the two home buckets
        unsigned parent_slot;  // the entry in the parent's bucket that would move here
    };
    Node nodes[kMaxNodes];
    unsigned n_nodes = 0;
    nodes[n_nodes++] = {first_bucket(h), -1, 0};
    nodes[n_nodes++] = {second_bucket(h), -1, 0};

    for (unsigned i = 0; i < n_nodes; ++i) {
        LimitBucket &b = buckets_[nodes[i].bucket];
        for (unsigned s = 0; s < kSlotsPerBucket; ++s) {
            if (b.slot[s].tat_ns > now_ns) continue;
            // Free slot found: shift entries along the path, from the end back to the root.
            LimitEntry *free_slot = &b.slot[s];
            if (free_slot->tat_ns != 0)
                ++stats_.reclaims;  // an expired key's slot, reused
            else
                ++stats_.occupancy;
            for (unsigned at = i; nodes[at].parent >= 0; at = nodes[at].parent) {
                LimitEntry *from =
                    &buckets_[nodes[nodes[at].parent].bucket].slot[nodes[at].parent_slot];
                *free_slot = *from;
                free_slot = from;
            }
            free_slot->hash = h;
            free_slot->tat_ns = kReservedTat;
            free_slot->unpublished = 0;
            return free_slot;
        }
        // Every slot live: queue the other bucket of each entry, if there is room to look.
        for (unsigned s = 0; s < kSlotsPerBucket && n_nodes < kMaxNodes; ++s)
            nodes[n_nodes++] = {alternate_bucket(b.slot[s], nodes[i].bucket), static_cast<int>(i),
                                s};
    }
    ++stats_.full_events;
    return nullptr;
}

void LimitTable::sweep(uint64_t now_ns, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        LimitBucket &b = buckets_[sweep_cursor_];
        for (auto &e : b.slot) {
            if (e.tat_ns != 0 && e.tat_ns <= now_ns) {
                e.tat_ns = 0;
                --stats_.occupancy;
                ++stats_.reclaims;
            }
        }
        if (++sweep_cursor_ == n_buckets_) sweep_cursor_ = 0;
    }
}

}  // namespace floodgate
