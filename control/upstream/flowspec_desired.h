// What the upstream routers are to drop, from what the dataplane runs
// (control/upstream/flowspec_feed.h says when and how it is announced): a pure function of its
// replies, for tests.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "control/upstream/flowspec.h"

namespace floodgate {

// Most important first: the operator's blocks (the rules file's block list, then block
// overrides), then the sources escalated by rules with escalate.flowspec (stats' xdp section),
// matched as their rule matches where it names one destination prefix of the source's family
// and, with a protocol, one destination port range. Nothing an allow overlaps (the file's allow
// list or an allow override): covered by one, or holding one, which the router would drop with
// the rest. rules_reply: the dataplane's rules reply (the document it runs);
// overrides_reply: its overrides reply; stats: the stats object.
std::vector<FlowspecRule> desired_flowspec(const nlohmann::json &rules_reply,
                                           const nlohmann::json &overrides_reply,
                                           const nlohmann::json &stats);

}  // namespace floodgate
