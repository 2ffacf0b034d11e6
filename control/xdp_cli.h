// `floodctl xdp ...`: the XDP tier run standalone in front of any Linux host (bpf/xdp_tier.h),
// working on the maps pinned under /sys/fs/bpf/floodgate/ directly, no daemon needed (the
// same maps `floodgate run` keeps on net_af_xdp; FLOODGATE_XDP_PIN_DIR moves them).
#pragma once

#include <string>
#include <vector>

namespace floodgate {

inline constexpr const char *kXdpUsage =
    "  xdp attach IFACE [--config RULES.yaml] | xdp detach IFACE\n"
    "                         the XDP tier in front of IFACE, its maps holding the rules\n"
    "                         file's allow and block lists (again on every attach)\n"
    "  xdp list | xdp stats | xdp add PREFIX [--ttl DURATION] | xdp del PREFIX\n"
    "                         the XDP maps (expired entries removed first), their counters,\n"
    "                         an operator's block; also the dataplane's on net_af_xdp\n";

// args: what follows "xdp". Returns the exit status (2: usage).
int cmd_xdp(const std::vector<std::string> &args, bool json_out);

}  // namespace floodgate
