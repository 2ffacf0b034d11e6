// What a port's rte_flow accepts, one item or action at a time, asked with rte_flow_validate
// only (nothing is created), for `floodgate probe`, so that a refusal of the NIC tier's rule
// (nic_drop_rule.h) can be read: the items ETH alone, IPV4 and IPV6 by source (each with DROP),
// and the actions DROP, COUNT, QUEUE and RSS on an IPv4 source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/live/nic_drop_rule.h"

namespace floodgate {

struct FlowCheck {
    std::string name;  // "item eth", "action rss", ...
    NicAnswer answer;
};

// queues: how many RX queues the port was configured with (QUEUE names queue 0, RSS all).
std::vector<FlowCheck> check_flows(uint16_t port_id, uint16_t queues);

}  // namespace floodgate
