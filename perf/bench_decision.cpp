// Per-packet decision cost: parse + key + GCRA + verdict, through the Pipeline on bursts of 32
// pipelined as a worker decides them (bench::Pipelined), with 1 thousand, 1 million and 16 million
// distinct live sources. Each burst's frames get fresh source addresses written into a template (as
// a NIC's DMA would leave them), in an order that visits every key once per pass, so the table sees
// its full working set.
//
// BM_DecideWithSourceList measures the same with the rule's match holding a src list of 0, 1
// or 100,000 prefixes (which the RuleSet compiles into its source prefix table), at 1M keys.
//
// BM_DecideAggregate: the same 1M sources all toward one destination, under a per-source rule
// (rules 0, the baseline: BM_Decide's), an aggregate rule (key dst, default reserve) alone
// (rules 1), both (rules 2) or none (rules 3: the path before any decision, case 1's I/O floor's
// share of the pipeline). refuse: the aggregate rule (or, alone, the per-source one)
// refuses every packet, so each refusal also looks up its source's trust class.
//
// BM_SynFlood: a SYN flood from 1,048,576 random sources (each once per pass), every SYN
// refused by one rule, in three regimes: copy (each frame restored from its template and given
// its source, nothing decided: the cost the other two share), drop (a drop rule, burst 1 and
// 1/min, every source pre-warmed, so every SYN is refused and dropped) and answer (a syn-auth
// rule with both answer caps at 10^9/s, burst 2^20: every SYN answered, its SYN-ACK cookie
// built by build_answer in the frame), and proxy (the same with action syn-proxy: its SYN-ACK
// carries a cookie of the SYN's options and answers them; a connection table of 65,536, empty,
// as during a spoofed flood). options: the SYN bare (54 bytes, padded to 60) or with Linux's 20
// bytes of options (MSS, SACK-permitted, timestamps, window scale), which syn-proxy reads and
// answers. answered/refused count the verdicts of the timed loop.
//
// BM_Shape: action shape against the same rule with action drop (a per-source rule, burst 1),
// on traffic over the limit, at 1,024 and 1,048,576 keys, at 100 ns a packet (10 Mpps on one
// core). The keys come in turns of G (K/16, at most 4,096): a turn sends each of its keys 8
// packets, G apart, and the rule's T is the turn's length, so that the drop rule refuses 7 of
// each key's 8 (the first admitted) and the shape rule delays those 7, releasing them T apart;
// the key's queue (bound 8 packets) is empty again long before its next turn (K/G turns
// later), so the wheel is at a steady state: held as fast as released, none dropped (about
// 28 G packets held; capacity 64 G). The shaped case pays what a live worker pays
// (worker.cpp): decide, hold() for each delay, and release(now, whole slots) after each burst
// (up to four bursts of released packets, as release_held). delayed/shaped/refused/passed:
// per packet of the timed loop; held: packets waiting at its end.
//
// BM_SynAdaptive: an aggregate SYN rule (key dst, "syn !ack", port 80) with limit.adaptive
// (min, max, target) against the same rule without it, on SYNs from 1,048,576 sources to one
// destination; tick() once a burst in both, as the worker's loop pass. admit: rate 10^9/s,
// burst 2^20, every SYN admitted, so each starts (or finds busy) a connection sample; flood:
// 10,000/s, burst 100, nearly every SYN refused. The sample table (1,024 slots, freed after 3 s
// idle) is full after the warm-up, as it is after the first second of a flood:
// slots_busy per packet counts the admitted SYNs that found their slot taken.
//
//   build/perf/bench_decision --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <rte_memory.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "dataplane/answer/answer.h"
#include "dataplane/pipeline/pipeline.h"
#include "perf/bench_common.h"
#include "perf/bench_decision_mixes.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

using bench::Bench;
using bench::kNsPerPacket;
using bench::make_bench;
using bench::source_addr;
using bench::time_per_packet;
using namespace bench::mixes;

