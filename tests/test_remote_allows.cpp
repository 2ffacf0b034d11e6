// The other boxes' allows as a box's daemon takes them (issue 42): none when they are off, none
// shorter than the cluster section's lengths, a count per other box and sync, TTLs capped
// (0, "never expires", is the cap too); each counted by reason.
#include <gtest/gtest.h>

#include "control/cluster/remote_allows.h"

namespace floodgate {
namespace {

constexpr uint64_t kTenYearsMs = 10ull * 365 * 24 * 3600 * 1000;

nlohmann::json counts(uint64_t off, uint64_t short_, uint64_t malformed, uint64_t over,
                      uint64_t clamped) {
    return {{"off", off},
            {"short", short_},
            {"malformed", malformed},
            {"over_count", over},
            {"ttl_clamped", clamped}};
}

TEST(RemoteAllows, PolicyFromTheStatusWithItsDefaults) {
    const RemoteAllowPolicy d = RemoteAllowPolicy::from_status(nlohmann::json::object());
    EXPECT_TRUE(d.take);
    EXPECT_EQ(d.max_ttl_s, 3600u);
    EXPECT_EQ(d.min_len_ipv4, 24u);
    EXPECT_EQ(d.min_len_ipv6, 48u);
    const RemoteAllowPolicy p = RemoteAllowPolicy::from_status({{"remote_allows", false},
                                                                {"remote_allow_max_ttl_s", 60},
                                                                {"remote_allow_min_ipv4", 28},
                                                                {"remote_allow_min_ipv6", 64}});
    EXPECT_FALSE(p.take);
    EXPECT_EQ(p.max_ttl_s, 60u);
    EXPECT_EQ(p.min_len_ipv4, 28u);
    EXPECT_EQ(p.min_len_ipv6, 64u);
}

TEST(RemoteAllows, ShortPrefixesRefusedAndTtlsCapped) {
    RemoteAllows allows;
    const RemoteAllowPolicy p;
    allows.start_round(2);
    EXPECT_EQ(allows.take(p, "0.0.0.0/0", kTenYearsMs), std::nullopt);
    EXPECT_EQ(allows.take(p, "::/0", kTenYearsMs), std::nullopt);
    EXPECT_EQ(allows.take(p, "198.18.0.0/23", 60'000), std::nullopt);
    EXPECT_EQ(allows.take(p, "2001:db8::/47", 60'000), std::nullopt);
    EXPECT_EQ(allows.take(p, "not-a-prefix", 60'000), std::nullopt);
    EXPECT_EQ(allows.take(p, "198.18.0.0/24", kTenYearsMs), 3600);
    EXPECT_EQ(allows.take(p, "198.18.1.0/24", 0), 3600);
    EXPECT_EQ(allows.take(p, "198.18.2.0/24", 3'600'001), 3600);  // rounded up, past the cap
    EXPECT_EQ(allows.take(p, "198.18.3.0/24", 3'600'000), 3600);  // at the cap: as told
    EXPECT_EQ(allows.take(p, "2001:db8::/48", 1), 1);             // a second at least
    EXPECT_EQ(allows.counts(), counts(0, 4, 1, 0, 3));
}

TEST(RemoteAllows, NoneWhenOff) {
    RemoteAllows allows;
    RemoteAllowPolicy p;
    p.take = false;
    allows.start_round(3);
    EXPECT_EQ(allows.take(p, "198.18.0.1/32", 60'000), std::nullopt);
    EXPECT_EQ(allows.take(p, "0.0.0.0/0", 60'000), std::nullopt);
    EXPECT_EQ(allows.counts(), counts(2, 0, 0, 0, 0));
}

TEST(RemoteAllows, CountedPerOtherBoxAndRound) {
    RemoteAllows allows;
    const RemoteAllowPolicy p;
    for (uint32_t boxes : {1u, 3u}) {
        allows.start_round(boxes);
        const uint64_t bound = kRemoteAllowsPerBox * (boxes == 1 ? 1 : boxes - 1);
        for (uint64_t i = 0; i < bound + 5; ++i)
            EXPECT_EQ(allows.take(p, "198.18.0." + std::to_string(i) + "/32", 1000).has_value(),
                      i < bound);
    }
    EXPECT_EQ(allows.counts(), counts(0, 0, 0, 10, 0));
    // Refusals for other reasons take none of the round's count.
    allows.start_round(2);
    for (int i = 0; i < 100; ++i) allows.take(p, "0.0.0.0/0", 1000);
    EXPECT_TRUE(allows.take(p, "198.18.0.1/32", 1000).has_value());
}

}  // namespace
}  // namespace floodgate
