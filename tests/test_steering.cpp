// Steering (dataplane/core/steering.h): the Toeplitz key that makes a NIC's RSS read only a
// source prefix, proved with DPDK's own software Toeplitz (rte_softrss, header-only: no EAL);
// which prefix floodgate steers by; which core owns a source; and which of a RuleSet's keys stay
// core-local (CompiledRule::published and the marks' and answer cap's flags). No EAL: rulesets
// without allow/block prefixes create no DPDK object.
#include <gtest/gtest.h>
#include <rte_thash.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dataplane/core/ruleset.h"
#include "dataplane/core/steering.h"
#include "rules/load.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr size_t kRssKeyBytes = 40;  // the usual RSS key: enough for an IPv6 pair and ports
using RssKey = std::array<uint8_t, kRssKeyBytes>;
using Addr = std::array<uint8_t, 16>;

RssKey random_key(std::mt19937_64 &rng) {
    RssKey k;
    for (uint8_t &b : k) b = static_cast<uint8_t>(rng());
    return k;
}

// Sets key bit i (bit 0 is the most significant bit of byte 0, as Toeplitz reads the key).
void set_key_bit(RssKey &k, unsigned i) {
    k[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
}

// The address with its bit i flipped, counted the same way.
Addr flip_bit(Addr a, unsigned i) {
    a[i / 8] ^= static_cast<uint8_t>(0x80u >> (i % 8));
    return a;
}

// A random key zeroed past `prefix` bits, with the prefix's last bit of each 32-bit window set
// (bits 31 and 63, or 23 for a /24): every input bit inside the prefix then XORs a non-zero key
// window, so each single-bit change inside it must show in the hash.
RssKey prefix_key(std::mt19937_64 &rng, unsigned prefix) {
    RssKey k = random_key(rng);
    for (unsigned bit = 31; bit < prefix; bit += 32) set_key_bit(k, bit);
    set_key_bit(k, prefix - 1);
    zero_key_past_prefix(k.data(), k.size(), prefix);
    return k;
}

// rte_softrss takes the input as host-order 32-bit words, the first address byte the most
// significant of word 0 (what rte_be_to_cpu_32 of each network-order word gives).
uint32_t toeplitz(const uint8_t *bytes, unsigned words, const RssKey &key) {
    uint32_t tuple[8];
    for (unsigned w = 0; w < words; ++w)
        tuple[w] = uint32_t{bytes[4 * w]} << 24 | uint32_t{bytes[4 * w + 1]} << 16 |
                   uint32_t{bytes[4 * w + 2]} << 8 | bytes[4 * w + 3];
    return rte_softrss(tuple, words, key.data());
}

uint32_t hash_v6_source(const Addr &src, const RssKey &key) {
    return toeplitz(src.data(), 4, key);
}

uint32_t hash_v4_source(const Addr &src, const RssKey &key) {
    return toeplitz(src.data(), 1, key);
}

// A random address whose first prefix_bits bits are those of base.
Addr within(const Addr &base, unsigned prefix_bits, std::mt19937_64 &rng) {
    Addr a;
    for (uint8_t &b : a) b = static_cast<uint8_t>(rng());
    for (unsigned i = 0; i < prefix_bits; ++i) {
        const uint8_t bit = static_cast<uint8_t>(0x80u >> (i % 8));
        a[i / 8] = static_cast<uint8_t>((a[i / 8] & ~bit) | (base[i / 8] & bit));
    }
    return a;
}

Addr random_addr(std::mt19937_64 &rng) {
    Addr a;
    for (uint8_t &b : a) b = static_cast<uint8_t>(rng());
    return a;
}

// ---------------------------------------------------------------------------------------------
// The Toeplitz key.

// The calling convention above, checked on Microsoft's published RSS verification vector
// ("Verifying the RSS Hash Calculation"): the default key over IPv4 source 66.9.149.187 and
// destination 161.142.100.80 hashes to 0x323e8fc2.
TEST(SteeringKey, SoftRssAsCalledHereMatchesThePublishedVector) {
    const RssKey key = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                        0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                        0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
    const uint8_t pair[8] = {66, 9, 149, 187, 161, 142, 100, 80};
    EXPECT_EQ(toeplitz(pair, 2, key), 0x323e8fc2u);
}

TEST(SteeringKey, ZeroesExactlyTheBitsPastThePrefix) {
    for (unsigned p = 0; p <= 8 * kRssKeyBytes + 8; ++p) {
        RssKey k;
        k.fill(0xff);
        zero_key_past_prefix(k.data(), k.size(), p);
        for (unsigned i = 0; i < 8 * kRssKeyBytes; ++i) {
            const bool set = (k[i / 8] >> (7 - i % 8)) & 1;
            ASSERT_EQ(set, i < p) << "prefix " << p << ", key bit " << i;
        }
    }
}

// A key zeroed past 64 bits: IPv6 sources of one /64 hash alike, whatever their low 64 bits;
// any change within the /64 changes the hash.
TEST(SteeringKey, Ipv6SourcesHashByTheirSlash64) {
    std::mt19937_64 rng(25);
    for (int trial = 0; trial < 50; ++trial) {
        const RssKey key = prefix_key(rng, 64);
        const Addr base = random_addr(rng);
        const uint32_t h = hash_v6_source(base, key);
        for (int i = 0; i < 100; ++i)
            ASSERT_EQ(hash_v6_source(within(base, 64, rng), key), h) << "trial " << trial;
        for (unsigned bit = 0; bit < 64; ++bit) {
            const Addr flipped = flip_bit(base, bit);
            EXPECT_NE(hash_v6_source(flipped, key), h) << "trial " << trial << ", bit " << bit;
        }
    }
    // Random /64s under one random key: distinct 32-bit hashes but for the odd collision.
    RssKey key = random_key(rng);
    zero_key_past_prefix(key.data(), key.size(), 64);
    std::set<uint32_t> hashes;
    for (int i = 0; i < 1000; ++i) hashes.insert(hash_v6_source(random_addr(rng), key));
    EXPECT_GE(hashes.size(), 998u);
    // Unzeroed, the same key reads the low 64 bits too: the zeroing is what makes it a /64.
    const RssKey full = random_key(rng);
    const Addr base = random_addr(rng);
    int differ = 0;
    for (int i = 0; i < 100; ++i)
        differ += hash_v6_source(within(base, 64, rng), full) != hash_v6_source(base, full);
    EXPECT_GE(differ, 95);
}

TEST(SteeringKey, Ipv4SourcesHashByTheirSlash32OrTheKeysPrefix) {
    std::mt19937_64 rng(2501);
    for (int trial = 0; trial < 50; ++trial) {
        // The /64 key of the IPv6 case reads the whole IPv4 source: each bit of it counts.
        const RssKey key64 = prefix_key(rng, 64);
        const Addr base = random_addr(rng);
        const uint32_t h = hash_v4_source(base, key64);
        Addr same = random_addr(rng);  // the /32 alike, the other 12 bytes not hashed at all
        std::memcpy(same.data(), base.data(), 4);
        EXPECT_EQ(hash_v4_source(same, key64), h);
        for (unsigned bit = 0; bit < 32; ++bit) {
            const Addr flipped = flip_bit(base, bit);
            EXPECT_NE(hash_v4_source(flipped, key64), h) << "trial " << trial << ", bit " << bit;
        }

        // Zeroed past 24 bits: every source of a /24 hashes alike.
        const RssKey key24 = prefix_key(rng, 24);
        const uint32_t h24 = hash_v4_source(base, key24);
        for (int i = 0; i < 100; ++i)
            ASSERT_EQ(hash_v4_source(within(base, 24, rng), key24), h24) << "trial " << trial;
        for (unsigned bit = 0; bit < 24; ++bit) {
            const Addr flipped = flip_bit(base, bit);
            EXPECT_NE(hash_v4_source(flipped, key24), h24) << "trial " << trial << ", bit " << bit;
        }
    }
}

// What steering.h's zero_key_past_prefix comment warns of, measured: the RETA entry (the
// hash's low 7 bits for a 128-entry table) of input bit i comes from key bits i + 25 to
// i + 31, all zero once i >= P - 25. So /64s that differ only in bits 39 to 63 always reach
// the same queue: they are still told apart by the whole hash, but not by the queue.
TEST(SteeringKey, TheQueueIgnoresThePrefixsLast25Bits) {
    std::mt19937_64 rng(39);
    constexpr uint32_t kRetaMask = 127;
    for (int trial = 0; trial < 50; ++trial) {
        const RssKey key = prefix_key(rng, 64);
        const Addr base = random_addr(rng);
        const uint32_t h = hash_v6_source(base, key);
        for (unsigned bit = 39; bit < 64; ++bit) {
            const Addr flipped = flip_bit(base, bit);
            EXPECT_EQ(hash_v6_source(flipped, key) & kRetaMask, h & kRetaMask) << "bit " << bit;
            EXPECT_NE(hash_v6_source(flipped, key), h) << "bit " << bit;
        }
    }
    // Bits before P - 25 do move the queue: over random /39s, the 128 entries are all used.
    RssKey key = random_key(rng);
    zero_key_past_prefix(key.data(), key.size(), 64);
    std::set<uint32_t> entries;
    for (int i = 0; i < 4096; ++i)
        entries.insert(hash_v6_source(random_addr(rng), key) & kRetaMask);
    EXPECT_EQ(entries.size(), 128u);
}

// What a NIC is set up with, for the prefix wanted: one key, one prefix length P for both
// families (IPv4 read up to min(P, 32)), never under 64 bits, so that the queue is chosen by
// the whole IPv4 address and an IPv6 /39 at least: a 128-entry RETA is used in full by random
// sources of either family, whatever the rules wanted.
TEST(SteeringKey, NicPrefixAndSteering) {
    struct Case {
        uint8_t want4, want6;
        unsigned p;
        uint8_t got4, got6;
    };
    const Case cases[] = {
        {32, 64, 64, 32, 64},  // the defaults: IPv6 by /64, IPv4 whole
        {24, 64, 64, 32, 64},  // an IPv4 /24 wanted: still /32 (the /24 rules are shared)
        {32, 48, 64, 32, 64},  // an IPv6 /48 wanted: still /64
        {32, 128, 128, 32, 128}, {28, 16, 64, 32, 64}, {32, 20, 64, 32, 64},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE("wanted /" + std::to_string(c.want4) + " /" + std::to_string(c.want6));
        const SteeringOptions wanted{true, c.want4, c.want6};
        EXPECT_EQ(nic_prefix_bits(wanted), c.p);
        std::mt19937_64 rng(c.p);
        RssKey key = random_key(rng);
        zero_key_past_prefix(key.data(), key.size(), c.p);
        std::set<uint32_t> v4, v6;
        for (int i = 0; i < 4096; ++i) {
            v4.insert(hash_v4_source(random_addr(rng), key) & 127);
            v6.insert(hash_v6_source(random_addr(rng), key) & 127);
        }
        EXPECT_EQ(v4.size(), 128u);
        EXPECT_EQ(v6.size(), 128u);
        for (bool replies : {false, true}) {
            const Steering s = nic_steering(wanted, replies);
            EXPECT_TRUE(s.by_source);
            EXPECT_EQ(s.ipv4_len, c.got4);
            EXPECT_EQ(s.ipv6_len, c.got6);
            EXPECT_EQ(s.replies_by_destination, replies);
        }
        const Steering soft = software_steering(wanted, false);
        EXPECT_TRUE(soft.by_source);
        EXPECT_EQ(soft.ipv4_len, c.want4);
        EXPECT_EQ(soft.ipv6_len, c.want6);
    }
}

// ---------------------------------------------------------------------------------------------
// The prefix to steer by.

TEST(SteeringPrefix, TheRulesFilesFieldWins) {
    const Config c = parse_config(R"(steering: { ipv4: 20, ipv6: 56 }
rules:
  - name: a
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 1/s, burst: 1 }
)");
    const SteeringOptions s = steering_prefix(c);
    EXPECT_TRUE(s.set);
    EXPECT_EQ(s.ipv4_len, 20);
    EXPECT_EQ(s.ipv6_len, 56);
    // One family given: the other keeps its default.
    const SteeringOptions v6 = steering_prefix(parse_config("steering: { ipv6: 96 }\n"));
    EXPECT_EQ(v6.ipv4_len, 32);
    EXPECT_EQ(v6.ipv6_len, 96);
}

