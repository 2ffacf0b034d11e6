// The NIC tier's rule: what it asks a port for, and how a port's refusal is classed.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "dataplane/live/nic_drop_rule.h"

namespace floodgate {
namespace {

Prefix prefix(const char *text) {
    std::string why;
    auto p = parse_prefix(text, &why);
    EXPECT_TRUE(p) << why;
    return *p;
}

TEST(NicDropRule, Ipv4SourceUnderItsMask) {
    NicDropRule rule(prefix("198.18.0.0/15"));
    EXPECT_EQ(rule.attr()->ingress, 1u);
    EXPECT_EQ(rule.attr()->group, 0u);
    const rte_flow_item *items = rule.pattern();
    EXPECT_EQ(items[0].type, RTE_FLOW_ITEM_TYPE_ETH);
    EXPECT_EQ(items[0].spec, nullptr);
    ASSERT_EQ(items[1].type, RTE_FLOW_ITEM_TYPE_IPV4);
    EXPECT_EQ(items[2].type, RTE_FLOW_ITEM_TYPE_END);
    auto *spec = static_cast<const rte_flow_item_ipv4 *>(items[1].spec);
    auto *mask = static_cast<const rte_flow_item_ipv4 *>(items[1].mask);
    const uint8_t want_spec[4] = {198, 18, 0, 0}, want_mask[4] = {255, 254, 0, 0};
    EXPECT_EQ(std::memcmp(&spec->hdr.src_addr, want_spec, 4), 0);
    EXPECT_EQ(std::memcmp(&mask->hdr.src_addr, want_mask, 4), 0);
    EXPECT_EQ(mask->hdr.dst_addr, 0u);  // nothing else matched
    EXPECT_EQ(mask->hdr.next_proto_id, 0u);
    const rte_flow_action *actions = rule.actions();
    EXPECT_EQ(actions[0].type, RTE_FLOW_ACTION_TYPE_DROP);
    EXPECT_EQ(actions[1].type, RTE_FLOW_ACTION_TYPE_COUNT);
    EXPECT_EQ(actions[2].type, RTE_FLOW_ACTION_TYPE_END);
}

TEST(NicDropRule, DropAloneForAPortWithoutCount) {
    NicDropRule rule(prefix("198.18.66.6/32"), false);
    EXPECT_EQ(rule.actions()[0].type, RTE_FLOW_ACTION_TYPE_DROP);
    EXPECT_EQ(rule.actions()[1].type, RTE_FLOW_ACTION_TYPE_END);
}

TEST(NicDropRule, Ipv6SourceUnderItsMask) {
    NicDropRule rule(prefix("2001:db8:1:2::/64"));
    ASSERT_EQ(rule.pattern()[1].type, RTE_FLOW_ITEM_TYPE_IPV6);
    auto *spec = static_cast<const rte_flow_item_ipv6 *>(rule.pattern()[1].spec);
    auto *mask = static_cast<const rte_flow_item_ipv6 *>(rule.pattern()[1].mask);
    const uint8_t want_spec[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2};
    uint8_t want_mask[16] = {};
    std::memset(want_mask, 0xff, 8);
    EXPECT_EQ(std::memcmp(spec->hdr.src_addr, want_spec, 16), 0);
    EXPECT_EQ(std::memcmp(mask->hdr.src_addr, want_mask, 16), 0);
    const uint8_t zero[16] = {};
    EXPECT_EQ(std::memcmp(mask->hdr.dst_addr, zero, 16), 0);
}

TEST(NicDropRule, PrefixLengthsAllowed) {
    EXPECT_TRUE(nic_prefix_allowed(prefix("203.0.113.7/32")));
    EXPECT_TRUE(nic_prefix_allowed(prefix("0.0.0.0/0")));
    EXPECT_TRUE(nic_prefix_allowed(prefix("2001:db8::/64")));
    EXPECT_FALSE(nic_prefix_allowed(prefix("2001:db8::1/128")));
    EXPECT_FALSE(nic_prefix_allowed(prefix("2001:db8::/65")));
}

TEST(NicDropRule, RefusalsClassedByTypeAndErrno) {
    auto refused = [](int rc, rte_flow_error_type type) {
        rte_flow_error error{};
        error.type = type;
        error.message = "said";
        return nic_refused(rc, error);
    };
    EXPECT_EQ(refused(-ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_MASK).refusal, NicRefusal::item);
    EXPECT_EQ(refused(-ENOTSUP, RTE_FLOW_ERROR_TYPE_ACTION).refusal, NicRefusal::action);
    EXPECT_EQ(refused(-ENOTSUP, RTE_FLOW_ERROR_TYPE_ATTR_GROUP).refusal, NicRefusal::attr);
    EXPECT_EQ(refused(-ENOSPC, RTE_FLOW_ERROR_TYPE_ITEM).refusal, NicRefusal::full);
    EXPECT_EQ(refused(-ENOSPC, RTE_FLOW_ERROR_TYPE_HANDLE).refusal, NicRefusal::full);
    EXPECT_EQ(refused(-ENOSYS, RTE_FLOW_ERROR_TYPE_UNSPECIFIED).refusal, NicRefusal::other);
    auto answer = refused(-ENOSPC, RTE_FLOW_ERROR_TYPE_HANDLE);
    EXPECT_FALSE(answer.accepted);
    EXPECT_EQ(answer.message, std::string("said (") + std::strerror(ENOSPC) + ")");
    EXPECT_STREQ(nic_refusal_name(NicRefusal::full), "full");
    EXPECT_EQ(kNicRefusalCount, 5u);
}

}  // namespace
}  // namespace floodgate
