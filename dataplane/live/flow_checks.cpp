#include "dataplane/live/flow_checks.h"

#include <rte_ethdev.h>
#include <rte_flow.h>

#include <algorithm>
#include <iterator>
#include <vector>

namespace floodgate {

namespace {
// A documentation address (RFC 5737): nothing is created, but a rule a PMD kept by mistake
// would match no one.
Prefix v4_host() {
    Prefix p{4, 32, {}};
    const uint8_t addr[] = {198, 51, 100, 7};
    std::copy(std::begin(addr), std::end(addr), p.addr.begin());
    return p;
}
Prefix v6_net() {
    Prefix p{6, 64, {}};
    const uint8_t addr[] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x45};  // 2001:db8:45::/64 (RFC 3849)
    std::copy(std::begin(addr), std::end(addr), p.addr.begin());
    return p;
}

NicAnswer validate(uint16_t port, const rte_flow_attr *attr, const rte_flow_item *pattern,
                   const rte_flow_action *actions) {
    rte_flow_error error{};
    const int rc = rte_flow_validate(port, attr, pattern, actions, &error);
    if (rc == 0) return {true, NicRefusal::other, {}};
    return nic_refused(rc, error);
}
}  // namespace

std::vector<FlowCheck> check_flows(uint16_t port_id, uint16_t queues) {
    std::vector<FlowCheck> out;
    const rte_flow_action drop[] = {{RTE_FLOW_ACTION_TYPE_DROP, nullptr},
                                    {RTE_FLOW_ACTION_TYPE_END, nullptr}};
    // Items, each with DROP: ETH alone, then the tier's patterns (their actions replaced).
    const NicDropRule v4(v4_host()), v6(v6_net());
    const rte_flow_item eth_only[] = {{RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
                                      {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr}};
    out.push_back({"item eth", validate(port_id, v4.attr(), eth_only, drop)});
    out.push_back({"item ipv4 src", validate(port_id, v4.attr(), v4.pattern(), drop)});
    out.push_back({"item ipv6 src", validate(port_id, v6.attr(), v6.pattern(), drop)});

    // Actions, each alone on the IPv4 source.
    const rte_flow_action_count count{};
    const rte_flow_action_queue queue{0};
    std::vector<uint16_t> all_queues(queues);
    for (uint16_t q = 0; q < queues; ++q) all_queues[q] = q;
    rte_flow_action_rss rss{};
    rss.types = RTE_ETH_RSS_IP | RTE_ETH_RSS_L3_SRC_ONLY;
    rss.queue_num = queues;
    rss.queue = all_queues.data();
    const rte_flow_action one[][2] = {
        {{RTE_FLOW_ACTION_TYPE_DROP, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}},
        {{RTE_FLOW_ACTION_TYPE_COUNT, &count}, {RTE_FLOW_ACTION_TYPE_END, nullptr}},
        {{RTE_FLOW_ACTION_TYPE_QUEUE, &queue}, {RTE_FLOW_ACTION_TYPE_END, nullptr}},
        {{RTE_FLOW_ACTION_TYPE_RSS, &rss}, {RTE_FLOW_ACTION_TYPE_END, nullptr}},
    };
    const char *action_names[] = {"action drop", "action count", "action queue", "action rss"};
    for (size_t i = 0; i < std::size(one); ++i)
        out.push_back({action_names[i], validate(port_id, v4.attr(), v4.pattern(), one[i])});
    return out;
}

}  // namespace floodgate
