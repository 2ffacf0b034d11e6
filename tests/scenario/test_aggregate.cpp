// Scenarios on aggregate limits (issue 11): key dst (one limit per destination), key none (one
// per rule), key src+dst (one per pair), the trust classes that share an aggregate's TAT with
// their own tolerances (reserve), and the replies from the inside (replay --inside) that make
// their destinations established. The harness checks every frame and counter against the
// reference model; the figures asserted here are worked out from the schedule and GCRA's
// arithmetic alone.
//
// The arithmetic. A GCRA with interval T and tolerance tau, fed one packet every p (p < T,
// tau >= T + p) from t0 to t0 + D (D a multiple of p) and empty at t0, admits its n-th packet
// at t0 + max((n - 1) p, nT - tau) rounded up to the next arrival, so it admits
//     min(D / p + 1, floor((D + tau) / T))
// packets, and from the moment the second term binds (the flood "saturates" it) the next
// admission is due at an arrival instant: a packet arriving between two arrivals of the flood
// is always refused at that tolerance. A packet admitted there by a larger tolerance (a
// class's reserve) moves the TAT one T further, and the flood is admitted one packet less:
// the total over the run stays floor((D + tau) / T), provided the flood runs a few T longer.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

// See the arithmetic above.
uint64_t flood_admits(uint64_t d_ns, uint64_t p_ns, uint64_t t_ns, uint64_t tau_ns) {
    return std::min(d_ns / p_ns + 1, (d_ns + tau_ns) / t_ns);
}

// An aggregate rule's tolerance for a class that sees `above` percent of the burst reserved
// for the classes above it: tau - floor(tau * above / 100), tau = T * burst.
uint64_t class_tau(uint64_t t_ns, uint64_t burst, unsigned above) {
    return t_ns * burst - t_ns * burst * above / 100;
}

// The family of an address in the model's form (IPv4 in the first 4 bytes, the rest zero;
// every IPv6 address here has a byte set past the fourth).
uint8_t family_of(const IpAddr &a) {
    for (size_t i = 4; i < a.size(); ++i)
        if (a[i] != 0) return 6;
    return 4;
}

Flow udp(const IpAddr &src, const IpAddr &dst, uint16_t src_port, uint16_t dst_port) {
    return {.family = family_of(src),
            .src = src,
            .dst = dst,
            .proto = kProtoUdp,
            .src_port = src_port,
            .dst_port = dst_port};
}

Flow tcp(const IpAddr &src, const IpAddr &dst, uint16_t src_port, uint16_t dst_port,
         uint8_t flags) {
    Flow f = udp(src, dst, src_port, dst_port);
    f.proto = kProtoTcp;
    f.tcp_flags = flags;
    return f;
}

bool in4(const ModelPacket &p, uint8_t a, uint8_t b, uint8_t c) {
    return p.family == 4 && p.src[0] == a && p.src[1] == b && p.src[2] == c;
}

// The botnet's i-th IPv4 source: 198.19.0.0/16 first, then on from 198.18.0.0.
IpAddr botnet4(uint32_t i) {
    IpAddr a{};
    a[0] = 198;
    a[1] = i < 65536 ? 19 : 18;
    const uint32_t j = i < 65536 ? i : i - 65536;
    a[2] = static_cast<uint8_t>(j >> 8);
    a[3] = static_cast<uint8_t>(j);
    return a;
}

// The i-th IPv6 one: each in its own /64 of 2001:db8::/32 (rules key IPv6 sources per /64).
IpAddr botnet6(uint32_t i) {
    IpAddr a = a6("2001:db8::1");
    const uint32_t net = i + 0x10000;  // 2001:db8:0001:0000::/64 on
    a[4] = static_cast<uint8_t>(net >> 24);
    a[5] = static_cast<uint8_t>(net >> 16);
    a[6] = static_cast<uint8_t>(net >> 8);
    a[7] = static_cast<uint8_t>(net);
    return a;
}

// ---------------------------------------------------------------------------------------------
// (a) A botnet of 100,000 sources, each under its per-source limit, held to the aggregate.

