#include "dataplane/core/prefix_table.h"

#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_fib6.h>
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
// the empty set). rte_fib's 4-byte next hops keep 31 bits, rte_lpm6's 21. Each family numbers
// its own sets, so that one family's prefixes never widen the other's next hops.
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
// prefix extends, which is what DIR24_8 and rte_lpm6 allocate.
//
// And how wide the next hops are: no wider than the rule set ids need, since the first level
// holds 2^24 of them (16 MiB at one byte, 64 MiB at four), and an override's rebuild holds the
// old table beside the new one. A next hop keeps 8 x bytes - 1 bits (DPDK takes one), the
// verdict 2 of them; each distinct prefix adds at most one set id, so a family of 31 prefixes
// or fewer has one-byte next hops, of 8,191 or fewer two.
//
// rte_lpm6's next hops are always 4 bytes (64 MiB), rte_fib6's TRIE's 2 or more (32 MiB), but
// the TRIE reserves for each route every tbl8 group it could need below its longest ancestor
// (or /24), whatever its siblings share: 5 for a /64 under nothing, 13 for a /128, where
// rte_lpm6 needs one per distinct stem (100,000 /128s of one /64 take 400 groups in
// rte_lpm6, 1.3 million reserved in the TRIE). So IPv6 takes whichever of the two is
// smaller for the prefixes it holds.
struct TableSize {
    uint32_t prefixes[2] = {0, 0};
    uint32_t tbl8_groups[2] = {0, 0};
    uint64_t trie_reserved_groups = 0;
    unsigned hop_bytes[2] = {4, 4};
};
unsigned hop_bytes(size_t prefixes, unsigned narrowest) {
    for (unsigned bytes = narrowest; bytes <= 2; bytes *= 2)
        if (prefixes + 1 <= size_t{1} << (8 * bytes - 1 - kVerdictBits)) return bytes;
    return 4;
}
rte_fib_dir24_8_nh_sz hop_size(unsigned bytes) {
    return bytes == 1 ? RTE_FIB_DIR24_8_1B : bytes == 2 ? RTE_FIB_DIR24_8_2B : RTE_FIB_DIR24_8_4B;
}
unsigned ceil8(unsigned bits) {
    return (bits + 7) / 8 * 8;
}
// The TRIE's reservation for one prefix: the groups from its longest ancestor's (or /24's)
// last byte to its own, as rte_fib6_add counts them (at most that: a sibling added before
// can make it 0).
uint64_t trie_groups(const Merged &m, const std::set<std::pair<unsigned, IpAddr>> &shorter,
                     const std::set<unsigned> &lengths) {
    if (m.prefix.len <= 24) return 0;
    unsigned parent = 24;
    for (auto len = lengths.rbegin(); len != lengths.rend(); ++len) {
        if (*len >= m.prefix.len || *len <= 24) continue;
        IpAddr stem = m.prefix.addr;
        mask_addr(&stem, *len);
        if (shorter.count({*len, stem}) != 0) {
            parent = *len;
            break;
        }
    }
    return (ceil8(m.prefix.len) - ceil8(parent)) / 8;
}
TableSize table_size(const std::vector<Merged> &merged) {
    TableSize n;
    std::set<std::pair<unsigned, IpAddr>> stems[2], ipv6_prefixes;
    std::set<unsigned> ipv6_lengths;
    for (const Merged &m : merged) {
        const unsigned f = m.prefix.family == 6;
        ++n.prefixes[f];
        for (unsigned stem_bits = 24; stem_bits < m.prefix.len; stem_bits += 8) {
            IpAddr stem = m.prefix.addr;
            mask_addr(&stem, stem_bits);
            stems[f].insert({stem_bits, stem});
            if (f == 0) break;  // DIR24_8 has one level of tbl8
        }
        if (f == 1 && m.prefix.len > 0) {  // shortest first: every ancestor is already in
            n.trie_reserved_groups += trie_groups(m, ipv6_prefixes, ipv6_lengths);
            ipv6_prefixes.insert({m.prefix.len, m.prefix.addr});
            ipv6_lengths.insert(m.prefix.len);
        }
    }
    n.hop_bytes[0] = hop_bytes(n.prefixes[0], 1);
    n.hop_bytes[1] = hop_bytes(n.prefixes[1], 2);
    for (unsigned f = 0; f < 2; ++f)
        n.tbl8_groups[f] = std::max<uint32_t>(static_cast<uint32_t>(stems[f].size()) + 16, 256);
    // DIR24_8 keeps a tbl8 group's index in a next hop: one byte indexes 127 groups at most,
    // and its 31 prefixes at most need 31 of them.
    if (n.hop_bytes[0] == 1) n.tbl8_groups[0] = static_cast<uint32_t>(stems[0].size()) + 16;
    // So does the TRIE: two bytes index 32,767 groups.
    if (n.hop_bytes[1] == 2 && n.trie_reserved_groups + 16 >= 1u << 15) n.hop_bytes[1] = 4;
    return n;
}

