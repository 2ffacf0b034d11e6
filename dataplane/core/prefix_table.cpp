#include "dataplane/core/prefix_table.h"

#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_lpm6.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace floodgate {

namespace {

// A next hop: the verdict in the low 2 bits, the rule set's id above (a miss is 0: no verdict,
// the empty set). rte_fib's 4-byte next hops keep 31 bits, rte_lpm6's 21.
constexpr unsigned kVerdictBits = 2;
constexpr uint32_t kMaxSetIds = 1u << (21 - kVerdictBits);

uint64_t encode(PrefixVerdict v, uint32_t set_id) {
    return static_cast<uint64_t>(v) | uint64_t{set_id} << kVerdictBits;
}
PrefixVerdict verdict_of(uint64_t hop) {
    return static_cast<PrefixVerdict>(hop & ((1u << kVerdictBits) - 1));
}
uint32_t set_of(uint64_t hop) {
    return static_cast<uint32_t>(hop >> kVerdictBits);
}

uint32_t ipv4_host_order(const uint8_t *addr) {
    return uint32_t{addr[0]} << 24 | uint32_t{addr[1]} << 16 | uint32_t{addr[2]} << 8 | addr[3];
}

// Every distinct prefix once, with what its own entries say, shortest first (for the
// inheritance).
struct Merged {
    Prefix prefix;
    PrefixVerdict verdict = PrefixVerdict::none;
    RuleBits rules;
};
std::vector<Merged> merge(const std::vector<PrefixTable::Entry> &entries) {
    std::vector<Merged> out;
    std::map<std::tuple<uint8_t, uint8_t, IpAddr>, size_t> where;
    for (const PrefixTable::Entry &e : entries) {
        auto [it, fresh] = where.emplace(
            std::make_tuple(e.prefix.family, e.prefix.len, e.prefix.addr), out.size());
        if (fresh) out.push_back({e.prefix, PrefixVerdict::none, {}});
        Merged &m = out[it->second];
        if (e.verdict != PrefixVerdict::none) m.verdict = e.verdict;
        if (e.rule >= 0) m.rules.set(static_cast<unsigned>(e.rule));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Merged &a, const Merged &b) { return a.prefix.len < b.prefix.len; });
    return out;
}

// What the tables need per family: how many prefixes, and how many tbl8 groups (256 next hops
// each): one for each distinct 24-bit (then, for IPv6, each further 8-bit) stem that a longer
// prefix extends, which is what DIR24_8 and rte_lpm6 allocate. (rte_fib6's TRIE reserves
// instead, per route, every level a route could need, whatever its siblings share: 5 groups
// for each /64 and 13 for each /128, so 60 /64s of one /48 ran out of the groups this counts;
// hence rte_lpm6 for IPv6.)
//
// And how wide the IPv4 table's next hops are: no wider than the rule set ids need, since
// DIR24_8's tbl24 holds 2^24 of them, 16 MiB at one byte and 64 MiB at four, and an override's
// rebuild holds the old table beside the new one. A next hop keeps 8 x bytes - 1 bits (DPDK
// takes one), the verdict 2 of them; each distinct prefix adds at most one set id, so a table
// of 31 prefixes or fewer (both families) has one-byte next hops, of 8,191 or fewer two.
struct TableSize {
    uint32_t prefixes[2] = {0, 0};
    uint32_t tbl8_groups[2] = {0, 0};
    unsigned ipv4_hop_bytes = 4;
};
unsigned ipv4_hop_bytes(size_t prefixes) {
    for (const unsigned bytes : {1u, 2u})
        if (prefixes + 1 <= size_t{1} << (8 * bytes - 1 - kVerdictBits)) return bytes;
    return 4;
}
rte_fib_dir24_8_nh_sz hop_size(unsigned bytes) {
    return bytes == 1 ? RTE_FIB_DIR24_8_1B : bytes == 2 ? RTE_FIB_DIR24_8_2B : RTE_FIB_DIR24_8_4B;
}
TableSize table_size(const std::vector<Merged> &merged) {
    TableSize n;
    n.ipv4_hop_bytes = ipv4_hop_bytes(merged.size());
    std::set<std::pair<unsigned, IpAddr>> stems[2];
    for (const Merged &m : merged) {
        const unsigned f = m.prefix.family == 6;
        ++n.prefixes[f];
        for (unsigned stem_bits = 24; stem_bits < m.prefix.len; stem_bits += 8) {
            IpAddr stem = m.prefix.addr;
            mask_addr(&stem, stem_bits);
            stems[f].insert({stem_bits, stem});
            if (f == 0) break;  // DIR24_8 has one level of tbl8
        }
    }
    for (unsigned f = 0; f < 2; ++f)
        n.tbl8_groups[f] = std::max<uint32_t>(static_cast<uint32_t>(stems[f].size()) + 16, 256);
    // DIR24_8 keeps a tbl8 group's index in a next hop: one byte indexes 127 groups at most,
    // and its 31 prefixes at most need 31 of them.
    if (n.ipv4_hop_bytes == 1) n.tbl8_groups[0] = static_cast<uint32_t>(stems[0].size()) + 16;
    return n;
}

// DPDK object names are global to the process; a counter keeps every table apart.
std::string unique_name(const char *stem) {
    static std::atomic<unsigned> counter{0};
    return std::string(stem) + std::to_string(counter++);
}

}  // namespace

bool RuleBits::operator<(const RuleBits &o) const {
    return std::lexicographical_compare(std::begin(word), std::end(word), std::begin(o.word),
                                        std::end(o.word));
}

