// The XDP program itself, run by the kernel on crafted frames (BPF_PROG_TEST_RUN): a table of
// cases (XdpFrame), each a frame with the map entries it meets, its verdict and every counter
// after it: each header variant, truncated frames, blocked and unblocked sources, the longest
// prefix's reason, expired entries, an allow inside a block, no AF_XDP socket. Then the maps as
// user space writes, expires and reconciles them, and the dataplane's feed of them. Needs root
// (CAP_BPF); without it every test skips, saying why. Maps are not pinned: nothing here touches
// /sys/fs/bpf.
#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include <linux/bpf.h>
#include <algorithm>

#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "bpf/xdp_tier.h"
#include "dataplane/core/parse.h"
#include "dataplane/pipeline/refusal_samples.h"
#include "dataplane/service/xdp_feed.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

Prefix prefix(const char *text) {
    std::string why;
    const std::optional<Prefix> p = parse_prefix(text, &why);
    EXPECT_TRUE(p) << why;
    return p.value_or(Prefix{});
}

class XdpProgram : public ::testing::Test {
  protected:
    void SetUp() override { load(true); }
    void load(bool standalone) {
        XdpOptions o;
        o.standalone = standalone;
        o.pin_dir.clear();
        std::string error;
        tier_ = XdpTier::load(o, &error);
        if (!tier_) GTEST_SKIP() << "the kernel does not load BPF programs here: " << error;
    }
    // The program's verdict on one frame (XDP_DROP, XDP_PASS, ...).
    int run(const test::Frame &f) {
        test::Frame data = f;
        LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data.data(),
                    .data_size_in = static_cast<__u32>(data.size()), .repeat = 1);
        const int rc = bpf_prog_test_run_opts(tier_->program_fd(), &opts);
        EXPECT_EQ(rc, 0) << "BPF_PROG_TEST_RUN";
        return static_cast<int>(opts.retval);
    }
    uint64_t counter(fg_xdp_counter c) { return tier_->counters()[c]; }
    void block(const char *p, uint64_t expires_ns = 0, fg_xdp_origin origin = FG_XDP_ORIGIN_rules) {
        std::string error;
        ASSERT_TRUE(tier_->put({prefix(p), origin, false, expires_ns}, &error)) << error;
    }
    void allow(const char *p) {
        std::string error;
        ASSERT_TRUE(tier_->put({prefix(p), FG_XDP_ORIGIN_rules, true, 0}, &error)) << error;
    }

    std::unique_ptr<XdpTier> tier_;
};

test::Frame udp4(const std::string &src) {
    return test::PacketBuilder().ipv4(src, "198.18.1.1").udp(1000, 53).build();
}
test::Frame udp6(const std::string &src) {
    return test::PacketBuilder().ipv6(src, "2001:db8:1::1").udp(1000, 53).build();
}

// ---- Frames: a table of cases ---------------------------------------------------------------
//
// As Katran's test fixtures are: each case one frame, run on a program of its own (freshly
// loaded, counters at 0) whose maps hold the case's entries, with the verdict it must get and
// every counter after it, so that a frame counted under the wrong reason, or twice, fails.

// When an entry expires, from the time the case runs.
enum class Expiry {
    never,      // expires_ns 0: permanent
    expired,    // a nanosecond ago
    in_an_hour  // live for the whole case
};

struct MapEntry {
    const char *prefix;
    fg_xdp_origin origin = FG_XDP_ORIGIN_rules;
    bool allow = false;
    Expiry expiry = Expiry::never;
};

// The counters after the case's one frame (dataplane/api/xdp.h's FG_XDP_COUNTERS).
struct Counters {
    uint64_t packets = 0, passed = 0, unparsed = 0, block_hits = 0, escalated_hits = 0,
             allow_hits = 0;
};

struct FrameCase {
    const char *name;
    std::vector<MapEntry> maps;
    test::Frame frame;
    int action;  // XDP_DROP or XDP_PASS
    Counters counters;
    bool standalone = true;  // false: loaded for net_af_xdp, with no socket in xsks_map
};

