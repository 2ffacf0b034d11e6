#include "dataplane/live/port.h"

#include <algorithm>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

namespace floodgate {

const char *rss_mode_name(RssMode m) {
    switch (m) {
        case RssMode::none:
            return "none (one queue)";
        case RssMode::source_only:
            return "source address only (a key stays on one core)";
        case RssMode::full_address:
            return "full address (keys spread over cores; merged)";
    }
    return "?";
}

bool setup_port(const PortSetup &s, rte_mempool *pool, PortFeatures *features, std::string *error) {
    RssMode *rss = &features->rss;
    auto fail = [&](const char *what, int rc) {
        *error = "port " + std::to_string(s.port_id) + ": " + what + ": " + rte_strerror(-rc);
        return false;
    };
    if (!rte_eth_dev_is_valid_port(s.port_id)) {
        *error = "no port " + std::to_string(s.port_id) + " (" +
                 std::to_string(rte_eth_dev_count_avail()) + " available)";
        return false;
    }
    rte_eth_dev_info info{};
    int rc = rte_eth_dev_info_get(s.port_id, &info);
    if (rc != 0) return fail("device info", rc);
    if (s.n_queues > info.max_rx_queues || s.n_queues > info.max_tx_queues) {
        *error = "port " + std::to_string(s.port_id) + " has " +
                 std::to_string(info.max_rx_queues) + " RX / " +
                 std::to_string(info.max_tx_queues) + " TX queues, " + std::to_string(s.n_queues) +
                 " workers need one each";
        return false;
    }

    rte_eth_conf conf{};
    *rss = RssMode::none;
    if (s.n_queues > 1) {
        // Prefer hashing on the source address alone, so that every packet of a source key
        // lands on the same core and the cross-core merge has nothing to reconcile.
        // With the IPv6 prefix types as well, a /64 rotating its low bits stays on one core.
        uint64_t source_only = RTE_ETH_RSS_IP | RTE_ETH_RSS_L3_SRC_ONLY |
                               (info.flow_type_rss_offloads & RTE_ETH_RSS_L3_PRE64);
        uint64_t wanted =
            (info.flow_type_rss_offloads & RTE_ETH_RSS_L3_SRC_ONLY) ? source_only : RTE_ETH_RSS_IP;
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            wanted & (info.flow_type_rss_offloads | RTE_ETH_RSS_L3_SRC_ONLY);
        *rss = (conf.rx_adv_conf.rss_conf.rss_hf & RTE_ETH_RSS_L3_SRC_ONLY) ? RssMode::source_only
                                                                            : RssMode::full_address;
        if ((conf.rx_adv_conf.rss_conf.rss_hf & ~RTE_ETH_RSS_L3_SRC_ONLY) == 0) {
            conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;  // the PMD has no RSS (software ports)
            conf.rx_adv_conf.rss_conf.rss_hf = 0;
            *rss = RssMode::none;
        }
    }
    // A NIC that can say it was removed does (PortWatch listens).
    if (info.dev_flags != nullptr && (*info.dev_flags & RTE_ETH_DEV_INTR_RMV) != 0)
        conf.intr_conf.rmv = 1;
    constexpr uint64_t kChecksums =
        RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    features->tx_checksum_offload = (info.tx_offload_capa & kChecksums) == kChecksums;
    if (features->tx_checksum_offload) conf.txmode.offloads |= kChecksums;
    rc = rte_eth_dev_configure(s.port_id, s.n_queues, s.n_queues, &conf);
    if (rc != 0) return fail("configure", rc);
    uint16_t rx_desc = s.rx_desc, tx_desc = s.tx_desc;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(s.port_id, &rx_desc, &tx_desc);
    if (rc != 0) return fail("descriptor counts", rc);
    int socket = rte_eth_dev_socket_id(s.port_id);
    for (uint16_t q = 0; q < s.n_queues; ++q) {
        rc = rte_eth_rx_queue_setup(s.port_id, q, rx_desc, socket, nullptr, pool);
        if (rc != 0) return fail("RX queue setup", rc);
        rc = rte_eth_tx_queue_setup(s.port_id, q, tx_desc, socket, nullptr);
        if (rc != 0) return fail("TX queue setup", rc);
    }
    rc = rte_eth_dev_start(s.port_id);
    if (rc != 0) return fail("start", rc);
    rte_eth_promiscuous_enable(s.port_id);  // inline: frames are not addressed to us
    return true;
}

void close_port(uint16_t port_id) {
    rte_eth_dev_stop(port_id);
    rte_eth_dev_close(port_id);
}

AfXdpPort af_xdp_port(uint16_t port) {
    AfXdpPort a;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == nullptr ||
        std::string(info.driver_name) != "net_af_xdp" || info.device == nullptr)
        return a;
    a.af_xdp = true;
    const rte_devargs *da = rte_dev_devargs(info.device);
    if (da == nullptr || da->args == nullptr) return a;
    // "iface=veth0,start_queue=0,xdp_prog=/path": the PMD's own kvargs syntax.
    const std::string args = da->args;
    for (size_t at = 0; at <= args.size();) {
        const size_t end = std::min(args.find(',', at), args.size());
        const std::string kv = args.substr(at, end - at);
        if (kv.rfind("iface=", 0) == 0) a.iface = kv.substr(6);
        if (kv.rfind("xdp_prog=", 0) == 0 && kv.size() > 9) a.custom_program = true;
        at = end + 1;
    }
    return a;
}

}  // namespace floodgate
