#include "dataplane/service/nic_policy.h"

#include <algorithm>
#include <limits>
#include <map>

namespace floodgate {

namespace {

bool overlaps(const Prefix &a, const Prefix &b) {
    if (a.family != b.family) return false;
    return prefix_contains(a.len <= b.len ? a : b, b.family, a.len <= b.len ? b.addr : a.addr);
}

bool overlaps_any(const Prefix &p, const std::vector<Prefix> &allows) {
    for (const Prefix &a : allows)
        if (overlaps(p, a)) return true;
    return false;
}

// Of two wanted entries of one source, the one that counts.
bool counts_over(const NicWanted &a, const NicWanted &b) {
    if (a.origin != b.origin) return a.origin < b.origin;
    const uint64_t ea = a.expires_ns == 0 ? UINT64_MAX : a.expires_ns;
    const uint64_t eb = b.expires_ns == 0 ? UINT64_MAX : b.expires_ns;
    return ea > eb;
}

}  // namespace

const char *nic_origin_name(NicOrigin origin) {
    return origin == NicOrigin::block ? "block" : "escalated";
}

const char *nic_withdrawal_name(NicWithdrawal w) {
    switch (w) {
#define FG_NIC_WITHDRAWAL_NAME(name) \
    case NicWithdrawal::name:        \
        return #name;
        FG_NIC_WITHDRAWALS(FG_NIC_WITHDRAWAL_NAME)
#undef FG_NIC_WITHDRAWAL_NAME
    }
    return "unwanted";
}

const char *nic_skip_name(NicSkip s) {
    return s == NicSkip::prefix ? "prefix" : "allow";
}

uint64_t NicPolicy::ends_ns(const Held &h) const {
    const uint64_t ttl_end = h.inserted_ns + options_.ttl_ns;
    return h.wanted.expires_ns == 0 ? ttl_end : std::min(ttl_end, h.wanted.expires_ns);
}

bool NicPolicy::withdraw(size_t i, NicWithdrawal why, NicPort &port) {
    Held &h = held_[i];
    uint64_t hits = h.hits, bytes = h.bytes;
    port.query(h.handle, &hits, &bytes);  // what it dropped since the last tick, if it says
    if (!port.destroy(h.handle)) {
        ++counts_.destroy_failed;
        return false;
    }
    counts_.hits_withdrawn += hits;
    counts_.bytes_withdrawn += bytes;
    ++counts_.withdrawn[static_cast<unsigned>(why)];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
}

void NicPolicy::tick(uint64_t now_ns, const std::vector<NicWanted> &wanted,
                     const std::vector<Prefix> &allows, NicPort &port) {
    // The entry that counts for each source still wanted now.
    std::map<Prefix, NicWanted> live;
    for (const NicWanted &w : wanted) {
        if (w.expires_ns != 0 && w.expires_ns <= now_ns) continue;
        auto [it, fresh] = live.try_emplace(w.source, w);
        if (!fresh && counts_over(w, it->second)) it->second = w;
    }
    std::set<Key> still;
    for (const auto &[source, w] : live) still.insert(key(w));
    std::erase_if(settled_, [&](const Key &k) { return !still.contains(k); });

    // What ended. A source wanted again under another entry (a renewed escalation, a block
    // over an escalation) keeps its rule, under the new entry.
    for (size_t i = held_.size(); i-- > 0;) {
        Held &h = held_[i];
        const auto w = live.find(h.wanted.source);
        if (w == live.end()) {
            const bool ended = h.wanted.expires_ns != 0 && h.wanted.expires_ns <= now_ns;
            withdraw(i, ended ? NicWithdrawal::expired : NicWithdrawal::unwanted, port);
            continue;
        }
        if (overlaps_any(h.wanted.source, allows)) {
            withdraw(i, NicWithdrawal::unwanted, port);
            continue;
        }
        if (key(w->second) != key(h.wanted)) {
            h.wanted = w->second;
            if (settled_.contains(key(h.wanted))) {  // its time was up under this entry before
                withdraw(i, NicWithdrawal::ttl, port);
                continue;
            }
        }
        if (h.inserted_ns + options_.ttl_ns <= now_ns) {
            const Key k = key(h.wanted);
            if (withdraw(i, NicWithdrawal::ttl, port)) settled_.insert(k);
        }
    }

    // What is wanted and neither held nor settled, most important first.
    std::set<Prefix> held_sources;
    for (const Held &h : held_) held_sources.insert(h.wanted.source);
    std::vector<NicWanted> candidates;
    for (const auto &[source, w] : live) {
        if (held_sources.contains(source) || settled_.contains(key(w))) continue;
        if (!nic_prefix_allowed(source) || overlaps_any(source, allows)) {
            ++counts_.skipped[static_cast<unsigned>(nic_prefix_allowed(source) ? NicSkip::allow
                                                                               : NicSkip::prefix)];
            settled_.insert(key(w));
            continue;
        }
        candidates.push_back(w);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const NicWanted &a, const NicWanted &b) { return a.origin < b.origin; });
    insert(candidates, now_ns, port);

    for (Held &h : held_)
        if (!port.query(h.handle, &h.hits, &h.bytes)) ++counts_.query_failed;
}

void NicPolicy::insert(const std::vector<NicWanted> &candidates, uint64_t now_ns, NicPort &port) {
    uint64_t attempts = 0;
    size_t next = 0;
    for (; next < candidates.size() && attempts < options_.inserts_per_second; ++next) {
        const NicWanted &w = candidates[next];
        if (held_.size() >= options_.max_rules) {
            // Only a block makes room, by evicting the escalation nearest to its end.
            if (w.origin != NicOrigin::block) break;
            size_t victim = held_.size();
            for (size_t i = 0; i < held_.size(); ++i)
                if (held_[i].wanted.origin == NicOrigin::escalated &&
                    (victim == held_.size() || ends_ns(held_[i]) < ends_ns(held_[victim])))
                    victim = i;
            if (victim == held_.size() || !withdraw(victim, NicWithdrawal::evicted, port)) break;
        }
        NicAnswer answer = port.validate(w.source);
        uint64_t handle = 0;
        if (answer.accepted) {
            ++attempts;
            answer = port.create(w.source, &handle);
        }
        if (!answer.accepted) {
            ++counts_.refused[static_cast<unsigned>(answer.refusal)];
            settled_.insert(key(w));
            continue;
        }
        ++counts_.inserted;
        held_.push_back({w, handle, now_ns, 0, 0});
    }
    counts_.waiting = candidates.size() - next;
}

size_t NicPolicy::withdraw_all(NicPort &port) {
    size_t n = 0;
    for (size_t i = held_.size(); i-- > 0;)
        if (withdraw(i, NicWithdrawal::stopped, port)) ++n;
    return n;
}

}  // namespace floodgate
