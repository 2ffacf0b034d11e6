// Steering through `floodgate replay --workers N` (issue 25): each source prefix has one owner
// core, so per-source keys are limited exactly, as on one core, and live in one table only;
// what steering cannot give one owner (aggregate keys, source prefixes coarser than the
// steering) is still shared by the merge and stays within docs/design.md's bound
// (docs/design.md, "Several cores: steering, and the merge for what is shared"):
//   b + floor(W / T) + (N - 1) * (b + ceil(L / T))
// Verdicts are checked against the reference model (tests/reference_model.h), which knows
// nothing of cores; key copies against keys counted here from the generated traffic; bounds
// from the passed timestamps alone, as tests/scenario/test_merge.cpp does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/pcap_io.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kMergeUs = 1000;  // L in replay: the merge interval, 1 ms

class SteeringScenario : public Scenario {
  protected:
    // Replays trace.pcap under rules.yaml on `workers` virtual cores, spread by the steering
    // (spread empty: replay's default) or as given; outputs pass<suffix>.pcap, drop<suffix>.pcap
    // and stats<suffix>.json.
    void replay_on(unsigned workers, const std::string &spread, const std::string &suffix) {
        ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        std::vector<std::string> argv = {floodgate_bin(),
                                         "replay",
                                         "--config",
                                         path("rules.yaml"),
                                         "--in",
                                         path("trace.pcap"),
                                         "--pass",
                                         path("pass" + suffix + ".pcap"),
                                         "--drop",
                                         path("drop" + suffix + ".pcap"),
                                         "--stats",
                                         path("stats" + suffix + ".json"),
                                         "--workers",
                                         std::to_string(workers),
                                         "--merge-interval-us",
                                         std::to_string(kMergeUs),
                                         "--quiet"};
        if (!spread.empty()) {
            argv.push_back("--spread");
            argv.push_back(spread);
        }
        const ProcessResult r = run_process(argv, dir_);
        ASSERT_EQ(r.exit_code, 0) << "floodgate replay --workers " << workers << " failed:\n"
                                  << r.err;
    }

    nlohmann::json stats(const std::string &suffix) {
        return nlohmann::json::parse(read_file(path("stats" + suffix + ".json")));
    }

    // Keys inserted into the limiter tables, summed over the cores: every key a core's table
    // ever held (its own, or one the merge charged to it), once per time it was inserted.
    uint64_t copies(const std::string &suffix) {
        const nlohmann::json s = stats(suffix);
        return u64(s.at("table"), "occupancy") + u64(s.at("table"), "reclaims");
    }

    // What pass<suffix>.pcap passed beyond one GCRA of burst and interval T.
    int64_t worst_excess(const std::string &suffix, int64_t burst, uint64_t interval_ns) {
        return worst_gcra_excess(path("pass" + suffix + ".pcap"), burst, interval_ns);
    }

    // docs/design.md's cross-core term: (N - 1) * (b + ceil(L / T)).
    static int64_t cross_core_term(unsigned workers, int64_t burst, uint64_t interval_ns) {
        const uint64_t lag_ns = kMergeUs * kNsPerUs;
        return static_cast<int64_t>(workers - 1) *
               (burst + static_cast<int64_t>((lag_ns + interval_ns - 1) / interval_ns));
    }

    // The flood of rules.yaml's one shared key replayed on 2, 4 and 16 cores: its excess over
    // one GCRA is within the cross-core term, and at least N - 1 (the key really is shared: the
    // other cores admit on their own before they hear of the first). per_run checks more of
    // each run (suffix "-N").
    void expect_shared_within_bound(
        int64_t burst, uint64_t interval_ns,
        const std::function<void(unsigned workers, const std::string &suffix)> &per_run) {
        for (unsigned workers : {2u, 4u, 16u}) {
            SCOPED_TRACE(std::to_string(workers) + " workers");
            const std::string suffix = std::string("-") + std::to_string(workers);
            ASSERT_NO_FATAL_FAILURE(replay_on(workers, "", suffix));
            const int64_t excess = worst_excess(suffix, burst, interval_ns);
            EXPECT_LE(excess, cross_core_term(workers, burst, interval_ns));
            EXPECT_GE(excess, static_cast<int64_t>(workers - 1));
            per_run(workers, suffix);
        }
    }
};

// A source's own address: IPv4 hosts 8 to a /24 (so one /24 holds keys of several owners), IPv6
// one /64 each.
IpAddr v4_host(unsigned i) {
    IpAddr a = a4("198.18.0.0");
    a[2] = static_cast<uint8_t>(1 + i / 8);
    a[3] = static_cast<uint8_t>(10 + 7 * (i % 8));
    return a;
}

