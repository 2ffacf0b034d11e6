#include "control/flowspec_feed.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "control/running_rules.h"
#include "dataplane/api/unix_socket.h"

namespace floodgate {

namespace {

using nlohmann::json;

void log(const std::string &line) {
    std::fprintf(stderr, "floodctl daemon: %s\n", line.c_str());
    std::fflush(stderr);
}

uint64_t monotonic_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

bool covered(const std::vector<Prefix> &allows, const Prefix &p) {
    for (const Prefix &a : allows)
        if (a.family == p.family && a.len <= p.len && prefix_contains(a, p.family, p.addr))
            return true;
    return false;
}

}  // namespace

std::vector<FlowspecRule> desired_flowspec(const json &rules_reply, const json &overrides_reply,
                                           const json &stats) {
    std::vector<FlowspecRule> out;
    Config running;
    try {
        running = running_rules(rules_reply);
    } catch (const std::exception &) {
        return out;  // no rules read: nothing known to announce
    }
    std::vector<Prefix> allows = running.allow, blocks = running.block;
    std::string why;
    for (const json &o : overrides_reply.value("overrides", json::array())) {
        if (!o.is_object()) continue;
        const std::optional<Prefix> p = parse_prefix(o.value("prefix", ""), &why);
        if (!p) continue;
        (o.value("list", "") == "allow" ? allows : blocks).push_back(*p);
    }
    for (const Prefix &b : blocks)
        if (!covered(allows, b))
            out.push_back({b, std::nullopt, std::nullopt, std::nullopt, "block"});
    const json *xdp = stats.is_object() && stats.contains("xdp") ? &stats["xdp"] : nullptr;
    const json escalated =
        xdp != nullptr && xdp->is_object()
            ? xdp->value("escalations", json::object()).value("escalated", json::array())
            : json::array();
    for (const json &e : escalated) {
        if (!e.is_object()) continue;
        const std::optional<Prefix> src = parse_prefix(e.value("prefix", ""), &why);
        const std::string rule_name = e.value("rule", "");
        const Rule *rule = nullptr;
        for (const Rule &r : running.rules)
            if (r.name == rule_name) rule = &r;
        if (!src || rule == nullptr || !rule->escalate.flowspec || covered(allows, *src)) continue;
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

FlowspecFeed::FlowspecFeed(std::string dataplane, FlowspecOptions options)
    : dataplane_(std::move(dataplane)), exporter_(std::move(options)) {}

void FlowspecFeed::once() {
    std::string error;
    json rules, overrides, stats;
    if (!link_.connected() && !link_.connect(dataplane_, &error)) return;
    if (!link_.request({{"cmd", "rules"}}, &rules, &error) ||
        !link_.request({{"cmd", "overrides"}}, &overrides, &error) ||
        !link_.request({{"cmd", "stats"}}, &stats, &error))
        return;  // the dataplane away: what is announced stays until it answers again
    const std::string before = exporter_.last_error();
    exporter_.reconcile(desired_flowspec(rules, overrides, stats.value("stats", json::object())),
                        monotonic_ns());
    if (exporter_.last_error() != before && !exporter_.last_error().empty())
        log("flowspec: " + exporter_.last_error());
    const FlowspecExporter::Counters &c = exporter_.counters();
    std::lock_guard<std::mutex> guard(lock_);
    status_ = {{"active", true},
               {"in_rib", c.in_rib},
               {"blackholes_in_rib", c.blackholes_in_rib},
               {"announced", c.announced},
               {"withdrawn", c.withdrawn},
               {"stale_withdrawn", c.stale_withdrawn},
               {"withheld_limit", c.withheld_limit},
               {"withheld_rate", c.withheld_rate},
               {"invalid", c.invalid},
               {"failed_calls", c.failed_calls},
               {"last_error", exporter_.last_error()}};
}

void FlowspecFeed::run(const std::atomic<bool> &stop) {
    auto next = std::chrono::steady_clock::now();
    while (!stop.load()) {
        once();
        next += std::chrono::seconds(1);
        if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now();
        while (!stop.load() && std::chrono::steady_clock::now() < next)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    exporter_.withdraw_all();
    log("flowspec: withdrew every announcement (" + std::to_string(exporter_.counters().in_rib) +
        " left)");
}

json FlowspecFeed::status() const {
    std::lock_guard<std::mutex> guard(lock_);
    return status_;
}

}  // namespace floodgate
