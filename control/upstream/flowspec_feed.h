// floodctl daemon's feed of the upstream routers (docs/cluster.md, "Upstream: BGP FlowSpec"): once
// a second, what the dataplane blocks is made the FlowSpec RIB of the local gobgpd
// (control/upstream/flowspec.h), most important first:
//   1. the operator's blocks: the rules file's block list and `floodctl block add` overrides;
//   2. the sources escalated into the XDP tier by a rule with `escalate: { flowspec: true }`,
//      matched as the rule matches (its one destination prefix, protocol and destination
//      port range, where it names exactly one).
// A source an allow covers (the file's allow list or an allow override) is never announced, so
// an allow lifts an announcement within a second. An escalation ends with its TTL and an
// override with its own, and their rules are withdrawn then; a clean stop withdraws them all,
// and a start after a crash withdraws what the RIB holds and nothing asks for.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/upstream/flowspec.h"
#include "control/upstream/flowspec_desired.h"
#include "dataplane/api/unix_socket.h"

namespace floodgate {

class FlowspecFeed {
  public:
    FlowspecFeed(std::string dataplane, FlowspecOptions options);
    // Feeds once a second until stop is set, then withdraws everything.
    void run(const std::atomic<bool> &stop);
    nlohmann::json status() const;

  private:
    void once();

    const std::string dataplane_;
    LineClient link_;  // this thread's own connection to the dataplane
    FlowspecExporter exporter_;
    mutable std::mutex lock_;  // guards status_
    nlohmann::json status_ = {{"active", true}};
};

}  // namespace floodgate
