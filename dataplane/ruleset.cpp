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

    size_t n4 = 0, n6 = 0;
    for (const auto *list : {&config.allow, &config.block})
        for (const Prefix &p : *list) (p.family == 4 ? n4 : n6)++;

    if (n4 > 0) {
        rte_lpm_config cfg{};
        cfg.max_rules = static_cast<uint32_t>(n4);
        cfg.number_tbl8s = static_cast<uint32_t>(n4 < 256 ? 256 : n4);
        rs->lpm4_ = rte_lpm_create(unique_name("fg_lpm4_").c_str(), socket_id, &cfg);
        if (rs->lpm4_ == nullptr) {
            *error = std::string("cannot create IPv4 prefix table: ") + rte_strerror(rte_errno);
            return nullptr;
        }
    }
    if (n6 > 0) {
        rte_lpm6_config cfg{};
        cfg.max_rules = static_cast<uint32_t>(n6);
        cfg.number_tbl8s = static_cast<uint32_t>(n6 * 16 < 256 ? 256 : n6 * 16);
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