TEST(SteeringPrefix, DerivedFromTheShortestSourceKey) {
    struct Case {
        const char *description;
        std::string rules;
        uint8_t v4, v6;
    };
    const std::string limit = "    limit: { rate: 100/s, burst: 10 }\n";  // room for reserves
    const auto rule = [&](const char *name, const char *key) {
        return std::string("  - name: ") + name + "\n    key: " + key + "\n" + limit;
    };
    const Case cases[] = {
        {"src /32 and src+dst /28",
         rule("a", "{ ipv4: 32, ipv6: 64 }") +
             rule("b", "{ src: { ipv4: 28 }, dst: { ipv4: 24 } }"),
         28, 64},
        {"src /16 floored to /24, IPv6 /40 to /48",
         rule("a", "{ ipv4: 16, ipv6: 40 }") + rule("b", "src"), 24, 48},
        {"IPv6 /56 above the floor", rule("a", "{ ipv4: 32, ipv6: 56 }"), 32, 56},
        {"IPv6 /128 alone", rule("a", "{ ipv4: 32, ipv6: 128 }"), 32, 128},
        {"the dst key's lengths do not count",
         rule("a", "{ dst: { ipv4: 8, ipv6: 16 } }") + rule("b", "src"), 32, 64},
        {"only dst and none rules", rule("a", "dst") + rule("b", "none"), 32, 64},
        {"no rules", "", 32, 64},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.description);
        const SteeringOptions s =
            steering_prefix(parse_config(c.rules.empty() ? "" : "rules:\n" + c.rules));
        EXPECT_FALSE(s.set);
        EXPECT_EQ(s.ipv4_len, c.v4);
        EXPECT_EQ(s.ipv6_len, c.v6);
    }
}