IpAddr v6_net(unsigned i) {
    IpAddr a = a6("2001:db8::");
    a[4] = static_cast<uint8_t>(i >> 8);
    a[5] = static_cast<uint8_t>(i);
    a[7] = 1;
    return a;
}

// ---------------------------------------------------------------------------------------------
// Per-source rules: exactly the single-core verdicts at any number of cores.

constexpr const char *kPerSourceRules = R"(table: { entries_per_core: 4096 }
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 20/s, burst: 5 }
  - name: syn
    match: { proto: tcp, tcp_flags: "syn !ack" }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 3 }
  - name: ntp
    match: { proto: udp, dst_port: 123 }
    algorithm: fixed-window
    limit: { rate: 30/s }
  - name: udp_all
    match: { proto: udp }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 50/s, burst: 20 }
)";

// 48 IPv4 sources and 24 IPv6 /64s (every frame of a /64 from new random low 64 bits), each at
// one of six rates from far under to 50 times over its limits, to one of four services (UDP 53:
// dns and udp_all; UDP 123: ntp and udp_all; a TCP SYN: syn; UDP 5000: udp_all alone), from
// five UDP source ports, all interleaved over 1.2 s.
Generator per_source_traffic() {
    static const uint64_t kRates[] = {3, 12, 25, 60, 250, 1000};  // packets per second
    Traffic t;
    for (unsigned i = 0; i < 72; ++i) {
        const bool v6 = i >= 48;
        const unsigned n = v6 ? i - 48 : i;
        const uint64_t rate = kRates[i % 6];
        Flow f = v6 ? flow6("2001:db8::", kProtoUdp) : flow4("198.18.0.0", kProtoUdp);
        f.src = v6 ? v6_net(n) : v4_host(n);
        switch ((i / 6 + i) % 4) {
            case 0:
                f.dst_port = 53;
                break;
            case 1:
                f.dst_port = 123;
                break;
            case 2:
                f.proto = kProtoTcp;
                f.dst_port = 443;
                f.tcp_flags = kTcpSyn;
                break;
            default:
                f.dst_port = 5000;
        }
        size_t k = 0;
        const uint64_t period = per_second(rate);
        t.every(
            kStartNs + splitmix64(i) % ms(200), period, rate * 12 / 10,
            [f, v6, i, &k](uint64_t ts) {
                Flow g = f;
                g.src_port = static_cast<uint16_t>(40000 + (k * 7 + i) % 5);
                if (v6) {
                    const uint64_t low = splitmix64(uint64_t{i} << 32 | k);
                    for (int b = 0; b < 8; ++b) g.src[8 + b] = static_cast<uint8_t>(low >> 8 * b);
                }
                ++k;
                return make_packet(ts, g);
            },
            period / 2);
    }
    return t.generator(PcapPrecision::nano);
}

TEST_F(SteeringScenario, PerSourceRulesAgreeWithOneCoreAndTheModelAtAnyCoreCount) {
    const Generator gen = per_source_traffic();
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", kPerSourceRules));
    ASSERT_NO_FATAL_FAILURE(write_trace(gen, PcapPrecision::nano));
    for (unsigned workers : {1u, 2u, 4u, 16u}) {
        SCOPED_TRACE(std::to_string(workers) + " workers");
        // The harness reads pass.pcap, drop.pcap and stats.json: every frame in its place and
        // every counter as the model has them.
        ASSERT_NO_FATAL_FAILURE(replay_on(workers, "", ""));
        ASSERT_NO_FATAL_FAILURE(check_against_model(gen));
        const std::string n = std::string("-") + std::to_string(workers);
        for (const char *out : {"pass", "drop"})
            std::filesystem::rename(path(std::string(out) + ".pcap"),
                                    path(std::string(out) + n + ".pcap"));
        if (workers == 1) continue;
        // And byte for byte what one core wrote.
        EXPECT_TRUE(read_file(path("pass" + n + ".pcap")) == read_file(path("pass-1.pcap")));
        EXPECT_TRUE(read_file(path("drop" + n + ".pcap")) == read_file(path("drop-1.pcap")));
    }

    // The scenario exercises both sides of every rule.
    const ModelCounters &c = model_->counters();
    EXPECT_GT(c.packets, 10000u);
    for (size_t r = 0; r < c.rules.size(); ++r) {
        SCOPED_TRACE(model_->config().rules[r].name);
        EXPECT_GT(c.rules[r].passed, 100u);
        EXPECT_GT(c.rules[r].refused, 100u);
    }
    // The rotating /64s are limited as one source each: source 59, a /64 at 1000/s to UDP 53,
    // passes dns's burst and 20/s of its 1,200 frames; were each address its own key, every
    // frame would pass.
    EXPECT_GE(refused_for(c.rules[0], key_of(6, v6_net(59 - 48), 64)), 1100u);
}

