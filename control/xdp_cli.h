// `floodctl xdp ...`: the XDP tier run standalone in front of any Linux host (bpf/xdp_tier.h),
// working on the maps pinned under /sys/fs/bpf/floodgate/ directly, no daemon needed.
#pragma once

#include <string>
#include <vector>

namespace floodgate {

inline constexpr const char *kXdpUsage =
    "  xdp attach IFACE [--config RULES.yaml] | xdp detach IFACE\n"
    "                         the XDP tier in front of IFACE, its block map filled from the\n"
    "                         rules file's block list\n"
    "  xdp list | xdp stats | xdp add PREFIX [--ttl DURATION] | xdp del PREFIX\n"
    "                         the XDP block maps (expired entries removed first) and counters\n";

// args: what follows "xdp". Returns the exit status (2: usage).
int cmd_xdp(const std::vector<std::string> &args, bool json_out);

}  // namespace floodgate
