#include "control/metrics/metrics.h"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "control/metrics/cluster_metrics.h"
#include "control/metrics/counter_help.h"
#include "control/metrics/destination_metrics.h"
#include "control/metrics/exposition.h"
#include "control/metrics/flowspec_metrics.h"
#include "control/metrics/nic_tier_metrics.h"
#include "dataplane/api/malformed.h"
#include "dataplane/api/stats.h"

namespace floodgate {

namespace {

// How values are read from the replies and families written: control/metrics/exposition.h.
using exposition::array_at;
using exposition::Family;
using exposition::flag;
using exposition::json;
using exposition::label_at;
using exposition::member;
using exposition::number;
using exposition::number_at;
using exposition::seconds_from_ns;
using exposition::Type;
using exposition::Value;

// ---- The replies, one function each ----

void status_metrics(const json *status, std::string &out) {
    const json *ruleset = member(status, "ruleset");
    Family version("floodgate_ruleset_version", Type::gauge,
                   "Version of the ruleset in force: 1 at dataplane start, up by one on every "
                   "accepted load, mode change or override change.");
    version.add({}, number_at(ruleset, "version"));
    version.write(out);

    Family loaded("floodgate_ruleset_loaded_timestamp_seconds", Type::gauge,
                  "Unix time the ruleset in force was swapped in.");
    loaded.add({}, number_at(ruleset, "loaded_unix"));
    loaded.write(out);

    Family info("floodgate_ruleset_info", Type::gauge,
                "The rules file in force (source) and who loaded it (origin: startup or "
                "floodctl); always 1.");
    auto source = label_at(ruleset, "source");
    auto origin = label_at(ruleset, "origin");
    if (source && origin) info.add({{"source", *source}, {"origin", *origin}}, flag(true));
    info.write(out);

    Family reloads("floodgate_reloads_total", Type::counter,
                   "Ruleset changes (loads, mode changes, override changes and expiries) the "
                   "dataplane accepted (result=ok) or refused (result=failed).");
    const json *r = member(status, "reloads");
    reloads.add({{"result", "ok"}}, number_at(r, "ok"));
    reloads.add({{"result", "failed"}}, number_at(r, "failed"));
    reloads.write(out);

    Family expired("floodgate_overrides_expired_total", Type::counter,
                   "Runtime overrides removed because their TTL ran out.");
    expired.add({}, number_at(status, "overrides_expired"));
    expired.write(out);

    Family refused("floodgate_control_requests_refused_total", Type::counter,
                   "Control requests the dataplane refused as malformed or invalid.");
    refused.add({}, number_at(status, "requests_refused"));
    refused.write(out);

    Family started("floodgate_dataplane_start_timestamp_seconds", Type::gauge,
                   "Unix time the dataplane process started.");
    started.add({}, number_at(status, "started_unix"));
    started.write(out);

    Family workers("floodgate_workers", Type::gauge, "Worker cores the dataplane runs.");
    workers.add({}, number_at(status, "workers"));
    workers.write(out);
}

void overrides_metrics(const json *reply, std::string &out) {
    Family f("floodgate_overrides", Type::gauge,
             "Runtime overrides (floodctl allow/block) in force, per list.");
    // A reply without the list (an error reply) says nothing: no samples rather than zeros.
    if (const json *rows = array_at(reply, "overrides")) {
        uint64_t allow = 0, block = 0;
        for (const json &row : *rows) {
            auto list = label_at(&row, "list");
            if (list == "allow")
                ++allow;
            else if (list == "block")
                ++block;
        }
        f.add({{"list", "allow"}}, Value{allow});
        f.add({{"list", "block"}}, Value{block});
    }
    f.write(out);
}

// Per worker core: stats.cores[], labelled by its "core" index. A core without one is skipped.
void core_metrics(const json *stats, std::string &out) {
    std::vector<std::pair<std::string, const json *>> labelled;
    if (const json *cores = array_at(stats, "cores"))
        for (const json &c : *cores)
            if (auto label = label_at(&c, "core")) labelled.emplace_back(std::move(*label), &c);

#define FG_X(name)                                                                           \
    {                                                                                        \
        Family f("floodgate_" #name "_total", Type::counter, worker_counter_help(#name));    \
        for (const auto &[core, c] : labelled) f.add({{"core", core}}, number_at(c, #name)); \
        f.write(out);                                                                        \
    }
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X

    struct Field {
        const char *metric;
        Type type;
        const char *help;
        const char *key;
        const char *under;  // cores[].table or cores[].steering; nullptr: cores[] itself
        bool ns;            // nanoseconds, exported as seconds
    };
    static constexpr Field kFields[] = {
        {"floodgate_held_packets", Type::gauge,
         "Packets waiting in the core's shape queues (action: shape) for their release time.",
         "held", nullptr, false},
        {"floodgate_proxy_connections", Type::gauge,
         "syn-proxy connections in the core's table (opening, open, closing or failed).",
         "proxy_connections", nullptr, false},
        {"floodgate_table_occupancy", Type::gauge,
         "Limit-table slots holding a TAT (live, reserved, or expired not yet swept).", "occupancy",
         "table", false},
        {"floodgate_table_capacity", Type::gauge, "Limit-table slots of the worker core.",
         "capacity", "table", false},
        {"floodgate_table_reclaims_total", Type::counter,
         "Expired limit-table entries cleared by the sweep or reused by an insert.", "reclaims",
         "table", false},
        {"floodgate_table_full_events_total", Type::counter,
         "Limit-table inserts refused because every candidate slot was live.", "full_events",
         "table", false},
        {"floodgate_merge_max_lag_seconds", Type::gauge,
         "Longest time, since the dataplane started, between another core publishing its "
         "consumption and this core applying it.",
         "merge_max_lag_ns", nullptr, true},
        {"floodgate_merge_records_lost_total", Type::counter,
         "Consumption records of other cores overwritten on their rings before this core read "
         "them.",
         "merge_records_lost", nullptr, false},
        {"floodgate_steering_handed_out_total", Type::counter,
         "Frames this core received and handed to the worker that owns their source (software "
         "steering).",
         "handed_out", "steering", false},
        {"floodgate_steering_taken_in_total", Type::counter,
         "Frames other cores handed to this one, their owner, and it took in (software steering).",
         "taken_in", "steering", false},
        {"floodgate_steering_ring_full_total", Type::counter,
         "Frames this core received and freed because their owner's ring was full (never "
         "decided).",
         "ring_full", "steering", false},
        {"floodgate_steering_unhashed_total", Type::counter,
         "Frames this core received from the outside port without the NIC's RSS hash, handed "
         "to their owner in software (NIC steering).",
         "unhashed", "steering", false},
    };
    for (const Field &field : kFields) {
        Family f(field.metric, field.type, field.help);
        for (const auto &[core, c] : labelled) {
            auto v = number_at(field.under != nullptr ? member(c, field.under) : c, field.key);
            f.add({{"core", core}}, field.ns ? seconds_from_ns(v) : v);
        }
        f.write(out);
    }
}

void rule_metrics(const json *stats, std::string &out) {
    std::vector<std::pair<std::string, const json *>> named;
    if (const json *rules = array_at(stats, "rules"))
        for (const json &r : *rules)
            if (auto name = label_at(&r, "name")) named.emplace_back(std::move(*name), &r);

#define FG_X(name)                                                                           \
    {                                                                                        \
        Family f("floodgate_rule_" #name "_total", Type::counter, rule_counter_help(#name)); \
        for (const auto &[rule, r] : named) f.add({{"rule", rule}}, number_at(r, #name));    \
        f.write(out);                                                                        \
    }
    FG_RULE_COUNTERS(FG_X)
#undef FG_X

    Family shadow("floodgate_rule_shadow", Type::gauge,
                  "1 when the rule is in shadow mode (counts, drops nothing), 0 when it enforces.");
    for (const auto &[rule, r] : named)
        if (auto mode = label_at(r, "mode")) shadow.add({{"rule", rule}}, flag(*mode == "shadow"));
    shadow.write(out);

    Family held("floodgate_rule_held_packets", Type::gauge,
                "Shape rules: packets waiting in the rule's queues now, summed over the cores.");
    Family wait("floodgate_rule_longest_wait_seconds", Type::gauge,
                "Shape rules: the longest a packet sent so far waited in the rule's queue.");
    for (const auto &[rule, r] : named)
        if (auto action = label_at(r, "action"); action && *action == "shape") {
            held.add({{"rule", rule}}, number_at(r, "held"));
            wait.add({{"rule", rule}}, seconds_from_ns(number_at(r, "longest_wait_ns")));
        }
    held.write(out);
    wait.write(out);

    Family limit("floodgate_rule_limit_packets_per_second", Type::gauge,
                 "The rate the rule holds each of its keys to now: as configured, or for an "
                 "adaptive rule as learned.");
    for (const auto &[rule, r] : named)
        if (const json *v = member(r, "limit_per_s"); v != nullptr && v->is_number())
            limit.add({{"rule", rule}}, Value{v->get<double>()});
    limit.write(out);
    Family stale("floodgate_rule_adaptive_stale", Type::gauge,
                 "1 when an adaptive rule has had no response sample for 5 s (its rate stays "
                 "where it is), else 0.");
    Family response("floodgate_rule_adaptive_response_seconds", Type::gauge,
                    "An adaptive rule's last sample: the protected server's time from a request "
                    "to its first response.");
    Family samples("floodgate_rule_adaptive_samples_total", Type::counter,
                   "An adaptive rule's response samples.");
    Family late("floodgate_rule_adaptive_late_total", Type::counter,
                "An adaptive rule's response samples over its target.");
    Family cuts("floodgate_rule_adaptive_decreases_total", Type::counter,
                "Times an adaptive rule's rate was cut (multiplicative decrease).");
    for (const auto &[rule, r] : named) {
        const json *a = member(r, "adaptive");
        if (a == nullptr || !a->is_object()) continue;
        const json *s = member(a, "stale");
        stale.add({{"rule", rule}}, flag(s != nullptr && s->is_boolean() && s->get<bool>()));
        response.add({{"rule", rule}}, seconds_from_ns(number_at(a, "last_response_ns")));
        samples.add({{"rule", rule}}, number_at(a, "samples"));
        late.add({{"rule", rule}}, number_at(a, "late"));
        cuts.add({{"rule", rule}}, number_at(a, "decreases"));
    }
    stale.write(out);
    response.write(out);
    samples.write(out);
    late.write(out);
    cuts.write(out);

    Family top("floodgate_rule_top_refused_packets", Type::gauge,
               "Packets the rule refused from each of its top refused sources (prefixes of the "
               "rule's key length), summed over the worker cores. A Space-Saving estimate: an "
               "upper bound on the true count, or, counted from samples (top_offenders: "
               "sampled), within floodgate_rule_top_refused_sampling_error_packets above it. "
               "Sources come and go from the list.");
    // Its lower bound beside it: the count less the summary's error, what it can vouch for.
    Family vouched("floodgate_rule_top_refused_guaranteed_packets", Type::gauge,
                   "The lower bound of floodgate_rule_top_refused_packets: packets the rule "
                   "certainly refused from the source (the estimate less its Space-Saving error "
                   "and, counted from samples, less its sampling error: at 99% confidence).");
    Family sampled("floodgate_rule_top_refused_sampling_error_packets", Type::gauge,
                   "How far floodgate_rule_top_refused_packets may be from the true count "
                   "either way at 99% confidence, counted from sampled refusals (top_offenders: "
                   "sampled, past a core's first 1,024 refusals of a rule each second); 0 when "
                   "every refusal was counted.");
    for (const auto &[rule, r] : named) {
        const json *rows = array_at(r, "top_refused");
        if (rows == nullptr) continue;
        for (const json &row : *rows)
            if (auto source = label_at(&row, "source")) {
                top.add({{"rule", rule}, {"source", *source}}, number_at(&row, "count"));
                const json *count = member(&row, "count"), *error = member(&row, "error");
                if (count != nullptr && error != nullptr && count->is_number_integer() &&
                    error->is_number_integer()) {
                    const json *s = member(&row, "sampling_error");
                    const uint64_t c = count->get<uint64_t>(),
                                   e = error->get<uint64_t>() +
                                       (s != nullptr && s->is_number_integer() ? s->get<uint64_t>()
                                                                               : 0);
                    vouched.add({{"rule", rule}, {"source", *source}}, Value{c > e ? c - e : 0});
                    sampled.add({{"rule", rule}, {"source", *source}},
                                Value{e - error->get<uint64_t>()});
                }
            }
    }
    top.write(out);
    vouched.write(out);
    sampled.write(out);
}

// The NICs' own counters (stats.nic[]), which include what never reached a worker.
void nic_metrics(const json *stats, std::string &out) {
    struct Port {
        std::string port, role;
        const json *counters;
    };
    std::vector<Port> ports;
    if (const json *nics = array_at(stats, "nic"))
        for (const json &n : *nics) {
            auto port = label_at(&n, "port");
            auto role = label_at(&n, "role");
            if (port && role) ports.push_back({std::move(*port), std::move(*role), &n});
        }
    static constexpr const char *kFields[][3] = {
        {"floodgate_port_rx_packets_total", "rx_packets", "Frames the NIC received."},
        {"floodgate_port_rx_bytes_total", "rx_bytes", "Bytes the NIC received."},
        {"floodgate_port_rx_missed_total", "rx_missed",
         "Frames the NIC dropped because the RX queues were full."},
        {"floodgate_port_rx_errors_total", "rx_errors", "Erroneous frames the NIC received."},
        {"floodgate_port_rx_nombuf_total", "rx_nombuf",
         "Frames the NIC dropped for want of an mbuf."},
        {"floodgate_port_tx_packets_total", "tx_packets", "Frames the NIC sent."},
        {"floodgate_port_tx_bytes_total", "tx_bytes", "Bytes the NIC sent."},
        {"floodgate_port_tx_errors_total", "tx_errors", "Frames the NIC failed to send."},
    };
    for (const auto &[metric, key, help] : kFields) {
        Family f(metric, Type::counter, help);
        for (const Port &p : ports)
            f.add({{"port", p.port}, {"role", p.role}}, number_at(p.counters, key));
        f.write(out);
    }
    // The port watch's view (dataplane/live/port_watch.h), where the dataplane has one.
    Family up("floodgate_port_up", Type::gauge,
              "1 while the port can carry frames, 0 while its link or kernel interface is gone.");
    Family losses("floodgate_port_losses_total", Type::counter,
                  "Times the port went from up to lost (link down, interface gone or down).");
    for (const Port &p : ports) {
        const auto link = p.counters->find("link");
        if (link != p.counters->end() && link->is_string())
            up.add({{"port", p.port}, {"role", p.role}},
                   exposition::Value{uint64_t{*link == "up" ? 1u : 0u}});
        losses.add({{"port", p.port}, {"role", p.role}}, number_at(p.counters, "losses"));
    }
    up.write(out);
    losses.write(out);
}

// The workers' own per-direction counters (stats.ports), summed over the workers.
void direction_metrics(const json *stats, std::string &out) {
    const json *ports = member(stats, "ports");
    static constexpr const char *kDirections[] = {"outside_to_inside", "inside_to_outside",
                                                  "answers_to_outside"};
    static constexpr const char *kFields[][3] = {
        {"floodgate_direction_rx_total", "rx", "Frames the workers received, per direction."},
        {"floodgate_direction_tx_total", "tx",
         "Frames the workers handed to the TX queue, per direction."},
        {"floodgate_direction_tx_failed_total", "tx_failed",
         "Frames the NIC refused to send, per direction (sent = tx - tx_failed)."},
    };
    for (const auto &[metric, key, help] : kFields) {
        Family f(metric, Type::counter, help);
        for (const char *direction : kDirections)
            f.add({{"direction", direction}}, number_at(member(ports, direction), key));
        f.write(out);
    }
}

// The reasons of FG_MALFORMED_REASONS, but none (which is no malformation).
constexpr std::string_view kMalformedReasons[] = {
#define FG_X(name) #name,
    FG_MALFORMED_REASONS(FG_X)
#undef FG_X
};
static_assert(kMalformedReasons[0] == "none", "FG_MALFORMED_REASONS starts with none");

// Every reason of the list has its sample from the first scrape, 0 when the dataplane leaves
// it out (it may write only the reasons seen), so that rate() and alerts see the first
// malformed frame of a kind rather than a series appearing. A reason the list does not know
// (a newer dataplane) is written as it comes.
void malformed_metrics(const json *stats, std::string &out) {
    Family f("floodgate_malformed_by_reason_total", Type::counter,
             "Malformed frames per reason, summed over the worker cores.");
    const json *reasons = member(stats, "malformed_reasons");
    if (reasons != nullptr && reasons->is_object()) {
        const auto known = [](std::string_view reason) {
            for (std::string_view k : kMalformedReasons)
                if (k == reason) return true;
            return false;
        };
        for (std::string_view reason : kMalformedReasons) {
            if (reason == "none") continue;
            auto it = reasons->find(std::string(reason));
            // Present but not a number: a broken reply, so no sample rather than a made-up 0.
            f.add({{"reason", reason}}, it == reasons->end() ? Value{uint64_t{0}} : number(*it));
        }
        for (const auto &[reason, n] : reasons->items())
            if (!known(reason)) f.add({{"reason", reason}}, number(n));
    }
    f.write(out);
}

// Answers sent per kind, every kind from the first scrape.
void answer_metrics(const json *stats, std::string &out) {
    Family f("floodgate_answers_by_kind_total", Type::counter,
             "Answers sent in place of refused packets, per kind, summed over the worker cores.");
    static constexpr const char *kKinds[] = {
#define FG_X(name) #name,
        FG_ANSWER_KINDS(FG_X)
#undef FG_X
    };
    const json *kinds = member(stats, "answers_by_kind");
    if (kinds != nullptr && kinds->is_object())
        for (const char *kind : kKinds) {
            auto it = kinds->find(kind);
            f.add({{"kind", kind}}, it == kinds->end() ? Value{uint64_t{0}} : number(*it));
        }
    f.write(out);
}

// The XDP tier's section (stats.xdp), present when the dataplane runs it (net_af_xdp with
// floodgate's program): what the program did per frame, what the maps hold, what escalation did.
void xdp_metrics(const json *stats, std::string &out) {
    const json *xdp = member(stats, "xdp");
    if (xdp == nullptr || !xdp->is_object()) return;
    Family frames("floodgate_xdp_frames_total", Type::counter,
                  "Frames the XDP program judged, by outcome: packets (all), passed, unparsed, "
                  "block_hits and escalated_hits (dropped in the driver), allow_hits (of "
                  "passed).");
    if (const json *c = member(xdp, "counters"); c != nullptr && c->is_object())
        for (const auto &[name, v] : c->items()) frames.add({{"counter", name}}, number(v));
    frames.write(out);
    Family entries("floodgate_xdp_entries", Type::gauge,
                   "Entries of the XDP maps by who wrote them (rules, override, operator, "
                   "escalated).");
    if (const json *e = member(xdp, "entries"); e != nullptr && e->is_object())
        for (const auto &[origin, v] : e->items()) entries.add({{"origin", origin}}, number(v));
    entries.write(out);
    const json *esc = member(xdp, "escalations");
    static constexpr const char *kEscalations[][3] = {
        {"floodgate_xdp_escalations_total", "total",
         "Sources pushed down into the XDP block map because a rule kept refusing them."},
        {"floodgate_xdp_escalations_skipped_total", "skipped",
         "Escalations not written: an entry of the same prefix was there already."},
        {"floodgate_xdp_escalations_failed_total", "failed",
         "Escalations the XDP map refused (full)."},
        {"floodgate_xdp_escalations_expired_total", "expired",
         "Escalated entries removed when their TTL ended."},
    };
    for (const auto &[metric, key, help] : kEscalations) {
        Family f(metric, Type::counter, help);
        f.add({}, number_at(esc, key));
        f.write(out);
    }
    const json *sampled = member(esc, "sampled");
    static constexpr const char *kSampled[][4] = {
        {"floodgate_xdp_refusal_samples_total", "samples_taken", "counter",
         "Refusals of escalating rules sampled by the workers for escalation (each stands for "
         "refusals_a_sample refusals)."},
        {"floodgate_xdp_refusal_samples_lost_total", "samples_lost", "counter",
         "Samples lost to a full ring: the sampled counts read low by this share."},
        {"floodgate_xdp_sampled_sources", "sources", "gauge",
         "Sources with sampled refusals in the last 10 s."},
        {"floodgate_xdp_sampled_sources_untracked_total", "sources_untracked", "counter",
         "Samples of sources past the 65,536 tracked, not counted."},
    };
    for (const auto &[metric, key, type, help] : kSampled) {
        Family f(metric, std::string_view(type) == "gauge" ? Type::gauge : Type::counter, help);
        f.add({}, number_at(sampled, key));
        f.write(out);
    }
}

void stats_metrics(const json *stats, size_t nic_top_rules, std::string &out) {
    core_metrics(stats, out);
    malformed_metrics(stats, out);
    answer_metrics(stats, out);

    const json *table = member(stats, "table");
    Family per_entry("floodgate_table_bytes_per_entry", Type::gauge,
                     "Bytes of one limit-table entry.");
    per_entry.add({}, number_at(table, "bytes_per_entry"));
    per_entry.write(out);

    Family memory("floodgate_table_memory_bytes", Type::gauge,
                  "Memory of the limit tables of all worker cores.");
    memory.add({}, number_at(table, "memory_bytes"));
    memory.write(out);

    Family interval("floodgate_merge_interval_seconds", Type::gauge,
                    "How often the worker cores share their consumption with one another.");
    interval.add({}, seconds_from_ns(number_at(member(stats, "merge"), "interval_ns")));
    interval.write(out);

    // How packets reach their owner worker, and whether the NIC refused to steer them.
    const json *steering = member(stats, "steering");
    Family mode("floodgate_steering_info", Type::gauge,
                "1, labelled with how packets reach the worker that owns their source: nic, "
                "software, none or one worker.");
    if (auto m = label_at(steering, "mode")) mode.add({{"mode", *m}}, flag(true));
    mode.write(out);
    Family refused("floodgate_steering_nic_refused", Type::gauge,
                   "1 when the outside port refused RSS by source prefix (the reason is in the "
                   "stats' steering.nic_refused and the log).");
    if (steering != nullptr && steering->is_object())
        refused.add({}, flag(member(steering, "nic_refused") != nullptr));
    refused.write(out);

    rule_metrics(stats, out);
    nic_metrics(stats, out);
    direction_metrics(stats, out);
    xdp_metrics(stats, out);
    nic_tier_metrics(stats, nic_top_rules, out);
}

}  // namespace

std::string prometheus_text(const MetricsInput &in) {
    std::string out;
    Family up("floodgate_dataplane_up", Type::gauge,
              "1 when the daemon's last poll of the dataplane succeeded, else 0.");
    up.add({}, flag(in.dataplane_up));
    up.write(out);

    Family connects("floodgate_control_dataplane_connects_total", Type::counter,
                    "Times the daemon connected (or reconnected) to the dataplane's socket.");
    connects.add({}, Value{in.dataplane_connects});
    connects.write(out);

    if (in.auth_refusals) {
        Family refused("floodgate_metrics_auth_refused_total", Type::counter,
                       "Requests to this endpoint refused for want of credentials: no basic "
                       "auth (no_credentials), a user or password that does not match "
                       "(wrong_credentials), no verified client certificate "
                       "(client_certificate), credentials not checked because the endpoint's "
                       "budget of bcrypt checks was spent (throttled, answered 429); and "
                       "connections closed without a request: a TLS handshake that failed, or "
                       "nothing sent (no_request).");
        refused.add({{"reason", "no_credentials"}}, Value{in.auth_refusals->no_credentials});
        refused.add({{"reason", "wrong_credentials"}}, Value{in.auth_refusals->wrong_credentials});
        refused.add({{"reason", "client_certificate"}},
                    Value{in.auth_refusals->client_certificate});
        refused.add({{"reason", "throttled"}}, Value{in.auth_refusals->throttled});
        refused.add({{"reason", "no_request"}}, Value{in.auth_refusals->no_request});
        refused.write(out);
    }

    // A reply that did not come, or is not even an object, writes none of its families.
    const auto usable = [](const json *reply) { return reply != nullptr && reply->is_object(); };
    if (usable(in.status)) status_metrics(in.status, out);
    if (usable(in.status)) cluster_metrics(in.status, in.cluster, out);
    if (usable(in.flowspec)) flowspec_metrics(in.flowspec, out);
    if (usable(in.overrides)) overrides_metrics(in.overrides, out);
    if (usable(in.stats)) stats_metrics(in.stats, in.nic_top_rules, out);
    if (usable(in.stats)) destination_metrics(in.stats, out);
    return out;
}

}  // namespace floodgate
