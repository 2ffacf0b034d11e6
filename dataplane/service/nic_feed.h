// The dataplane's side of the NIC tier (docs/nic-tier.md): the operator's blocks (the rules
// file's block list, block overrides) and the sources that rules with escalate: { nic: true }
// keep refusing become rte_flow drop rules on the outside port, within the bounds of the
// tier's policy (nic_policy.h). Decides its own escalations from the same live stats and
// sampled refusals as the XDP tier (escalation_judge.h). Runs on the control thread, never on a
// worker: at start it flushes what an earlier run left on the port, then ticks, and at a clean
// stop withdraws every rule.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/api/nic_stats.h"
#include "dataplane/service/escalation_judge.h"
#include "dataplane/service/nic_flow_port.h"
#include "dataplane/service/nic_policy.h"
#include "dataplane/service/service.h"

namespace floodgate {

class NicFeed {
  public:
    static constexpr size_t kListedRules = 10000;

    NicFeed(uint16_t port_id, std::string port_name, const NicTierOptions &options);

    // Before the workers run: every rule on the port flushed, counted (a NIC keeps what a
    // crashed run left; the lab's stand-in drops it with the process).
    void flush_at_start();
    // Called often (every 100 ms), like XdpFeed::tick: takes the running rules when `version`
    // changed and the sampled refusals; once a second escalates, from `stats` (the live stats),
    // and lets the policy withdraw and insert. No callback is called under the feed's lock.
    void tick(uint64_t now_ns, uint64_t version, const std::function<RunningRules()> &running,
              const std::function<nlohmann::ordered_json()> &stats, const RefusalBatch &sampled);
    // A clean stop: every rule withdrawn. Returns how many.
    size_t stop();
    // The "nic_tier" section of the stats: the bounds, the rules held (the first kListedRules, with
    // their COUNT; the kNicTopRules with most hits; their sums over every rule held), what was
    // inserted, refused, skipped and withdrawn, by reason. Any thread.
    nlohmann::ordered_json stats() const;

  private:
    void take_running(const RunningRules &running, uint64_t now_ns);

    mutable std::mutex lock_;
    NicFlowPort port_;
    const std::string port_name_;
    NicPolicy policy_;
    EscalationJudge judge_;
    std::vector<NicWanted> blocks_;
    struct Allow {
        Prefix prefix;
        uint64_t expires_ns = 0;  // 0: none
    };
    std::vector<Allow> allows_;
    std::map<Prefix, NicWanted> escalated_;  // live escalations, by source
    uint64_t escalations_ = 0;
    uint64_t ticks_ = 0;    // the policy's, each second: a reader waits for the next one
    uint64_t version_ = 0;  // of the running rules last taken (0: none yet)
    uint64_t next_ns_ = 0;
    uint64_t now_ns_ = 0;  // of the last tick: ages and TTLs stats() lists are as of then
    uint64_t flushes_ = 0, flush_failed_ = 0;
    std::string flush_error_;
};

}  // namespace floodgate