constexpr const char *kRulesBotnet =
    R"(# A known mark lasts 1 s: by its second packet, a source is new again.
established: { ttl: 1s }
rules:
  - name: per_source
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
  # The default reserve: established 30%, verified 20%, known 10%; new sources get 40% of it.
  - name: per_destination
    match: { proto: udp, dst_port: 53 }
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 1000/s, burst: 100 }
)";

TEST_F(Scenario, BotnetOfHundredThousandSourcesIsHeldToTheDestinationsLimit) {
    // 90,000 IPv4 sources toward one address, one packet every 50 us, and 10,000 IPv6 ones
    // toward its IPv6 address, one every 400 us; each source twice, seconds apart (its
    // per-source key long expired, its known mark too: a new source both times).
    constexpr uint32_t kSources4 = 90'000, kSources6 = 10'000, kRounds = 2;
    constexpr uint64_t kP4 = 50 * kNsPerUs, kP6 = 400 * kNsPerUs;
    const uint64_t t4 = kStartNs, t6 = kStartNs + 7 * kNsPerUs;
    const Generator gen = [=](const Sink &sink) {
        uint64_t k4 = 0, k6 = 0;
        while (k4 < kSources4 * kRounds || k6 < kSources6 * kRounds) {
            const bool four = k6 == kSources6 * kRounds ||
                              (k4 < kSources4 * kRounds && t4 + k4 * kP4 <= t6 + k6 * kP6);
            if (four) {
                sink(make_packet(t4 + k4 * kP4,
                                 udp(botnet4(static_cast<uint32_t>(k4 % kSources4)), kDst4,
                                     static_cast<uint16_t>(1024 + k4 % 50000), 53)));
                ++k4;
            } else {
                sink(make_packet(t6 + k6 * kP6,
                                 udp(botnet6(static_cast<uint32_t>(k6 % kSources6)), kDst6,
                                     static_cast<uint16_t>(1024 + k6 % 50000), 53)));
                ++k6;
            }
        }
    };
    uint64_t passed4 = 0, passed6 = 0, frames = 0;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        ++frames;
        if (d.pass) ++(p.info.family == 4 ? passed4 : passed6);
    };
    ASSERT_NO_FATAL_FAILURE(run(kRulesBotnet, gen, PcapPrecision::nano, obs));

    // T = 1 ms, tau = 100 ms, new sources' tolerance 40% of it: 40 ms.
    const uint64_t t = kNsPerSec / 1000, tau_new = class_tau(t, 100, 30 + 20 + 10);
    EXPECT_EQ(tau_new, ms(40));
    const uint64_t want4 = flood_admits((kSources4 * kRounds - 1) * kP4, kP4, t, tau_new);
    const uint64_t want6 = flood_admits((kSources6 * kRounds - 1) * kP6, kP6, t, tau_new);
    EXPECT_EQ(want4, 9039u);  // (8,999,950 us + 40 ms) / 1 ms
    EXPECT_EQ(want6, 8039u);  // (7,999,600 us + 40 ms) / 1 ms
    EXPECT_EQ(passed4, want4);
    EXPECT_EQ(passed6, want6);

    const ModelCounters &c = model_->counters();
    EXPECT_EQ(frames, uint64_t{kSources4 + kSources6} * kRounds);
    EXPECT_EQ(c.rules[0].refused, 0u) << "every source is under its own limit";
    EXPECT_EQ(c.rules[0].overruled, frames - want4 - want6);
    EXPECT_EQ(c.rules[1].refused_new, frames - want4 - want6);
    EXPECT_EQ(c.rules[1].refused_known + c.rules[1].refused_established, 0u);
    EXPECT_EQ(c.rules[1].reserve_known + c.rules[1].reserve_established, 0u);
    EXPECT_EQ(refused_for(c.rules[1], key_of(4, kDst4, 32)), kSources4 * kRounds - want4);
    EXPECT_EQ(refused_for(c.rules[1], key_of(6, kDst6, 64)), kSources6 * kRounds - want6);
}

// ---------------------------------------------------------------------------------------------
// (b) Established sources keep their share while new ones flood the aggregate.

