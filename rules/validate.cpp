// What a rules document means: every field checked against the format, with the path and line
// of the node that is wrong. The document comes from YAML (a file) or JSON (a control message);
// the checks do not know which. Here the top level and each rule; what a rule matches, its
// limit and its key are read in validate_match.cpp, validate_limit.cpp and validate_key.cpp
// (rules/config_parser.h).
#include <algorithm>
#include <string_view>
#include <tuple>
#include <utility>

#include "dataplane/api/protocols.h"
#include "rules/config_parser.h"
#include "rules/load.h"

namespace floodgate {

namespace validation {

namespace {

constexpr std::pair<std::string_view, RuleAction> kActions[] = {
    {"drop", RuleAction::drop},
    {"syn-auth", RuleAction::syn_auth},
    {"dns-truncate", RuleAction::dns_truncate},
    {"tcp-rst", RuleAction::tcp_rst},
    {"icmp-unreachable", RuleAction::icmp_unreachable},
    {"shape", RuleAction::shape},
    {"syn-proxy", RuleAction::syn_proxy},
};
constexpr std::pair<std::string_view, RuleMode> kModes[] = {
    {"enforce", RuleMode::enforce},
    {"shadow", RuleMode::shadow},
};
constexpr std::pair<std::string_view, RuleAlgorithm> kAlgorithms[] = {
    {"gcra", RuleAlgorithm::gcra},
    {"fixed-window", RuleAlgorithm::fixed_window},
    {"sliding-window", RuleAlgorithm::sliding_window},
    {"token-bucket", RuleAlgorithm::token_bucket},
};
constexpr std::pair<std::string_view, ClusterFallback> kFallbacks[] = {
    {"local", ClusterFallback::local},
    {"fail-open", ClusterFallback::fail_open},
};
constexpr std::pair<std::string_view, bool> kShares[] = {{"cluster", true}, {"none", false}};
constexpr std::pair<std::string_view, TableFullPolicy> kTableFull[] = {
    {"shared", TableFullPolicy::shared},
    {"pass", TableFullPolicy::pass},
    {"drop", TableFullPolicy::drop},
};
constexpr std::pair<std::string_view, TopOffenders> kTopOffenders[] = {
    {"sampled", TopOffenders::sampled},
    {"exact", TopOffenders::exact},
};

auto prefix_order(const Prefix &p) {
    return std::tie(p.family, p.len, p.addr);
}

}  // namespace

Config ConfigParser::parse(const DocNode &root) {
    Config cfg;
    cfg.path = file_;
    const Field top{&root, "", root.line};
    // An empty file (or one with only comments) is a valid config with the defaults.
    if (root.kind == DocNode::Kind::null) return cfg;
    if (root.kind != DocNode::Kind::map)
        fail(top, std::string("the top level must be a map, found ") + describe(root));
    const Fields f = fields(top, {"allow", "block", "table", "steering", "cluster", "answers",
                                  "established", "nic_tier", "rules"});

    std::vector<Field> allow_items;
    std::vector<Field> block_items;
    if (const Field *allow = f.find("allow")) allow_items = items(*allow, true);
    if (const Field *block = f.find("block")) block_items = items(*block, true);
    for (const Field &item : allow_items) cfg.allow.push_back(prefix(item));
    for (const Field &item : block_items) cfg.block.push_back(prefix(item));
    refuse_in_both(cfg, allow_items, block_items);

    if (const Field *table = f.find("table")) {
        const Fields t = fields(*table, {"entries_per_core", "proxy_connections_per_core",
                                         "proxy_server_timeout", "proxy_idle_timeout"});
        if (const Field *entries = t.find("entries_per_core"))
            cfg.table_entries_per_core = integer(*entries, 1, kMaxTableEntriesPerCore);
        if (const Field *n = t.find("proxy_connections_per_core"))
            cfg.proxy_connections_per_core = integer(*n, 0, kMaxProxyConnectionsPerCore);
        if (const Field *s = t.find("proxy_server_timeout"))
            cfg.proxy_server_timeout_ns = short_duration_ns(*s, kMaxProxyServerTimeoutNs);
        if (const Field *s = t.find("proxy_idle_timeout"))
            cfg.proxy_idle_timeout_ns = duration_ns(*s, kMaxProxyTimeoutNs);
    }

    if (const Field *s = f.find("steering")) cfg.steering = steering(*s);
    if (const Field *c = f.find("cluster")) cfg.cluster = cluster(*c);
    if (const Field *answers = f.find("answers")) cfg.answers = answer_caps(*answers);
    if (const Field *e = f.find("established")) cfg.established = established(*e);
    if (const Field *n = f.find("nic_tier")) cfg.nic_tier = nic_tier(*n);
    nic_tier_set_ = cfg.nic_tier.set;

    if (const Field *rules = f.find("rules")) {
        const std::vector<Field> rule_items = items(*rules, true);
        if (rule_items.size() > kMaxRules) {
            fail(rule_items[kMaxRules],
                 "too many rules (at most " + std::to_string(kMaxRules) + ")");
        }
        for (const Field &item : rule_items) {
            rule_index_ = cfg.rules.size();
            cfg.rules.push_back(rule(item, cfg.rules, cfg.cluster));
        }
    }
    compile_payloads(&cfg);
    return cfg;
}

// Listing a prefix in both says two opposite things; refuse rather than pick one. Sorted
// lookups: 100,000 of each take milliseconds (a pairwise check took 106 s).
void ConfigParser::refuse_in_both(const Config &cfg, const std::vector<Field> &allow_items,
                                  const std::vector<Field> &block_items) const {
    std::vector<size_t> allow_order(cfg.allow.size());
    for (size_t i = 0; i < allow_order.size(); ++i) allow_order[i] = i;
    auto less = [&](size_t a, size_t b) {
        return prefix_order(cfg.allow[a]) < prefix_order(cfg.allow[b]);
    };
    std::sort(allow_order.begin(), allow_order.end(), less);
    for (size_t b = 0; b < cfg.block.size(); ++b) {
        auto it = std::lower_bound(
            allow_order.begin(), allow_order.end(), b, [&](size_t a, size_t block) {
                return prefix_order(cfg.allow[a]) < prefix_order(cfg.block[block]);
            });
        if (it != allow_order.end() && cfg.allow[*it] == cfg.block[b]) {
            const Field &other = allow_items[*it];
            fail(block_items[b],
                 format_prefix(cfg.block[b]) + " is also in " + other.path +
                     (other.line > 0 ? " (line " + std::to_string(other.line) + ")" : ""));
        }
    }
}

// An answer must fit the packets the rule can match: a SYN-ACK challenge only for
// connection attempts (a challenged ACK would break an open connection), a DNS answer
// only for UDP to named ports, a RST only for TCP.
void ConfigParser::check_action(const Field &action, const Rule &r) const {
    const RuleMatch &m = r.match;
    switch (r.action) {
        case RuleAction::syn_auth:
        case RuleAction::syn_proxy: {
            const std::string name = rule_action_name(r.action);
            if (m.payload.present())
                fail(action, name + " answers SYNs, which carry no payload: no payload match");
            if (is_aggregate(r.key_kind))
                fail(action, name + " verifies sources: it needs a per-source key, not key " +
                                 key_kind_name(r.key_kind) + " (put an aggregate rule beside it)");
            if ((m.tcp_flags.must_set & kTcpSyn) == 0 || (m.tcp_flags.must_clear & kTcpAck) == 0)
                fail(action, name +
                                 " needs match.tcp_flags with \"syn !ack\" (it answers "
                                 "connection attempts only)");
            break;
        }
        case RuleAction::dns_truncate:
            if (!m.proto || *m.proto != kProtoUdp || m.dst_ports.empty())
                fail(action, "dns-truncate needs match.proto udp and a dst_port (53)");
            break;
        case RuleAction::tcp_rst:
            if (!m.proto || *m.proto != kProtoTcp)
                fail(action, "tcp-rst needs match.proto tcp (or tcp_flags)");
            break;
        case RuleAction::shape:
            // A packet can wait only for a TAT: a window's count says nothing of when.
            if (is_window(r.algorithm))
                fail(action, std::string("shape releases packets at the rule's rate: it needs "
                                         "gcra or token-bucket, not ") +
                                 rule_algorithm_name(r.algorithm));
            break;
        case RuleAction::drop:
        case RuleAction::icmp_unreachable:
            break;
    }
}

// An adaptive limit learns from the connections it admits (Pipeline's response samples): a
// TCP connection-attempt rule kept per destination (or as one bucket), whose admitted SYNs'
// handshakes and first responses floodgate sees both ways.
void ConfigParser::check_adaptive(const Field &limit, const Rule &r) const {
    const Field at{limit.node, limit.path + ".adaptive", limit.line};
    const RuleMatch &m = r.match;
    if (!is_aggregate(r.key_kind))
        fail(at, std::string("adaptive follows one server's health: it needs key dst (or none), "
                             "not ") +
                     key_kind_name(r.key_kind));
    if ((m.tcp_flags.must_set & kTcpSyn) == 0 || (m.tcp_flags.must_clear & kTcpAck) == 0)
        fail(at,
             "adaptive learns from the connections it admits: it needs match.tcp_flags "
             "\"syn !ack\"");
    if (r.action == RuleAction::shape || verifies_sources(r.action))
        fail(at,
             std::string("adaptive does not combine with action ") + rule_action_name(r.action));
}

// queue: { packets: N } or { delay: D }: how much of a key's excess a shape rule holds.
ShapeQueue ConfigParser::shape_queue(const Field &field) const {
    const Fields f = fields(field, {"packets", "delay"});
    const Field *packets = f.find("packets");
    const Field *delay = f.find("delay");
    if ((packets == nullptr) == (delay == nullptr))
        fail(field,
             "queue needs one of packets (how many may wait per key) or delay (how long "
             "one may wait)");
    ShapeQueue q;
    if (packets != nullptr)
        q.packets = static_cast<uint32_t>(integer(*packets, 1, kMaxShapePackets));
    if (delay != nullptr) q.delay_ns = short_duration_ns(*delay, kMaxShapeDelayNs);
    return q;
}

// announce: { mss, wscale, window }: what syn-proxy's SYN-ACK says of the servers behind it.
ProxyAnnounce ConfigParser::announce(const Field &field) const {
    const Fields f = fields(field, {"mss", "wscale", "window"});
    ProxyAnnounce a;
    if (const Field *m = f.find("mss"))
        a.mss = static_cast<uint16_t>(integer(*m, kMinAnnouncedMss, kMaxAnnouncedMss));
    if (const Field *w = f.find("wscale"))
        a.wscale = static_cast<uint8_t>(integer(*w, 0, kMaxAnnouncedWindowScale));
    if (const Field *w = f.find("window")) a.window = static_cast<uint16_t>(integer(*w, 1, 65535));
    return a;
}

// Names appear in metrics labels and CLI output, hence the plain character set.
std::string ConfigParser::rule_name(const Field &field) const {
    const std::string &name = scalar(field);
    if (name.empty() || name.size() > kMaxRuleNameLen)
        fail(field, "name must be 1-" + std::to_string(kMaxRuleNameLen) + " characters");
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) fail(field, "name '" + name + "' may use only A-Z a-z 0-9 _ . -");
    }
    return name;
}

