#include "dataplane/pipeline/pipeline.h"

#include "dataplane/core/payload_scan.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

namespace floodgate {

namespace {
uint64_t &refused_by_class(RuleCounters &rc, TrustClass c) {
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
uint64_t &reserve_by_class(RuleCounters &rc, TrustClass c) {
    return c == TrustClass::established ? rc.reserve_established
           : c == TrustClass::verified  ? rc.reserve_verified
                                        : rc.reserve_known;
}

// A RST with neither SYN nor ACK: what a TCP stack sends for an unacceptable SYN-ACK.
bool is_bare_rst(const PacketInfo &p) {
    return p.l4_proto == kProtoTcp && p.has_l4 &&
           (p.tcp_flags & (kTcpRst | kTcpSyn | kTcpAck)) == kTcpRst;
}
}  // namespace

Pipeline::Pipeline(const RuleSet *rules, LimitTable *table, unsigned core)
    : table_(table), core_(core) {
    for (Burst &b : bursts_) b.checks.resize(kMaxBurst * (kMaxRules + 1));
    adopt(rules);
}

void Pipeline::adopt(const RuleSet *rules) {
    rules_ = rules;
    serial_ = rules->serial();
    for (const CompiledRule &r : rules->rules()) mine_[r.index] = &r.state->per_core[core_];
}

void Pipeline::enable_merge() {
    merging_ = true;
    unpublished_.reserve(kMaxUnpublishedKeys);
    unpublished_verifications_.reserve(kMaxUnpublishedKeys);
}

// Counts an admitted packet for the next publish. A key that finds the list full is left
// unmarked, so that it is listed again by its first packet after the next publish.
void Pipeline::note_admitted(LimitEntry *e, uint64_t hash, const LimitProfile &limit) {
    if (e->unpublished == 0) {
        if (unpublished_.size() == kMaxUnpublishedKeys) {
            ++counters_.merge_unshared_keys;
            return;
        }
        unpublished_.push_back(Consumption::of(hash, limit));
    }
    ++e->unpublished;
}

void Pipeline::publish(std::vector<Consumption> *out) {
    out->insert(out->end(), unpublished_verifications_.begin(), unpublished_verifications_.end());
    unpublished_verifications_.clear();
    for (Consumption &c : unpublished_) {
        LimitEntry *e = table_->find(c.hash);
        if (e == nullptr || e->unpublished == 0) continue;  // expired and reused since
        c.packets = e->unpublished;
        out->push_back(c);
        e->unpublished = 0;
    }
    unpublished_.clear();
}

void Pipeline::apply(const Consumption &c, uint64_t now_ns) {
    uint64_t tat_ns;
    LimitEntry *e = table_->acquire(c.hash, now_ns, &tat_ns);
    if (e == nullptr) {
        ++counters_.merge_table_full;
        return;
    }
    if (c.packets == 0) {  // a verification: verified until at least now + its TTL
        table_->commit(e, c.hash, std::max(tat_ns, tat_add(now_ns, c.interval_ns)));
        remembered_.add(c.hash);
        return;
    }
    table_->commit(e, c.hash,
                   limit_charge(static_cast<LimitKind>(c.kind), c.interval_ns, c.window_pkts,
                                tat_ns, now_ns, c.packets));
}

void Pipeline::start_serving_reads() {
    copy_.states.resize(kMaxRules);
    copy_.rules.resize(kMaxRules);
    copy_.top_refused.resize(kMaxRules);
    serving_.store(true, std::memory_order_release);
}

void Pipeline::serve_read() {
    // A new reading (or the ruleset changed under one): the counters, at this instant.
    const uint64_t asked = read_asked_.load(std::memory_order_acquire);
    if (asked != copy_.asked || rules_->serial() != copy_.serial) {
        copy_.asked = asked;
        copy_.serial = rules_->serial();
        copy_.counters = counters_;
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
        if (state.top_refused_changed || copy_.states[r.index] != r.state) {
            copy_.top_refused[r.index] = state.top_refused;
            state.top_refused_changed = false;
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
            out->table = copy_.table;
            for (size_t i = 0; i < copy_.n_rules; ++i)
                for (const CompiledRule &r : rules.rules())
                    if (r.state == copy_.states[i]) {
                        out->rules[r.index] = copy_.rules[i];
                        out->top_refused[r.index] = copy_.top_refused[i];
                    }
            return true;
        }
    }
    out->counters = counters_;
    out->table = table_->stats();
    for (const CompiledRule &r : rules.rules()) {
        out->rules[r.index] = r.state->per_core[core_].counters;
        out->top_refused[r.index] = r.state->per_core[core_].top_refused;
    }
    return true;
}

void Pipeline::note_refusal(const PacketInfo &info, const Check &c) {
    const CompiledRule &r = rules_->rules()[c.rule];
    RuleCoreState &state = mine(r);
    // The summary tells sources apart by hash, so the hash must name what it reports: a
    // src_dst key's hash names the pair (one source toward two destinations would be listed
    // twice under its one address), a none key's both families (every refusal would go to
    // whichever family was refused first). Those report the source prefix, or the family's /0.
    uint64_t h = c.hash;
    if (r.key_kind == KeyKind::src_dst || r.key_kind == KeyKind::none) [[unlikely]]
        h = table_->hash(LimitKey{c.key.addr_hi, c.key.addr_lo, c.key.tag | info.family});
    state.top_refused.add(c.key.addr_hi, c.key.addr_lo, info.family, r.key_len[info.family == 6],
                          h);
    state.top_refused_changed = true;
}

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
    return limit_admit(r.limit, state.overflow_tat_ns, now_ns, r.allowance(), &c->new_tat_ns);
}

// One rule's check of a packet: whether its limit admits it, nothing stored yet.
inline void Pipeline::check(const PacketInfo &info, Check *checks, unsigned n_checks, Check &c,
                            uint64_t now_ns) {
    const CompiledRule &r = rules_->rules()[c.rule];
    c.unverified = r.action == RuleAction::syn_auth && !verified(c.aux_hash, now_ns);
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
    uint64_t tat_ns;
    c.entry = table_->acquire(c.hash, now_ns, &tat_ns);
    c.reserved = c.entry != nullptr && tat_ns == 0;
    if (c.entry == nullptr) {
        c.admitted = check_table_full(r, &c, now_ns);
        if (!c.admitted && is_aggregate(r.key_kind))
            c.cls = trust_class(info, c, checks, n_checks, now_ns);
        return;
    }
    c.admitted = limit_admit(r.limit, tat_ns, now_ns, r.allowance(), &c.new_tat_ns);
    if (!c.admitted && is_aggregate(r.key_kind)) [[unlikely]]
        admit_by_class(r, info, checks, n_checks, tat_ns, now_ns, &c);
}

// An aggregate rule's refusal at the new sources' tolerance: the source's class decides,
// each class seeing the same TAT with its own tolerance (CompiledRule::class_tolerance_ns).
void Pipeline::admit_by_class(const CompiledRule &r, const PacketInfo &info, const Check *checks,
                              unsigned n_checks, uint64_t tat_ns, uint64_t now_ns, Check *c) {
    c->cls = trust_class(info, *c, checks, n_checks, now_ns);
    if (!r.classes || c->cls == TrustClass::fresh) return;
    c->admitted = limit_admit(r.limit, tat_ns, now_ns,
                              r.class_allowance[static_cast<unsigned>(c->cls)], &c->new_tat_ns);
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

inline Verdict Pipeline::decide_one(const PacketInfo &info, const Frame &frame, Check *checks,
                                    unsigned n_checks, uint64_t now_ns, AnswerPlan *plan) {
    const std::vector<CompiledRule> &rules = rules_->rules();
    // The common case, one plain rule: what the loops below do for it, without their
    // bookkeeping (62 instructions a packet fewer; BM_Decide 1K keys, callgrind).
    if (n_checks == 1 && rules[checks[0].rule].plain) [[likely]] {
        Check &c = checks[0];
        const CompiledRule &r = rules[c.rule];
        check(info, checks, 1, c, now_ns);
        RuleCoreState &state = mine(r);
        ++state.counters.matched;
        if (c.admitted) {
            ++state.counters.passed;
            if (c.entry != nullptr) {
                LimitEntry *e = table_->commit(c.entry, c.hash, c.new_tat_ns);
                if (merging_) note_admitted(e, c.hash, r.limit);
            } else if (r.on_table_full == TableFullPolicy::shared) {
                state.overflow_tat_ns = c.new_tat_ns;
            }
            return Verdict::pass;
        }
        if (c.reserved) table_->release(c.entry, c.hash);
        note_refusal(info, c);
        ++state.counters.refused;
        ++counters_.rate_limited;
        return answer_refusal(info, frame, c, now_ns, plan);
    }
    int blamed = -1;
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
            RuleCounters &rc = mine(r).counters;
            ++rc.matched;
            if (c.admitted) continue;
            if (r.shadow) {
                ++rc.shadow_refused;
                note_refusal(info, c);
            } else if (blamed < 0 || static_cast<int>(i) < blamed) {
                blamed = static_cast<int>(i);
            }
        }
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
        ++counters_.rate_limited;
        for (unsigned i = 0; i < n_checks; ++i) {
            if (static_cast<int>(i) != blamed) ++mine(rules[checks[i].rule]).counters.overruled;
            if (checks[i].reserved) table_->release(checks[i].entry, checks[i].hash);
        }
        return answer_refusal(info, frame, checks[blamed], now_ns, plan);
    }
    uint64_t known = 0;
    for (unsigned i = 0; i < n_checks; ++i) {
        Check &c = checks[i];
        const CompiledRule &r = rules[c.rule];
        ++mine(r).counters.passed;
        if (c.by_reserve) [[unlikely]]
            ++reserve_by_class(mine(r).counters, c.cls);
        if (c.entry == nullptr) {
            if (c.admitted && r.on_table_full == TableFullPolicy::shared)
                mine(r).overflow_tat_ns = c.new_tat_ns;
        } else if (c.admitted) {
            LimitEntry *e = table_->commit(c.entry, c.hash, c.new_tat_ns);
            if (merging_) note_admitted(e, c.hash, r.limit);
        } else if (c.reserved) {  // a shadow rule's would-be refusal stores nothing
            table_->release(c.entry, c.hash);
        }
        // Admitted by the aggregate's own limit (not by a table-full pass, not a shadow rule's
        // would-be refusal).
        if (c.known_hash != 0 && c.admitted && c.entry != nullptr) known = c.known_hash;
    }
    // Admitted by an aggregate limit and every other rule: from now on the source is known
    // (for the established TTL), so that under a flood it is shed after the new ones.
    if (known != 0 && remember_until(known, rules_->established().ttl_ns, now_ns, true) ==
                          Remembered::no_room) [[unlikely]]
        ++counters_.established_full;
    return Verdict::pass;
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

// What the blamed rule's action does with a refused packet. Every refusal lands in exactly one
// of answered, answer_capped, answer_skipped and unanswered.
Verdict Pipeline::answer_refusal(const PacketInfo &info, const Frame &frame, const Check &c,
                                 uint64_t now_ns, AnswerPlan *plan) {
    const CompiledRule &r = rules_->rules()[c.rule];
    RuleCoreState &state = mine(r);
    RuleCounters &rc = state.counters;
    // syn-auth answers only the unproven: a verified source over its limit is just dropped.
    if (r.answer == AnswerKind::count || (r.action == RuleAction::syn_auth && !c.unverified)) {
        ++rc.unanswered;
        return Verdict::drop;
    }
    if (frame.captured < frame.len) {
        plan->kind = AnswerKind::count;
        plan->why = NoAnswer::not_contiguous;
        ++rc.answer_skipped;
        return Verdict::drop;
    }
    *plan = plan_answer(r.answer, frame.bytes, frame.len, info);
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
    if (r.answer == AnswerKind::syn_cookie)
        plan->cookie = syn_cookie(cookie_key_, info, cookie_slot(now_ns));
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
    if (merging_) note_admitted(e, h, LimitProfile{LimitKind::gcra, caps.per_destination});
    answer_core_tat_ns_ = core_tat_ns;
    return true;
}

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
        if (r.action != RuleAction::syn_auth || r.shadow ||
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
    return remember_until(table_->hash(verified_key(r, info)), r.verified_ttl_ns, now_ns, false) ==
           Remembered::yes;
}

// Keeps key h live until at least now + ttl on every core (a verification, in the merge's
// terms); false if the table had no room for it. A key with more than half its ttl left is
// left as it is: a RST or a reply stream at line rate then costs a lookup, not a table write
// and a merge record each.
Pipeline::Remembered Pipeline::remember_until(uint64_t h, uint64_t ttl_ns, uint64_t now_ns,
                                              bool budgeted) {
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
    if (merging_) {
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
    switch (remember_until(table_->hash(k), est.ttl_ns, now_ns, true)) {
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
        if (parse_packet(frames[i], lens[i], &info, captured) == ParseStatus::ip && is_reply(info))
            mark_established(info, now_ns[i]);
    }
}

void Pipeline::prepare(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                       const uint64_t *now_ns, const uint32_t *captured_lens, bool prefetch_now) {
    assert(prepared_ < 2);  // a third would take the oldest's slot
    Burst &b = bursts_[(oldest_ + prepared_) % 2];
    if (prepared_++ == 0) oldest_ = static_cast<unsigned>(&b - bursts_);
    b.take(frames, lens, n, now_ns, captured_lens);
    stage_one(b, prefetch_now);
}

uint16_t Pipeline::decide_prepared(Verdict *verdicts) {
    if (prepared_ == 0) return 0;
    Burst &b = bursts_[oldest_];
    Burst *ahead = prepared_ == 2 ? &bursts_[oldest_ ^ 1] : nullptr;
    if (b.serial != serial_) stage_one(b, false);  // keyed with rules since swapped out
    if (!b.prefetched) prefetch_checks(b, 0);      // nothing was decided before it
    if (ahead != nullptr && ahead->serial != serial_) ahead = nullptr;  // prepared again later
    stage_two(b, verdicts, ahead);
    decided_ = oldest_;
    oldest_ ^= 1;
    --prepared_;
    return b.n;
}

void Pipeline::decide(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                      const uint64_t *now_ns, Verdict *verdicts, const uint32_t *captured_lens) {
    Burst &b = bursts_[decided_];
    b.take(frames, lens, n, now_ns, captured_lens);
    stage_one(b, true);
    stage_two(b, verdicts, nullptr);
}

// A check's table buckets: its key's, and its source's verified or established and known
// marks where the rule reads them (a syn-auth source's verified mark only where it may exist,
// RememberedFilter).
inline void Pipeline::prefetch_check(const Check &c) {
    table_->prefetch(c.hash);
    if (c.aux_hash != 0 && (rules_->rules()[c.rule].action != RuleAction::syn_auth ||
                            remembered_.may_contain(c.aux_hash)))
        table_->prefetch(c.aux_hash);
    if (c.known_hash != 0) table_->prefetch(c.known_hash);
}

// The buckets of b's checks from the from-th on; b's are all prefetched then.
void Pipeline::prefetch_checks(Burst &b, unsigned from) {
    for (unsigned k = from; k < b.n_checks; ++k) prefetch_check(b.checks[k]);
    b.prefetched = true;
}

// Stage 1: parse every frame; classify the sources (and destinations) of the IP ones, a lookup
// call per family and direction; key every (packet, matching rule) pair, looking only at the
// rules the packet's protocol and destination port admit (RuleIndex). No limiter state is
// read. With prefetch, each check's buckets are prefetched as soon as its hash is known: the
// parsing and keying of the burst's other packets hide the cache misses before stage 2.
void Pipeline::stage_one(Burst &b, bool prefetch) {
    const std::vector<CompiledRule> &rules = rules_->rules();
    hs_scratch *const scratch = rules_->payload_scratch(core_);
    const uint16_t n = b.n;
    b.serial = serial_;
    b.prefetched = prefetch;
    for (uint16_t i = 0; i < n; ++i)
        b.status[i] = parse_packet(b.frames[i], b.lens[i], &b.infos[i], b.captured[i]);
    rules_->classify_burst(b.infos, b.status, n, b.source, b.dst_rules);
    unsigned n_checks = 0;
    for (uint16_t i = 0; i < n; ++i) {
        b.first_check[i] = static_cast<uint16_t>(n_checks);
        if (b.status[i] != ParseStatus::ip || b.source[i].verdict != PrefixVerdict::none) continue;
        const PacketInfo &info = b.infos[i];
        const RuleCandidates candidates = rules_->candidates(info);
        for (unsigned k = 0; k < candidates.count; ++k) {
            const CompiledRule &r = rules[candidates.index[k]];
            if (!rule_matches_rest(r, info, *b.source[i].rules, *b.dst_rules[i])) continue;
            // The payload last: only packets that could match pay for the scan.
            if (r.payload != nullptr &&
                !payload_matches(r.payload, r.payload_offset, r.payload_depth, b.frames[i],
                                 b.captured[i], info, scratch))
                continue;
            Check &c = b.checks[n_checks++];
            c.rule = r.index;
            c.key = rule_key(r, info);
            c.hash = rule_key_hash(r, info, *table_, c.key);
            const bool aggregate = is_aggregate(r.key_kind);
            c.aux_hash = r.action == RuleAction::syn_auth ? table_->hash(verified_key(r, info))
                         : aggregate                      ? mark_hash(info, kTagEstablished)
                                                          : 0;
            c.known_hash = aggregate ? mark_hash(info, kTagKnown) : 0;
            if (prefetch) prefetch_check(c);
        }
    }
    b.first_check[n] = static_cast<uint16_t>(n_checks);
    b.n_checks = n_checks;
}

// Stage 2: verdicts, in arrival order (a packet's commit is seen by the next one). ahead: a
// burst keyed since, whose checks' buckets are prefetched along the way, spread evenly over
// this burst's packets.
void Pipeline::stage_two(Burst &b, Verdict *verdicts, Burst *ahead) {
    const uint16_t n = b.n;
    // n_checks / n of the ahead burst's checks a packet, without a division: each packet adds
    // n_checks to the budget, each prefetch takes n.
    unsigned ahead_done = 0, budget = 0;
    for (uint16_t i = 0; i < n; ++i) {
        if (ahead != nullptr)
            for (budget += ahead->n_checks; budget >= n; budget -= n)
                prefetch_check(ahead->checks[ahead_done++]);
        const uint64_t now_ns = b.now_ns[i];
        const PacketInfo &info = b.infos[i];
        Verdict v;
        switch (b.status[i]) {
            case ParseStatus::malformed:
                ++counters_.malformed;
                ++counters_.malformed_by_reason[static_cast<unsigned>(info.malformed)];
                v = Verdict::drop;
                break;
            case ParseStatus::non_ip:
                ++counters_.non_ip;
                v = Verdict::pass;
                break;
            case ParseStatus::ip:
            default:
                if (b.source[i].verdict == PrefixVerdict::allow) {
                    ++counters_.allow_hits;
                    v = Verdict::pass;
                } else if (b.source[i].verdict == PrefixVerdict::block) {
                    ++counters_.block_hits;
                    v = Verdict::drop;
                } else if (rules_->has_syn_auth() && is_bare_rst(info) &&
                           take_cookie_reply(info, b.source[i], *b.dst_rules[i], now_ns)) {
                    ++counters_.syn_auth_replies;
                    v = Verdict::drop;
                } else {
                    const Frame frame{b.frames[i], b.lens[i], b.captured[i]};
                    v = decide_one(info, frame, &b.checks[b.first_check[i]],
                                   b.first_check[i + 1] - b.first_check[i], now_ns, &b.plans[i]);
                }
                break;
        }
        verdicts[i] = v;
        ++counters_.packets;
        ++(v == Verdict::pass ? counters_.passed : counters_.dropped);  // answered: dropped
    }
    if (ahead != nullptr) prefetch_checks(*ahead, ahead_done);  // any left (n == 0)
    if (n > 0) table_->sweep(b.now_ns[n - 1], kSweepBucketsPerBurst);
}

}  // namespace floodgate