constexpr const char *kRulesEstablished = R"(established: { ttl: 2s, ipv4: 32, ipv6: 64 }
rules:
  - name: per_destination
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 1000/s, burst: 100 }
    reserve: { established: 30%, verified: 20%, known: 10% }
)";

TEST_F(Scenario, EstablishedSourcesKeepTheirShareThroughAFlood) {
    inside_ = {"198.18.255.0/24", "2001:db8:ffff::/48"};
    const IpAddr server = kDst4;
    auto client = [](int n) { return a4(("203.0.113." + std::to_string(n)).c_str()); };
    const uint64_t s = kStartNs;
    const uint64_t off = 37 * kNsPerUs;  // off the flood's grid of 100 us
    Traffic tr;
    uint64_t established_in_flood = 0;  // established packets while the flood runs
    const uint64_t flood_from = s + sec(1), flood_to = s + sec(7);
    auto count_in_flood = [&](uint64_t start, uint64_t period, size_t n) {
        for (size_t k = 0; k < n; ++k)
            established_in_flood +=
                start + k * period >= flood_from && start + k * period < flood_to;
    };
    uint64_t replies = 0;
    // C1-C3: DNS clients, C4-C5: TCP clients, 20/s each for 8 s, 10 ms apart; the server
    // answers every query 500 us later over TCP (as after a truncated answer), which makes
    // them established before the flood.
    for (int c = 1; c <= 5; ++c) {
        const uint64_t start = s + ms(7 + 10 * (c - 1)) + off;
        const auto port = static_cast<uint16_t>(40000 + c);
        const bool dns = c <= 3;
        tr.every(
            start, ms(50), 160,
            dns ? udp(client(c), server, port, 53) : tcp(client(c), server, port, 443, kTcpAck));
        tr.every(start + 500 * kNsPerUs, ms(50), 160,
                 dns ? tcp(server, client(c), 53, port, kTcpAck)
                     : tcp(server, client(c), 443, port, kTcpAck));
        count_in_flood(start, ms(50), 160);
        replies += 160;
    }
    // C6 is new when the flood is on: its first 3 queries are refused; then the server
    // speaks to it (3.15 s) and answers its later ones, and it passes from its reserve.
    const uint64_t c6 = s + ms(3003) + off;
    tr.every(c6, ms(50), 80, udp(client(6), server, 40006, 53));
    tr.every(s + ms(3150), sec(1), 1, tcp(server, client(6), 53, 40006, kTcpAck));
    tr.every(c6 + ms(150) + 500 * kNsPerUs, ms(50), 77, tcp(server, client(6), 53, 40006, kTcpAck));
    count_in_flood(c6 + ms(150), ms(50), 77);
    replies += 78;
    // C7 was answered at 0.1 s, and sends after its mark expired (2.1 s): new, refused.
    tr.every(s + ms(100), sec(1), 1, tcp(server, client(7), 53, 40007, kTcpAck));
    tr.every(s + ms(2200) + off, ms(100), 10, udp(client(7), server, 40007, 53));
    // C8 was answered at 0.5 s (until 2.5 s) and at 1.0 s, with 1.5 s of its 2 s left: not
    // refreshed, so from 2.5 s it is new again. C9 was answered at 0.5 s and at 1.6 s, with
    // 0.9 s left: refreshed, until 3.6 s.
    tr.every(s + ms(500), ms(500), 2, tcp(server, client(8), 53, 40008, kTcpAck));
    tr.every(s + ms(2550) + off, ms(100), 5, udp(client(8), server, 40008, 53));
    tr.every(s + ms(500), ms(1100), 2, tcp(server, client(9), 53, 40009, kTcpAck));
    tr.every(s + ms(2560) + off, ms(100), 5, udp(client(9), server, 40009, 53));
    count_in_flood(s + ms(2560) + off, ms(100), 5);
    replies += 5;  // C7 1, C8 2, C9 2
    // C10 got a RST from the server, which is no reply: new, refused. C11 got DNS responses
    // over UDP, which a server sends to spoofed sources as well: no reply either.
    tr.every(s + ms(300), sec(1), 1, tcp(server, client(10), 80, 40010, kTcpRst | kTcpAck));
    tr.every(s + ms(2010) + off, ms(100), 5, tcp(client(10), server, 40010, 80, kTcpAck));
    tr.every(s + ms(400), ms(300), 3, udp(server, client(11), 53, 40011));
    tr.every(s + ms(2020) + off, ms(100), 5, udp(client(11), server, 40011, 53));
    // The flood: 60,000 new sources toward the server, one packet each, every 100 us for 6 s
    // (a source that passed once would be known when it came back).
    constexpr uint64_t kFloodP = 100 * kNsPerUs;
    const size_t flood = (flood_to - flood_from) / kFloodP;
    size_t next = 0;
    tr.every(flood_from, kFloodP, flood, [&next, server](uint64_t ts) {
        const uint32_t i = static_cast<uint32_t>(next++);
        return make_packet(ts, udp(botnet4(i), server, static_cast<uint16_t>(1024 + i), 53));
    });

    uint64_t flood_passed = 0, client_dropped = 0, inside = 0, frames = 0;
    uint64_t refused_by_client[12] = {};
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        ++frames;
        if (d.inside) {
            ++inside;
            EXPECT_TRUE(d.pass);
        } else if (in4(p.info, 203, 0, 113)) {
            if (!d.pass) ++refused_by_client[p.info.src[3]];
            const int c = p.info.src[3];
            if (c <= 6 || c == 9) client_dropped += !d.pass;
        } else if (d.pass) {
            ++flood_passed;
        }
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesEstablished, tr.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    const uint64_t t = kNsPerSec / 1000, tau_new = class_tau(t, 100, 60);
    // Established clients: every packet passes, but C6's 3 from before it was answered.
    EXPECT_EQ(client_dropped, 3u);
    EXPECT_EQ(refused_by_client[6], 3u);
    EXPECT_EQ(refused_by_client[7], 10u);
    EXPECT_EQ(refused_by_client[8], 5u) << "a mark with more than half its TTL left is kept";
    EXPECT_EQ(refused_by_client[9], 0u) << "a mark with less than half its TTL left is renewed";
    EXPECT_EQ(refused_by_client[10], 5u) << "a RST is no reply";
    EXPECT_EQ(refused_by_client[11], 5u) << "nor is a UDP response";
    // Each established packet during the flood came from the reserve and took a flood slot.
    EXPECT_EQ(established_in_flood, 5u * 120 + 77 + 5);
    const uint64_t total = flood_admits((flood - 1) * kFloodP, kFloodP, t, tau_new);
    EXPECT_EQ(total, 6039u);
    EXPECT_EQ(flood_passed, total - established_in_flood);

    const ModelRuleCounters &r = model_->counters().rules[0];
    EXPECT_EQ(r.reserve_established, established_in_flood);
    EXPECT_EQ(r.refused_new, flood - flood_passed + 3 + 10 + 5 + 5 + 5);
    EXPECT_EQ(r.refused_established, 0u);
    EXPECT_EQ(r.refused, r.refused_new);
    const ModelCounters &c = model_->counters();
    EXPECT_EQ(c.inside_frames, inside);
    EXPECT_EQ(c.inside_frames, replies + 1 + 3);  // and the RST and the UDP responses
    EXPECT_EQ(c.established_marked, replies);
    EXPECT_EQ(c.packets, frames - inside) << "frames from the inside are no decided packets";
}