void PrintTo(const FrameCase &c, std::ostream *os) {
    *os << c.name;
}

test::Frame cut_to(test::Frame f, size_t len) {
    f.resize(len);
    return f;
}

test::Frame with_byte(test::Frame f, size_t at, uint8_t value) {
    f.at(at) = value;
    return f;
}

std::vector<FrameCase> frame_cases() {
    const std::vector<MapEntry> blocked = {{"198.19.0.0/16"}, {"2001:db8:bad::/48"}};
    const Counters dropped_by_block{.packets = 1, .block_hits = 1};
    const Counters passed{.packets = 1, .passed = 1};
    const Counters unparsed{.packets = 1, .unparsed = 1};
    const std::string bad4 = "198.19.0.1", bad6 = "2001:db8:bad::1";
    // An expired /32 and /24 inside a live /16 (up to FG_XDP_EXPIRED_LOOKAHEAD nested expired
    // entries are looked past).
    const std::vector<MapEntry> expired_inside_block = {
        {"198.19.0.0/16"},
        {"198.19.1.0/24", FG_XDP_ORIGIN_operator, false, Expiry::expired},
        {"198.19.1.7/32", FG_XDP_ORIGIN_escalated, false, Expiry::expired}};
    std::vector<MapEntry> expired_alone = expired_inside_block;
    expired_alone.push_back({"198.18.5.5/32", FG_XDP_ORIGIN_escalated, false, Expiry::expired});
    // The allow list is in the maps too: the longest prefix over both lists decides, as in the
    // dataplane.
    const std::vector<MapEntry> allow_inside_block = {
        {"198.19.0.0/16"}, {"198.19.9.0/24", FG_XDP_ORIGIN_rules, true}, {"198.19.9.9/32"}};
    const std::vector<MapEntry> every_ipv4_source = {{"0.0.0.0/0"}};
    // Single addresses (a /32, a /64) live in the exact maps, the rest in the tries: the
    // longest prefix still decides across both, also for an IPv6 prefix longer than a /64.
    const std::vector<MapEntry> longer_than_a_64 = {
        {"2001:db8:5:5::/64", FG_XDP_ORIGIN_rules, true},
        {"2001:db8:5:5:1::/80", FG_XDP_ORIGIN_operator}};
    const std::vector<MapEntry> expired_64_inside_block = {
        {"2001:db8:77::/48"}, {"2001:db8:77:7::/64", FG_XDP_ORIGIN_rules, true, Expiry::expired}};
    return {
        {"Ipv6EscalatedSlash64Drops",
         {{"2001:db8:66:6::/64", FG_XDP_ORIGIN_escalated}},
         udp6("2001:db8:66:6::1"),
         XDP_DROP,
         {.packets = 1, .escalated_hits = 1}},
        {"Ipv6PrefixLongerThanItsSlash64Decides", longer_than_a_64, udp6("2001:db8:5:5:1::9"),
         XDP_DROP, dropped_by_block},
        {"Ipv6Slash64DecidesOutsideTheLongerPrefix",
         longer_than_a_64,
         udp6("2001:db8:5:5:2::9"),
         XDP_PASS,
         {.packets = 1, .passed = 1, .allow_hits = 1}},
        {"Ipv6ExpiredSlash64LetsTheCoveringBlockDecide", expired_64_inside_block,
         udp6("2001:db8:77:7::1"), XDP_DROP, dropped_by_block},
        // Blocked prefixes drop, the rest pass.
        {"BlockedIpv4SourceDrops", blocked, udp4("198.19.5.5"), XDP_DROP, dropped_by_block},
        {"OtherIpv4SourcePasses", blocked, udp4("198.18.0.10"), XDP_PASS, passed},
        {"BlockedIpv6SourceDrops", blocked, udp6("2001:db8:bad:1::7"), XDP_DROP, dropped_by_block},
        {"OtherIpv6SourcePasses", blocked, udp6("2001:db8:1::10"), XDP_PASS, passed},
        // The longest prefix decides the reason it is counted under.
        {"LongestPrefixEscalatedCountsEscalated",
         {{"198.19.0.0/16"}, {"198.19.7.7/32", FG_XDP_ORIGIN_escalated}},
         udp4("198.19.7.7"),
         XDP_DROP,
         {.packets = 1, .escalated_hits = 1}},
        {"CoveringBlockCountsABlock",
         {{"198.19.0.0/16"}, {"198.19.7.7/32", FG_XDP_ORIGIN_escalated}},
         udp4("198.19.7.8"),
         XDP_DROP,
         dropped_by_block},
        // Every header variant finds the source.
        {"VlanTaggedIpv4", blocked,
         test::PacketBuilder().vlan(10).ipv4(bad4, "198.18.1.1").udp(1, 53).build(), XDP_DROP,
         dropped_by_block},
        {"QinqTaggedIpv4", blocked,
         test::PacketBuilder().qinq(20).vlan(10).ipv4(bad4, "198.18.1.1").udp(1, 53).build(),
         XDP_DROP, dropped_by_block},
        {"Ipv4WithOptions", blocked,
         test::PacketBuilder()
             .ipv4(bad4, "198.18.1.1")
             .ipv4_options({1, 1, 1, 1})
             .tcp(1, 80, kTcpSyn)
             .build(),
         XDP_DROP, dropped_by_block},
        {"VlanTaggedIpv6", blocked,
         test::PacketBuilder().vlan(10).ipv6(bad6, "2001:db8:1::1").udp(1, 53).build(), XDP_DROP,
         dropped_by_block},
        // Frames without a readable source pass unjudged, even with every IPv4 source blocked.
        {"OneByteShortOfAnIpv4Header", every_ipv4_source, cut_to(udp4("198.19.0.1"), 14 + 19),
         XDP_PASS, unparsed},
        // Cut inside its VLAN tag (a test run needs 14 bytes at least, as a NIC delivers).
        {"CutInsideAVlanTag", every_ipv4_source,
         cut_to(test::PacketBuilder().vlan(10).ipv4("198.19.0.1", "198.18.1.1").udp(1, 53).build(),
                16),
         XDP_PASS, unparsed},
        // Version 6 in an IPv4 ethertype.
        {"Version6InAnIpv4Ethertype", every_ipv4_source, with_byte(udp4("198.19.0.1"), 14, 0x65),
         XDP_PASS, unparsed},
        {"Arp", every_ipv4_source, test::PacketBuilder().eth(0x0806).payload(28).build(), XDP_PASS,
         unparsed},
        // An expired entry is looked past: the shorter live prefix around it decides (the /16's
        // reason, not the /32's)...
        {"ExpiredEntriesLetTheCoveringBlockDecide", expired_inside_block, udp4("198.19.1.7"),
         XDP_DROP, dropped_by_block},
        // ... and with nothing live around it, an expired entry is absent.
        {"ExpiredEntryWithNothingAroundIsAbsent", expired_alone, udp4("198.18.5.5"), XDP_PASS,
         passed},
        {"AllowInsideABlockPasses",
         allow_inside_block,
         udp4("198.19.9.1"),
         XDP_PASS,
         {.packets = 1, .passed = 1, .allow_hits = 1}},
        {"BlockInsideThatAllowDrops", allow_inside_block, udp4("198.19.9.9"), XDP_DROP,
         dropped_by_block},
        {"BlockOutsideThatAllowDrops", allow_inside_block, udp4("198.19.8.1"), XDP_DROP,
         dropped_by_block},
        // For net_af_xdp the program redirects to its queue's socket; with none there (no socket
        // in xsks_map at index 0) the frame falls back to the kernel: what a test run can see.
        {"WithoutAnAfXdpSocketABlockedSourceDrops",
         {{"198.19.0.0/16"}},
         udp4("198.19.0.1"),
         XDP_DROP,
         dropped_by_block,
         false},
        {"WithoutAnAfXdpSocketFramesFallBackToTheKernel",
         {{"198.19.0.0/16"}},
         udp4("198.18.0.1"),
         XDP_PASS,
         passed,
         false},
    };
}