void decide(benchmark::State &state, uint64_t keys, Regime regime, unsigned prefixes,
            Rules rules = kPerSource) {
    Bench bench;
    if (!make_bench(state, bench_config(keys, regime, prefixes, rules), keys, &bench)) return;
    Pipeline &pipeline = bench.pipeline();

    test::Frame tmpl = test::PacketBuilder()
                           .ipv4("198.18.0.1", "198.18.255.1")
                           .udp(40000, 53)
                           .payload(18)
                           .build();  // 64 bytes on the wire
    const size_t src_offset = 14 + 12;
    std::vector<test::Frame> frames[2] = {{kMaxBurst, tmpl}, {kMaxBurst, tmpl}};
    const uint8_t *ptrs[2][kMaxBurst];
    uint32_t lens[kMaxBurst];
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) {
        ptrs[0][i] = frames[0][i].data();
        ptrs[1][i] = frames[1][i].data();
        lens[i] = static_cast<uint32_t>(tmpl.size());
    }

    uint64_t seq = 0, clock = 1;
    bench::Pipelined pipelined(&pipeline);
    auto run_burst = [&] {
        const unsigned s = pipelined.slot();
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            const uint32_t addr = source_addr(seq, keys);
            std::memcpy(frames[s][i].data() + src_offset, &addr, 4);
            now[s][i] = clock;
            clock += kNsPerPacket;
        }
        pipelined.step(ptrs[s], lens, now[s], verdicts);
    };
    // Warm-up pass: every key inserted once, so the timed loop measures a full table.
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) run_burst();

    time_per_packet(state, run_burst, verdicts);
    state.counters["keys_live"] = static_cast<double>(bench.table().stats().occupancy);
    state.counters["table_MiB"] = static_cast<double>(LimitTable::bytes_for(keys)) / (1 << 20);
    unsigned passed = 0;
    for (Verdict v : verdicts) passed += v == Verdict::pass;
    state.counters["passed"] = static_cast<double>(passed) / kMaxBurst;  // of the last burst
}

// Two bursts of writable frames of frame_len bytes (up to 128), for the pipelined decision's
// two slots, and the pointers and lengths it reads.
struct ScratchBursts {
    alignas(64) uint8_t scratch[2][kMaxBurst][128];
    const uint8_t *ptrs[2][kMaxBurst];
    uint32_t lens[kMaxBurst];
    explicit ScratchBursts(size_t frame_len) {
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            ptrs[0][i] = scratch[0][i];
            ptrs[1][i] = scratch[1][i];
            lens[i] = static_cast<uint32_t>(frame_len);
        }
    }
};