// ---------------------------------------------------------------------------------------------
// (c) A destination nobody attacks is untouched while its neighbour is flooded.

constexpr const char *kRulesTwoDestinations = R"(rules:
  - name: per_destination
    match: { dst: [198.18.255.0/24, 2001:db8:ffff::/48] }
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 500/s, burst: 50 }
)";

TEST_F(Scenario, ADestinationNotAttackedIsUntouched) {
    const IpAddr flooded = kDst4, quiet = a4("198.18.255.2"), quiet6 = a6("2001:db8:ffff:1::2");
    const uint64_t s = kStartNs;
    Traffic tr;
    // 4 clients at 100/s each toward the quiet address, 2.5 ms apart: 400/s of its 500/s,
    // never two within T = 2 ms. Two IPv6 clients at 50/s toward its IPv6 neighbour.
    for (int c = 0; c < 4; ++c) {
        const IpAddr src = a4(("203.0.113." + std::to_string(c + 1)).c_str());
        tr.every(s + ms(1) / 2 + c * 2'500 * kNsPerUs, ms(10), 300, udp(src, quiet, 40000, 53));
    }
    tr.every(s + ms(3), ms(20), 150, udp(a6("2001:db8:5::1"), quiet6, 40000, 53));
    tr.every(s + ms(13), ms(20), 150, udp(a6("2001:db8:6::1"), quiet6, 40000, 53));
    // Some of the flood's own sources send the quiet address a packet now and then.
    for (uint32_t i = 0; i < 10; ++i)
        tr.every(s + ms(101 + 200 * i) + 1'250 * kNsPerUs, sec(1), 1,
                 udp(botnet4(i), quiet, 1024, 53));
    // The flood: 20,000 sources, one packet each (none comes back known), every 100 us for
    // 2 s, at the other address.
    constexpr uint64_t kFloodP = 100 * kNsPerUs;
    constexpr size_t kFlood = 20'000;
    size_t next = 0;
    tr.every(s, kFloodP, kFlood, [&next, flooded](uint64_t ts) {
        const uint32_t i = static_cast<uint32_t>(next++);
        return make_packet(ts, udp(botnet4(i), flooded, 1024, 53));
    });
    uint64_t quiet_packets = 0, quiet_dropped = 0, flood_passed = 0;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (p.info.dst == flooded) {
            flood_passed += d.pass;
        } else {
            ++quiet_packets;
            quiet_dropped += !d.pass;
        }
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesTwoDestinations, tr.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    EXPECT_EQ(quiet_packets, 4u * 300 + 2 * 150 + 10);
    EXPECT_EQ(quiet_dropped, 0u);
    // T = 2 ms, tau = 100 ms; new sources' tolerance 40 ms (the default reserve, 60%).
    const uint64_t want =
        flood_admits((kFlood - 1) * kFloodP, kFloodP, 2 * kNsPerMs, class_tau(ms(2), 50, 60));
    EXPECT_EQ(want, 1019u);  // (1,999,900 us + 40 ms) / 2 ms
    EXPECT_EQ(flood_passed, want);
    const ModelRuleCounters &r = model_->counters().rules[0];
    EXPECT_EQ(refused_for(r, key_of(4, quiet, 32)), 0u);
    EXPECT_EQ(refused_for(r, key_of(6, quiet6, 64)), 0u);
    EXPECT_EQ(refused_for(r, key_of(4, flooded, 32)), kFlood - want);
    EXPECT_EQ(r.refused_by_key.size(), 1u);
    EXPECT_EQ(r.refused_new, kFlood - want);
}

// ---------------------------------------------------------------------------------------------
// (d) key: none is one bucket for the whole rule, IPv4 and IPv6 together; key src+dst keeps
// each (source, destination) pair apart.

constexpr const char *kRulesNone = R"(rules:
  - name: whole_rule
    match: { proto: udp }
    key: none
    limit: { rate: 100/s, burst: 10 }
    reserve: { established: 0%, verified: 0%, known: 0% }
)";

