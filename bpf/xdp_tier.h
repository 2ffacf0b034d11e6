// The XDP tier from user space: loads bpf/floodgate_xdp.bpf.c through its libbpf skeleton,
// keeps its maps pinned under a directory of the BPF filesystem (so blocks outlive either
// process), attaches it to an interface, and writes and reads its block maps and counters.
// Never on a worker's hot path: the control plane or a non-worker lcore calls it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/xdp.h"

struct floodgate_xdp;  // the skeleton (floodgate_xdp.skel.h)

namespace floodgate {

inline constexpr const char *kXdpPinDir = "/sys/fs/bpf/floodgate";

struct XdpOptions {
    // true: frames not dropped go to the kernel (XDP_PASS); false: to the AF_XDP socket of
    // their queue (xsks_map), for net_af_xdp.
    bool standalone = true;
    // Where the maps are pinned (and found again by the next process); empty: not pinned
    // (tests).
    std::string pin_dir = kXdpPinDir;
};

struct XdpBlock {
    Prefix prefix;
    fg_xdp_block_reason reason = FG_XDP_block_hits;
    uint64_t expires_ns = 0;  // CLOCK_MONOTONIC; 0: never
};

class XdpTier {
  public:
    // Opens and loads the program (reusing maps already pinned in pin_dir); nullptr with
    // *error when the kernel refuses (no CAP_BPF, no BPF filesystem, ...).
    static std::unique_ptr<XdpTier> load(const XdpOptions &options, std::string *error);
    ~XdpTier();
    XdpTier(const XdpTier &) = delete;
    XdpTier &operator=(const XdpTier &) = delete;

    int program_fd() const;
    // Attaches to (detaches from) the interface; skb mode where the driver has no native XDP
    // (veth has it). Attaching replaces a program already there.
    bool attach(const std::string &iface, std::string *error);
    static bool detach(const std::string &iface, std::string *error);

    bool add(const XdpBlock &b, std::string *error);
    bool remove(const Prefix &p, std::string *error);  // false if it was not there
    std::vector<XdpBlock> list() const;
    // Removes the entries whose time has passed; returns how many.
    size_t expire(uint64_t now_ns);
    // The counters summed over the CPUs, by enum fg_xdp_counter.
    std::vector<uint64_t> counters() const;

    static uint64_t monotonic_ns();  // the clock expires_ns is on

  private:
    XdpTier() = default;
    floodgate_xdp *skel_ = nullptr;
};

const char *xdp_counter_name(unsigned i);

}  // namespace floodgate
