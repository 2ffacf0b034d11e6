#include "bpf/xdp_tier.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "bpf/floodgate_xdp.skel.h"

namespace floodgate {

namespace {

std::string errno_text(int err) {
    return std::strerror(err < 0 ? -err : err);
}

XdpEntry entry_of(const Prefix &p, const fg_xdp_entry &e) {
    XdpEntry x;
    x.prefix = p;
    x.origin = e.origin < FG_XDP_ORIGIN_COUNT ? static_cast<fg_xdp_origin>(e.origin)
                                              : FG_XDP_ORIGIN_operator;
    x.allow = e.allow != 0;
    x.expires_ns = e.expires_ns;
    return x;
}

Prefix masked(Prefix p) {
    mask_addr(&p.addr, p.len);
    return p;
}

bool dataplane_owned(fg_xdp_origin o) {
    return o == FG_XDP_ORIGIN_rules || o == FG_XDP_ORIGIN_override;
}

int ifindex_of(const std::string &iface, std::string *error) {
    const int ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (ifindex == 0) *error = iface + ": no such interface";
    return ifindex;
}

// The program attached to ifindex (its fd, name and attach mode); fd -1 when there is none.
struct Attached {
    int fd = -1;
    std::string name;
    uint8_t mode = XDP_ATTACHED_NONE;
    std::vector<uint32_t> map_ids;
};

Attached attached(int ifindex) {
    Attached a;
    bpf_xdp_query_opts q{};
    q.sz = sizeof q;
    if (bpf_xdp_query(ifindex, 0, &q) != 0 || q.prog_id == 0) return a;
    a.mode = q.attach_mode;
    a.fd = bpf_prog_get_fd_by_id(q.prog_id);
    if (a.fd < 0) return a;
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(a.fd, &info, &len) != 0) return a;
    a.name = info.name;
    a.map_ids.resize(info.nr_map_ids);
    bpf_prog_info again{};
    again.nr_map_ids = static_cast<__u32>(a.map_ids.size());
    again.map_ids = reinterpret_cast<uintptr_t>(a.map_ids.data());
    len = sizeof again;
    if (bpf_obj_get_info_by_fd(a.fd, &again, &len) != 0) a.map_ids.clear();
    a.map_ids.resize(std::min<size_t>(a.map_ids.size(), again.nr_map_ids));
    return a;
}

// The fd of the map named `name` among ids; -1 if none.
int map_named(const std::vector<uint32_t> &ids, const char *name) {
    for (uint32_t id : ids) {
        const int fd = bpf_map_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_map_info info{};
        __u32 len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && std::strcmp(info.name, name) == 0)
            return fd;
        close(fd);
    }
    return -1;
}

// Opens the skeleton with pinned maps (found again in pin_dir, pinned there after the load).
floodgate_xdp *open_skeleton(const std::string &pin_dir, bool standalone, std::string *error) {
    floodgate_xdp *skel = floodgate_xdp__open();
    if (skel == nullptr) {
        *error = "cannot open the XDP program: " + errno_text(errno);
        return nullptr;
    }
    skel->rodata->standalone = standalone ? 1 : 0;
    if (pin_dir.empty()) return skel;
    if (mkdir(pin_dir.c_str(), 0700) != 0 && errno != EEXIST) {
        *error = pin_dir + ": " + errno_text(errno) +
                 " (is the BPF filesystem mounted? mount -t bpf bpf /sys/fs/bpf)";
        floodgate_xdp__destroy(skel);
        return nullptr;
    }
    for (bpf_map *m : {skel->maps.block4, skel->maps.block6, skel->maps.exact4, skel->maps.exact6,
                       skel->maps.long6, skel->maps.counters}) {
        const std::string path = pin_dir + "/" + bpf_map__name(m);
        if (int rc = bpf_map__set_pin_path(m, path.c_str()); rc != 0) {
            *error = path + ": " + errno_text(rc);
            floodgate_xdp__destroy(skel);
            return nullptr;
        }
    }
    return skel;
}

