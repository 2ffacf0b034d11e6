// One DPDK ethernet port as floodgate uses it: n RX and n TX queues (one pair per worker),
// RSS steering by source prefix where the PMD honours it, started in promiscuous mode. Released by
// close_port() in reverse order of setup, in one place (Dataplane, dataplane/live/dataplane.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct rte_mempool;

namespace floodgate {

struct PortSetup {
    uint16_t port_id = 0;
    uint16_t n_queues = 1;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    // With several queues, ask RSS to steer by the first steer_prefix_bits of the source
    // address (by_destination: of the destination, for the inside port, so that replies reach
    // their source's owner): a Toeplitz key zeroed past the prefix (steering.h) with
    // RTE_ETH_RSS_L3_SRC_ONLY (or DST_ONLY), and a round-robin RETA, the same on both ports.
    bool steer = false;
    unsigned steer_prefix_bits = 64;
    bool by_destination = false;
    // The key's random bits, the same for every port of a run (so that a source and the replies
    // to it hash alike); each port takes its hash_key_size bytes of it (at most 64).
    const uint8_t *steer_key_bits = nullptr;
    // `floodgate probe`: configured as a run would, then queues and start (no promiscuous
    // mode) only where reading the RSS back needs them (the PMD offers source-only hashing),
    // so that asking takes no traffic (net_af_xdp's queue setup would load an XDP program).
    bool ask_only = false;
};
inline constexpr size_t kMaxSteeringKeyBytes = 64;

// What the port was set up with, for the log and the workers.
struct PortFeatures {
    // RSS steers as asked: read back from the PMD (rte_eth_dev_rss_hash_conf_get) with the
    // hash types and the key it was given. Otherwise rss_refused says what it answered.
    bool steers = false;
    std::string rss;               // for the log: what the queues are spread by
    std::string rss_refused;       // empty when it steers or was not asked to
    uint16_t reta_size = 0;        // of the RETA set for steering: a reply's queue matches its
                                   // source's only between ports whose RETAs are alike
    std::vector<uint8_t> rss_key;  // the key it hashes with, when it steers
    // TX offload of IPv4 header, TCP and UDP checksums, enabled where the PMD offers all three
    // (answers then leave their computation to the port).
    bool tx_checksum_offload = false;
};

// Configures and starts the port (unless ask_only). Returns false with *error on failure
// (nothing to undo but close_port()).
bool setup_port(const PortSetup &setup, rte_mempool *pool, PortFeatures *features,
                std::string *error);
void close_port(uint16_t port_id);

// A net_af_xdp port's kernel interface and whether the PMD loaded a program of its own
// choosing (its xdp_prog device argument) rather than its default one.
struct AfXdpPort {
    bool af_xdp = false;
    std::string iface;
    bool custom_program = false;
};
AfXdpPort af_xdp_port(uint16_t port);

}  // namespace floodgate
