// Which sources to escalate now, from both of what the run offers: the rules' top refused
// sources (the live stats' Space-Saving summaries) and the workers' sampled refusals of every
// source (sampled_refusals.h), each judged by an Escalator of its own. A tier that escalates
// (the XDP tier's feed, xdp_feed.h; the NIC tier's, nic_feed.h) holds one, fed the rules that
// escalate into it. Pure logic, no clock of its own; one thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "dataplane/api/rules.h"
#include "dataplane/service/escalation.h"
#include "dataplane/service/sampled_refusals.h"

namespace floodgate {

// The tiers' feeds (xdp_feed, nic_feed) tick once a second and count their TTLs in seconds.
inline constexpr uint64_t kSecondNs = 1'000'000'000ull;

// The workers' sampled refusals since the last take, each with the refusals it stands for,
// and the samplers' running totals.
struct RefusalBatch {
    std::vector<RefusedSource> samples;
    uint64_t taken = 0;  // samples the workers took, all time
    uint64_t lost = 0;   // ... and lost to a full ring
};

class EscalationJudge {
  public:
    void set_rules(const std::vector<Rule> &rules);
    void add(const RefusalBatch &batch, uint64_t now_ns);
    // Once a second, with the live stats: the sources to escalate now, each once, the
    // summaries' verdicts first (none when the stats were busy and came empty).
    std::vector<Escalation> judge(uint64_t now_ns, const nlohmann::ordered_json &stats);
    // The sampled side's counters, for the stats: samples_taken, samples_lost,
    // refusals_a_sample, sources, sources_untracked, tracked.
    nlohmann::ordered_json sampled_stats() const;
    size_t tracked() const { return escalator_.tracked(); }

  private:
    Escalator escalator_;          // on the summaries' top refused sources
    Escalator sampled_escalator_;  // on the sampled counts of every refused source
    SampledRefusals sampled_;
    uint64_t samples_taken_ = 0, samples_lost_ = 0;
};

}  // namespace floodgate
