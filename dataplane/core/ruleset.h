// The compiled, immutable ruleset a worker decides with: the rules in file order, and two
// prefix tables (dataplane/core/prefix_table.h): by source, the allow/block prefixes (the file's
// plus the operator's runtime overrides) together with the rules' src lists; by destination,
// the rules' dst lists.
// Built once from a validated Config; limiter state (the TATs) lives in the per-core
// LimitTable and each rule's counters in its RuleState, shared with the previous ruleset's
// rule of the same name and key, so a ruleset can be swapped by pointer (LiveRuleSet) without
// forgetting what sources have spent.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/api/rules.h"
#include "dataplane/core/parse.h"
#include "dataplane/core/prefix_table.h"
#include "dataplane/core/rule_index.h"
#include "dataplane/core/rule_match.h"
#include "dataplane/core/steering.h"
#include "dataplane/patterns/payload_database.h"

namespace floodgate {

class RuleSet;

// An allow or block prefix added at run time (floodctl block/allow add). On the same prefix it
// replaces the file's entry; otherwise the longest prefix decides, as between the file's lists.
struct PrefixOverride {
    Prefix prefix;
    PrefixVerdict verdict = PrefixVerdict::block;  // allow or block
    uint64_t expires_ns = 0;  // on the dataplane service's monotonic clock; 0: never
};

// The answer caps of the rules file (Config::answers) as the pipeline checks them: GCRA profiles
// and the masks that make an answer's destination prefix out of the packet's source.
struct AnswerCapProfiles {
    GcraProfile per_destination;
    GcraProfile per_core;
    uint64_t dst_mask_hi[2] = {};  // [0] IPv4, [1] IPv6, raw memory byte order like LimitKey
    uint64_t dst_mask_lo[2] = {};
    // Whether the per-destination cap's keys (the refused source's prefix) are shared with the
    // other cores by the merge, per family: unless steering gives them one owner.
    bool per_destination_published[2] = {true, true};
};

// Where a source the protected side answered is remembered (Config::established): the masks
// of its prefix per family, like AnswerCapProfiles', and for how long.
inline constexpr uint32_t kMarkBudgetBurst = 1024;

struct EstablishedProfile {
    uint64_t ttl_ns = 0;
    // How fast one core may write new marks (established and known): a quarter of the table
    // over a TTL, shared by the cores (each applies the others' marks), in bursts of 1024; so
    // a flood of new sources can never fill the table with marks.
    GcraProfile mark_budget;
    uint64_t mask_hi[2] = {};
    uint64_t mask_lo[2] = {};
    // Whether the marks are shared with the other cores by the merge, per family: unless
    // steering gives their prefix one owner (established marks also need the replies steered
    // by destination).
    bool established_published[2] = {true, true};
    bool known_published[2] = {true, true};
};

struct RuleSetOptions {
    unsigned cores = 1;  // workers that will decide with it (each has its own RuleCoreState)
    int socket_id = -1;  // SOCKET_ID_ANY
    // Rules of the new set with the same name and key lengths as a rule here take over its
    // RuleState (counters, top offenders, key id, hence the TATs). Must have as many cores.
    const RuleSet *previous = nullptr;
    std::vector<PrefixOverride> overrides;
    uint64_t version = 1;
    // How packets reach the cores: which keys have one owner (CompiledRule::published).
    Steering steering;
    // Each rule's keys per second counted exactly (EpochKeys::keep_exact): replay.
    bool exact_keys = false;
};

class RuleSet {
  public:
    // Needs the EAL (the LPM tables live in DPDK memory on socket_id). Returns nullptr and
    // sets *error when a table cannot be built (out of DPDK memory).
    static std::unique_ptr<RuleSet> build(const Config &config, const RuleSetOptions &options,
                                          std::string *error);
    static std::unique_ptr<RuleSet> build(const Config &config, int socket_id, std::string *error) {
        RuleSetOptions o;
        o.socket_id = socket_id;
        return build(config, o, error);
    }
    // DPDK memory the prefix tables of config take (the EAL must be given at least this).
    static uint64_t dpdk_memory_bytes(const Config &config, size_t overrides = 0);
    // The same, measured: the heap's bytes the tables of config with these overrides took when
    // built on socket_id (and freed again); nullopt, with *error, when they could not be built.
    static std::optional<uint64_t> measured_table_bytes(
        const Config &config, const std::vector<PrefixOverride> &overrides, int socket_id,
        std::string *error);
    ~RuleSet();
    RuleSet(const RuleSet &) = delete;
    RuleSet &operator=(const RuleSet &) = delete;

