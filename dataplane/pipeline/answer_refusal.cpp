// The refusal's answer: what the blamed rule's action sends back in place of a refused packet,
// within the answer caps.
#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// The answer of a rule that answers (Pipeline::answer_refusal has dropped the others' refusals).
// Every refusal lands in exactly one of answered, answer_capped, answer_skipped and unanswered.
Verdict Pipeline::plan_refusal_answer(const PacketInfo &info, const Frame &frame, const Check &c,
                                      uint64_t now_ns, AnswerPlan *plan) {
    const CompiledRule &r = rules_->rules()[c.rule];
    RuleCoreState &state = mine(r);
    RuleCounters &rc = state.counters;
    if (frame.captured < frame.len) {
        plan->kind = AnswerKind::count;
        plan->why = NoAnswer::not_contiguous;
        ++rc.answer_skipped;
        return Verdict::drop;
    }
    // syn-proxy challenges as syn-auth does when its connection table has no room.
    const AnswerKind kind =
        r.answer == AnswerKind::syn_proxy && !proxy_.room() ? AnswerKind::syn_cookie : r.answer;
    *plan = plan_answer(kind, frame.bytes, frame.len, info);
    if (!plan->ok()) {
        ++rc.answer_skipped;
        return Verdict::drop;
    }
    // Answer every slip-th answerable refusal, as BIND's and Knot's RRL do (after planning,
    // so that responses or junk sent to the port do not use up the turns of real queries).
    if (r.slip != 1) {
        if (r.slip == 0 || ++state.slip_count < r.slip) {
            ++rc.unanswered;
            return Verdict::drop;
        }
        state.slip_count = 0;
    }
    if (!answer_cap_admits(info, now_ns)) {
        ++rc.answer_capped;
        ++counters_.answer_capped;
        return Verdict::drop;
    }
    if (plan->kind == AnswerKind::syn_cookie) {
        plan->cookie = syn_cookie(cookie_key_, info, cookie_slot(now_ns));
        if (r.answer == AnswerKind::syn_proxy) proxy_.note_fallback();  // no room: challenged
    } else if (plan->kind == AnswerKind::syn_proxy)
        proxy_.plan_syn_ack(r, info, now_ns, plan);
    plan->offload_checksums = checksum_offload_ && plan->kind != AnswerKind::icmp_unreachable;
    ++rc.answered;
    rc.answered_bytes += plan->answer_len;
    rc.answered_for_bytes += frame.len;
    ++counters_.answered;
    counters_.answered_bytes += plan->answer_len;
    ++counters_.answers_by_kind[static_cast<unsigned>(plan->kind)];
    return Verdict::answer;
}

// The answer caps: the per-core total first (no table access when it is spent), then the
// answered prefix's own bucket in the table, shared with the other cores by the merge.
bool Pipeline::answer_cap_admits(const PacketInfo &info, uint64_t now_ns) {
    const AnswerCapProfiles &caps = rules_->answer_caps();
    uint64_t core_tat_ns;
    if (!gcra_admit(caps.per_core, answer_core_tat_ns_, now_ns, &core_tat_ns)) return false;
    const uint64_t h = table_->hash(
        source_key(info, caps.dst_mask_hi, caps.dst_mask_lo, kTagAnswerCap | info.family));
    uint64_t tat_ns, new_tat_ns;
    LimitEntry *e = table_->acquire(h, now_ns, &tat_ns);
    if (e == nullptr) return false;  // no room to count it: answering is optional, so don't
    if (!gcra_admit(caps.per_destination, tat_ns, now_ns, &new_tat_ns)) return false;
    e = table_->commit(e, h, new_tat_ns);
    if (merging_ && caps.per_destination_published[info.family == 6])
        note_admitted(e, h, LimitProfile{LimitKind::gcra, caps.per_destination});
    answer_core_tat_ns_ = core_tat_ns;
    return true;
}

}  // namespace floodgate
