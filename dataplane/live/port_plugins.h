// DPDK drivers floodgate carries patched (dpdk/): loaded before the EAL loads its own plugins,
// so that the patched driver is the one the EAL finds first under the stock driver's name
// (the vdev bus probes a device with the first driver whose name matches). Today: net_memif,
// whose stock driver unmaps its rings under a running burst when the peer goes away.
#pragma once

#include <cstdint>
#include <string>

namespace floodgate {

// Loads the patched drivers this build has, unless FLOODGATE_STOCK_MEMIF=1 asks for DPDK's own
// (to measure against it). Call before rte_eal_init. Returns a line for the log when a
// patched driver could not be loaded, else "".
std::string preload_port_plugins();

// After the port started: "" for a port on a driver floodgate has no concern with, else a line
// for the log saying whether this net_memif port runs the patched driver or DPDK's own.
std::string port_driver_note(uint16_t port);

}  // namespace floodgate
