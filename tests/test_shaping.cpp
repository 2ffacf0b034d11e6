// Shaping (action: shape): the wheel that holds packets (dataplane/core/shape_wheel.h), and the
// pipeline's held packets against a reference model written here: a token bucket in front of
// a FIFO queue, which shares no code or formulation with the pipeline's GCRA.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "dataplane/pipeline/pipeline.h"
#include "tests/pkt_builder.h"
#include "tests/time_units.h"

namespace floodgate {
namespace {

constexpr uint64_t kS = 1'000'000'000ull;

// --- the wheel --------------------------------------------------------------------------

TEST(ShapeWheel, ReleasesEachItemAtItsTimeInOrder) {
    ShapeWheel w(8);
    const uint64_t t0 = 10 * kS;
    w.push(t0 + 3 * kMs, t0, 1);
    w.push(t0 + 1 * kMs, t0, 2);
    w.push(t0 + 2 * kMs, t0, 3);
    ShapeWheel::Item out[8];
    EXPECT_EQ(w.pop_due(t0 + kMs - 1, false, out, 8), 0u);
    ASSERT_EQ(w.pop_due(t0 + kMs, false, out, 8), 1u);
    EXPECT_EQ(out[0].rule, 2);
    ASSERT_EQ(w.pop_due(t0 + 3 * kMs, false, out, 8), 2u);
    EXPECT_EQ(out[0].rule, 3);
    EXPECT_EQ(out[1].rule, 1);
    EXPECT_EQ(w.size(), 0u);
}

TEST(ShapeWheel, WholeSlotsReleaseOnlyOnceTheSlotHasEnded) {
    ShapeWheel w(4);
    const uint64_t slot = 1000 * ShapeWheel::kSlotNs;  // a slot's start
    w.push(slot + 5, slot, 0);
    ShapeWheel::Item out[4];
    EXPECT_EQ(w.pop_due(slot + 5, true, out, 4), 0u);  // its slot has not ended
    EXPECT_EQ(w.pop_due(slot + ShapeWheel::kSlotNs - 1, true, out, 4), 1u);
}

TEST(ShapeWheel, AnItemMoreThanATurnAheadWaitsForItsOwnTurn) {
    ShapeWheel w(4);
    const uint64_t t0 = 5 * kS;
    const uint64_t turn = uint64_t{ShapeWheel::kSlots} * ShapeWheel::kSlotNs;
    w.push(t0 + turn + 10 * kMs, t0, 7);  // the same slot as t0 + 10 ms, one turn later
    ShapeWheel::Item out[4];
    EXPECT_EQ(w.pop_due(t0 + 20 * kMs, false, out, 4), 0u);
    EXPECT_EQ(w.pop_due(t0 + turn, false, out, 4), 0u);
    ASSERT_EQ(w.pop_due(t0 + turn + 10 * kMs, false, out, 4), 1u);
    EXPECT_EQ(out[0].rule, 7);
}

TEST(ShapeWheel, AfterAnIdleGapNothingIsLostAndTheFullPoolRefuses) {
    ShapeWheel w(2);
    ShapeWheel::Item out[4];
    w.push(kS, kS, 0);
    EXPECT_EQ(w.pop_due(100 * kS, true, out, 4), 1u);  // a hundred turns later
    w.push(200 * kS + kMs, 200 * kS, 1);
    w.push(200 * kS + 2 * kMs, 200 * kS, 2);
    EXPECT_TRUE(w.full());
    EXPECT_EQ(w.pop_due(200 * kS + kMs / 2, false, out, 4), 0u);
    EXPECT_EQ(w.pop_due(201 * kS, false, out, 1), 1u);  // max respected
    EXPECT_FALSE(w.full());
    EXPECT_EQ(w.pop_any(out, 4), 1u);
    EXPECT_EQ(w.size(), 0u);
}

TEST(ShapeWheel, RetainIfRemovesOnlyWhatItIsTold) {
    ShapeWheel w(16);
    for (uint16_t i = 0; i < 10; ++i) w.push(kS + i * kMs, kS, i);
    w.retain_if([](ShapeWheel::Item &it) { return it.rule % 2 == 0; });
    EXPECT_EQ(w.size(), 5u);
    ShapeWheel::Item out[16];
    ASSERT_EQ(w.pop_due(2 * kS, false, out, 16), 5u);
    for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(out[i].rule, 2 * i);
}

// --- the pipeline against a reference model ----------------------------------------------

// The leaky bucket as a queue, in its own words: a bucket of `burst` tokens refilled at one
// token per interval_ns, in front of a FIFO queue of at most `queue` waiting packets. A packet
// leaves at the first moment at or after its arrival, and after the one before it, when a
// token is there; one that would find `queue` packets still waiting is dropped.
struct QueueModel {
    uint64_t interval_ns;
    uint64_t burst;
    uint64_t queue;
    // Credit in ns (a token is interval_ns), as of last_ns.
    uint64_t credit_ns;
    uint64_t last_ns = 0;
    std::deque<uint64_t> waiting;  // departure times after their arrival, FIFO
    uint64_t last_departure_ns = 0;

