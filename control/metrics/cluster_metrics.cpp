#include "control/metrics/cluster_metrics.h"

#include <string>
#include <utility>

#include "control/metrics/exposition.h"

namespace floodgate {

using exposition::Family;
using exposition::flag;
using exposition::json;
using exposition::label_at;
using exposition::member;
using exposition::number_at;
using exposition::Type;
using exposition::Value;

void cluster_metrics(const json *status, const json *daemon, std::string &out) {
    const json *c = member(status, "cluster");
    if (c == nullptr || !c->is_object() || !c->value("configured", false)) return;
    const auto name = label_at(c, "name");
    if (!name) return;
    const std::initializer_list<exposition::Label> of = {{"cluster", *name}};
    Family joined("floodgate_cluster_joined", Type::gauge,
                  "1 while the box counts its shared rules with the cluster, 0 while it is alone "
                  "(its shared rules at their fallback).");
    joined.add(of, flag(c->value("state", "") == "joined"));
    joined.write(out);
    Family alone("floodgate_cluster_fallback_seconds_total", Type::counter,
                 "Time the box spent alone, its shared rules at their fallback.");
    alone.add(of, number_at(c, "fallback_s"));
    alone.write(out);
    Family changes("floodgate_cluster_changes_total", Type::counter,
                   "Times the box joined or left the cluster.");
    changes.add(of, number_at(c, "changes"));
    changes.write(out);
    Family boxes("floodgate_cluster_live_boxes", Type::gauge,
                 "Boxes live in the cluster as last known (the divisor of a local fallback).");
    boxes.add(of, number_at(c, "boxes"));
    boxes.write(out);
    Family syncs("floodgate_cluster_syncs_total", Type::counter,
                 "Syncs floodctl delivered to the dataplane, by whether the store answered.");
    const json *all = member(c, "syncs"), *failed = member(c, "failed_syncs");
    if (all != nullptr && failed != nullptr && all->is_number_unsigned() &&
        failed->is_number_unsigned() && all->get<uint64_t>() >= failed->get<uint64_t>()) {
        syncs.add({{"cluster", *name}, {"result", "ok"}},
                  Value{all->get<uint64_t>() - failed->get<uint64_t>()});
        syncs.add({{"cluster", *name}, {"result", "failed"}}, Value{failed->get<uint64_t>()});
    }
    syncs.write(out);
    Family packets("floodgate_cluster_packets_total", Type::counter,
                   "Packets of shared keys: told the other boxes (told), charged here for the "
                   "others (charged), admitted alone and never told (alone).");
    packets.add({{"cluster", *name}, {"kind", "told"}}, number_at(c, "told_packets"));
    packets.add({{"cluster", *name}, {"kind", "charged"}}, number_at(c, "charged_packets"));
    packets.add({{"cluster", *name}, {"kind", "alone"}}, number_at(c, "untold_alone_packets"));
    packets.write(out);
    Family refused("floodgate_cluster_refused_total", Type::counter,
                   "Bad data refused: entries and lines from the store (where=store), charges "
                   "that named no shared rule or key (where=dataplane), escalations and charges "
                   "past what one sync request may carry (where=request).");
    refused.add({{"cluster", *name}, {"where", "dataplane"}}, number_at(c, "refused_charges"));
    if (daemon != nullptr && daemon->is_object()) {
        refused.add({{"cluster", *name}, {"where", "store"}}, number_at(daemon, "refused"));
        refused.add({{"cluster", *name}, {"where", "request"}}, number_at(daemon, "left_out"));
    }
    refused.write(out);
    Family bounded("floodgate_cluster_bounded_total", Type::counter,
                   "What other boxes sent, bounded (docs/cluster.md): charges clamped "
                   "and their packets left out, escalations and allows refused or clamped, by "
                   "reason.");
    const auto add = [&](const char *what, const char *reason, const json *at, const char *key) {
        bounded.add({{"cluster", *name}, {"what", what}, {"reason", reason}}, number_at(at, key));
    };
    add("charge", "clamped", c, "clamped_charges");
    add("charge_packets", "clamped", c, "clamped_packets");
    add("escalation", "short", member(c, "escalations"), "short");
    add("escalation", "over_count", member(c, "escalations"), "over_count");
    add("escalation", "ttl_clamped", member(c, "escalations"), "ttl_clamped");
    for (const char *reason : {"off", "short", "malformed", "over_count", "ttl_clamped"})
        add("allow", reason, member(daemon, "allows_bounded"), reason);
    bounded.write(out);
    if (daemon == nullptr || !daemon->is_object()) return;
    Family up("floodgate_cluster_store_up", Type::gauge,
              "1 when the store (Redis) answered the daemon's last sync.");
    up.add(of, flag(daemon->value("store_ok", false)));
    up.write(out);
    Family bytes("floodgate_cluster_store_received_bytes_total", Type::counter,
                 "Bytes the daemon received from the store.");
    bytes.add(of, number_at(member(daemon, "store"), "bytes"));
    bytes.write(out);
    Family refusals("floodgate_cluster_store_refusals_total", Type::counter,
                    "Connections to the store given up: it refused the daemon's login "
                    "(reason=login), or the TLS handshake failed (reason=tls).");
    refusals.add({{"cluster", *name}, {"reason", "login"}},
                 number_at(member(daemon, "store"), "auth_refused"));
    refusals.add({{"cluster", *name}, {"reason", "tls"}},
                 number_at(member(daemon, "store"), "tls_refused"));
    refusals.write(out);
    Family entries("floodgate_cluster_entries_refused_total", Type::counter,
                   "Other boxes' entries not believed, by reason: no signature (unsigned), a key "
                   "id this box does not hold (unknown_key), a MAC that does not check (bad_mac), "
                   "a sequence number already taken (replayed), a time outside box_timeout of "
                   "this box's clock (too_old, future).");
    if (const json *by = member(member(daemon, "store"), "entries_refused");
        by != nullptr && by->is_object())
        for (const auto &[reason, n] : by->items())
            entries.add({{"cluster", *name}, {"reason", reason}}, number_at(by, reason.c_str()));
    entries.write(out);
    Family lost("floodgate_cluster_syncs_lost_total", Type::counter,
                "Sync rounds lost on the way to the dataplane: refused by it (reason=refused), "
                "or not answered (reason=no_answer); the daemon's last_error says why.");
    lost.add({{"cluster", *name}, {"reason", "refused"}}, number_at(daemon, "syncs_refused"));
    lost.add({{"cluster", *name}, {"reason", "no_answer"}},
             number_at(daemon, "dataplane_failures"));
    lost.write(out);
    Family trip("floodgate_cluster_store_round_trip_seconds", Type::gauge,
                "The store's round trip per sync over the last 10 s (connect, TLS and login when "
                "needed, and the one script call): its median (stat=p50), 99th percentile "
                "(stat=p99) and maximum (stat=max), nearest rank; none without a sync then.");
    if (const json *t = member(daemon, "store_round_trip");
        t != nullptr && t->is_object() && t->value("samples", uint64_t{0}) > 0)
        for (const auto &[stat, field] :
             {std::pair{"p50", "p50_ms"}, std::pair{"p99", "p99_ms"}, std::pair{"max", "max_ms"}})
            trip.add({{"cluster", *name}, {"stat", stat}}, Value{t->value(field, 0.0) / 1000.0});
    trip.write(out);
    Family timeouts("floodgate_cluster_store_timeouts_total", Type::counter,
                    "Syncs given up because the store did not answer within the attempt's bound "
                    "(half an interval, 200 ms at most): a slow or stopped store.");
    timeouts.add(of, number_at(member(daemon, "store"), "timeouts"));
    timeouts.write(out);
    Family keys("floodgate_cluster_keys", Type::gauge,
                "Cluster keys the daemon signs and checks entries with (1, or 2 during a "
                "rotation); 0: no --cluster-key-file, so no sync and the box alone.");
    const json *ids = member(daemon, "keys");
    keys.add(of, Value{ids != nullptr && ids->is_array() ? uint64_t{ids->size()} : uint64_t{0}});
    keys.write(out);
    Family rotations("floodgate_cluster_key_rotations_total", Type::counter,
                     "Times the daemon read new keys from its changed --cluster-key-file.");
    rotations.add(of, number_at(daemon, "key_reloads"));
    rotations.write(out);
    Family key_refused("floodgate_cluster_key_file_refused", Type::gauge,
                       "1 while the changed --cluster-key-file is refused (malformed, or readable "
                       "by others): the keys read before are still in use.");
    key_refused.add(of, flag(!daemon->value("key_file_refused", std::string()).empty()));
    key_refused.write(out);
}

}  // namespace floodgate
