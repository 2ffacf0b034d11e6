// Scenarios on the rules themselves: per-source limits over IPv4 and IPv6 keys, several rules
// on one packet, shadow mode. The harness (harness.h) checks every frame and counter against
// the reference model; the assertions here make sure each scenario exercises what it is about.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

// ---------------------------------------------------------------------------------------------
// IPv4 sources over and under their limits.

constexpr const char *kRulesPerSource = R"(# IPv4 sources over and under one per-source UDP limit
rules:
  - name: udp_per_source
    match: { proto: udp }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 20/s, burst: 4 }
    action: drop
    mode: enforce
)";

TEST_F(Scenario, Ipv4SourcesOverAndUnderTheirLimits) {
    Traffic t;
    t.every(kStartNs + ms(3), ms(200), 30, flow4("198.18.0.10", kProtoUdp, 53));  // 5/s
    // Exactly at the rate, one every T: tat == now each time, never refused.
    t.every(kStartNs + ms(1), per_second(20), 120, flow4("198.18.0.11", kProtoUdp, 53));
    t.every(kStartNs, 28'571 * kNsPerUs, 210, flow4("198.18.0.12", kProtoUdp, 123),
            ms(3));  // about 35/s, jittered
    t.every(kStartNs + ms(5), per_second(50), 300, flow4("198.18.0.12", kProtoTcp, 443, kTcpAck));
    for (uint64_t burst = 0; burst < 4; ++burst)  // 12 back to back every 1.5 s
        t.every(kStartNs + burst * ms(1500), kNsPerUs, 12, flow4("198.18.0.13", kProtoUdp, 53));
    for (int host = 1; host <= 8; ++host) {
        const std::string src = "198.18.1." + std::to_string(host);
        t.every(kStartNs + host * 1'300 * kNsPerUs, ms(10), 600,
                flow4(src.c_str(), kProtoUdp, 4000 + host));  // 100/s
    }
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesPerSource, t.generator(PcapPrecision::micro), PcapPrecision::micro));

    // The scenario exercises both sides of the limit.
    const ModelRuleCounters &r = model_->counters().rules[0];
    EXPECT_EQ(refused_for(r, key_of(4, a4("198.18.0.10"), 32)), 0u);
    EXPECT_EQ(refused_for(r, key_of(4, a4("198.18.0.11"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.0.12"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.0.13"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.1.8"), 32)), 0u);
}

// ---------------------------------------------------------------------------------------------
// IPv6 sources rotating inside one /64.

constexpr const char *kRulesIpv6 = R"(rules:
  # One limit per /64: a host that owns a /64 cannot escape it by rotating addresses.
  - name: per64
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 5 }
  # Would one per address be tighter? Shadow mode counts, never drops.
  - name: per128_shadow
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 2/s, burst: 2 }
    mode: shadow
)";

TEST_F(Scenario, Ipv6SourcesRotatingInsideOneSlash64) {
    Traffic t;
    size_t rotation = 0;
    t.every(kStartNs + 17, per_second(150), 600, [&rotation](uint64_t ts) {
        Flow f = flow6("2001:db8:1:2::", kProtoUdp, 443);
        const uint64_t low = splitmix64(rotation++);
        for (int i = 0; i < 8; ++i) f.src[8 + i] = static_cast<uint8_t>(low >> (8 * i));
        return make_packet(ts, f);
    });
    t.every(kStartNs + 3'001, per_second(8), 32, flow6("2001:db8:1:3::7", kProtoTcp, 22, kTcpAck));
    size_t cycle = 0;
    t.every(kStartNs + 999, per_second(12), 48, [&cycle](uint64_t ts) {  // 4 addresses, 3/s each
        Flow f = flow6("2001:db8:1:4::", kProtoUdp, 53);
        f.src[15] = static_cast<uint8_t>(1 + cycle++ % 4);
        return make_packet(ts, f);
    });
    t.every(kStartNs + 123'457, per_second(5), 20, flow4("198.18.2.2", kProtoUdp, 53));
    ASSERT_NO_FATAL_FAILURE(run(kRulesIpv6, t.generator(PcapPrecision::nano), PcapPrecision::nano));

    const ModelCounters &c = model_->counters();
    // The rotating host is limited as one source: of its 600 frames over 4 s, the burst of 5
    // and then 10/s get through.
    const uint64_t rotator_passed =
        600 - refused_for(c.rules[0], key_of(6, a6("2001:db8:1:2::"), 64));
    EXPECT_GE(rotator_passed, 40u);
    EXPECT_LE(rotator_passed, 50u);
    EXPECT_EQ(refused_for(c.rules[0], key_of(6, a6("2001:db8:1:3::"), 64)), 0u);
    EXPECT_EQ(c.rules[1].refused, 0u);
    EXPECT_GT(c.rules[1].shadow_refused, 0u);
}

// ---------------------------------------------------------------------------------------------
// Several rules on one packet: the first refusing rule is blamed, a refused packet consumes
// nothing in any rule.

constexpr const char *kRulesSeveral = R"(rules:
  - name: dns
    match: { proto: udp, dst_port: [53, 5353] }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 3 }
  - name: syn_high_ports
    match: { proto: tcp, tcp_flags: syn, dst_port: "1000-2000" }
    limit: { rate: 5/s, burst: 2 }
  - name: per_net
    match: { src: [198.18.0.0/16, 2001:db8::/32] }
    key: { ipv4: 24, ipv6: 48 }
    limit: { rate: 40/s, burst: 10 }
)";

