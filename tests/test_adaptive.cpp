// Adaptive limits (limit.adaptive): the AIMD step alone, the rules that may have one, and the
// pipeline's sampling of the protected server's response times, with whole connections built
// here (SYN, SYN-ACK, the ACK of the server's ISN, a request, a response) and spoofed ones.
#include <gtest/gtest.h>

#include <memory>

#include "dataplane/pipeline/pipeline.h"
#include "rules/load.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr uint64_t kOneMs = 1'000'000ull;
constexpr uint64_t kOneS = 1'000'000'000ull;

// --- the step ---------------------------------------------------------------------------

AdaptiveProfile profile(uint64_t min_pps, uint64_t max_pps, uint64_t target_ms, uint32_t window,
                        uint32_t decrease_pct, uint32_t increase_pct) {
    AdaptiveOptions a;
    a.enabled = true;
    a.min_count = min_pps, a.min_period_ns = kOneS;
    a.max_count = max_pps, a.max_period_ns = kOneS;
    a.target_ns = target_ms * kOneMs;
    a.window = window;
    a.decrease_pct = decrease_pct;
    a.increase_pct = increase_pct;
    return adaptive_profile(a);
}

TEST(AdaptiveStep, TimelySamplesAddAStepAWindowAndLateOnesCutOnceAWindow) {
    // 10-1000/s, target 50 ms, window 4, cut 20%, step 5% of max (50/s a window).
    const AdaptiveProfile p = profile(10, 1000, 50, 4, 20, 5);
    uint64_t w = adaptive_word(500'000, 0);  // 500/s in millipackets
    bool cut = false;
    for (int i = 0; i < 4; ++i) w = aimd_step(p, w, 10 * kOneMs, &cut);
    EXPECT_EQ(word_rate(w), 550'000u);  // + 50/s over a window of 4
    EXPECT_FALSE(cut);
    // Late: the window since the last cut has passed (4 samples): cut at once to 80%.
    w = aimd_step(p, w, 200 * kOneMs, &cut);
    EXPECT_TRUE(cut);
    EXPECT_EQ(word_rate(w), 440'000u);
    // Three more late ones: fewer than a window since the cut, no cut.
    for (int i = 0; i < 3; ++i) {
        w = aimd_step(p, w, 200 * kOneMs, &cut);
        EXPECT_FALSE(cut) << i;
    }
    EXPECT_EQ(word_rate(w), 440'000u);
    w = aimd_step(p, w, 200 * kOneMs, &cut);  // the fourth since: cut
    EXPECT_TRUE(cut);
    EXPECT_EQ(word_rate(w), 352'000u);
}

TEST(AdaptiveStep, TheRateStaysBetweenMinAndMax) {
    const AdaptiveProfile p = profile(10, 100, 50, 1, 90, 100);
    uint64_t w = adaptive_word(50'000, 0);
    bool cut;
    for (int i = 0; i < 20; ++i) w = aimd_step(p, w, kOneS, &cut);
    EXPECT_EQ(word_rate(w), 10'000u);
    for (int i = 0; i < 20; ++i) w = aimd_step(p, w, 0, &cut);
    EXPECT_EQ(word_rate(w), 100'000u);
}

// --- rules --------------------------------------------------------------------------------

std::string adaptive_rules(const std::string &key, const std::string &flags,
                           const std::string &adaptive) {
    return "rules:\n"
           "  - name: web\n"
           "    match: { proto: tcp, dst_port: 80, tcp_flags: \"" +
           flags + "\" }\n    key: " + key +
           "\n"
           "    limit: { rate: 100/s, burst: 10, adaptive: " +
           adaptive + " }\n";
}

TEST(AdaptiveRules, AsWrittenAndRefusedWhereTheyCannotLearn) {
    const Config c = parse_config(
        adaptive_rules("dst", "syn !ack",
                       "{ min: 10/s, max: 1000/s, target: 50ms, window: 8, decrease: 30%, "
                       "increase: 10% }"));
    const AdaptiveOptions &a = c.rules[0].adaptive;
    EXPECT_TRUE(a.enabled);
    EXPECT_EQ(a.min_count, 10u);
    EXPECT_EQ(a.max_count, 1000u);
    EXPECT_EQ(a.target_ns, 50 * kOneMs);
    EXPECT_EQ(a.window, 8u);
    EXPECT_EQ(a.decrease_pct, 30u);
    EXPECT_EQ(a.increase_pct, 10u);
    const auto refused = [](const std::string &text, const std::string &why) {
        try {
            parse_config(text);
            ADD_FAILURE() << "accepted: " << why;
        } catch (const ConfigError &e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("rules[0].limit"), std::string::npos) << e.what();
        }
    };
    const std::string ok = "{ min: 10/s, max: 1000/s, target: 50ms }";
    refused(adaptive_rules("src", "syn !ack", ok), "it needs key dst");
    refused(adaptive_rules("dst", "ack", ok), "tcp_flags \"syn !ack\"");
    refused(adaptive_rules("dst", "syn !ack", "{ min: 200/s, max: 1000/s, target: 50ms }"),
            "must lie between");
    refused(adaptive_rules("dst", "syn !ack", "{ min: 10/s, max: 5/s, target: 50ms }"),
            "min is above");
    refused(adaptive_rules("dst", "syn !ack", "{ min: 10/s, max: 1000/s }"), "target");
    refused(adaptive_rules("dst", "syn !ack",
                           "{ min: 10/s, max: 1000/s, target: 50ms, "
                           "decrease: 95% }"),
            "from 1% to 90%");
}

// --- the pipeline -------------------------------------------------------------------------

class AdaptiveTest : public ::testing::Test {
  protected:
    void build(const std::string &adaptive, const RuleSet *previous = nullptr) {
        Config c = parse_config(adaptive_rules("dst", "syn !ack", adaptive));
        c.rules[0].reserve = ClassReserve{0, 0, 0};
        RuleSetOptions o;
        o.previous = previous;
        std::string error;
        std::unique_ptr<RuleSet> built = RuleSet::build(c, o, &error);
        ASSERT_NE(built, nullptr) << error;
        if (!table_) {
            table_ = std::make_unique<LimitTable>(c.table_entries_per_core, HashSeed{{5, 6, 7, 8}});
            pipeline_ = std::make_unique<Pipeline>(built.get(), table_.get());
        } else {
            pipeline_->set_rules(built.get());
        }
        old_ = std::move(rules_);
        rules_ = std::move(built);
    }
    Verdict in(const test::Frame &f, uint64_t now_ns) {
        const uint8_t *frame = f.data();
        auto len = static_cast<uint32_t>(f.size());
        Verdict v;
        pipeline_->decide(&frame, &len, 1, &now_ns, &v);
        return v;
    }
    void out(const test::Frame &f, uint64_t now_ns) {
        const uint8_t *frame = f.data();
        auto len = static_cast<uint32_t>(f.size());
        pipeline_->observe_returning(&frame, &len, 1, &now_ns);
    }
    // One whole connection from client:port to the server, whose response takes response_ns.
    void connection(const std::string &client, uint16_t port, uint64_t t, uint64_t response_ns) {
        const std::string server = "198.18.1.1";
        ASSERT_EQ(in(pkt(client, server).tcp(port, 80, kTcpSyn).tcp_seq(1000).build(), t),
                  Verdict::pass);
        out(pkt(server, client)
                .tcp(80, port, kTcpSyn | kTcpAck)
                .tcp_seq(7000)
                .tcp_ack(1001)
                .build(),
            t + kOneMs / 10);
        in(pkt(client, server).tcp(port, 80, kTcpAck).tcp_seq(1001).tcp_ack(7001).build(),
           t + kOneMs / 5);
        in(pkt(client, server)
               .tcp(port, 80, kTcpAck | kTcpPsh)
               .tcp_seq(1001)
               .tcp_ack(7001)
               .payload(100)
               .build(),
           t + kOneMs / 5);
        out(pkt(server, client)
                .tcp(80, port, kTcpAck | kTcpPsh)
                .tcp_seq(7001)
                .tcp_ack(1101)
                .payload(500)
                .build(),
            t + kOneMs / 5 + response_ns);
    }
    static test::PacketBuilder pkt(const std::string &src, const std::string &dst) {
        test::PacketBuilder b;
        b.ipv4(src, dst);
        return b;
    }
    const AdaptiveRate &learned() { return rules_->rules()[0].state->adaptive; }
    uint64_t rate() { return learned().rate(); }

    std::unique_ptr<RuleSet> old_, rules_;
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<Pipeline> pipeline_;
};

const char *kWindow2 = "{ min: 10/s, max: 1000/s, target: 50ms, window: 2, increase: 10% }";

TEST_F(AdaptiveTest, TimelyResponsesRaiseTheLimitAndLateOnesCutIt) {
    build(kWindow2);
    EXPECT_EQ(rate(), 100'000u);
    uint64_t t = 10 * kOneS;
    // Two timely responses: + 10% of max (100/s) over a window of 2.
    connection("198.18.0.1", 40001, t, 5 * kOneMs);
    connection("198.18.0.2", 40002, t += 20 * kOneMs, 5 * kOneMs);
    EXPECT_EQ(rate(), 200'000u);
    EXPECT_EQ(learned().samples.load(), 2u);
    // Late ones (200 ms): a cut by 20% at once, the window (2 samples) having passed since
    // the start; then none until two more samples have come.
    connection("198.18.0.3", 40003, t += 20 * kOneMs, 200 * kOneMs);
    EXPECT_EQ(rate(), 160'000u);
    connection("198.18.0.4", 40004, t += 300 * kOneMs, 200 * kOneMs);
    EXPECT_EQ(rate(), 160'000u) << "one sample since the cut";
    EXPECT_EQ(learned().decreases.load(), 1u);
    EXPECT_EQ(learned().late.load(), 2u);
    connection("198.18.0.5", 40005, t += 300 * kOneMs, 200 * kOneMs);
    EXPECT_EQ(rate(), 128'000u);
}

// The learned rate is the limit: a burst of new SYNs after it fell is admitted at its rate.
TEST_F(AdaptiveTest, TheLearnedRateIsWhatTheRuleAdmits) {
    build("{ min: 10/s, max: 1000/s, target: 50ms, window: 1, decrease: 90% }");
    uint64_t t = 10 * kOneS;
    for (int i = 0; i < 3; ++i)
        connection("198.18.0." + std::to_string(i + 1), 41000 + i, t += kOneS, kOneS);
    EXPECT_EQ(rate(), 10'000u);  // 100 -> 10 (the floor)
    // 10/s, burst 10: from a full bucket, 10 at once and the 11th refused.
    t += 10 * kOneS;
    int passed = 0;
    for (int i = 0; i < 11; ++i)
        passed += in(pkt("198.19.0." + std::to_string(i + 1), "198.18.1.1")
                         .tcp(5000, 80, kTcpSyn)
                         .build(),
                     t) == Verdict::pass;
    EXPECT_EQ(passed, 10);
}

// Spoofed SYNs never complete a handshake: whatever the server answers them, no sample is
// taken and the rate does not move; the slots they hold are counted.
TEST_F(AdaptiveTest, ASpoofedSynFloodCannotMoveTheLimit) {
    build(kWindow2);
    uint64_t t = 10 * kOneS;
    for (int i = 0; i < 5000; ++i) {  // 1 ms apart: each one may start a sample
        const std::string src =
            "198.19." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
        t += kOneMs;
        if (in(pkt(src, "198.18.1.1").tcp(uint16_t(1024 + i), 80, kTcpSyn).tcp_seq(i).build(), t) !=
            Verdict::pass)
            continue;
        // The server answers (a SYN-ACK to the spoofed address) ...
        out(pkt("198.18.1.1", src)
                .tcp(80, uint16_t(1024 + i), kTcpSyn | kTcpAck)
                .tcp_seq(9000)
                .tcp_ack(i + 1)
                .build(),
            t);
        // ... and a blind spoofer's ACK with data cannot name the server's ISN.
        in(pkt(src, "198.18.1.1")
               .tcp(uint16_t(1024 + i), 80, kTcpAck)
               .tcp_ack(12345)
               .payload(50)
               .build(),
           t);
    }
    // A request the server never answers would read late: none was ever sampled.
    pipeline_->tick(t + 10 * kOneS);
    for (int i = 0; i < 300; ++i) pipeline_->tick(t + 10 * kOneS + i);
    EXPECT_EQ(learned().samples.load(), 0u);
    EXPECT_EQ(rate(), 100'000u);
    Pipeline::Stats s;
    ASSERT_TRUE(pipeline_->read_stats(*rules_, &s));
    EXPECT_GT(s.counters.adaptive_slots_busy, 0u);
    EXPECT_EQ(s.counters.adaptive_samples, 0u);
}

// A server that answers nothing still reads as slow: a request outstanding past the target is a
// late sample, found by the sweep (tick), with no packet needed.
TEST_F(AdaptiveTest, ARequestLeftUnansweredIsALateSample) {
    build("{ min: 10/s, max: 1000/s, target: 50ms, window: 1 }");
    const uint64_t t = 10 * kOneS;
    const std::string c = "198.18.0.9", s = "198.18.1.1";
    in(pkt(c, s).tcp(40009, 80, kTcpSyn).tcp_seq(1).build(), t);
    out(pkt(s, c).tcp(80, 40009, kTcpSyn | kTcpAck).tcp_seq(500).tcp_ack(2).build(), t);
    in(pkt(c, s).tcp(40009, 80, kTcpAck).tcp_seq(2).tcp_ack(501).payload(10).build(), t);
    for (uint32_t i = 0; i < ResponseSamples::kSlots; ++i) pipeline_->tick(t + 40 * kOneMs);
    EXPECT_EQ(learned().samples.load(), 0u) << "not yet past the target";
    for (uint32_t i = 0; i < ResponseSamples::kSlots; ++i) pipeline_->tick(t + 60 * kOneMs);
    EXPECT_EQ(learned().samples.load(), 1u);
    EXPECT_EQ(learned().late.load(), 1u);
    EXPECT_EQ(rate(), 80'000u);
}

// A server that speaks first (an SMTP banner): the time from the handshake's end to its first
// data is the sample.
TEST_F(AdaptiveTest, AServerThatSpeaksFirstIsTimedFromTheHandshake) {
    build("{ min: 10/s, max: 1000/s, target: 50ms, window: 1 }");
    const uint64_t t = 10 * kOneS;
    const std::string c = "198.18.0.8", s = "198.18.1.1";
    in(pkt(c, s).tcp(40008, 80, kTcpSyn).tcp_seq(1).build(), t);
    out(pkt(s, c).tcp(80, 40008, kTcpSyn | kTcpAck).tcp_seq(900).tcp_ack(2).build(), t);
    in(pkt(c, s).tcp(40008, 80, kTcpAck).tcp_seq(2).tcp_ack(901).build(), t + kOneMs);
    out(pkt(s, c).tcp(80, 40008, kTcpAck | kTcpPsh).tcp_seq(901).tcp_ack(2).payload(40).build(),
        t + 81 * kOneMs);
    EXPECT_EQ(learned().samples.load(), 1u);
    EXPECT_EQ(learned().last_signal_ns.load(), 80 * kOneMs);
    EXPECT_EQ(rate(), 80'000u);
}

// A reload keeps what the rule learned when its limit is unchanged, and starts again when not.
TEST_F(AdaptiveTest, AReloadKeepsTheLearnedRateOfAnUnchangedRule) {
    build(kWindow2);
    uint64_t t = 10 * kOneS;
    connection("198.18.0.1", 40001, t, 5 * kOneMs);
    connection("198.18.0.2", 40002, t + kOneMs, 5 * kOneMs);
    ASSERT_EQ(rate(), 200'000u);
    build(kWindow2, rules_.get());
    EXPECT_EQ(rate(), 200'000u);
    build("{ min: 10/s, max: 2000/s, target: 50ms, window: 2, increase: 10% }", rules_.get());
    EXPECT_EQ(rate(), 100'000u) << "changed: from the rule's rate again";
}

// The merge carries the learned T: other cores charge what was admitted at the rate in force.
TEST_F(AdaptiveTest, TheMergeChargesAtTheLearnedRate) {
    build("{ min: 10/s, max: 1000/s, target: 50ms, window: 1, decrease: 50% }");
    pipeline_->enable_merge();
    uint64_t t = 10 * kOneS;
    connection("198.18.0.1", 40001, t, kOneS);  // late: 100 -> 50/s
    ASSERT_EQ(rate(), 50'000u);
    std::vector<Consumption> published;
    pipeline_->publish(&published);
    in(pkt("198.18.0.7", "198.18.1.1").tcp(40007, 80, kTcpSyn).build(), t + 2 * kOneS);
    published.clear();
    pipeline_->publish(&published);
    // The key's consumption (a verification-style record, packets 0, is the source's known
    // mark).
    unsigned charges = 0;
    for (const Consumption &c : published)
        if (c.packets > 0) {
            ++charges;
            EXPECT_EQ(c.interval_ns, 20 * kOneMs);
        }
    EXPECT_EQ(charges, 1u);
}

}  // namespace
}  // namespace floodgate
