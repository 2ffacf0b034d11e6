// Pipeline decisions that depend on the table's state, checked packet by packet. No EAL: a
// ruleset without allow/block prefixes creates no DPDK object.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>

#include "dataplane/pipeline/merge.h"
#include "dataplane/pipeline/pipeline.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

Rule rule(const char *name, uint8_t proto, TableFullPolicy on_full) {
    Rule r;
    r.name = name;
    r.match.proto = proto;
    r.rate_count = 1;
    r.rate_period_ns = 1000000000;  // 1/s: every key stays live for the whole test
    r.burst_pkts = 1;
    r.on_table_full = on_full;
    return r;
}

class PipelineTest : public ::testing::Test {
  protected:
    void build(Config config) {
        std::string error;
        rules_ = RuleSet::build(config, -1, &error);
        ASSERT_NE(rules_, nullptr) << error;
        table_ =
            std::make_unique<LimitTable>(config.table_entries_per_core, HashSeed{{1, 2, 3, 4}});
        pipeline_ = std::make_unique<Pipeline>(rules_.get(), table_.get());
    }
    Verdict send(const test::Frame &f, uint64_t now_ns) {
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        Verdict v;
        pipeline_->decide(&frame, &len, 1, &now_ns, &v);
        return v;
    }
    const RuleCounters &counters(unsigned rule) {
        return rules_->rules()[rule].state->per_core[0].counters;
    }

    std::unique_ptr<RuleSet> rules_;
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<Pipeline> pipeline_;
};

test::Frame udp_from(const std::string &src) {
    return test::PacketBuilder().ipv4(src, "198.18.255.1").udp(1000, 53).build();
}
test::Frame tcp_from(const std::string &src) {
    return test::PacketBuilder().ipv4(src, "198.18.255.1").tcp(1000, 80, kTcpSyn).build();
}

// Two rules of one packet need two new slots and only one is free: the second rule must meet
// the full table (and its policy), not share the first rule's slot.
TEST_F(PipelineTest, TwoNewKeysOfOnePacketNeverShareTheLastSlot) {
    Config c;
    c.table_entries_per_core = 1;  // 2 buckets x 3 slots: 6 slots, every key may use any
    c.rules = {rule("a", 17, TableFullPolicy::drop), rule("b", 17, TableFullPolicy::drop),
               rule("c", 6, TableFullPolicy::drop)};
    build(c);
    ASSERT_EQ(table_->slots(), 6u);
    // Two UDP sources take two slots each (rules a and b), one TCP source one (rule c).
    for (const char *src : {"198.18.0.1", "198.18.0.2"})
        EXPECT_EQ(send(udp_from(src), 0), Verdict::pass);
    EXPECT_EQ(send(tcp_from("198.18.0.4"), 0), Verdict::pass);
    EXPECT_EQ(table_->stats().occupancy, 5u);

    // A fourth source: rule a reserves the last slot, rule b finds the table full and drops.
    EXPECT_EQ(send(udp_from("198.18.0.5"), 0), Verdict::drop);
    EXPECT_EQ(counters(1).table_full_drop, 1u);
    EXPECT_EQ(counters(1).refused, 1u);
    EXPECT_EQ(counters(0).refused, 0u);
    // The refused packet stored nothing: rule a's reservation was given back.
    EXPECT_EQ(table_->stats().occupancy, 5u);
    EXPECT_EQ(send(tcp_from("198.18.0.6"), 0), Verdict::pass) << "the freed slot is usable";
    EXPECT_EQ(table_->stats().occupancy, 6u);
}