void syn_flood(benchmark::State &state, SynRegime regime, bool options) {
    constexpr uint64_t keys = 1 << 20;
    Bench bench;
    if (!make_bench(state, syn_config(regime), keys, &bench, 1,
                    regime == kSynProxy ? kProxyConnections : 0))
        return;
    Pipeline &pipeline = bench.pipeline();

    // Bare: 60 bytes (64 on the wire), a 54-byte SYN and 6 bytes of Ethernet padding. With
    // options: 74 bytes, as Linux sends it.
    static const std::vector<uint8_t> kLinuxOptions = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                                       0x12, 0x34, 0,    0,    0, 0, 1, 3,  3, 7};
    test::PacketBuilder builder;
    builder.ipv4("10.0.0.1", "198.18.255.1").tcp(40000, 80, 0x02);
    if (options)
        builder.tcp_data_offset(10).payload(kLinuxOptions);
    else
        builder.trailing(6);
    const test::Frame tmpl = builder.build();
    const size_t src_offset = 14 + 12, sport_offset = 14 + 20;
    const size_t frame_len = tmpl.size();
    // Scratch frames the answers are built in, rewritten from the template every burst as a
    // NIC's DMA would leave them.
    ScratchBursts bursts(frame_len);
    auto &scratch = bursts.scratch;
    auto &ptrs = bursts.ptrs;
    auto &lens = bursts.lens;
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];

    uint64_t seq = 0, clock = 1, answered = 0, refused = 0, answer_bytes = 0;
    bench::Pipelined pipelined(&pipeline);
    auto fill = [&](unsigned s) {
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            std::memcpy(scratch[s][i], tmpl.data(), frame_len);
            const uint32_t addr = source_addr(seq, keys);
            std::memcpy(scratch[s][i] + src_offset, &addr, 4);
            uint16_t sport = static_cast<uint16_t>(__builtin_bswap16(1024 + (seq & 0x7fff)));
            std::memcpy(scratch[s][i] + sport_offset, &sport, 2);
            now[s][i] = clock;
            clock += kNsPerPacket;
        }
    };
    auto run_burst = [&] {
        const unsigned s = pipelined.slot();
        fill(s);
        if (regime == kSynCopy) {
            benchmark::DoNotOptimize(scratch);
            return;
        }
        const int decided = pipelined.step(ptrs[s], lens, now[s], verdicts);
        if (decided < 0) return;
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            if (verdicts[i] == Verdict::answer) {
                answer_bytes += build_answer(pipeline.answer_plan(i), pipeline.packet_info(i),
                                             scratch[decided][i], lens[i]);
                ++answered;
            } else if (verdicts[i] == Verdict::drop) {
                ++refused;
            }
        }
    };
    // Warm-up pass: the drop rule's sources all admitted once (so every later SYN is refused);
    // the syn-auth rule's per-/24 answer cap buckets created.
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) run_burst();
    answered = refused = answer_bytes = 0;

    time_per_packet(state, run_burst, verdicts);
    const double decided = static_cast<double>(state.iterations() / kMaxBurst * kMaxBurst);
    if (regime != kSynCopy && decided > 0) {
        state.counters["answered"] = static_cast<double>(answered) / decided;
        state.counters["refused"] = static_cast<double>(answered + refused) / decided;
    }
    if (answered > 0)
        state.counters["answer_bytes"] =
            static_cast<double>(answer_bytes) / static_cast<double>(answered);
    state.counters["keys_live"] = static_cast<double>(bench.table().stats().occupancy);
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
void BM_DecideAggregate(benchmark::State &state) {
    decide(state, 1 << 20, static_cast<Regime>(state.range(1)), 0,
           static_cast<Rules>(state.range(0)));
}
BENCHMARK(BM_DecideAggregate)
    ->ArgNames({"rules", "refuse"})  // rules: 0 per-source, 1 aggregate (dst), 2 both, 3 none
    ->ArgsProduct({{kPerSource, kAggregate, kBoth}, {kAdmit, kRefuse}})
    ->Args({kNone, kAdmit})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();
