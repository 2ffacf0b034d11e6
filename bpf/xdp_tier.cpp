#include "bpf/xdp_tier.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/stat.h>
#include <time.h>

#include <cstring>

#include "bpf/floodgate_xdp.skel.h"

namespace floodgate {

namespace {

std::string errno_text(int err) {
    return std::strerror(err < 0 ? -err : err);
}

// The block map of the prefix's family, and its key.
struct MapKey {
    int fd;
    fg_xdp_key4 k4;
    fg_xdp_key6 k6;
    bool is6;
    const void *key() const {
        return is6 ? static_cast<const void *>(&k6) : static_cast<const void *>(&k4);
    }
};

MapKey map_key(floodgate_xdp *skel, const Prefix &p) {
    MapKey m{};
    m.is6 = p.family == 6;
    if (m.is6) {
        m.fd = bpf_map__fd(skel->maps.block6);
        m.k6.prefixlen = p.len;
        std::memcpy(m.k6.addr, p.addr.data(), 16);
    } else {
        m.fd = bpf_map__fd(skel->maps.block4);
        m.k4.prefixlen = p.len;
        std::memcpy(m.k4.addr, p.addr.data(), 4);
    }
    return m;
}

}  // namespace

const char *xdp_counter_name(unsigned i) {
    static constexpr const char *kNames[] = {
#define FG_X(name) #name,
        FG_XDP_COUNTERS(FG_X)
#undef FG_X
    };
    return i < FG_XDP_COUNTER_COUNT ? kNames[i] : "?";
}

uint64_t XdpTier::monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::unique_ptr<XdpTier> XdpTier::load(const XdpOptions &options, std::string *error) {
    std::unique_ptr<XdpTier> t(new XdpTier());
    t->skel_ = floodgate_xdp__open();
    if (t->skel_ == nullptr) {
        *error = "cannot open the XDP program: " + errno_text(errno);
        return nullptr;
    }
    t->skel_->rodata->standalone = options.standalone ? 1 : 0;
    if (!options.pin_dir.empty()) {
        if (mkdir(options.pin_dir.c_str(), 0700) != 0 && errno != EEXIST) {
            *error = options.pin_dir + ": " + errno_text(errno) +
                     " (is the BPF filesystem mounted? mount -t bpf bpf /sys/fs/bpf)";
            return nullptr;
        }
        // Found again if pinned by an earlier process, pinned after the load otherwise.
        for (bpf_map *m : {t->skel_->maps.block4, t->skel_->maps.block6, t->skel_->maps.counters}) {
            const std::string path = options.pin_dir + "/" + bpf_map__name(m);
            if (int rc = bpf_map__set_pin_path(m, path.c_str()); rc != 0) {
                *error = path + ": " + errno_text(rc);
                return nullptr;
            }
        }
    }
    if (int rc = floodgate_xdp__load(t->skel_); rc != 0) {
        *error = "the kernel refused the XDP program: " + errno_text(rc) +
                 (rc == -EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : "");
        return nullptr;
    }
    return t;
}

XdpTier::~XdpTier() {
    if (skel_ != nullptr) floodgate_xdp__destroy(skel_);  // pinned maps stay
}

int XdpTier::program_fd() const {
    return bpf_program__fd(skel_->progs.floodgate_xdp);
}

bool XdpTier::attach(const std::string &iface, std::string *error) {
    const int ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (ifindex == 0) {
        *error = iface + ": no such interface";
        return false;
    }
    // Native first; skb (generic) mode where the driver has none.
    int rc = bpf_xdp_attach(ifindex, program_fd(), XDP_FLAGS_DRV_MODE, nullptr);
    if (rc != 0) rc = bpf_xdp_attach(ifindex, program_fd(), XDP_FLAGS_SKB_MODE, nullptr);
    if (rc != 0) {
        *error = iface + ": cannot attach the XDP program: " + errno_text(rc);
        return false;
    }
    return true;
}

bool XdpTier::detach(const std::string &iface, std::string *error) {
    const int ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (ifindex == 0) {
        *error = iface + ": no such interface";
        return false;
    }
    int rc = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, nullptr);
    const int skb = bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, nullptr);
    if (rc != 0 && skb != 0) {
        *error = iface + ": cannot detach: " + errno_text(rc);
        return false;
    }
    return true;
}

bool XdpTier::add(const XdpBlock &b, std::string *error) {
    const MapKey m = map_key(skel_, b.prefix);
    const fg_xdp_entry e{b.expires_ns, static_cast<__u32>(b.reason), 0};
    if (bpf_map_update_elem(m.fd, m.key(), &e, BPF_ANY) != 0) {
        *error = format_prefix(b.prefix) + ": " + errno_text(errno) +
                 (errno == E2BIG || errno == ENOMEM ? " (the block map is full)" : "");
        return false;
    }
    return true;
}

bool XdpTier::remove(const Prefix &p, std::string *error) {
    const MapKey m = map_key(skel_, p);
    if (bpf_map_delete_elem(m.fd, m.key()) != 0) {
        *error = format_prefix(p) + ": " +
                 (errno == ENOENT ? "not in the block map" : errno_text(errno));
        return false;
    }
    return true;
}

std::vector<XdpBlock> XdpTier::list() const {
    std::vector<XdpBlock> out;
    auto walk = [&](int fd, auto key, uint8_t family, size_t addr_len) {
        decltype(key) next{};
        const void *prev = nullptr;
        while (bpf_map_get_next_key(fd, prev, &next) == 0) {
            fg_xdp_entry e{};
            if (bpf_map_lookup_elem(fd, &next, &e) == 0) {
                XdpBlock b;
                b.prefix.family = family;
                b.prefix.len = static_cast<uint8_t>(next.prefixlen);
                std::memcpy(b.prefix.addr.data(), next.addr, addr_len);
                b.reason = static_cast<fg_xdp_block_reason>(e.reason);
                b.expires_ns = e.expires_ns;
                out.push_back(b);
            }
            key = next;
            prev = &key;
            if (out.size() > 2 * FG_XDP_MAX_ENTRIES) break;  // bounded whatever the kernel says
        }
    };
    walk(bpf_map__fd(skel_->maps.block4), fg_xdp_key4{}, 4, 4);
    walk(bpf_map__fd(skel_->maps.block6), fg_xdp_key6{}, 6, 16);
    return out;
}

size_t XdpTier::expire(uint64_t now_ns) {
    size_t n = 0;
    std::string ignored;
    for (const XdpBlock &b : list())
        if (b.expires_ns != 0 && b.expires_ns <= now_ns && remove(b.prefix, &ignored)) ++n;
    return n;
}

std::vector<uint64_t> XdpTier::counters() const {
    const int cpus = libbpf_num_possible_cpus();
    std::vector<uint64_t> out(FG_XDP_COUNTER_COUNT, 0);
    if (cpus <= 0) return out;
    std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
    for (__u32 i = 0; i < FG_XDP_COUNTER_COUNT; ++i) {
        if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.counters), &i, per_cpu.data()) != 0)
            continue;
        for (uint64_t v : per_cpu) out[i] += v;
    }
    return out;
}

}  // namespace floodgate
