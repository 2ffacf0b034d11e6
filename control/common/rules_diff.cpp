#include "control/common/rules_diff.h"

#include "dataplane/patterns/payload_database.h"

#include <algorithm>
#include <set>

#include "dataplane/api/numbers.h"
#include "dataplane/api/protocols.h"

namespace floodgate {

namespace {

std::string ports_text(const std::vector<PortRange> &ranges) {
    std::string s;
    for (const PortRange &r : ranges) {
        if (!s.empty()) s += ",";
        s += std::to_string(r.lo);
        if (r.hi != r.lo) s += "-" + std::to_string(r.hi);
    }
    return s;
}

std::string prefixes_text(const std::vector<Prefix> &prefixes) {
    std::string s;
    for (const Prefix &p : prefixes) s += (s.empty() ? "" : ",") + format_prefix(p);
    return s;
}

std::string proto_text(uint8_t proto) {
    switch (proto) {
        case kProtoTcp:
            return "tcp";
        case kProtoUdp:
            return "udp";
        case kProtoIcmp:
            return "icmp";
        case kProtoIcmpv6:
            return "icmpv6";
        default:
            return std::to_string(proto);
    }
}

std::string flags_text(const TcpFlagMatch &f) {
    static const std::pair<const char *, uint8_t> names[] = {
        {"fin", kTcpFin}, {"syn", kTcpSyn}, {"rst", kTcpRst}, {"psh", kTcpPsh},
        {"ack", kTcpAck}, {"urg", kTcpUrg}, {"ece", kTcpEce}, {"cwr", kTcpCwr}};
    std::string s;
    for (const auto &[name, bit] : names) {
        if (f.must_set & bit) s += (s.empty() ? "" : " ") + std::string(name);
        if (f.must_clear & bit) s += (s.empty() ? "!" : " !") + std::string(name);
    }
    return s;
}

std::string mode_text(RuleMode m) {
    return m == RuleMode::shadow ? "shadow" : "enforce";
}

std::string table_full_text(TableFullPolicy p) {
    switch (p) {
        case TableFullPolicy::pass:
            return "pass";
        case TableFullPolicy::drop:
            return "drop";
        case TableFullPolicy::shared:
        default:
            return "shared";
    }
}

std::string top_offenders_text(TopOffenders t) {
    return t == TopOffenders::exact ? "exact" : "sampled";
}

const Rule *find(const Config &c, const std::string &name) {
    for (const Rule &r : c.rules)
        if (r.name == name) return &r;
    return nullptr;
}

void diff_prefixes(const char *list, const std::vector<Prefix> &from, const std::vector<Prefix> &to,
                   std::vector<std::string> *out) {
    std::set<std::string> a, b;
    for (const Prefix &p : from) a.insert(format_prefix(p));
    for (const Prefix &p : to) b.insert(format_prefix(p));
    for (const std::string &p : b)
        if (!a.count(p)) out->push_back(std::string(list) + " + " + p);
    for (const std::string &p : a)
        if (!b.count(p)) out->push_back(std::string(list) + " - " + p);
}

}  // namespace

std::string describe_match(const RuleMatch &m) {
    std::vector<std::string> parts;
    if (m.proto) parts.push_back("proto " + proto_text(*m.proto));
    if (!m.dst_ports.empty()) parts.push_back("dst_port " + ports_text(m.dst_ports));
    if (!m.src_ports.empty()) parts.push_back("src_port " + ports_text(m.src_ports));
    if (!m.src.empty()) parts.push_back("src " + prefixes_text(m.src));
    if (!m.dst.empty()) parts.push_back("dst " + prefixes_text(m.dst));
    if ((m.tcp_flags.must_set | m.tcp_flags.must_clear) != 0)
        parts.push_back("tcp_flags \"" + flags_text(m.tcp_flags) + "\"");
    if (m.payload.present()) {
        // The count, the window and the fingerprint: any change of a pattern shows in a diff.
        std::string p = "payload " + std::to_string(m.payload.patterns.size()) +
                        (m.payload.patterns.size() == 1 ? " pattern" : " patterns");
        if (m.payload.offset != 0) p += " offset " + std::to_string(m.payload.offset);
        if (m.payload.depth != 0) p += " depth " + std::to_string(m.payload.depth);
        parts.push_back(p + " (" + payload_fingerprint(m.payload.patterns).substr(0, 8) + ")");
    }
    if (parts.empty()) return "every IP packet";
    std::string s;
    for (const std::string &p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
}

std::string describe_rate(uint64_t count, uint64_t period_ns, uint32_t burst) {
    return format_rate(count, period_ns) + " burst " + std::to_string(burst);
}

// "10/s burst 5" for GCRA (the default), the algorithm's name before any other:
// "token-bucket 10/s burst 5", "fixed-window 3/10min".
std::string describe_limit(const Rule &r) {
    if (is_window(r.algorithm))
        return std::string(rule_algorithm_name(r.algorithm)) + " " +
               format_rate(r.rate_count, r.rate_period_ns);
    std::string rate = describe_rate(r.rate_count, r.rate_period_ns, r.burst_pkts);
    if (r.adaptive.enabled) {
        const AdaptiveOptions &a = r.adaptive;
        rate += " adaptive " + format_rate(a.min_count, a.min_period_ns) + " to " +
                format_rate(a.max_count, a.max_period_ns) + " target " +
                std::to_string(a.target_ns / 1'000'000) + "ms window " + std::to_string(a.window) +
                " decrease " + std::to_string(a.decrease_pct) + "% increase " +
                std::to_string(a.increase_pct) + "%";
    }
    if (r.algorithm == RuleAlgorithm::gcra) return rate;
    return std::string(rule_algorithm_name(r.algorithm)) + " " + rate;
}

// "100 packets" or "200ms" (a shape rule's queue bound, per key).
std::string describe_queue(const ShapeQueue &q) {
    if (q.packets != 0) return std::to_string(q.packets) + " packets";
    return q.delay_ns % 1'000'000'000ull == 0 ? std::to_string(q.delay_ns / 1'000'000'000ull) + "s"
                                              : std::to_string(q.delay_ns / 1'000'000ull) + "ms";
}

// The action with the settings it takes: "syn-auth verified_ttl 10m", "dns-truncate slip 2".
std::string describe_action(const Rule &r) {
    std::string s = rule_action_name(r.action);
    if (verifies_sources(r.action))
        s += " verified_ttl " +
             format_duration_s(static_cast<long long>(r.verified_ttl_ns / 1'000'000'000ull));
    if (r.action == RuleAction::syn_proxy)
        s += " announce mss " + std::to_string(r.announce.mss) + " wscale " +
             std::to_string(r.announce.wscale) + " window " + std::to_string(r.announce.window);
    if (r.action == RuleAction::dns_truncate) s += " slip " + std::to_string(r.slip);
    if (r.action == RuleAction::shape) s += " queue " + describe_queue(r.queue);
    return s;
}

std::string describe_caps(const AnswerCaps &c) {
    const auto limit = [](const RateLimit &l) {
        return describe_rate(l.count, l.period_ns, l.burst);
    };
    return "per_destination " + limit(c.per_destination) + " per ipv4 /" +
           std::to_string(c.destination_ipv4_len) + ", ipv6 /" +
           std::to_string(c.destination_ipv6_len) + "; per_core " + limit(c.per_core);
}

std::string describe_key(const Rule &r) {
    const std::string src =
        "ipv4 /" + std::to_string(r.key_ipv4_len) + ", ipv6 /" + std::to_string(r.key_ipv6_len);
    const std::string dst = "dst ipv4 /" + std::to_string(r.dst_key_ipv4_len) + ", ipv6 /" +
                            std::to_string(r.dst_key_ipv6_len);
    switch (r.key_kind) {
        case KeyKind::dst:
            return dst;
        case KeyKind::src_dst:
            return "src " + src + " + " + dst;
        case KeyKind::none:
            return "none";
        case KeyKind::src:
        default:
            return src;
    }
}

std::string describe_established(const EstablishedOptions &e) {
    return "ttl " + format_duration_s(static_cast<long long>(e.ttl_ns / 1'000'000'000)) +
           " per ipv4 /" + std::to_string(e.ipv4_len) + ", ipv6 /" + std::to_string(e.ipv6_len);
}

// An aggregate rule's classes' shares of its burst.
std::string describe_reserve(const ClassReserve &r) {
    return "established " + std::to_string(r.established) + "%, verified " +
           std::to_string(r.verified) + "%, known " + std::to_string(r.known) + "%";
}

nlohmann::json rule_json(const Rule &r) {
    using nlohmann::json;
    const RuleMatch &m = r.match;
    json match = json::object();
    if (m.proto) match["proto"] = proto_text(*m.proto);
    auto ports = [](const std::vector<PortRange> &rs) {
        json a = json::array();
        for (const PortRange &p : rs) a.push_back({{"from", p.lo}, {"to", p.hi}});
        return a;
    };
    auto prefixes = [](const std::vector<Prefix> &ps) {
        json a = json::array();
        for (const Prefix &p : ps) a.push_back(format_prefix(p));
        return a;
    };
    if (!m.dst_ports.empty()) match["dst_port"] = ports(m.dst_ports);
    if (!m.src_ports.empty()) match["src_port"] = ports(m.src_ports);
    if (!m.src.empty()) match["src"] = prefixes(m.src);
    if (!m.dst.empty()) match["dst"] = prefixes(m.dst);
    if ((m.tcp_flags.must_set | m.tcp_flags.must_clear) != 0)
        match["tcp_flags"] = flags_text(m.tcp_flags);
    if (m.payload.present()) {
        json patterns = json::array();
        for (const PayloadPattern &p : m.payload.patterns)
            patterns.push_back({{"kind", p.kind == PayloadPattern::Kind::regex        ? "regex"
                                         : p.kind == PayloadPattern::Kind::dns_suffix ? "dns_suffix"
                                                                                      : "literal"},
                                {"text", p.text},
                                {"caseless", p.caseless}});
        match["payload"] = {{"patterns", patterns},
                            {"offset", m.payload.offset},
                            {"depth", m.payload.depth},
                            {"fingerprint", payload_fingerprint(m.payload.patterns)}};
    }
    json key = {{"kind", key_kind_name(r.key_kind)}};
    if (r.key_kind == KeyKind::src || r.key_kind == KeyKind::src_dst)
        key["ipv4"] = r.key_ipv4_len, key["ipv6"] = r.key_ipv6_len;
    if (r.key_kind == KeyKind::dst || r.key_kind == KeyKind::src_dst)
        key["dst_ipv4"] = r.dst_key_ipv4_len, key["dst_ipv6"] = r.dst_key_ipv6_len;
    json limit = {{"algorithm", rule_algorithm_name(r.algorithm)},
                  {"rate", format_rate(r.rate_count, r.rate_period_ns)},
                  {"count", r.rate_count},
                  {"period_ns", r.rate_period_ns}};
    if (!is_window(r.algorithm)) limit["burst"] = r.burst_pkts;
    if (r.adaptive.enabled)
        limit["adaptive"] = {{"min", format_rate(r.adaptive.min_count, r.adaptive.min_period_ns)},
                             {"max", format_rate(r.adaptive.max_count, r.adaptive.max_period_ns)},
                             {"target_ns", r.adaptive.target_ns},
                             {"window", r.adaptive.window},
                             {"decrease_pct", r.adaptive.decrease_pct},
                             {"increase_pct", r.adaptive.increase_pct}};
    json action = {{"kind", rule_action_name(r.action)}};
    if (verifies_sources(r.action)) action["verified_ttl_s"] = r.verified_ttl_ns / 1e9;
    if (r.action == RuleAction::syn_proxy)
        action["announce"] = {
            {"mss", r.announce.mss}, {"wscale", r.announce.wscale}, {"window", r.announce.window}};
    if (r.action == RuleAction::dns_truncate) action["slip"] = r.slip;
    if (r.action == RuleAction::shape) {
        if (r.queue.packets != 0)
            action["queue"] = {{"packets", r.queue.packets}};
        else
            action["queue"] = {{"delay_ns", r.queue.delay_ns}};
    }
    json j = {{"name", r.name},
              {"mode", mode_text(r.mode)},
              {"match", match},
              {"key", key},
              {"limit", limit},
              {"action", action},
              {"on_table_full", table_full_text(r.on_table_full)},
              {"text",
               {{"match", describe_match(m)},
                {"key", describe_key(r)},
                {"limit", describe_limit(r)},
                {"action", describe_action(r)}}}};
    if (r.line != 0) j["line"] = r.line;  // where the rule starts in its file
    if (is_aggregate(r.key_kind)) j["reserve"] = describe_reserve(r.reserve);
    if (r.top_offenders == TopOffenders::exact) j["top_offenders"] = "exact";
    if (r.escalate.enabled())
        j["escalate"] = {{"after_s", r.escalate.after_ns / 1e9},
                         {"min_refused_rate", format_rate(r.escalate.min_refused_count,
                                                          r.escalate.min_refused_period_ns)},
                         {"ttl_s", r.escalate.ttl_ns / 1e9}};
    return j;
}

RulesDiff diff_rules(const Config &running, const Config &next) {
    RulesDiff d;
    diff_prefixes("allow", running.allow, next.allow, &d.changes);
    diff_prefixes("block", running.block, next.block, &d.changes);
    if (running.table_entries_per_core != next.table_entries_per_core)
        d.changes.push_back("table.entries_per_core " +
                            std::to_string(running.table_entries_per_core) + " -> " +
                            std::to_string(next.table_entries_per_core) +
                            " (takes effect when floodgate restarts)");
    if (running.proxy_connections_per_core != next.proxy_connections_per_core ||
        running.proxy_server_timeout_ns != next.proxy_server_timeout_ns ||
        running.proxy_idle_timeout_ns != next.proxy_idle_timeout_ns)
        d.changes.push_back(
            "table.proxy_* (syn-proxy's connection table) changed (takes effect "
            "when floodgate restarts)");

    if (describe_established(running.established) != describe_established(next.established))
        d.changes.push_back("established " + describe_established(running.established) + " -> " +
                            describe_established(next.established));
    if (describe_caps(running.answers) != describe_caps(next.answers))
        d.changes.push_back("answers " + describe_caps(running.answers) + " -> " +
                            describe_caps(next.answers));

    for (const Rule &old : running.rules)
        if (find(next, old.name) == nullptr) {
            d.changes.push_back("rule " + old.name + ": removed (its limiter state is dropped)");
            d.removed.push_back(old.name);
        }
    std::vector<std::string> old_order, new_order;
    for (const Rule &r : running.rules)
        if (find(next, r.name) != nullptr) old_order.push_back(r.name);
    for (const Rule &r : next.rules) {
        const Rule *old = find(running, r.name);
        if (old == nullptr) {
            d.changes.push_back(
                "rule " + r.name + ": added (" + describe_match(r.match) + "; " +
                (r.key_kind != KeyKind::src ? "key " + describe_key(r) + "; " : "") +
                describe_limit(r) + ")");
            d.reset.push_back(r.name);
            continue;
        }
        new_order.push_back(r.name);
        const std::string prefix = "rule " + r.name + ": ";
        if (describe_match(old->match) != describe_match(r.match))
            d.changes.push_back(prefix + "match " + describe_match(old->match) + " -> " +
                                describe_match(r.match));
        const bool state_kept = limit_state_compatible(*old, r);
        if (describe_limit(*old) != describe_limit(r))
            d.changes.push_back(prefix + "limit " + describe_limit(*old) + " -> " +
                                describe_limit(r) +
                                (state_kept ? "" : " (its limiter state starts afresh)"));
        if (describe_action(*old) != describe_action(r))
            d.changes.push_back(prefix + "action " + describe_action(*old) + " -> " +
                                describe_action(r));
        if (describe_reserve(old->reserve) != describe_reserve(r.reserve))
            d.changes.push_back(prefix + "reserve " + describe_reserve(old->reserve) + " -> " +
                                describe_reserve(r.reserve));
        if (old->mode != r.mode)
            d.changes.push_back(prefix + "mode " + mode_text(old->mode) + " -> " +
                                mode_text(r.mode));
        if (old->on_table_full != r.on_table_full)
            d.changes.push_back(prefix + "on_table_full " + table_full_text(old->on_table_full) +
                                " -> " + table_full_text(r.on_table_full));
        if (old->top_offenders != r.top_offenders)
            d.changes.push_back(prefix + "top_offenders " + top_offenders_text(old->top_offenders) +
                                " -> " + top_offenders_text(r.top_offenders));
        if (describe_key(*old) != describe_key(r)) {
            d.changes.push_back(prefix + "key " + describe_key(*old) + " -> " + describe_key(r) +
                                " (its limiter state starts afresh)");
            d.reset.push_back(r.name);
        } else if (!state_kept) {
            d.reset.push_back(r.name);
        } else {
            d.kept.push_back(r.name);
        }
    }
    if (old_order != new_order) d.changes.push_back("rule order changed");
    return d;
}

}  // namespace floodgate
