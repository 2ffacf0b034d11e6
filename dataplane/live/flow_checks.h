// What a port's rte_flow accepts, asked with rte_flow_validate only (nothing is created), for
// `floodgate probe`: the NIC tier's own rules (nic_drop_rule.h) on an IPv4 /32, an IPv4 /24 and
// an IPv6 /64, and one item or action at a time, so that a refusal of the tier's rule can be
// read: the items ETH alone, IPV4 and IPV6 by source (each with DROP), and the actions DROP,
// COUNT, QUEUE and RSS on an IPv4 source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/live/nic_drop_rule.h"

namespace floodgate {

struct FlowCheck {
    std::string name;  // "tier ipv4 /32", "item eth", "action rss", ...
    NicAnswer answer;
};

// queues: how many RX queues the port was configured with (QUEUE names queue 0, RSS all).
std::vector<FlowCheck> check_flows(uint16_t port_id, uint16_t queues);

// Whether the NIC tier can run on the port: every "tier ..." check accepted. Otherwise *why
// names the first refused and what the port said.
bool nic_tier_accepted(const std::vector<FlowCheck> &checks, std::string *why);

}  // namespace floodgate
