// What the perf/ benchmarks share: the rules and the core (dataplane/pipeline/core_parts.h) a
// benchmark decides with, the sources it cycles through and its timed loop (one iteration per
// packet), so that their figures compare; and main() for those that need DPDK memory
// (run_with_eal).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>  // no-ops outside valgrind
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#include "dataplane/pipeline/core_parts.h"
#include "dataplane/pipeline/eal.h"

namespace floodgate::bench {

// Virtual clock step: with T = 60 s every key stays live for the whole run.
inline constexpr uint64_t kNsPerPacket = 1;

// The seeds of a benchmark's cores: a secret table seed as live, the proxy's and the cookie
// key fixed (the values replay uses).
inline CoreSeeds bench_seeds() {
    return {random_hash_seed(), HashSeed{{9, 8, 7, 6}},
            CookieKey{0x243f6a8885a308d3ull, 0x13198a2e03707344ull}};
}

// What a benchmark decides with: its rules and one core (table, pipeline, syn-proxy's table).
struct Bench {
    std::unique_ptr<RuleSet> rules;
    std::unique_ptr<CoreParts> core;
    Pipeline &pipeline() { return core->pipeline(); }
    const LimitTable &table() const { return core->table(); }
};

// False, with the benchmark skipped, when the rules or the tables cannot be made. table_entries
// is the limit table's size; cores, how many pipelines will decide with the rules;
// proxy_connections, the size of syn-proxy's connection table (0: none; DPDK memory).
inline bool make_bench(benchmark::State &state, const Config &config, uint64_t table_entries,
                       Bench *b, unsigned cores = 1, uint32_t proxy_connections = 0) {
    std::string error;
    RuleSetOptions o;
    o.cores = cores;
    b->rules = RuleSet::build(config, o, &error);
    if (!b->rules) {
        state.SkipWithError(error.c_str());
        return false;
    }
    CoreSizes sizes = core_sizes(config, false);
    sizes.table_entries = table_entries;
    sizes.proxy_connections = proxy_connections;
    b->core = std::make_unique<CoreParts>(b->rules.get(), sizes, bench_seeds(), CoreMemory{});
    if (b->core->missing() != CoreParts::Missing::nothing) {
        state.SkipWithError(b->core->missing() == CoreParts::Missing::limit_table
                                ? "cannot allocate the table"
                                : "cannot create the connection table");
        return false;
    }
    return true;
}

// Bursts decided the way a worker decides them (worker.cpp): each is prepared (stage 1) as it
// arrives and decided once the next one is prepared, so that the next one's table misses are
// served during its verdicts. The caller fills its frames in slot() and calls step(); two sets
// of frames alternate.
class Pipelined {
  public:
    explicit Pipelined(Pipeline *pipeline) : pipeline_(pipeline) {}
    unsigned slot() const { return next_; }
    // Prepares slot()'s burst; decides the one before it, if any, into verdicts and returns its
    // slot (-1 for the first burst, which has none before it).
    int step(const uint8_t *const *frames, const uint32_t *lens, const uint64_t *now_ns,
             Verdict *verdicts) {
        pipeline_->prepare(frames, lens, kMaxBurst, now_ns);
        next_ ^= 1;
        if (pipeline_->prepared() < 2) return -1;
        pipeline_->decide_prepared(verdicts);
        return static_cast<int>(next_);  // the older of the two
    }

  private:
    Pipeline *pipeline_;
    unsigned next_ = 0;
};

// The key of the seq-th packet among `keys` (a power of two): an odd multiplier modulo keys
// makes each pass a permutation of the keys, so the table sees its whole working set.
inline uint32_t key_of(uint64_t seq, uint64_t keys) {
    return static_cast<uint32_t>((seq * 2654435761u) & (keys - 1));
}

// Its IPv4 source, in network order, in memory only and never sent (16M distinct sources need
// more than 198.18.0.0/15): 10.0.0.0 + the key.
inline uint32_t source_addr(uint64_t seq, uint64_t keys) {
    return __builtin_bswap32(0x0a000000u + key_of(seq, keys));
}

// The timed loop: one iteration is one packet (a burst every kMaxBurst iterations), so the
// reported Time is nanoseconds per packet and items_per_second is packets per second. Under
// callgrind run with --instr-atstart=no (perf/callgrind_breakdown.py) only this loop is counted,
// not the warm-up before it.
template <typename RunBurst>
void time_per_packet(benchmark::State &state, const RunBurst &run_burst, Verdict *verdicts) {
    CALLGRIND_START_INSTRUMENTATION;
    unsigned in_burst = 0;
    for (auto _ : state) {
        if (++in_burst == kMaxBurst) {
            run_burst();
            benchmark::DoNotOptimize(verdicts);
            in_burst = 0;
        }
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    state.SetItemsProcessed(state.iterations());
}

// main() of a benchmark binary that needs DPDK memory: an EAL with eal_mb of it (no hugepages),
// then every benchmark; release, when given, frees what the benchmarks kept between runs while
// the EAL still holds their DPDK memory.
inline int run_with_eal(int argc, char **argv, unsigned eal_mb, void (*release)() = nullptr) {
    benchmark::Initialize(&argc, argv);
    Eal eal(offline_eal_args(eal_mb));
    if (!eal.ok()) {
        std::fprintf(stderr, "%s\n", eal.error().c_str());
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    if (release != nullptr) release();
    benchmark::Shutdown();
    return 0;
}

}  // namespace floodgate::bench
