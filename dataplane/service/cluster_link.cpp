#include "dataplane/service/cluster_link.h"

#include <algorithm>

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
    for (const auto &[key, packets] : request.charges) {
        if (shared_charges(rules, key.first, key.second, packets, *hooks_.hasher, &charges_,
                           &why)) {
            ++charged_keys_;
            charged_packets_ += packets;
        } else {
            ++refused_charges_;
            last_refusal_ = why;
        }
    }
    if (!charges_.empty()) hooks_.charge(charges_);
    for (const auto &[text, ttl_ms] : request.escalations) {
        const std::optional<Prefix> p = parse_prefix(text, &why);
        if (!p || ttl_ms == 0 || ttl_ms > kMaxEscalateNs / 1'000'000) {
            ++escalations_refused_;
            last_refusal_ = "an escalation of '" + text.substr(0, 64) + "'";
        } else if (hooks_.escalate && hooks_.escalate(*p, ttl_ms * 1'000'000)) {
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
            {"refused_charges", refused_charges_},
            {"last_refusal", last_refusal_},
            {"take_timeouts", take_timeouts_},
            {"escalations",
             {{"told", escalations_told_},
              {"added", escalations_added_},
              {"skipped", escalations_skipped_},
              {"refused", escalations_refused_},
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
