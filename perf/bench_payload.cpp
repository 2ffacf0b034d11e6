// The per-packet cost of a payload rule (match.payload, Hyperscan;
// dataplane/patterns/payload_database.h and dataplane/core/payload_scan.h), in Pipeline::decide
// over bursts of 32 UDP frames from 1,024 sources, beside the same rule without a payload match
// (patterns 0) and beside a naive memmem loop over the same literals (BM_Memmem: the payload bytes
// only, no decision). Patterns: 1, 100 or 1,000 random 8-letter literals, or 10 regular expressions
// (kind 1); frames of 64 or 1,500 bytes whose payloads hold none of them, so every scan reads its
// whole window: what legitimate traffic on the rule's port pays; and (match 1) 64-byte frames that
// hold the first literal at the payload's start: what the flood a rule matches pays.
//
//   build/perf/bench_payload --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <string.h>

#include <memory>
#include <random>

#include "dataplane/patterns/payload_database.h"
#include "dataplane/pipeline/core_parts.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

// kLongLiterals: 32-byte literals, longer than a 64-byte frame's 22-byte payload, whose window
// is then not searched at all (shortest_pattern).
enum Kind : int64_t { kLiterals = 0, kRegexes = 1, kLongLiterals = 2 };

std::vector<std::string> literals(unsigned n, unsigned bytes = 8) {
    std::mt19937 rng(7);
    std::vector<std::string> out;
    for (unsigned i = 0; i < n; ++i) {
        std::string s;
        for (unsigned k = 0; k < bytes; ++k) s.push_back(static_cast<char>('a' + rng() % 26));
        out.push_back(s);
    }
    return out;
}

std::vector<PayloadPattern> patterns(unsigned n, Kind kind) {
    std::vector<PayloadPattern> out;
    if (kind == kRegexes) {
        const char *res[] = {"GET /[a-z]{3,8}\\?q=",     "^M-SEARCH \\* HTTP/1\\.[01]",
                             "STAT pid [0-9]+",          "\\x00\\x01\\x00\\x00stats",
                             "User-Agent: [A-Z]{10}",    "[0-9]{6}\\.victim\\.example",
                             "^\\x17\\x00\\x03\\x2a",    "cmd=(ping|pong)[0-9]{4}",
                             "HTTP/1\\.1 200 OK\\r\\nX", "\\xde\\xad\\xbe\\xef.{4}\\xff"};
        for (unsigned i = 0; i < n && i < 10; ++i)
            out.push_back({PayloadPattern::Kind::regex, res[i], false});
        return out;
    }
    for (const std::string &s : literals(n, kind == kLongLiterals ? 32 : 8))
        out.push_back({PayloadPattern::Kind::literal, s, false});
    return out;
}

// Frames of `size` bytes with random payload bytes (digits and capitals: no pattern above can
// match), from 1,024 sources; with match, the first literal written at the payload's start.
std::vector<test::Frame> frames(size_t size, bool match = false) {
    std::mt19937 rng(11);
    std::vector<test::Frame> out;
    const std::string first = literals(1)[0];
    for (unsigned i = 0; i < 1024; ++i) {
        std::vector<uint8_t> payload(size - 42);
        for (uint8_t &b : payload)
            b = static_cast<uint8_t>(rng() % 2 ? '0' + rng() % 10 : 'A' + rng() % 26);
        if (match) std::copy(first.begin(), first.end(), payload.begin());
        out.push_back(test::PacketBuilder()
                          .ipv4("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256),
                                "198.18.1.1")
                          .udp(1000, 53)
                          .payload(payload)
                          .build());
    }
    return out;
}

void BM_PayloadRule(benchmark::State &state) {
    const auto n = static_cast<unsigned>(state.range(0));
    const auto kind = static_cast<Kind>(state.range(1));
    const auto size = static_cast<size_t>(state.range(2));
    const bool match = state.range(3) != 0;
    Config c;
    Rule r;
    r.name = "payload";
    r.match.proto = kProtoUdp;
    r.match.dst_ports = {{53, 53}};
    if (n > 0) r.match.payload.patterns = patterns(n, kind);
    r.rate_count = 1;
    r.rate_period_ns = 60'000'000'000ull;
    r.burst_pkts = kMaxBurstPkts;
    c.rules = {r};
    c.table_entries_per_core = 4096;
    std::string error;
    std::unique_ptr<RuleSet> rules = RuleSet::build(c, -1, &error);
    if (!rules) {
        state.SkipWithError(error.c_str());
        return;
    }
    CoreSizes sizes;
    sizes.table_entries = 4096;
    CoreParts core(rules.get(), sizes, CoreSeeds{HashSeed{{1, 2, 3, 4}}, {}, {}}, CoreMemory{});
    if (core.missing() != CoreParts::Missing::nothing) {
        state.SkipWithError("cannot allocate the core's tables");
        return;
    }
    Pipeline &p = core.pipeline();
    const std::vector<test::Frame> fs = frames(size, match);
    constexpr uint16_t kBurst = 32;
    const uint8_t *ptr[kBurst];
    uint32_t lens[kBurst];
    uint64_t now[kBurst];
    Verdict v[kBurst];
    uint64_t t = 1, at = 0;
    for (auto _ : state) {
        for (uint16_t i = 0; i < kBurst; ++i, ++at) {
            const test::Frame &f = fs[at % fs.size()];
            ptr[i] = f.data();
            lens[i] = static_cast<uint32_t>(f.size());
            now[i] = t++;
        }
        p.decide(ptr, lens, kBurst, now, v);
        benchmark::DoNotOptimize(v);
    }
    state.SetItemsProcessed(state.iterations() * kBurst);
    state.counters["ns_per_packet"] =
        benchmark::Counter(static_cast<double>(state.iterations() * kBurst),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PayloadRule)
    ->ArgNames({"patterns", "regex", "bytes", "match"})
    ->ArgsProduct({{0, 1, 100, 1000}, {kLiterals}, {64, 1500}, {0}})
    ->Args({10, kRegexes, 64, 0})
    ->Args({10, kRegexes, 1500, 0})
    ->Args({1, kLiterals, 64, 1})  // every payload holds the pattern: the match path
    ->Args({1000, kLiterals, 64, 1})
    ->Args({100, kLongLiterals, 64, 0})  // windows shorter than every pattern: not searched
    ->Args({100, kLongLiterals, 1500, 0})
    ->Unit(benchmark::kNanosecond);

void BM_Memmem(benchmark::State &state) {
    const std::vector<std::string> pats = literals(static_cast<unsigned>(state.range(0)));
    const std::vector<test::Frame> fs = frames(static_cast<size_t>(state.range(1)));
    size_t at = 0, found = 0;
    for (auto _ : state) {
        const test::Frame &f = fs[at++ % fs.size()];
        const uint8_t *payload = f.data() + 42;
        const size_t len = f.size() - 42;
        for (const std::string &s : pats)
            if (memmem(payload, len, s.data(), s.size()) != nullptr) {
                ++found;
                break;
            }
    }
    benchmark::DoNotOptimize(found);
    state.SetItemsProcessed(state.iterations());
    state.counters["ns_per_packet"] =
        benchmark::Counter(static_cast<double>(state.iterations()),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Memmem)
    ->ArgNames({"patterns", "bytes"})
    ->ArgsProduct({{1, 100, 1000}, {64, 1500}})
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace floodgate

BENCHMARK_MAIN();