TEST_F(Scenario, KeyNoneIsOneBucketForBothFamilies) {
    // 10 IPv4 sources on the even milliseconds, 10 IPv6 ones on the odd: one packet a ms.
    const uint64_t s = kStartNs;
    constexpr size_t kPackets = 1000;
    Traffic tr;
    size_t n4 = 0, n6 = 0;
    tr.every(s, ms(2), kPackets / 2, [&n4](uint64_t ts) {
        return make_packet(ts, udp(botnet4(static_cast<uint32_t>(n4++ % 10)), kDst4, 1024, 53));
    });
    tr.every(s + ms(1), ms(2), kPackets / 2, [&n6](uint64_t ts) {
        return make_packet(ts, udp(botnet6(static_cast<uint32_t>(n6++ % 10)), kDst6, 1024, 53));
    });
    uint64_t passed4 = 0, passed6 = 0;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (d.pass) ++(p.info.family == 4 ? passed4 : passed6);
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesNone, tr.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    // One bucket fed every 1 ms: (999 ms + 100 ms) / 10 ms. A bucket per family would pass
    // as many for each.
    const uint64_t want = flood_admits(ms(kPackets - 1), ms(1), ms(10), ms(100));
    EXPECT_EQ(want, 109u);
    EXPECT_EQ(flood_admits(ms(kPackets - 2), ms(2), ms(10), ms(100)), 109u);
    EXPECT_EQ(passed4 + passed6, want);
    EXPECT_GT(passed4, 0u);
    EXPECT_GT(passed6, 0u);
    const ModelRuleCounters &r = model_->counters().rules[0];
    // The 20 sources come back after passing once: known, with no reserve to spend.
    EXPECT_EQ(r.refused_new + r.refused_known, kPackets - want);
    EXPECT_GT(r.refused_known, 0u);
    // Reported by family, /0 (the harness compares top_refused with these).
    EXPECT_EQ(refused_for(r, SourceKey{4, {}}) + refused_for(r, SourceKey{6, {}}), kPackets - want);
}