// ---------------------------------------------------------------------------------------------
// Key copies: a core-local key lives in its owner's table only.

// Rules that never refill within the trace (1/h), so no key expires and every insert is one
// key on one core: the tables' occupancy + reclaims is exactly the copies of keys.
constexpr const char *kSlowRules = R"(rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 1/h, burst: 3 }
  - name: web
    match: { proto: tcp, dst_port: 443 }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 1/h, burst: 2 }
  - name: ntp_per24
    match: { proto: udp, dst_port: 123 }
    key: { ipv4: 24, ipv6: 64 }
    limit: { rate: 1/h, burst: 4 }
)";

TEST_F(SteeringScenario, EachCoreLocalKeyLivesInOneTable) {
    // Which keys the traffic has, per rule, counted from what is generated.
    std::set<std::pair<int, SourceKey>> local4, shared4, v6;
    Traffic t;
    const uint64_t span_ns = ms(500);
    const auto add = [&](const Flow &f, unsigned count, uint64_t seed) {
        const int rule = f.dst_port == 53 ? 0 : f.dst_port == 443 ? 1 : 2;
        for (unsigned k = 0; k < count; ++k) {
            Flow g = f;
            g.src_port = static_cast<uint16_t>(40000 + k % 3);
            if (g.family == 6)
                for (int b = 8; b < 16; ++b)
                    g.src[b] = static_cast<uint8_t>(splitmix64(seed * 64 + k) >> 8 * (b - 8));
            t.every(kStartNs + splitmix64(seed * 64 + k) % span_ns, 1, 1, g);
        }
        if (f.family == 6)
            v6.insert({rule, key_of(6, f.src, 64)});
        else if (rule == 2)
            shared4.insert({rule, key_of(4, f.src, 24)});
        else
            local4.insert({rule, key_of(4, f.src, 32)});
    };
    // 120 IPv4 hosts, 15 /24s of 8: each to UDP 53, a third also TCP 443, half also UDP 123.
    for (unsigned i = 0; i < 120; ++i) {
        Flow dns = flow4("198.18.0.0", kProtoUdp, 53);
        dns.src = v4_host(i);
        add(dns, 1 + i % 5, 3 * i);
        if (i % 3 == 0) {
            Flow web = dns;
            web.proto = kProtoTcp;
            web.dst_port = 443;
            web.tcp_flags = kTcpSyn;
            add(web, 2 + i % 4, 3 * i + 1);
        }
        if (i % 2 == 0) {
            Flow ntp = dns;
            ntp.dst_port = 123;
            add(ntp, 1 + i % 7, 3 * i + 2);
        }
    }
    for (unsigned i = 0; i < 40; ++i) {  // 40 /64s, every frame from its own address
        Flow f = flow6("2001:db8::", kProtoUdp, i % 2 == 0 ? 53 : 123);
        f.src = v6_net(i);
        add(f, 1 + i % 6, 1000 + i);
    }
    // After the last new key, one more frame of a known one: the merge before it has given
    // every shared key to every core.
    t.every(kStartNs + span_ns + ms(10), 1, 1, [&] {
        Flow f = flow4("198.18.0.0", kProtoUdp, 53);
        f.src = v4_host(0);
        return f;
    }());
    const uint64_t l4 = local4.size(), s4 = shared4.size(), k6 = v6.size();
    const uint64_t all = l4 + s4 + k6;
    ASSERT_EQ(s4, 15u);  // the traffic is what it says: 15 /24s under the ntp rule
    ASSERT_GT(l4, 150u);
    ASSERT_EQ(k6, 40u);

    const Generator gen = t.generator(PcapPrecision::nano);
    ASSERT_NO_FATAL_FAILURE(write_trace(gen, PcapPrecision::nano));

    // Steered by /32 and /64 (the file says so): the /24 rule's keys are shared, on every core;
    // every other key on its owner's alone.
    ASSERT_NO_FATAL_FAILURE(
        write_text("rules.yaml", std::string("steering: { ipv4: 32, ipv6: 64 }\n") + kSlowRules));
    ASSERT_NO_FATAL_FAILURE(replay_on(1, "", "-1"));
    EXPECT_EQ(copies("-1"), all);
    for (unsigned workers : {2u, 16u}) {
        const std::string suffix = "-steer" + std::to_string(workers);
        ASSERT_NO_FATAL_FAILURE(replay_on(workers, "", suffix));
        EXPECT_EQ(copies(suffix), l4 + k6 + workers * s4) << workers << " workers";
    }
    // --spread hash steers by the whole address: an IPv6 /64 key has many owners, so it is
    // shared like the /24s.
    ASSERT_NO_FATAL_FAILURE(replay_on(4, "hash", "-hash4"));
    EXPECT_EQ(copies("-hash4"), l4 + 4 * (s4 + k6));
    // Round robin: every key shared, on every core.
    ASSERT_NO_FATAL_FAILURE(replay_on(4, "rr", "-rr4"));
    EXPECT_EQ(copies("-rr4"), 4 * all);

    // Without the steering line it is derived from the rules: /24 (the shortest source key),
    // so the /24 keys have one owner too, every key is in one table, and every verdict is the
    // single core's (and the model's).
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", kSlowRules));
    ASSERT_NO_FATAL_FAILURE(replay_on(16, "", ""));
    EXPECT_EQ(copies(""), all);
    ASSERT_NO_FATAL_FAILURE(check_against_model(gen));
    EXPECT_GT(model_->counters().dropped, 0u);
}

