// How the per-packet cost grows (issue 15), each dimension alone, through the Pipeline on
// bursts of 32 pipelined as a worker decides them (bench::Pipelined), with bench_decision's setup
// (bench_common.h): 64-byte UDP frames whose sources are written into a template before each burst,
// every key visited once per pass.
//
// BM_Keys: live keys from 1K to 16M under one per-source rule; admit (burst 2^20: every packet
// passes and commits a TAT) and refuse (burst 1: every packet after the warm-up is refused).
//
// BM_Rules: 1M sources and 1, 2, 4, 8 or 16 per-source rules that all match every packet (each
// one more key per source, so the table holds rules x 1M keys), and 256 rules of which one
// matches: 255 on UDP destination ports 1000-1254 and, last in file order, the one on port 53.
//
// BM_Prefixes: 1M sources, one per-source rule (admit), and allow/block lists of 0, 1K, 100K or
// 1M random prefixes (alternately allow and block) that cover none of the sources, so every
// packet is looked up and still reaches the rule. IPv4: sources 10.0.0.0 + key; the lists half
// /24s, half /32s, uniform over 11.0.0.0-223.255.255.255. IPv6: sources 2001:db8:KKKK:KKKK::1
// (one /64 key each); the lists random /32s of 2000::/3 other than 2001:db8::/32 (the size of
// an ISP's allocation: one rte_lpm6 tbl8 group each, so 1M of them fit in the EAL's memory).
//
// BM_Merge: the cross-core merge per interval, as a live run does it (worker.cpp, merge.cpp):
// core A admits K distinct keys (untimed), then publishes them on its ring, and B reads them
// there with its own cursor and applies them (LimitTable::acquire + commit per record) to a
// table of 1M entries in its steady state (A's keys cycle over 1M). Time is per interval, in
// the thread's CPU time (CLOCK_THREAD_CPUTIME_ID); publish_ns_per_key and apply_ns_per_key
// split it per record.
//
// BM_MemoryFloor: the table's memory alone, without the decision (see it below).
//
// Each benchmark's setup (rules, table, warm-up pass) is built once per argument set and kept
// across Google Benchmark's runs and repetitions of it: 1M IPv6 prefixes take seconds to build.
//
//   build/perf/bench_scaling --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <rte_mbuf.h>

#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "dataplane/live/merge_rings.h"
#include "dataplane/live/steering_stage.h"
#include "perf/bench_common.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

using bench::Bench;
using bench::kNsPerPacket;

enum Regime : int64_t { kAdmit = 0, kRefuse = 1 };

// One rule keyed per source, at 1/min (every key stays live for the run): burst 2^20 admits
// every packet, burst 1 refuses every packet after a key's first.
Rule per_source_rule(const std::string &name, Regime regime) {
    Rule r;
    r.name = name;
    r.rate_count = 1;
    r.rate_period_ns = 60ull * 1000000000;
    r.burst_pkts = regime == kAdmit ? kMaxBurstPkts : 1;
    return r;
}

// n_rules rules of which `matching` (the last ones in file order) match every packet (UDP to
// port 53); the others match UDP destination ports from 1000 up, which no packet has.
Config rules_config(unsigned n_rules, unsigned matching, Regime regime) {
    Config c;
    for (unsigned i = 0; i < n_rules; ++i) {
        std::string name = "r";
        name += std::to_string(i);
        Rule r = per_source_rule(name, regime);
        r.match.proto = 17;
        const auto port = static_cast<uint16_t>(i < n_rules - matching ? 1000 + i : 53);
        r.match.dst_ports.push_back(PortRange{port, port});
        c.rules.push_back(r);
    }
    return c;
}

// entries random prefixes that cover no source (see the header), alternately allow and block.
void add_random_prefixes(Config *c, unsigned entries, bool ipv6) {
    std::mt19937_64 rng(entries * 2 + ipv6);
    std::set<Prefix> seen;
    while (seen.size() < entries) {
        Prefix p;
        p.family = ipv6 ? 6 : 4;
        const uint64_t r = rng();
        if (ipv6) {
            p.len = 32;
            p.addr[0] = static_cast<uint8_t>(0x20 | (r & 0x1f));  // 2000::/3
            p.addr[1] = r >> 8 & 0xff, p.addr[2] = r >> 16 & 0xff, p.addr[3] = r >> 24 & 0xff;
            if (p.addr[0] == 0x20 && p.addr[1] == 0x01 && p.addr[2] == 0x0d && p.addr[3] == 0xb8)
                continue;  // the sources' /32
        } else {
            p.len = seen.size() % 2 ? 32 : 24;
            p.addr[0] = static_cast<uint8_t>(11 + (r & 0xff) % 213);  // 11-223
            p.addr[1] = r >> 8 & 0xff, p.addr[2] = r >> 16 & 0xff;
            p.addr[3] = p.len == 32 ? r >> 24 & 0xff : 0;
        }
        if (!seen.insert(p).second) continue;
        (seen.size() % 2 ? c->allow : c->block).push_back(p);
    }
}

