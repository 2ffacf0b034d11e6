// Scenarios on the limiter table: two million spoofed sources that the table absorbs by
// reclaiming expired keys, and a table too small for its live keys under each on_table_full
// policy.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Two million single-packet spoofed sources with three heavy hitters among them: the table
// reclaims expired entries and never fills, the heavy hitters stay exactly limited, and nobody
// else is refused.

// top_offenders: exact: the heavy hitters' counts are checked to the packet (about 1,700
// refusals a second, past the first 1,024 a sampled rule counts one by one).
constexpr const char *kRulesFlood = R"(table: { entries_per_core: 65536 }
rules:
  - name: flood
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 10/s, burst: 5 }
    top_offenders: exact
)";

constexpr uint64_t kSpoofedSources = 2'000'000;
constexpr uint64_t kSpoofSpacingNs = 20 * kNsPerUs;  // 50,000 new sources a second, 40 s

// Spoofed source i, distinct for every i: one in 32 is IPv4 in 198.19.0.0/16, the rest IPv6
// with an odd-multiplier (so bijective) scramble of i as the low 64 bits in 2001:db8:8000::/48.
Flow spoofed_flow(uint64_t i) {
    if (i % 32 == 0) {
        const uint64_t j = i / 32;  // < 65536
        Flow f = flow4("198.19.0.0", kProtoUdp, 80);
        f.src[2] = static_cast<uint8_t>(j >> 8);
        f.src[3] = static_cast<uint8_t>(j);
        f.payload_bytes = 0;
        return f;
    }
    Flow f = flow6("2001:db8:8000::", kProtoUdp, 80);
    const uint64_t low = i * 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < 8; ++b) f.src[8 + b] = static_cast<uint8_t>(low >> (8 * (7 - b)));
    f.src_port = static_cast<uint16_t>(1024 + i % 60000);
    f.payload_bytes = 0;
    return f;
}

struct HeavyHitter {
    Flow flow;
    uint64_t period_ns;
};

std::vector<HeavyHitter> heavy_hitters() {
    return {{flow4("198.18.0.1", kProtoUdp, 53), per_second(1000)},
            {flow6("2001:db8:1::1", kProtoTcp, 80, kTcpSyn), per_second(500)},
            {flow4("198.18.0.2", kProtoUdp, 123), per_second(250)}};
}

Generator flood_traffic() {
    return [](const Sink &sink) {
        std::vector<HeavyHitter> heavy = heavy_hitters();
        std::vector<uint64_t> next_ns;
        for (size_t h = 0; h < heavy.size(); ++h) next_ns.push_back(kStartNs + (7 + h) * kNsPerUs);
        for (uint64_t i = 0; i < kSpoofedSources; ++i) {
            const uint64_t ts = kStartNs + i * kSpoofSpacingNs;
            for (size_t h = 0; h < heavy.size(); ++h)
                for (; next_ns[h] <= ts; next_ns[h] += heavy[h].period_ns)
                    sink(make_packet(next_ns[h], heavy[h].flow));
            sink(make_packet(ts, spoofed_flow(i)));
        }
    };
}

TEST_F(Scenario, TwoMillionSpoofedSourcesWithThreeHeavyHitters) {
    ASSERT_NO_FATAL_FAILURE(run(kRulesFlood, flood_traffic(), PcapPrecision::micro));

    const ModelCounters &c = model_->counters();
    const Rule &rule = model_->config().rules[0];
    const ModelRuleCounters &r = c.rules[0];
    // The model's own view: exactly the heavy hitters are refused, most traffic first.
    std::vector<SourceKey> heavy_keys;
    for (const HeavyHitter &h : heavy_hitters())
        heavy_keys.push_back(key_of(h.flow.family, h.flow.src,
                                    h.flow.family == 4 ? rule.key_ipv4_len : rule.key_ipv6_len));
    ASSERT_EQ(r.refused_by_key.size(), heavy_keys.size());
    for (size_t h = 0; h < heavy_keys.size(); ++h) {
        ASSERT_GT(refused_for(r, heavy_keys[h]), 0u);
        if (h > 0) {
            ASSERT_GT(refused_for(r, heavy_keys[h - 1]), refused_for(r, heavy_keys[h]));
        }
    }
    EXPECT_GE(c.packets, kSpoofedSources);

    // The pipeline's: the table kept up by reclaiming, and names the three, most first.
    const json &table = stats_.at("table");
    EXPECT_GT(u64(table, "reclaims"), 0u);
    EXPECT_EQ(u64(table, "full_events"), 0u);
    const json &top = stats_.at("rules").at(0).at("top_refused");
    ASSERT_EQ(top.size(), heavy_keys.size());
    for (size_t h = 0; h < heavy_keys.size(); ++h) {
        const std::string text = top.at(h).value("source", "");
        std::string why;
        const std::optional<Prefix> p = parse_prefix(text, &why);
        ASSERT_TRUE(p.has_value()) << text << ": " << why;
        EXPECT_EQ((SourceKey{p->family, p->addr}), heavy_keys[h]) << "top_refused[" << h << "]";
        EXPECT_EQ(u64(top.at(h), "count"), refused_for(r, heavy_keys[h]));
    }
}