bool PrefixTable::build(const std::vector<Entry> &entries, int socket_id, std::string *error) {
    const std::vector<Merged> merged = merge(entries);
    const TableSize size = table_size(merged);
    if (size.prefixes[0] > 0) {
        rte_fib_conf cfg{};
        cfg.type = RTE_FIB_DIR24_8;
        cfg.default_nh = encode(PrefixVerdict::none, 0);
        cfg.max_routes = static_cast<int>(size.prefixes[0]) + 1;
        cfg.dir24_8.nh_sz = hop_size(size.ipv4_hop_bytes);
        cfg.dir24_8.num_tbl8 = size.tbl8_groups[0];
        fib4_ = rte_fib_create(unique_name("fg_fib4_").c_str(), socket_id, &cfg);
        if (fib4_ == nullptr) {
            *error = std::string("cannot create an IPv4 prefix table: ") + rte_strerror(rte_errno);
            return false;
        }
    }
    if (size.prefixes[1] > 0) {
        rte_lpm6_config cfg{};
        cfg.max_rules = size.prefixes[1] + 1;
        cfg.number_tbl8s = size.tbl8_groups[1];
        lpm6_ = rte_lpm6_create(unique_name("fg_lpm6_").c_str(), socket_id, &cfg);
        if (lpm6_ == nullptr) {
            *error = std::string("cannot create an IPv6 prefix table: ") + rte_strerror(rte_errno);
            return false;
        }
    }

    sets_.assign(1, RuleBits{});
    std::map<RuleBits, uint32_t> ids = {{RuleBits{}, 0}};
    for (const Merged &m : merged) {
        // The longest ancestor already in the table (every shorter prefix is), or a miss:
        // inherited unless this prefix says otherwise.
        const PrefixClass parent = classify(m.prefix.family, m.prefix.addr.data());
        const PrefixVerdict verdict = m.verdict != PrefixVerdict::none ? m.verdict : parent.verdict;
        RuleBits rules = *parent.rules;
        for (unsigned w = 0; w < std::size(rules.word); ++w) rules.word[w] |= m.rules.word[w];
        auto [it, fresh] = ids.emplace(rules, static_cast<uint32_t>(sets_.size()));
        if (fresh) {
            if (sets_.size() >= kMaxSetIds) {
                *error = "more than " + std::to_string(kMaxSetIds) +
                         " distinct combinations of rules' prefix lists";
                return false;
            }
            sets_.push_back(rules);
        }
        const uint64_t hop = encode(verdict, it->second);
        if (m.prefix.family == 6 && m.prefix.len == 0) {  // rte_lpm6 has no depth 0
            miss6_ = hop;
            continue;
        }
        const int rc =
            m.prefix.family == 4
                ? rte_fib_add(fib4_, ipv4_host_order(m.prefix.addr.data()), m.prefix.len, hop)
                : rte_lpm6_add(lpm6_, m.prefix.addr.data(), m.prefix.len,
                               static_cast<uint32_t>(hop));
        if (rc < 0) {
            *error = "cannot add prefix " + format_prefix(m.prefix) + ": " + rte_strerror(-rc);
            return false;
        }
    }
    return true;
}

PrefixTable::~PrefixTable() {
    rte_fib_free(fib4_);
    rte_lpm6_free(lpm6_);
}

void PrefixTable::classify(uint8_t family, const uint8_t *const *addrs, unsigned n,
                           PrefixClass *out) const {
    uint64_t hops[kMaxBulk];
    if (family == 4 && fib4_ != nullptr) {
        uint32_t ips[kMaxBulk];
        for (unsigned k = 0; k < n; ++k) ips[k] = ipv4_host_order(addrs[k]);
        rte_fib_lookup_bulk(fib4_, ips, hops, static_cast<int>(n));
    } else if (family == 6 && lpm6_ != nullptr) {
        uint8_t ips[kMaxBulk][RTE_LPM6_IPV6_ADDR_SIZE];
        int32_t found[kMaxBulk];
        for (unsigned k = 0; k < n; ++k) std::memcpy(ips[k], addrs[k], RTE_LPM6_IPV6_ADDR_SIZE);
        rte_lpm6_lookup_bulk_func(lpm6_, ips, found, n);
        for (unsigned k = 0; k < n; ++k)
            hops[k] = found[k] >= 0 ? static_cast<uint64_t>(found[k]) : miss6_;
    } else {
        std::fill(hops, hops + n, family == 6 ? miss6_ : encode(PrefixVerdict::none, 0));
    }
    for (unsigned k = 0; k < n; ++k) out[k] = {verdict_of(hops[k]), &sets_[set_of(hops[k])]};
}

uint64_t PrefixTable::dpdk_memory_bytes(const std::vector<Entry> &entries, size_t extra) {
    const std::vector<Merged> merged = merge(entries);
    TableSize size = table_size(merged);
    uint64_t bytes = 0;
    for (unsigned f = 0; f < 2; ++f) {
        // Each extra prefix as long as it can be: one tbl8 group (IPv4) or 13 (IPv6).
        size.prefixes[f] += static_cast<uint32_t>(extra);
        size.tbl8_groups[f] += static_cast<uint32_t>(extra) * (f == 0 ? 1 : 13);
        if (size.prefixes[f] == 0) continue;
        // tbl24 (2^24 next hops), tbl8 groups of 256 of them, the RIB's nodes, and a margin for
        // allocator overhead. rte_lpm6's next hops are 4 bytes.
        const uint64_t hop = f == 0 ? ipv4_hop_bytes(merged.size() + 2 * extra) : 4;
        bytes += (hop << 24) + uint64_t{size.tbl8_groups[f]} * 256 * hop +
                 uint64_t{size.prefixes[f]} * 128 + (uint64_t{4} << 20);
    }
    return bytes;
}

}  // namespace floodgate