TEST_F(PipelineTest, SharedOverflowBucketHoldsAllNewKeysToOneAllowance) {
    Config c;
    c.table_entries_per_core = 1;
    c.rules = {rule("a", 17, TableFullPolicy::shared)};
    build(c);
    for (int i = 1; i <= 6; ++i)
        EXPECT_EQ(send(udp_from("198.18.1." + std::to_string(i)), 0), Verdict::pass);
    // Table full of live keys: new sources share one bucket of rate 1/s, burst 1.
    EXPECT_EQ(send(udp_from("198.18.2.1"), 0), Verdict::pass);
    EXPECT_EQ(send(udp_from("198.18.2.2"), 0), Verdict::drop);
    EXPECT_EQ(send(udp_from("198.18.2.3"), 500000000), Verdict::drop);
    // The first six keys expire at t = 1 s; from then on new keys find room again.
    EXPECT_EQ(send(udp_from("198.18.2.4"), 1000000000), Verdict::pass);
    EXPECT_EQ(counters(0).table_full_shared, 3u);
    EXPECT_EQ(counters(0).refused, 2u);
}

// Two cores, one key, rule 10/s burst 2 (T = 100 ms, tau = 200 ms), merged at 1 ms and
// 301 ms. Every expected verdict is worked out by hand in the comments.
// syn-auth and a full table: a challenge needs no room, but remembering the source once it
// answers would, so the rule's on_table_full decides for an unverified source then.
TEST_F(PipelineTest, UnverifiedSourcesMeetingAFullTableFollowOnTableFull) {
    for (TableFullPolicy policy :
         {TableFullPolicy::pass, TableFullPolicy::drop, TableFullPolicy::shared}) {
        SCOPED_TRACE(static_cast<int>(policy));
        Config c;
        c.table_entries_per_core = 1;  // 6 slots
        Rule syn = rule("syn", 6, policy);
        syn.match.tcp_flags = {kTcpSyn, kTcpAck};
        syn.action = RuleAction::syn_auth;
        c.rules = {syn, rule("fill", 17, TableFullPolicy::drop)};
        build(c);
        // With room, an unverified SYN is challenged whatever the policy, storing nothing.
        EXPECT_EQ(send(tcp_from("198.18.0.1"), 0), Verdict::answer);
        EXPECT_EQ(table_->stats().occupancy, 1u) << "the per-/24 answer cap's key";
        for (int i = 1; i <= 5; ++i)
            EXPECT_EQ(send(udp_from("198.18.3." + std::to_string(i)), 0), Verdict::pass);
        ASSERT_EQ(table_->stats().occupancy, 6u);
        const Verdict v = send(tcp_from("198.18.0.2"), 0);
        const RuleCounters &rc = counters(0);
        switch (policy) {
            case TableFullPolicy::pass:
                EXPECT_EQ(v, Verdict::pass);
                EXPECT_EQ(rc.table_full_pass, 1u);
                EXPECT_EQ(rc.passed, 1u);
                break;
            case TableFullPolicy::drop:
                EXPECT_EQ(v, Verdict::drop);
                EXPECT_EQ(rc.table_full_drop, 1u);
                EXPECT_EQ(rc.unanswered, 1u);
                break;
            case TableFullPolicy::shared:
                // Challenged: the source's /24 already has its answer-cap key.
                EXPECT_EQ(v, Verdict::answer);
                break;
        }
        EXPECT_EQ(rc.matched, rc.passed + rc.refused + rc.overruled);
        EXPECT_EQ(rc.refused, rc.answered + rc.answer_capped + rc.answer_skipped + rc.unanswered);
        EXPECT_EQ(table_->stats().occupancy, 6u);
    }
}

