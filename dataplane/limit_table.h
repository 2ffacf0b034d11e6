// Per-core limiter state: one GCRA TAT per (rule, source key), in a fixed-capacity bucketized
// cuckoo hash table. Written by exactly one core, so there are no locks or atomics.
//
// Why not rte_hash: its hash functions (CRC32, jhash) with a seed are not keyed in a way that
// stops an attacker choosing colliding sources (CRC collisions do not depend on the seed), it
// keeps keys and a separate data pointer in two places (two cache misses, more bytes per key),
// and it cannot treat an expired TAT as a free slot, which is how this table reclaims
// millions of one-packet spoofed sources without a delete per key. perf/bench_table.cpp runs
// both on the same keys (lookup plus TAT update, bursts of 32): on the project's 2-core VM this
// table took 203 ns per burst against rte_hash's 481 at 1K keys, and the two were within the
// machine's noise of each other at 1M (748 vs 784) and 16M keys (1.3-1.8 us vs 1.3-2.8 us),
// at 35 bytes per key against rte_hash's ~45.
//
// Layout: 128-byte buckets of four 32-byte entries; each key may live in one of two buckets
// (two choices from one keyed hash), so a lookup touches at most two buckets, which are
// prefetched ahead of use (Pipeline::decide). Insertion moves entries along a short cuckoo
// path when both buckets are full; 10% spare slots let the configured number of keys fit
// (tests/test_limit_table.cpp checks it over many seeds).
#pragma once

#include <rte_prefetch.h>

#include <cstdint>
#include <cstring>

#include "dataplane/keyed_hash.h"

namespace floodgate {

// A rule's view of a source: the address masked to the rule's prefix length, plus which rule
// and family it belongs to (the same address under two rules is two independent keys).
struct LimitKey {
    uint64_t addr_hi;  // address bytes 0-7, as loaded from memory (host order of raw bytes)
    uint64_t addr_lo;  // address bytes 8-15
    uint32_t tag;      // the rule's RuleState::key_id << 8 | IP family
};

struct LimitEntry {
    uint64_t addr_hi;
    uint64_t addr_lo;
    // Theoretical arrival time. 0: free. <= now: expired, exactly equivalent to an absent
    // key, so the slot is free for any key. kReservedTat: claimed for a key whose packet is
    // being decided (see LimitTable::acquire).
    uint64_t tat_ns;
    uint32_t tag;
    // Packets this core admitted for the key since it last published its consumption to the
    // other cores (Pipeline::publish); moves with the entry.
    uint32_t unpublished;

    bool holds(const LimitKey &k) const {
        return ((addr_hi ^ k.addr_hi) | (addr_lo ^ k.addr_lo) | (tag ^ k.tag)) == 0;
    }
};
static_assert(sizeof(LimitEntry) == 32, "the README documents 32 bytes per entry");

inline constexpr unsigned kSlotsPerBucket = 4;
inline constexpr uint64_t kReservedTat = UINT64_MAX;

struct alignas(128) LimitBucket {
    LimitEntry slot[kSlotsPerBucket];
};
static_assert(sizeof(LimitBucket) == 128);

struct LimitTableStats {
    uint64_t occupancy = 0;    // slots holding a TAT (live, reserved, or expired not yet swept)
    uint64_t reclaims = 0;     // expired entries cleared by the sweep or reused by an insert
    uint64_t full_events = 0;  // inserts refused because both buckets and every path were live
};

// Where the table's memory comes from: rte_zmalloc_socket in the dataplane, the heap in tests.
struct TableMemory {
    void *(*alloc)(size_t bytes, void *ctx) = nullptr;  // must return 128-byte aligned, zeroed
    void (*free)(void *p, void *ctx) = nullptr;
    void *ctx = nullptr;
};
TableMemory heap_table_memory();

class LimitTable {
  public:
    // Sizes the table so that `entries` live keys fit (plus 10% spare slots for cuckoo paths).
    LimitTable(uint64_t entries, const HashSeed &seed, TableMemory mem = heap_table_memory());
    ~LimitTable();
    LimitTable(const LimitTable &) = delete;
    LimitTable &operator=(const LimitTable &) = delete;

    bool ok() const { return buckets_ != nullptr; }
    static uint64_t bytes_for(uint64_t entries);

    uint64_t hash(const LimitKey &k) const {
        return keyed_hash(seed_, k.addr_hi, k.addr_lo, k.tag);
    }

