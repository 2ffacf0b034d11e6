// The seeds' other algorithms through `floodgate replay`: fixed-window, sliding-window and
// token-bucket rules, every frame and counter checked against the reference model's own
// versions of them (tests/reference_model.h: a clock-aligned counter, the seeds'
// WindowPair, a bucket of tokens), with the boundary behaviour the seeds describe, and the
// fixed window's cross-core merge bound (docs/design.md, "Several cores").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kMin = 60 * kNsPerSec;

// The first multiple of w after t: where windows of length w change.
uint64_t boundary_after(uint64_t t, uint64_t w) {
    return (t / w + 1) * w;
}

// ---------------------------------------------------------------------------------------------
// Fixed window: "3 per 10 minutes" on a login port, and 50 a second on UDP.

constexpr const char *kRulesFixed = R"(rules:
  - name: login
    match: { proto: tcp, dst_port: 22, tcp_flags: "syn !ack" }
    algorithm: fixed-window
    limit: { rate: 3/10m }
  - name: udp
    match: { proto: udp }
    algorithm: fixed-window
    limit: { rate: 50/s }
)";

TEST_F(Scenario, FixedWindowCountsPerClockWindowWithTheDoubleBurstAtItsEdge) {
    const uint64_t w_login = 10 * kMin;
    const uint64_t edge = boundary_after(kStartNs + kMin, w_login);  // a 10-minute boundary
    Traffic t;
    // The double burst: 3 tries in the last second before a boundary, 3 in the first after,
    // each followed by 3 more that find the window spent.
    t.every(edge - 900 * kNsPerMs, 100 * kNsPerMs, 6, flow4("198.18.30.1", kProtoTcp, 22, kTcpSyn));
    t.every(edge + 100 * kNsPerMs, 100 * kNsPerMs, 6, flow4("198.18.30.1", kProtoTcp, 22, kTcpSyn));
    // Steady guessers over 40 minutes: one a minute (3 of each 10 pass), one every 4 minutes
    // (never over), and a /64 rotating IPv6 one every 20 s.
    t.every(kStartNs + 7 * kNsPerSec, kMin, 40, flow4("198.18.30.2", kProtoTcp, 22, kTcpSyn));
    t.every(kStartNs + 11 * kNsPerSec, 4 * kMin, 10, flow4("198.18.30.3", kProtoTcp, 22, kTcpSyn));
    t.every(kStartNs + 13 * kNsPerSec, 20 * kNsPerSec, 120,
            flow6("2001:db8:30::1", kProtoTcp, 22, kTcpSyn));
    // Established traffic to port 22 is not a login attempt.
    t.every(kStartNs + 3 * kNsPerSec, 10 * kNsPerSec, 240,
            flow4("198.18.30.2", kProtoTcp, 22, kTcpAck));
    // UDP at 80/s and 40/s with jitter, for 3 s of seconds' windows.
    t.every(kStartNs, per_second(80), 240, flow4("198.18.31.1", kProtoUdp, 53), 3 * kNsPerMs);
    t.every(kStartNs + 1, per_second(40), 120, flow4("198.18.31.2", kProtoUdp, 53), 5 * kNsPerMs);

    uint64_t passed_near_edge = 0;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (first4(p.info.src) == first4(a4("198.18.30.1")) && d.pass &&
            p.info.ts_ns + kNsPerSec > edge && p.info.ts_ns < edge + kNsPerSec)
            ++passed_near_edge;
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesFixed, t.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    const ModelCounters &c = model_->counters();
    // 2N within 1 s around the boundary, all admitted: the seeds' double burst.
    EXPECT_EQ(passed_near_edge, 6u);
    EXPECT_EQ(refused_for(c.rules[0], key_of(4, a4("198.18.30.1"), 32)), 6u);
    EXPECT_GT(refused_for(c.rules[0], key_of(4, a4("198.18.30.2"), 32)), 0u);
    EXPECT_EQ(refused_for(c.rules[0], key_of(4, a4("198.18.30.3"), 32)), 0u);
    EXPECT_GT(refused_for(c.rules[0], key_of(6, a6("2001:db8:30::"), 64)), 0u);
    EXPECT_GT(refused_for(c.rules[1], key_of(4, a4("198.18.31.1"), 32)), 0u);
    EXPECT_EQ(refused_for(c.rules[1], key_of(4, a4("198.18.31.2"), 32)), 0u);
}

// ---------------------------------------------------------------------------------------------
// Sliding window: the previous window, weighted by what is left of it, refuses early in the
// next one what a fixed window would admit.

