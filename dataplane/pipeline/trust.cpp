// Trust classes of an aggregate rule's sources (established, verified, known, new) and the
// marks they are read from: a mark is a key kept live in the table for a TTL, shared with the
// other cores by the merge.
#include <algorithm>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// An aggregate rule's refusal at the new sources' tolerance: the source's class decides,
// each class seeing the same TAT with its own tolerance (CompiledRule::class_tolerance_ns).
void Pipeline::admit_by_class(const CompiledRule &r, const PacketInfo &info, const Check *checks,
                              unsigned n_checks, uint64_t tat_ns, uint64_t now_ns, Check *c) {
    c->cls = trust_class(info, *c, checks, n_checks, now_ns);
    if (!r.classes || c->cls == TrustClass::fresh) return;
    c->admitted = limit_admit(limit_of(r), tat_ns, now_ns, allowance_of(r, c->cls), &c->new_tat_ns);
    c->by_reserve = c->admitted;
}

// The most trusted class the packet's source is in. Known: an aggregate rule admitted it
// before (its known mark is live), or a per-source rule of this packet found the source's key
// live and admitted it (those rules are checked before aggregate ones).
TrustClass Pipeline::trust_class(const PacketInfo &info, const Check &c, const Check *checks,
                                 unsigned n_checks, uint64_t now_ns) {
    if (live(c.aux_hash, now_ns)) return TrustClass::established;
    for (uint16_t i : rules_->syn_auth_rules())
        if (verified(table_->hash(verified_key(rules_->rules()[i], info)), now_ns))
            return TrustClass::verified;
    if (live(c.known_hash, now_ns)) return TrustClass::known;
    for (unsigned i = 0; i < n_checks; ++i) {
        const Check &o = checks[i];
        if (!is_aggregate(rules_->rules()[o.rule].key_kind) && o.entry != nullptr && !o.reserved &&
            o.admitted)
            return TrustClass::known;
    }
    return TrustClass::fresh;
}

// Keeps key h live until at least now + ttl on this core, and on every other core when
// published (a verification, in the merge's terms); false if the table had no room for it. A key
// with more than half its ttl left is left as it is: a RST or a reply stream at line rate then
// costs a lookup, not a table write and a merge record each.
Pipeline::Remembered Pipeline::remember_until(uint64_t h, uint64_t ttl_ns, uint64_t now_ns,
                                              bool budgeted, bool published) {
    const uint64_t until_ns = tat_add(now_ns, ttl_ns);
    if (const LimitEntry *e = table_->find(h);
        e != nullptr && e->tat_ns != kReservedTat && e->tat_ns > now_ns + ttl_ns / 2)
        return Remembered::yes;
    // A source mark (budgeted) is written at most at the mark budget's rate.
    if (budgeted) {
        uint64_t budget_tat_ns;
        if (!gcra_admit(rules_->established().mark_budget, mark_budget_tat_ns_, now_ns,
                        &budget_tat_ns)) {
            ++counters_.marks_over_budget;
            return Remembered::over_budget;
        }
        mark_budget_tat_ns_ = budget_tat_ns;
    }
    uint64_t tat_ns;
    LimitEntry *e = table_->acquire(h, now_ns, &tat_ns);
    if (e == nullptr) return Remembered::no_room;
    table_->commit(e, h, std::max(tat_ns, until_ns));
    remembered_.add(h);
    if (merging_ && published) {
        if (unpublished_verifications_.size() < kMaxUnpublishedKeys)
            unpublished_verifications_.push_back(Consumption{h, 0, ttl_ns, 0, 0, 0});
        else
            ++counters_.merge_unshared_keys;
    }
    return Remembered::yes;
}

namespace {
// What counts as the protected side answering a source: TCP with ACK and without SYN or RST
// (data, a bare ACK, a FIN), which a server sends only once the handshake is complete (the
// source received its SYN-ACK, so it is no spoofer). Not a SYN-ACK, and not a UDP response
// (DNS): a server sends those for every SYN or query that gets through, from any source, so a
// spoofed flood whose sources recur would make them established and take the reserve from the
// real clients. A DNS client becomes established over TCP (for one, after dns-truncate).
bool is_reply(const PacketInfo &p) {
    return p.has_l4 && p.l4_proto == kProtoTcp &&
           (p.tcp_flags & (kTcpAck | kTcpSyn | kTcpRst)) == kTcpAck;
}
}  // namespace

void Pipeline::mark_established(const PacketInfo &reply, uint64_t now_ns) {
    const EstablishedProfile &est = rules_->established();
    const LimitKey k =
        destination_key(reply, est.mask_hi, est.mask_lo, kTagEstablished | reply.family);
    switch (remember_until(table_->hash(k), est.ttl_ns, now_ns, true,
                           est.established_published[reply.family == 6])) {
        case Remembered::yes:
            ++counters_.established_marked;
            break;
        case Remembered::no_room:
            ++counters_.established_full;
            break;
        case Remembered::over_budget:  // counted in marks_over_budget
            break;
    }
}

void Pipeline::observe_returning(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                                 const uint64_t *now_ns, const uint32_t *captured_lens) {
    if (!rules_->has_aggregate()) return;
    for (uint16_t i = 0; i < n; ++i) {
        PacketInfo info;
        const uint32_t captured = captured_lens != nullptr ? captured_lens[i] : lens[i];
        if (parse_packet(frames[i], lens[i], &info, captured) != ParseStatus::ip) continue;
        if (is_reply(info)) mark_established(info, now_ns[i]);
        if (samples_.active() > 0) [[unlikely]]
            server_segment(info, frames[i], captured, now_ns[i]);
    }
    if (n > 0) clock_ns_ = now_ns[n - 1];
}

}  // namespace floodgate
