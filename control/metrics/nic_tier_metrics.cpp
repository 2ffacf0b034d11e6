#include "control/metrics/nic_tier_metrics.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "control/metrics/exposition.h"
#include "dataplane/api/nic_stats.h"
#include "dataplane/api/prefix.h"

namespace floodgate {

using exposition::Family;
using exposition::json;
using exposition::member;
using exposition::number;
using exposition::number_at;
using exposition::Type;
using exposition::Value;

namespace {

// A row of nic_tier.top_by_hits as read: every field there and of its type, or no row.
struct TopRule {
    Prefix prefix;
    std::string prefix_text, origin;
    uint64_t hits = 0, bytes = 0;
};

std::optional<uint64_t> count_at(const json &row, const char *key) {
    const json *v = member(&row, key);
    if (v == nullptr || !v->is_number_unsigned()) return std::nullopt;  // negative, huge, missing
    return v->get<uint64_t>();
}

std::optional<TopRule> read_top_rule(const json &row) {
    const json *prefix = member(&row, "prefix"), *origin = member(&row, "origin");
    if (prefix == nullptr || !prefix->is_string() || origin == nullptr || !origin->is_string())
        return std::nullopt;
    std::string why;
    const std::optional<Prefix> p = parse_prefix(prefix->get<std::string>(), &why);
    const std::optional<uint64_t> hits = count_at(row, "hits"), bytes = count_at(row, "bytes");
    if (!p || !hits || !bytes) return std::nullopt;
    return TopRule{*p, format_prefix(*p), origin->get<std::string>(), *hits, *bytes};
}

// The top_rules rows with most hits, ties in prefix order (family, length, address, then
// origin), as the dataplane cuts its list: the order is the writer's own, whatever the rows'.
// A row not read, or a second one of the same prefix and origin, is left out and counted.
void top_rules_metrics(const json *nic, size_t top_rules, std::string &out) {
    std::vector<TopRule> rows;
    uint64_t unreadable = 0;
    if (const json *top = exposition::array_at(nic, "top_by_hits"))
        for (const json &row : *top) {
            if (std::optional<TopRule> r = read_top_rule(row))
                rows.push_back(std::move(*r));
            else
                ++unreadable;
        }
    std::sort(rows.begin(), rows.end(), [](const TopRule &a, const TopRule &b) {
        if (a.hits != b.hits) return a.hits > b.hits;
        if (a.prefix != b.prefix) return a.prefix < b.prefix;
        return a.origin < b.origin;
    });
    std::set<std::pair<Prefix, std::string>> seen;  // the first of a prefix and origin counts
    std::vector<const TopRule *> shown;
    for (const TopRule &r : rows) {
        if (!seen.emplace(r.prefix, r.origin).second)
            ++unreadable;
        else if (shown.size() < std::min<size_t>(top_rules, kNicTopRules))
            shown.push_back(&r);
    }
    const std::string port = exposition::label_at(nic, "port").value_or("");
    Family hits("floodgate_nic_rule_hits", Type::gauge,
                "Frames one rte_flow rule of the NIC tier dropped since it was inserted (its "
                "COUNT), for the rules with most hits (floodctl daemon --nic-top-rules, 20 by "
                "default, at most 100), ties in prefix order; origin: block (the operator's) or "
                "escalated (a rule's). A gauge: the series ends when the rule is withdrawn, and a "
                "new rule for the source starts again from 0 (floodgate_nic_hits_total is the "
                "tier's monotonic sum).");
    Family bytes("floodgate_nic_rule_bytes", Type::gauge,
                 "Bytes of those frames, for the same rules as floodgate_nic_rule_hits.");
    for (const TopRule *r : shown) {
        hits.add({{"port", port}, {"prefix", r->prefix_text}, {"origin", r->origin}},
                 Value{r->hits});
        bytes.add({{"port", port}, {"prefix", r->prefix_text}, {"origin", r->origin}},
                  Value{r->bytes});
    }
    hits.write(out);
    bytes.write(out);
    Family skipped("floodgate_nic_rule_rows_unreadable", Type::gauge,
                   "Rows of the dataplane's top rules by hits in this scrape left out: a prefix "
                   "that does not parse, an origin that is not a string, hits or bytes missing, "
                   "negative or past 64 bits, or a second row of the same prefix and origin.");
    if (exposition::array_at(nic, "top_by_hits") != nullptr) skipped.add({}, Value{unreadable});
    skipped.write(out);
}

// One sample per key of stats.nic[section], labelled `label`.
void by_key(const json *nic, const char *section, const char *metric, const char *label,
            const char *help, std::string &out) {
    Family f(metric, Type::counter, help);
    if (const json *s = member(nic, section); s != nullptr && s->is_object())
        for (const auto &[key, v] : s->items()) f.add({{label, key}}, number(v));
    f.write(out);
}

}  // namespace

void nic_tier_metrics(const json *stats, size_t top_rules, std::string &out) {
    const json *nic = member(stats, "nic_tier");
    if (nic == nullptr || !nic->is_object()) return;
    Family rules("floodgate_nic_rules", Type::gauge,
                 "rte_flow drop rules the NIC tier holds on the outside port, by origin (block: "
                 "the operator's; escalated: a rule's).");
    if (const json *o = member(nic, "rules_by_origin"); o != nullptr && o->is_object())
        for (const auto &[origin, v] : o->items()) rules.add({{"origin", origin}}, number(v));
    rules.write(out);
    static constexpr const char *kGauges[][3] = {
        {"floodgate_nic_rules_max", "max_rules", "The tier's cap on rules held at once."},
        {"floodgate_nic_waiting", "waiting",
         "Sources wanted in the NIC and not there, held back by the cap or the insert rate."},
        {"floodgate_nic_held_hits", "held_hits",
         "Frames the rules held now dropped since each was inserted: the sum of every held "
         "rule's COUNT, not only the top rules'. Falls when a rule is withdrawn."},
        {"floodgate_nic_held_bytes", "held_bytes", "Bytes of those frames."},
    };
    for (const auto &[metric, key, help] : kGauges) {
        Family f(metric, Type::gauge, help);
        f.add({}, number_at(nic, key));
        f.write(out);
    }
    static constexpr const char *kCounters[][3] = {
        {"floodgate_nic_inserted_total", "inserted", "rte_flow rules the NIC tier created."},
        {"floodgate_nic_hits_total", "hits",
         "Frames the NIC tier's rules dropped in the NIC (their COUNT, withdrawn rules' too)."},
        {"floodgate_nic_bytes_total", "bytes", "Bytes of those frames."},
        {"floodgate_nic_withdrawn_hits_total", "withdrawn_hits",
         "Frames dropped by rules since withdrawn (their last COUNT): with "
         "floodgate_nic_held_hits, "
         "floodgate_nic_hits_total."},
        {"floodgate_nic_withdrawn_bytes_total", "withdrawn_bytes", "Bytes of those frames."},
        {"floodgate_nic_flushes_total", "flushed_at_start",
         "Flushes of the port's rules at start (what an earlier run left)."},
        {"floodgate_nic_flush_failed_total", "flush_failed", "Flushes at start that failed."},
        {"floodgate_nic_destroy_failed_total", "destroy_failed",
         "Rules the port failed to destroy (still held, tried again)."},
    };
    for (const auto &[metric, key, help] : kCounters) {
        Family f(metric, Type::counter, help);
        f.add({}, number_at(nic, key));
        f.write(out);
    }
    by_key(nic, "refused", "floodgate_nic_refused_total", "reason",
           "Rules the port refused, by reason (item, action, attr, full, other): the source "
           "stays in the tiers below.",
           out);
    by_key(nic, "skipped", "floodgate_nic_skipped_total", "reason",
           "Sources not asked of the port: a prefix longer than the tier asks for, or one "
           "overlapping a live allow.",
           out);
    by_key(nic, "withdrawn", "floodgate_nic_withdrawn_total", "reason",
           "Rules withdrawn, by reason (expired, ttl, unwanted, evicted, stopped).", out);
    top_rules_metrics(nic, top_rules, out);
}

}  // namespace floodgate
