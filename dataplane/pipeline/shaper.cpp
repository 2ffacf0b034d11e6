#include "dataplane/pipeline/shaper.h"

#include <algorithm>

namespace floodgate {

void Shaper::set_capacity(uint32_t packets) {
    held_ = ShapeWheel(packets);
    flushed_.clear();
    flushed_.reserve(packets);
}

bool Shaper::hold_refused(const CompiledRule &r, RuleCoreState &state, bool has_tat,
                          uint64_t new_tat_ns, TrustClass cls, uint64_t now_ns) {
    if (!has_tat) {
        ++state.counters.shape_dropped;
        return false;
    }
    // Refused: new_tat_ns - now_ns > tau, and the packet is admitted once now reaches
    // new_tat_ns - tau (the tau of its class, for an aggregate rule's).
    const uint64_t release_ns = new_tat_ns - r.class_allowance[static_cast<unsigned>(cls)];
    if (release_ns - now_ns > r.shape_lead_ns) {
        ++state.counters.shape_dropped;
        return false;
    }
    if (holding() >= held_.capacity()) {
        ++state.counters.shape_dropped;
        ++counters_->shape_pool_full;
        return false;
    }
    last_held_ = held_.push(release_ns, now_ns, r.index);
    ++state.counters.delayed;
    ++state.counters.held;
    ++counters_->delayed;
    ++counters_->held;
    return true;
}

unsigned Shaper::release(uint64_t now_ns, bool whole_slots, Released *out, unsigned max) {
    unsigned n = 0;
    while (!flushed_.empty() && n < max) {
        out[n++] = Released{flushed_.back(), now_ns, false};
        flushed_.pop_back();
    }
    ShapeWheel::Item due[kPopStep];
    while (n < max && held_.size() > 0) {
        const unsigned want = std::min<unsigned>(max - n, kPopStep);
        const unsigned m = held_.pop_due(now_ns, whole_slots, due, want);
        for (unsigned k = 0; k < m; ++k) {
            const ShapeWheel::Item &it = due[k];
            RuleCounters &rc = mine_[it.rule]->counters;
            // Live, the packet leaves now; replayed, at its own time.
            const uint64_t wait_ns = (whole_slots ? now_ns : it.release_ns) - it.arrived_ns;
            rc.longest_wait_ns = std::max(rc.longest_wait_ns, wait_ns);
            ++rc.shaped;
            --rc.held;
            ++counters_->shaped;
            --counters_->held;
            out[n++] = Released{it.handle, it.release_ns, true};
        }
        if (m < want) break;
    }
    return n;
}

unsigned Shaper::drop_all(Released *out, unsigned max) {
    unsigned n = 0;
    while (!flushed_.empty() && n < max) {
        out[n++] = Released{flushed_.back(), 0, false};
        flushed_.pop_back();
    }
    ShapeWheel::Item all[kPopStep];
    while (n < max && held_.size() > 0) {
        const unsigned m = held_.pop_any(all, std::min<unsigned>(max - n, kPopStep));
        for (unsigned k = 0; k < m; ++k) {
            RuleCounters &rc = mine_[all[k].rule]->counters;
            ++rc.shape_flushed;
            --rc.held;
            ++counters_->shape_flushed;
            --counters_->held;
            out[n++] = Released{all[k].handle, all[k].release_ns, false};
        }
    }
    return n;
}

// A held packet keeps its place when its rule carried its state over with the same T, tau and
// queue bound (its release time still means what it meant); otherwise it is dropped, counted on
// the rule it was held for (flushing a changed rule's queue at once would send the fragile
// server behind it the very burst it is shaped against).
void Shaper::keep_across(const RuleSet &old, const RuleSet &now, unsigned core) {
    constexpr uint16_t kGone = UINT16_MAX;
    uint16_t successor[kMaxRules];
    std::fill(successor, successor + kMaxRules, kGone);
    for (const CompiledRule &o : old.rules())
        for (const CompiledRule &r : now.rules())
            if (r.state == o.state && r.action == RuleAction::shape &&
                r.limit.gcra.interval_ns == o.limit.gcra.interval_ns &&
                r.allowance() == o.allowance() && r.shape_lead_ns == o.shape_lead_ns)
                successor[o.index] = r.index;
    held_.retain_if([&](ShapeWheel::Item &it) {
        if (successor[it.rule] != kGone) {
            it.rule = successor[it.rule];
            return true;
        }
        RuleCounters &rc = old.rules()[it.rule].state->per_core[core].counters;
        ++rc.shape_flushed;
        --rc.held;
        ++counters_->shape_flushed;
        --counters_->held;
        flushed_.push_back(it.handle);
        return false;
    });
}

}  // namespace floodgate
