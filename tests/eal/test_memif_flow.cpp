// The lab's stand-in NIC flow table (dpdk/memif_flow.c) through rte_flow, as the NIC tier calls
// it: what it takes, what it refuses and with which reason, its capacity, its counters. The
// frames it drops are counted by the NIC tier's lab (tests/lab/nic_tier.sh).
#include <gtest/gtest.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dataplane/live/nic_drop_rule.h"

namespace floodgate {
namespace {

Prefix prefix(const char *text) {
    std::string why;
    return *parse_prefix(text, &why);
}

// A memif port of the patched driver (tests/eal/main.cpp loads it) with room for 3 rules.
class MemifFlow : public ::testing::Test {
  protected:
    void SetUp() override {
        name_ = "net_memif_flow" + std::to_string(getpid());
        socket_ = "/tmp/fg-memif-flow-" + std::to_string(getpid()) + ".sock";
        const std::string args =
            "role=server,socket-abstract=no,socket=" + socket_ + ",flow_rules=3";
        ASSERT_EQ(rte_eal_hotplug_add("vdev", name_.c_str(), args.c_str()), 0);
        ASSERT_EQ(rte_eth_dev_get_port_by_name(name_.c_str(), &port_), 0);
        // A tree built without -Ddpdk_source (the ASan tree) has only DPDK's own memif, which
        // has no flow table; meson says so (FG_MEMIF_FLOW=0). Anywhere else the table must be
        // there. (The port's driver note cannot tell: it reads a started port's burst function.)
        if (const char *e = std::getenv("FG_MEMIF_FLOW"); e != nullptr && std::string(e) == "0")
            GTEST_SKIP() << "DPDK's own net_memif (built without -Ddpdk_source): no flow table";
    }
    void TearDown() override {
        rte_eth_dev_close(port_);
        rte_eal_hotplug_remove("vdev", name_.c_str());
        unlink(socket_.c_str());
    }
    rte_flow *create(const NicDropRule &rule, NicAnswer *answer) {
        rte_flow_error error{};
        rte_flow *flow =
            rte_flow_create(port_, rule.attr(), rule.pattern(), rule.actions(), &error);
        *answer = flow != nullptr ? NicAnswer{true, NicRefusal::other, {}}
                                  : nic_refused(-rte_errno, error);
        return flow;
    }
    std::string name_, socket_;
    uint16_t port_ = 0;
};

TEST_F(MemifFlow, TakesTheTiersRules) {
    for (const char *p :
         {"198.18.66.6/32", "198.18.0.0/15", "0.0.0.0/0", "2001:db8:1::/64", "2001:db8::/32"}) {
        NicDropRule rule(prefix(p));
        EXPECT_TRUE(validate_nic_drop_rule(port_, rule).accepted) << p;
    }
}

TEST_F(MemifFlow, RefusesWhatANicWouldWithItsReason) {
    NicDropRule rule(prefix("198.18.66.6/32"));
    rte_flow_error error{};
    auto refusal = [&](const rte_flow_attr *attr, const rte_flow_item *items,
                       const rte_flow_action *actions) {
        int rc = rte_flow_validate(port_, attr, items, actions, &error);
        EXPECT_LT(rc, 0);
        return nic_refused(rc, error).refusal;
    };
    rte_flow_attr egress = *rule.attr();
    egress.egress = 1;
    egress.ingress = 0;
    EXPECT_EQ(refusal(&egress, rule.pattern(), rule.actions()), NicRefusal::attr);
    rte_flow_attr group = *rule.attr();
    group.group = 1;
    EXPECT_EQ(refusal(&group, rule.pattern(), rule.actions()), NicRefusal::attr);

    // A destination matched too, and an item after the IP one.
    rte_flow_item items[4];
    std::copy(rule.pattern(), rule.pattern() + 3, items);
    rte_flow_item_ipv4 mask = *static_cast<const rte_flow_item_ipv4 *>(items[1].mask);
    mask.hdr.dst_addr = 0xffffffff;
    items[1].mask = &mask;
    EXPECT_EQ(refusal(rule.attr(), items, rule.actions()), NicRefusal::item);
    std::copy(rule.pattern(), rule.pattern() + 3, items);
    items[2] = {RTE_FLOW_ITEM_TYPE_UDP, nullptr, nullptr, nullptr};
    items[3] = {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr};
    EXPECT_EQ(refusal(rule.attr(), items, rule.actions()), NicRefusal::item);
    // A mask that is not a prefix.
    std::copy(rule.pattern(), rule.pattern() + 3, items);
    rte_flow_item_ipv4 holes{};
    holes.hdr.src_addr = rte_cpu_to_be_32(0xff00ff00);
    items[1].mask = &holes;
    EXPECT_EQ(refusal(rule.attr(), items, rule.actions()), NicRefusal::item);

    rte_flow_action_queue queue{0};
    const rte_flow_action to_queue[] = {{RTE_FLOW_ACTION_TYPE_QUEUE, &queue},
                                        {RTE_FLOW_ACTION_TYPE_END, nullptr}};
    EXPECT_EQ(refusal(rule.attr(), rule.pattern(), to_queue), NicRefusal::action);
    const rte_flow_action count_only[] = {{RTE_FLOW_ACTION_TYPE_COUNT, nullptr},
                                          {RTE_FLOW_ACTION_TYPE_END, nullptr}};
    EXPECT_EQ(refusal(rule.attr(), rule.pattern(), count_only), NicRefusal::action);
}

TEST_F(MemifFlow, FullPastItsCapacityAndCounts) {
    std::vector<rte_flow *> flows;
    NicAnswer answer;
    for (const char *p : {"198.18.0.1/32", "198.18.0.2/32", "2001:db8::/64"}) {
        NicDropRule rule(prefix(p));
        flows.push_back(create(rule, &answer));
        ASSERT_TRUE(answer.accepted) << p << ": " << answer.message;
    }
    NicDropRule fourth(prefix("198.18.0.4/32"));
    EXPECT_EQ(create(fourth, &answer), nullptr);
    EXPECT_EQ(answer.refusal, NicRefusal::full);
    // Validation does not look at the room left, as a NIC's does not.
    EXPECT_TRUE(validate_nic_drop_rule(port_, fourth).accepted);

    rte_flow_query_count count{};
    const rte_flow_action query = {RTE_FLOW_ACTION_TYPE_COUNT, nullptr};
    rte_flow_error error{};
    ASSERT_EQ(rte_flow_query(port_, flows[0], &query, &count, &error), 0);
    EXPECT_TRUE(count.hits_set && count.bytes_set);
    EXPECT_EQ(count.hits, 0u);

    ASSERT_EQ(rte_flow_destroy(port_, flows[1], &error), 0);
    rte_flow *again = create(fourth, &answer);
    EXPECT_NE(again, nullptr);
    EXPECT_EQ(rte_flow_flush(port_, &error), 0);
    for (const char *p : {"198.18.0.1/32", "198.18.0.2/32", "198.18.0.3/32"}) {
        NicDropRule rule(prefix(p));
        EXPECT_NE(create(rule, &answer), nullptr) << p;
    }
}

}  // namespace
}  // namespace floodgate
