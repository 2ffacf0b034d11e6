// Why a frame was malformed (dataplane/core/parse.h finds it): one list, shared by the parser,
// the stats layout (stats.h) and the control plane's metric labels.
#pragma once

#include <cstdint>

namespace floodgate {

// Why a frame was malformed, for counters and tests. One list, never renumbered.
#define FG_MALFORMED_REASONS(X) \
    X(none)                     \
    X(eth_truncated)            \
    X(vlan_truncated)           \
    X(too_many_vlan_tags)       \
    X(ipv4_truncated)           \
    X(ipv4_bad_version)         \
    X(ipv4_bad_ihl)             \
    X(ipv4_bad_total_length)    \
    X(ipv6_truncated)           \
    X(ipv6_bad_version)         \
    X(ipv6_bad_payload_length)  \
    X(ipv6_ext_truncated)       \
    X(ipv6_ext_chain_too_long)  \
    X(l4_truncated)             \
    X(capture_truncated)

enum class MalformedReason : uint8_t {
#define FG_X(name) name,
    FG_MALFORMED_REASONS(FG_X)
#undef FG_X
        count
};

const char *malformed_reason_name(MalformedReason r);

}  // namespace floodgate