// ---------------------------------------------------------------------------------------------
// Shared keys: still within the merge bound.

constexpr int64_t kFloodBurst = 5;
constexpr uint64_t kFloodIntervalNs = 10 * kNsPerMs;  // 100/s

// Three floods of 200 ms at 50,000 frames/s, 2 s apart (so every core starts each one with a
// full burst), to one destination, from sources src(k) of frame k.
void write_flood(const std::string &trace, const std::function<IpAddr(uint64_t)> &src) {
    PcapWriter w(trace, PcapPrecision::nano);
    uint64_t k = 0;
    for (uint64_t episode = 0; episode < 3; ++episode)
        for (uint64_t i = 0; i < 10000; ++i, ++k) {
            Flow f = flow4("198.18.0.0", kProtoUdp, 53);
            f.src = src(k);
            f.src_port = static_cast<uint16_t>(1024 + k % 60000);
            w.write(kStartNs + episode * sec(2) + i * 20 * kNsPerUs, make_packet(0, f).frame);
        }
    w.close();
}

TEST_F(SteeringScenario, AggregateRuleStaysWithinTheMergeBound) {
    // 509 sources over 198.18.0.0/16, so that every core owns some and sees the flood.
    write_flood(path("trace.pcap"), [](uint64_t k) {
        const uint64_t h = k * 37 % 509;
        IpAddr a = a4("198.18.0.0");
        a[2] = static_cast<uint8_t>(h / 200);
        a[3] = static_cast<uint8_t>(1 + h % 200);
        return a;
    });
    // No reserves: every class tests the whole burst, so one GCRA is the limit for all.
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", R"(table: { entries_per_core: 4096 }
rules:
  - name: dns_total
    match: { proto: udp, dst_port: 53 }
    key: dst
    limit: { rate: 100/s, burst: 5 }
    reserve: { established: 0%, verified: 0%, known: 0% }
)"));
    ASSERT_NO_FATAL_FAILURE(replay_on(1, "", "-1"));
    EXPECT_EQ(worst_excess("-1", kFloodBurst, kFloodIntervalNs), 0);
    expect_shared_within_bound(kFloodBurst, kFloodIntervalNs,
                               [&](unsigned, const std::string &suffix) {
                                   const nlohmann::json rule = stats(suffix)["rules"][0];
                                   EXPECT_EQ(u64(rule, "matched"), 30000u);
                                   EXPECT_GT(u64(rule, "refused"), 29000u);
                               });
}

TEST_F(SteeringScenario, SourceRuleCoarserThanTheSteeringIsSharedWithinTheMergeBound) {
    // Every host of one /24 in turn: one key of the /24 rule, many owners under /32 steering.
    write_flood(path("trace.pcap"), [](uint64_t k) {
        IpAddr a = a4("198.18.7.0");
        a[3] = static_cast<uint8_t>(k * 97);
        return a;
    });
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", R"(table: { entries_per_core: 4096 }
steering: { ipv4: 32 }
rules:
  - name: per24
    match: { proto: udp, dst_port: 53 }
    key: { ipv4: 24, ipv6: 64 }
    limit: { rate: 100/s, burst: 5 }
)"));
    ASSERT_NO_FATAL_FAILURE(replay_on(1, "", "-1"));
    EXPECT_EQ(worst_excess("-1", kFloodBurst, kFloodIntervalNs), 0);
    EXPECT_LE(copies("-1"), 3u);  // one key, inserted again at most once per flood
    // The /24's key is in every core's table.
    expect_shared_within_bound(
        kFloodBurst, kFloodIntervalNs,
        [&](unsigned workers, const std::string &suffix) { EXPECT_GE(copies(suffix), workers); });
}

}  // namespace
}  // namespace floodgate::test
