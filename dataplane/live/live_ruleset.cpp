#include "dataplane/live/live_ruleset.h"

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

namespace floodgate {

LiveRuleSet::LiveRuleSet(unsigned workers, std::unique_ptr<RuleSet> first)
    : current_(first.release()) {
    size_t bytes = rte_rcu_qsbr_get_memsize(workers);
    qsv_ = static_cast<rte_rcu_qsbr *>(rte_zmalloc("fg_rules_qsbr", bytes, RTE_CACHE_LINE_SIZE));
    if (qsv_ == nullptr) return;
    if (rte_rcu_qsbr_init(qsv_, workers) != 0) {
        rte_free(qsv_);
        qsv_ = nullptr;
        return;
    }
    for (unsigned w = 0; w < workers; ++w) rte_rcu_qsbr_thread_register(qsv_, w);
}

LiveRuleSet::~LiveRuleSet() {
    delete current_.load();
    rte_free(qsv_);
}

void LiveRuleSet::online(unsigned worker) {
    rte_rcu_qsbr_thread_online(qsv_, worker);
}

void LiveRuleSet::quiescent(unsigned worker) {
    rte_rcu_qsbr_quiescent(qsv_, worker);
}

void LiveRuleSet::offline(unsigned worker) {
    rte_rcu_qsbr_thread_offline(qsv_, worker);
}

void LiveRuleSet::swap(std::unique_ptr<RuleSet> next) {
    std::lock_guard<std::mutex> lock(swap_lock_);
    const RuleSet *old = current_.exchange(next.release(), std::memory_order_acq_rel);
    // RTE_QSBR_THRID_INVALID: the caller is not a reader itself.
    rte_rcu_qsbr_synchronize(qsv_, RTE_QSBR_THRID_INVALID);
    delete old;
}

void LiveRuleSet::with_current(const std::function<void(const RuleSet &)> &f) const {
    std::lock_guard<std::mutex> lock(swap_lock_);
    f(*current_.load(std::memory_order_acquire));
}

}  // namespace floodgate
