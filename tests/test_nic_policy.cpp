// The NIC tier's policy (dataplane/service/nic_policy.h) on a fake port: the cap, the insert
// rate, the operator's blocks first, TTLs, allows, refusals, and the counters, each an exact
// count worked out here from the inputs.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "dataplane/service/nic_policy.h"

namespace floodgate {
namespace {

constexpr uint64_t kS = 1'000'000'000ull;

Prefix prefix(const std::string &text) {
    std::string why;
    return *parse_prefix(text, &why);
}

// A port with a table of `room` rules, refusing what `refuse` names, its rules' hits set by
// the test.
struct FakePort : NicPort {
    size_t room = 1u << 20;
    std::map<Prefix, NicRefusal> refuse;
    std::map<uint64_t, Prefix> rules;
    std::map<Prefix, uint64_t> hits;  // by source: what each rule has dropped so far
    uint64_t next = 1, created = 0, validated = 0;
    NicAnswer validate(const Prefix &p) override {
        ++validated;
        const auto r = refuse.find(p);
        if (r != refuse.end() && r->second != NicRefusal::full) return {false, r->second, "no"};
        return {true, NicRefusal::other, {}};
    }
    NicAnswer create(const Prefix &p, uint64_t *handle) override {
        if (rules.size() >= room || refuse.contains(p)) return {false, NicRefusal::full, "full"};
        ++created;
        *handle = next++;
        rules[*handle] = p;
        return {true, NicRefusal::other, {}};
    }
    bool destroy(uint64_t handle) override { return rules.erase(handle) == 1; }
    bool query(uint64_t handle, uint64_t *h, uint64_t *bytes) override {
        const auto r = rules.find(handle);
        if (r == rules.end()) return false;
        *h = hits[r->second];
        *bytes = *h * 100;
        return true;
    }
    std::set<Prefix> sources() const {
        std::set<Prefix> out;
        for (const auto &[h, p] : rules) out.insert(p);
        return out;
    }
};

std::vector<NicWanted> escalations(unsigned n, uint64_t expires_ns, unsigned first = 0) {
    std::vector<NicWanted> out;
    for (unsigned i = first; i < first + n; ++i)
        out.push_back({prefix("198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256)),
                       NicOrigin::escalated, expires_ns, "dns"});
    return out;
}

NicTierOptions options(uint32_t max_rules, uint32_t rate, uint64_t ttl_ns) {
    NicTierOptions o;
    o.set = true;
    o.max_rules = max_rules;
    o.inserts_per_second = rate;
    o.ttl_ns = ttl_ns;
    return o;
}

TEST(NicPolicy, CapAndRateHeldUnderASpreadFlood) {
    NicPolicy policy(options(1000, 100, 600 * kS));
    FakePort port;
    const std::vector<NicWanted> wanted = escalations(10000, 3600 * kS);
    for (unsigned s = 1; s <= 12; ++s) {
        policy.tick(s * kS, wanted, {}, port);
        // 100 a second until the cap of 1,000 is reached at the 10th second.
        EXPECT_EQ(port.rules.size(), std::min(100u * s, 1000u)) << s;
        EXPECT_EQ(policy.counts().waiting, 10000u - std::min(100u * s, 1000u)) << s;
    }
    EXPECT_EQ(policy.counts().inserted, 1000u);
    EXPECT_EQ(port.created, 1000u);
    EXPECT_EQ(policy.held().size(), 1000u);
}

TEST(NicPolicy, BlocksFirstAndEvictTheEscalationNearestItsEnd) {
    NicPolicy policy(options(3, 10, 600 * kS));
    FakePort port;
    std::vector<NicWanted> wanted = escalations(3, 0);
    wanted[0].expires_ns = 100 * kS;
    wanted[1].expires_ns = 50 * kS;  // nearest its end
    wanted[2].expires_ns = 200 * kS;
    policy.tick(1 * kS, wanted, {}, port);
    ASSERT_EQ(port.rules.size(), 3u);
    // Two blocks arrive: each evicts an escalation, the nearest to its end first.
    wanted.push_back({prefix("203.0.113.0/24"), NicOrigin::block, 0, ""});
    wanted.push_back({prefix("2001:db8:66::/48"), NicOrigin::block, 0, ""});
    policy.tick(2 * kS, wanted, {}, port);
    EXPECT_EQ(port.sources(), (std::set<Prefix>{prefix("203.0.113.0/24"),
                                                prefix("2001:db8:66::/48"), wanted[2].source}));
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::evicted)], 2u);
    EXPECT_EQ(policy.counts().inserted, 5u);
    EXPECT_EQ(policy.counts().waiting, 0u);
    // A third block evicts the last escalation; the evicted ones wait, and no block is
    // evicted for them.
    wanted.push_back({prefix("203.0.114.0/24"), NicOrigin::block, 0, ""});
    policy.tick(3 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 3u);
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::evicted)], 3u);
    EXPECT_FALSE(port.sources().contains(wanted[2].source));
    EXPECT_EQ(policy.counts().waiting, 2u);
    wanted.push_back({prefix("203.0.115.0/24"), NicOrigin::block, 0, ""});
    policy.tick(4 * kS, wanted, {}, port);
    EXPECT_EQ(policy.counts().waiting, 4u);  // three escalations and the fourth block
    EXPECT_EQ(policy.counts().inserted, 6u);
}