constexpr const char *kRulesPairs = R"(rules:
  - name: per_pair
    match: { proto: udp }
    key: { src: { ipv4: 32, ipv6: 64 }, dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 10/s, burst: 2 }
)";

TEST_F(Scenario, KeySrcDstKeepsPairsApart) {
    const IpAddr d1 = kDst4, d2 = a4("198.18.255.2");
    const IpAddr a = a4("203.0.113.1"), b = a4("203.0.113.2");
    const uint64_t s = kStartNs;
    Traffic tr;
    // A: 8/s to each of two servers, 16/s in all: under each pair's 10/s, over a source's.
    tr.every(s + ms(3), ms(125), 32, udp(a, d1, 40000, 53));
    tr.every(s + ms(64), ms(125), 32, udp(a, d2, 40000, 53));
    // B: 40/s to each, alternately: each pair is held to its own limit.
    tr.every(s + ms(1), ms(25), 80, udp(b, d1, 40001, 53));
    tr.every(s + ms(1) + ms(25) / 2, ms(25), 80, udp(b, d2, 40001, 53));
    uint64_t a_dropped = 0, b_passed[2] = {};
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (p.info.src == a) a_dropped += !d.pass;
        if (p.info.src == b && d.pass) ++b_passed[p.info.dst == d2];
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesPairs, tr.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    EXPECT_EQ(a_dropped, 0u);
    // Each of B's pairs: a packet every 25 ms for 1975 ms at T = 100 ms, tau = 200 ms.
    const uint64_t want = flood_admits(ms(1975), ms(25), ms(100), ms(200));
    EXPECT_EQ(want, 21u);
    EXPECT_EQ(b_passed[0], want);
    EXPECT_EQ(b_passed[1], want);
    // A pair's refusals are reported by its source: B's two pairs add up.
    const ModelRuleCounters &r = model_->counters().rules[0];
    EXPECT_EQ(refused_for(r, key_of(4, b, 32)), 2 * (80 - want));
    EXPECT_EQ(r.refused_by_key.size(), 1u);
    EXPECT_EQ(r.refused_new + r.refused_known, 0u) << "a pair key is no aggregate";
}

// ---------------------------------------------------------------------------------------------
// (e) Known sources: the per-source rule beside the aggregate found their key live and
// admitted them, or they passed the aggregate before the flood, so under the flood they pass
// from the known class's reserve.

constexpr const char *kRulesKnown = R"(rules:
  - name: per_source
    match: { proto: udp }
    limit: { rate: 10/s, burst: 20 }
  - name: per_destination
    match: { proto: udp }
    key: { dst: { ipv4: 32 } }
    limit: { rate: 1000/s, burst: 100 }
    reserve: { established: 30%, verified: 20%, known: 10% }
)";

