// What a rules document means: ConfigParser reads one document into a Config, checking every
// field against the format, and throws ConfigError at the first problem with the path and
// line of the node that caused it. Its parts, one a file: the top level and each rule
// (validate.cpp), what a rule matches (validate_match.cpp), rates, limits and durations
// (validate_limit.cpp), and a rule's key and class reserves (validate_key.cpp). Internal to
// rules/: the loader's entry point is config_from_doc (rules/load.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/api/rules.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/doc_reader.h"

namespace floodgate::validation {

class ConfigParser : DocReader {
  public:
    ConfigParser(const std::string &file, const PrecompiledPayloads *precompiled)
        : DocReader(file), precompiled_(precompiled) {}

    Config parse(const DocNode &root);

  private:
    // The top level and each rule (validate.cpp).
    void refuse_in_both(const Config &cfg, const std::vector<Field> &allow_items,
                        const std::vector<Field> &block_items) const;
    void check_action(const Field &action, const Rule &r) const;
    ShapeQueue shape_queue(const Field &field) const;
    ProxyAnnounce announce(const Field &field) const;
    std::string rule_name(const Field &field) const;
    Rule rule(const Field &field, const std::vector<Rule> &earlier,
              const ClusterOptions &cluster) const;
    void check_share(const Field &share, const Rule &r, const ClusterOptions &cluster) const;

    // What a rule matches (validate_match.cpp).
    Prefix prefix(const Field &field) const;
    PortRange port_range(const Field &field) const;
    std::vector<PortRange> ports(const Field &field) const;
    std::vector<Prefix> prefixes(const Field &field) const;
    uint8_t proto(const Field &field) const;
    TcpFlagMatch tcp_flags(const Field &field) const;
    RuleMatch match(const Field &field) const;
    PayloadMatch payload(const Field &field) const;
    PayloadPattern pattern(const Field &field) const;
    void compile_payloads(Config *cfg) const;
    std::shared_ptr<const PayloadDatabase> precompiled(const std::string &fingerprint,
                                                       const std::vector<size_t> &pending) const;

    // Rates, limits and durations (validate_limit.cpp).
    void rate(const Field &field, uint64_t *count_out, uint64_t *period_out) const;
    RateLimit rate_limit(const Field &field, const Fields &f) const;
    void limit(const Field &field, Rule *r) const;
    EstablishedOptions established(const Field &field) const;
    SteeringOptions steering(const Field &field) const;
    ClusterOptions cluster(const Field &field) const;
    EscalateOptions escalate(const Field &field, const Rule &r) const;
    NicTierOptions nic_tier(const Field &field) const;
    uint64_t duration_ns(const Field &field, uint64_t max_ns) const;
    uint64_t short_duration_ns(const Field &field, uint64_t max_ns) const;
    AdaptiveOptions adaptive(const Field &field, const Rule &r) const;
    uint64_t percent(const Field &field, uint64_t lo, uint64_t hi) const;
    void check_adaptive(const Field &limit, const Rule &r) const;
    AnswerCaps answer_caps(const Field &field) const;

    // A rule's key and its classes' reserves (validate_key.cpp).
    void key_lengths(const Field &field, uint8_t *v4, uint8_t *v6) const;
    void key(const Field &field, Rule *r) const;
    uint8_t percent(const Field &field) const;
    void reserve(const Field &field, Rule *r) const;
    void check_reserve(const Field &at, const Rule &r) const;

    const PrecompiledPayloads *precompiled_;
    size_t rule_index_ = 0;      // of the rule being read
    bool nic_tier_set_ = false;  // escalate's nic needs the section
    // The payload lists read, compiled by compile_payloads once every rule is read.
    struct PendingPayload {
        size_t rule;
        Field list;
        std::vector<Field> items;
    };
    mutable std::vector<PendingPayload> payloads_;
};

}  // namespace floodgate::validation
