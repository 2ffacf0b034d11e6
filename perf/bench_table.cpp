// The limiter table against the library way (issue #5), on the same keys in the same order: per
// burst of 32 live keys, a lookup and a rate-limit decision for each.
//   BM_FloodgateTable:  LimitTable (prefetch 16 lookups ahead, acquire, gcra_admit, commit).
//   BM_RteHashRteMeter: rte_hash_lookup_bulk_data, whose data pointer is the key's
//                       rte_meter_srtcm, then rte_meter_srtcm_color_blind_check per packet
//                       against one shared profile, with the TSC read once per burst.
// Time is per burst; bytes_per_key is what the side took from DPDK's heap for n keys, divided
// by n; admitted is the fraction of lookups admitted (1 on both sides: a sanity check that both
// do the same work). This is the measurement behind limit_table.h's choice of its own table.
//
//   build/perf/bench_table
#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_meter.h>

#include <cstddef>
#include <memory>

#include "dataplane/core/gcra.h"
#include "dataplane/core/limit_table.h"
#include "dataplane/pipeline/pipeline.h"
#include "perf/bench_common.h"

namespace floodgate {
namespace {

constexpr uint64_t kIntervalNs = 1000;  // 1M packets/s per key
constexpr uint32_t kBurstPkts = 1u << 20;
constexpr uint32_t kPacketBytes = 64;
const GcraProfile kProfile = gcra_profile(kIntervalNs, kBurstPkts);  // every packet admitted

// rte_hash compares and hashes key_len bytes: the LimitKey fields without its 4 tail bytes of
// padding, whose contents C++ leaves unspecified and which must not decide a match.
constexpr uint32_t kHashKeyBytes = offsetof(LimitKey, tag) + sizeof(LimitKey::tag);
static_assert(kHashKeyBytes == 20);

LimitKey key(uint64_t k) {
    return LimitKey{__builtin_bswap64(0xc612000000000000ull + k), 0, 0x0004};
}
// Lookup order: a permutation of 0..n-1 (n a power of two) per pass.
LimitKey key_at(uint64_t seq, uint64_t n) {
    return key((seq * 2654435761u) & (n - 1));
}
// Insertion order: another permutation, so that rte_hash's key store and the meter array
// (filled in insertion order) are not read sequentially by the lookups, as they would not be
// with real traffic.
LimitKey inserted_key(uint64_t i, uint64_t n) {
    return key((i * 0x9e3779b97f4a7c15ull) & (n - 1));
}

// Bytes allocated from DPDK's heaps, summed over sockets. rte_hash keeps the sizes of its
// buckets, key store and free-slot rings to itself, so the growth of the heap around its
// creation is the only honest measure of its memory; both sides are measured this way.
uint64_t dpdk_heap_bytes() {
    uint64_t bytes = 0;
    for (unsigned i = 0; i < rte_socket_count(); ++i) {
        rte_malloc_socket_stats stats{};
        if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &stats) == 0)
            bytes += stats.heap_allocsz_bytes;
    }
    return bytes;
}

void BM_FloodgateTable(benchmark::State &state) {
    const uint64_t n = static_cast<uint64_t>(state.range(0));
    const uint64_t heap_before = dpdk_heap_bytes();
    // In EAL memory, as in the dataplane and as rte_hash must be: both sides get the same pages
    // (4 KiB under --no-huge), so neither is spared TLB misses the other pays.
    LimitTable table(n, random_hash_seed(), dpdk_table_memory(SOCKET_ID_ANY));
    if (!table.ok()) return state.SkipWithError("cannot allocate the table (EAL memory)");
    const uint64_t table_bytes = dpdk_heap_bytes() - heap_before;
    for (uint64_t i = 0; i < n; ++i) {
        LimitKey k = inserted_key(i, n);
        uint64_t h = table.hash(k), tat;
        table.commit(table.acquire(h, 0, &tat), h, 1);
    }
    LimitKey keys[kMaxBurst];
    uint64_t hashes[kMaxBurst];
    uint64_t seq = 0, now = 1, admitted = 0;
    for (auto _ : state) {
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            keys[i] = key_at(seq++, n);
            hashes[i] = table.hash(keys[i]);
        }
        for (unsigned i = 0; i < kPrefetchAhead; ++i) table.prefetch(hashes[i]);
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            if (i + kPrefetchAhead < kMaxBurst) table.prefetch(hashes[i + kPrefetchAhead]);
            uint64_t tat, next;
            LimitEntry *e = table.acquire(hashes[i], now, &tat);
            if (gcra_admit(kProfile, tat, now, &next)) {
                table.commit(e, hashes[i], next);
                ++admitted;
            }
        }
        now += kMaxBurst;
    }
    const double lookups = static_cast<double>(state.iterations()) * kMaxBurst;
    state.SetItemsProcessed(state.iterations() * kMaxBurst);
    state.counters["bytes_per_key"] = static_cast<double>(table_bytes) / static_cast<double>(n);
    state.counters["admitted"] = static_cast<double>(admitted) / lookups;
}

