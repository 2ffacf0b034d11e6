#include "control/upstream/flowspec_desired.h"

#include "control/common/running_rules.h"

namespace floodgate {

namespace {

using nlohmann::json;

// Whether an allow overlaps p: covers it, or lies inside it (the router would drop the allowed
// part too, where the dataplane lets the longer allow through).
bool allowed_any(const std::vector<Prefix> &allows, const Prefix &p) {
    for (const Prefix &a : allows) {
        if (a.family != p.family) continue;
        if (a.len <= p.len ? prefix_contains(a, p.family, p.addr)
                           : prefix_contains(p, a.family, a.addr))
            return true;
    }
    return false;
}

}  // namespace

std::vector<FlowspecRule> desired_flowspec(const json &rules_reply, const json &overrides_reply,
                                           const json &stats) {
    std::vector<FlowspecRule> out;
    if (!rules_reply.is_object() || !rules_reply.contains("doc")) return out;  // rules unknown
    Config running;
    try {
        running = running_rules(rules_reply);
    } catch (const std::exception &) {
        return out;  // no rules read: nothing known to announce
    }
    std::vector<Prefix> allows = running.allow, blocks = running.block;
    std::string why;
    const json none = json::array();
    const json &listed = overrides_reply.is_object() && overrides_reply.contains("overrides")
                             ? overrides_reply["overrides"]
                             : none;
    for (const json &o : listed.is_array() ? listed : none) {
        if (!o.is_object()) continue;
        const std::optional<Prefix> p = parse_prefix(o.value("prefix", ""), &why);
        if (!p) continue;
        (o.value("list", "") == "allow" ? allows : blocks).push_back(*p);
    }
    for (const Prefix &b : blocks)
        if (!allowed_any(allows, b))
            out.push_back({b, std::nullopt, std::nullopt, std::nullopt, "block"});
    // stats.xdp.escalations.escalated, each level checked: the stats are another process's.
    const auto at = [](const json &j, const char *key) -> const json * {
        return j.is_object() && j.contains(key) ? &j[key] : nullptr;
    };
    const json *xdp = at(stats, "xdp");
    const json *escalations = xdp != nullptr ? at(*xdp, "escalations") : nullptr;
    const json *listed_escalated = escalations != nullptr ? at(*escalations, "escalated") : nullptr;
    const json &escalated =
        listed_escalated != nullptr && listed_escalated->is_array() ? *listed_escalated : none;
    for (const json &e : escalated) {
        if (!e.is_object()) continue;
        const std::optional<Prefix> src = parse_prefix(e.value("prefix", ""), &why);
        const std::string rule_name = e.value("rule", "");
        const Rule *rule = nullptr;
        for (const Rule &r : running.rules)
            if (r.name == rule_name) rule = &r;
        if (!src || rule == nullptr || !rule->escalate.flowspec || allowed_any(allows, *src))
            continue;
        FlowspecRule f{*src, std::nullopt, rule->match.proto, std::nullopt,
                       "escalated by " + rule_name};
        // The rule's match where it names one destination and one port range of the source's
        // family: the router then drops only what the rule refused.
        std::vector<Prefix> dsts;
        for (const Prefix &d : rule->match.dst)
            if (d.family == src->family) dsts.push_back(d);
        if (dsts.size() == 1) f.destination = dsts[0];
        if (rule->match.dst_ports.size() == 1 && f.protocol)
            f.destination_port = rule->match.dst_ports[0];
        out.push_back(f);
    }
    return out;
}

}  // namespace floodgate