    // Classifies the IP packets of a burst (status ip), one lookup call per family and
    // direction: source[i] is the allow/block verdict of packet i's longest allow or block
    // prefix and the rules whose src list holds its source; *dst[i] the rules whose dst list
    // holds its destination (the empty set, without a lookup, when no rule has a dst list).
    void classify_burst(const PacketInfo *infos, const ParseStatus *status, uint16_t n,
                        PrefixClass *source, const RuleBits **dst) const;
    // One packet's source and destination, the same way (tests, tools).
    PrefixClass classify_source(const PacketInfo &p) const {
        return by_src_.classify(p.family, p.src);
    }
    const RuleBits &dst_rules(const PacketInfo &p) const {
        return by_dst_.empty() ? kNoRules : *by_dst_.classify(p.family, p.dst).rules;
    }

    const std::vector<CompiledRule> &rules() const { return rules_; }
    // The rules whose protocol and destination ports admit p, in file order (RuleIndex): of
    // those, the ones rule_matches_rest() accepts are the ones p matches.
    RuleCandidates candidates(const PacketInfo &p) const { return index_.candidates(p); }
    const CompiledRule *find_rule(const std::string &name) const;
    const Config &config() const { return config_; }
    const AnswerCapProfiles &answer_caps() const { return answer_caps_; }
    // Rules that verify sources by cookie (syn-auth, and syn-proxy, which falls back to
    // syn-auth's challenge when its connection table is full).
    bool has_syn_auth() const { return has_syn_auth_; }
    bool has_syn_proxy() const { return has_syn_proxy_; }
    // Rules with an aggregate key (dst or none): their refusals are counted by trust class, and
    // replies going out mark their destinations established.
    bool has_aggregate() const { return has_aggregate_; }
    const EstablishedProfile &established() const { return established_; }
    // The indices of the syn-auth and syn-proxy rules (whose verifications make a source's class
    // verified).
    const std::vector<uint16_t> &syn_auth_rules() const { return syn_auth_rules_; }
    // The indices of the rules with an adaptive limit (limit.adaptive).
    const std::vector<uint16_t> &adaptive_rules() const { return adaptive_rules_; }
    bool has_adaptive() const { return !adaptive_rules_.empty(); }
    bool has_shape() const { return has_shape_; }
    const std::vector<PrefixOverride> &overrides() const { return overrides_; }
    uint64_t version() const { return version_; }
    // Unique among every RuleSet this process built (addresses may be reused; this is not).
    uint64_t serial() const { return serial_; }
    unsigned cores() const { return cores_; }
    const Steering &steering() const { return steering_; }
    // Core i's Hyperscan scratch for the rules' payload patterns (null when none has any).
    hs_scratch *payload_scratch(unsigned core) const { return payload_scratch_->core(core); }
    // Whether rule i of this set took over the state of a rule of the previous set.
    bool kept_state(size_t i) const { return kept_state_[i]; }

  private:
    RuleSet() = default;
    Config config_;
    std::vector<CompiledRule> rules_;
    RuleIndex index_;
    AnswerCapProfiles answer_caps_;
    bool has_syn_auth_ = false;
    bool has_syn_proxy_ = false;
    bool has_aggregate_ = false;
    bool has_shape_ = false;
    EstablishedProfile established_;
    std::vector<uint16_t> syn_auth_rules_;
    std::vector<uint16_t> adaptive_rules_;
    std::vector<std::shared_ptr<RuleState>> states_;  // one per rule, shared with successors
    std::vector<bool> kept_state_;
    std::vector<PrefixOverride> overrides_;
    uint64_t version_ = 0;
    uint64_t serial_ = 0;
    unsigned cores_ = 1;
    Steering steering_;
    std::unique_ptr<PayloadScratch> payload_scratch_;
    PrefixTable by_src_;
    PrefixTable by_dst_;
    static const RuleBits kNoRules;
};

}  // namespace floodgate
