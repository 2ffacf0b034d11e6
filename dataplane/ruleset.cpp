#include "dataplane/ruleset.h"

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <atomic>
#include <cstring>

namespace floodgate {

namespace {
constexpr uint32_t kNextHopAllow = 1;
constexpr uint32_t kNextHopBlock = 2;

uint32_t ipv4_host_order(const uint8_t *addr) {
    return uint32_t{addr[0]} << 24 | uint32_t{addr[1]} << 16 | uint32_t{addr[2]} << 8 | addr[3];
}

// What the prefix tables of a config need: per family, how many prefixes and how many tbl8
// groups (256 next hops each) their bits below /24 take at most.
struct PrefixTableSize {
    uint32_t prefixes[2] = {0, 0};
    uint32_t tbl8_groups[2] = {0, 0};
};
PrefixTableSize prefix_table_size(const Config &config) {
    PrefixTableSize n;
    for (const auto *list : {&config.allow, &config.block})
        for (const Prefix &p : *list) {
            unsigned f = p.family == 6;
            ++n.prefixes[f];
            // rte_lpm: one group per prefix longer than /24; rte_lpm6: one per byte past /24.
            if (p.len > 24) n.tbl8_groups[f] += f == 0 ? 1 : (p.len - 24 + 7) / 8;
        }
    for (auto &g : n.tbl8_groups) g = g < 256 ? 256 : g;
    return n;
}

// DPDK object names are global to the process; a counter keeps every ruleset's tables apart.
std::string unique_name(const char *stem) {
    static std::atomic<unsigned> counter{0};
    return std::string(stem) + std::to_string(counter++);
}
}  // namespace

std::unique_ptr<RuleSet> RuleSet::build(const Config &config, int socket_id, std::string *error) {
    std::unique_ptr<RuleSet> rs(new RuleSet());
    rs->config_ = config;
    for (size_t i = 0; i < config.rules.size(); ++i)
        rs->rules_.push_back(compile_rule(config.rules[i], static_cast<uint16_t>(i)));

    const PrefixTableSize size = prefix_table_size(config);
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

    auto add = [&](const Prefix &p, uint32_t next_hop) -> bool {
        PrefixVerdict v = next_hop == kNextHopAllow ? PrefixVerdict::allow : PrefixVerdict::block;
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
    for (const Prefix &p : config.allow)
        if (!add(p, kNextHopAllow)) return nullptr;
    for (const Prefix &p : config.block)
        if (!add(p, kNextHopBlock)) return nullptr;
    return rs;
}

uint64_t RuleSet::dpdk_memory_bytes(const Config &config) {
    const PrefixTableSize size = prefix_table_size(config);
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