class XdpFrame : public XdpProgram, public ::testing::WithParamInterface<FrameCase> {
  protected:
    void SetUp() override { load(GetParam().standalone); }
};

TEST_P(XdpFrame, VerdictAndCounters) {
    const FrameCase &c = GetParam();
    const uint64_t now = XdpTier::monotonic_ns();
    for (const MapEntry &e : c.maps) {
        const uint64_t expires_ns = e.expiry == Expiry::never     ? 0
                                    : e.expiry == Expiry::expired ? now - 1
                                                                  : now + 3'600'000'000'000ull;
        std::string error;
        ASSERT_TRUE(tier_->put({prefix(e.prefix), e.origin, e.allow, expires_ns}, &error))
            << e.prefix << ": " << error;
    }
    EXPECT_EQ(run(c.frame), c.action);
    EXPECT_EQ(counter(FG_XDP_COUNTER_packets), c.counters.packets);
    EXPECT_EQ(counter(FG_XDP_COUNTER_passed), c.counters.passed);
    EXPECT_EQ(counter(FG_XDP_COUNTER_unparsed), c.counters.unparsed);
    EXPECT_EQ(counter(FG_XDP_COUNTER_block_hits), c.counters.block_hits);
    EXPECT_EQ(counter(FG_XDP_COUNTER_escalated_hits), c.counters.escalated_hits);
    EXPECT_EQ(counter(FG_XDP_COUNTER_allow_hits), c.counters.allow_hits);
}

