// The box's side of several boxes sharing a limit (issue 26), without a dataplane: the cluster
// section as read, the join/fallback state machine, the fallbacks' rules, the cluster ledger,
// and shared keys named as text and read back on a box with another hash seed.
#include <gtest/gtest.h>

#include "dataplane/pipeline/cluster_keys.h"
#include "dataplane/pipeline/cluster_ledger.h"
#include "dataplane/pipeline/cluster_state.h"
#include "rules/load.h"
#include "tests/config_cases.h"
#include "tests/time_units.h"

namespace floodgate {
namespace {

TEST(ClusterConfig, SectionAndSharedRuleAsWritten) {
    const Config c = parse_config(
        R"(cluster: { name: edge, redis: "10.0.0.1:6379", sync_ms: 50, boxes: 4, box_timeout: 2s }
rules:
  - name: web
    key: dst
    limit: { rate: 1000/s, burst: 50 }
    share: cluster
    fallback: fail-open
  - name: pairs
    key: { src: { ipv4: 16 }, dst: {} }
    limit: { rate: 10/s, burst: 10 }
    share: cluster
  - name: alone
    key: dst
    limit: { rate: 10/s, burst: 10 }
)");
    EXPECT_TRUE(c.cluster.set);
    EXPECT_EQ(c.cluster.name, "edge");
    EXPECT_EQ(c.cluster.redis, "10.0.0.1:6379");
    EXPECT_EQ(c.cluster.sync_ns, 50 * kMs);
    EXPECT_EQ(c.cluster.boxes, 4u);
    EXPECT_EQ(c.cluster.box_timeout_ns, 2000 * kMs);
    EXPECT_TRUE(c.rules[0].shared);
    EXPECT_EQ(c.rules[0].fallback, ClusterFallback::fail_open);
    EXPECT_TRUE(c.rules[1].shared);
    EXPECT_EQ(c.rules[1].fallback, ClusterFallback::local);
    EXPECT_FALSE(c.rules[2].shared);
    const Config d = parse_config("cluster: { name: e, redis: \"unix:/run/redis.sock\" }\n");
    EXPECT_EQ(d.cluster.sync_ns, 100 * kMs);
    EXPECT_EQ(d.cluster.boxes, 1u);
    EXPECT_EQ(d.cluster.box_timeout_ns, 3000 * kMs);
}

ClusterOptions options(uint32_t boxes) {
    ClusterOptions o;
    o.set = true;
    o.name = "t";
    o.sync_ns = 100 * kMs;
    o.boxes = boxes;
    return o;
}

TEST(ClusterState, StartsAloneJoinsAfterTwoGoodSyncsAndLeavesAtTheFirstBadOne) {
    ClusterState s(options(3), 0);
    EXPECT_FALSE(s.joined());
    EXPECT_EQ(s.reason(), "not synced yet");
    EXPECT_EQ(s.boxes(), 3u);  // the file's, before any sync
    EXPECT_FALSE(s.on_sync(true, 2, 100 * kMs));
    EXPECT_FALSE(s.joined());
    EXPECT_EQ(s.boxes(), 2u);  // what the store says from then on
    EXPECT_TRUE(s.on_sync(true, 2, 200 * kMs));
    EXPECT_TRUE(s.joined());
    EXPECT_EQ(s.fallback_ns(250 * kMs), 200 * kMs);
    EXPECT_FALSE(s.on_sync(true, 4, 300 * kMs));
    EXPECT_TRUE(s.on_sync(false, 0, 400 * kMs));
    EXPECT_FALSE(s.joined());
    EXPECT_EQ(s.reason(), "the store did not answer");
    EXPECT_EQ(s.boxes(), 4u);  // the last known
    // One good sync is not enough to come back; a bad one starts the count again.
    EXPECT_FALSE(s.on_sync(true, 4, 500 * kMs));
    EXPECT_FALSE(s.on_sync(false, 0, 600 * kMs));
    EXPECT_FALSE(s.on_sync(true, 4, 700 * kMs));
    EXPECT_TRUE(s.on_sync(true, 4, 800 * kMs));
    EXPECT_EQ(s.fallback_ns(900 * kMs), 200 * kMs + 400 * kMs);
    EXPECT_EQ(s.changes(), 3u);
    EXPECT_EQ(s.syncs(), 8u);
    EXPECT_EQ(s.failed_syncs(), 2u);
}

TEST(ClusterState, NoSyncForThreeIntervalsAndTwoSecondsIsAlone) {
    ClusterState s(options(2), 0);  // 100 ms: three intervals are less than the 2 s floor
    s.on_sync(true, 2, 100 * kMs);
    s.on_sync(true, 2, 200 * kMs);
    EXPECT_FALSE(s.on_tick(2199 * kMs));
    EXPECT_TRUE(s.on_tick(2200 * kMs));
    EXPECT_EQ(s.reason(), "no sync from floodctl");
    EXPECT_FALSE(s.on_tick(2300 * kMs));  // already alone
    ClusterOptions slow = options(2);
    slow.sync_ns = 1000 * kMs;  // three intervals are more
    ClusterState t(slow, 0);
    t.on_sync(true, 2, 1000 * kMs);
    t.on_sync(true, 2, 2000 * kMs);
    EXPECT_FALSE(t.on_tick(4999 * kMs));
    EXPECT_TRUE(t.on_tick(5000 * kMs));
}

TEST(ClusterState, FallbacksDivideTheLimitOrOpenTheRule) {
    Config c = parse_config(R"(cluster: { name: e, redis: "h:1" }
rules:
  - { name: even, key: dst, limit: { rate: 1000/s, burst: 50 }, share: cluster }
  - name: odd
    key: dst
    limit: { rate: 10/s, burst: 2 }
    reserve: { established: 0%, verified: 0%, known: 0% }
    share: cluster
  - { name: window, key: dst, algorithm: fixed-window, limit: { rate: 100/s }, share: cluster }
  - { name: open, key: dst, limit: { rate: 10/s, burst: 10 }, share: cluster, fallback: fail-open }
  - { name: mine, limit: { rate: 10/s, burst: 10 } }
)");
    ClusterState s(options(4), 0);
    Config alone = c;
    s.adjust(&alone);
    EXPECT_EQ(alone.rules[0].rate_count, 250u);  // 1000/s / 4: the count when it divides
    EXPECT_EQ(alone.rules[0].rate_period_ns, 1000 * kMs);
    EXPECT_EQ(alone.rules[0].burst_pkts, 12u);
    EXPECT_EQ(alone.rules[1].rate_count, 10u);  // 10/s / 4 = 10 per 4 s: exact
    EXPECT_EQ(alone.rules[1].rate_period_ns, 4000 * kMs);
    EXPECT_EQ(alone.rules[1].burst_pkts, 1u);  // never below one
    EXPECT_EQ(alone.rules[2].rate_count, 25u);
    EXPECT_EQ(alone.rules[3].mode, RuleMode::shadow);
    EXPECT_EQ(alone.rules[3].rate_count, 10u);
    EXPECT_EQ(alone.rules[4].rate_count, 10u);  // not shared: as written
    s.on_sync(true, 4, 100 * kMs);
    s.on_sync(true, 4, 200 * kMs);
    Config joined = c;
    s.adjust(&joined);
    EXPECT_EQ(joined.rules[0].rate_count, 1000u);
    EXPECT_EQ(joined.rules[3].mode, RuleMode::enforce);
}

TEST(ClusterLedger, SumsPerKeyAndRefusesNewKeysWhenFull) {
    ClusterLedger l(4);
    SharedRecord r;
    for (uint64_t h = 1; h <= 4; ++h) {
        r.hash = h * 0x9e3779b97f4a7c15ull;
        EXPECT_TRUE(l.add(r, static_cast<uint32_t>(h)));
        EXPECT_TRUE(l.add(r, 1));
    }
    r.hash = 99;
    EXPECT_FALSE(l.add(r, 1));
    std::vector<SharedRecord> out;
    l.take(&out);
    ASSERT_EQ(out.size(), 4u);
    uint64_t total = 0;
    for (const SharedRecord &x : out) total += x.packets;
    EXPECT_EQ(total, 1u + 2 + 3 + 4 + 4);
    EXPECT_EQ(l.size(), 0u);
    EXPECT_TRUE(l.add(r, 7));  // room again after the take
    ClusterLedger into(4);
    EXPECT_TRUE(into.absorb(l));
    out.clear();
    into.take(&out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].packets, 7u);
}

// A key named on one box reads back on another, whose table hashes with another seed, as the
// hash that box's own packets of that key get.
TEST(ClusterKeys, TextRoundTripsAcrossSeeds) {
    const Config c = parse_config(R"(cluster: { name: e, redis: "h:1" }
rules:
  - { name: dst24, key: { dst: { ipv4: 24, ipv6: 48 } }, limit: { rate: 10/s, burst: 10 }, share: cluster }
  - { name: all, key: none, limit: { rate: 10/s, burst: 10 }, share: cluster }
  - { name: pair, key: { src: { ipv4: 16 }, dst: {} }, limit: { rate: 10/s, burst: 10 }, share: cluster }
)");
    std::string error;
    std::unique_ptr<RuleSet> rules = RuleSet::build(c, -1, &error);
    ASSERT_TRUE(rules) << error;
    LimitTable here(1024, HashSeed{{1, 2, 3, 4}}), there(1024, HashSeed{{5, 6, 7, 8}});
    PacketInfo p;
    p.family = 4;
    std::memset(p.src, 0, 16);
    std::memset(p.dst, 0, 16);
    const uint8_t src[4] = {198, 18, 7, 9}, dst[4] = {198, 19, 1, 77};
    std::memcpy(p.src, src, 4);
    std::memcpy(p.dst, dst, 4);
    const char *expected[] = {"198.19.1.0/24", "*", "198.18.0.0/16>198.19.1.77/32"};
    for (const CompiledRule &r : rules->rules()) {
        SCOPED_TRACE(r.name);
        // What the core records for the packet (Pipeline::note_shared), named here.
        SharedRecord rec;
        rec.key_id = r.key_id;
        if (r.key_kind != KeyKind::none) {
            rec.family = 4;
            const LimitKey k = rule_key(r, p);
            const LimitKey d = r.key_kind == KeyKind::src_dst
                                   ? destination_key(p, r.dst_mask_hi, r.dst_mask_lo, 0)
                                   : k;
            if (r.key_kind == KeyKind::src_dst) {
                std::memcpy(rec.src, &k.addr_hi, 8);
                std::memcpy(rec.src + 8, &k.addr_lo, 8);
            }
            std::memcpy(rec.dst, &d.addr_hi, 8);
            std::memcpy(rec.dst + 8, &d.addr_lo, 8);
        }
        const std::string text = shared_key_text(r, rec);
        EXPECT_EQ(text, expected[r.index]);
        uint64_t h = 0;
        std::string why;
        ASSERT_TRUE(shared_key_hash(r, text, there, &h, &why)) << why;
        EXPECT_EQ(h, rule_key_hash(r, p, there, rule_key(r, p)));
        EXPECT_NE(h, rule_key_hash(r, p, here, rule_key(r, p)));
    }
    // What is not a key of the rule is refused, with why.
    std::vector<Consumption> out;
    const std::string overlong(200, '1');
    const std::pair<const char *, const char *> bad[] = {{"dst24", "198.19.1.0/25"},
                                                         {"dst24", "198.19.1.1/24"},
                                                         {"dst24", "*"},
                                                         {"all", "198.19.1.0/24"},
                                                         {"pair", "198.18.0.0/16"},
                                                         {"pair", "198.18.0.0/16>2001:db8::1/64"},
                                                         {"nosuch", "*"},
                                                         {"dst24", overlong.c_str()}};
    for (const auto &[rule, key] : bad) {
        SCOPED_TRACE(std::string(rule) + " " + key);
        std::string why;
        EXPECT_FALSE(shared_charges(*rules, rule, key, 5, there, &out, &why));
        EXPECT_FALSE(why.empty());
    }
    std::string why;
    EXPECT_FALSE(shared_charges(*rules, "all", "*", 0, there, &out, &why));
    EXPECT_FALSE(shared_charges(*rules, "all", "*", kMaxSharedPackets + 1, there, &out, &why));
    EXPECT_TRUE(out.empty());
    // 2^33 packets are two records of 2^32 - 1 and one of 2.
    EXPECT_TRUE(shared_charges(*rules, "all", "*", 1ull << 33, there, &out, &why)) << why;
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(uint64_t{out[0].packets} + out[1].packets + out[2].packets, 1ull << 33);
}

}  // namespace
}  // namespace floodgate