// ---------------------------------------------------------------------------------------------
// A table too small for its live keys, under each on_table_full policy.
//
// `table: { entries_per_core: 1 }` gives the smallest table the dataplane makes: 2 buckets of
// 3 slots, and since a key's two candidate buckets are then always both buckets, every key may
// use all 6 slots. Live entries are never evicted, so with one rule a new key finds the table
// full exactly when 6 keys have a TAT after now.
//
// One rule of 10/s with bursts of 2 (T = 100 ms, tau = 200 ms). Sources sending 20/s stay
// live: once their burst is spent, every other packet is admitted and leaves the TAT tau ahead
// of it, so each arrival finds the TAT at least T ahead.
//   - 6 residents at 20/s from 0 to 1 s: they take the 6 slots and keep them.
//   - 12 latecomers send 3 packets each between 200 and 840 ms: every one finds the table full.
//   - From 1.5 s (every resident long expired) latecomers 0-9 return at 20/s, 1 ms apart. The
//     first 6 take the slots; latecomers 0-3 stop after 4 packets, so their TATs end at
//     1.8 s + i ms, and latecomers 6-9 find the table full six times each (1.506 s + i ms to
//     1.756 s + i ms), then get in at their seventh packet.
//   - Latecomer 6 also probes at 1.8 s - 1 us and at 1.8 s exactly, when latecomer 0's TAT
//     reaches 1.8 s: full, then a free slot (a TAT equal to now has expired).

constexpr uint64_t kTinyTableLiveKeys = 6;  // entries_per_core 1: 2 buckets x 3 slots
constexpr int kResidents = 6;
constexpr int kLatecomers = 12;
constexpr int kReturning = 10;  // latecomers 0-9 come back at 1.5 s
constexpr int kProbingLatecomer = 6;
const uint64_t kProbeNs = kStartNs + ms(1800);

std::string tiny_table_rules(const char *on_table_full) {
    return std::string(R"(table: { entries_per_core: 1 }
rules:
  - name: per_source
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 2 }
    on_table_full: )") +
           on_table_full + "\n";
}

Flow resident(int i) {
    return flow4(("198.18.1." + std::to_string(1 + i)).c_str(), kProtoUdp, 53);
}
Flow latecomer(int i) {
    return flow4(("198.18.2." + std::to_string(1 + i)).c_str(), kProtoUdp, 53);
}

Traffic tiny_table_traffic() {
    Traffic t;
    const uint64_t s = kStartNs;
    for (int i = 0; i < kResidents; ++i) t.every(s + i * ms(5), per_second(20), 20, resident(i));
    for (int i = 0; i < kLatecomers; ++i)
        t.every(s + ms(200) + i * ms(40), ms(100), 3, latecomer(i));
    for (int i = 0; i < kReturning; ++i)
        t.every(s + ms(1500) + i * ms(1), per_second(20), i < 4 ? 4 : 10, latecomer(i));
    t.every(kProbeNs - kNsPerUs, kNsPerUs, 2, latecomer(kProbingLatecomer));
    return t;
}

// What the model decided for the packets that tell the story above.
struct TinyTableSeen {
    uint64_t full_passed = 0;  // packets whose key found the table full, passed
    uint64_t full_dropped = 0;
    uint64_t residents_full = 0;    // resident packets that found the table full
    uint64_t latecomers_early = 0;  // latecomer packets in the first second
    uint64_t latecomers_early_full = 0;
    std::vector<bool> probes_full;  // the two probes
};

