// rte_dev_hotplug_handle_enable and rte_dev_event_monitor_start are experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1

#include "dataplane/live/port_watch.h"

#include <net/if.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "dataplane/live/ring_drops.h"

namespace floodgate {

struct PortWatch::Watched {
    uint16_t port = 0;
    std::string name;                  // the DPDK device, e.g. net_af_packet0
    unsigned if_index = 0;             // the kernel interface the port runs on, 0 for none
    std::string iface;                 // its name when the port started
    bool up = true;                    // as last printed (the polling thread's own)
    bool was_up = false;               // up at some poll: its next coming up is a return
    std::atomic<bool> removed{false};  // the device said so (RTE_ETH_EVENT_INTR_RMV)
    std::atomic<bool> shown_up{true};
    std::atomic<uint64_t> losses{0};
    std::optional<RingDrops> ring;  // net_af_packet's
    std::atomic<uint64_t> ring_drops{0};
};

namespace {

// The interrupt thread's: a removed device's registers are not read again (not even its link).
int on_removed(uint16_t, rte_eth_event_type, void *watched, void *) {
    static_cast<std::atomic<bool> *>(watched)->store(true, std::memory_order_relaxed);
    return 0;
}

bool on_pci(const rte_device *device) {
    return device != nullptr && std::strcmp(rte_bus_name(rte_dev_bus(device)), "pci") == 0;
}

// "" while the port can carry frames, else why not.
std::string why_lost(uint16_t port, bool removed, unsigned if_index, const std::string &iface,
                     int sock) {
    if (removed) return "device removed";
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_DOWN)
        return "link down";
    if (if_index == 0) return "";
    // By index: a veth deleted and made again under the same name is another interface, which
    // the PMD's socket is not bound to.
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(if_index, name) == nullptr) return "interface " + iface + " is gone";
    ifreq req{};
    std::memcpy(req.ifr_name, name, sizeof name);
    if (sock >= 0 && ioctl(sock, SIOCGIFFLAGS, &req) == 0) {
        if ((req.ifr_flags & IFF_UP) == 0) return "interface " + iface + " is down";
        if ((req.ifr_flags & IFF_RUNNING) == 0) return "interface " + iface + " has no carrier";
    }
    return "";
}

}  // namespace

PortWatch::PortWatch(const std::vector<uint16_t> &ports)
    : flags_socket_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    for (uint16_t p : ports) {
        auto w = std::make_unique<Watched>();
        w->port = p;
        char name[RTE_ETH_NAME_MAX_LEN] = {};
        if (rte_eth_dev_get_name_by_port(p, name) == 0) w->name = name;
        rte_eth_dev_info info{};
        const bool have_info = rte_eth_dev_info_get(p, &info) == 0;
        if (have_info) w->if_index = info.if_index;
        char iface[IF_NAMESIZE] = {};
        if (w->if_index != 0 && if_indextoname(w->if_index, iface) != nullptr) w->iface = iface;
        if (have_info && info.driver_name != nullptr &&
            std::strcmp(info.driver_name, "net_af_packet") == 0) {
            w->ring.emplace(w->if_index);
            if (!w->ring->found())
                std::printf("note: port %u (%s): its kernel ring's drops cannot be read\n", p,
                            w->name.c_str());
        }
        // A port down from the start (a memif server before its client comes) is not lost.
        w->up = why_lost(p, false, w->if_index, w->iface, flags_socket_).empty();
        w->was_up = w->up;
        w->shown_up.store(w->up, std::memory_order_relaxed);
        rte_eth_dev_callback_register(p, RTE_ETH_EVENT_INTR_RMV, on_removed, &w->removed);
        // A PCI NIC pulled out from under a polling worker: DPDK's handler maps its memory
        // again on the SIGBUS, so the worker's bursts come back empty instead of killing it.
        if (have_info && on_pci(info.device) && !hotplug_handled_) {
            hotplug_handled_ =
                rte_dev_hotplug_handle_enable() == 0 && rte_dev_event_monitor_start() == 0;
            if (!hotplug_handled_)
                std::printf(
                    "note: no hot-unplug handling: a NIC removed under traffic can "
                    "crash floodgate\n");
        }
        ports_.push_back(std::move(w));
    }
}

PortWatch::~PortWatch() {
    for (const std::unique_ptr<Watched> &w : ports_)
        rte_eth_dev_callback_unregister(w->port, RTE_ETH_EVENT_INTR_RMV, on_removed, &w->removed);
    if (hotplug_handled_) rte_dev_event_monitor_stop();
    if (flags_socket_ >= 0) close(flags_socket_);
}

void PortWatch::poll(uint64_t now_ns) {
    if (now_ns < next_poll_ns_) return;
    next_poll_ns_ = now_ns + kPollNs;
    for (const std::unique_ptr<Watched> &w : ports_) {
        if (w->ring) w->ring_drops.fetch_add(w->ring->read(), std::memory_order_relaxed);
        const std::string why = why_lost(w->port, w->removed.load(std::memory_order_relaxed),
                                         w->if_index, w->iface, flags_socket_);
        const bool up = why.empty();
        if (up == w->up) continue;
        w->up = up;
        if (up) {
            std::printf("port %u (%s): %s\n", w->port, w->name.c_str(), w->was_up ? "back" : "up");
            w->was_up = true;
        } else {
            w->losses.fetch_add(1, std::memory_order_relaxed);
            std::printf("port %u (%s): lost (%s); the other ports go on\n", w->port,
                        w->name.c_str(), why.c_str());
        }
        w->shown_up.store(up, std::memory_order_release);  // after the loss it shows
        std::fflush(stdout);
    }
}

PortHealth PortWatch::health(uint16_t port) const {
    for (const std::unique_ptr<Watched> &w : ports_) {
        if (w->port == port) {
            // A port shown lost has its loss counted: shown_up is read first.
            const bool up = w->shown_up.load(std::memory_order_acquire);
            return {up, w->losses.load(std::memory_order_relaxed), w->ring.has_value(),
                    w->ring_drops.load(std::memory_order_relaxed)};
        }
    }
    return {};
}

}  // namespace floodgate