constexpr const char *kRulesSliding = R"(rules:
  - name: api
    match: { proto: udp }
    algorithm: sliding-window
    limit: { rate: 10/s }
  - name: daily
    match: { proto: tcp }
    key: { ipv4: 24, ipv6: 48 }
    algorithm: sliding-window
    limit: { rate: 10000/d }
)";

TEST_F(Scenario, SlidingWindowWeighsThePreviousWindow) {
    const uint64_t edge = boundary_after(kStartNs, kNsPerSec) + 2 * kNsPerSec;
    Traffic t;
    // The seeds' example on one source: 12 at 0.9 s into a window (10 pass), 12 at 1.1 s (90%
    // of the previous window still inside: 1 passes), 12 at 1.5 s (4 pass), 12 at 3.2 s (10).
    const Flow seeds = flow4("198.18.40.1", kProtoUdp, 443);
    for (const uint64_t at_ms : {900u, 1100u, 1500u, 3200u})
        t.every(edge - kNsPerSec + at_ms * kNsPerMs, kNsPerUs, 12, seeds);
    // Paced sources around the limit, over 6 s.
    t.every(kStartNs + 5, per_second(9), 54, flow4("198.18.40.2", kProtoUdp, 53), 20 * kNsPerMs);
    t.every(kStartNs + 7, per_second(13), 78, flow4("198.18.40.3", kProtoUdp, 53), 10 * kNsPerMs);
    t.every(kStartNs + 9, per_second(40), 240, flow6("2001:db8:40::5", kProtoUdp, 53));
    // "10,000 a day" per /24, over two days: 7,000 a day from one /24 (never over), bursts of
    // 6,000 every 12 h from another (the weighted estimate refuses part of some of them).
    t.every(kStartNs + 11, 86'400 * kNsPerSec / 7000, 14000,
            flow4("198.18.41.1", kProtoTcp, 443, kTcpAck));
    for (uint64_t burst = 0; burst < 4; ++burst)
        t.every(kStartNs + 13 + burst * 12 * 3600 * kNsPerSec, kNsPerMs, 6000,
                flow4("198.18.42.1", kProtoTcp, 443, kTcpAck));

    uint64_t seeds_passed[4] = {};
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (first4(p.info.src) != first4(a4("198.18.40.1")) || !d.pass) return;
        const uint64_t since = p.info.ts_ns - (edge - kNsPerSec);
        ++seeds_passed[since < 1000 * kNsPerMs   ? 0
                       : since < 1400 * kNsPerMs ? 1
                       : since < 2000 * kNsPerMs ? 2
                                                 : 3];
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesSliding, t.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    EXPECT_EQ(seeds_passed[0], 10u);
    EXPECT_EQ(seeds_passed[1], 1u);  // a fixed window would admit 10 here
    EXPECT_EQ(seeds_passed[2], 4u);
    EXPECT_EQ(seeds_passed[3], 10u);
    const ModelCounters &c = model_->counters();
    EXPECT_EQ(refused_for(c.rules[1], key_of(4, a4("198.18.41.0"), 24)), 0u);
    EXPECT_GT(refused_for(c.rules[1], key_of(4, a4("198.18.42.0"), 24)), 0u);
    EXPECT_LT(refused_for(c.rules[1], key_of(4, a4("198.18.42.0"), 24)), 4u * 6000 - 10000);
    EXPECT_GT(refused_for(c.rules[0], key_of(4, a4("198.18.40.3"), 32)), 0u);
}

// ---------------------------------------------------------------------------------------------
// Token bucket: checked against a bucket of tokens, and the same frames as GCRA.

constexpr const char *kRulesBucket = R"(rules:
  - name: udp
    match: { proto: udp }
    algorithm: token-bucket
    limit: { rate: 20/s, burst: 4 }
  - name: syn
    match: { proto: tcp, tcp_flags: syn }
    key: { ipv4: 24, ipv6: 48 }
    algorithm: token-bucket
    limit: { rate: 30/min, burst: 10 }
)";

