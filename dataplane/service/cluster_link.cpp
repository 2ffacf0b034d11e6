#include "dataplane/service/cluster_link.h"

#include <algorithm>

#include "dataplane/api/saturating.h"
#include "dataplane/pipeline/remote_bounds.h"

namespace floodgate {

void ClusterLink::configure(const ClusterOptions &options, uint64_t now_ns) {
    if (options == options_ && state_.configured()) return;
    options_ = options;
    state_ = ClusterState(options, now_ns);
    joined_at_last_take_ = false;
}

void ClusterLink::take(const RuleSet &rules, nlohmann::ordered_json *reply) {
    records_.clear();
    if (!hooks_.take(&records_)) ++take_timeouts_;
    // Told unless the box was alone since the last take (state changes only at syncs).
    SharedTotals mine;
    if (joined_at_last_take_ || state_.joined()) {
        add_shared_totals(rules, records_, &mine);
    } else {
        for (const SharedRecord &r : records_) untold_alone_packets_ += r.packets;
    }
    joined_at_last_take_ = state_.joined();
    nlohmann::ordered_json consumed = nlohmann::ordered_json::array();
    for (const auto &[key, packets] : mine) {
        consumed.push_back({key.first, key.second, packets});
        ++told_keys_;
        told_packets_ += packets;
    }
    (*reply)["consumed"] = std::move(consumed);
    nlohmann::ordered_json escalated = nlohmann::ordered_json::array();
    if (hooks_.take_escalations)
        for (const auto &[prefix, ttl_ns] : hooks_.take_escalations()) {
            escalated.push_back({format_prefix(prefix), std::max<uint64_t>(1, ttl_ns / 1'000'000)});
            ++escalations_told_;
        }
    (*reply)["escalated"] = std::move(escalated);
}

bool ClusterLink::sync(const RuleSet &rules, const ClusterSyncRequest &request, uint64_t now_ns) {
    charges_.clear();
    std::string why;
    for (const auto &[key, rows] : request.charges) {
        // A row past kMaxSharedPackets is bad data: the key's charge refused whole (by
        // shared_charges, as a rule not there is); the rest clamped (remote_bounds.h).
        uint64_t packets = 0;
        bool bad = false;
        for (const uint64_t row : rows) {
            bad = bad || row > kMaxSharedPackets;
            packets = saturating_add(packets, row);
        }
        const CompiledRule *rule = rules.find_rule(key.first);
        const uint64_t charged = bad || rule == nullptr
                                     ? packets
                                     : remote_charge(rules.config().rules[rule->index],
                                                     options_.sync_ns, request.boxes, rows);
        if (shared_charges(rules, key.first, key.second, charged, *hooks_.hasher, &charges_,
                           &why)) {
            ++charged_keys_;
            charged_packets_ += charged;
            if (charged < packets) {
                ++clamped_charges_;
                clamped_packets_ += packets - charged;
            }
        } else {
            ++refused_charges_;
            last_refusal_ = why;
        }
    }
    if (!charges_.empty()) hooks_.charge(charges_);
    const uint64_t ttl_cap_ns = remote_escalation_ttl_cap_ns(rules.config());
    uint64_t taken = 0;
    for (const auto &[text, ttl_ms] : request.escalations) {
        const std::optional<Prefix> p = parse_prefix(text, &why);
        if (!p) {
            ++escalations_refused_;
            last_refusal_ = "an escalation of '" + text.substr(0, 64) + "'";
            continue;
        }
        if (!remote_escalation_long_enough(rules.config(), *p)) {
            ++escalations_short_;
            continue;
        }
        if (++taken > remote_escalations_bound(request.boxes)) {
            ++escalations_over_count_;
            continue;
        }
        // Saturated: a TTL past 2^64 ns is past the cap as well.
        const uint64_t ttl_ns = ttl_ms > UINT64_MAX / 1'000'000 ? UINT64_MAX : ttl_ms * 1'000'000;
        const uint64_t clamped_ns = clamp_remote_ttl(ttl_ns, ttl_cap_ns);
        if (clamped_ns != ttl_ns) ++escalations_ttl_clamped_;
        if (hooks_.escalate && hooks_.escalate(*p, clamped_ns)) {
            ++escalations_added_;
        } else {
            ++escalations_skipped_;
        }
    }
    return state_.on_sync(request.store_ok, request.boxes, now_ns);
}

nlohmann::ordered_json ClusterLink::status(uint64_t now_ns) const {
    if (!options_.set) return {{"configured", false}};
    return {{"configured", true},
            {"name", options_.name},
            {"redis", options_.redis},
            {"sync_ms", options_.sync_ns / 1'000'000},
            {"box_timeout_ms", options_.box_timeout_ns / 1'000'000},
            {"remote_allows", options_.remote_allows},
            {"remote_allow_max_ttl_s", options_.remote_allow_max_ttl_ns / 1'000'000'000},
            {"remote_allow_min_ipv4", options_.remote_allow_min_ipv4},
            {"remote_allow_min_ipv6", options_.remote_allow_min_ipv6},
            {"state", state_.joined() ? "joined" : "alone"},
            {"reason", state_.reason()},
            {"boxes", state_.boxes()},
            {"syncs", state_.syncs()},
            {"failed_syncs", state_.failed_syncs()},
            {"changes", state_.changes()},
            {"fallback_s", state_.fallback_ns(now_ns) / 1e9},
            {"told_keys", told_keys_},
            {"told_packets", told_packets_},
            {"untold_alone_packets", untold_alone_packets_},
            {"charged_keys", charged_keys_},
            {"charged_packets", charged_packets_},
            {"clamped_charges", clamped_charges_},
            {"clamped_packets", clamped_packets_},
            {"refused_charges", refused_charges_},
            {"last_refusal", last_refusal_},
            {"take_timeouts", take_timeouts_},
            {"escalations",
             {{"told", escalations_told_},
              {"added", escalations_added_},
              {"skipped", escalations_skipped_},
              {"refused", escalations_refused_},
              {"short", escalations_short_},
              {"over_count", escalations_over_count_},
              {"ttl_clamped", escalations_ttl_clamped_},
              {"xdp", hooks_.escalate != nullptr}}}};
}

std::string ClusterLink::change_line() const {
    if (state_.joined())
        return "cluster " + options_.name + ": joined (" + std::to_string(state_.boxes()) +
               " boxes live): shared rules count with the cluster";
    return "cluster " + options_.name + ": alone (" + state_.reason() +
           "): shared rules fall back (local: limit / " + std::to_string(state_.boxes()) +
           "; fail-open: refuse nothing)";
}

}  // namespace floodgate
