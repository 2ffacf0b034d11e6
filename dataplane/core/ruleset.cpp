#include "dataplane/core/ruleset.h"

#include "dataplane/patterns/payload_database.h"

#include <rte_malloc.h>

#include <algorithm>
#include <atomic>

namespace floodgate {

namespace {

// The source table's entries: the file's allow and block lists, then the overrides (which
// replace a file entry of the same prefix), then every rule's src list.
std::vector<PrefixTable::Entry> source_entries(const Config &config,
                                               const std::vector<PrefixOverride> &overrides) {
    std::vector<PrefixTable::Entry> out;
    for (const Prefix &p : config.allow) out.push_back({p, PrefixVerdict::allow, -1});
    for (const Prefix &p : config.block) out.push_back({p, PrefixVerdict::block, -1});
    for (const PrefixOverride &o : overrides) out.push_back({o.prefix, o.verdict, -1});
    for (size_t i = 0; i < config.rules.size(); ++i)
        for (const Prefix &p : config.rules[i].match.src)
            out.push_back({p, PrefixVerdict::none, static_cast<int>(i)});
    return out;
}

std::vector<PrefixTable::Entry> destination_entries(const Config &config) {
    std::vector<PrefixTable::Entry> out;
    for (size_t i = 0; i < config.rules.size(); ++i)
        for (const Prefix &p : config.rules[i].match.dst)
            out.push_back({p, PrefixVerdict::none, static_cast<int>(i)});
    return out;
}

// Whether two rules keep their limits per the same keys (then the TATs carry over).
bool same_key(const CompiledRule &a, const CompiledRule &b) {
    return a.key_kind == b.key_kind && a.key_len[0] == b.key_len[0] &&
           a.key_len[1] == b.key_len[1] &&
           (a.key_kind != KeyKind::src_dst ||
            (std::equal(a.dst_mask_hi, a.dst_mask_hi + 2, b.dst_mask_hi) &&
             std::equal(a.dst_mask_lo, a.dst_mask_lo + 2, b.dst_mask_lo)));
}

}  // namespace

const RuleBits RuleSet::kNoRules{};

std::unique_ptr<RuleSet> RuleSet::build(const Config &config, const RuleSetOptions &options,
                                        std::string *error) {
    // Key ids are never reused, so TATs a removed rule left in the tables cannot be found by
    // any later rule; 2^24 of them fit in LimitKey::tag.
    static std::atomic<uint32_t> next_key_id{0};
    constexpr uint32_t kMaxKeyIds = 1u << 24;
    static std::atomic<uint64_t> next_serial{1};

    std::unique_ptr<RuleSet> rs(new RuleSet());
    rs->config_ = config;
    // Payload patterns: compiled when validated; a Config made in code is compiled here. Then
    // one scratch space per core, big enough for every rule's database.
    std::vector<const PayloadDatabase *> databases;
    for (size_t i = 0; i < rs->config_.rules.size(); ++i) {
        PayloadMatch &p = rs->config_.rules[i].match.payload;
        if (!p.present()) continue;
        if (!p.compiled) {
            int bad = -1;
            p.compiled = PayloadDatabase::compile(p.patterns, error, &bad);
            if (!p.compiled) {
                *error = "rules[" + std::to_string(i) + "].match.payload" +
                         (bad >= 0 ? ".patterns[" + std::to_string(bad) + "]" : "") + ": " + *error;
                return nullptr;
            }
        }
        databases.push_back(p.compiled.get());
    }
    rs->payload_scratch_ = PayloadScratch::create(databases, options.cores, error);
    if (!rs->payload_scratch_) return nullptr;
    rs->overrides_ = options.overrides;
    rs->version_ = options.version;
    rs->serial_ = next_serial.fetch_add(1);
    rs->cores_ = options.cores;
    rs->steering_ = options.steering;
    const Steering &steer = options.steering;
    for (size_t i = 0; i < rs->config_.rules.size(); ++i) {
        const Rule &r = rs->config_.rules[i];
        std::shared_ptr<RuleState> state;
        bool same_limit = false;  // and the same limit: an adaptive rule keeps what it learned
        if (options.previous != nullptr && options.previous->cores_ == options.cores) {
            const CompiledRule *old = options.previous->find_rule(r.name);
            if (old != nullptr && same_key(*old, compile_rule(r, 0)) &&
                limit_state_compatible(options.previous->config_.rules[old->index], r)) {
                state = options.previous->states_[old->index];
                const Rule &o = options.previous->config_.rules[old->index];
                same_limit = o.rate_count == r.rate_count && o.rate_period_ns == r.rate_period_ns &&
                             o.burst_pkts == r.burst_pkts && o.adaptive == r.adaptive;
            }
        }
        rs->kept_state_.push_back(state != nullptr);
        if (state == nullptr) {
            uint32_t id = next_key_id.fetch_add(1);
            if (id >= kMaxKeyIds) {
                *error = "out of rule key ids (2^24 rules created since start): restart floodgate";
                return nullptr;
            }
            state = std::make_shared<RuleState>(options.cores, id);
            if (options.exact_keys)
                for (RuleCoreState &core : state->per_core) core.keys.keep_exact();
        }
        rs->rules_.push_back(compile_rule(r, static_cast<uint16_t>(i), state.get()));
        if (r.adaptive.enabled) {
            rs->adaptive_rules_.push_back(static_cast<uint16_t>(i));
            if (!same_limit || state->adaptive.rate() == 0)
                state->adaptive.word.store(
                    adaptive_word(rs->rules_.back().adaptive_initial_milli, 0),
                    std::memory_order_relaxed);
        }
        if (r.key_kind == KeyKind::src || r.key_kind == KeyKind::src_dst)
            steer.published(r.key_ipv4_len, r.key_ipv6_len, rs->rules_.back().published);
        rs->states_.push_back(std::move(state));
        rs->has_syn_auth_ |= verifies_sources(r.action);
        rs->has_syn_proxy_ |= r.action == RuleAction::syn_proxy;
        if (verifies_sources(r.action)) rs->syn_auth_rules_.push_back(static_cast<uint16_t>(i));
        rs->has_aggregate_ |= is_aggregate(r.key_kind);
        rs->has_shape_ |= r.action == RuleAction::shape;
    }
    rs->index_ = RuleIndex(rs->rules_);
    rs->established_.ttl_ns = config.established.ttl_ns;
    rs->established_.mark_budget = gcra_profile(
        std::max<uint64_t>(
            1, static_cast<uint64_t>(static_cast<unsigned __int128>(config.established.ttl_ns) * 4 *
                                     options.cores / config.table_entries_per_core)),
        kMarkBudgetBurst);
    key_masks(config.established.ipv4_len, &rs->established_.mask_hi[0],
              &rs->established_.mask_lo[0]);
    key_masks(config.established.ipv6_len, &rs->established_.mask_hi[1],
              &rs->established_.mask_lo[1]);
    const EstablishedOptions &est = config.established;
    steer.published(est.ipv4_len, est.ipv6_len, rs->established_.known_published);
    for (unsigned f = 0; f < 2; ++f)  // established marks are set from the replies
        rs->established_.established_published[f] =
            rs->established_.known_published[f] || !steer.replies_by_destination;
    const AnswerCaps &caps = config.answers;
    rs->answer_caps_.per_destination =
        gcra_profile(caps.per_destination.interval_ns(), caps.per_destination.burst);
    rs->answer_caps_.per_core = gcra_profile(caps.per_core.interval_ns(), caps.per_core.burst);
    key_masks(caps.destination_ipv4_len, &rs->answer_caps_.dst_mask_hi[0],
              &rs->answer_caps_.dst_mask_lo[0]);
    key_masks(caps.destination_ipv6_len, &rs->answer_caps_.dst_mask_hi[1],
              &rs->answer_caps_.dst_mask_lo[1]);
    steer.published(caps.destination_ipv4_len, caps.destination_ipv6_len,
                    rs->answer_caps_.per_destination_published);

    if (!rs->by_src_.build(source_entries(config, options.overrides), options.socket_id, error) ||
        !rs->by_dst_.build(destination_entries(config), options.socket_id, error))
        return nullptr;
    return rs;
}

const CompiledRule *RuleSet::find_rule(const std::string &name) const {
    for (const CompiledRule &r : rules_)
        if (r.name == name) return &r;
    return nullptr;
}

RuleSet::~RuleSet() = default;

void RuleSet::classify_burst(const PacketInfo *infos, const ParseStatus *status, uint16_t n,
                             PrefixClass *source, const RuleBits **dst) const {
    if (by_src_.empty() && by_dst_.empty()) {
        // No prefix anywhere (no allow, block or override, no rule with src or dst): every
        // IP packet classifies as none, listed by no rule. Measured with callgrind: 55 of the
        // 370 instructions a packet took in bench_decision went to the lookups below.
        const PrefixClass none = by_src_.classify(4, nullptr);
        for (uint16_t i = 0; i < n; ++i) {
            dst[i] = &kNoRules;
            source[i] = none;
        }
        return;
    }
    const uint8_t *addrs[2][PrefixTable::kMaxBulk];
    uint16_t index[2][PrefixTable::kMaxBulk];
    unsigned count[2] = {0, 0};
    for (uint16_t i = 0; i < n; ++i) {
        dst[i] = &kNoRules;
        if (status[i] != ParseStatus::ip) continue;
        const unsigned f = infos[i].family == 6;
        index[f][count[f]++] = i;
    }
    PrefixClass found[PrefixTable::kMaxBulk];
    for (unsigned f = 0; f < 2; ++f) {
        if (count[f] == 0) continue;
        const uint8_t family = f == 0 ? 4 : 6;
        for (unsigned k = 0; k < count[f]; ++k) addrs[f][k] = infos[index[f][k]].src;
        by_src_.classify(family, addrs[f], count[f], found);
        for (unsigned k = 0; k < count[f]; ++k) source[index[f][k]] = found[k];
        if (by_dst_.empty()) continue;
        for (unsigned k = 0; k < count[f]; ++k) addrs[f][k] = infos[index[f][k]].dst;
        by_dst_.classify(family, addrs[f], count[f], found);
        for (unsigned k = 0; k < count[f]; ++k) dst[index[f][k]] = found[k].rules;
    }
}

uint64_t RuleSet::dpdk_memory_bytes(const Config &config, size_t overrides) {
    return PrefixTable::dpdk_memory_bytes(source_entries(config, {}), overrides) +
           PrefixTable::dpdk_memory_bytes(destination_entries(config));
}

std::optional<uint64_t> RuleSet::measured_table_bytes(const Config &config,
                                                      const std::vector<PrefixOverride> &overrides,
                                                      int socket_id, std::string *error) {
    rte_malloc_socket_stats before{}, after{};
    if (rte_malloc_get_socket_stats(socket_id, &before) != 0) {
        *error = "no DPDK heap on socket " + std::to_string(socket_id);
        return std::nullopt;
    }
    PrefixTable src, dst;
    if (!src.build(source_entries(config, overrides), socket_id, error) ||
        !dst.build(destination_entries(config), socket_id, error) ||
        rte_malloc_get_socket_stats(socket_id, &after) != 0)
        return std::nullopt;
    return after.heap_allocsz_bytes - before.heap_allocsz_bytes;
}

}  // namespace floodgate
