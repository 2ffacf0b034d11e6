#include "dataplane/service/port_probe.h"

#include <net/if.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <iterator>

namespace floodgate {

namespace {
// The XDP tier: floodgate's program on a net_af_xdp port (the dataplane feeds its maps), or
// standalone in front of the kernel interface another PMD reads (floodctl xdp attach).
void xdp_tier(uint16_t port, const rte_eth_dev_info &info, PortProbe *p) {
    const AfXdpPort a = af_xdp_port(port);
    if (a.af_xdp) {
        p->xdp_tier = a.custom_program;
        p->xdp_why = a.custom_program
                         ? "net_af_xdp on " + a.iface +
                               " with xdp_prog=: the tier, if that is floodgate_xdp.bpf.o"
                         : "net_af_xdp on " + a.iface +
                               " without xdp_prog=.../floodgate_xdp.bpf.o (the PMD's own program)";
        return;
    }
    char iface[IF_NAMESIZE] = {};
    if (info.if_index != 0 && if_indextoname(info.if_index, iface) != nullptr) {
        p->xdp_tier = true;
        p->xdp_why = std::string("standalone on the kernel interface ") + iface +
                     " (floodctl xdp attach " + iface + "), not fed by the dataplane";
        return;
    }
    p->xdp_why = "no kernel interface";
}

// The tier's rules, validated by the tier's own port (DROP + COUNT, or DROP alone where the
// port refuses COUNT), on documentation prefixes (RFC 5737, RFC 3849).
void nic_tier(uint16_t port, PortProbe *p) {
    NicFlowPort tier(port);
    const Prefix sources[] = {{4, 32, {198, 51, 100, 7}},
                              {4, 24, {198, 51, 100, 0}},
                              {6, 64, {0x20, 0x01, 0x0d, 0xb8, 0, 0x45}}};
    const char *names[] = {"tier ipv4 /32", "tier ipv4 /24", "tier ipv6 /64"};
    p->nic_tier = true;
    for (size_t i = 0; i < std::size(sources); ++i) {
        p->tier.push_back({names[i], tier.validate(sources[i])});
        const NicAnswer &a = p->tier.back().answer;
        if (a.accepted || !p->nic_tier) continue;
        p->nic_tier = false;
        p->nic_tier_why = std::string(names[i] + 5) + " refused (" + nic_refusal_name(a.refusal) +
                          "): " + a.message;
    }
    p->nic_tier_counted = p->nic_tier && tier.counted();
}
}  // namespace

PortProbe probe_port(uint16_t port, const ProbeSetup &setup, rte_mempool *pool) {
    PortProbe p;
    p.port = port;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    if (rte_eth_dev_get_name_by_port(port, name) == 0) p.name = name;
    rte_eth_dev_info info{};
    if (const int rc = rte_eth_dev_info_get(port, &info); rc != 0) {
        p.error = std::string("device info: ") + rte_strerror(-rc);
        return p;
    }
    p.driver = info.driver_name != nullptr ? info.driver_name : "";
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port, &link) == 0) {
        p.link_up = link.link_status == RTE_ETH_LINK_UP;
        p.speed_mbps = link.link_speed;
    }
    p.max_rx_queues = info.max_rx_queues;
    p.max_tx_queues = info.max_tx_queues;
    p.hash_key_size = info.hash_key_size;
    p.reta_size = info.reta_size;
    p.rss_offloads = info.flow_type_rss_offloads;
    p.rx_offloads = info.rx_offload_capa;
    p.tx_offloads = info.tx_offload_capa;
    xdp_tier(port, info, &p);

    p.wanted_queues = setup.queues;
    p.queues =
        std::max<uint16_t>(1, std::min({setup.queues, info.max_rx_queues, info.max_tx_queues}));
    PortSetup s;
    s.port_id = port;
    s.n_queues = p.queues;
    s.rx_desc = s.tx_desc = 512;
    s.steer = p.queues > 1;
    s.steer_prefix_bits = nic_prefix_bits(setup.wanted);
    s.steer_key_bits = setup.key_bits;
    s.ask_only = true;
    if (!setup_port(s, pool, &p.features, &p.error)) {
        close_port(port);
        return p;
    }
    std::vector<uint8_t> key(std::max<size_t>(info.hash_key_size, 64));
    rte_eth_rss_conf conf{};
    conf.rss_key = key.data();
    conf.rss_key_len = info.hash_key_size;
    if (rte_eth_dev_rss_hash_conf_get(port, &conf) == 0) {
        p.rss_read = true;
        p.rss_hf_read = conf.rss_hf;
    }
    p.steering =
        choose_steering(SteeringMode::automatic, p.queues, setup.wanted, p.features, nullptr);
    nic_tier(port, &p);
    p.flows = check_flows(port, p.queues);
    close_port(port);
    return p;
}

}  // namespace floodgate
