#include "dataplane/service/xdp_feed.h"

#include <cstdio>

#include "dataplane/api/numbers.h"

namespace floodgate {

namespace {

// A full walk of the maps (for operator entries that expired) is not needed every second.
constexpr uint64_t kSweepNs = 60 * kSecondNs;

std::vector<XdpEntry> owned_entries(const RunningRules &r, uint64_t now_ns) {
    std::vector<XdpEntry> out;
    for (const Prefix &p : r.allow) out.push_back({p, FG_XDP_ORIGIN_rules, true, 0});
    for (const Prefix &p : r.block) out.push_back({p, FG_XDP_ORIGIN_rules, false, 0});
    for (const PrefixOverride &o : r.overrides)
        if (o.expires_ns == 0 || o.expires_ns > now_ns)
            out.push_back({o.prefix, FG_XDP_ORIGIN_override, o.verdict == PrefixVerdict::allow,
                           o.expires_ns});
    return out;
}

}  // namespace

XdpFeed::XdpFeed(std::unique_ptr<XdpTier> tier, std::string iface, std::string pin_dir)
    : tier_(std::move(tier)), iface_(std::move(iface)), pin_dir_(std::move(pin_dir)) {}

void XdpFeed::tick(uint64_t now_ns, uint64_t version, const std::function<RunningRules()> &running,
                   const std::function<nlohmann::ordered_json()> &stats,
                   const std::function<RefusalBatch()> &sampled) {
    bool changed, due;
    {
        std::lock_guard<std::mutex> guard(lock_);
        changed = version != version_;
        due = now_ns >= next_ns_;
    }
    const RunningRules rules = changed ? running() : RunningRules{};
    const nlohmann::ordered_json live = due ? stats() : nlohmann::ordered_json{};
    const RefusalBatch batch = sampled();
    std::lock_guard<std::mutex> guard(lock_);
    now_ns_ = now_ns;
    if (changed) reconcile(rules, now_ns);
    judge_.add(batch, now_ns);
    if (!due) return;
    next_ns_ = now_ns + kSecondNs;
    // Our escalated entries whose TTL ended; then, now and then, everything that expired.
    std::string ignored;
    for (auto it = escalated_.begin(); it != escalated_.end();) {
        if (it->expires_ns > now_ns) {
            ++it;
            continue;
        }
        // Ours if still escalated and due (a newer escalation of the same source has its own
        // record); gone already (floodctl xdp del, or a sweep) counts as expired too.
        XdpEntry there;
        const bool present = tier_->find(it->key, &there);
        const bool ours = present && there.origin == FG_XDP_ORIGIN_escalated &&
                          there.expires_ns == it->expires_ns;
        if (!present || (ours && tier_->remove(it->key, &ignored))) {
            ++escalations_expired_;
            if (entries_[FG_XDP_ORIGIN_escalated] > 0) --entries_[FG_XDP_ORIGIN_escalated];
        }
        it = escalated_.erase(it);
    }
    escalate(now_ns, live);
    if (now_ns >= next_sweep_ns_) {
        next_sweep_ns_ = now_ns + kSweepNs;
        tier_->expire(now_ns);
        count_entries();
    }
}

void XdpFeed::reconcile(const RunningRules &running, uint64_t now_ns) {
    last_reconcile_ = tier_->reconcile(owned_entries(running, now_ns));
    reconcile_failed_ += last_reconcile_.failed;
    if (last_reconcile_.failed > 0)
        std::fprintf(stderr, "floodgate run: the XDP maps refused %zu entries (full?)\n",
                     last_reconcile_.failed);
    judge_.set_rules(running.rules);
    version_ = running.version;
    count_entries();
}

void XdpFeed::escalate(uint64_t now_ns, const nlohmann::ordered_json &stats) {
    const std::vector<Escalation> now = judge_.judge(now_ns, stats);
    std::string error;
    for (const Escalation &e : now) {
        XdpEntry before;
        const bool renewal =
            tier_->find(e.key, &before) && before.origin == FG_XDP_ORIGIN_escalated;
        if (tier_->add_escalated({e.key, FG_XDP_ORIGIN_escalated, false, e.expires_ns}, now_ns,
                                 &error)) {
            ++escalations_;
            if (!renewal) ++entries_[FG_XDP_ORIGIN_escalated];
            escalated_.push_back({e.key, e.expires_ns, e.rule});
            if (told_.size() < kMaxTold)
                told_.push_back({e.key, e.expires_ns - now_ns});
            else
                ++told_lost_;
            std::printf(
                "xdp: escalated %s (rule %s, refused %llu/s) for %s\n",
                format_prefix(e.key).c_str(), e.rule.c_str(),
                static_cast<unsigned long long>(e.refused_per_s),
                format_duration_s(static_cast<long long>((e.expires_ns - now_ns) / kSecondNs))
                    .c_str());
            std::fflush(stdout);
        } else if (error.empty()) {
            ++escalations_skipped_;
        } else {
            ++escalations_failed_;
            std::fprintf(stderr, "floodgate run: xdp: cannot escalate %s\n", error.c_str());
            error.clear();
        }
    }
}

std::vector<XdpFeed::Told> XdpFeed::take_escalations() {
    std::lock_guard<std::mutex> guard(lock_);
    std::vector<Told> out;
    out.swap(told_);
    return out;
}

bool XdpFeed::add_told(const Told &t, uint64_t now_ns) {
    std::lock_guard<std::mutex> guard(lock_);
    std::string error;
    XdpEntry before;
    const bool renewal = tier_->find(t.key, &before) && before.origin == FG_XDP_ORIGIN_escalated;
    const uint64_t expires_ns = now_ns + t.ttl_ns;
    if (!tier_->add_escalated({t.key, FG_XDP_ORIGIN_escalated, false, expires_ns}, now_ns,
                              &error)) {
        ++cluster_skipped_;
        if (!error.empty())
            std::fprintf(stderr, "floodgate run: xdp: cannot add %s from the cluster: %s\n",
                         format_prefix(t.key).c_str(), error.c_str());
        return false;
    }
    ++cluster_added_;
    if (!renewal) ++entries_[FG_XDP_ORIGIN_escalated];
    escalated_.push_back({t.key, expires_ns, "cluster"});
    return true;
}

void XdpFeed::count_entries() {
    for (uint64_t &n : entries_) n = 0;
    for (const XdpEntry &e : tier_->list()) ++entries_[e.origin];
}

nlohmann::ordered_json XdpFeed::stats() const {
    std::lock_guard<std::mutex> guard(lock_);
    nlohmann::ordered_json counters = nlohmann::ordered_json::object();
    const std::vector<uint64_t> c = tier_->counters();
    for (unsigned i = 0; i < c.size(); ++i) counters[xdp_counter_name(i)] = c[i];
    nlohmann::ordered_json entries = nlohmann::ordered_json::object();
    for (unsigned o = 0; o < FG_XDP_ORIGIN_COUNT; ++o)
        entries[xdp_origin_name(static_cast<fg_xdp_origin>(o))] = entries_[o];
    // Listed until their TTL ends (entries removed by hand linger here until then: the list is
    // what was escalated, the counters above what the maps hold).
    nlohmann::ordered_json escalated = nlohmann::ordered_json::array();
    const uint64_t now_ns = now_ns_;
    for (const Escalated &e : escalated_) {
        if (escalated.size() == kListedEscalations) break;
        if (e.expires_ns > now_ns)
            escalated.push_back({{"prefix", format_prefix(e.key)},
                                 {"rule", e.rule},
                                 {"ttl_left_s", (e.expires_ns - now_ns) / 1e9}});
    }
    return {{"iface", iface_},
            {"pin_dir", pin_dir_},
            {"counters", counters},
            {"entries", entries},
            {"reconcile",
             {{"version", version_},
              {"written", last_reconcile_.added},
              {"removed", last_reconcile_.removed},
              {"failed_total", reconcile_failed_}}},
            {"escalations",
             {{"total", escalations_},
              {"skipped", escalations_skipped_},
              {"failed", escalations_failed_},
              {"expired", escalations_expired_},
              {"tracked", judge_.tracked()},
              {"sampled", judge_.sampled_stats()},
              {"told_lost", told_lost_},
              {"from_cluster", cluster_added_},
              {"from_cluster_skipped", cluster_skipped_},
              {"escalated", escalated}}}};
}

}  // namespace floodgate
