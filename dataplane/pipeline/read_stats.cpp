// Readings of the core's counters (Pipeline::read_stats): copied by the core itself between two
// bursts while it serves them, directly otherwise.
#include <chrono>
#include <mutex>
#include <thread>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

void Pipeline::start_serving_reads() {
    copy_.states.resize(kMaxRules);
    copy_.rules.resize(kMaxRules);
    copy_.top_refused.resize(kMaxRules);
    copy_.destinations.resize(kMaxRules);
    copy_.keys.resize(kMaxRules);
    serving_.store(true, std::memory_order_release);
}

void Pipeline::serve_read() {
    // A new reading (or the ruleset changed under one): the counters, at this instant.
    const uint64_t asked = read_asked_.load(std::memory_order_acquire);
    if (asked != copy_.asked || rules_->serial() != copy_.serial) {
        copy_.asked = asked;
        copy_.serial = rules_->serial();
        copy_.counters = counters_;
        proxy_.fill_counters(&copy_.counters);
        copy_.clock_ns = clock_ns_;
        copy_.table = table_->stats();
        copy_.n_rules = rules_->rules().size();
        for (const CompiledRule &r : rules_->rules()) copy_.rules[r.index] = mine(r).counters;
        copy_.next_summary = 0;
    }
    // Then the top offenders that changed since the last reading, kSummariesPerPass a loop
    // pass, so that a reading costs the core microseconds between two polls of its RX queue,
    // whatever the number of rules (256 summaries are 870 KB).
    unsigned copied = 0;
    for (; copy_.next_summary < copy_.n_rules && copied < kSummariesPerPass; ++copy_.next_summary) {
        const CompiledRule &r = rules_->rules()[copy_.next_summary];
        RuleCoreState &state = mine(r);
        const bool moved = copy_.states[r.index] != r.state;
        if (state.top_refused_changed || moved) {
            copy_.top_refused[r.index] = state.top_refused;
            state.top_refused_changed = false;
            ++copied;
        }
        // The destinations' figures are those of the last whole epoch: copied once an epoch.
        if (moved || copy_.destinations[r.index].epoch() != state.destinations.epoch()) {
            copy_.destinations[r.index] = state.destinations;
            copy_.keys[r.index] = state.keys;
            ++copied;
        }
        copy_.states[r.index] = r.state;
    }
    if (copy_.next_summary == copy_.n_rules) read_served_.store(asked, std::memory_order_release);
}

bool Pipeline::read_stats(const RuleSet &rules, Stats *out) const {
    const size_t n = rules.rules().size();
    out->rules.assign(n, RuleCounters{});
    out->top_refused.assign(n, HeavyHitters{});
    out->destinations.assign(n, DestinationSummary{});
    out->keys.assign(n, EpochKeys{});
    std::lock_guard<std::mutex> one_reader(read_lock_);
    if (serving_.load(std::memory_order_acquire)) {
        const uint64_t asked = read_asked_.load(std::memory_order_relaxed) + 1;
        read_asked_.store(asked, std::memory_order_release);
        // A loop pass of the core takes microseconds; it may share this CPU, so yield to it.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        bool stopped = false;
        while (read_served_.load(std::memory_order_acquire) != asked) {
            if (!serving_.load(std::memory_order_acquire)) {
                stopped = true;  // it stopped before it answered: it is idle now
                break;
            }
            std::this_thread::yield();
            if (std::chrono::steady_clock::now() > deadline) return false;
        }
        if (!stopped) {
            // The core's rules may be older than the reader's: a rule it has not adopted yet
            // has counted nothing on it; a rule kept across a swap shares its state.
            out->counters = copy_.counters;
            out->clock_ns = copy_.clock_ns;
            out->table = copy_.table;
            for (size_t i = 0; i < copy_.n_rules; ++i)
                for (const CompiledRule &r : rules.rules())
                    if (r.state == copy_.states[i]) {
                        out->rules[r.index] = copy_.rules[i];
                        out->top_refused[r.index] = copy_.top_refused[i];
                        out->destinations[r.index] = copy_.destinations[i];
                        out->keys[r.index] = copy_.keys[i];
                    }
            return true;
        }
    }
    out->counters = counters_;
    proxy_.fill_counters(&out->counters);
    out->clock_ns = clock_ns_;
    out->table = table_->stats();
    for (const CompiledRule &r : rules.rules()) {
        out->rules[r.index] = r.state->per_core[core_].counters;
        out->top_refused[r.index] = r.state->per_core[core_].top_refused;
        out->destinations[r.index] = r.state->per_core[core_].destinations;
        out->keys[r.index] = r.state->per_core[core_].keys;
    }
    return true;
}

}  // namespace floodgate
