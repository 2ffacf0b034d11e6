#include "dataplane/service/nic_feed.h"

#include <algorithm>
#include <cstdio>

namespace floodgate {

namespace {

template <typename Names>
nlohmann::ordered_json by_reason(const uint64_t *counts, unsigned n, Names name) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (unsigned i = 0; i < n; ++i) j[name(i)] = counts[i];
    return j;
}

// The kNicTopRules held rules with most hits, ties in prefix order (family, length, address,
// then origin): the one order Prometheus's top N is cut from (control/metrics/
// nic_tier_metrics.h), whatever the rules held, where "listed" is the first kListedRules in
// the policy's order.
nlohmann::ordered_json top_by_hits(const std::vector<NicPolicy::Held> &held) {
    std::vector<const NicPolicy::Held *> order;
    order.reserve(held.size());
    for (const NicPolicy::Held &h : held) order.push_back(&h);
    const auto first = [](const NicPolicy::Held *a, const NicPolicy::Held *b) {
        if (a->hits != b->hits) return a->hits > b->hits;
        if (a->wanted.source != b->wanted.source) return a->wanted.source < b->wanted.source;
        return a->wanted.origin < b->wanted.origin;
    };
    const size_t n = std::min<size_t>(order.size(), kNicTopRules);
    std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(n), order.end(), first);
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (size_t i = 0; i < n; ++i)
        top.push_back({{"prefix", format_prefix(order[i]->wanted.source)},
                       {"origin", nic_origin_name(order[i]->wanted.origin)},
                       {"rule", order[i]->wanted.rule},
                       {"hits", order[i]->hits},
                       {"bytes", order[i]->bytes}});
    return top;
}

}  // namespace

NicFeed::NicFeed(uint16_t port_id, std::string port_name, const NicTierOptions &options)
    : port_(port_id), port_name_(std::move(port_name)), policy_(options) {}

void NicFeed::flush_at_start() {
    std::lock_guard<std::mutex> guard(lock_);
    const NicAnswer answer = port_.flush();
    if (answer.accepted) {
        ++flushes_;
        return;
    }
    ++flush_failed_;
    flush_error_ = answer.message;
    std::fprintf(stderr, "floodgate run: nic: cannot flush port %s: %s\n", port_name_.c_str(),
                 answer.message.c_str());
}

void NicFeed::take_running(const RunningRules &running, uint64_t now_ns) {
    blocks_.clear();
    allows_.clear();
    for (const Prefix &p : running.block) blocks_.push_back({p, NicOrigin::block, 0, ""});
    for (const Prefix &p : running.allow) allows_.push_back({p, 0});
    for (const PrefixOverride &o : running.overrides) {
        if (o.expires_ns != 0 && o.expires_ns <= now_ns) continue;
        if (o.verdict == PrefixVerdict::allow)
            allows_.push_back({o.prefix, o.expires_ns});
        else
            blocks_.push_back({o.prefix, NicOrigin::block, o.expires_ns, ""});
    }
    std::vector<Rule> nic_rules;
    for (const Rule &r : running.rules)
        if (r.escalate.nic) nic_rules.push_back(r);
    judge_.set_rules(nic_rules);
    version_ = running.version;
}

void NicFeed::tick(uint64_t now_ns, uint64_t version, const std::function<RunningRules()> &running,
                   const std::function<nlohmann::ordered_json()> &stats,
                   const RefusalBatch &sampled) {
    bool changed, due;
    {
        std::lock_guard<std::mutex> guard(lock_);
        changed = version != version_;
        due = now_ns >= next_ns_;
    }
    const RunningRules rules = changed ? running() : RunningRules{};
    const nlohmann::ordered_json live = due ? stats() : nlohmann::ordered_json{};
    std::lock_guard<std::mutex> guard(lock_);
    now_ns_ = now_ns;
    if (changed) take_running(rules, now_ns);
    judge_.add(sampled, now_ns);
    if (!due) return;
    next_ns_ = now_ns + kSecondNs;
    for (const Escalation &e : judge_.judge(now_ns, live)) {
        escalated_[e.key] = {e.key, NicOrigin::escalated, e.expires_ns, e.rule};
        ++escalations_;
    }
    std::erase_if(escalated_, [&](const auto &e) { return e.second.expires_ns <= now_ns; });
    std::vector<NicWanted> wanted = blocks_;
    for (const auto &[source, w] : escalated_) wanted.push_back(w);
    std::vector<Prefix> allows;
    for (const Allow &a : allows_)
        if (a.expires_ns == 0 || a.expires_ns > now_ns) allows.push_back(a.prefix);
    const uint64_t inserted = policy_.counts().inserted;
    const size_t held = policy_.held().size();
    policy_.tick(now_ns, wanted, allows, port_);
    ++ticks_;
    if (policy_.counts().inserted != inserted || policy_.held().size() != held) {
        std::printf("nic: %zu rules on %s (%llu new), %llu waiting\n", policy_.held().size(),
                    port_name_.c_str(),
                    static_cast<unsigned long long>(policy_.counts().inserted - inserted),
                    static_cast<unsigned long long>(policy_.counts().waiting));
        std::fflush(stdout);
    }
}