// Pipelined across bursts (prepare, then decide_prepared once the next burst is prepared, as
// the worker does), every verdict and count is what decide() gives burst by burst: the
// reference decides the same bursts on a second core of the same rules, with its own table.
// The rules change in the middle, between a burst's prepare and its decision, into a set
// whose rules are in another order with other limits, so a burst keyed with the old set must
// be keyed again.
TEST(PipelinedDecision, SameVerdictsAndCountsAsDecidingEachBurst) {
    Config v1;
    v1.table_entries_per_core = 256;
    Rule dns = rule("dns", 17, TableFullPolicy::shared);
    dns.burst_pkts = 3;
    Rule web = rule("web", 6, TableFullPolicy::shared);
    v1.rules = {dns, web};
    Config v2 = v1;
    v2.rules = {web, dns};
    v2.rules[1].burst_pkts = 5;
    std::string error;
    RuleSetOptions options;
    options.cores = 2;
    auto set1 = RuleSet::build(v1, options, &error);
    ASSERT_NE(set1, nullptr) << error;
    options.previous = set1.get();
    auto set2 = RuleSet::build(v2, options, &error);
    ASSERT_NE(set2, nullptr) << error;
    LimitTable ta(256, HashSeed{{1, 2, 3, 4}}), tb(256, HashSeed{{1, 2, 3, 4}});
    Pipeline reference(set1.get(), &ta, 0), pipelined(set1.get(), &tb, 1);

    constexpr unsigned kBursts = 40, kSwap = 17;
    std::mt19937 g(42);
    std::vector<std::vector<test::Frame>> frames(kBursts);
    std::vector<std::vector<const uint8_t *>> ptrs(kBursts);
    std::vector<std::vector<uint32_t>> lens(kBursts);
    std::vector<std::vector<uint64_t>> now(kBursts);
    for (unsigned b = 0; b < kBursts; ++b)
        for (unsigned i = 0; i < kMaxBurst; ++i) {
            const std::string src = "198.18.0." + std::to_string(g() % 50);
            frames[b].push_back(g() % 2 ? udp_from(src) : tcp_from(src));
            now[b].push_back(1000000000 + (b * kMaxBurst + i) * 20000000ull);  // 50 a second
        }
    for (unsigned b = 0; b < kBursts; ++b)
        for (const test::Frame &f : frames[b]) {
            ptrs[b].push_back(f.data());
            lens[b].push_back(static_cast<uint32_t>(f.size()));
        }

    std::vector<Verdict> want(kBursts * kMaxBurst), got(kBursts * kMaxBurst);
    for (unsigned b = 0; b < kBursts; ++b) {
        if (b == kSwap - 1) reference.set_rules(set2.get());
        reference.decide(ptrs[b].data(), lens[b].data(), kMaxBurst, now[b].data(),
                         &want[b * kMaxBurst]);
    }
    unsigned decided = 0;
    for (unsigned b = 0; b < kBursts; ++b) {
        if (b == kSwap) pipelined.set_rules(set2.get());  // burst kSwap - 1 waits, keyed with v1
        pipelined.prepare(ptrs[b].data(), lens[b].data(), kMaxBurst, now[b].data());
        if (pipelined.prepared() == 2) decided += pipelined.decide_prepared(&got[decided]);
    }
    EXPECT_EQ(pipelined.prepared(), 1u);
    decided += pipelined.decide_prepared(&got[decided]);  // the last, with nothing behind it
    EXPECT_EQ(pipelined.prepared(), 0u);
    EXPECT_EQ(pipelined.decide_prepared(&got[0]), 0u);
    ASSERT_EQ(decided, kBursts * kMaxBurst);
    EXPECT_EQ(got, want);

    unsigned refused = 0;
    for (Verdict v : want) refused += v != Verdict::pass;
    EXPECT_GT(refused, 100u);  // the limits bite
    EXPECT_LT(refused, kBursts * kMaxBurst - 100);
    for (const CompiledRule &r : set2->rules()) {
        const RuleCounters &a = r.state->per_core[0].counters, &b = r.state->per_core[1].counters;
        EXPECT_EQ(a.matched, b.matched) << r.name;
        EXPECT_EQ(a.passed, b.passed) << r.name;
        EXPECT_EQ(a.refused, b.refused) << r.name;
    }
    Pipeline::Stats sa, sb;
    ASSERT_TRUE(reference.read_stats(*set2, &sa));
    ASSERT_TRUE(pipelined.read_stats(*set2, &sb));
    EXPECT_EQ(sa.counters.packets, sb.counters.packets);
    EXPECT_EQ(sa.counters.passed, sb.counters.passed);
    EXPECT_EQ(sa.counters.rate_limited, sb.counters.rate_limited);
}

