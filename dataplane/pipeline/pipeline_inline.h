// One packet's verdict from its rules' checks (Pipeline::decide_one, Pipeline::check): the
// per-packet path of stage two, [[gnu::always_inline]] into it, so defined here where stage
// two (pipeline.cpp) sees them. Internal to the pipeline: included only by its .cpp files.
#pragma once

#include <cstring>
#include <vector>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// The counter of an aggregate rule's refusals of the blamed source's class.
inline uint64_t &refused_by_class(RuleCounters &rc, TrustClass c) {
    switch (c) {
        case TrustClass::established:
            return rc.refused_established;
        case TrustClass::verified:
            return rc.refused_verified;
        case TrustClass::known:
            return rc.refused_known;
        case TrustClass::fresh:
        default:
            return rc.refused_new;
    }
}

// Only the classes above new have a reserve.
inline uint64_t &reserve_by_class(RuleCounters &rc, TrustClass c) {
    return c == TrustClass::established ? rc.reserve_established
           : c == TrustClass::verified  ? rc.reserve_verified
                                        : rc.reserve_known;
}

// The rule's key counted among its keys of the epoch; a rule kept per destination names it by its
// key (the same counter as its limit's); the others by the packet's destination address.
inline void Pipeline::note_destination(const CompiledRule &r, RuleCoreState &state,
                                       const PacketInfo &info, const Check &c) {
    state.keys.add(c.hash);
    if (r.key_kind == KeyKind::dst) {
        state.destinations.add(c.key.addr_hi, c.key.addr_lo, info.family,
                               r.key_len[info.family == 6], [&] { return c.hash; });
        return;
    }
    uint64_t hi, lo;
    std::memcpy(&hi, info.dst, 8);
    std::memcpy(&lo, info.dst + 8, 8);
    state.destinations.add(hi, lo, info.family, info.family == 6 ? 128 : 32,
                           [&] { return destination_hash(hi, lo, info.family); });
}

// A refusal: sampled for escalation, and counted among the rule's top offenders. Sampled top
// offenders (top_offenders: sampled) count every refusal of the first of an epoch, then one in
// about kMeanGap counting for kMeanGap, so that a flood's refusals cost a decrement each, here,
// not a summary update (172 instructions, perf/results/notes.md).
inline void Pipeline::note_refusal(const PacketInfo &info, const Check &c) {
    const CompiledRule &r = rules_->rules()[c.rule];
    RuleCoreState &state = mine(r);
    if (r.escalates && refusal_samples_ != nullptr && refusal_samples_->due()) [[unlikely]]
        sample_for_escalation(r, info, c);
    uint32_t weight = 1;
    if (!r.exact_top && ++state.refusals_in_epoch > kCountedRefusalsPerEpoch) {
        if (!top_samples_.due()) [[likely]]
            return;
        weight = GeometricSampler::kMeanGap;
    }
    add_top_offender(r, state, info, c, weight);
}

// What the blamed rule's action does with a refused packet: a rule that answers nothing (and
// syn-auth for a verified source over its limit) drops it; the others plan their answer.
inline Verdict Pipeline::answer_refusal(const PacketInfo &info, const Frame &frame, const Check &c,
                                        uint64_t now_ns, AnswerPlan *plan) {
    const CompiledRule &r = rules_->rules()[c.rule];
    if (r.answer == AnswerKind::count || (verifies_sources(r.action) && !c.unverified)) {
        ++mine(r).counters.unanswered;
        return Verdict::drop;
    }
    return plan_refusal_answer(info, frame, c, now_ns, plan);
}

// The limit's part of a rule's check: the key's entry, and whether the limit admits the packet
// at the fresh class's allowance. Returns the key's TAT (meaningless without an entry).
inline uint64_t Pipeline::check_limit(const CompiledRule &r, Check &c, uint64_t now_ns) {
    uint64_t tat_ns = 0;
    c.entry = table_->acquire(c.hash, now_ns, &tat_ns);
    c.reserved = c.entry != nullptr && tat_ns == 0;
    c.admitted = c.entry == nullptr
                     ? check_table_full(r, &c, now_ns)
                     : limit_admit(limit_of(r), tat_ns, now_ns, allowance_of(r, TrustClass::fresh),
                                   &c.new_tat_ns);
    return tat_ns;
}

