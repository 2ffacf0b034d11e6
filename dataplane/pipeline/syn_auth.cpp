// syn-auth verification: a source proves itself by answering floodgate's SYN-ACK with a RST
// carrying the cookie, and is then verified for the rule's TTL.
#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// A bare RST (no SYN, no ACK) to a syn-auth rule's addresses and ports may answer one of
// floodgate's SYN-ACKs: with a valid cookie as its sequence number its source is verified
// under every syn-auth rule it belongs to, and the RST, which no server expects, goes no
// further. Without one it is an ordinary packet.
bool Pipeline::take_cookie_reply(const PacketInfo &info, const PrefixClass &source,
                                 const RuleBits &dst, uint64_t now_ns) {
    bool any = false, valid = false;
    const RuleCandidates candidates = rules_->candidates(info);
    for (unsigned k = 0; k < candidates.count; ++k) {
        const CompiledRule &r = rules_->rules()[candidates.index[k]];
        if (!verifies_sources(r.action) || r.shadow ||
            !rule_matches_rest(r, info, *source.rules, dst, false))
            continue;
        if (!any) valid = cookie_valid(cookie_key_, info, info.tcp_seq, now_ns);
        any = true;
        if (!valid) {
            ++mine(r).counters.cookie_failed;
            continue;
        }
        if (verify(r, info, now_ns)) ++mine(r).counters.verified;
    }
    if (any && !valid) ++counters_.cookie_failed;
    return valid;
}

// Marks the source verified for the rule's TTL; false if the table had no room for it (the
// table counts a full event; the source's next SYN is challenged again). A source verified
// for more than half its TTL still is left as it is: a RST replayed at line rate then costs
// a lookup, not a table write and a merge record each.
bool Pipeline::verify(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns) {
    return remember_until(table_->hash(verified_key(r, info)), r.verified_ttl_ns, now_ns, false,
                          r.publishes(info)) == Remembered::yes;
}

// A source that could not be remembered once it proves itself is a new key meeting a full
// table: with on_table_full pass its SYN passes unchallenged, with drop it is dropped without
// an answer (counted like limits' table-full keys). With shared (the default) it is
// challenged: a challenge stores nothing.
void Pipeline::unverified_table_full(const CompiledRule &r, Check *c, uint64_t now_ns) {
    uint64_t tat_ns;
    LimitEntry *e = table_->acquire(c->aux_hash, now_ns, &tat_ns);
    if (e != nullptr) {
        table_->release(e, c->aux_hash);  // room: the challenge goes out as usual
        return;
    }
    RuleCounters &rc = mine(r).counters;
    c->unverified = false;  // not challenged either way
    if (r.on_table_full == TableFullPolicy::pass) {
        ++rc.table_full_pass;
        c->admitted = true;
    } else {
        ++rc.table_full_drop;
    }
}

}  // namespace floodgate
