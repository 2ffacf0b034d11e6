// Stats read while a core decides: a writer thread runs Pipeline::decide on a mixed traffic
// without pause, as a worker does (serving readings between bursts), and the reader takes
// 10,000 readings as floodctl and telemetry would. Every reading must keep the invariants of
// dataplane/api/stats.h exactly: a copy taken by the reader itself, between a rule's `matched`
// and its verdict or between a burst's rule counters and its totals, breaks them. No EAL: no
// allow/block prefixes.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "dataplane/pipeline/pipeline.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

Rule make_rule(const char *name, uint16_t dst_port, uint32_t burst, RuleMode mode) {
    Rule r;
    r.name = name;
    r.match.proto = kProtoUdp;
    if (dst_port != 0) r.match.dst_ports = {{dst_port, dst_port}};
    r.rate_count = 1;
    r.rate_period_ns = 1000000;  // 1/ms: sources refill as the writer's clock runs
    r.burst_pkts = burst;
    r.mode = mode;
    // Every refusal counted, so that a summary's counts add up to the rule's refusals in every
    // reading (sampled ones are estimates past a core's first refusals of a second).
    r.top_offenders = TopOffenders::exact;
    return r;
}

// Runs the race for these rules; each must see refusals, overrulings or would-be refusals.
void race_readings(std::vector<Rule> rule_list) {
    Config c;
    c.table_entries_per_core = 4096;
    c.rules = std::move(rule_list);
    std::string error;
    std::unique_ptr<RuleSet> rules = RuleSet::build(c, -1, &error);
    ASSERT_NE(rules, nullptr) << error;
    LimitTable table(c.table_entries_per_core, HashSeed{{1, 2, 3, 4}});
    Pipeline pipeline(rules.get(), &table);

    // A burst of 32: DNS and other UDP from 100 sources, a malformed frame, a non-IP frame.
    std::vector<test::Frame> frames;
    for (unsigned i = 0; i < 30; ++i)
        frames.push_back(test::PacketBuilder()
                             .ipv4("198.18.1." + std::to_string(1 + i % 7), "198.18.255.1")
                             .udp(1000, i % 3 == 0 ? 123 : 53)
                             .build());
    frames.push_back(test::PacketBuilder().ipv4("198.18.1.1", "198.18.255.1").ipv4_ihl(3).build());
    frames.push_back(test::PacketBuilder().eth(0x0806).payload(28).build());
    ASSERT_EQ(frames.size(), kMaxBurst);
    const uint8_t *ptrs[kMaxBurst];
    uint32_t lens[kMaxBurst];
    for (unsigned i = 0; i < kMaxBurst; ++i) {
        ptrs[i] = frames[i].data();
        lens[i] = static_cast<uint32_t>(frames[i].size());
    }

    std::atomic<bool> done{false};
    std::atomic<uint64_t> bursts{0};
    pipeline.start_serving_reads();
    std::thread writer([&] {
        uint64_t now[kMaxBurst];
        Verdict verdicts[kMaxBurst];
        uint64_t clock_ns = 1000000000;
        // Bounded: stops when the reader is done, or after far more bursts than it needs.
        for (uint64_t b = 0; !done.load(std::memory_order_relaxed) && b < 200000000; ++b) {
            for (unsigned i = 0; i < kMaxBurst; ++i) now[i] = clock_ns + i * 10000;
            clock_ns += 400000;
            pipeline.decide(ptrs, lens, kMaxBurst, now, verdicts);
            bursts.store(b + 1, std::memory_order_relaxed);
            pipeline.serve_reads();
        }
        pipeline.stop_serving_reads();
    });

    constexpr unsigned kReadings = 10000;
    unsigned broken = 0, unreadable = 0;
    uint64_t last_packets = 0, changed = 0;
    Pipeline::Stats s;
    for (unsigned n = 0; n < kReadings; ++n) {
        if (!pipeline.read_stats(*rules, &s)) {
            ++unreadable;
            continue;
        }
        const WorkerCounters &w = s.counters;
        uint64_t by_reason = 0;
        for (uint64_t r : w.malformed_by_reason) by_reason += r;
        uint64_t refused = 0;
        bool ok = w.packets == w.passed + w.dropped &&
                  w.dropped == w.malformed + w.block_hits + w.rate_limited &&
                  w.malformed == by_reason;
        for (const RuleCounters &r : s.rules) {
            ok = ok && r.matched == r.passed + r.refused + r.overruled;
            refused += r.refused;
        }
        ok = ok && refused == w.rate_limited;
        // Summaries copied whole: their counts add up to the refusals they were fed (Space-
        // Saving keeps the sum), none below its own error bound. They are copied at the same
        // instant as the counters for the first kSummariesPerPass rules, and after it for the
        // others (a loop pass or a few newer), never before.
        for (size_t r = 0; r < s.rules.size(); ++r) {
            uint64_t fed = 0;
            for (const HeavyHitter &h : s.top_refused[r].top(HeavyHitters::kCounters)) {
                fed += h.count;
                ok = ok && h.count >= 1 && h.error < h.count;
            }
            const uint64_t counted = s.rules[r].refused + s.rules[r].shadow_refused;
            ok = ok && (r < Pipeline::kSummariesPerPass ? fed == counted : fed >= counted);
        }
        broken += !ok;
        changed += w.packets != last_packets;
        last_packets = w.packets;
    }
    done.store(true);
    writer.join();
    EXPECT_EQ(broken, 0u) << "readings that broke an invariant, of " << kReadings;
    EXPECT_EQ(unreadable, 0u);
    // The core answers between bursts, so each reading comes after at least one more burst.
    EXPECT_EQ(changed, kReadings) << "bursts decided: " << bursts.load();
    for (const RuleCounters &r : s.rules) EXPECT_GT(r.refused + r.overruled + r.shadow_refused, 0u);
}

TEST(ConcurrentStats, EveryReadingKeepsTheInvariants) {
    // Port 53 matches all three rules: "dns" refuses first, so the others are overruled when it
    // does; "all" also refuses on its own; "watch" is a shadow rule that never holds a packet.
    race_readings({make_rule("dns", 53, 2, RuleMode::enforce),
                   make_rule("all", 0, 3, RuleMode::enforce),
                   make_rule("watch", 53, 1, RuleMode::shadow)});
}

// More rules than a loop pass copies summaries of: the counters still come from one instant.
TEST(ConcurrentStats, ManyRulesReadOverSeveralPasses) {
    std::vector<Rule> rules;
    for (unsigned i = 0; i < 20; ++i)
        rules.push_back(make_rule(("r" + std::to_string(i)).c_str(), i % 2 ? 53 : 0, 1 + i % 3,
                                  i % 5 == 4 ? RuleMode::shadow : RuleMode::enforce));
    race_readings(rules);
}

}  // namespace
}  // namespace floodgate
