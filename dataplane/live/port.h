// One DPDK ethernet port as floodgate uses it: n RX and n TX queues (one pair per worker),
// RSS on the source address where the PMD can, started in promiscuous mode. Released by
// close_port() in reverse order of setup, in one place (Dataplane, dataplane/live/dataplane.h).
#pragma once

#include <cstdint>
#include <string>

struct rte_mempool;

namespace floodgate {

struct PortSetup {
    uint16_t port_id = 0;
    uint16_t n_queues = 1;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
};

// How RSS spreads sources over queues, for the log: a key stays on one core only with
// source-only hashing.
enum class RssMode : uint8_t { none, source_only, full_address };
const char *rss_mode_name(RssMode m);

// What the port was set up with, for the log and the workers.
struct PortFeatures {
    RssMode rss = RssMode::none;
    // TX offload of IPv4 header, TCP and UDP checksums, enabled where the PMD offers all three
    // (answers then leave their computation to the port).
    bool tx_checksum_offload = false;
};

// Configures and starts the port. Returns false with *error on failure (nothing to undo but
// close_port()).
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