size_t NicFeed::stop() {
    std::lock_guard<std::mutex> guard(lock_);
    return policy_.withdraw_all(port_);
}

nlohmann::ordered_json NicFeed::stats() const {
    std::lock_guard<std::mutex> guard(lock_);
    const NicPolicy::Counts &c = policy_.counts();
    const NicTierOptions &o = policy_.options();
    uint64_t held_hits = 0, held_bytes = 0;
    uint64_t by_origin[2] = {};
    nlohmann::ordered_json listed = nlohmann::ordered_json::array();
    for (const NicPolicy::Held &h : policy_.held()) {
        held_hits += h.hits;
        held_bytes += h.bytes;
        ++by_origin[static_cast<unsigned>(h.wanted.origin)];
        if (listed.size() == kListedRules) continue;
        const uint64_t ttl_end = h.inserted_ns + o.ttl_ns;
        const uint64_t ends =
            h.wanted.expires_ns == 0 ? ttl_end : std::min(ttl_end, h.wanted.expires_ns);
        listed.push_back({{"prefix", format_prefix(h.wanted.source)},
                          {"origin", nic_origin_name(h.wanted.origin)},
                          {"rule", h.wanted.rule},
                          {"hits", h.hits},
                          {"bytes", h.bytes},
                          {"age_s", (now_ns_ - h.inserted_ns) / 1e9},
                          {"ttl_left_s", ends > now_ns_ ? (ends - now_ns_) / 1e9 : 0.0}});
    }
    return {
        {"port", port_name_},
        {"port_id", port_.port_id()},
        {"counted", port_.counted()},
        {"max_rules", o.max_rules},
        {"inserts_per_second", o.inserts_per_second},
        {"ttl_s", o.ttl_ns / kSecondNs},
        {"rules", policy_.held().size()},
        {"rules_by_origin", {{"block", by_origin[0]}, {"escalated", by_origin[1]}}},
        {"inserted", c.inserted},
        {"refused",
         by_reason(c.refused, kNicRefusalCount,
                   [](unsigned i) { return nic_refusal_name(static_cast<NicRefusal>(i)); })},
        {"skipped", by_reason(c.skipped, kNicSkipCount,
                              [](unsigned i) { return nic_skip_name(static_cast<NicSkip>(i)); })},
        {"withdrawn",
         by_reason(c.withdrawn, kNicWithdrawalCount,
                   [](unsigned i) { return nic_withdrawal_name(static_cast<NicWithdrawal>(i)); })},
        {"waiting", c.waiting},
        {"destroy_failed", c.destroy_failed},
        {"query_failed", c.query_failed},
        {"hits", held_hits + c.hits_withdrawn},
        {"bytes", held_bytes + c.bytes_withdrawn},
        {"held_hits", held_hits},
        {"held_bytes", held_bytes},
        {"withdrawn_hits", c.hits_withdrawn},
        {"withdrawn_bytes", c.bytes_withdrawn},
        {"ticks", ticks_},
        {"flushed_at_start", flushes_},
        {"flush_failed", flush_failed_},
        {"escalations",
         {{"total", escalations_},
          {"live", escalated_.size()},
          {"tracked", judge_.tracked()},
          {"sampled", judge_.sampled_stats()}}},
        {"listed", listed},
        {"top_by_hits", top_by_hits(policy_.held())}};
}

}  // namespace floodgate