// A benchmark's state between Google Benchmark's runs of it: rebuilt when the arguments change
// (the previous one freed first, so that two 16M-key tables never coexist).
struct Scenario {
    std::vector<int64_t> args;
    Bench bench;
    uint64_t keys = 0;
    bool ipv6 = false;
    std::vector<test::Frame> frames[2];
    const uint8_t *ptrs[2][kMaxBurst];
    uint32_t lens[kMaxBurst];
    uint64_t now[2][kMaxBurst];
    Verdict verdicts[kMaxBurst];
    uint64_t seq = 0, clock = 1;
    std::unique_ptr<bench::Pipelined> pipelined;

    // Both bursts' frames made of tmpl (after bench is made).
    void use_frames(const test::Frame &tmpl) {
        pipelined = std::make_unique<bench::Pipelined>(&bench.pipeline());
        for (unsigned k = 0; k < 2; ++k) {
            frames[k].assign(kMaxBurst, tmpl);
            for (unsigned i = 0; i < kMaxBurst; ++i) ptrs[k][i] = frames[k][i].data();
        }
        for (unsigned i = 0; i < kMaxBurst; ++i) lens[i] = static_cast<uint32_t>(tmpl.size());
    }

    // Gives the burst's frames the next sources (IPv4 bytes 12-15 of the header, or bytes 4-7
    // of an IPv6 source: both at frame offset 26) and decides them.
    void run_burst() {
        constexpr size_t src_offset = 14 + 12;
        static_assert(14 + 8 + 4 == src_offset);
        const unsigned s = pipelined->slot();
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            const uint32_t addr =
                ipv6 ? __builtin_bswap32(bench::key_of(seq, keys)) : bench::source_addr(seq, keys);
            std::memcpy(frames[s][i].data() + src_offset, &addr, 4);
            now[s][i] = clock;
            clock += kNsPerPacket;
        }
        pipelined->step(ptrs[s], lens, now[s], verdicts);
    }
};

std::unique_ptr<Scenario> g_scenario;

// The scenario for these arguments: the kept one, or a new one with one warm-up pass done
// (every key inserted once, so the timed loop measures a full table). Null when skipped.
Scenario *scenario(benchmark::State &state, std::vector<int64_t> args, const Config &config,
                   uint64_t keys, uint64_t table_entries, bool ipv6) {
    if (g_scenario && g_scenario->args == args) return g_scenario.get();
    g_scenario.reset();
    auto s = std::make_unique<Scenario>();
    s->args = std::move(args);
    s->keys = keys;
    s->ipv6 = ipv6;
    if (!bench::make_bench(state, config, table_entries, &s->bench)) return nullptr;
    test::PacketBuilder b;
    if (ipv6)
        b.ipv6("2001:db8::1", "2001:db8:ffff::1");
    else
        b.ipv4("198.18.0.1", "198.18.255.1");
    const test::Frame tmpl = b.udp(40000, 53).payload(18).build();  // IPv4: 64 bytes on the wire
    s->use_frames(tmpl);
    for (uint64_t i = 0; i < keys / kMaxBurst + 1; ++i) s->run_burst();
    g_scenario = std::move(s);
    return g_scenario.get();
}

void decide(benchmark::State &state, Scenario *s) {
    if (s == nullptr) return;
    bench::time_per_packet(
        state, [s] { s->run_burst(); }, s->verdicts);
    state.counters["keys_live"] = static_cast<double>(s->bench.table().stats().occupancy);
    state.counters["table_MiB"] =
        static_cast<double>(LimitTable::bytes_for(s->bench.table().capacity())) / (1 << 20);
    unsigned passed = 0;
    for (Verdict v : s->verdicts) passed += v == Verdict::pass;
    state.counters["passed"] = static_cast<double>(passed) / kMaxBurst;  // of the last burst
}