// ---------------------------------------------------------------------------------------------
// The owner core.

// An address of the family: its first 4 or 16 bytes.
FrameAddress address_of(uint8_t family, const Addr &a) {
    FrameAddress f;
    f.family = family;
    std::memcpy(f.addr, a.data(), family == 6 ? 16 : 4);
    return f;
}

// What the owner is chosen by, read from the frame as the full parser reads it: the source, or
// the destination, through VLAN tags; nothing from a frame that is not IP or is cut short.
TEST(SteeringOwner, FrameAddressReadsWhatTheParserReads) {
    const test::Frame frames[] = {
        test::PacketBuilder().ipv4("198.18.0.1", "198.19.2.3").udp(1234, 53).build(),
        test::PacketBuilder()
            .vlan(7)
            .vlan(8)
            .ipv4("198.18.9.9", "198.18.1.1")
            .tcp(1, 80, 0x02)
            .build(),
        test::PacketBuilder().ipv6("2001:db8:1::5", "2001:db8:ff::1").udp(1, 53).build(),
        test::PacketBuilder().vlan(100).ipv6("2001:db8:2::6", "2001:db8::1").udp(1, 53).build(),
    };
    for (const test::Frame &f : frames) {
        PacketInfo info;
        ASSERT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info), ParseStatus::ip);
        FrameAddress src, dst;
        ASSERT_TRUE(frame_address(f.data(), static_cast<uint32_t>(f.size()), false, &src));
        ASSERT_TRUE(frame_address(f.data(), static_cast<uint32_t>(f.size()), true, &dst));
        EXPECT_EQ(src.family, info.family);
        EXPECT_EQ(dst.family, info.family);
        EXPECT_EQ(0, std::memcmp(src.addr, info.src, 16));
        EXPECT_EQ(0, std::memcmp(dst.addr, info.dst, 16));
        // Cut anywhere inside the headers it reads: no address.
        const uint32_t header_end = info.l3_offset + (info.family == 6 ? 40 : 20);
        for (uint32_t cut = 0; cut < header_end; ++cut)
            EXPECT_FALSE(frame_address(f.data(), cut, false, &src)) << "cut at " << cut;
    }
    test::Frame arp = test::PacketBuilder().ipv4("198.18.0.1", "198.18.0.2").udp(1, 2).build();
    arp[12] = 0x08, arp[13] = 0x06;
    FrameAddress a;
    EXPECT_FALSE(frame_address(arp.data(), static_cast<uint32_t>(arp.size()), false, &a));
}

