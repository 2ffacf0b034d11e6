#include "dataplane/service/escalation_judge.h"

#include <set>

#include "dataplane/pipeline/refusal_samples.h"

namespace floodgate {

void EscalationJudge::set_rules(const std::vector<Rule> &rules) {
    escalator_.set_rules(rules);
    sampled_escalator_.set_rules(rules);
}

void EscalationJudge::add(const RefusalBatch &batch, uint64_t now_ns) {
    sampled_.add(batch.samples, now_ns);
    samples_taken_ = batch.taken;
    samples_lost_ = batch.lost;
}

std::vector<Escalation> EscalationJudge::judge(uint64_t now_ns,
                                               const nlohmann::ordered_json &stats) {
    std::vector<RefusedSource> top;
    const auto rules = stats.find("rules");
    if (rules == stats.end() || !rules->is_array()) return {};  // busy: judged next second
    for (const auto &r : *rules) {
        if (r.value("mode", "") != "enforce") continue;  // a shadow rule refuses nothing
        const std::string name = r.value("name", "");
        for (const auto &t : r.value("top_refused", nlohmann::ordered_json::array())) {
            std::string why;
            const std::optional<Prefix> p = parse_prefix(t.value("source", ""), &why);
            const uint64_t count = t.value("count", uint64_t{0}), error = t.value("error", 0ull);
            if (p) top.push_back({name, *p, count > error ? count - error : 0});
        }
    }
    // The summaries' verdicts, then the sampled counts' for the sources not escalated already
    // (looked up in a set: a spread flood gives the sampled side tens of thousands).
    std::vector<Escalation> now = escalator_.sample(now_ns, top);
    std::set<Prefix> listed;
    for (const Escalation &e : now) listed.insert(e.key);
    for (Escalation &e : sampled_escalator_.sample(now_ns, sampled_.counts(now_ns)))
        if (listed.insert(e.key).second) now.push_back(std::move(e));
    return now;
}

nlohmann::ordered_json EscalationJudge::sampled_stats() const {
    return {{"samples_taken", samples_taken_},
            {"samples_lost", samples_lost_},
            {"refusals_a_sample", RefusalSampler::kMeanGap},
            {"sources", sampled_.sources()},
            {"sources_untracked", sampled_.untracked()},
            {"tracked", sampled_escalator_.tracked()}};
}

}  // namespace floodgate