TEST_F(Scenario, SeveralRulesOnOnePacket) {
    Traffic t;
    const uint64_t s = kStartNs;
    t.every(s, per_second(30), 120, flow4("198.18.5.1", kProtoUdp, 53));          // over dns
    t.every(s + ms(7), per_second(8), 32, flow4("198.18.5.2", kProtoUdp, 5353));  // under dns
    for (int host = 3; host <= 10; ++host) {  // 48/s more into 198.18.5.0/24: over per_net
        const std::string src = "198.18.5." + std::to_string(host);
        t.every(s + host * 1'700 * kNsPerUs, per_second(6), 24,
                flow4(src.c_str(), kProtoTcp, 443, kTcpAck));
    }
    t.every(s + ms(2), per_second(12), 48, flow4("198.18.6.1", kProtoTcp, 1500, kTcpSyn));
    t.every(s + ms(4), per_second(3), 12, flow4("198.18.6.2", kProtoTcp, 1999, kTcpSyn | kTcpAck));
    t.every(s + ms(6), per_second(20), 80, flow4("198.18.6.2", kProtoTcp, 80, kTcpSyn));
    t.every(s + ms(1), per_second(25), 100, flow6("2001:db8:5:1::1", kProtoUdp, 53));
    t.every(s + ms(3), per_second(25), 100, flow6("2001:db8:5:2::1", kProtoUdp, 53));
    t.every(s + ms(9), per_second(50), 200, flow4("198.18.7.1", kProtoIcmp));
    t.every(s + ms(8), per_second(5), 20, flow4("198.19.3.3", kProtoUdp, 53));  // dns only

    uint64_t blamed_among_several = 0;  // refused by two or more rules at once
    uint64_t refused_while_others_admit = 0;
    const Observer obs = [&](const GenPacket &, const ModelDecision &d) {
        if (d.refusing_rules >= 2) ++blamed_among_several;
        if (!d.pass && d.matching_rules > d.refusing_rules) ++refused_while_others_admit;
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesSeveral, t.generator(PcapPrecision::micro), PcapPrecision::micro, obs));

    const ModelCounters &c = model_->counters();
    for (const ModelRuleCounters &r : c.rules) EXPECT_GT(r.refused, 0u);
    EXPECT_GT(blamed_among_several, 0u);
    EXPECT_GT(refused_while_others_admit, 0u);
}

// ---------------------------------------------------------------------------------------------
// Shadow mode: everything passes, would-be refusals are counted exactly.

constexpr const char *kRulesShadow = R"(rules:
  - name: udp_shadow
    match: { proto: udp }
    limit: { rate: 10/s, burst: 2 }
    mode: shadow
  - name: all_shadow
    key: { ipv4: 16, ipv6: 32 }
    limit: { rate: 50/s, burst: 5 }
    mode: shadow
    on_table_full: pass
)";

TEST_F(Scenario, ShadowModePassesEverything) {
    Traffic t;
    t.every(kStartNs, per_second(30), 90, flow4("198.18.20.1", kProtoUdp, 53));
    t.every(kStartNs + ms(1), per_second(5), 15, flow4("198.18.20.2", kProtoUdp, 53));
    t.every(kStartNs + ms(2), per_second(80), 240, flow4("198.18.21.1", kProtoTcp, 80, kTcpSyn));
    t.every(kStartNs + ms(3), per_second(15), 45, flow6("2001:db8:20::1", kProtoUdp, 123));
    t.every(kStartNs + ms(4), per_second(70), 210, flow6("2001:db8:20::2", kProtoIcmpv6));
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesShadow, t.generator(PcapPrecision::micro), PcapPrecision::micro));

    const ModelCounters &c = model_->counters();
    EXPECT_EQ(c.dropped, 0u);
    EXPECT_EQ(c.passed, c.packets);
    for (const ModelRuleCounters &r : c.rules) {
        EXPECT_EQ(r.refused, 0u);
        EXPECT_GT(r.shadow_refused, 0u);
    }
}

}  // namespace
}  // namespace floodgate::test
