#include "dataplane/ruleset.h"

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <atomic>
#include <cstring>
#include <map>

namespace floodgate {

namespace {
constexpr uint32_t kNextHopAllow = 1;
constexpr uint32_t kNextHopBlock = 2;

uint32_t ipv4_host_order(const uint8_t *addr) {
    return uint32_t{addr[0]} << 24 | uint32_t{addr[1]} << 16 | uint32_t{addr[2]} << 8 | addr[3];
}

// The allow/block prefixes a ruleset enforces: the file's lists, then the overrides, which
// replace a file entry of the same prefix.
struct PrefixEntry {
    Prefix prefix;
    PrefixVerdict verdict;
};
std::vector<PrefixEntry> effective_prefixes(const Config &config,
                                            const std::vector<PrefixOverride> &overrides) {
    std::vector<PrefixEntry> out;
    std::map<std::string, size_t> where;
    auto put = [&](const Prefix &p, PrefixVerdict v) {
        auto [it, fresh] = where.emplace(format_prefix(p), out.size());
        if (fresh)
            out.push_back({p, v});
        else
            out[it->second].verdict = v;
    };
    for (const Prefix &p : config.allow) put(p, PrefixVerdict::allow);
    for (const Prefix &p : config.block) put(p, PrefixVerdict::block);
    for (const PrefixOverride &o : overrides) put(o.prefix, o.verdict);
    return out;
}

// What the prefix tables need: per family, how many prefixes and how many tbl8 groups (256
// next hops each) their bits below /24 take at most.
struct PrefixTableSize {
    uint32_t prefixes[2] = {0, 0};
    uint32_t tbl8_groups[2] = {0, 0};
};
void count_prefix(const Prefix &p, PrefixTableSize *n) {
    unsigned f = p.family == 6;
    ++n->prefixes[f];
    // rte_lpm: one group per prefix longer than /24; rte_lpm6: one per byte past /24.
    if (p.len > 24) n->tbl8_groups[f] += f == 0 ? 1 : (p.len - 24 + 7) / 8;
}
PrefixTableSize prefix_table_size(const std::vector<PrefixEntry> &prefixes) {
    PrefixTableSize n;
    for (const PrefixEntry &e : prefixes) count_prefix(e.prefix, &n);
    for (auto &g : n.tbl8_groups) g = g < 256 ? 256 : g;
    return n;
}

// DPDK object names are global to the process; a counter keeps every ruleset's tables apart.
std::string unique_name(const char *stem) {
    static std::atomic<unsigned> counter{0};
    return std::string(stem) + std::to_string(counter++);
}
}  // namespace

std::unique_ptr<RuleSet> RuleSet::build(const Config &config, const RuleSetOptions &options,
                                        std::string *error) {
    // Key ids are never reused, so TATs a removed rule left in the tables cannot be found by
    // any later rule; 2^24 of them fit in LimitKey::tag.
    static std::atomic<uint32_t> next_key_id{0};
    constexpr uint32_t kMaxKeyIds = 1u << 24;
    static std::atomic<uint64_t> next_serial{1};

    std::unique_ptr<RuleSet> rs(new RuleSet());
    rs->config_ = config;
    rs->overrides_ = options.overrides;
    rs->version_ = options.version;
    rs->serial_ = next_serial.fetch_add(1);
    rs->cores_ = options.cores;
    for (size_t i = 0; i < config.rules.size(); ++i) {
        const Rule &r = config.rules[i];
        std::shared_ptr<RuleState> state;
        if (options.previous != nullptr && options.previous->cores_ == options.cores) {
            const CompiledRule *old = options.previous->find_rule(r.name);
            if (old != nullptr && old->key_len[0] == r.key_ipv4_len &&
                old->key_len[1] == r.key_ipv6_len)
                state = options.previous->states_[old->index];
        }
        rs->kept_state_.push_back(state != nullptr);
        if (state == nullptr) {
            uint32_t id = next_key_id.fetch_add(1);
            if (id >= kMaxKeyIds) {
                *error = "out of rule key ids (2^24 rules created since start): restart floodgate";
                return nullptr;
            }
            state = std::make_shared<RuleState>(options.cores, id);
        }
        rs->rules_.push_back(compile_rule(r, static_cast<uint16_t>(i), state.get()));
        rs->states_.push_back(std::move(state));
    }

    const std::vector<PrefixEntry> prefixes = effective_prefixes(config, options.overrides);
    const int socket_id = options.socket_id;
    const PrefixTableSize size = prefix_table_size(prefixes);
    if (size.prefixes[0] > 0) {
        rte_lpm_config cfg{};
        cfg.max_rules = size.prefixes[0];
        cfg.number_tbl8s = size.tbl8_groups[0];
        rs->lpm4_ = rte_lpm_create(unique_name("fg_lpm4_").c_str(), socket_id, &cfg);
        if (rs->lpm4_ == nullptr) {
            *error = std::string("cannot create IPv4 prefix table: ") + rte_strerror(rte_errno);
            return nullptr;
        }
    }
    if (size.prefixes[1] > 0) {
        rte_lpm6_config cfg{};
        cfg.max_rules = size.prefixes[1];
        cfg.number_tbl8s = size.tbl8_groups[1];
        rs->lpm6_ = rte_lpm6_create(unique_name("fg_lpm6_").c_str(), socket_id, &cfg);
        if (rs->lpm6_ == nullptr) {
            *error = std::string("cannot create IPv6 prefix table: ") + rte_strerror(rte_errno);
            return nullptr;
        }
    }

    auto add = [&](const Prefix &p, PrefixVerdict v) -> bool {
        uint32_t next_hop = v == PrefixVerdict::allow ? kNextHopAllow : kNextHopBlock;
        if (p.len == 0) {
            rs->miss_verdict_[p.family == 6] = v;
            return true;
        }
        int rc = p.family == 4
                     ? rte_lpm_add(rs->lpm4_, ipv4_host_order(p.addr.data()), p.len, next_hop)
                     : rte_lpm6_add(rs->lpm6_, p.addr.data(), p.len, next_hop);
        if (rc < 0) {
            *error = "cannot add prefix " + format_prefix(p) + ": " + rte_strerror(-rc);
            return false;
        }
        return true;
    };
    for (const PrefixEntry &e : prefixes)
        if (!add(e.prefix, e.verdict)) return nullptr;
    return rs;
}

const CompiledRule *RuleSet::find_rule(const std::string &name) const {
    for (const CompiledRule &r : rules_)
        if (r.name == name) return &r;
    return nullptr;
}

uint64_t RuleSet::dpdk_memory_bytes(const Config &config, size_t overrides) {
    PrefixTableSize size = prefix_table_size(effective_prefixes(config, {}));
    // Overrides of either family, each as long as it can be.
    for (unsigned f = 0; f < 2; ++f) {
        size.prefixes[f] += static_cast<uint32_t>(overrides);
        size.tbl8_groups[f] += static_cast<uint32_t>(overrides) * (f == 0 ? 1 : 13);
    }
    uint64_t bytes = 0;
    for (unsigned f = 0; f < 2; ++f) {
        if (size.prefixes[f] == 0) continue;
        // tbl24 (2^24 entries of 4 bytes), tbl8 groups of 256 entries of 4 bytes, the rules
        // (rte_lpm6 also keeps them in a hash), and a margin for allocator overhead.
        bytes += (uint64_t{4} << 24) + uint64_t{size.tbl8_groups[f]} * 1024 +
                 uint64_t{size.prefixes[f]} * 64 + (uint64_t{4} << 20);
    }
    return bytes;
}

RuleSet::~RuleSet() {
    rte_lpm_free(lpm4_);
    rte_lpm6_free(lpm6_);
}

PrefixVerdict RuleSet::classify_source(const PacketInfo &p) const {
    uint32_t next_hop = 0;
    int rc = -ENOENT;
    if (p.family == 4 && lpm4_ != nullptr)
        rc = rte_lpm_lookup(lpm4_, ipv4_host_order(p.src), &next_hop);
    else if (p.family == 6 && lpm6_ != nullptr)
        rc = rte_lpm6_lookup(lpm6_, p.src, &next_hop);
    if (rc != 0) return miss_verdict_[p.family == 6];
    return next_hop == kNextHopAllow ? PrefixVerdict::allow : PrefixVerdict::block;
}

}  // namespace floodgate