BENCHMARK(BM_Decide)
    ->ArgNames({"keys", "refuse"})
    ->ArgsProduct({{1 << 10, 1 << 20, 1 << 24}, {kAdmit, kRefuse}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

void BM_SynFlood(benchmark::State &state) {
    syn_flood(state, static_cast<SynRegime>(state.range(0)), state.range(1) != 0);
}
BENCHMARK(BM_SynFlood)
    ->ArgNames({"regime", "options"})  // regime: 0 copy only, 1 drop, 2 syn-auth, 3 syn-proxy
    ->Args({kSynCopy, 0})
    ->Args({kSynDrop, 0})
    ->Args({kSynAnswer, 0})
    ->Args({kSynProxy, 0})
    ->Args({kSynCopy, 1})
    ->Args({kSynAnswer, 1})
    ->Args({kSynProxy, 1})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

// What syn-proxy costs the connections it does not proxy: ACK segments with 10 bytes of data
// from 65,536 sources' established connections to port 80 (their SYNs passed: verified
// sources, or connections older than the rule), under a per-source rule on TCP to port 80 that
// admits them all, alone (proxy 0) or beside a syn-proxy rule on port 80's SYNs (proxy 1),
// whose connection table (65,536) holds nothing. With it every segment gets the verdict proxy
// and, as a live worker does, goes through proxy_client(): the table's lookup, a miss, and the
// check of its ACK as a cookie, which fails (stepped: not_proxied).
void proxy_established(benchmark::State &state, bool proxy) {
    constexpr uint64_t keys = 1 << 16;
    Config c;
    c.table_entries_per_core = keys;
    Rule r;
    r.name = "tcp80";
    r.match.proto = kProtoTcp;
    r.match.dst_ports.push_back(PortRange{80, 80});
    r.rate_count = 1;
    r.rate_period_ns = 60ull * 1000000000;
    r.burst_pkts = kMaxBurstPkts;
    c.rules.push_back(r);
    if (proxy) {
        Rule syn = syn_config(kSynProxy).rules.front();
        syn.burst_pkts = kMaxBurstPkts;
        c.rules.push_back(syn);
    }
    Bench bench;
    if (!make_bench(state, c, keys, &bench, 1, kProxyConnections)) return;
    Pipeline &pipeline = bench.pipeline();

    const test::Frame tmpl = test::PacketBuilder()
                                 .ipv4("10.0.0.1", "198.18.255.1")
                                 .tcp(40000, 80, 0x10)
                                 .tcp_seq(1000)
                                 .tcp_ack(5000)
                                 .payload(10)
                                 .build();
    const size_t src_offset = 14 + 12;
    const size_t frame_len = tmpl.size();
    ScratchBursts bursts(frame_len);  // written in place by the proxy, as mbufs are
    auto &scratch = bursts.scratch;
    auto &ptrs = bursts.ptrs;
    auto &lens = bursts.lens;
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];
    uint64_t seq = 0, clock = 1, not_proxied = 0, passed = 0;
    bench::Pipelined pipelined(&pipeline);
    auto run_burst = [&] {
        const unsigned s = pipelined.slot();
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            std::memcpy(scratch[s][i], tmpl.data(), frame_len);
            const uint32_t addr = source_addr(seq, keys);
            std::memcpy(scratch[s][i] + src_offset, &addr, 4);
            now[s][i] = clock;
            clock += kNsPerPacket;
        }
        const int decided = pipelined.step(ptrs[s], lens, now[s], verdicts);
        if (decided < 0) return;
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            if (verdicts[i] == Verdict::proxy)
                not_proxied += pipeline
                                   .proxy_client(static_cast<uint16_t>(i), scratch[decided][i],
                                                 sizeof scratch[0][0])
                                   .step == ProxyStep::not_proxied;
            passed += verdicts[i] == Verdict::pass || verdicts[i] == Verdict::proxy;
        }
    };
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) run_burst();
    not_proxied = passed = 0;
    time_per_packet(state, run_burst, verdicts);
    const double decided = static_cast<double>(state.iterations() / kMaxBurst * kMaxBurst);
    if (decided > 0) {
        state.counters["passed"] = static_cast<double>(passed) / decided;
        state.counters["not_proxied"] = static_cast<double>(not_proxied) / decided;
    }
}

void BM_ProxyEstablished(benchmark::State &state) {
    proxy_established(state, state.range(0) != 0);
}
BENCHMARK(BM_ProxyEstablished)
    ->ArgName("proxy")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

