// What a net_af_packet port loses before floodgate sees it: the kernel drops a frame when the
// PMD's receive ring (its packet socket's PACKET_RX_RING) is full, and DPDK 22.11's af_packet
// PMD counts none of it (its imissed stays 0). The socket's own count is read here
// (getsockopt PACKET_STATISTICS, which gives the drops since the last read and starts again), so
// that the port's line and its rx_missed hold what the ring dropped too (docs/replay.md,
// "Counters"). The PMD's sockets are found among this process's descriptors: packet sockets bound
// to the port's interface. Read by PortWatch's poll on the main lcore, never by a worker.
#pragma once

#include <cstdint>
#include <vector>

namespace floodgate {

class RingDrops {
  public:
    // The packet sockets bound to if_index, found now (the PMD opened them at its probe).
    explicit RingDrops(unsigned if_index);
    // The frames the rings dropped since the last call (the kernel's count starts again).
    uint64_t read();
    bool found() const { return !sockets_.empty(); }

  private:
    std::vector<int> sockets_;  // the PMD's, not owned
};

}  // namespace floodgate