TEST(SteeringOwner, OnePrefixOneOwner) {
    std::mt19937_64 rng(16);
    const Steering steering = software_steering(SteeringOptions{true, 24, 56}, false);
    for (unsigned workers : {1u, 2u, 4u, 16u, 64u}) {
        SCOPED_TRACE(std::to_string(workers) + " workers");
        std::set<unsigned> seen;
        for (int prefix = 0; prefix < 200; ++prefix) {
            const Addr base = random_addr(rng);
            const unsigned o4 = address_owner(address_of(4, base), steering, workers);
            const unsigned o6 = address_owner(address_of(6, base), steering, workers);
            ASSERT_LT(o4, workers);
            ASSERT_LT(o6, workers);
            seen.insert(o4);
            for (int i = 0; i < 20; ++i) {
                const Addr a = within(base, 24, rng);
                ASSERT_EQ(address_owner(address_of(4, a), steering, workers), o4);
                const Addr b = within(base, 56, rng);
                ASSERT_EQ(address_owner(address_of(6, b), steering, workers), o6);
            }
        }
        // 200 prefixes reach every one of up to 16 workers (and most of 64).
        EXPECT_GE(seen.size(), std::min(workers, 16u));
    }
}

TEST(SteeringOwner, EveryOwnerGetsAFairShare) {
    constexpr unsigned kWorkers = 16;
    constexpr unsigned kPrefixes = 65536;
    std::mt19937_64 rng(65536);
    const Steering steering = software_steering(SteeringOptions{true, 32, 64}, false);
    for (uint8_t family : {uint8_t{4}, uint8_t{6}}) {
        SCOPED_TRACE("IPv" + std::to_string(family));
        std::vector<unsigned> count(kWorkers);
        for (unsigned i = 0; i < kPrefixes; ++i)
            ++count.at(address_owner(address_of(family, random_addr(rng)), steering, kWorkers));
        for (unsigned w = 0; w < kWorkers; ++w) {
            EXPECT_GE(count[w], kPrefixes / kWorkers * 9 / 10) << "worker " << w;
            EXPECT_LE(count[w], kPrefixes / kWorkers * 11 / 10) << "worker " << w;
        }
    }
    // Sequential /24s (a real allocation, not random ones) spread as well.
    const Steering by24 = software_steering(SteeringOptions{true, 24, 64}, false);
    std::vector<unsigned> count(kWorkers);
    for (unsigned i = 0; i < kPrefixes; ++i) {
        Addr a{};
        a[0] = 10;
        a[1] = static_cast<uint8_t>(i >> 8);
        a[2] = static_cast<uint8_t>(i);
        a[3] = static_cast<uint8_t>(rng());
        ++count.at(address_owner(address_of(4, a), by24, kWorkers));
    }
    for (unsigned w = 0; w < kWorkers; ++w) {
        EXPECT_GE(count[w], kPrefixes / kWorkers * 9 / 10) << "worker " << w;
        EXPECT_LE(count[w], kPrefixes / kWorkers * 11 / 10) << "worker " << w;
    }
}