// DPDK memory of each IPv6 table, first levels and tbl8 groups (their rules' bookkeeping is
// small beside them).
uint64_t trie_bytes(const TableSize &n) {
    return (uint64_t{n.hop_bytes[1]} << 24) + (n.trie_reserved_groups + 16) * 256 * n.hop_bytes[1];
}
uint64_t lpm6_bytes(const TableSize &n) {
    return (uint64_t{4} << 24) + uint64_t{n.tbl8_groups[1]} * 256 * 4;
}
bool ipv6_in_trie(const TableSize &n) {
    return trie_bytes(n) < lpm6_bytes(n);
}
rte_fib_trie_nh_sz trie_hop_size(unsigned bytes) {
    return bytes == 2 ? RTE_FIB6_TRIE_2B : RTE_FIB6_TRIE_4B;
}

// DPDK object names are global to the process; a counter keeps every table apart.
std::string unique_name(const char *stem) {
    static std::atomic<unsigned> counter{0};
    return std::string(stem) + std::to_string(counter++);
}

// The IPv6 table, empty, in whichever kind the prefixes take less memory in (a miss answers
// miss6).
bool create_ipv6_table(const TableSize &size, uint64_t miss6, int socket_id, rte_fib6 **fib6,
                       rte_lpm6 **lpm6, std::string *error) {
    if (ipv6_in_trie(size)) {
        rte_fib6_conf cfg{};
        cfg.type = RTE_FIB6_TRIE;
        cfg.default_nh = miss6;
        cfg.max_routes = static_cast<int>(size.prefixes[1]) + 1;
        cfg.trie.nh_sz = trie_hop_size(size.hop_bytes[1]);
        cfg.trie.num_tbl8 = static_cast<uint32_t>(size.trie_reserved_groups) + 16;
        *fib6 = rte_fib6_create(unique_name("fg_fib6_").c_str(), socket_id, &cfg);
    } else {
        rte_lpm6_config cfg{};
        cfg.max_rules = size.prefixes[1] + 1;
        cfg.number_tbl8s = size.tbl8_groups[1];
        *lpm6 = rte_lpm6_create(unique_name("fg_lpm6_").c_str(), socket_id, &cfg);
    }
    if (*fib6 != nullptr || *lpm6 != nullptr) return true;
    *error = std::string("cannot create an IPv6 prefix table: ") + rte_strerror(rte_errno);
    return false;
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
        cfg.dir24_8.nh_sz = hop_size(size.hop_bytes[0]);
        cfg.dir24_8.num_tbl8 = size.tbl8_groups[0];
        fib4_ = rte_fib_create(unique_name("fg_fib4_").c_str(), socket_id, &cfg);
        if (fib4_ == nullptr) {
            *error = std::string("cannot create an IPv4 prefix table: ") + rte_strerror(rte_errno);
            return false;
        }
    }

    sets_[0].assign(1, RuleBits{});
    sets_[1].assign(1, RuleBits{});
    std::map<RuleBits, uint32_t> ids[2] = {{{RuleBits{}, 0}}, {{RuleBits{}, 0}}};
    for (const Merged &m : merged) {
        const unsigned f = m.prefix.family == 6;
        // The longest ancestor already in the table (every shorter prefix is), or a miss:
        // inherited unless this prefix says otherwise.
        const PrefixClass parent = classify(m.prefix.family, m.prefix.addr.data());
        const PrefixVerdict verdict = m.verdict != PrefixVerdict::none ? m.verdict : parent.verdict;
        RuleBits rules = *parent.rules;
        for (unsigned w = 0; w < std::size(rules.word); ++w) rules.word[w] |= m.rules.word[w];
        auto [it, fresh] = ids[f].emplace(rules, static_cast<uint32_t>(sets_[f].size()));
        if (fresh) {
            if (sets_[f].size() >= kMaxSetIds) {
                *error = "more than " + std::to_string(kMaxSetIds) +
                         " distinct combinations of rules' prefix lists";
                return false;
            }
            sets_[f].push_back(rules);
        }
        const uint64_t hop = encode(verdict, it->second);
        if (f == 1 && m.prefix.len == 0) {  // rte_lpm6 has no depth 0
            miss6_ = hop;
            continue;
        }
        // Made at its first prefix, once an IPv6 /0 (the shortest) has set what a miss is.
        if (f == 1 && fib6_ == nullptr && lpm6_ == nullptr &&
            !create_ipv6_table(size, miss6_, socket_id, &fib6_, &lpm6_, error))
            return false;
        int rc;
        if (f == 0)
            rc = rte_fib_add(fib4_, ipv4_host_order(m.prefix.addr.data()), m.prefix.len, hop);
        else if (fib6_ != nullptr)
            rc = rte_fib6_add(fib6_, m.prefix.addr.data(), m.prefix.len, hop);
        else
            rc =
                rte_lpm6_add(lpm6_, m.prefix.addr.data(), m.prefix.len, static_cast<uint32_t>(hop));
        if (rc < 0) {
            *error = "cannot add prefix " + format_prefix(m.prefix) + ": " + rte_strerror(-rc);
            return false;
        }
    }
    return true;
}