// A packet one plain rule matches is decided by decide_one's short path; the same packet with a
// second rule that never refuses goes through the general loops. The first rule must come out
// the same either way: verdicts, answers, every counter of the rule and its top offenders.
TEST(ShortPath, AgreesWithTheGeneralLoops) {
    Rule web = rule("web", 6, TableFullPolicy::shared);
    web.burst_pkts = 3;
    web.action = RuleAction::tcp_rst;
    Rule dns = rule("dns", 17, TableFullPolicy::shared);
    dns.burst_pkts = 2;
    dns.action = RuleAction::icmp_unreachable;
    Rule wide = rule("wide", 0, TableFullPolicy::shared);  // every packet, never refused
    wide.match.proto.reset();
    wide.rate_count = 1000000;
    wide.burst_pkts = 1000000;
    Config alone;
    alone.table_entries_per_core = 4096;
    alone.rules = {web, dns};
    Config with_wide = alone;
    with_wide.rules.push_back(wide);
    std::string error;
    auto set_alone = RuleSet::build(alone, -1, &error);
    ASSERT_NE(set_alone, nullptr) << error;
    auto set_wide = RuleSet::build(with_wide, -1, &error);
    ASSERT_NE(set_wide, nullptr) << error;
    ASSERT_TRUE(set_alone->rules()[0].plain && set_alone->rules()[1].plain);
    LimitTable ta(4096, HashSeed{{1, 2, 3, 4}}), tb(4096, HashSeed{{1, 2, 3, 4}});
    Pipeline short_path(set_alone.get(), &ta), general(set_wide.get(), &tb);

    std::mt19937 g(7);
    unsigned refused = 0, answered = 0;
    for (unsigned i = 0; i < 3000; ++i) {
        const std::string src =
            "198.18." + std::to_string(g() % 4) + "." + std::to_string(g() % 40);
        const test::Frame f = g() % 2 ? udp_from(src) : tcp_from(src);
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        uint64_t now_ns = 1000000000 + i * 1000000ull;  // 1,000 packets a second in all
        Verdict a, b;
        short_path.decide(&frame, &len, 1, &now_ns, &a);
        general.decide(&frame, &len, 1, &now_ns, &b);
        ASSERT_EQ(a, b) << "packet " << i << " from " << src;
        const AnswerPlan &pa = short_path.answer_plan(0), &pb = general.answer_plan(0);
        if (a == Verdict::answer) {
            ASSERT_EQ(pa.kind, pb.kind) << "packet " << i;
            ASSERT_EQ(pa.answer_len, pb.answer_len) << "packet " << i;
            ++answered;
        }
        refused += a != Verdict::pass;
    }
    EXPECT_GT(refused, 1500u);  // both limits bite, and refusals are answered
    EXPECT_GT(answered, 100u);
    for (unsigned r = 0; r < 2; ++r) {
        const RuleCoreState &x = set_alone->rules()[r].state->per_core[0],
                            &y = set_wide->rules()[r].state->per_core[0];
        const std::string &x_name = set_alone->rules()[r].name;
#define FG_X(field) EXPECT_EQ(x.counters.field, y.counters.field) << #field << " of " << x_name;
        FG_RULE_COUNTERS(FG_X)
#undef FG_X
        const auto tx = x.top_refused.top(HeavyHitters::kCounters),
                   ty = y.top_refused.top(HeavyHitters::kCounters);
        ASSERT_EQ(tx.size(), ty.size());
        for (size_t k = 0; k < tx.size(); ++k) {
            // An IPv4 source is in addr_hi (raw bytes 0-7; addr_lo is 0).
            EXPECT_EQ(tx[k].addr_hi, ty[k].addr_hi) << x_name << " offender " << k;
            EXPECT_EQ(tx[k].addr_lo, ty[k].addr_lo) << x_name << " offender " << k;
            EXPECT_EQ(tx[k].family, ty[k].family) << x_name << " offender " << k;
            EXPECT_EQ(tx[k].prefix_len, ty[k].prefix_len) << x_name << " offender " << k;
            EXPECT_EQ(tx[k].count, ty[k].count) << x_name << " offender " << k;
            EXPECT_EQ(tx[k].error, ty[k].error) << x_name << " offender " << k;
        }
    }
    // The wide rule saw every packet, refused none, and was overruled by every refusal.
    const RuleCounters &w = set_wide->rules()[2].state->per_core[0].counters;
    EXPECT_EQ(w.matched, 3000u);
    EXPECT_EQ(w.refused, 0u);
    EXPECT_EQ(w.overruled, refused);
}