    // rte_prefetch0 is an asm volatile: GCC's pure-function analysis silently deletes calls
    // to a helper made only of __builtin_prefetch (measured: 188 ns/packet at 1M keys without
    // any prefetch instruction in the binary).
    void prefetch(uint64_t h) const {
        const char *a = reinterpret_cast<const char *>(&buckets_[first_bucket(h)]);
        const char *b = reinterpret_cast<const char *>(&buckets_[second_bucket(h)]);
        rte_prefetch0(a);
        rte_prefetch0(a + 64);
        rte_prefetch0(b);
        rte_prefetch0(b + 64);
    }

    // The entry holding k, or nullptr.
    LimitEntry *find(const LimitKey &k, uint64_t h) {
        LimitBucket *a = &buckets_[first_bucket(h)];
        for (auto &e : a->slot)
            if (e.holds(k)) return &e;
        LimitBucket *b = &buckets_[second_bucket(h)];
        for (auto &e : b->slot)
            if (e.holds(k)) return &e;
        return nullptr;
    }

    // The slot of k at now_ns, for a check-then-commit decision. A live key's slot comes back
    // with *tat_ns set to its TAT. A key that is absent or expired gets a slot reserved for it
    // (moving live entries along a cuckoo path if needed) and *tat_ns = 0: the reservation
    // counts as live for every other insert, so several rules of one packet can never claim
    // the same free slot, until commit() or release() ends it. Returns nullptr when every
    // candidate slot is live: live entries are never evicted.
    LimitEntry *acquire(const LimitKey &k, uint64_t h, uint64_t now_ns, uint64_t *tat_ns) {
        LimitEntry *e = find(k, h);
        if (e != nullptr && e->tat_ns > now_ns) {
            *tat_ns = e->tat_ns;
            return e;
        }
        *tat_ns = 0;
        if (e == nullptr) return insert(k, h, now_ns);
        stats_.occupancy += e->tat_ns == 0;
        e->tat_ns = kReservedTat;
        return e;
    }

    // Stores k's new TAT in e (from acquire) and returns where k now is. A later acquire for
    // the same packet may have moved e along a cuckoo path, so it is looked up again when it
    // no longer holds k.
    LimitEntry *commit(LimitEntry *e, const LimitKey &k, uint64_t h, uint64_t tat_ns) {
        if (!e->holds(k)) [[unlikely]]
            e = find(k, h);
        e->tat_ns = tat_ns;
        return e;
    }

    // Gives back a reservation whose packet stored nothing (it was refused): the key is again
    // exactly as absent as before.
    void release(LimitEntry *e, const LimitKey &k, uint64_t h) {
        if (!e->holds(k)) [[unlikely]]
            e = find(k, h);
        if (e->tat_ns != kReservedTat) return;
        e->tat_ns = 0;
        --stats_.occupancy;
    }

    // Clears expired entries in the next n_buckets buckets (round robin), so that occupancy
    // tracks live keys even where no insert happens to reuse the slots.
    void sweep(uint64_t now_ns, uint32_t n_buckets);

    const LimitTableStats &stats() const { return stats_; }
    uint64_t capacity() const { return capacity_; }
    uint64_t slots() const { return n_buckets_ * kSlotsPerBucket; }

  private:
    // Maps 32 hash bits onto [0, n_buckets) without a division (Lemire's fast range).
    uint64_t first_bucket(uint64_t h) const {
        return (static_cast<uint64_t>(static_cast<uint32_t>(h)) * n_buckets_) >> 32;
    }
    uint64_t second_bucket(uint64_t h) const {
        uint64_t a = first_bucket(h);
        uint64_t b = ((h >> 32) * n_buckets_) >> 32;
        return b != a ? b : (a + 1 == n_buckets_ ? 0 : a + 1);
    }
    uint64_t alternate_bucket(const LimitEntry &e, uint64_t current) const;
    // Reserves a free slot for k (absent) at now_ns; see acquire().
    LimitEntry *insert(const LimitKey &k, uint64_t h, uint64_t now_ns);

    LimitBucket *buckets_ = nullptr;
    uint64_t n_buckets_ = 0;
    uint64_t capacity_ = 0;
    uint64_t sweep_cursor_ = 0;
    HashSeed seed_;
    TableMemory mem_;
    LimitTableStats stats_;
};

}  // namespace floodgate
