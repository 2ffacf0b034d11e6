// Escalation: which sources a rule keeps refusing, to be pushed down into the XDP tier's block
// map (bpf/) for the rule's ttl. Decided from samples of each rule's top refused sources (the
// Space-Saving summaries, merged over the cores), off the workers: a source is escalated once
// its refusals have grown at the rule's min_refused_rate or faster over every interval between
// samples for `after`. A count's guaranteed part (count - error) is what is used, so a source
// that inherited a counter is not blamed for its predecessor's refusals.
//
// Pure logic over samples, with no clock or map of its own (dataplane/service/xdp_feed.h drives
// it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/rules.h"

namespace floodgate {

// One of a rule's top refused sources at a sample.
struct RefusedSource {
    std::string rule;
    Prefix key;            // the rule's source prefix (its key lengths)
    uint64_t refused = 0;  // refusals guaranteed so far (count - error)
};

struct Escalation {
    std::string rule;
    Prefix key;
    uint64_t expires_ns = 0;     // now + the rule's ttl
    uint64_t refused_per_s = 0;  // over the last interval, for the log
};

class Escalator {
  public:
    // The rules that escalate (the others are ignored); tracking of sources of rules that no
    // longer escalate, or whose options changed, starts again.
    void set_rules(const std::vector<Rule> &rules);
    // One sample at now_ns (monotonic). Returns the sources to escalate now; a source returned
    // starts again from nothing (if it floods on after its TTL, it is escalated again after
    // `after`).
    std::vector<Escalation> sample(uint64_t now_ns, const std::vector<RefusedSource> &top);
    size_t tracked() const { return tracks_.size(); }

  private:
    struct Track {
        uint64_t refused = 0;
        uint64_t at_ns = 0;
        uint64_t over_since_ns = 0;  // 0: the last interval was under the rate
    };
    std::map<std::string, EscalateOptions> rules_;
    std::map<std::pair<std::string, Prefix>, Track> tracks_;
};

}  // namespace floodgate