TEST(NicPolicy, TtlsEndRules) {
    NicPolicy policy(options(100, 100, 10 * kS));
    FakePort port;
    std::vector<NicWanted> wanted = escalations(2, 5 * kS);                 // their own end at 5 s
    wanted.push_back({prefix("203.0.113.0/24"), NicOrigin::block, 0, ""});  // no end
    policy.tick(1 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 3u);
    policy.tick(5 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 1u);
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::expired)], 2u);
    // The block leaves at the tier's ttl, 10 s after it went in, and is not put back while it
    // is the same block...
    policy.tick(10 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 1u);
    policy.tick(11 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 0u);
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::ttl)], 1u);
    policy.tick(12 * kS, wanted, {}, port);
    EXPECT_EQ(port.rules.size(), 0u);
    EXPECT_EQ(policy.counts().waiting, 0u);
    // ... while a source escalated anew (another end) is.
    const std::vector<NicWanted> again = escalations(1, 60 * kS);
    policy.tick(13 * kS, again, {}, port);
    EXPECT_EQ(port.rules.size(), 1u);
    EXPECT_EQ(policy.counts().inserted, 4u);
    // A block removed is withdrawn as unwanted; a renewed escalation keeps its rule.
    std::vector<NicWanted> renewed = escalations(1, 90 * kS);
    policy.tick(14 * kS, renewed, {}, port);
    EXPECT_EQ(port.rules.size(), 1u);
    EXPECT_EQ(policy.counts().inserted, 4u);
    policy.tick(15 * kS, {}, {}, port);
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::unwanted)], 1u);
}

TEST(NicPolicy, RefusalsAndSkipsCountedOnceAndLeftBelow) {
    NicPolicy policy(options(100, 100, 600 * kS));
    FakePort port;
    std::vector<NicWanted> wanted = escalations(5, 0);
    port.refuse[wanted[0].source] = NicRefusal::item;
    port.refuse[wanted[1].source] = NicRefusal::full;  // validates, then create fails
    wanted.push_back({prefix("2001:db8::1/128"), NicOrigin::block, 0, ""});
    wanted.push_back({prefix("198.18.0.0/24"), NicOrigin::block, 0, ""});  // over the allow
    const std::vector<Prefix> allows = {prefix("198.18.0.4/32")};
    for (unsigned s = 1; s <= 3; ++s) policy.tick(s * kS, wanted, allows, port);
    const NicPolicy::Counts &c = policy.counts();
    EXPECT_EQ(c.refused[static_cast<unsigned>(NicRefusal::item)], 1u);
    EXPECT_EQ(c.refused[static_cast<unsigned>(NicRefusal::full)], 1u);
    EXPECT_EQ(c.skipped[static_cast<unsigned>(NicSkip::prefix)], 1u);
    // The /24 and 198.18.0.4 itself: both overlap the allow.
    EXPECT_EQ(c.skipped[static_cast<unsigned>(NicSkip::allow)], 2u);
    EXPECT_EQ(port.sources(), (std::set<Prefix>{wanted[2].source, wanted[3].source}));
    EXPECT_EQ(c.inserted, 2u);
    EXPECT_EQ(c.waiting, 0u);
    // An allow added later lifts the rule under it.
    policy.tick(4 * kS, wanted, {prefix("198.18.0.3/32")}, port);
    EXPECT_EQ(port.sources(), (std::set<Prefix>{wanted[2].source}));
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::unwanted)], 1u);
}

TEST(NicPolicy, CountersAndAStopWithdrawEverything) {
    NicPolicy policy(options(100, 100, 600 * kS));
    FakePort port;
    const std::vector<NicWanted> wanted = escalations(3, 0);
    policy.tick(1 * kS, wanted, {}, port);
    port.hits[wanted[0].source] = 7;
    port.hits[wanted[1].source] = 5;
    policy.tick(2 * kS, wanted, {}, port);
    EXPECT_EQ(policy.held()[0].hits, 7u);
    EXPECT_EQ(policy.held()[1].bytes, 500u);
    port.hits[wanted[0].source] = 9;  // two more before the stop: counted when withdrawn
    EXPECT_EQ(policy.withdraw_all(port), 3u);
    EXPECT_TRUE(port.rules.empty());
    EXPECT_EQ(policy.counts().withdrawn[static_cast<unsigned>(NicWithdrawal::stopped)], 3u);
    EXPECT_EQ(policy.counts().hits_withdrawn, 14u);
    EXPECT_EQ(policy.counts().bytes_withdrawn, 1400u);
}

}  // namespace
}  // namespace floodgate