void BM_Keys(benchmark::State &state) {
    const auto keys = static_cast<uint64_t>(state.range(0));
    const auto regime = static_cast<Regime>(state.range(1));
    Config c;
    c.rules.push_back(per_source_rule("all", regime));
    decide(state, scenario(state, {0, state.range(0), state.range(1)}, c, keys, keys, false));
}
BENCHMARK(BM_Keys)
    ->ArgNames({"keys", "refuse"})
    ->ArgsProduct({{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24},
                   {kAdmit, kRefuse}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

void BM_Rules(benchmark::State &state) {
    constexpr uint64_t keys = 1 << 20;
    const auto n_rules = static_cast<unsigned>(state.range(0));
    const auto matching = static_cast<unsigned>(state.range(1));
    const auto regime = static_cast<Regime>(state.range(2));
    decide(state, scenario(state, {1, state.range(0), state.range(1), state.range(2)},
                           rules_config(n_rules, matching, regime), keys, keys * matching, false));
}
BENCHMARK(BM_Rules)
    ->ArgNames({"rules", "matching", "refuse"})
    ->Args({1, 1, kAdmit})
    ->Args({2, 2, kAdmit})
    ->Args({4, 4, kAdmit})
    ->Args({8, 8, kAdmit})
    ->Args({16, 16, kAdmit})
    ->Args({256, 1, kAdmit})
    ->Args({1, 1, kRefuse})
    ->Args({2, 2, kRefuse})
    ->Args({4, 4, kRefuse})
    ->Args({8, 8, kRefuse})
    ->Args({16, 16, kRefuse})
    ->Args({256, 1, kRefuse})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

void BM_Prefixes(benchmark::State &state) {
    constexpr uint64_t keys = 1 << 20;
    const auto entries = static_cast<unsigned>(state.range(0));
    const bool ipv6 = state.range(1) != 0;
    Config c;
    c.rules.push_back(per_source_rule("all", kAdmit));
    add_random_prefixes(&c, entries, ipv6);
    decide(state, scenario(state, {2, state.range(0), state.range(1)}, c, keys, keys, ipv6));
}
BENCHMARK(BM_Prefixes)
    ->ArgNames({"entries", "ipv6"})
    ->ArgsProduct({{0, 1000, 100000, 1000000}, {0, 1}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

// This thread's CPU time: on a shared machine, the spells another process holds the CPU are
// not the merge's.
double thread_cpu_s() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The merge of BM_Merge: core A's scenario (its pipeline publishes) and core B.
struct MergeScenario {
    int64_t keys_per_interval = 0;
    std::unique_ptr<Scenario> a;
    std::unique_ptr<CoreParts> b;
    std::unique_ptr<LiveMerger> merger;
    std::vector<Consumption> published;
    double publish_s = 0, apply_s = 0;
    uint64_t records = 0, lost = 0;
    uint64_t cursor_b = 0;  // core B's place in A's ring

    // One interval: A admits keys_per_interval distinct keys, then the merge. Returns the
    // merge's seconds.
    double interval() {
        for (int64_t i = 0; i < keys_per_interval / kMaxBurst; ++i) a->run_burst();
        const uint64_t now_ns = a->clock;
        const double t0 = thread_cpu_s();
        published.clear();
        a->bench.pipeline().publish(&published);
        for (Consumption &c : published) c.published_ns = now_ns;
        const auto n = static_cast<unsigned>(published.size());
        merger->ring(0).publish(published.data(), n);
        const double t1 = thread_cpu_s();
        Consumption incoming[64];
        unsigned m;
        while ((m = merger->ring(0).read(&cursor_b, incoming, 64, &lost)) > 0)
            for (unsigned i = 0; i < m; ++i) b->pipeline().apply(incoming[i], now_ns);
        const double t2 = thread_cpu_s();
        publish_s += t1 - t0, apply_s += t2 - t1;
        records += n;
        return t2 - t0;
    }
};

std::unique_ptr<MergeScenario> g_merge;

void BM_Merge(benchmark::State &state) {
    constexpr uint64_t keys = 1 << 20;
    const int64_t k = state.range(0);
    if (!g_merge || g_merge->keys_per_interval != k) {
        g_merge.reset();
        g_scenario.reset();
        auto m = std::make_unique<MergeScenario>();
        m->keys_per_interval = k;
        m->a = std::make_unique<Scenario>();
        Scenario &a = *m->a;
        a.keys = keys;
        Config c;
        c.rules.push_back(per_source_rule("all", kAdmit));
        if (!bench::make_bench(state, c, keys, &a.bench, 2)) return;
        const test::Frame tmpl = test::PacketBuilder()
                                     .ipv4("198.18.0.1", "198.18.255.1")
                                     .udp(40000, 53)
                                     .payload(18)
                                     .build();
        a.use_frames(tmpl);
        CoreSizes sizes;
        sizes.table_entries = keys;
        m->b = std::make_unique<CoreParts>(a.bench.rules.get(), sizes, bench::bench_seeds(),
                                           CoreMemory{}, 1);
        m->merger = std::make_unique<LiveMerger>(2, 2 * kMaxUnpublishedKeys, kClusterRingRecords);
        if (m->b->missing() != CoreParts::Missing::nothing || !m->merger->ok()) {
            state.SkipWithError("cannot allocate core B's table or the merge rings");
            return;
        }
        a.bench.pipeline().enable_merge();
        m->b->pipeline().enable_merge();
        // Steady state: A's keys all applied to B's table once.
        for (uint64_t i = 0; i < keys / static_cast<uint64_t>(k) + 1; ++i) m->interval();
        g_merge = std::move(m);
    }
    MergeScenario &m = *g_merge;
    m.publish_s = m.apply_s = 0;
    m.records = 0;
    for (auto _ : state) state.SetIterationTime(m.interval());
    const double per_key = m.records ? 1e9 / static_cast<double>(m.records) : 0;
    state.counters["records"] =
        static_cast<double>(m.records) / static_cast<double>(state.iterations());
    state.counters["publish_ns_per_key"] = m.publish_s * per_key;
    state.counters["apply_ns_per_key"] = m.apply_s * per_key;
    state.counters["records_lost"] = static_cast<double>(m.lost);
    state.counters["keys_live_b"] = static_cast<double>(m.b->table().stats().occupancy);
}
BENCHMARK(BM_Merge)
    ->ArgName("keys")  // distinct keys core A admitted in the interval (at most 65,536)
    ->Arg(1 << 10)
    ->Arg(1 << 14)
    ->Arg(1 << 16)
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();

// BM_MemoryFloor: what the table's memory alone costs per packet on this machine, with no
// decision: a buffer of the table's size for `keys` (LimitTable::bytes_for, the same 2 MiB-
// aligned transparent huge pages as heap_table_memory), and per packet the two 64-byte lines a
// lookup of a random key reads (its two candidate buckets), prefetched and then read, one of
// them also written when every packet is admitted (a TAT commit). ahead 0 prefetches in the
// burst's first pass and reads in its second, as Pipeline::decide does; ahead 1 prefetches the
// next burst's lines while reading this one's (pipelining across bursts, at its best).
struct MemoryFloor {
    std::vector<int64_t> args;
    TableMemory memory = heap_table_memory();
    uint64_t *lines = nullptr;  // 8 words per 64-byte line
    uint64_t n_lines = 0;
    uint64_t seq = 0;
    uint64_t first[2][kMaxBurst], second[2][kMaxBurst];
    unsigned current = 0;
    uint64_t sum = 0;
    ~MemoryFloor() {
        if (lines != nullptr) memory.free(lines, memory.ctx);
    }
    // Where the next burst's keys' buckets are, prefetched.
    void prefetch_next(unsigned into, uint64_t keys) {
        for (unsigned i = 0; i < kMaxBurst; ++i, ++seq) {
            uint64_t h = (uint64_t{bench::key_of(seq, keys)} + 1) * 0x9e3779b97f4a7c15ull;
            h ^= h >> 29;
            h *= 0xbf58476d1ce4e5b9ull;
            first[into][i] = (static_cast<uint64_t>(static_cast<uint32_t>(h)) * n_lines) >> 32;
            second[into][i] = ((h >> 32) * n_lines) >> 32;
            rte_prefetch0(&lines[first[into][i] * 8]);
            rte_prefetch0(&lines[second[into][i] * 8]);
        }
    }
    void read(unsigned from, bool write) {
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            const uint64_t a = first[from][i] * 8, b = second[from][i] * 8;
            sum += lines[a] + lines[b];
            if (write) lines[a + 1] = sum;
        }
    }
};
std::unique_ptr<MemoryFloor> g_floor;

void BM_MemoryFloor(benchmark::State &state) {
    const auto keys = static_cast<uint64_t>(state.range(0));
    const bool write = state.range(1) == kAdmit;
    const bool ahead = state.range(2) != 0;
    std::vector<int64_t> args{state.range(0), state.range(1), state.range(2)};
    if (!g_floor || g_floor->args != args) {
        g_floor.reset();
        g_scenario.reset();  // its table would share the caches
        auto f = std::make_unique<MemoryFloor>();
        f->args = args;
        const uint64_t bytes = LimitTable::bytes_for(keys);
        f->lines = static_cast<uint64_t *>(f->memory.alloc(bytes, f->memory.ctx));
        if (f->lines == nullptr) {
            state.SkipWithError("cannot allocate the buffer");
            return;
        }
        f->n_lines = bytes / 64;
        g_floor = std::move(f);
    }
    MemoryFloor &f = *g_floor;
    Verdict verdicts[kMaxBurst] = {};
    f.prefetch_next(f.current, keys);
    bench::time_per_packet(
        state,
        [&] {
            if (ahead) {
                f.prefetch_next(f.current ^ 1, keys);
                f.read(f.current, write);
                f.current ^= 1;
            } else {
                f.prefetch_next(f.current, keys);
                f.read(f.current, write);
            }
        },
        verdicts);
    benchmark::DoNotOptimize(f.sum);
    state.counters["table_MiB"] = static_cast<double>(LimitTable::bytes_for(keys)) / (1 << 20);
}
BENCHMARK(BM_MemoryFloor)
    ->ArgNames({"keys", "refuse", "ahead"})
    ->ArgsProduct({{1 << 10, 1 << 20, 1 << 24}, {kAdmit, kRefuse}, {0, 1}})
    ->Unit(benchmark::kNanosecond)
    ->UseRealTime();

// BM_Steer: software steering per packet (dataplane/live/steering_stage.h), what a port without
// source-prefix RSS adds to each packet: worker 0 steers bursts of 32 frames from 1M random
// IPv4 sources over N workers (parse, owner, one ring enqueue per owner in the burst), and
// once 512 frames are on the rings each owner takes its share off its ring in bursts of up to
// 32, as a busy worker does once per loop pass; the frames then go round again. One thread:
// what the cores' caches add when the frames really cross cores is not in it.
struct SteerScenario {
    unsigned workers = 0;
    int nic = -1;  // BM_SteerNic's frames: 1 hashed, 0 not; -1 software steering
    rte_mempool *pool = nullptr;
    std::unique_ptr<SteeringRings> rings;
    std::vector<std::unique_ptr<SteeringStage>> stages;
    std::vector<rte_mbuf *> frames;  // 16 bursts' worth; [0, next) are free to send
    unsigned next = 0;
    uint64_t seq = 0;
    ~SteerScenario() {
        stages.clear();
        rings.reset();  // frees what the rings still hold
        rte_pktmbuf_free_bulk(frames.data(), next);
        rte_mempool_free(pool);
    }
};
std::unique_ptr<SteerScenario> g_steer;

// The frames and rings for `workers` workers: software steering (nic -1), or NIC steering with
// a /64 key and a RETA of 128 whose frames carry the NIC's hash flag (nic 1) or not (0).
bool make_steer_scenario(benchmark::State &state, unsigned workers, int nic) {
    if (g_steer && g_steer->workers == workers && g_steer->nic == nic) return true;
    g_steer.reset();
    auto s = std::make_unique<SteerScenario>();
    s->workers = workers;
    s->nic = nic;
    s->pool = rte_pktmbuf_pool_create("bench_steer", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                      SOCKET_ID_ANY);
    const SteeringOptions wanted{true, 32, 64};
    if (nic < 0) {
        s->rings = std::make_unique<SteeringRings>(workers, SteeringRings::kRingSize,
                                                   software_steering(wanted, false));
    } else {
        std::vector<uint8_t> key(40);
        std::mt19937_64 rng(7);
        for (uint8_t &b : key) b = static_cast<uint8_t>(rng());
        zero_key_past_prefix(key.data(), key.size(), nic_prefix_bits(wanted));
        s->rings = std::make_unique<SteeringRings>(workers, SteeringRings::kRingSize,
                                                   nic_steering(wanted, false),
                                                   NicHash{std::move(key), 128});
    }
    s->frames.resize(16 * kMaxBurst);
    if (s->pool == nullptr || !s->rings->ok() ||
        rte_pktmbuf_alloc_bulk(s->pool, s->frames.data(),
                               static_cast<unsigned>(s->frames.size())) != 0) {
        state.SkipWithError("cannot make the mbufs or the steering rings");
        return false;
    }
    for (unsigned w = 0; w < workers; ++w)
        s->stages.push_back(std::make_unique<SteeringStage>(s->rings.get(), w));
    const test::Frame tmpl =
        test::PacketBuilder().ipv4("198.18.0.1", "198.18.255.1").udp(40000, 53).payload(18).build();
    s->next = static_cast<unsigned>(s->frames.size());
    for (rte_mbuf *m : s->frames) {
        auto *data =
            reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(tmpl.size())));
        std::memcpy(data, tmpl.data(), tmpl.size());
        if (nic == 1) m->ol_flags |= RTE_MBUF_F_RX_RSS_HASH;
    }
    g_steer = std::move(s);
    return true;
}

// Worker 0 steers a burst of the next sources, and once 512 frames are on the rings each owner
// takes its share off its ring, as BM_Steer says.
void time_steering(benchmark::State &state) {
    SteerScenario &s = *g_steer;
    Verdict none[kMaxBurst] = {};
    bench::time_per_packet(
        state,
        [&] {
            if (s.next < kMaxBurst) {  // the frames are on the rings: the owners take theirs
                rte_mbuf *taken[kMaxBurst];
                for (unsigned w = 0; w < s.workers; ++w)
                    while (const uint16_t n = s.stages[w]->steer(nullptr, 0, taken))
                        for (uint16_t i = 0; i < n; ++i) s.frames[s.next++] = taken[i];
            }
            // The last free burst's worth of frames, from the next sources.
            rte_mbuf **burst = &s.frames[s.next - kMaxBurst];
            for (unsigned i = 0; i < kMaxBurst; ++i) {
                const uint32_t addr = bench::source_addr(s.seq++, 1 << 20);
                std::memcpy(rte_pktmbuf_mtod_offset(burst[i], uint8_t *, 14 + 12), &addr, 4);
            }
            rte_mbuf *kept[kMaxBurst];
            const uint16_t mine = s.stages[0]->steer(burst, kMaxBurst, kept);
            // Worker 0's own frames are free again at once (decided, in a live worker).
            std::memcpy(burst, kept, sizeof(rte_mbuf *) * mine);
            s.next = s.next - kMaxBurst + mine;
        },
        none);
}

void BM_Steer(benchmark::State &state) {
    if (make_steer_scenario(state, static_cast<unsigned>(state.range(0)), -1)) time_steering(state);
}
BENCHMARK(BM_Steer)->ArgName("workers")->Arg(2)->Arg(4)->Arg(16)->Arg(64)->Unit(
    benchmark::kNanosecond);

// BM_SteerNic: the same stage under NIC steering. hashed 1: every frame carries the NIC's RSS
// hash flag and stays where it is (what NIC steering adds to each packet: one flag test);
// hashed 0: none does, and each is handed to the worker the NIC would have chosen (a Toeplitz
// hash of its source and the RETA), the most a port whose NIC hashes nothing can cost.
void BM_SteerNic(benchmark::State &state) {
    if (make_steer_scenario(state, static_cast<unsigned>(state.range(0)),
                            static_cast<int>(state.range(1))))
        time_steering(state);
}
BENCHMARK(BM_SteerNic)
    ->ArgNames({"workers", "hashed"})
    ->Args({2, 1})
    ->Args({16, 1})
    ->Args({2, 0})
    ->Args({16, 0})
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace floodgate

// The EAL, for the prefix tables and the merge rings (DPDK memory, no hugepages needed): 1M
// IPv4 prefixes take about 0.7 GB of it, 1M IPv6 /32s about 1 GB.
int main(int argc, char **argv) {
    return floodgate::bench::run_with_eal(argc, argv, 3072, [] {
        floodgate::g_merge.reset();
        floodgate::g_scenario.reset();
        floodgate::g_floor.reset();
        floodgate::g_steer.reset();
    });
}
