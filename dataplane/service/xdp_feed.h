// The dataplane's side of the XDP tier, on net_af_xdp (bpf/xdp_tier.h): keeps the program's
// maps in step with what runs (the rules file's allow and block lists and the overrides,
// rewritten whenever the dataplane service's version changes), escalates the sources that
// rules keep refusing (dataplane/service/escalation.h) with their TTL, and removes escalated
// entries when their time has come. Runs on the control thread, never on a worker; the workers know
// nothing of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bpf/xdp_tier.h"
#include "dataplane/service/escalation_judge.h"
#include "dataplane/service/service.h"

namespace floodgate {

class XdpFeed {
  public:
    static constexpr size_t kListedEscalations = 10000;

    XdpFeed(std::unique_ptr<XdpTier> tier, std::string iface, std::string pin_dir);

    using RefusalBatch = floodgate::RefusalBatch;
    // Called often (every 100 ms): rewrites the rules and override entries when `version` (the
    // dataplane service's) has changed, asking `running` for them; takes the sampled refusals;
    // once a second escalates, asking `stats` for the live stats (live_stats.h: the rules' top
    // refused sources) and judging the sampled counts too, and removes escalated entries whose
    // TTL ended. No callback is called under the feed's lock (they take the service's and the
    // ruleset's).
    void tick(uint64_t now_ns, uint64_t version, const std::function<RunningRules()> &running,
              const std::function<nlohmann::ordered_json()> &stats,
              const std::function<RefusalBatch()> &sampled);
    // The cluster's shared escalations (dataplane/service/cluster_link.h): the sources this
    // box escalated since the last take, with their TTL, to tell the other boxes; and a source
    // another box escalated, added here with its TTL left (refused under a live allow, or when
    // the source is held already, as any escalation). Any thread.
    struct Told {
        Prefix key;
        uint64_t ttl_ns = 0;
    };
    std::vector<Told> take_escalations();
    bool add_told(const Told &t, uint64_t now_ns);

    // The "xdp" section of the stats: the program's counters, the maps' entries by origin,
    // what escalation did, and the sources escalated now (the first kListedEscalations, with
    // their rule and TTL left: floodctl announces them upstream). Any thread.
    nlohmann::ordered_json stats() const;

  private:
    void reconcile(const RunningRules &running, uint64_t now_ns);
    void escalate(uint64_t now_ns, const nlohmann::ordered_json &stats);
    void count_entries();

    mutable std::mutex lock_;  // stats() from the telemetry thread
    std::unique_ptr<XdpTier> tier_;
    const std::string iface_;
    const std::string pin_dir_;
    EscalationJudge judge_;
    uint64_t version_ = 0;  // of the running rules last written (0: none yet)
    uint64_t next_ns_ = 0;
    uint64_t next_sweep_ns_ = 0;
    uint64_t now_ns_ = 0;  // of the last tick: the TTLs stats() lists are left as of then
    struct Escalated {
        Prefix key;
        uint64_t expires_ns;
        std::string rule;
    };
    std::vector<Escalated> escalated_;  // ours, to remove on time without walking the maps
    // Escalated here since the last take, for the cluster: at most kMaxTold (a flood of new
    // sources is told in the next take, the rest counted lost).
    static constexpr size_t kMaxTold = 4096;
    std::vector<Told> told_;
    uint64_t told_lost_ = 0;
    uint64_t cluster_added_ = 0;    // escalations of other boxes added here
    uint64_t cluster_skipped_ = 0;  // ... refused: under an allow, or held already
    uint64_t entries_[FG_XDP_ORIGIN_COUNT] = {};
    XdpReconciled last_reconcile_;
    uint64_t reconcile_failed_ = 0;
    uint64_t escalations_ = 0;
    uint64_t escalations_skipped_ = 0;  // an entry of the same prefix held already
    uint64_t escalations_failed_ = 0;   // the map refused (full)
    uint64_t escalations_expired_ = 0;
};

}  // namespace floodgate
