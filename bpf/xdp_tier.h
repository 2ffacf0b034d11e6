// The XDP tier from user space: loads bpf/floodgate_xdp.bpf.c through its libbpf skeleton,
// keeps its maps pinned under a directory of the BPF filesystem (so blocks outlive either
// process), attaches it to an interface, and writes and reads its maps and counters.
// Never on a worker's hot path: the control plane or a non-worker thread calls it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/xdp.h"

struct floodgate_xdp;  // the skeleton (floodgate_xdp.skel.h)

namespace floodgate {

inline constexpr const char *kXdpPinDir = "/sys/fs/bpf/floodgate";
inline constexpr const char *kXdpProgramName = "floodgate_xdp";  // as the kernel lists it

struct XdpOptions {
    // true: frames not dropped go to the kernel (XDP_PASS); false: to the AF_XDP socket of
    // their queue (xsks_map), for net_af_xdp.
    bool standalone = true;
    // Where the maps are pinned (and found again by the next process); empty: not pinned
    // (tests).
    std::string pin_dir = kXdpPinDir;
};

// One entry of the maps (dataplane/api/xdp.h): a prefix, who wrote it, allow or block, and
// until when.
struct XdpEntry {
    Prefix prefix;
    fg_xdp_origin origin = FG_XDP_ORIGIN_operator;
    bool allow = false;
    uint64_t expires_ns = 0;  // CLOCK_MONOTONIC; 0: never
    bool operator==(const XdpEntry &) const = default;
};

// What reconcile() changed.
struct XdpReconciled {
    size_t added = 0;    // written or rewritten
    size_t removed = 0;  // owned entries no longer wanted, escalated ones under a new allow
    size_t failed = 0;   // could not be written (map full)
};

class XdpTier {
  public:
    // Opens and loads the program (reusing maps already pinned in pin_dir); nullptr with
    // *error when the kernel refuses (no CAP_BPF, no BPF filesystem, ...).
    static std::unique_ptr<XdpTier> load(const XdpOptions &options, std::string *error);
    // The maps an earlier load pinned in pin_dir, without loading a program (floodctl's
    // read-only commands); nullptr with *error when nothing is pinned there.
    static std::unique_ptr<XdpTier> open_pinned(const std::string &pin_dir, std::string *error);
    // For the dataplane on net_af_xdp: iface runs the program that the PMD loaded from the
    // object file (its xdp_prog device argument) with maps of its own. Loads the program again
    // with the maps pinned in pin_dir and the PMD's xsks_map (so frames keep reaching its
    // sockets), and swaps it in atomically (XDP_FLAGS_REPLACE). The PMD detaches it when it
    // closes the port. nullptr with *error when iface runs no floodgate program.
    static std::unique_ptr<XdpTier> adopt(const std::string &iface, const std::string &pin_dir,
                                          std::string *error);
    ~XdpTier();
    XdpTier(const XdpTier &) = delete;
    XdpTier &operator=(const XdpTier &) = delete;

    int program_fd() const;  // -1 for open_pinned()
    // Attaches to the interface, replacing a program already there; skb (generic) mode where
    // the driver has no native XDP (veth has it).
    bool attach(const std::string &iface, std::string *error);
    // Detaches floodgate's program; refuses when the interface runs none, or another one.
    static bool detach(const std::string &iface, std::string *error);

    // Writes an entry whatever is there (the program reads the new value at once).
    bool put(const XdpEntry &e, std::string *error);
    bool remove(const Prefix &p, std::string *error);  // false if it was not there
    // The entry of exactly this prefix, if any.
    bool find(const Prefix &p, XdpEntry *out) const;
    // What the program decides for the addresses of p: the longest live entry holding p,
    // expired ones looked past as the program does; false if none.
    bool longest_live(const Prefix &p, uint64_t now_ns, XdpEntry *out) const;
    // The name of the XDP program attached to iface ("" if none).
    static std::string attached_program(const std::string &iface);
    std::vector<XdpEntry> list() const;
    // Removes the entries whose time has passed; returns how many.
    size_t expire(uint64_t now_ns);

    // Makes the entries of the origins in `origins` (rules; or rules and override) exactly
    // `owned` (for the same prefix an override is kept over a rules entry): removes those no
    // longer in it and writes the missing or changed ones, over an operator's or escalated
    // entry of the same prefix. Escalated entries that a live allow now covers go too (the
    // dataplane passes those sources). Operator entries are left alone.
    XdpReconciled reconcile(const std::vector<XdpEntry> &owned,
                            std::initializer_list<fg_xdp_origin> origins = {
                                FG_XDP_ORIGIN_rules, FG_XDP_ORIGIN_override});
    // An operator's block (floodctl xdp add): refused for a prefix the rules file or an
    // override holds (changing it there is what lasts); replaces an operator's or escalated
    // entry.
    bool add_operator(const XdpEntry &e, std::string *error);
    // An escalated source: written unless an entry of the same prefix holds already (a block
    // drops it) or a live allow covers it (the dataplane passes it). Returns true when written.
    bool add_escalated(const XdpEntry &e, uint64_t now_ns, std::string *error);

    // The counters summed over the CPUs, by enum fg_xdp_counter.
    std::vector<uint64_t> counters() const;

    static uint64_t monotonic_ns();  // the clock expires_ns is on

  private:
    XdpTier() = default;
    void use_skeleton_maps();        // the loaded skeleton's maps are the ones read and written
    floodgate_xdp *skel_ = nullptr;  // nullptr for open_pinned()
    // The entry's map and key for a prefix: the exact map of its family for a single address
    // (dataplane/api/xdp.h), else the trie; and the longest live trie entry of at most len bits
    // covering p, expired ones looked past as the program does.
    struct MapKey;
    MapKey map_key(const Prefix &p) const;
    bool trie_longest(const Prefix &p, unsigned len, uint64_t now_ns, XdpEntry *out) const;
    int block4_fd_ = -1;
    int block6_fd_ = -1;
    int exact4_fd_ = -1;
    int exact6_fd_ = -1;
    int long6_fd_ = -1;
    int counters_fd_ = -1;
    bool own_fds_ = false;  // open_pinned(): ours to close
};

const char *xdp_counter_name(unsigned i);
const char *xdp_origin_name(fg_xdp_origin o);

}  // namespace floodgate