void shape(benchmark::State &state, uint64_t keys, ShapeAction action) {
    Bench bench;
    if (!make_bench(state, shape_config(keys, action), keys, &bench)) return;
    Pipeline &pipeline = bench.pipeline();
    const uint64_t group = shape_group(keys);
    const uint32_t capacity = static_cast<uint32_t>(64 * group);
    pipeline.set_hold_capacity(capacity);

    test::Frame tmpl = test::PacketBuilder()
                           .ipv4("198.18.0.1", "198.18.255.1")
                           .udp(40000, 53)
                           .payload(18)
                           .build();  // 64 bytes on the wire
    const size_t src_offset = 14 + 12;
    std::vector<test::Frame> frames[2] = {{kMaxBurst, tmpl}, {kMaxBurst, tmpl}};
    const uint8_t *ptrs[2][kMaxBurst];
    uint32_t lens[kMaxBurst];
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) {
        ptrs[0][i] = frames[0][i].data();
        ptrs[1][i] = frames[1][i].data();
        lens[i] = static_cast<uint32_t>(tmpl.size());
    }

    // The seq-th packet's key: turn seq / (G * run) of the cycle, its round within the turn
    // and its place (a permutation of the group's G keys, the same each round: G apart).
    const uint64_t turn_len = group * kShapeRun, groups = keys / group;
    auto key_at = [&](uint64_t seq) {
        const uint64_t g = (seq / turn_len) & (groups - 1);
        return static_cast<uint32_t>(g * group + ((seq % group) * 2654435761u & (group - 1)));
    };
    uint64_t seq = 0, clock = 1, handle = 0, released = 0, handles = 0;
    uint64_t delays = 0, drops = 0, passes = 0;
    Pipeline::Released out[kMaxBurst];
    bench::Pipelined pipelined(&pipeline);
    auto run_burst = [&] {
        const unsigned s = pipelined.slot();
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            const uint32_t addr = __builtin_bswap32(0x0a000000u + key_at(seq));
            std::memcpy(frames[s][i].data() + src_offset, &addr, 4);
            now[s][i] = clock;
            clock += kShapeNsPerPacket;
        }
        const int decided = pipelined.step(ptrs[s], lens, now[s], verdicts);
        if (decided >= 0) {
            for (unsigned i = 0; i < kMaxBurst; ++i) {
                if (verdicts[i] == Verdict::delay) {
                    pipeline.hold(static_cast<uint16_t>(i), ++handle);  // the worker's mbuf
                    ++delays;
                } else if (verdicts[i] == Verdict::pass) {
                    ++passes;
                } else {
                    ++drops;
                }
            }
        }
        // The worker's release_held at the pass's time: up to four bursts.
        if (pipeline.holding() > 0) {
            for (unsigned round = 0; round < 4; ++round) {
                const unsigned n = pipeline.release(clock, true, out, kMaxBurst);
                for (unsigned k = 0; k < n; ++k) handles += out[k].handle;
                released += n;
                if (n < kMaxBurst) break;
            }
        }
        pipeline.tick(clock);
    };
    // Warm-up: a whole cycle and a turn, so that every key has had its first turn and the
    // wheel holds and releases at its steady rate.
    for (uint64_t i = 0; i < (keys + group) * kShapeRun / kMaxBurst + 1; ++i) run_burst();
    const RuleCounters &rc = bench.rules->rules()[0].state->per_core[0].counters;
    const uint64_t shape_dropped0 = rc.shape_dropped, released0 = released;
    delays = drops = passes = 0;

    time_per_packet(state, run_burst, verdicts);
    benchmark::DoNotOptimize(handles);
    const double decided = static_cast<double>(delays + drops + passes);
    if (decided > 0) {
        state.counters["delayed"] = static_cast<double>(delays) / decided;
        state.counters["refused"] = static_cast<double>(drops) / decided;
        state.counters["passed"] = static_cast<double>(passes) / decided;
        state.counters["shaped"] = static_cast<double>(released - released0) / decided;
        state.counters["shape_dropped"] =
            static_cast<double>(rc.shape_dropped - shape_dropped0) / decided;
    }
    state.counters["held"] = static_cast<double>(pipeline.holding());
    state.counters["hold_capacity"] = static_cast<double>(capacity);
    state.counters["keys_live"] = static_cast<double>(bench.table().stats().occupancy);
}

