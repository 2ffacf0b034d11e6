#include "dataplane/service/escalation.h"

namespace floodgate {

void Escalator::set_rules(const std::vector<Rule> &rules) {
    std::map<std::string, EscalateOptions> next;
    for (const Rule &r : rules)
        if (r.escalate.enabled()) next.emplace(r.name, r.escalate);
    for (auto it = tracks_.begin(); it != tracks_.end();) {
        auto was = rules_.find(it->first.first), is = next.find(it->first.first);
        const bool same = was != rules_.end() && is != next.end() && was->second == is->second;
        it = same ? std::next(it) : tracks_.erase(it);
    }
    rules_ = std::move(next);
}

std::vector<Escalation> Escalator::sample(uint64_t now_ns, const std::vector<RefusedSource> &top) {
    std::vector<Escalation> out;
    std::map<std::pair<std::string, Prefix>, Track> next;
    for (const RefusedSource &s : top) {
        auto rule = rules_.find(s.rule);
        if (rule == rules_.end()) continue;
        const EscalateOptions &o = rule->second;
        auto key = std::make_pair(s.rule, s.key);
        auto it = tracks_.find(key);
        Track t{s.refused, now_ns, 0};
        if (it != tracks_.end() && s.refused >= it->second.refused && now_ns > it->second.at_ns) {
            const Track &was = it->second;
            const uint64_t grew = s.refused - was.refused, span = now_ns - was.at_ns;
            // grew / span >= count / period, in 128 bits: no product can wrap.
            const bool over = static_cast<unsigned __int128>(grew) * o.min_refused_period_ns >=
                              static_cast<unsigned __int128>(o.min_refused_count) * span;
            if (over) {
                t.over_since_ns = was.over_since_ns != 0 ? was.over_since_ns : was.at_ns;
                if (now_ns - t.over_since_ns >= o.after_ns) {
                    out.push_back({s.rule, s.key, now_ns + o.ttl_ns,
                                   static_cast<uint64_t>(static_cast<unsigned __int128>(grew) *
                                                         1'000'000'000ull / span)});
                    continue;  // starts again from nothing
                }
            }
        }
        next[key] = t;  // a count that went down (a reload reset it) starts again too
    }
    tracks_ = std::move(next);  // sources out of the top are forgotten
    return out;
}

}  // namespace floodgate
