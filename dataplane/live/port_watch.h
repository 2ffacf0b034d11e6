// Whether each port can still carry frames, as the main lcore sees it at each poll. A port is
// lost when its device says it was removed (a NIC that raises RTE_ETH_EVENT_INTR_RMV), when
// its link is down (a memif whose peer went away) or, for a port on a kernel
// interface (net_af_packet, net_af_xdp, net_tap), when that interface is gone or down (its
// veth deleted). The workers go on polling every port: a lost port's bursts are empty, what is
// sent to it is counted as TX failed, and the other ports are filtered as before. Each change
// is printed once and counted; the stats show each port's link and losses, and, for a
// net_af_packet port, what its kernel ring dropped (read at each poll).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace floodgate {

struct PortHealth {
    bool up = true;
    uint64_t losses = 0;  // times the port went from up to lost
    // net_af_packet: frames its kernel ring dropped, never seen (ring_drops.h); as of the last
    // poll. Counted only where `ring` is true.
    bool ring = false;
    uint64_t ring_drops = 0;
};

class PortWatch {
  public:
    // Ports started and up: what each runs on is read now.
    explicit PortWatch(const std::vector<uint16_t> &ports);
    ~PortWatch();
    PortWatch(const PortWatch &) = delete;
    PortWatch &operator=(const PortWatch &) = delete;

    // From one thread (the main lcore), at most every kPollNs: prints a line per change.
    void poll(uint64_t now_ns);
    // From any thread.
    PortHealth health(uint16_t port) const;

    static constexpr uint64_t kPollNs = 100000000;

  private:
    struct Watched;
    std::vector<std::unique_ptr<Watched>> ports_;
    uint64_t next_poll_ns_ = 0;
    int flags_socket_;              // for the kernel interfaces' flags (SIOCGIFFLAGS)
    bool hotplug_handled_ = false;  // DPDK's SIGBUS handling of removed PCI devices is on
};

}  // namespace floodgate