std::string load_error(int rc, const std::string &pin_dir) {
    std::string hint;
    if (rc == -EPERM) hint = " (needs CAP_BPF and CAP_NET_ADMIN, or root)";
    struct stat st {};
    if (rc == -EINVAL && !pin_dir.empty() && stat((pin_dir + "/counters").c_str(), &st) == 0)
        hint = " (maps pinned in " + pin_dir +
               " by another version of floodgate? detach it, then rm -r " + pin_dir + ")";
    return "the kernel refused the XDP program: " + errno_text(rc) + hint;
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

const char *xdp_origin_name(fg_xdp_origin o) {
    static constexpr const char *kNames[] = {
#define FG_X(name) #name,
        FG_XDP_ORIGINS(FG_X)
#undef FG_X
    };
    return o < FG_XDP_ORIGIN_COUNT ? kNames[o] : "?";
}

uint64_t XdpTier::monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::unique_ptr<XdpTier> XdpTier::load(const XdpOptions &options, std::string *error) {
    std::unique_ptr<XdpTier> t(new XdpTier());
    t->skel_ = open_skeleton(options.pin_dir, options.standalone, error);
    if (t->skel_ == nullptr) return nullptr;
    if (int rc = floodgate_xdp__load(t->skel_); rc != 0) {
        *error = load_error(rc, options.pin_dir);
        return nullptr;
    }
    t->use_skeleton_maps();
    return t;
}

std::unique_ptr<XdpTier> XdpTier::open_pinned(const std::string &pin_dir, std::string *error) {
    std::unique_ptr<XdpTier> t(new XdpTier());
    t->own_fds_ = true;
    int *fds[] = {&t->block4_fd_, &t->block6_fd_, &t->exact4_fd_,
                  &t->exact6_fd_, &t->long6_fd_,  &t->counters_fd_};
    const char *names[] = {"block4", "block6", "exact4", "exact6", "long6", "counters"};
    for (int i = 0; i < 6; ++i) {
        const std::string path = pin_dir + "/" + names[i];
        *fds[i] = bpf_obj_get(path.c_str());
        if (*fds[i] < 0) {
            *error = path + ": " + errno_text(errno) +
                     (errno == ENOENT ? " (no XDP tier here yet: floodctl xdp attach or "
                                        "floodgate run on net_af_xdp pins its maps)"
                                      : "");
            return nullptr;
        }
    }
    return t;
}

std::unique_ptr<XdpTier> XdpTier::adopt(const std::string &iface, const std::string &pin_dir,
                                        std::string *error) {
    const int ifindex = ifindex_of(iface, error);
    if (ifindex == 0) return nullptr;
    Attached old = attached(ifindex);
    if (old.fd < 0 || old.name != kXdpProgramName) {
        *error = iface + ": " +
                 (old.fd < 0 ? std::string("runs no XDP program")
                             : "runs the XDP program '" + old.name + "', not floodgate's") +
                 " (give net_af_xdp xdp_prog=PATH/floodgate_xdp.bpf.o)";
        if (old.fd >= 0) close(old.fd);
        return nullptr;
    }
    const int xsks = map_named(old.map_ids, "xsks_map");
    std::unique_ptr<XdpTier> t(new XdpTier());
    t->skel_ = open_skeleton(pin_dir, false, error);
    bool ok = t->skel_ != nullptr && xsks >= 0;
    if (t->skel_ != nullptr && xsks < 0) *error = iface + ": the PMD's program has no xsks_map";
    if (ok) {
        if (int rc = bpf_map__reuse_fd(t->skel_->maps.xsks_map, xsks); rc != 0) {
            *error = "cannot reuse the PMD's xsks_map: " + errno_text(rc);
            ok = false;
        } else if (rc = floodgate_xdp__load(t->skel_); rc != 0) {
            *error = load_error(rc, pin_dir);
            ok = false;
        }
    }
    if (ok) {
        bpf_xdp_attach_opts opts{};
        opts.sz = sizeof opts;
        opts.old_prog_fd = old.fd;
        const uint32_t mode = old.mode == XDP_ATTACHED_SKB  ? XDP_FLAGS_SKB_MODE
                              : old.mode == XDP_ATTACHED_HW ? XDP_FLAGS_HW_MODE
                                                            : XDP_FLAGS_DRV_MODE;
        if (int rc = bpf_xdp_attach(ifindex, t->program_fd(), XDP_FLAGS_REPLACE | mode, &opts);
            rc != 0) {
            *error = iface + ": cannot swap in the program with pinned maps: " + errno_text(rc);
            ok = false;
        }
    }
    if (xsks >= 0) close(xsks);
    close(old.fd);
    if (!ok) return nullptr;
    t->use_skeleton_maps();
    return t;
}

void XdpTier::use_skeleton_maps() {
    block4_fd_ = bpf_map__fd(skel_->maps.block4);
    block6_fd_ = bpf_map__fd(skel_->maps.block6);
    exact4_fd_ = bpf_map__fd(skel_->maps.exact4);
    exact6_fd_ = bpf_map__fd(skel_->maps.exact6);
    long6_fd_ = bpf_map__fd(skel_->maps.long6);
    counters_fd_ = bpf_map__fd(skel_->maps.counters);
}

// A prefix's map and key: the exact map of its family for a single address, else its trie.
struct XdpTier::MapKey {
    int fd;
    bool exact;
    fg_xdp_key4 k4;
    fg_xdp_key6 k6;
    __u32 a4;  // exact4's key
    __u64 a6;  // exact6's key
    bool is6;
    const void *key() const {
        if (exact) return is6 ? static_cast<const void *>(&a6) : static_cast<const void *>(&a4);
        return is6 ? static_cast<const void *>(&k6) : static_cast<const void *>(&k4);
    }
};

XdpTier::MapKey XdpTier::map_key(const Prefix &p) const {
    MapKey m{};
    m.is6 = p.family == 6;
    if (m.is6) {
        m.exact = p.len == FG_XDP_EXACT6_LEN;
        m.fd = m.exact ? exact6_fd_ : block6_fd_;
        m.k6.prefixlen = p.len;
        std::memcpy(m.k6.addr, p.addr.data(), 16);
        std::memcpy(&m.a6, p.addr.data(), 8);
    } else {
        m.exact = p.len == FG_XDP_EXACT4_LEN;
        m.fd = m.exact ? exact4_fd_ : block4_fd_;
        m.k4.prefixlen = p.len;
        std::memcpy(m.k4.addr, p.addr.data(), 4);
        std::memcpy(&m.a4, p.addr.data(), 4);
    }
    return m;
}

XdpTier::~XdpTier() {
    if (skel_ != nullptr) floodgate_xdp__destroy(skel_);  // pinned maps stay
    if (own_fds_)
        for (int fd : {block4_fd_, block6_fd_, exact4_fd_, exact6_fd_, long6_fd_, counters_fd_})
            if (fd >= 0) close(fd);
}

int XdpTier::program_fd() const {
    return skel_ != nullptr ? bpf_program__fd(skel_->progs.floodgate_xdp) : -1;
}

bool XdpTier::attach(const std::string &iface, std::string *error) {
    const int ifindex = ifindex_of(iface, error);
    if (ifindex == 0) return false;
    if (program_fd() < 0) {
        *error = "no program loaded";
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
    const int ifindex = ifindex_of(iface, error);
    if (ifindex == 0) return false;
    Attached a = attached(ifindex);
    if (a.fd >= 0) close(a.fd);
    if (a.mode == XDP_ATTACHED_NONE) {
        *error = iface + ": no XDP program attached";
        return false;
    }
    if (a.name != kXdpProgramName) {
        *error = iface + ": runs the XDP program '" + a.name + "', not floodgate's: left alone";
        return false;
    }
    const uint32_t mode = a.mode == XDP_ATTACHED_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
    if (int rc = bpf_xdp_detach(ifindex, mode, nullptr); rc != 0) {
        *error = iface + ": cannot detach: " + errno_text(rc);
        return false;
    }
    return true;
}

bool XdpTier::put(const XdpEntry &x, std::string *error) {
    const MapKey m = map_key(x.prefix);
    if (m.is6 && x.prefix.len > FG_XDP_EXACT6_LEN) {
        // Before the entry: from now on the program asks the trie before the /64s.
        const __u32 zero = 0, one = 1;
        if (bpf_map_update_elem(long6_fd_, &zero, &one, BPF_ANY) != 0) {
            *error = format_prefix(x.prefix) + ": " + errno_text(errno);
            return false;
        }
    }
    fg_xdp_entry e{};
    e.expires_ns = x.expires_ns;
    e.origin = static_cast<__u8>(x.origin);
    e.allow = x.allow ? 1 : 0;
    e.prefixlen = x.prefix.len;
    if (bpf_map_update_elem(m.fd, m.key(), &e, BPF_ANY) != 0) {
        *error = format_prefix(x.prefix) + ": " + errno_text(errno) +
                 (errno == E2BIG || errno == ENOMEM || errno == ENOSPC ? " (the map is full)" : "");
        return false;
    }
    return true;
}

bool XdpTier::remove(const Prefix &p, std::string *error) {
    const MapKey m = map_key(p);
    if (bpf_map_delete_elem(m.fd, m.key()) != 0) {
        *error = format_prefix(p) + ": " + (errno == ENOENT ? "not in the map" : errno_text(errno));
        return false;
    }
    return true;
}

bool XdpTier::find(const Prefix &p, XdpEntry *out) const {
    // An LPM lookup would return a covering prefix's entry: walk to the exact key instead by
    // asking for it with its own length and comparing the entry's.
    const MapKey m = map_key(p);
    fg_xdp_entry e{};
    if (bpf_map_lookup_elem(m.fd, m.key(), &e) != 0 || e.prefixlen != p.len) return false;
    *out = entry_of(p, e);
    return true;
}

// As the program decides: for IPv6, a live trie entry longer than /64 first; then the exact
// map's entry of the address, if p is that long; then the trie's longest live one.
bool XdpTier::longest_live(const Prefix &p, uint64_t now_ns, XdpEntry *out) const {
    const unsigned exact_len = p.family == 6 ? FG_XDP_EXACT6_LEN : FG_XDP_EXACT4_LEN;
    if (p.len > exact_len && trie_longest(p, p.len, now_ns, out) && out->prefix.len > exact_len)
        return true;
    if (p.len >= exact_len) {
        Prefix single = p;
        single.len = static_cast<uint8_t>(exact_len);
        single = masked(single);
        const MapKey m = map_key(single);
        fg_xdp_entry e{};
        if (bpf_map_lookup_elem(m.fd, m.key(), &e) == 0 &&
            (e.expires_ns == 0 || e.expires_ns > now_ns)) {
            *out = entry_of(single, e);
            return true;
        }
    }
    return trie_longest(p, std::min<unsigned>(p.len, exact_len - 1), now_ns, out);
}

bool XdpTier::trie_longest(const Prefix &p, unsigned len_bits, uint64_t now_ns,
                           XdpEntry *out) const {
    MapKey m{};
    m.is6 = p.family == 6;
    m.fd = m.is6 ? block6_fd_ : block4_fd_;
    m.k6.prefixlen = m.k4.prefixlen = len_bits;
    std::memcpy(m.k6.addr, p.addr.data(), 16);
    std::memcpy(m.k4.addr, p.addr.data(), 4);
    __u32 *len = m.is6 ? &m.k6.prefixlen : &m.k4.prefixlen;
    for (int i = 0; i <= FG_XDP_EXPIRED_LOOKAHEAD; ++i) {  // as holding() in the program
        fg_xdp_entry e{};
        if (bpf_map_lookup_elem(m.fd, m.key(), &e) != 0) return false;
        if (e.expires_ns == 0 || e.expires_ns > now_ns) {
            Prefix q = p;
            q.len = e.prefixlen;
            *out = entry_of(masked(q), e);
            return true;
        }
        if (e.prefixlen == 0) return false;
        *len = e.prefixlen - 1u;
    }
    return false;
}

std::string XdpTier::attached_program(const std::string &iface) {
    const int ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (ifindex == 0) return "";
    Attached a = attached(ifindex);
    if (a.fd >= 0) close(a.fd);
    return a.name;
}

std::vector<XdpEntry> XdpTier::list() const {
    std::vector<XdpEntry> out;
    // Every entry of one map, its key made a Prefix by prefix_of.
    auto walk = [&](int fd, auto key, auto prefix_of) {
        decltype(key) next{};
        const void *prev = nullptr;
        size_t steps = 0;
        while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps <= 2 * FG_XDP_MAX_ENTRIES) {
            fg_xdp_entry e{};
            if (bpf_map_lookup_elem(fd, &next, &e) == 0)
                out.push_back(entry_of(prefix_of(next), e));
            key = next;
            prev = &key;
        }
    };
    const auto prefix = [](uint8_t family, unsigned len, const void *addr, size_t addr_len) {
        Prefix p;
        p.family = family;
        p.len = static_cast<uint8_t>(len);
        std::memcpy(p.addr.data(), addr, addr_len);
        return p;
    };
    // The tries' keys carry their length; the exact maps' key is the address (IPv4) or the /64.
    walk(block4_fd_, fg_xdp_key4{},
         [&](const fg_xdp_key4 &k) { return prefix(4, k.prefixlen, k.addr, 4); });
    walk(block6_fd_, fg_xdp_key6{},
         [&](const fg_xdp_key6 &k) { return prefix(6, k.prefixlen, k.addr, 16); });
    walk(exact4_fd_, __u32{},
         [&](const __u32 &k) { return prefix(4, FG_XDP_EXACT4_LEN, &k, sizeof k); });
    walk(exact6_fd_, __u64{},
         [&](const __u64 &k) { return prefix(6, FG_XDP_EXACT6_LEN, &k, sizeof k); });
    return out;
}

size_t XdpTier::expire(uint64_t now_ns) {
    size_t n = 0;
    std::string ignored;
    for (const XdpEntry &e : list())
        if (e.expires_ns != 0 && e.expires_ns <= now_ns && remove(e.prefix, &ignored)) ++n;
    return n;
}

XdpReconciled XdpTier::reconcile(const std::vector<XdpEntry> &owned,
                                 std::initializer_list<fg_xdp_origin> origins) {
    const auto ours = [&](fg_xdp_origin o) {
        for (fg_xdp_origin x : origins)
            if (x == o) return true;
        return false;
    };
    // The wanted entry per prefix: an override over a rules entry.
    std::map<Prefix, XdpEntry> wanted;
    for (const XdpEntry &e : owned) {
        auto [it, fresh] = wanted.emplace(e.prefix, e);
        if (!fresh && e.origin == FG_XDP_ORIGIN_override) it->second = e;
    }
    XdpReconciled r;
    std::string ignored;
    std::map<Prefix, XdpEntry> present;
    for (const XdpEntry &e : list()) present.emplace(e.prefix, e);
    for (const auto &[p, e] : present)
        if (ours(e.origin) && wanted.count(p) == 0 && remove(p, &ignored)) ++r.removed;
    for (const auto &[p, e] : wanted) {
        auto it = present.find(p);
        if (it != present.end() && it->second == e) continue;
        if (put(e, &ignored))
            ++r.added;
        else
            ++r.failed;
    }
    // An escalated source that an allow now covers is one the dataplane passes.
    const uint64_t now = monotonic_ns();
    for (const auto &[p, e] : present) {
        if (e.origin != FG_XDP_ORIGIN_escalated || wanted.count(p) != 0 || p.len == 0) continue;
        Prefix around = p;
        --around.len;
        XdpEntry cover;
        if (longest_live(masked(around), now, &cover) && cover.allow && remove(p, &ignored))
            ++r.removed;
    }
    return r;
}

bool XdpTier::add_operator(const XdpEntry &e, std::string *error) {
    XdpEntry there;
    if (find(e.prefix, &there) && dataplane_owned(there.origin)) {
        *error = format_prefix(e.prefix) + ": held by " +
                 (there.origin == FG_XDP_ORIGIN_rules ? "the rules file's " : "an override's ") +
                 (there.allow ? "allow" : "block") + " entry; change it there";
        return false;
    }
    XdpEntry x = e;
    x.origin = FG_XDP_ORIGIN_operator;
    return put(x, error);
}

bool XdpTier::add_escalated(const XdpEntry &e, uint64_t now_ns, std::string *error) {
    XdpEntry there;
    if (find(e.prefix, &there) && there.origin != FG_XDP_ORIGIN_escalated &&
        (there.expires_ns == 0 || there.expires_ns > now_ns))
        return false;
    if (longest_live(e.prefix, now_ns, &there) && there.allow) return false;
    XdpEntry x = e;
    x.origin = FG_XDP_ORIGIN_escalated;
    x.allow = false;
    return put(x, error);
}

std::vector<uint64_t> XdpTier::counters() const {
    const int cpus = libbpf_num_possible_cpus();
    std::vector<uint64_t> out(FG_XDP_COUNTER_COUNT, 0);
    if (cpus <= 0) return out;
    std::vector<fg_xdp_counters> per_cpu_all(static_cast<size_t>(cpus));
    const __u32 zero = 0;
    if (bpf_map_lookup_elem(counters_fd_, &zero, per_cpu_all.data()) != 0) return out;
    for (const fg_xdp_counters &c : per_cpu_all)
        for (unsigned i = 0; i < FG_XDP_COUNTER_COUNT; ++i) out[i] += c.n[i];
    return out;
}

}  // namespace floodgate