INSTANTIATE_TEST_SUITE_P(Cases, XdpFrame, ::testing::ValuesIn(frame_cases()),
                         [](const ::testing::TestParamInfo<FrameCase> &info) {
                             return std::string(info.param.name);
                         });

// ---- The maps ---------------------------------------------------------------------------------
//
// What user space writes, finds, expires and reconciles, and the frames that show it.

TEST_F(XdpProgram, ExpiredEntriesAreAbsentAndExpireRemovesThem) {
    const uint64_t now = XdpTier::monotonic_ns();
    block("198.19.1.0/24", now - 1);  // expired a nanosecond ago
    block("198.19.2.0/24", now + 3'600'000'000'000ull);
    EXPECT_EQ(run(udp4("198.19.1.1")), XDP_PASS);
    EXPECT_EQ(run(udp4("198.19.2.1")), XDP_DROP);
    EXPECT_EQ(tier_->list().size(), 2u);
    EXPECT_EQ(tier_->expire(XdpTier::monotonic_ns()), 1u);
    ASSERT_EQ(tier_->list().size(), 1u);
    EXPECT_EQ(format_prefix(tier_->list()[0].prefix), "198.19.2.0/24");
    std::string error;
    EXPECT_TRUE(tier_->remove(prefix("198.19.2.0/24"), &error)) << error;
    EXPECT_FALSE(tier_->remove(prefix("198.19.2.0/24"), &error));
    EXPECT_NE(error.find("not in the map"), std::string::npos) << error;
    EXPECT_EQ(run(udp4("198.19.2.1")), XDP_PASS);
}