class TableFull : public Scenario {
  protected:
    // Runs the tiny table under one policy and checks what holds under every policy.
    void run_tiny_table(const char *on_table_full, TinyTableSeen *seen) {
        const IpAddr probe_src = latecomer(kProbingLatecomer).src;
        const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
            const bool full = d.table_full > 0;
            if (full) ++(d.pass ? seen->full_passed : seen->full_dropped);
            const uint8_t net = p.info.src[2];  // 1: residents, 2: latecomers
            if (net == 1 && full) ++seen->residents_full;
            if (net == 2 && p.info.ts_ns < kStartNs + sec(1)) {
                ++seen->latecomers_early;
                if (full) ++seen->latecomers_early_full;
            }
            if (p.info.src == probe_src &&
                (p.info.ts_ns == kProbeNs - kNsPerUs || p.info.ts_ns == kProbeNs))
                seen->probes_full.push_back(full);
        };
        table_live_keys_ = kTinyTableLiveKeys;
        ASSERT_NO_FATAL_FAILURE(run(tiny_table_rules(on_table_full),
                                    tiny_table_traffic().generator(PcapPrecision::micro),
                                    PcapPrecision::micro, obs));

        // The model's own view follows the story: only latecomers ever meet a full table, all
        // of them while the residents hold it, and a TAT equal to now frees its slot.
        EXPECT_EQ(seen->residents_full, 0u);
        EXPECT_EQ(seen->latecomers_early, 3u * kLatecomers);
        EXPECT_EQ(seen->latecomers_early_full, seen->latecomers_early);
        ASSERT_EQ(seen->probes_full.size(), 2u);
        EXPECT_TRUE(seen->probes_full[0]) << "1 us before latecomer 0's TAT";
        EXPECT_FALSE(seen->probes_full[1]) << "at latecomer 0's TAT";
        // Whatever the policy: those 36, then latecomers 6-9 six times each before their
        // slots free up, and the first probe.
        const ModelCounters &c = model_->counters();
        EXPECT_EQ(c.table_full_events, 36u + 4 * 6 + 1);
        EXPECT_EQ(c.table_full_events, seen->full_passed + seen->full_dropped);
    }
};

TEST_F(TableFull, SharedPolicyHoldsNewKeysToOneSharedLimit) {
    TinyTableSeen seen;
    ASSERT_NO_FATAL_FAILURE(run_tiny_table("shared", &seen));
    const ModelCounters &c = model_->counters();
    const ModelRuleCounters &r = c.rules[0];
    EXPECT_GT(r.table_full_shared, 0u);
    EXPECT_EQ(r.table_full_shared, c.table_full_events);
    EXPECT_EQ(r.table_full_pass, 0u);
    EXPECT_EQ(r.table_full_drop, 0u);
    // Twelve sources through one 10/s bucket: a few get through, most do not.
    EXPECT_GT(seen.full_passed, 0u);
    EXPECT_GT(seen.full_dropped, seen.full_passed);
}

TEST_F(TableFull, PassPolicyAdmitsNewKeysWithoutStoringThem) {
    TinyTableSeen seen;
    ASSERT_NO_FATAL_FAILURE(run_tiny_table("pass", &seen));
    const ModelCounters &c = model_->counters();
    const ModelRuleCounters &r = c.rules[0];
    EXPECT_GT(r.table_full_pass, 0u);
    EXPECT_EQ(r.table_full_pass, c.table_full_events);
    EXPECT_EQ(r.table_full_shared, 0u);
    EXPECT_EQ(r.table_full_drop, 0u);
    EXPECT_EQ(seen.full_passed, c.table_full_events);
    EXPECT_EQ(seen.full_dropped, 0u);
}

TEST_F(TableFull, DropPolicyRefusesNewKeysAndBlamesThem) {
    TinyTableSeen seen;
    ASSERT_NO_FATAL_FAILURE(run_tiny_table("drop", &seen));
    const ModelCounters &c = model_->counters();
    const ModelRuleCounters &r = c.rules[0];
    EXPECT_GT(r.table_full_drop, 0u);
    EXPECT_EQ(r.table_full_drop, c.table_full_events);
    EXPECT_EQ(r.table_full_shared, 0u);
    EXPECT_EQ(r.table_full_pass, 0u);
    EXPECT_EQ(seen.full_dropped, c.table_full_events);
    EXPECT_EQ(seen.full_passed, 0u);
    // A refusal like any other: counted in refused and against the key.
    EXPECT_GE(r.refused, r.table_full_drop);
    for (int i = 0; i < kLatecomers; ++i)
        EXPECT_GE(refused_for(r, key_of(4, latecomer(i).src, 32)), 3u) << "latecomer " << i;
}

}  // namespace
}  // namespace floodgate::test
