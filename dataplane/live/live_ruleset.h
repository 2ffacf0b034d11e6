// The ruleset the workers decide with, swapped while they run, without a lock on their side.
// Workers read current() once per loop pass and report a quiescent state after it
// (rte_rcu_qsbr); swap() publishes the new RuleSet and frees the old one only once every
// online worker has reported since, so no worker can still be using it.
//
// Readers that are not workers (the control thread, the telemetry thread) go through
// with_current(), which holds the lock swap() takes: they never see a freed ruleset, and the
// workers never touch that lock.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "dataplane/core/ruleset.h"

struct rte_rcu_qsbr;

namespace floodgate {

class LiveRuleSet {
  public:
    // Needs the EAL (the QSBR variable lives in DPDK memory). workers are numbered 0..n-1.
    LiveRuleSet(unsigned workers, std::unique_ptr<RuleSet> first);
    ~LiveRuleSet();
    LiveRuleSet(const LiveRuleSet &) = delete;
    LiveRuleSet &operator=(const LiveRuleSet &) = delete;
    bool ok() const { return qsv_ != nullptr; }

    // Worker side (hot path). A worker is online from online() to offline(); swap() waits only
    // for online workers.
    const RuleSet *current() const { return current_.load(std::memory_order_acquire); }
    void online(unsigned worker);
    void quiescent(unsigned worker);
    void offline(unsigned worker);

    // Control side. Returns once the old ruleset is freed (one grace period: a loop pass of
    // every worker, microseconds).
    void swap(std::unique_ptr<RuleSet> next);
    // Runs f with the current ruleset, which stays alive until f returns.
    void with_current(const std::function<void(const RuleSet &)> &f) const;

  private:
    rte_rcu_qsbr *qsv_ = nullptr;
    std::atomic<const RuleSet *> current_;
    mutable std::mutex swap_lock_;
};

}  // namespace floodgate
