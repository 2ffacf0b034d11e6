// What a rule's check of a packet calls out of line (the check itself is inlined into stage two,
// pipeline_inline.h): a key meeting a full table, and a refusal counted among the rule's top
// offenders and sampled for escalation; the end of an epoch of the rules' destinations.
#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

bool Pipeline::check_table_full(const CompiledRule &r, Check *c, uint64_t now_ns) {
    RuleCoreState &state = mine(r);
    RuleCounters &rc = state.counters;
    switch (r.on_table_full) {
        case TableFullPolicy::pass:
            ++rc.table_full_pass;
            return true;
        case TableFullPolicy::drop:
            ++rc.table_full_drop;
            return false;
        case TableFullPolicy::shared:
            break;
    }
    // Every key without room shares one bucket with the rule's own rate and burst: a
    // table-filling flood is held to one source's allowance instead of running unlimited.
    ++rc.table_full_shared;
    return limit_admit(limit_of(r), state.overflow_tat_ns, now_ns,
                       allowance_of(r, TrustClass::fresh), &c->new_tat_ns);
}

void Pipeline::sample_for_escalation(const CompiledRule &r, const PacketInfo &info,
                                     const Check &c) {
    refusal_samples_->take({c.key.addr_hi, c.key.addr_lo, static_cast<uint32_t>(rules_->serial()),
                            r.index, info.family, r.key_len[info.family == 6]});
}

void Pipeline::add_top_offender(const CompiledRule &r, RuleCoreState &state, const PacketInfo &info,
                                const Check &c, uint32_t weight) {
    // The summary tells sources apart by hash, so the hash must name what it reports: a
    // src_dst key's hash names the pair (one source toward two destinations would be listed
    // twice under its one address), a none key's both families (every refusal would go to
    // whichever family was refused first). Those report the source prefix, or the family's /0.
    uint64_t h = c.hash;
    if (r.key_kind == KeyKind::src_dst || r.key_kind == KeyKind::none) [[unlikely]]
        h = table_->hash(LimitKey{c.key.addr_hi, c.key.addr_lo, c.key.tag | info.family});
    state.top_refused.add(c.key.addr_hi, c.key.addr_lo, info.family, r.key_len[info.family == 6], h,
                          weight);
    state.top_refused_changed = true;
}

// Every rule's destinations end the epoch now_ns is past (rate_baseline.h), and the next one
// ends on the next whole second of the core's clock.
void Pipeline::end_epoch(uint64_t now_ns) {
    const uint64_t epoch = now_ns / kEpochNs;
    const bool idle = epoch_end_ns_ != 0 && epoch > epoch_end_ns_ / kEpochNs;  // seconds missed
    for (const CompiledRule &r : rules_->rules()) {
        RuleCoreState &state = mine(r);
        state.destinations.roll(epoch);
        state.keys.roll(state.counters.matched, idle);
        state.refusals_in_epoch = 0;
    }
    epoch_end_ns_ = (epoch + 1) * kEpochNs;
}

void Pipeline::enable_refusal_samples(uint64_t seed) {
    refusal_samples_ = std::make_unique<RefusalSampler>(seed);
}

}  // namespace floodgate