void BM_Shape(benchmark::State &state) {
    shape(state, static_cast<uint64_t>(state.range(0)), static_cast<ShapeAction>(state.range(1)));
}
BENCHMARK(BM_Shape)
    ->ArgNames({"keys", "shape"})  // shape: 0 the same rule with action drop, 1 action shape
    ->ArgsProduct({{1 << 10, 1 << 20}, {kShapeDrop, kShapeShape}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

void syn_adaptive(benchmark::State &state, bool adaptive, SynLoad load) {
    constexpr uint64_t keys = 1 << 20;
    Bench bench;
    if (!make_bench(state, adaptive_config(adaptive, load), keys, &bench)) return;
    Pipeline &pipeline = bench.pipeline();

    const test::Frame tmpl = test::PacketBuilder()
                                 .ipv4("10.0.0.1", "198.18.255.1")
                                 .tcp(40000, 80, 0x02)
                                 .trailing(6)
                                 .build();
    const size_t src_offset = 14 + 12, sport_offset = 14 + 20;
    const size_t frame_len = tmpl.size();
    alignas(64) uint8_t scratch[2][kMaxBurst][128];
    const uint8_t *ptrs[2][kMaxBurst];
    uint32_t lens[kMaxBurst];
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) {
        ptrs[0][i] = scratch[0][i];
        ptrs[1][i] = scratch[1][i];
        lens[i] = static_cast<uint32_t>(frame_len);
        std::memcpy(scratch[0][i], tmpl.data(), frame_len);
        std::memcpy(scratch[1][i], tmpl.data(), frame_len);
    }

    uint64_t seq = 0, clock = 1, admitted = 0, refused = 0;
    bench::Pipelined pipelined(&pipeline);
    auto run_burst = [&] {
        const unsigned s = pipelined.slot();
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            const uint32_t addr = source_addr(seq, keys);
            std::memcpy(scratch[s][i] + src_offset, &addr, 4);
            uint16_t sport = static_cast<uint16_t>(__builtin_bswap16(1024 + (seq & 0x7fff)));
            std::memcpy(scratch[s][i] + sport_offset, &sport, 2);
            now[s][i] = clock;
            clock += kNsPerPacket;
        }
        if (pipelined.step(ptrs[s], lens, now[s], verdicts) >= 0)
            for (unsigned i = 0; i < kMaxBurst; ++i)
                verdicts[i] == Verdict::pass ? ++admitted : ++refused;
        pipeline.tick(clock);
    };
    // Warm-up pass: every source seen once; the sample slots all taken.
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) run_burst();
    Pipeline::Stats before, after;
    pipeline.read_stats(*bench.rules, &before);
    admitted = refused = 0;

    time_per_packet(state, run_burst, verdicts);
    pipeline.read_stats(*bench.rules, &after);
    const double decided = static_cast<double>(admitted + refused);
    if (decided > 0) {
        state.counters["admitted"] = static_cast<double>(admitted) / decided;
        state.counters["slots_busy"] = static_cast<double>(after.counters.adaptive_slots_busy -
                                                           before.counters.adaptive_slots_busy) /
                                       decided;
    }
    state.counters["keys_live"] = static_cast<double>(bench.table().stats().occupancy);
}

void BM_SynAdaptive(benchmark::State &state) {
    syn_adaptive(state, state.range(0) != 0, static_cast<SynLoad>(state.range(1)));
}
BENCHMARK(BM_SynAdaptive)
    ->ArgNames({"adaptive", "over"})  // over: 0 every SYN admitted, 1 a flood over the rate
    ->ArgsProduct({{0, 1}, {kSynAdmit, kSynOver}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

}  // namespace
}  // namespace floodgate

// The EAL, for the prefix tables (DPDK memory, no hugepages needed).
int main(int argc, char **argv) {
    return floodgate::bench::run_with_eal(argc, argv, 1024);
}
