#include "control/metrics/nic_tier_metrics.h"

#include "control/metrics/exposition.h"

namespace floodgate {

using exposition::Family;
using exposition::json;
using exposition::member;
using exposition::number;
using exposition::number_at;
using exposition::Type;

namespace {

// One sample per key of stats.nic[section], labelled `label`.
void by_key(const json *nic, const char *section, const char *metric, const char *label,
            const char *help, std::string &out) {
    Family f(metric, Type::counter, help);
    if (const json *s = member(nic, section); s != nullptr && s->is_object())
        for (const auto &[key, v] : s->items()) f.add({{label, key}}, number(v));
    f.write(out);
}

}  // namespace

void nic_tier_metrics(const json *stats, std::string &out) {
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
}

}  // namespace floodgate