TEST_F(Scenario, KnownSourcesPassFromTheKnownReserve) {
    const uint64_t s = kStartNs, off = 37 * kNsPerUs;
    auto client = [](int n) { return a4(("203.0.113." + std::to_string(n)).c_str()); };
    const uint64_t flood_from = s + sec(1), flood_to = s + sec(4);
    Traffic tr;
    uint64_t known_in_flood = 0;
    auto periodic = [&](int c, uint64_t start, uint64_t period, size_t n) {
        tr.every(start, period, n, udp(client(c), kDst4, 40000, 53));
        for (size_t k = 1; k < n; ++k)  // the first packet of each is new (and before the flood)
            known_in_flood += start + k * period >= flood_from && start + k * period < flood_to;
    };
    // K1-K3 at 12.5/s, K4 at 11.1/s, for 5 s: faster than their per-source 10/s, within its
    // burst of 20, so from their second packet on their per-source key is live.
    for (int c = 1; c <= 3; ++c) periodic(c, s + ms(11 + 20 * c) + off, ms(80), 63);
    periodic(4, s + ms(53) + off, ms(90), 56);
    // K4 also sends 15 packets in 15 us at 2.5 s: the known class's 10 T over the new one's
    // tolerance lets 10 through, and the other 5 are refused as known.
    tr.every(s + ms(2500) + off, kNsPerUs, 15, udp(client(4), kDst4, 40000, 53));
    known_in_flood += 10;
    // P at 5/s is under its per-source rate: its per-source key expires between its packets,
    // but it passed the aggregate before the flood, so it is known all the same (its known
    // mark) and passes from the known reserve.
    const uint64_t p_start = s + ms(105) + off;
    tr.every(p_start, ms(200), 25, udp(client(9), kDst4, 40000, 53));
    uint64_t p_in_flood = 0;
    for (uint64_t k = 0; k < 25; ++k)
        p_in_flood += p_start + k * ms(200) >= flood_from && p_start + k * ms(200) < flood_to;
    // The flood: 4,096 sources, each every 409.6 ms (new each time), a packet every 100 us.
    constexpr uint64_t kFloodP = 100 * kNsPerUs;
    const size_t flood = (flood_to - flood_from) / kFloodP;
    size_t next = 0;
    tr.every(flood_from, kFloodP, flood, [&next](uint64_t ts) {
        const uint32_t i = static_cast<uint32_t>(next++);
        return make_packet(ts, udp(botnet4(i), kDst4, 1024, 53));
    });
    uint64_t known_dropped = 0, p_dropped = 0, flood_passed = 0;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        if (!in4(p.info, 203, 0, 113))
            flood_passed += d.pass;
        else if (p.info.src == client(9))
            p_dropped += !d.pass;
        else
            known_dropped += !d.pass;
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesKnown, tr.generator(PcapPrecision::nano), PcapPrecision::nano, obs));

    EXPECT_EQ(known_dropped, 5u);
    EXPECT_EQ(p_dropped, 0u);
    EXPECT_EQ(p_in_flood, 15u);
    const ModelRuleCounters &r = model_->counters().rules[1];
    EXPECT_EQ(known_in_flood, 37u + 38 + 38 + 33 + 10);  // K1, K2, K3, K4, the burst
    EXPECT_EQ(r.reserve_known, known_in_flood + p_in_flood);
    EXPECT_EQ(r.refused_known, 5u);
    EXPECT_EQ(r.reserve_established, 0u);
    const uint64_t total =
        flood_admits((flood - 1) * kFloodP, kFloodP, kNsPerMs, class_tau(kNsPerMs, 100, 60));
    EXPECT_EQ(total, 3039u);  // (2,999,900 us + 40 ms) / 1 ms
    EXPECT_EQ(flood_passed, total - known_in_flood - p_in_flood);
    EXPECT_EQ(r.refused_new, flood - flood_passed);
    EXPECT_EQ(model_->counters().rules[0].refused, 0u);
}

}  // namespace
}  // namespace floodgate::test