TEST(CrossCoreMerge, ChargesEachCoreWithTheOthersConsumption) {
    Config c;
    c.table_entries_per_core = 64;
    Rule r = rule("a", 17, TableFullPolicy::shared);
    r.rate_count = 10;
    r.burst_pkts = 2;
    c.rules = {r};
    std::string error;
    RuleSetOptions options;
    options.cores = 2;
    auto rules = RuleSet::build(c, options, &error);
    ASSERT_NE(rules, nullptr) << error;
    LimitTable ta(64, HashSeed{{1, 2, 3, 4}}), tb(64, HashSeed{{1, 2, 3, 4}});
    Pipeline a(rules.get(), &ta, 0), b(rules.get(), &tb, 1);
    a.enable_merge();
    b.enable_merge();
    std::vector<Pipeline *> cores = {&a, &b};
    std::vector<Consumption> scratch;
    const test::Frame f = udp_from("198.18.0.7");
    auto send = [&](Pipeline &p, uint64_t now_ms) {
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        uint64_t now_ns = now_ms * 1000000;
        Verdict v;
        p.decide(&frame, &len, 1, &now_ns, &v);
        return v;
    };
    // t = 0: each core sees a full burst of 2 on its own: 4 pass (one core alone: 2). This is
    // the over-admission a merge interval allows: (cores - 1) x burst here.
    EXPECT_EQ(send(a, 0), Verdict::pass);
    EXPECT_EQ(send(a, 0), Verdict::pass);
    EXPECT_EQ(send(b, 0), Verdict::pass);
    EXPECT_EQ(send(b, 0), Verdict::pass);
    // Merge at 1 ms: each TAT = max(200, 1) + 2 x 100 = 400 ms.
    merge_cores(cores, 1000000, &scratch);
    EXPECT_EQ(scratch.size(), 2u);
    EXPECT_EQ(send(a, 1), Verdict::drop);    // 400 + 100 - 1 > 200
    EXPECT_EQ(send(b, 299), Verdict::drop);  // 400 + 100 - 299 > 200
    // From 300 ms one packet fits again (the 4 early packets are paid back: one core alone
    // would have passed 2 at 0, 100, 200 and 300 ms, the same 5 in all).
    EXPECT_EQ(send(a, 300), Verdict::pass);   // TAT_a = 500
    EXPECT_EQ(send(b, 300), Verdict::pass);   // TAT_b = 500: b has not seen a's yet
    merge_cores(cores, 301000000, &scratch);  // both: max(500, 301) + 100 = 600 ms
    EXPECT_EQ(send(a, 399), Verdict::drop);   // 600 + 100 - 399 > 200
    EXPECT_EQ(send(b, 500), Verdict::pass);   // 600 + 100 - 500 = 200
    EXPECT_EQ(send(a, 500), Verdict::pass);   // a has not seen b's yet
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

// One aggregate rule (key dst) on proto: 10/s, burst 10, 30% of it reserved for established
// sources only, so new ones may run 7 packets ahead.
class AggregateTest : public PipelineTest {
  protected:
    static Rule aggregate(const char *name, uint8_t proto, ClassReserve reserve) {
        Rule r;
        r.name = name;
        r.match.proto = proto;
        r.key_kind = KeyKind::dst;
        r.rate_count = 10;
        r.rate_period_ns = 1000000000;
        r.burst_pkts = 10;
        r.reserve = reserve;
        return r;
    }
    void build_aggregate(const char *name, uint8_t proto) {
        Config c;
        c.rules = {aggregate(name, proto, ClassReserve{30, 0, 0})};
        build(c);
    }
    // A frame going inside to outside at now.
    void returning(const test::Frame &f, uint64_t now) {
        const uint8_t *frame = f.data();
        uint32_t len = static_cast<uint32_t>(f.size());
        pipeline_->observe_returning(&frame, &len, 1, &now);
    }
};

// An aggregate rule (key dst) with a reserve: under a flood of new sources that keeps the
// destination's TAT at the new sources' tolerance, an established source still passes from
// its reserve, and a destination nobody floods is untouched. Burst 10 at 10/s, reserve 30%
// for established only: new sources may run 7 packets ahead, established ones 10.
TEST_F(AggregateTest, KeyShedsNewSourcesFirst) {
    build_aggregate("per-destination", kProtoUdp);
    auto udp = [](const std::string &src, const std::string &dst) {
        return test::PacketBuilder().ipv4(src, dst).udp(1000, 53).build();
    };
    const uint64_t t0 = 1'000'000'000'000ull;
    // 20 new sources at one instant: 7 pass (the new class's share of the burst), 13 refused.
    unsigned passed = 0;
    for (int i = 0; i < 20; ++i)
        passed += send(udp("198.19.0." + std::to_string(i + 1), "198.18.1.1"), t0) == Verdict::pass;
    EXPECT_EQ(passed, 7u);
    EXPECT_EQ(counters(0).refused_new, 13u);
    // The server answers 198.18.0.10 (a reply going out): it is established from now on.
    returning(
        test::PacketBuilder().ipv4("198.18.1.1", "198.18.0.10").tcp(53, 1000, kTcpAck).build(), t0);
    Pipeline::Stats stats;
    ASSERT_TRUE(pipeline_->read_stats(*rules_, &stats));
    EXPECT_EQ(stats.counters.established_marked, 1u);
    // Its packets use the 3 reserved: 3 pass, the 4th is refused (counted as established).
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(send(udp("198.18.0.10", "198.18.1.1"), t0), i < 3 ? Verdict::pass : Verdict::drop)
            << i;
    EXPECT_EQ(counters(0).reserve_established, 3u);
    EXPECT_EQ(counters(0).refused_established, 1u);
    // Still at t0, more new sources are all refused; another destination is untouched.
    EXPECT_EQ(send(udp("198.19.1.1", "198.18.1.1"), t0), Verdict::drop);
    EXPECT_EQ(send(udp("198.19.1.1", "198.18.1.2"), t0), Verdict::pass);
    EXPECT_EQ(counters(0).refused, 13u + 1 + 1);
    EXPECT_EQ(counters(0).refused, counters(0).refused_established + counters(0).refused_verified +
                                       counters(0).refused_known + counters(0).refused_new);
}

// A SYN-ACK going out proves nothing about its destination: the server answers any SYN that
// got through, spoofed or not, and a spoofed flood whose sources recur (tests/lab/aggregate.sh:
// 4,112 keys) would make its own sources established and take the reserve from the real
// clients. A source is established by what only a real peer gets: the server's ACK of its
// data or handshake (an ACK without SYN), or a DNS response.
TEST_F(AggregateTest, ASynAckDoesNotMakeItsDestinationEstablished) {
    build_aggregate("web-total", kProtoTcp);
    auto from = [](const std::string &src, uint8_t flags) {
        return test::PacketBuilder().ipv4(src, "198.18.1.1").tcp(40000, 80, flags).build();
    };
    auto reply = [&](const std::string &dst, uint8_t flags, uint64_t now) {
        returning(test::PacketBuilder().ipv4("198.18.1.1", dst).tcp(80, 40000, flags).build(), now);
    };
    const uint64_t t0 = 1'000'000'000'000ull;
    // 7 spoofed SYNs pass (the new sources' share of the burst); the server SYN-ACKs each.
    for (int i = 0; i < 7; ++i) {
        const std::string src = "198.19.0." + std::to_string(i + 1);
        ASSERT_EQ(send(from(src, kTcpSyn), t0), Verdict::pass) << i;
        reply(src, kTcpSyn | kTcpAck, t0);
    }
    Pipeline::Stats stats;
    ASSERT_TRUE(pipeline_->read_stats(*rules_, &stats));
    EXPECT_EQ(stats.counters.established_marked, 0u) << "SYN-ACKs mark nothing";
    // Their SYNs again: not established; known (their first SYN passed the aggregate), which
    // with no known reserve is refused like new.
    for (int i = 0; i < 7; ++i)
        EXPECT_EQ(send(from("198.19.0." + std::to_string(i + 1), kTcpSyn), t0), Verdict::drop) << i;
    EXPECT_EQ(counters(0).refused_known, 7u);
    EXPECT_EQ(counters(0).refused_new, 0u);
    EXPECT_EQ(counters(0).reserve_established, 0u);
    EXPECT_EQ(counters(0).refused_established, 0u);
    // A real client: the server ACKs its data (ACK, no SYN): established, it passes from the
    // reserve; a RST toward another source marks nothing, nor a UDP response.
    reply("198.18.0.10", kTcpAck, t0);
    reply("198.18.0.11", kTcpRst | kTcpAck, t0);
    // nor does a DNS response over UDP: a resolver answers spoofed queries too
    returning(test::PacketBuilder().ipv4("198.18.1.1", "198.18.0.12").udp(53, 40000).build(), t0);
    ASSERT_TRUE(pipeline_->read_stats(*rules_, &stats));
    EXPECT_EQ(stats.counters.established_marked, 1u);
    EXPECT_EQ(send(from("198.18.0.10", kTcpAck), t0), Verdict::pass);
    EXPECT_EQ(counters(0).reserve_established, 1u);
    EXPECT_EQ(send(from("198.18.0.11", kTcpAck), t0), Verdict::drop);
    EXPECT_EQ(counters(0).refused_new, 1u);
}

// The verified class: a source that answered a syn-auth rule's cookie keeps the verified
// reserve of an aggregate rule on its other packets. syn-auth on SYNs to port 80 (per source);
// the aggregate on every TCP packet to port 80 but SYNs, 10/s burst 10, 30% kept for verified
// sources (and established ones): new sources may run 7 ahead.
TEST_F(AggregateTest, VerifiedSourcesKeepTheVerifiedReserve) {
    Rule syn = rule("syn", kProtoTcp, TableFullPolicy::shared);
    syn.match.tcp_flags = {kTcpSyn, kTcpAck};
    syn.match.dst_ports = {PortRange{80, 80}};
    syn.action = RuleAction::syn_auth;
    Rule total = aggregate("web-total", kProtoTcp, ClassReserve{0, 30, 0});
    total.match.dst_ports = {PortRange{80, 80}};
    total.match.tcp_flags.must_clear = kTcpSyn;
    Config c;
    c.rules = {syn, total};
    build(c);
    const uint64_t t0 = 1'000'000'000'000ull;
    auto from = [](const std::string &src, uint8_t flags, uint32_t seq = 0) {
        test::Frame f = test::PacketBuilder().ipv4(src, "198.18.1.1").tcp(40000, 80, flags).build();
        for (int b = 0; b < 4; ++b) f[14 + 20 + 4 + b] = static_cast<uint8_t>(seq >> (24 - 8 * b));
        return f;
    };
    // The client's SYN is answered with a cookie; its RST carrying it verifies the source.
    ASSERT_EQ(send(from("198.18.0.10", kTcpSyn), t0), Verdict::answer);
    const uint32_t cookie = pipeline_->answer_plan(0).cookie;
    EXPECT_EQ(send(from("198.18.0.10", kTcpRst, cookie), t0), Verdict::drop);
    ASSERT_EQ(counters(0).verified, 1u);
    // New sources' ACKs fill the aggregate to the new class's 7; the rest are refused as new.
    unsigned passed = 0;
    for (int i = 0; i < 20; ++i)
        passed += send(from("198.19.0." + std::to_string(i + 1), kTcpAck), t0) == Verdict::pass;
    EXPECT_EQ(passed, 7u);
    EXPECT_EQ(counters(1).refused_new, 13u);
    // The verified client's ACKs: 3 from the reserve, the 4th refused as verified.
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(send(from("198.18.0.10", kTcpAck), t0), i < 3 ? Verdict::pass : Verdict::drop)
            << i;
    EXPECT_EQ(counters(1).reserve_verified, 3u);
    EXPECT_EQ(counters(1).refused_verified, 1u);
}

// Known marks are budgeted: a flood of new sources that an aggregate rule admits never fills
// the table with them. 4,096 entries and a 1 s TTL: one core may write 4096 / 4 marks per TTL,
// T = 976,562 ns, in bursts of 1,024: 5,000 new sources at one instant leave 1,024 marks.
TEST_F(AggregateTest, KnownMarksStayWithinTheirBudget) {
    Rule r;
    r.name = "total";
    r.match.proto = kProtoUdp;
    r.key_kind = KeyKind::none;
    r.rate_count = 1'000'000'000;  // admits all of them
    r.rate_period_ns = 1'000'000'000;
    r.burst_pkts = 1'000'000;
    Config c;
    c.table_entries_per_core = 4096;
    c.established.ttl_ns = 1'000'000'000;
    c.rules = {r};
    build(c);
    const uint64_t t0 = 1'000'000'000'000ull;
    for (uint32_t i = 0; i < 5000; ++i) {
        const std::string src = "10." + std::to_string(i >> 16) + "." +
                                std::to_string(i >> 8 & 255) + "." + std::to_string(i & 255);
        ASSERT_EQ(send(udp_from(src), t0), Verdict::pass) << src;
    }
    Pipeline::Stats stats;
    ASSERT_TRUE(pipeline_->read_stats(*rules_, &stats));
    EXPECT_EQ(stats.counters.marks_over_budget, 5000u - 1024);
    EXPECT_EQ(stats.counters.established_full, 0u);
    EXPECT_EQ(table_->stats().occupancy, 1024u + 1) << "the marks and the rule's one key";
}

// The syn-auth filter: every key added is found (no false negatives), and a key never added
// is found exactly when the 20 bits it is filed under (bits 40-59) are those of an added key.
TEST(RememberedFilter, NoFalseNegativesAndFalsePositivesOnlyOnASharedSlot) {
    RememberedFilter filter;
    std::mt19937_64 rng(15);
    std::set<uint64_t> slots;
    std::vector<uint64_t> added(10000);
    for (uint64_t &h : added) {
        h = rng();
        filter.add(h);
        slots.insert(h >> 40 & ((1u << 20) - 1));
    }
    for (uint64_t h : added) ASSERT_TRUE(filter.may_contain(h));
    unsigned expected = 0, found = 0;
    for (int i = 0; i < 100000; ++i) {
        const uint64_t h = rng();
        expected += slots.count(h >> 40 & ((1u << 20) - 1)) != 0;
        found += filter.may_contain(h);
    }
    EXPECT_EQ(found, expected);
    EXPECT_GT(expected, 0u);  // 10,000 of 2^20 slots: about 950 of 100,000
}

}  // namespace
}  // namespace floodgate