void BM_RteHashRteMeter(benchmark::State &state) {
    const uint64_t n = static_cast<uint64_t>(state.range(0));

    // The same limit as kProfile, in bytes of 64-byte packets. GCRA admits one packet per
    // interval on average and at most kBurstPkts back to back from idle; an srTCM committed
    // bucket refilled at CIR = 64 bytes per interval and holding CBS = kBurstPkts x 64 bytes
    // admits exactly the same packets. EBS 0 leaves no yellow band: green is admitted, anything
    // else would be refused, as gcra_admit refuses.
    rte_meter_srtcm_params meter_params{};
    meter_params.cir = uint64_t{kPacketBytes} * 1'000'000'000 / kIntervalNs;
    meter_params.cbs = uint64_t{kPacketBytes} * kBurstPkts;
    meter_params.ebs = 0;
    rte_meter_srtcm_profile profile{};
    if (rte_meter_srtcm_profile_config(&profile, &meter_params) != 0)
        return state.SkipWithError("rte_meter_srtcm_profile_config failed");

    const uint64_t heap_before = dpdk_heap_bytes();
    rte_hash_parameters params{};
    params.name = "bench_rte_hash";
    params.entries = static_cast<uint32_t>(n);
    params.key_len = kHashKeyBytes;
    params.hash_func = rte_hash_crc;
    params.hash_func_init_val = 0;
    params.socket_id = SOCKET_ID_ANY;
    // Without extendable buckets a cuckoo table starts refusing inserts short of `entries` (here
    // a power of two, so the main table has exactly n slots); with them all n keys are
    // guaranteed to fit, the promise LimitTable makes for its `entries`. No concurrency flags:
    // one writer, as on a worker core.
    params.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
    std::unique_ptr<rte_hash, void (*)(rte_hash *)> hash(rte_hash_create(&params), rte_hash_free);
    if (!hash) return state.SkipWithError("rte_hash_create failed (EAL memory)");
    // One array for every key's meter, sized up front as an application would, not one
    // allocation per key.
    std::unique_ptr<rte_meter_srtcm, void (*)(void *)> meters(
        static_cast<rte_meter_srtcm *>(rte_zmalloc_socket(
            "bench_meters", n * sizeof(rte_meter_srtcm), RTE_CACHE_LINE_SIZE, SOCKET_ID_ANY)),
        rte_free);
    if (!meters) return state.SkipWithError("cannot allocate the meters (EAL memory)");
    for (uint64_t i = 0; i < n; ++i) {
        LimitKey k = inserted_key(i, n);
        rte_meter_srtcm_config(&meters.get()[i], &profile);
        if (rte_hash_add_key_data(hash.get(), &k, &meters.get()[i]) != 0)
            return state.SkipWithError("rte_hash full");
    }
    const uint64_t table_bytes = dpdk_heap_bytes() - heap_before;

    LimitKey keys[kMaxBurst];
    const void *key_ptrs[kMaxBurst];
    void *data[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) key_ptrs[i] = &keys[i];
    uint64_t seq = 0, admitted = 0, missed = 0;
    for (auto _ : state) {
        for (unsigned i = 0; i < kMaxBurst; ++i) keys[i] = key_at(seq++, n);
        const uint64_t now_tsc = rte_rdtsc();
        uint64_t hit_mask = 0;
        rte_hash_lookup_bulk_data(hash.get(), key_ptrs, kMaxBurst, &hit_mask, data);
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            if (((hit_mask >> i) & 1) == 0) {  // never taken: every key is live
                ++missed;
                continue;
            }
            auto *meter = static_cast<rte_meter_srtcm *>(data[i]);
            if (rte_meter_srtcm_color_blind_check(meter, &profile, now_tsc, kPacketBytes) ==
                RTE_COLOR_GREEN)
                ++admitted;
        }
    }
    if (missed != 0) return state.SkipWithError("rte_hash missed live keys");
    const double lookups = static_cast<double>(state.iterations()) * kMaxBurst;
    state.SetItemsProcessed(state.iterations() * kMaxBurst);
    state.counters["bytes_per_key"] = static_cast<double>(table_bytes) / static_cast<double>(n);
    state.counters["admitted"] = static_cast<double>(admitted) / lookups;
}

// Time is per burst of 32; items_per_second is lookups per second.
BENCHMARK(BM_FloodgateTable)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_RteHashRteMeter)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

}  // namespace
}  // namespace floodgate

int main(int argc, char **argv) {
    // Both sides live in DPDK memory, one benchmark at a time: at 16M keys rte_hash with its
    // meters takes about 1.3 GiB and LimitTable about 0.4 GiB, so 3 GiB leaves room to spare.
    return floodgate::bench::run_with_eal(argc, argv, 3072);
}
