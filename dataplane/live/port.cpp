#include "dataplane/live/port.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

#include "dataplane/core/steering.h"

namespace floodgate {

namespace {
// The port's Toeplitz key: the run's random bits (an attacker must not know which sources share
// a queue), zeroed past the prefix so the hash reads only the prefix.
std::vector<uint8_t> steering_key(const uint8_t *bits, size_t len, unsigned prefix_bits) {
    std::vector<uint8_t> key(bits, bits + len);
    zero_key_past_prefix(key.data(), key.size(), prefix_bits);
    return key;
}

std::string hex(uint64_t v) {
    char text[32];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
    return text;
}

// Whether the started port hashes as configured: every hash type asked for (`asked`, with the
// L3_SRC_ONLY or L3_DST_ONLY bit `only`) and the key read back, and a round-robin RETA set.
// Otherwise *refused says what the PMD answered.
bool rss_honoured(uint16_t port, const rte_eth_dev_info &info, uint16_t n_queues, uint64_t asked,
                  uint64_t only, const std::vector<uint8_t> &key, std::string *refused) {
    std::vector<uint8_t> got_key(std::max<size_t>(key.size(), 64));
    rte_eth_rss_conf got{};
    got.rss_key = got_key.data();
    got.rss_key_len = static_cast<uint8_t>(key.size());
    const int rc = rte_eth_dev_rss_hash_conf_get(port, &got);
    if (rc != 0) {
        *refused = std::string("reading the RSS configuration back: ") + rte_strerror(-rc);
        return false;
    }
    if ((got.rss_hf & asked) != asked) {
        *refused = "hash types read back " + hex(got.rss_hf) + " lack " + hex(asked & ~got.rss_hf) +
                   (only == RTE_ETH_RSS_L3_SRC_ONLY ? " (L3_SRC_ONLY is " : " (L3_DST_ONLY is ") +
                   hex(only) + ")";
        return false;
    }
    if (std::memcmp(got_key.data(), key.data(), key.size()) != 0) {
        *refused = "the RSS key read back is not the one given";
        return false;
    }
    if (info.reta_size == 0) {
        *refused = "no redirection table (reta_size 0)";
        return false;
    }
    std::vector<rte_eth_rss_reta_entry64> reta(info.reta_size / RTE_ETH_RETA_GROUP_SIZE + 1);
    for (uint16_t i = 0; i < info.reta_size; ++i) {
        reta[i / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
        reta[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE] = i % n_queues;
    }
    if (const int r = rte_eth_dev_rss_reta_update(port, reta.data(), info.reta_size); r != 0) {
        *refused = std::string("setting the redirection table: ") + rte_strerror(-r);
        return false;
    }
    return true;
}
}  // namespace

bool setup_port(const PortSetup &s, rte_mempool *pool, PortFeatures *features, std::string *error) {
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
    const uint64_t only = s.by_destination ? RTE_ETH_RSS_L3_DST_ONLY : RTE_ETH_RSS_L3_SRC_ONLY;
    std::vector<uint8_t> key;
    features->rss = s.n_queues > 1 ? "the PMD's own spread" : "one queue";
    const bool offers_only = (info.flow_type_rss_offloads & only) != 0;
    if (s.n_queues > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_IP) != 0) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            (info.flow_type_rss_offloads & RTE_ETH_RSS_IP) | (s.steer && offers_only ? only : 0);
        if (s.steer && !offers_only)
            features->rss_refused =
                std::string("offers no ") + (s.by_destination ? "L3_DST_ONLY" : "L3_SRC_ONLY") +
                " hashing (flow_type_rss_offloads " + hex(info.flow_type_rss_offloads) + ")";
        if (s.steer && offers_only) {
            const size_t len = info.hash_key_size != 0 ? info.hash_key_size : 40;
            if (len > kMaxSteeringKeyBytes) {
                features->rss_refused = "an RSS key of " + std::to_string(len) +
                                        " bytes (floodgate makes up to " +
                                        std::to_string(kMaxSteeringKeyBytes) + ")";
            } else {
                key = steering_key(s.steer_key_bits, len, s.steer_prefix_bits);
                conf.rx_adv_conf.rss_conf.rss_key = key.data();
                conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(key.size());
            }
        }
        features->rss = "RSS on the full address";
    } else if (s.steer) {
        features->rss_refused =
            "offers no RSS on IP (flow_type_rss_offloads " + hex(info.flow_type_rss_offloads) + ")";
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
    if (s.ask_only && key.empty()) return true;
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
    if (!s.ask_only) rte_eth_promiscuous_enable(s.port_id);  // inline: not addressed to us
    if (!key.empty()) {
        features->steers =
            rss_honoured(s.port_id, info, s.n_queues, conf.rx_adv_conf.rss_conf.rss_hf, only, key,
                         &features->rss_refused);
        features->reta_size = info.reta_size;
        if (features->steers) {
            features->rss_key = key;
            features->rss = "RSS by " + std::string(s.by_destination ? "destination" : "source") +
                            " prefix (/" + std::to_string(s.steer_prefix_bits) + " key)";
        }
    }
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