// Single addresses go to the exact maps, prefixes to the tries; each is listed, found and
// removed by its own prefix, and longest_live() decides as the program does.
TEST_F(XdpProgram, ExactAndPrefixEntriesAreListedFoundAndRemoved) {
    block("198.19.3.3/32");
    block("198.19.0.0/16");
    block("2001:db8:3:3::/64");
    block("2001:db8:3::/48");
    block("2001:db8:3:3:1::/80");
    std::vector<std::string> listed;
    for (const XdpEntry &e : tier_->list()) listed.push_back(format_prefix(e.prefix));
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed,
              (std::vector<std::string>{"198.19.0.0/16", "198.19.3.3/32", "2001:db8:3:3:1::/80",
                                        "2001:db8:3:3::/64", "2001:db8:3::/48"}));
    XdpEntry there;
    EXPECT_TRUE(tier_->find(prefix("198.19.3.3/32"), &there));
    EXPECT_TRUE(tier_->find(prefix("2001:db8:3:3::/64"), &there));
    EXPECT_FALSE(tier_->find(prefix("198.19.3.4/32"), &there));
    const uint64_t now = XdpTier::monotonic_ns();
    ASSERT_TRUE(tier_->longest_live(prefix("2001:db8:3:3:1::5/128"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "2001:db8:3:3:1::/80");
    ASSERT_TRUE(tier_->longest_live(prefix("2001:db8:3:3:2::5/128"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "2001:db8:3:3::/64");
    ASSERT_TRUE(tier_->longest_live(prefix("198.19.3.3/32"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "198.19.3.3/32");
    std::string error;
    ASSERT_TRUE(tier_->remove(prefix("198.19.3.3/32"), &error)) << error;
    ASSERT_TRUE(tier_->remove(prefix("2001:db8:3:3::/64"), &error)) << error;
    ASSERT_TRUE(tier_->longest_live(prefix("198.19.3.3/32"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "198.19.0.0/16");
    ASSERT_TRUE(tier_->longest_live(prefix("2001:db8:3:3:2::5/128"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "2001:db8:3::/48");
    EXPECT_EQ(run(udp4("198.19.3.3")), XDP_DROP);
    EXPECT_EQ(tier_->list().size(), 3u);
}

// What the dataplane and `attach --config` keep: exactly the rules and override entries asked
// for, an override over a rules entry of the same prefix, other origins left alone.
TEST_F(XdpProgram, ReconcileKeepsExactlyTheOwnedEntries) {
    std::string error;
    block("198.19.1.0/24");                              // rules, no longer wanted
    block("198.19.2.0/24", 0, FG_XDP_ORIGIN_operator);   // left alone
    block("198.19.3.3/32", 0, FG_XDP_ORIGIN_escalated);  // replaced by the file's allow
    const std::vector<XdpEntry> owned = {
        {prefix("198.19.4.0/24"), FG_XDP_ORIGIN_rules, false, 0},
        {prefix("198.19.3.3/32"), FG_XDP_ORIGIN_rules, true, 0},
        {prefix("198.19.5.0/24"), FG_XDP_ORIGIN_rules, false, 0},
        {prefix("198.19.5.0/24"), FG_XDP_ORIGIN_override, true, 77},
    };
    const XdpReconciled r = tier_->reconcile(owned);
    EXPECT_EQ(r.removed, 1u);
    EXPECT_EQ(r.added, 3u);
    EXPECT_EQ(r.failed, 0u);
    std::map<std::string, XdpEntry> got;
    for (const XdpEntry &e : tier_->list()) got[format_prefix(e.prefix)] = e;
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got.count("198.19.1.0/24"), 0u);
    EXPECT_EQ(got["198.19.2.0/24"].origin, FG_XDP_ORIGIN_operator);
    EXPECT_EQ(got["198.19.3.3/32"].origin, FG_XDP_ORIGIN_rules);
    EXPECT_TRUE(got["198.19.3.3/32"].allow);
    EXPECT_EQ(got["198.19.5.0/24"].origin, FG_XDP_ORIGIN_override);
    EXPECT_EQ(got["198.19.5.0/24"].expires_ns, 77u);
    // Again: nothing to do.
    const XdpReconciled again = tier_->reconcile(owned);
    EXPECT_EQ(again.added + again.removed, 0u);
}

TEST_F(XdpProgram, OperatorAndEscalatedEntriesGiveWayToTheRulesFile) {
    std::string error;
    block("198.19.0.0/24");  // the rules file's, for ever
    EXPECT_FALSE(tier_->add_operator({prefix("198.19.0.0/24"), FG_XDP_ORIGIN_operator, false,
                                      XdpTier::monotonic_ns() + 1'000'000'000ull},
                                     &error));
    EXPECT_NE(error.find("the rules file"), std::string::npos) << error;
    XdpEntry there;
    ASSERT_TRUE(tier_->find(prefix("198.19.0.0/24"), &there));
    EXPECT_EQ(there.expires_ns, 0u);  // still permanent
    error.clear();
    const uint64_t now = XdpTier::monotonic_ns();
    EXPECT_FALSE(tier_->add_escalated(
        {prefix("198.19.0.0/24"), FG_XDP_ORIGIN_escalated, false, now + 1'000'000'000ull}, now,
        &error));
    EXPECT_TRUE(error.empty()) << error;  // skipped, not failed
    EXPECT_TRUE(tier_->add_escalated(
        {prefix("198.19.1.1/32"), FG_XDP_ORIGIN_escalated, false, now + 1'000'000'000ull}, now,
        &error))
        << error;
    EXPECT_EQ(run(udp4("198.19.1.1")), XDP_DROP);
    EXPECT_EQ(counter(FG_XDP_COUNTER_escalated_hits), 1u);
    // find() is exact: a covering entry is not the prefix's own.
    EXPECT_FALSE(tier_->find(prefix("198.19.0.7/32"), &there));
}

// An allow that covers an escalated source (added after it, or before) wins, as in the
// dataplane: the escalated entry goes, and no new one is written under it.
TEST_F(XdpProgram, AnAllowCoveringAnEscalatedSourceLiftsIt) {
    std::string error;
    const uint64_t now = XdpTier::monotonic_ns(), later = now + 3'600'000'000'000ull;
    block("198.18.7.7/32", later, FG_XDP_ORIGIN_escalated);
    block("198.18.8.8/32", later, FG_XDP_ORIGIN_escalated);
    block("198.18.8.0/24", 0, FG_XDP_ORIGIN_operator);  // a block around one: stays
    const XdpReconciled r =
        tier_->reconcile({{prefix("198.18.7.0/24"), FG_XDP_ORIGIN_override, true, later}});
    EXPECT_EQ(r.added, 1u);
    EXPECT_EQ(r.removed, 1u);
    XdpEntry there;
    EXPECT_FALSE(tier_->find(prefix("198.18.7.7/32"), &there));
    EXPECT_TRUE(tier_->find(prefix("198.18.8.8/32"), &there));
    EXPECT_EQ(run(udp4("198.18.7.7")), XDP_PASS);
    EXPECT_FALSE(tier_->add_escalated(
        {prefix("198.18.7.9/32"), FG_XDP_ORIGIN_escalated, false, later}, now, &error));
    EXPECT_TRUE(error.empty()) << error;
    EXPECT_FALSE(tier_->find(prefix("198.18.7.9/32"), &there));
    // What the program decides, from user space: the longest live entry around a prefix.
    ASSERT_TRUE(tier_->longest_live(prefix("198.18.7.9/32"), now, &there));
    EXPECT_EQ(format_prefix(there.prefix), "198.18.7.0/24");
    EXPECT_TRUE(there.allow);
}

// floodctl xdp attach --config owns the rules entries only: the overrides a dataplane wrote in
// the same pinned maps stay.
TEST_F(XdpProgram, ReconcilingTheRulesOnlyLeavesOverridesAlone) {
    block("198.19.1.0/24", 0, FG_XDP_ORIGIN_override);
    block("198.19.2.0/24");  // rules, no longer in the file
    const XdpReconciled r = tier_->reconcile(
        {{prefix("198.19.3.0/24"), FG_XDP_ORIGIN_rules, false, 0}}, {FG_XDP_ORIGIN_rules});
    EXPECT_EQ(r.added, 1u);
    EXPECT_EQ(r.removed, 1u);
    XdpEntry there;
    EXPECT_TRUE(tier_->find(prefix("198.19.1.0/24"), &there));
    EXPECT_FALSE(tier_->find(prefix("198.19.2.0/24"), &there));
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

// The dataplane's feed (dataplane/service/xdp_feed.h) on a program of its own, driven by hand: the
// running rules' lists and overrides written, an override dropped on the next version, a source
// escalated from the top-refused samples and removed when its TTL ends. Times are the feed's
// own (what the control thread would pass); counts from its stats.
class XdpFeedTest : public ::testing::Test {
  protected:
    void SetUp() override {
        XdpOptions o;
        o.pin_dir.clear();
        std::string error;
        std::unique_ptr<XdpTier> tier = XdpTier::load(o, &error);
        if (!tier) GTEST_SKIP() << "the kernel does not load BPF programs here: " << error;
        feed_ = std::make_unique<XdpFeed>(std::move(tier), "test0", "");
    }
    static Prefix p(const char *text) {
        std::string why;
        return parse_prefix(text, &why).value();
    }
    // One tick at s seconds with running rules of version v, the dns rule's refusals of
    // 198.18.66.6 so far (its top refused source), and the workers' sampled refusals since the
    // last tick.
    void tick(uint64_t s, uint64_t v, const RunningRules &r, uint64_t refused,
              const XdpFeed::RefusalBatch &sampled = {}) {
        const nlohmann::ordered_json stats = {
            {"rules",
             {{{"name", "dns"},
               {"mode", "enforce"},
               {"top_refused",
                {{{"source", "198.18.66.6/32"}, {"count", refused}, {"error", 0}}}}}}}};
        feed_->tick(
            s * 1'000'000'000ull, v, [&] { return r; }, [&] { return stats; },
            [&] { return sampled; });
    }
    // dns: escalated after 1 s at 100 refused/s, for 10 s.
    static Rule escalating_dns() {
        Rule dns;
        dns.name = "dns";
        dns.escalate.after_ns = 1'000'000'000ull;
        dns.escalate.min_refused_count = 100;
        dns.escalate.ttl_ns = 10'000'000'000ull;
        return dns;
    }
    uint64_t entries(const char *origin) { return feed_->stats()["entries"][origin]; }
    uint64_t escalations(const char *what) { return feed_->stats()["escalations"][what]; }

    std::unique_ptr<XdpFeed> feed_;
};

TEST_F(XdpFeedTest, ListsOverridesAndEscalationsReachTheMapsAndLeaveThem) {
    RunningRules r;
    r.version = 1;
    r.allow = {p("198.18.1.0/24")};
    r.block = {p("198.19.0.0/16")};
    r.overrides = {{p("198.18.9.0/24"), PrefixVerdict::block, 0}};
    r.rules = {escalating_dns()};
    tick(10, 1, r, 0);
    EXPECT_EQ(entries("rules"), 2u);
    EXPECT_EQ(entries("override"), 1u);
    tick(11, 1, r, 50);  // 50/s: under 100/s
    EXPECT_EQ(escalations("total"), 0u);
    tick(12, 1, r, 250);  // 200/s for one second: over since 11 s, `after` reached
    EXPECT_EQ(escalations("total"), 1u);
    EXPECT_EQ(entries("escalated"), 1u);
    tick(13, 1, r, 250);  // its frames die in the driver now: no more refusals
    EXPECT_EQ(escalations("total"), 1u);
    r.version = 2;
    r.overrides.clear();
    tick(14, 2, r, 250);
    EXPECT_EQ(entries("override"), 0u);
    EXPECT_EQ(entries("rules"), 2u);
    EXPECT_EQ(entries("escalated"), 1u);
    tick(22, 2, r, 250);  // escalated at 12 s for 10 s: expires at 22 s
    EXPECT_EQ(escalations("expired"), 1u);
    EXPECT_EQ(entries("escalated"), 0u);
    EXPECT_EQ(feed_->stats()["counters"]["packets"], 0u);  // no frame ran the program
}

// A flood spread over 1,000 sources (perf's mix d), none of them in the summaries' top: their
// sampled refusals (14 samples of 32 a second each, 448/s against 100/s) escalate every one of
// them after a second, 198.18.66.6 too (both in the top and sampled: escalated once); sources
// sampled twice a second (64/s) are not.
TEST_F(XdpFeedTest, EverySourceOfASpreadFloodIsEscalatedFromTheSamples) {
    RunningRules r;
    r.version = 1;
    r.rules = {escalating_dns()};
    const auto second_of_samples = [](uint64_t taken_before) {
        XdpFeed::RefusalBatch b;
        for (unsigned i = 0; i < 1010; ++i) {
            const std::string src =
                "198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256) + "/32";
            for (unsigned k = 0; k < (i < 1000 ? 14u : 2u); ++k)
                b.samples.push_back({"dns", p(src.c_str()), RefusalSampler::kMeanGap});
        }
        for (unsigned k = 0; k < 14; ++k)
            b.samples.push_back({"dns", p("198.18.66.6/32"), RefusalSampler::kMeanGap});
        b.taken = taken_before + b.samples.size();
        return b;
    };
    tick(10, 1, r, 0, second_of_samples(0));
    EXPECT_EQ(escalations("total"), 0u);
    tick(11, 1, r, 450, second_of_samples(14034));
    EXPECT_EQ(escalations("total"), 1001u);
    EXPECT_EQ(entries("escalated"), 1001u);
    const nlohmann::ordered_json stats = feed_->stats();
    std::set<std::string> listed;
    for (const auto &x : stats["escalations"]["escalated"])
        listed.insert(x["prefix"].get<std::string>());
    EXPECT_EQ(listed.size(), 1001u);
    EXPECT_EQ(listed.count("198.18.3.231/32"), 1u);  // the 1,000th
    EXPECT_EQ(listed.count("198.18.3.232/32"), 0u);  // 64/s
    const nlohmann::ordered_json &sampled = stats["escalations"]["sampled"];
    EXPECT_EQ(sampled["samples_taken"], 28068u);  // 2 x (1,000 x 14 + 10 x 2 + 14)
    EXPECT_EQ(sampled["samples_lost"], 0u);
    EXPECT_EQ(sampled["sources"], 1011u);
}

// A cluster's shared escalations (dataplane/service/cluster_link.h): what this box escalated is
// taken once, with its TTL; what another box escalated is added with the TTL it was told,
// listed, and expires as any escalation; never under a live allow.
TEST_F(XdpFeedTest, EscalationsAreToldOnceAndTheOthersAreAddedWithTheirTtl) {
    RunningRules r;
    r.version = 1;
    r.allow = {p("198.18.1.0/24")};
    r.rules = {escalating_dns()};
    tick(10, 1, r, 0);
    tick(11, 1, r, 150);
    tick(12, 1, r, 350);  // escalated at 12 s for 10 s
    std::vector<XdpFeed::Told> told = feed_->take_escalations();
    ASSERT_EQ(told.size(), 1u);
    EXPECT_EQ(format_prefix(told[0].key), "198.18.66.6/32");
    EXPECT_EQ(told[0].ttl_ns, 10'000'000'000ull);
    EXPECT_TRUE(feed_->take_escalations().empty());  // told once

    const uint64_t at = 13'000'000'000ull;
    EXPECT_TRUE(feed_->add_told({p("198.18.77.7/32"), 5'000'000'000ull}, at));
    EXPECT_FALSE(feed_->add_told({p("198.18.1.5/32"), 5'000'000'000ull}, at));  // allowed
    EXPECT_EQ(entries("escalated"), 2u);
    EXPECT_EQ(escalations("from_cluster"), 1u);
    EXPECT_EQ(escalations("from_cluster_skipped"), 1u);
    EXPECT_TRUE(feed_->take_escalations().empty());  // another box's is not told again
    tick(13, 1, r, 350);
    const nlohmann::ordered_json listed = feed_->stats()["escalations"]["escalated"];
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0]["rule"], "dns");
    EXPECT_EQ(listed[1]["prefix"], "198.18.77.7/32");
    EXPECT_EQ(listed[1]["rule"], "cluster");
    EXPECT_DOUBLE_EQ(listed[1]["ttl_left_s"].get<double>(), 5.0);
    tick(18, 1, r, 350);  // the told one expires at 18 s, the box's own at 22 s
    EXPECT_EQ(entries("escalated"), 1u);
    EXPECT_EQ(escalations("expired"), 1u);
}

}  // namespace
}  // namespace floodgate