    QueueModel(uint64_t t, uint64_t b, uint64_t q)
        : interval_ns(t), burst(b), queue(q), credit_ns(b * t) {}

    // The departure time, or 0 for a drop.
    uint64_t offer(uint64_t arrival_ns) {
        while (!waiting.empty() && waiting.front() <= arrival_ns) waiting.pop_front();
        uint64_t t = std::max(arrival_ns, last_departure_ns);
        // Refill to t, then wait for a whole token.
        uint64_t credit = std::min(burst * interval_ns, credit_ns + (t - last_ns));
        if (credit < interval_ns) {
            t += interval_ns - credit;
            credit = interval_ns;
        }
        if (t > arrival_ns && waiting.size() >= queue) return 0;
        credit_ns = credit - interval_ns;
        last_ns = t;
        last_departure_ns = t;
        if (t > arrival_ns) waiting.push_back(t);
        return t;
    }
};

class ShapingTest : public ::testing::Test {
  protected:
    void build(const Rule &r, uint32_t hold = 4096) {
        Config c;
        c.rules = {r};
        std::string error;
        rules_ = RuleSet::build(c, -1, &error);
        ASSERT_NE(rules_, nullptr) << error;
        table_ = std::make_unique<LimitTable>(c.table_entries_per_core, HashSeed{{1, 2, 3, 4}});
        pipeline_ = std::make_unique<Pipeline>(rules_.get(), table_.get());
        pipeline_->set_hold_capacity(hold);
    }
    // Decides one frame at now_ns; returns when it leaves (now for a pass, its release for a
    // delay, by releasing everything due first), 0 when dropped. Released frames are
    // collected in departures_ by handle.
    uint64_t send(const test::Frame &f, uint64_t now_ns, uint64_t handle) {
        drain(now_ns);
        const uint8_t *frame = f.data();
        auto len = static_cast<uint32_t>(f.size());
        Verdict v;
        pipeline_->decide(&frame, &len, 1, &now_ns, &v);
        if (v == Verdict::pass) return now_ns;
        if (v != Verdict::delay) return 0;
        pipeline_->hold(0, handle);
        return UINT64_MAX;  // known once released
    }
    void drain(uint64_t now_ns) {
        Pipeline::Released out[kMaxBurst];
        unsigned n;
        while ((n = pipeline_->release(now_ns, false, out, kMaxBurst)) > 0)
            for (unsigned i = 0; i < n; ++i) {
                ASSERT_TRUE(out[i].sent);
                departures_.push_back({out[i].handle, out[i].release_ns});
            }
    }
    const RuleCounters &counters() { return rules_->rules()[0].state->per_core[0].counters; }
    const WorkerCounters &worker() {
        stats_ = {};
        EXPECT_TRUE(pipeline_->read_stats(*rules_, &stats_));
        return stats_.counters;
    }