// One rule's check of a packet: whether its limit admits it, nothing stored yet.
inline void Pipeline::check(const PacketInfo &info, Check *checks, unsigned n_checks, Check &c,
                            uint64_t now_ns) {
    const CompiledRule &r = rules_->rules()[c.rule];
    c.unverified = verifies_sources(r.action) && !verified(c.aux_hash, now_ns);
    c.cls = TrustClass::fresh;
    c.by_reserve = false;
    if (c.unverified) {
        // Not yet proven: challenged, whatever the limit says; its limit is not charged.
        c.entry = nullptr;
        c.reserved = false;
        c.admitted = false;
        if (r.on_table_full != TableFullPolicy::shared) [[unlikely]]
            unverified_table_full(r, &c, now_ns);
        return;
    }
    const uint64_t tat_ns = check_limit(r, c, now_ns);
    if (!c.admitted && is_aggregate(r.key_kind)) [[unlikely]] {
        if (c.entry == nullptr)
            c.cls = trust_class(info, c, checks, n_checks, now_ns);
        else
            admit_by_class(r, info, checks, n_checks, tat_ns, now_ns, &c);
    }
}

// A packet's verdict from its checks (one per matching rule): every rule checked first, then
// the first refusing rule blamed and its action's answer planned, or, when every rule admits,
// each rule's new TAT committed.
inline Verdict Pipeline::decide_one(Burst &burst, uint16_t packet, Check *checks, unsigned n_checks,
                                    uint64_t now_ns) {
    const PacketInfo &info = burst.infos[packet];
    const std::vector<CompiledRule> &rules = rules_->rules();
    // The common case, one plain rule: what the loops below do for it, without their
    // bookkeeping (fewer instructions a packet: callgrind on BM_Decide, perf/results/notes.md).
    if (n_checks == 1 && rules[checks[0].rule].plain) [[likely]] {
        Check &c = checks[0];
        const CompiledRule &r = rules[c.rule];
        // A plain rule verifies no source and has no classes: its limit alone.
        c.unverified = false;
        c.cls = TrustClass::fresh;
        check_limit(r, c, now_ns);
        RuleCoreState &state = mine(r);
        ++state.counters.matched;
        note_destination(r, state, info, c);
        if (c.admitted) {
            ++state.counters.passed;
            state.destinations.passed_last();
            if (c.entry != nullptr) {
                LimitEntry *e = table_->commit(c.entry, c.hash, c.new_tat_ns);
                if (merging_ && r.publishes(info)) note_admitted(e, c.hash, r.limit);
            } else if (r.on_table_full == TableFullPolicy::shared) {
                state.overflow_tat_ns = c.new_tat_ns;
            }
            return Verdict::pass;
        }
        if (r.action == RuleAction::shape && shape_hold(r, c, now_ns)) [[unlikely]] {
            ++state.counters.passed;
            state.destinations.passed_last();
            LimitEntry *e = table_->commit(c.entry, c.hash, c.new_tat_ns);
            if (merging_ && r.publishes(info)) note_admitted(e, c.hash, r.limit);
            return Verdict::delay;
        }
        if (c.reserved) table_->release(c.entry, c.hash);
        note_refusal(info, c);
        ++state.counters.refused;
        return answer_refusal(info, burst.frame(packet), c, now_ns, &burst.plans[packet]);
    }
    int blamed = -1;
    unsigned refusers = 0;  // enforcing rules that refused
    // Check every matching rule first; nothing is stored until the verdict is known, so a
    // refused packet spends no rule's budget. Aggregate rules after the others: whether a
    // source is known comes from its per-source rules. The first refusing rule in file order
    // is blamed.
    const unsigned passes = rules_->has_aggregate() ? 2 : 1;
    for (unsigned pass = 0; pass < passes; ++pass) {
        for (unsigned i = 0; i < n_checks; ++i) {
            Check &c = checks[i];
            const CompiledRule &r = rules[c.rule];
            if (passes == 2 && is_aggregate(r.key_kind) != (pass == 1)) continue;
            check(info, checks, n_checks, c, now_ns);
            RuleCoreState &state = mine(r);
            RuleCounters &rc = state.counters;
            ++rc.matched;
            note_destination(r, state, info, c);
            if (c.admitted) continue;
            if (r.shadow) {
                ++rc.shadow_refused;
                note_refusal(info, c);
            } else {
                ++refusers;
                if (blamed < 0 || static_cast<int>(i) < blamed) blamed = static_cast<int>(i);
            }
        }
    }

    // A shape rule alone refusing may hold the packet: then it passes, later, and every rule's
    // TAT is committed as for a pass.
    bool delayed = false;
    if (blamed >= 0 && refusers == 1 && rules[checks[blamed].rule].action == RuleAction::shape)
        [[unlikely]] {
        Check &b = checks[blamed];
        delayed = shape_hold(rules[b.rule], b, now_ns);
        b.admitted = delayed;
        if (delayed) blamed = -1;
    }

    if (blamed >= 0) {
        // Only the first refusing rule is blamed, in its counter and in its top offenders,
        // so that the offenders' counts add up to the rule's refusals; its action says
        // whether the packet is answered.
        const Check &b = checks[blamed];
        RuleCounters &brc = mine(rules[b.rule]).counters;
        note_refusal(info, b);
        ++brc.refused;
        if (is_aggregate(rules[b.rule].key_kind)) ++refused_by_class(brc, b.cls);
        for (unsigned i = 0; i < n_checks; ++i) {
            if (static_cast<int>(i) != blamed) ++mine(rules[checks[i].rule]).counters.overruled;
            if (checks[i].reserved) table_->release(checks[i].entry, checks[i].hash);
        }
        return answer_refusal(info, burst.frame(packet), checks[blamed], now_ns,
                              &burst.plans[packet]);
    }
    uint64_t known = 0;
    for (unsigned i = 0; i < n_checks; ++i) {
        Check &c = checks[i];
        const CompiledRule &r = rules[c.rule];
        ++mine(r).counters.passed;
        mine(r).destinations.passed_last();  // the rule's last add() was this packet's
        if (c.by_reserve) [[unlikely]]
            ++reserve_by_class(mine(r).counters, c.cls);
        if (c.entry == nullptr) {
            if (c.admitted && r.on_table_full == TableFullPolicy::shared)
                mine(r).overflow_tat_ns = c.new_tat_ns;
        } else if (c.admitted) {
            LimitEntry *e = table_->commit(c.entry, c.hash, c.new_tat_ns);
            if (merging_ && r.publishes(info)) note_admitted(e, c.hash, limit_of(r));
            if (r.adaptive && now_ns >= next_sample_ns_) [[unlikely]]
                note_connection(r, info, now_ns);
        } else if (c.reserved) {  // a shadow rule's would-be refusal stores nothing
            table_->release(c.entry, c.hash);
        }
        if (r.shared && c.admitted) [[unlikely]]
            note_shared(r, info, c);
        // Admitted by the aggregate's own limit (not by a table-full pass, not a shadow rule's
        // would-be refusal).
        if (c.known_hash != 0 && c.admitted && c.entry != nullptr) known = c.known_hash;
    }
    // Admitted by an aggregate limit and every other rule: from now on the source is known
    // (for the established TTL), so that under a flood it is shed after the new ones.
    const EstablishedProfile &est = rules_->established();
    if (known != 0 && remember_until(known, est.ttl_ns, now_ns, true,
                                     est.known_published[info.family == 6]) == Remembered::no_room)
        [[unlikely]]
        ++counters_.established_full;
    return delayed ? Verdict::delay : Verdict::pass;
}

}  // namespace floodgate