// ---------------------------------------------------------------------------------------------
// What a RuleSet publishes.

std::unique_ptr<RuleSet> build(const std::string &yaml, const Steering &steering) {
    RuleSetOptions o;
    o.cores = 2;
    o.steering = steering;
    std::string error;
    std::unique_ptr<RuleSet> rs = RuleSet::build(parse_config(yaml), o, &error);
    EXPECT_NE(rs, nullptr) << error;
    return rs;
}

constexpr const char *kRules = R"(rules:
  - name: src32
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 5 }
  - name: src24
    key: { ipv4: 24 }
    limit: { rate: 10/s, burst: 5 }
  - name: src_coarse
    key: { ipv4: 16, ipv6: 48 }
    limit: { rate: 10/s, burst: 5 }
  - name: src128
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 10/s, burst: 5 }
  - name: pair
    key: { src: { ipv4: 32 }, dst: { ipv4: 24 } }
    limit: { rate: 10/s, burst: 5 }
  - name: by_dst
    key: dst
    limit: { rate: 100/s, burst: 10 }
  - name: whole
    key: none
    limit: { rate: 100/s, burst: 10 }
)";

TEST(SteeringRuleSet, KeysSteeringCoversAreCoreLocal) {
    const std::unique_ptr<RuleSet> rs =
        build(kRules, software_steering(SteeringOptions{true, 32, 64}, false));
    ASSERT_NE(rs, nullptr);
    struct Want {
        const char *name;
        bool v4, v6;
    };
    const Want wants[] = {
        {"src32", false, false},  {"src24", true, false}, {"src_coarse", true, true},
        {"src128", false, false}, {"pair", false, false}, {"by_dst", true, true},
        {"whole", true, true},
    };
    ASSERT_EQ(rs->rules().size(), std::size(wants));
    for (const Want &w : wants) {
        SCOPED_TRACE(w.name);
        const CompiledRule *r = rs->find_rule(w.name);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->published[0], w.v4);
        EXPECT_EQ(r->published[1], w.v6);
    }
    // Known marks are per source /32 and /64 (the defaults): one owner. Established marks are
    // written by replies going out, which this steering does not give the source's owner.
    const EstablishedProfile &e = rs->established();
    EXPECT_FALSE(e.known_published[0]);
    EXPECT_FALSE(e.known_published[1]);
    EXPECT_TRUE(e.established_published[0]);
    EXPECT_TRUE(e.established_published[1]);
    // The answer cap's per-destination keys are the refused source's /24 (shared under /32
    // steering) and /64 (one owner).
    EXPECT_TRUE(rs->answer_caps().per_destination_published[0]);
    EXPECT_FALSE(rs->answer_caps().per_destination_published[1]);
}

