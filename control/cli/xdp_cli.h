// `floodctl xdp ...`: the XDP tier run standalone in front of any Linux host (bpf/xdp_tier.h),
// working on the maps pinned under /sys/fs/bpf/floodgate/ directly, no daemon needed (the
// same maps `floodgate run` keeps on net_af_xdp; FLOODGATE_XDP_PIN_DIR moves them).
#pragma once

#include <optional>
#include <string>

namespace floodgate {

inline constexpr const char *kXdpUsage =
    "  xdp attach IFACE [--config RULES.yaml] | xdp detach IFACE\n"
    "                         the XDP tier in front of IFACE, its maps holding the rules\n"
    "                         file's allow and block lists (again on every attach)\n"
    "  xdp list | xdp stats | xdp add PREFIX [--ttl DURATION] | xdp del PREFIX\n"
    "                         the XDP maps (expired entries removed first), their counters,\n"
    "                         an operator's block; also the dataplane's on net_af_xdp\n";

// What followed "xdp" on the command line (control/main/command_line.cpp reads it).
struct XdpArgs {
    std::string sub;           // attach, detach, list, stats, add, del, or the word given instead
    bool well_formed = false;  // sub is one of them, with what it takes and nothing else
    std::string target;        // attach, detach: IFACE; add, del: PREFIX, as typed
    std::optional<std::string> config;  // attach --config RULES.yaml
    std::optional<std::string> ttl;     // add --ttl DURATION, as typed
};

// Returns the exit status (2: usage). As it always has, it opens the pinned maps before it
// looks any further than attach and detach's arguments: a malformed list, stats, add or del
// (or an unknown word) where there are no maps is refused for the maps.
int cmd_xdp(const XdpArgs &args, bool json_out);

}  // namespace floodgate