Rule ConfigParser::rule(const Field &field, const std::vector<Rule> &earlier,
                        const ClusterOptions &cluster) const {
    const Fields f = fields(field, {"name", "match", "key", "algorithm", "limit", "action", "slip",
                                    "verified_ttl", "announce", "mode", "on_table_full", "reserve",
                                    "escalate", "share", "fallback", "queue", "top_offenders"});
    Rule r;
    r.line = field.line;
    const Field &name = require(f, "name");
    r.name = rule_name(name);
    for (size_t i = 0; i < earlier.size(); ++i) {
        if (earlier[i].name != r.name) continue;
        fail(name, "duplicate rule name '" + r.name + "' (first used by rules[" +
                       std::to_string(i) + "]" +
                       (earlier[i].line > 0 ? ", line " + std::to_string(earlier[i].line) : "") +
                       ")");
    }
    if (const Field *m = f.find("match")) r.match = match(*m);
    if (const Field *k = f.find("key")) key(*k, &r);
    if (!is_aggregate(r.key_kind)) r.reserve = ClassReserve{0, 0, 0};
    if (const Field *res = f.find("reserve")) reserve(*res, &r);
    if (const Field *a = f.find("algorithm")) r.algorithm = choice(*a, kAlgorithms);
    const Field &limit_field = require(f, "limit");
    limit(limit_field, &r);
    check_reserve(f.find("reserve") != nullptr ? *f.find("reserve") : limit_field, r);
    if (const Field *a = f.find("action")) {
        r.action = choice(*a, kActions);
        check_action(*a, r);
    }
    if (r.adaptive.enabled) check_adaptive(limit_field, r);
    if (const Field *slip = f.find("slip")) {
        if (r.action != RuleAction::dns_truncate) fail(*slip, "slip needs action dns-truncate");
        r.slip = static_cast<uint32_t>(integer(*slip, 0, kMaxSlip));
    }
    if (const Field *ttl = f.find("verified_ttl")) {
        if (!verifies_sources(r.action))
            fail(*ttl, "verified_ttl needs action syn-auth or syn-proxy");
        r.verified_ttl_ns = duration_ns(*ttl, kMaxVerifiedTtlNs);
    }
    if (const Field *a = f.find("announce")) {
        if (r.action != RuleAction::syn_proxy) fail(*a, "announce needs action syn-proxy");
        r.announce = announce(*a);
    }
    if (const Field *q = f.find("queue")) {
        if (r.action != RuleAction::shape) fail(*q, "queue needs action shape");
        r.queue = shape_queue(*q);
    } else if (r.action == RuleAction::shape) {
        fail(*f.find("action"), "action shape needs a queue: { packets: N } or { delay: D }");
    }
    if (const Field *m = f.find("mode")) r.mode = choice(*m, kModes);
    if (const Field *t = f.find("on_table_full")) r.on_table_full = choice(*t, kTableFull);
    if (const Field *t = f.find("top_offenders")) r.top_offenders = choice(*t, kTopOffenders);
    if (const Field *e = f.find("escalate")) r.escalate = escalate(*e, r);
    if (const Field *s = f.find("share")) {
        r.shared = choice(*s, kShares);
        if (r.shared) check_share(*s, r, cluster);
    }
    if (const Field *fb = f.find("fallback")) {
        if (!r.shared) fail(*fb, "fallback needs share: cluster");
        r.fallback = choice(*fb, kFallbacks);
    }
    return r;
}

// Only keys that several boxes see are shared: ECMP hashes a source to one box, so a
// per-source key is whole on its box, and sharing it would only add Redis traffic.
void ConfigParser::check_share(const Field &share, const Rule &r,
                               const ClusterOptions &cluster) const {
    if (!cluster.set)
        fail(share, "share: cluster needs a cluster section (name and redis) at the top level");
    if (r.key_kind == KeyKind::src)
        fail(share,
             "a per-source key stays on the box ECMP sends the source to: share an aggregate "
             "key (dst, none) or a (src, dst) pair");
}

}  // namespace validation

Config config_from_doc(const DocNode &doc, const std::string &file,
                       const PrecompiledPayloads *precompiled) {
    return validation::ConfigParser(file, precompiled).parse(doc);
}

}  // namespace floodgate