    std::unique_ptr<RuleSet> old_;  // the ruleset before a reload, kept while it may be read
    std::unique_ptr<RuleSet> rules_;
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<Pipeline> pipeline_;
    std::vector<std::pair<uint64_t, uint64_t>> departures_;  // (handle, time) in release order
    Pipeline::Stats stats_;
};

Rule shape_rule(uint64_t count, uint64_t period_ns, uint32_t burst, ShapeQueue q,
                KeyKind key = KeyKind::src) {
    Rule r;
    r.name = "shaped";
    r.match.proto = 17;
    r.key_kind = key;
    r.rate_count = count;
    r.rate_period_ns = period_ns;
    r.burst_pkts = burst;
    r.action = RuleAction::shape;
    r.queue = q;
    return r;
}

test::Frame shaped_udp(const std::string &src, const std::string &dst = "198.18.255.1") {
    return test::PacketBuilder().ipv4(src, dst).udp(1000, 25).build();
}

// The seeds' example: a burst of 15 at 5/s, bursts of 5. GCRA admits 5 at once and refuses
// 10; the queue admits the same 5 at once and sends the other 10 at 200 ms intervals, the
// last 2 s after the burst.
TEST_F(ShapingTest, TheSeedsBurstOf15At5PerSecondLeavesOver2Seconds) {
    build(shape_rule(5, kS, 5, ShapeQueue{10, 0}));
    const uint64_t t0 = 7 * kS;
    QueueModel model(200 * kMs, 5, 10);
    std::vector<uint64_t> want;
    for (uint64_t i = 0; i < 15; ++i) {
        const uint64_t leaves = send(shaped_udp("198.18.0.1"), t0, i);
        want.push_back(model.offer(t0));
        if (i < 5)
            EXPECT_EQ(leaves, t0) << i;
        else
            EXPECT_EQ(leaves, UINT64_MAX) << i;
    }
    drain(t0 + 3 * kS);
    ASSERT_EQ(departures_.size(), 10u);
    for (size_t k = 0; k < departures_.size(); ++k) {
        EXPECT_EQ(departures_[k].first, 5 + k) << "in order";
        EXPECT_EQ(departures_[k].second, t0 + (k + 1) * 200 * kMs);
        EXPECT_EQ(departures_[k].second, want[5 + k]) << "the model agrees";
    }
    EXPECT_EQ(counters().passed, 15u);
    EXPECT_EQ(counters().delayed, 10u);
    EXPECT_EQ(counters().shaped, 10u);
    EXPECT_EQ(counters().held, 0u);
    EXPECT_EQ(counters().refused, 0u);
    EXPECT_EQ(counters().longest_wait_ns, 2 * kS);
}

// A full queue drops, exactly where the model does; the departures of what was kept are the
// model's, to the nanosecond, for random arrivals of several keys.
TEST_F(ShapingTest, RandomArrivalsLeaveWhenTheModelSaysAndFullQueuesDrop) {
    const uint64_t t = 10 * kMs;  // 100/s
    build(shape_rule(100, kS, 3, ShapeQueue{20, 0}));
    std::mt19937_64 rng(27);
    const std::vector<std::string> keys = {"198.18.0.1", "198.18.0.2", "198.18.0.3"};
    std::map<std::string, QueueModel> models;
    for (const auto &k : keys) models.emplace(k, QueueModel(t, 3, 20));
    std::map<uint64_t, uint64_t> want;  // handle -> departure
    std::map<uint64_t, std::string> key_of;
    std::map<uint64_t, uint64_t> arrival;
    uint64_t now = kS, drops = 0, delayed = 0;
    for (uint64_t h = 0; h < 3000; ++h) {
        now += rng() % (4 * kMs);  // ~500/s a key on average: far over 100/s
        const std::string &k = keys[rng() % keys.size()];
        const uint64_t model_leaves = models.at(k).offer(now);
        const uint64_t leaves = send(shaped_udp(k), now, h);
        if (model_leaves == 0) {
            EXPECT_EQ(leaves, 0u) << h;
            ++drops;
        } else if (model_leaves == now) {
            EXPECT_EQ(leaves, now) << h;
        } else {
            EXPECT_EQ(leaves, UINT64_MAX) << h;
            want[h] = model_leaves;
            key_of[h] = k;
            arrival[h] = now;
            ++delayed;
        }
    }
    drain(UINT64_MAX - 1);
    ASSERT_EQ(departures_.size(), want.size());
    std::map<std::string, uint64_t> last;
    for (const auto &[h, when] : departures_) {
        EXPECT_EQ(when, want.at(h)) << h;
        const std::string &k = key_of.at(h);
        // Queued behind the key's previous departure: one interval after it.
        if (last.count(k) && arrival.at(h) < last[k])
            EXPECT_EQ(when - last[k], t) << "one interval apart, key " << k;
        last[k] = when;
    }
    EXPECT_GT(drops, 0u);
    EXPECT_EQ(counters().shape_dropped, drops);
    EXPECT_EQ(counters().delayed, delayed);
    EXPECT_EQ(counters().refused, drops);
    EXPECT_EQ(counters().unanswered, drops);
    const WorkerCounters &w = worker();
    EXPECT_EQ(w.delayed, w.shaped + w.shape_flushed + w.held);
    EXPECT_EQ(w.packets, w.passed + w.dropped);
}

// queue: { delay }: a packet that would wait longer is dropped.
TEST_F(ShapingTest, ADelayBoundDropsWhatWouldWaitLonger) {
    build(shape_rule(10, kS, 1, ShapeQueue{0, 250 * kMs}));  // T = 100 ms
    const uint64_t t0 = kS;
    std::vector<uint64_t> got;
    for (uint64_t i = 0; i < 6; ++i) got.push_back(send(shaped_udp("198.18.0.9"), t0, i));
    // One at once, then waits of 100 and 200 ms; 300 ms is over the bound.
    EXPECT_EQ(got, (std::vector<uint64_t>{t0, UINT64_MAX, UINT64_MAX, 0, 0, 0}));
    EXPECT_EQ(counters().shape_dropped, 3u);
}

// The core's share: past it, the packet is refused and counted, never held.
TEST_F(ShapingTest, TheCoresShareBoundsWhatIsHeld) {
    build(shape_rule(1, kS, 1, ShapeQueue{1000, 0}), 4);
    for (uint64_t i = 0; i < 10; ++i) send(shaped_udp("198.18.0.7"), kS, i);
    EXPECT_EQ(counters().delayed, 4u);
    EXPECT_EQ(counters().shape_dropped, 5u);
    EXPECT_EQ(worker().shape_pool_full, 5u);
    EXPECT_EQ(worker().held, 4u);
}

// A reload keeps the queue of a rule that is unchanged and drops (and counts) a changed one's.
TEST_F(ShapingTest, AReloadKeepsAnUnchangedQueueAndDropsAChangedOne) {
    Rule r = shape_rule(1, kS, 1, ShapeQueue{100, 0});
    build(r);
    for (uint64_t i = 0; i < 5; ++i) send(shaped_udp("198.18.0.5"), kS, i);  // 1 passes, 4 held
    ASSERT_EQ(counters().held, 4u);
    const auto reload = [&](const Rule &next) {
        Config c;
        c.rules = {next};
        RuleSetOptions o;
        o.previous = rules_.get();
        std::string error;
        std::unique_ptr<RuleSet> built = RuleSet::build(c, o, &error);
        EXPECT_NE(built, nullptr) << error;
        pipeline_->set_rules(built.get());
        std::swap(old_, rules_);
        rules_ = std::move(built);
    };
    reload(r);  // the same rule
    EXPECT_EQ(counters().held, 4u);
    drain(kS + 2 * kS);
    EXPECT_EQ(departures_.size(), 2u);  // at 2 s and 3 s, as before the reload
    r.rate_count = 2;                   // changed: its queue is dropped
    reload(r);
    EXPECT_EQ(counters().held, 0u);
    EXPECT_EQ(counters().shape_flushed, 2u);
    Pipeline::Released out[kMaxBurst];
    ASSERT_EQ(pipeline_->release(kS + 3 * kS, false, out, kMaxBurst), 2u);
    EXPECT_FALSE(out[0].sent);
    EXPECT_FALSE(out[1].sent);
    EXPECT_EQ(counters().delayed, counters().shaped + counters().shape_flushed);
}

// A stopping core drops what it holds, and counts it.
TEST_F(ShapingTest, AStoppingCoreDropsWhatItHoldsAndCountsIt) {
    build(shape_rule(1, kS, 1, ShapeQueue{100, 0}));
    for (uint64_t i = 0; i < 8; ++i) send(shaped_udp("198.18.0.6"), kS, i);
    Pipeline::Released out[kMaxBurst];
    EXPECT_EQ(pipeline_->drop_held(out, kMaxBurst), 7u);
    EXPECT_EQ(counters().shape_flushed, 7u);
    EXPECT_EQ(worker().shape_flushed, 7u);
    EXPECT_EQ(worker().held, 0u);
}

// Per destination (an aggregate key): every source's packets to one server share its queue.
TEST_F(ShapingTest, APerDestinationQueueSpacesEverySourceTogether) {
    Rule r = shape_rule(100, kS, 1, ShapeQueue{50, 0}, KeyKind::dst);
    r.reserve = ClassReserve{0, 0, 0};  // no class keeps part of the burst: one plain queue
    build(r);
    for (uint64_t i = 0; i < 20; ++i)
        send(shaped_udp("198.19.0." + std::to_string(i + 1), "198.18.1.1"), kS, i);
    drain(2 * kS);
    ASSERT_EQ(departures_.size(), 19u);
    for (size_t k = 0; k < departures_.size(); ++k) {
        EXPECT_EQ(departures_[k].first, k + 1);
        EXPECT_EQ(departures_[k].second, kS + (k + 1) * 10 * kMs);
    }
}

}  // namespace
}  // namespace floodgate
