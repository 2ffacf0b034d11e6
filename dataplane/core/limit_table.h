// Per-core limiter state: one GCRA TAT per (rule, source key), in a fixed-capacity bucketized
// cuckoo hash table. Written by exactly one core, so there are no locks or atomics.
//
// Why not rte_hash: its hash functions (CRC32, jhash) with a seed are not keyed in a way that
// stops an attacker choosing colliding sources (CRC collisions do not depend on the seed), it
// keeps keys and a separate data pointer in two places (two cache misses, more bytes per key),
// and it cannot treat an expired TAT as a free slot, which is how this table reclaims
// millions of one-packet spoofed sources without a delete per key. perf/bench_table.cpp runs
// both on the same keys (lookup plus limiter update, bursts of 32), with rte_hash carrying an
// rte_meter per key as the library way would.
//
// Layout: one 64-byte cache line per bucket, three 20-byte entries in it. An entry holds the
// key's 64-bit keyed hash instead of the key: the hash picks the key's two buckets and
// identifies it within them, so a lookup touches at most two cache lines, prefetched ahead of
// use (Pipeline::decide), and moving an entry along a cuckoo path needs no rehash. Two live
// keys with the same 64-bit hash would share a TAT: among 16 million live keys that happens
// with probability 2^48 / 2^65 (under 1 in 100,000), and since the hash is keyed an attacker
// cannot aim for it. 64 / 3 bytes per slot plus 15% spare slots is 24.5 bytes per configured
// key.
#pragma once

#include <rte_prefetch.h>

#include <cstdint>
#include <cstring>

#include "dataplane/core/gcra.h"
#include "dataplane/core/keyed_hash.h"

namespace floodgate {

// A rule's view of a source: the address masked to the rule's prefix length, plus which rule
// and family it belongs to (the same address under two rules is two independent keys). The
// table sees only its hash (LimitTable::hash).
struct LimitKey {
    uint64_t addr_hi;  // address bytes 0-7, as loaded from memory (host order of raw bytes)
    uint64_t addr_lo;  // address bytes 8-15
    uint32_t tag;      // the rule's RuleState::key_id << 8 | IP family
};

struct [[gnu::packed]] LimitEntry {
    uint64_t hash;  // LimitTable::hash of the key
    // Theoretical arrival time. 0: free. <= now: expired, exactly equivalent to an absent
    // key, so the slot is free for any key. kReservedTat: claimed for a key whose packet is
    // being decided (see LimitTable::acquire).
    uint64_t tat_ns;
    // Packets this core admitted for the key since it last published its consumption to the
    // other cores (Pipeline::publish); moves with the entry.
    uint32_t unpublished;
};
static_assert(sizeof(LimitEntry) == 20);

inline constexpr unsigned kSlotsPerBucket = 3;
inline constexpr uint64_t kReservedTat = UINT64_MAX;
static_assert(kReservedTat > kMaxTatNs, "a saturated TAT is never taken for a reservation");

struct alignas(64) LimitBucket {
    LimitEntry slot[kSlotsPerBucket];
};
static_assert(sizeof(LimitBucket) == 64, "one cache line per bucket");

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
    // Sizes the table so that `entries` live keys fit (plus 15% spare slots for cuckoo paths).
    LimitTable(uint64_t entries, const HashSeed &seed, TableMemory mem = heap_table_memory());
    ~LimitTable();
    LimitTable(const LimitTable &) = delete;
    LimitTable &operator=(const LimitTable &) = delete;

    bool ok() const { return buckets_ != nullptr; }
    static uint64_t bytes_for(uint64_t entries);

    // Everything below identifies a key by this.
    uint64_t hash(const LimitKey &k) const {
        return keyed_hash(seed_, k.addr_hi, k.addr_lo, k.tag);
    }

    // rte_prefetch0 is an asm volatile: GCC's pure-function analysis silently deletes calls
    // to a helper made only of __builtin_prefetch, which leaves no prefetch instruction in the
    // binary (timed per packet at 1M keys: perf/results/notes.md).
    void prefetch(uint64_t h) const {
        rte_prefetch0(&buckets_[first_bucket(h)]);
        rte_prefetch0(&buckets_[second_bucket(h)]);
    }

    // The entry holding the key of hash h (free or not), or nullptr.
    LimitEntry *find(uint64_t h) {
        LimitBucket *a = &buckets_[first_bucket(h)];
        for (auto &e : a->slot)
            if (e.hash == h && e.tat_ns != 0) return &e;
        LimitBucket *b = &buckets_[second_bucket(h)];
        for (auto &e : b->slot)
            if (e.hash == h && e.tat_ns != 0) return &e;
        return nullptr;
    }

    // The slot of k at now_ns, for a check-then-commit decision. A live key's slot comes back
    // with *tat_ns set to its TAT. A key that is absent or expired gets a slot reserved for it
    // (moving live entries along a cuckoo path if needed) and *tat_ns = 0: the reservation
    // counts as live for every other insert, so several rules of one packet can never claim
    // the same free slot, until commit() or release() ends it. Returns nullptr when every
    // candidate slot is live: live entries are never evicted.
    LimitEntry *acquire(uint64_t h, uint64_t now_ns, uint64_t *tat_ns) {
        LimitEntry *e = find(h);
        if (e != nullptr && e->tat_ns > now_ns) {
            *tat_ns = e->tat_ns;
            return e;
        }
        *tat_ns = 0;
        if (e == nullptr) return insert(h, now_ns);
        e->tat_ns = kReservedTat;  // expired: reserved in place (find skips free slots)
        return e;
    }

    // Stores the key's new TAT in e (from acquire) and returns where the key now is. A later
    // acquire for the same packet may have moved e along a cuckoo path, so it is looked up again
    // when it no longer holds the key.
    LimitEntry *commit(LimitEntry *e, uint64_t h, uint64_t tat_ns) {
        if (e->hash != h) [[unlikely]]
            e = find(h);
        e->tat_ns = tat_ns;
        return e;
    }

    // Gives back a reservation whose packet stored nothing (it was refused): the key is again
    // exactly as absent as before.
    void release(LimitEntry *e, uint64_t h) {
        if (e->hash != h) [[unlikely]]
            e = find(h);
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
    uint64_t alternate_bucket(const LimitEntry &e, uint64_t current) const {
        uint64_t a = first_bucket(e.hash);
        return a == current ? second_bucket(e.hash) : a;
    }
    // Reserves a free slot for the key of hash h (absent) at now_ns; see acquire().
    LimitEntry *insert(uint64_t h, uint64_t now_ns);

    LimitBucket *buckets_ = nullptr;
    uint64_t n_buckets_ = 0;
    uint64_t capacity_ = 0;
    uint64_t sweep_cursor_ = 0;
    HashSeed seed_;
    TableMemory mem_;
    LimitTableStats stats_;
};

}  // namespace floodgate
