// `floodgate probe`: what floodgate could do with a port, asked before deploying. The port is
// configured as `floodgate run` would configure it (setup_port, ask_only: started only where
// reading the RSS back needs it, never promiscuous, no frame received or sent), its rte_flow
// asked with rte_flow_validate alone, and closed; the steering decision is run's own
// (steering_choice.h), and so is the NIC tier's rule and its fallback to DROP alone
// (nic_flow_port.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/live/flow_checks.h"
#include "dataplane/live/port.h"
#include "dataplane/live/steering_choice.h"
#include "dataplane/service/nic_flow_port.h"

struct rte_mempool;

namespace floodgate {

struct ProbeSetup {
    uint16_t queues = 2;  // as many as run's workers would ask for (capped by the port's)
    SteeringOptions wanted;
    const uint8_t *key_bits = nullptr;  // kMaxSteeringKeyBytes random bytes
};

struct PortProbe {
    uint16_t port = 0;
    std::string name, driver;
    std::string error;  // the port could not be configured: the rest is what info gave
    bool link_up = false;
    uint32_t speed_mbps = 0;  // RTE_ETH_SPEED_NUM_*; 0 none, UINT32_MAX unknown
    uint16_t max_rx_queues = 0, max_tx_queues = 0;
    uint16_t wanted_queues = 0, queues = 0;  // ProbeSetup's, and as many as the port has
    uint8_t hash_key_size = 0;
    uint16_t reta_size = 0;
    uint64_t rss_offloads = 0;  // flow_type_rss_offloads
    bool rss_read = false;      // rss_hash_conf_get answered: rss_hf_read is what it holds
    uint64_t rss_hf_read = 0;
    uint64_t rx_offloads = 0, tx_offloads = 0;
    PortFeatures features;  // what setup_port made of it as the outside port
    SteeringChoice steering;
    // The tier's rule on an IPv4 /32, an IPv4 /24 and an IPv6 /64 ("tier ipv4 /32", ...), as
    // the tier validates it; then the items and actions one at a time (flow_checks.h).
    std::vector<FlowCheck> tier, flows;
    bool nic_tier = false;          // every tier rule accepted
    bool nic_tier_counted = false;  // with COUNT (else DROP alone: the port refuses COUNT)
    std::string nic_tier_why;       // when not
    bool xdp_tier = false;
    std::string xdp_why;
};

// pool: for the queues setup_port sets up where it starts the port.
PortProbe probe_port(uint16_t port, const ProbeSetup &setup, rte_mempool *pool);

}  // namespace floodgate
