#include "dataplane/live/offload_names.h"

#include <rte_ethdev.h>

#include <cstdio>

namespace floodgate {

namespace {
// rte_ethdev.h's RTE_ETH_RSS_* bits (DPDK 22.11 has no names for them); the level bits (50,
// 51) are a field, not capabilities, and are left to "bit N".
struct Named {
    uint64_t bit;
    const char *name;
};
#define FG_RSS(name) \
    { RTE_ETH_RSS_##name, #name }
constexpr Named kRssTypes[] = {
    FG_RSS(IPV4),
    FG_RSS(FRAG_IPV4),
    FG_RSS(NONFRAG_IPV4_TCP),
    FG_RSS(NONFRAG_IPV4_UDP),
    FG_RSS(NONFRAG_IPV4_SCTP),
    FG_RSS(NONFRAG_IPV4_OTHER),
    FG_RSS(IPV6),
    FG_RSS(FRAG_IPV6),
    FG_RSS(NONFRAG_IPV6_TCP),
    FG_RSS(NONFRAG_IPV6_UDP),
    FG_RSS(NONFRAG_IPV6_SCTP),
    FG_RSS(NONFRAG_IPV6_OTHER),
    FG_RSS(L2_PAYLOAD),
    FG_RSS(IPV6_EX),
    FG_RSS(IPV6_TCP_EX),
    FG_RSS(IPV6_UDP_EX),
    FG_RSS(PORT),
    FG_RSS(VXLAN),
    FG_RSS(GENEVE),
    FG_RSS(NVGRE),
    FG_RSS(GTPU),
    FG_RSS(ETH),
    FG_RSS(S_VLAN),
    FG_RSS(C_VLAN),
    FG_RSS(ESP),
    FG_RSS(AH),
    FG_RSS(L2TPV3),
    FG_RSS(PFCP),
    FG_RSS(PPPOE),
    FG_RSS(ECPRI),
    FG_RSS(MPLS),
    FG_RSS(IPV4_CHKSUM),
    FG_RSS(L4_CHKSUM),
    FG_RSS(L2TPV2),
    FG_RSS(L3_PRE96),
    FG_RSS(L3_PRE64),
    FG_RSS(L3_PRE56),
    FG_RSS(L3_PRE48),
    FG_RSS(L3_PRE40),
    FG_RSS(L3_PRE32),
    FG_RSS(L2_DST_ONLY),
    FG_RSS(L2_SRC_ONLY),
    FG_RSS(L4_DST_ONLY),
    FG_RSS(L4_SRC_ONLY),
    FG_RSS(L3_DST_ONLY),
    FG_RSS(L3_SRC_ONLY),
};
#undef FG_RSS

template <typename NameOf>
std::vector<std::string> names(uint64_t bits, NameOf name_of) {
    std::vector<std::string> out;
    for (unsigned b = 0; b < 64; ++b) {
        const uint64_t bit = uint64_t{1} << b;
        if ((bits & bit) == 0) continue;
        const char *name = name_of(bit);
        out.push_back(name != nullptr ? name : "bit " + std::to_string(b));
    }
    return out;
}

const char *known(const char *dpdk_name) {
    return dpdk_name != nullptr && std::string(dpdk_name) != "UNKNOWN" ? dpdk_name : nullptr;
}
}  // namespace

std::vector<std::string> rss_type_names(uint64_t rss_hf) {
    return names(rss_hf, [](uint64_t bit) -> const char * {
        for (const Named &n : kRssTypes)
            if (n.bit == bit) return n.name;
        return nullptr;
    });
}

std::vector<std::string> rx_offload_names(uint64_t offloads) {
    return names(offloads, [](uint64_t bit) { return known(rte_eth_dev_rx_offload_name(bit)); });
}

std::vector<std::string> tx_offload_names(uint64_t offloads) {
    return names(offloads, [](uint64_t bit) { return known(rte_eth_dev_tx_offload_name(bit)); });
}

std::string hex_bits(uint64_t bits) {
    char text[24];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(bits));
    return text;
}

}  // namespace floodgate