TEST(SteeringRuleSet, RepliesSteeredMakeEstablishedMarksCoreLocal) {
    const std::unique_ptr<RuleSet> rs =
        build(kRules, software_steering(SteeringOptions{true, 32, 64}, true));
    ASSERT_NE(rs, nullptr);
    const EstablishedProfile &e = rs->established();
    for (unsigned f : {0u, 1u}) {
        EXPECT_FALSE(e.known_published[f]);
        EXPECT_FALSE(e.established_published[f]);
    }
    // Marks on /24 and /48 under /32 and /64 steering: shared again.
    const std::unique_ptr<RuleSet> wide =
        build(std::string("established: { ipv4: 24, ipv6: 48 }\n") + kRules,
              software_steering(SteeringOptions{true, 32, 64}, true));
    ASSERT_NE(wide, nullptr);
    for (unsigned f : {0u, 1u}) {
        EXPECT_TRUE(wide->established().known_published[f]);
        EXPECT_TRUE(wide->established().established_published[f]);
    }
}

TEST(SteeringRuleSet, CoarserSteeringSharesFinerRulesNothing) {
    // Steering by /24 and /48: every source rule at least that long is core-local.
    const std::unique_ptr<RuleSet> rs =
        build(kRules, software_steering(SteeringOptions{true, 24, 48}, false));
    ASSERT_NE(rs, nullptr);
    for (const char *name : {"src32", "src24", "src128", "pair"}) {
        SCOPED_TRACE(name);
        EXPECT_FALSE(rs->find_rule(name)->published[0]);
        EXPECT_FALSE(rs->find_rule(name)->published[1]);
    }
    EXPECT_TRUE(rs->find_rule("src_coarse")->published[0]);   // /16 under /24
    EXPECT_FALSE(rs->find_rule("src_coarse")->published[1]);  // /48 under /48
}

TEST(SteeringRuleSet, WithoutSteeringEverythingIsPublished) {
    for (const Steering &s : {Steering{}, [] {
                                  // Lengths, but packets not steered by source.
                                  Steering t;
                                  t.ipv4_len = 24;
                                  t.ipv6_len = 48;
                                  return t;
                              }()}) {
        const std::unique_ptr<RuleSet> rs = build(kRules, s);
        ASSERT_NE(rs, nullptr);
        for (const CompiledRule &r : rs->rules()) {
            SCOPED_TRACE(r.name);
            EXPECT_TRUE(r.published[0]);
            EXPECT_TRUE(r.published[1]);
        }
        for (unsigned f : {0u, 1u}) {
            EXPECT_TRUE(rs->established().known_published[f]);
            EXPECT_TRUE(rs->established().established_published[f]);
            EXPECT_TRUE(rs->answer_caps().per_destination_published[f]);
        }
    }
}

}  // namespace
}  // namespace floodgate
