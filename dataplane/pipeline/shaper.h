// Shaping (action: shape) on one core: the leaky bucket as a queue. A packet its rule's GCRA
// would refuse waits for the time the limit admits it, TAT - tau, and the TAT moves on by T as
// for an admission; so a key's held packets leave exactly T apart, in order, and its queue's
// depth is (release - now) / T without counting anything: the queue bound is a bound on that
// lead. A part the pipeline holds (pipeline.h): the pipeline decides that a packet was refused
// by a shape rule; the shaper decides whether it waits and keeps it until its time.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/api/stats.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/core/shape_wheel.h"

namespace floodgate {

class Shaper {
  public:
    // core_counters and mine (the pipeline's: its core's counters, and its state of each rule
    // by rule index) are counted into as packets wait, leave and are dropped.
    Shaper(WorkerCounters *core_counters, RuleCoreState *const *mine)
        : counters_(core_counters), mine_(mine) {}

    struct Released {
        uint64_t handle;
        uint64_t release_ns;
        bool sent;
    };

    // At most this many packets wait on the core (0, the default: a shape rule drops its
    // excess). Set before the core runs.
    void set_capacity(uint32_t packets);
    uint32_t holding() const { return held_.size() + static_cast<uint32_t>(flushed_.size()); }
    bool empty() const { return held_.size() == 0; }

    // A packet rule r refused, its key's TAT to be new_tat_ns (has_tat false: the table was
    // full, there is no time to wait for) and its class cls: whether it waits (its wheel item
    // is then last_held()) or is refused, counted either way in state.
    bool hold_refused(const CompiledRule &r, RuleCoreState &state, bool has_tat,
                      uint64_t new_tat_ns, TrustClass cls, uint64_t now_ns);
    uint32_t last_held() const { return last_held_; }
    // The caller's handle for the packet of wheel item `item`, given back by release().
    void set_handle(uint32_t item, uint64_t handle) { held_.item(item).handle = handle; }

    // Those whose time has come by now_ns, in order, and those a reload dropped (sent false):
    // whole_slots as ShapeWheel::pop_due.
    unsigned release(uint64_t now_ns, bool whole_slots, Released *out, unsigned max);
    // Everything, dropped (a stopping core).
    unsigned drop_all(Released *out, unsigned max);

    // After a reload from `old` to `now` (mine_ already `now`'s): a held packet stays held when
    // its rule carried its state over with the same shape; otherwise it is dropped, counted on
    // the rule (old's, on core `core`) it was held for.
    void keep_across(const RuleSet &old, const RuleSet &now, unsigned core);

  private:
    static constexpr unsigned kPopStep = 32;  // wheel items taken at a time, on the stack
    WorkerCounters *counters_;
    RuleCoreState *const *mine_;
    ShapeWheel held_;
    uint32_t last_held_ = 0;
    // Held packets a reload dropped, given back by the next release() (capacity reserved).
    std::vector<uint64_t> flushed_;
};

}  // namespace floodgate