TEST_F(Scenario, TokenBucketAdmitsWhatGcraAdmits) {
    Traffic t;
    t.every(kStartNs + 3, ms(200), 30, flow4("198.18.50.1", kProtoUdp, 53));
    t.every(kStartNs + 1, per_second(20), 120, flow4("198.18.50.2", kProtoUdp, 53));
    t.every(kStartNs, 28'571 * kNsPerUs, 210, flow4("198.18.50.3", kProtoUdp, 123), ms(3));
    for (uint64_t burst = 0; burst < 4; ++burst)
        t.every(kStartNs + burst * ms(1500), kNsPerUs, 12, flow4("198.18.50.4", kProtoUdp, 53));
    t.every(kStartNs + 5, per_second(3), 60, flow4("198.18.51.7", kProtoTcp, 80, kTcpSyn), ms(50));
    t.every(kStartNs + 9, per_second(2), 40, flow6("2001:db8:51::9", kProtoTcp, 80, kTcpSyn));
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesBucket, t.generator(PcapPrecision::micro), PcapPrecision::micro));
    const ModelCounters &c = model_->counters();
    EXPECT_GT(c.rules[0].refused, 0u);
    EXPECT_GT(c.rules[1].refused, 0u);
    EXPECT_EQ(refused_for(c.rules[0], key_of(4, a4("198.18.50.2"), 32)), 0u);

    // The same trace under the same limits as GCRA: the same bytes out.
    std::string gcra = kRulesBucket;
    for (size_t at; (at = gcra.find("algorithm: token-bucket")) != std::string::npos;)
        gcra.replace(at, 23, "algorithm: gcra");
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", gcra));
    ASSERT_NO_FATAL_FAILURE(replay("-gcra"));
    EXPECT_EQ(read_file(path("pass-gcra.pcap")), read_file(path("pass.pcap")));
    EXPECT_EQ(read_file(path("drop-gcra.pcap")), read_file(path("drop.pcap")));
}

// ---------------------------------------------------------------------------------------------
// A fixed window over several cores: one source flooding at 20,000/s, spread round robin
// over N virtual cores merged every M (1 ms), limit 100 a second. In each window the cores
// pass at most N_limit + (cores - 1) x a, a being the most packets one core receives within
// M (docs/design.md, "Several cores"); one core passes exactly the limit.

class WindowMerge : public Scenario {
  protected:
    static constexpr uint64_t kLimit = 100;
    static constexpr uint64_t kMergeNs = kNsPerMs;
    static constexpr uint64_t kGapNs = 50 * kNsPerUs;
    static constexpr uint64_t kPackets = 59000;  // 2.95 s: three windows, each over the limit

    uint64_t first_ns() const { return boundary_after(kStartNs, kNsPerSec) + 137 * kNsPerUs; }

    void write_flood() {
        PcapWriter w(path("trace.pcap"), PcapPrecision::nano);
        const Frame f =
            PacketBuilder().ipv4("198.18.60.6", "198.18.100.53").udp(4000, 53).payload(20).build();
        for (uint64_t i = 0; i < kPackets; ++i) w.write(first_ns() + i * kGapNs, f);
        w.close();
        write_text("rules.yaml",
                   "rules:\n  - name: dns\n    match: { proto: udp, dst_port: 53 }\n"
                   "    algorithm: fixed-window\n    limit: { rate: 100/s }\n");
    }

    // Passed frames per one-second window, from the passed timestamps.
    std::vector<uint64_t> passed_per_window(unsigned workers) {
        const std::string suffix = "-" + std::to_string(workers);
        const ProcessResult r = run_process(
            {floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in", path("trace.pcap"),
             "--pass", path("pass" + suffix + ".pcap"), "--workers", std::to_string(workers),
             "--spread", "rr", "--merge-interval-us", std::to_string(kMergeNs / 1000), "--quiet"},
            dir_);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const uint64_t first_window = first_ns() / kNsPerSec;
        const uint64_t last_window = (first_ns() + (kPackets - 1) * kGapNs) / kNsPerSec;
        std::vector<uint64_t> per(last_window - first_window + 1, 0);
        for (const PcapRecord &rec : read_pcap(path("pass" + suffix + ".pcap")).records)
            ++per.at(rec.ts_ns / kNsPerSec - first_window);
        return per;
    }

    // Most packets one core receives (round robin) within any span of M.
    static uint64_t per_core_in_merge(unsigned workers) {
        const uint64_t core_gap = workers * kGapNs;
        return kMergeNs / core_gap + 1;
    }
};

TEST_F(WindowMerge, OneCoreIsExactlyTheLimit) {
    write_flood();
    for (uint64_t passed : passed_per_window(1)) EXPECT_EQ(passed, kLimit);
}

TEST_F(WindowMerge, SeveralCoresStayWithinTheBound) {
    write_flood();
    for (unsigned n : {2u, 4u}) {
        const uint64_t bound = kLimit + (n - 1) * per_core_in_merge(n);
        uint64_t most = 0;
        for (uint64_t passed : passed_per_window(n)) {
            EXPECT_LE(passed, bound) << n << " cores";
            EXPECT_GE(passed, kLimit) << n << " cores";
            most = std::max(most, passed);
        }
        // The bound is not idle talk: the cores do pass more than one would.
        EXPECT_GT(most, kLimit) << n << " cores";
        std::printf("%u cores: at most %llu a window (bound %llu)\n", n,
                    static_cast<unsigned long long>(most), static_cast<unsigned long long>(bound));
    }
}

}  // namespace
}  // namespace floodgate::test
