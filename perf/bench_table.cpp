// The limiter table against the library way, on the same keys: a burst of 32 lookups of live
// keys plus the GCRA update, with LimitTable (prefetch 16 lookups ahead, find, commit) and with
// DPDK's rte_hash (rte_hash_lookup_bulk_data, the TAT kept in the data pointer).
// This is the measurement behind limit_table.h's choice of its own table.
//
//   build/perf/bench_table
#include <benchmark/benchmark.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>

#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/eal.h"
#include "dataplane/gcra.h"
#include "dataplane/limit_table.h"
#include "dataplane/pipeline.h"

namespace floodgate {
namespace {

constexpr uint64_t kIntervalNs = 1000;
const GcraProfile kProfile = gcra_profile(kIntervalNs, 1u << 20);  // every packet admitted

LimitKey key(uint64_t k) {
    return LimitKey{__builtin_bswap64(0xc612000000000000ull + k), 0, 0x0004};
}
// Lookup order: a permutation of 0..n-1 (n a power of two) per pass.
LimitKey key_at(uint64_t seq, uint64_t n) {
    return key((seq * 2654435761u) & (n - 1));
}
// Insertion order: another permutation, so that rte_hash's key store (filled in insertion
// order) is not read sequentially by the lookups, as it would not be with real traffic.
LimitKey inserted_key(uint64_t i, uint64_t n) {
    return key((i * 0x9e3779b97f4a7c15ull) & (n - 1));
}

void BM_LimitTable(benchmark::State &state) {
    const uint64_t n = static_cast<uint64_t>(state.range(0));
    LimitTable table(n, random_hash_seed());
    if (!table.ok()) return state.SkipWithError("cannot allocate the table");
    for (uint64_t i = 0; i < n; ++i) {
        LimitKey k = inserted_key(i, n);
        uint64_t h = table.hash(k), tat;
        table.commit(table.acquire(k, h, 0, &tat), k, h, 1);
    }
    LimitKey keys[kMaxBurst];
    uint64_t hashes[kMaxBurst];
    uint64_t seq = 0, now = 1;
    for (auto _ : state) {
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            keys[i] = key_at(seq++, n);
            hashes[i] = table.hash(keys[i]);
        }
        for (unsigned i = 0; i < kPrefetchAhead; ++i) table.prefetch(hashes[i]);
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            if (i + kPrefetchAhead < kMaxBurst) table.prefetch(hashes[i + kPrefetchAhead]);
            uint64_t tat, next;
            LimitEntry *e = table.acquire(keys[i], hashes[i], now, &tat);
            if (gcra_admit(kProfile, tat, now, &next)) table.commit(e, keys[i], hashes[i], next);
        }
        now += kMaxBurst;
    }
    state.SetItemsProcessed(state.iterations() * kMaxBurst);
}

void BM_RteHash(benchmark::State &state) {
    const uint64_t n = static_cast<uint64_t>(state.range(0));
    rte_hash_parameters params{};
    params.name = "bench_rte_hash";
    params.entries = static_cast<uint32_t>(n + n / 8);  // rte_hash also needs headroom
    params.key_len = sizeof(LimitKey);
    params.hash_func = rte_hash_crc;
    params.socket_id = SOCKET_ID_ANY;
    std::unique_ptr<rte_hash, void (*)(rte_hash *)> hash(rte_hash_create(&params), rte_hash_free);
    if (!hash) return state.SkipWithError("rte_hash_create failed (EAL memory)");
    for (uint64_t i = 0; i < n; ++i) {
        LimitKey k = inserted_key(i, n);
        if (rte_hash_add_key_data(hash.get(), &k, reinterpret_cast<void *>(uintptr_t{1})) != 0)
            return state.SkipWithError("rte_hash full");
    }
    LimitKey keys[kMaxBurst];
    const void *key_ptrs[kMaxBurst];
    void *data[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) key_ptrs[i] = &keys[i];
    uint64_t seq = 0, now = 1;
    for (auto _ : state) {
        for (unsigned i = 0; i < kMaxBurst; ++i) keys[i] = key_at(seq++, n);
        uint64_t hits = 0;
        rte_hash_lookup_bulk_data(hash.get(), key_ptrs, kMaxBurst, &hits, data);
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            uint64_t next;
            auto tat = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data[i]));
            // Storing the new TAT needs a second call with the key (rte_hash has no in-place
            // data update through a lookup): the library way pays another hash and probe.
            if (gcra_admit(kProfile, tat, now, &next))
                rte_hash_add_key_data(hash.get(), &keys[i],
                                      reinterpret_cast<void *>(uintptr_t{next}));
        }
        benchmark::DoNotOptimize(hits);
        now += kMaxBurst;
    }
    state.SetItemsProcessed(state.iterations() * kMaxBurst);
}

// Time is per burst of 32; items_per_second is lookups per second.
BENCHMARK(BM_LimitTable)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_RteHash)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

}  // namespace
}  // namespace floodgate

int main(int argc, char **argv) {
    // rte_hash lives in DPDK memory: 3 GiB of anonymous memory covers 16M keys.
    floodgate::Eal eal(floodgate::offline_eal_args(3072));
    if (!eal.ok()) {
        std::fprintf(stderr, "%s\n", eal.error().c_str());
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
