// Per-packet decision cost: parse + key + GCRA + verdict, through Pipeline::decide() on bursts
// of 32, with 1 thousand, 1 million and 16 million distinct live sources. Each burst's frames
// get fresh source addresses written into a template (as a NIC's DMA would leave them), in an
// order that visits every key once per pass, so the table sees its full working set.
//
// BM_DecideWithSourceList measures the same with the rule's match holding a src list of 0, 1
// or 100,000 prefixes (which the RuleSet compiles into its source prefix table), at 1M keys.
//
//   build/perf/bench_decision --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "dataplane/eal.h"
#include "dataplane/pipeline.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr uint64_t kNsPerPacket = 1;  // virtual clock step: keys (T = 60 s) all stay live

// admit: every packet passes (burst 2^20, so no key runs out within the run) and commits a
// new TAT. refuse: burst 1, so after the warm-up every packet is refused (a flood from every
// key), which also feeds the top-offenders summary.
enum Regime : int64_t { kAdmit = 0, kRefuse = 1 };

// prefixes: how many the rule's src list holds. 1 is 10.0.0.0/8, which holds every source;
// 100,000 are the 65,536 /24s of 10.0.0.0/8 and 34,464 /32s of 11.0.0.0/8 that no source hits.
Config bench_config(uint64_t keys, Regime regime, unsigned prefixes = 0) {
    Config c;
    c.table_entries_per_core = keys;
    Rule r;
    auto add = [&](uint32_t addr, uint8_t len) {
        Prefix p;
        p.family = 4;
        p.len = len;
        p.addr[0] = addr >> 24, p.addr[1] = addr >> 16 & 0xff, p.addr[2] = addr >> 8 & 0xff;
        p.addr[3] = addr & 0xff;
        r.match.src.push_back(p);
    };
    if (prefixes == 1) add(0x0a000000u, 8);
    for (uint32_t i = 0; prefixes > 1 && i < prefixes; ++i)
        i < 65536 ? add(0x0a000000u + (i << 8), 24) : add(0x0b000000u + i, 32);
    r.name = "all";
    r.rate_count = 1;
    r.rate_period_ns = 60ull * 1000000000;  // 1/min: every key stays live for the whole run
    r.burst_pkts = regime == kAdmit ? kMaxBurstPkts : 1;
    c.rules.push_back(r);
    return c;
}

void decide(benchmark::State &state, uint64_t keys, Regime regime, unsigned prefixes) {
    Config config = bench_config(keys, regime, prefixes);
    std::string error;
    std::unique_ptr<RuleSet> rules = RuleSet::build(config, -1, &error);
    if (!rules) {
        state.SkipWithError(error.c_str());
        return;
    }
    LimitTable table(keys, random_hash_seed());
    if (!table.ok()) {
        state.SkipWithError("cannot allocate the table");
        return;
    }
    Pipeline pipeline(rules.get(), &table);

    test::Frame tmpl = test::PacketBuilder()
                           .ipv4("198.18.0.1", "198.18.255.1")
                           .udp(40000, 53)
                           .payload(18)
                           .build();  // 64 bytes on the wire
    const size_t src_offset = 14 + 12;
    std::vector<test::Frame> frames(kMaxBurst, tmpl);
    const uint8_t *ptrs[kMaxBurst];
    uint32_t lens[kMaxBurst];
    uint64_t now[kMaxBurst];
    Verdict verdicts[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) {
        ptrs[i] = frames[i].data();
        lens[i] = static_cast<uint32_t>(frames[i].size());
    }

    uint64_t seq = 0, clock = 1;
    auto run_burst = [&] {
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            // Odd multiplier modulo a power of two: a permutation of the keys per pass.
            uint32_t key = static_cast<uint32_t>((seq * 2654435761u) & (keys - 1));
            // In memory only, never sent: 16M distinct sources need more than 198.18.0.0/15.
            uint32_t addr = __builtin_bswap32(0x0a000000u + key);
            std::memcpy(frames[i].data() + src_offset, &addr, 4);
            now[i] = clock;
            clock += kNsPerPacket;
        }
        pipeline.decide(ptrs, lens, kMaxBurst, now, verdicts);
    };
    // Warm-up pass: every key inserted once, so the timed loop measures a full table.
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) run_burst();

    // One iteration is one packet (a burst every kMaxBurst iterations), so the reported Time is
    // nanoseconds per packet and items_per_second is packets per second.
    unsigned in_burst = 0;
    for (auto _ : state) {
        if (++in_burst == kMaxBurst) {
            run_burst();
            benchmark::DoNotOptimize(verdicts);
            in_burst = 0;
        }
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["keys_live"] = static_cast<double>(table.stats().occupancy);
    state.counters["table_MiB"] = static_cast<double>(LimitTable::bytes_for(keys)) / (1 << 20);
}

void BM_Decide(benchmark::State &state) {
    decide(state, static_cast<uint64_t>(state.range(0)), static_cast<Regime>(state.range(1)), 0);
}
void BM_DecideWithSourceList(benchmark::State &state) {
    decide(state, 1 << 20, kAdmit, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_DecideWithSourceList)
    ->ArgName("prefixes")
    ->Arg(0)
    ->Arg(1)
    ->Arg(100000)
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();
BENCHMARK(BM_Decide)
    ->ArgNames({"keys", "refuse"})
    ->ArgsProduct({{1 << 10, 1 << 20, 1 << 24}, {kAdmit, kRefuse}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

}  // namespace
}  // namespace floodgate

// The EAL, for the prefix tables (DPDK memory, no hugepages needed).
int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    floodgate::Eal eal(floodgate::offline_eal_args(1024));
    if (!eal.ok()) {
        std::fprintf(stderr, "%s\n", eal.error().c_str());
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
