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

    for (unsigned i = 0; i < n_nodes; ++i) {
        LimitBucket &b = buckets_[nodes[i].bucket];
        for (unsigned s = 0; s < kSlotsPerBucket; ++s) {
            if (b.slot[s].tat_ns > now_ns) continue;
            // Free slot found: shift entries along the path, from the end back to the root.
            LimitEntry *free_slot = &b.slot[s];
            if (free_slot->tat_ns != 0) {
                ++stats_.reclaims;  // an expired key's slot, reused
                vacate(*free_slot, nodes[i].bucket);
            } else {
                ++stats_.occupancy;
            }
            unsigned at = i;
            for (; nodes[at].parent >= 0; at = nodes[at].parent) {
                const uint64_t from_bucket = nodes[nodes[at].parent].bucket;
                LimitEntry *from = &buckets_[from_bucket].slot[nodes[at].parent_slot];
                vacate(*from, from_bucket);
                settle(*from, nodes[at].bucket);
                *free_slot = *from;
                free_slot = from;
            }
            free_slot->hash = h;
            free_slot->tat_ns = kReservedTat;
            free_slot->unpublished = 0;
            settle(*free_slot, nodes[at].bucket);
            return free_slot;
        }
        // Every slot live: queue the other bucket of each entry, if there is room to look.
        // Below the first bucket, its guests' own first buckets come before the key's second
        // bucket: sending a guest home keeps the new key home too (one line per lookup).
        const auto queue_moves = [&](bool guests) {
            for (unsigned s = 0; s < kSlotsPerBucket && n_nodes < kMaxNodes; ++s) {
                const bool guest = first_bucket(b.slot[s].hash) != nodes[i].bucket;
                if (i == 0 && guest != guests) continue;
                nodes[n_nodes++] = {alternate_bucket(b.slot[s], nodes[i].bucket),
                                    static_cast<int>(i), s};
            }
        };
        queue_moves(true);
        if (i == 0) {
            nodes[n_nodes++] = {second_bucket(h), -1, 0};
            queue_moves(false);
        }
    }
    ++stats_.full_events;
    return nullptr;
}

void LimitTable::sweep(uint64_t now_ns, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        LimitBucket &b = buckets_[sweep_cursor_];
        for (auto &e : b.slot) {
            if (e.tat_ns != 0 && e.tat_ns <= now_ns) {
                vacate(e, sweep_cursor_);
                e.tat_ns = 0;
                --stats_.occupancy;
                ++stats_.reclaims;
            }
        }
        if (++sweep_cursor_ == n_buckets_) sweep_cursor_ = 0;
    }
}

uint64_t LimitTable::keys_away() const {
    uint64_t away = 0;
    for (uint64_t i = 0; i < n_buckets_; ++i)
        for (const auto &e : buckets_[i].slot)
            if (e.tat_ns != 0 && first_bucket(e.hash) != i) ++away;
    return away;
}

}  // namespace floodgate