PrefixTable::~PrefixTable() {
    rte_fib_free(fib4_);
    rte_fib6_free(fib6_);
    rte_lpm6_free(lpm6_);
}

void PrefixTable::classify(uint8_t family, const uint8_t *const *addrs, unsigned n,
                           PrefixClass *out) const {
    uint64_t hops[kMaxBulk];
    if (family == 4 && fib4_ != nullptr) {
        uint32_t ips[kMaxBulk];
        for (unsigned k = 0; k < n; ++k) ips[k] = ipv4_host_order(addrs[k]);
        rte_fib_lookup_bulk(fib4_, ips, hops, static_cast<int>(n));
    } else if (family == 6 && (fib6_ != nullptr || lpm6_ != nullptr)) {
        uint8_t ips[kMaxBulk][RTE_LPM6_IPV6_ADDR_SIZE];
        for (unsigned k = 0; k < n; ++k) std::memcpy(ips[k], addrs[k], RTE_LPM6_IPV6_ADDR_SIZE);
        if (fib6_ != nullptr) {
            rte_fib6_lookup_bulk(fib6_, ips, hops, static_cast<int>(n));
        } else {
            int32_t found[kMaxBulk];
            rte_lpm6_lookup_bulk_func(lpm6_, ips, found, n);
            for (unsigned k = 0; k < n; ++k)
                hops[k] = found[k] >= 0 ? static_cast<uint64_t>(found[k]) : miss6_;
        }
    } else {
        std::fill(hops, hops + n, family == 6 ? miss6_ : encode(PrefixVerdict::none, 0));
    }
    const std::vector<RuleBits> &sets = sets_[family == 6];
    for (unsigned k = 0; k < n; ++k) out[k] = {verdict_of(hops[k]), &sets[set_of(hops[k])]};
}

uint64_t PrefixTable::dpdk_memory_bytes(const std::vector<Entry> &entries, size_t extra) {
    TableSize size = table_size(merge(entries));
    // Each extra prefix as long as it can be: one tbl8 group (IPv4) or 13 (IPv6).
    for (unsigned f = 0; f < 2; ++f) {
        size.prefixes[f] += static_cast<uint32_t>(extra);
        size.tbl8_groups[f] += static_cast<uint32_t>(extra) * (f == 0 ? 1 : 13);
        size.hop_bytes[f] = std::max(size.hop_bytes[f], hop_bytes(size.prefixes[f], f + 1));
    }
    size.trie_reserved_groups += uint64_t{extra} * 13;
    if (size.hop_bytes[1] == 2 && size.trie_reserved_groups + 16 >= 1u << 15) size.hop_bytes[1] = 4;
    // The first levels, tbl8 groups, the RIB's nodes, and a margin for allocator overhead.
    uint64_t bytes = 0;
    if (size.prefixes[0] > 0)
        bytes += (uint64_t{size.hop_bytes[0]} << 24) +
                 uint64_t{size.tbl8_groups[0]} * 256 * size.hop_bytes[0];
    if (size.prefixes[1] > 0) bytes += std::min(trie_bytes(size), lpm6_bytes(size));
    for (unsigned f = 0; f < 2; ++f)
        if (size.prefixes[f] > 0) bytes += uint64_t{size.prefixes[f]} * 128 + (uint64_t{4} << 20);
    return bytes;
}

}  // namespace floodgate
