// A port's capability bits by name, for `floodgate probe`: the RSS hash types
// (flow_type_rss_offloads, RTE_ETH_RSS_*) and the RX and TX offloads (DPDK's own names).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace floodgate {

// "IPV4", "NONFRAG_IPV4_TCP", "L3_SRC_ONLY", "L3_PRE64", ...; a bit without a name as "bit N".
std::vector<std::string> rss_type_names(uint64_t rss_hf);
std::vector<std::string> rx_offload_names(uint64_t offloads);
std::vector<std::string> tx_offload_names(uint64_t offloads);
// "0x2003ffffc"
std::string hex_bits(uint64_t bits);

}  // namespace floodgate
