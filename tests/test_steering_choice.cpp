// The steering decision `floodgate run` takes and `floodgate probe` reports
// (dataplane/live/steering_choice.h), from what the ports answered: no EAL, no port.
#include <gtest/gtest.h>

#include "dataplane/live/steering_choice.h"

namespace floodgate {
namespace {

const SteeringOptions kWanted{true, 32, 64};

PortFeatures steering_port(uint16_t reta_size) {
    PortFeatures f;
    f.steers = true;
    f.reta_size = reta_size;
    f.rss_key = std::vector<uint8_t>(40, 0xab);
    return f;
}

PortFeatures refusing_port() {
    PortFeatures f;
    f.rss_refused = "offers no L3_SRC_ONLY hashing (flow_type_rss_offloads 0x3afbc)";
    return f;
}

TEST(SteeringChoice, OneWorkerOwnsEverything) {
    const SteeringChoice c =
        choose_steering(SteeringMode::automatic, 1, kWanted, steering_port(128), nullptr);
    EXPECT_EQ(c.mode, "one worker");
    EXPECT_FALSE(c.rings);
    EXPECT_FALSE(c.steering.by_source);
}

TEST(SteeringChoice, NoneSharesEveryKey) {
    const SteeringChoice c =
        choose_steering(SteeringMode::none, 4, kWanted, steering_port(128), nullptr);
    EXPECT_EQ(c.mode, "none");
    EXPECT_FALSE(c.rings);
    EXPECT_FALSE(c.steering.by_source);
}

// A NIC that steers: its RSS, with rings for what it does not hash, keyed as the port is.
TEST(SteeringChoice, ANicThatSteersIsUsedWithItsKeyForTheFramesItDoesNotHash) {
    const PortFeatures outside = steering_port(512), inside = steering_port(512);
    for (SteeringMode asked : {SteeringMode::automatic, SteeringMode::nic}) {
        const SteeringChoice c = choose_steering(asked, 4, kWanted, outside, &inside);
        EXPECT_EQ(c.mode, "nic");
        EXPECT_TRUE(c.error.empty());
        EXPECT_TRUE(c.steering.by_source);
        EXPECT_EQ(c.steering.ipv4_len, 32);
        EXPECT_EQ(c.steering.ipv6_len, 64);
        EXPECT_TRUE(c.steering.replies_by_destination);
        EXPECT_TRUE(c.rings);
        EXPECT_EQ(c.nic_hash.key, outside.rss_key);
        EXPECT_EQ(c.nic_hash.reta_size, 512);
    }
}

// Replies reach their source's owner only through an inside port that steers alike.
TEST(SteeringChoice, RepliesOnlyThroughAnInsidePortWithTheSameReta) {
    const PortFeatures outside = steering_port(512), other_reta = steering_port(128);
    EXPECT_FALSE(choose_steering(SteeringMode::automatic, 4, kWanted, outside, &other_reta)
                     .steering.replies_by_destination);
    const PortFeatures refusing = refusing_port();
    EXPECT_FALSE(choose_steering(SteeringMode::automatic, 4, kWanted, outside, &refusing)
                     .steering.replies_by_destination);
    EXPECT_FALSE(choose_steering(SteeringMode::automatic, 4, kWanted, outside, nullptr)
                     .steering.replies_by_destination);
}

TEST(SteeringChoice, APortThatDoesNotSteerIsSteeredInSoftwareAndSaysWhy) {
    const SteeringChoice c =
        choose_steering(SteeringMode::automatic, 2, kWanted, refusing_port(), nullptr);
    EXPECT_EQ(c.mode, "software");
    EXPECT_EQ(c.reason,
              "the NIC does not: offers no L3_SRC_ONLY hashing (flow_type_rss_offloads 0x3afbc)");
    EXPECT_TRUE(c.rings);
    EXPECT_TRUE(c.nic_hash.key.empty());
    EXPECT_TRUE(c.steering.by_source);
    EXPECT_FALSE(c.steering.replies_by_destination);
}

TEST(SteeringChoice, SoftwareWhenAskedEvenWhereTheNicSteers) {
    const SteeringChoice c =
        choose_steering(SteeringMode::software, 2, kWanted, steering_port(128), nullptr);
    EXPECT_EQ(c.mode, "software");
    EXPECT_EQ(c.reason, "--steering software");
    EXPECT_TRUE(c.nic_hash.key.empty());
}

TEST(SteeringChoice, NicAskedOfAPortThatDoesNotSteerIsAnError) {
    const SteeringChoice c =
        choose_steering(SteeringMode::nic, 2, kWanted, refusing_port(), nullptr);
    EXPECT_TRUE(c.mode.empty());
    EXPECT_EQ(c.error, "offers no L3_SRC_ONLY hashing (flow_type_rss_offloads 0x3afbc)");
}

}  // namespace
}  // namespace floodgate
