// The decision, as the stages it runs: stage 1 (stage_one) parses, classifies and keys a
// burst, prefetching its table buckets; stage 2 (stage_two) gives each packet its verdict in
// arrival order, from its rules' checks (decide_one, pipeline_inline.h). decide() runs both
// on one burst; prepare() runs stage 1 and decide_prepared() stage 2, so that one burst's
// buckets are prefetched while the burst before it is decided.
#include "dataplane/pipeline/pipeline.h"

#include "dataplane/core/payload_scan.h"
#include "dataplane/pipeline/pipeline_inline.h"

#include <algorithm>
#include <cassert>

namespace floodgate {

namespace {
// A RST with neither SYN nor ACK: what a TCP stack sends for an unacceptable SYN-ACK.
bool is_bare_rst(const PacketInfo &p) {
    return p.l4_proto == kProtoTcp && p.has_l4 &&
           (p.tcp_flags & (kTcpRst | kTcpSyn | kTcpAck)) == kTcpRst;
}
// A TCP segment with its header, no SYN: what follows a connection's handshake.
bool is_after_syn(const PacketInfo &p) {
    return p.l4_proto == kProtoTcp && p.has_l4 && (p.tcp_flags & kTcpSyn) == 0;
}
}  // namespace

Pipeline::Pipeline(const RuleSet *rules, LimitTable *table, unsigned core)
    : table_(table), core_(core) {
    for (Burst &b : bursts_) b.checks.reset(new Check[kMaxBurst * (kMaxRules + 1)]);
    adopt(rules);
}

void Pipeline::adopt(const RuleSet *rules) {
    const RuleSet *old = rules_;
    rules_ = rules;
    serial_ = rules->serial();
    for (const CompiledRule &r : rules->rules()) mine_[r.index] = &r.state->per_core[core_];
    if (old != nullptr && !shaper_.empty()) shaper_.keep_across(*old, *rules, core_);
}

void Pipeline::decide(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                      const uint64_t *now_ns, Verdict *verdicts, const uint32_t *captured_lens) {
    Burst &b = bursts_[decided_];
    b.take(frames, lens, n, now_ns, captured_lens);
    stage_one(b, true);
    stage_two(b, verdicts, nullptr);
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
    parse_burst(b.frames, b.lens, b.captured, n, b.infos, b.status);
    rules_->classify_burst(b.infos, b.status, n, b.source, b.dst_rules);
    unsigned n_checks = 0;
    if (rules.empty()) {  // no rule to match: the burst has no checks (perf-no-rules.yaml)
        std::fill(b.first_check, b.first_check + n + 1, 0);
        std::fill(b.proxy_rule, b.proxy_rule + n, kNoProxyRule);
        b.n_checks = 0;
        return;
    }
    for (uint16_t i = 0; i < n; ++i) {
        b.first_check[i] = static_cast<uint16_t>(n_checks);
        b.proxy_rule[i] = kNoProxyRule;
        if (b.status[i] != ParseStatus::ip || b.source[i].verdict != PrefixVerdict::none) continue;
        const PacketInfo &info = b.infos[i];
        const RuleCandidates candidates = rules_->candidates(info);
        for (unsigned k = 0; k < candidates.count; ++k) {
            const CompiledRule &r = rules[candidates.index[k]];
            // A segment after a SYN toward a syn-proxy rule's servers (its flags aside: the rule
            // matches SYNs, the connection is everything after): its connection may be proxied.
            // A shadow rule's too: it answers no SYN, but the connections it proxied before
            // it was set to shadow go on (the way to retire one without breaking them).
            if (r.action == RuleAction::syn_proxy && b.proxy_rule[i] == kNoProxyRule &&
                is_after_syn(info) &&
                rule_matches_rest(r, info, *b.source[i].rules, *b.dst_rules[i], false)) [[unlikely]]
                b.proxy_rule[i] = r.index;
            if (!rule_matches_rest(r, info, *b.source[i].rules, *b.dst_rules[i])) continue;
            // The payload last: only packets that could match pay for the scan.
            if (r.payload != nullptr &&
                !payload_matches(r.payload, r.payload_literal, r.payload_min_len, r.payload_offset,
                                 r.payload_depth, b.frames[i], b.captured[i], info, scratch))
                continue;
            Check &c = b.checks[n_checks++];
            c.rule = r.index;
            c.key = rule_key(r, info);
            c.hash = rule_key_hash(r, info, *table_, c.key);
            const bool aggregate = is_aggregate(r.key_kind);
            c.aux_hash = verifies_sources(r.action) ? table_->hash(verified_key(r, info))
                         : aggregate                ? mark_hash(info, kTagEstablished)
                                                    : 0;
            c.known_hash = aggregate ? mark_hash(info, kTagKnown) : 0;
            if (prefetch) prefetch_check(c);
        }
    }
    b.first_check[n] = static_cast<uint16_t>(n_checks);
    b.n_checks = n_checks;
}

// The burst's share of the core's counters, summed in registers and written once at its end:
// a reader copies them between bursts (read_stats), so every reading still has packets =
// passed + dropped and the rest (docs/replay.md, "Counters: what every reading shows").
struct Pipeline::BurstCounts {
    uint32_t passed = 0, malformed = 0, non_ip = 0, allow_hits = 0, block_hits = 0,
             syn_auth_replies = 0, rate_limited = 0;
};

// The verdict of a packet its parse or its source's prefix lists decide (malformed, non-IP,
// allow-listed, block-listed), counted; false when its rules decide it.
inline bool Pipeline::settled_verdict(const Burst &b, uint16_t i, BurstCounts &counts, Verdict *v) {
    switch (b.status[i]) {
        case ParseStatus::malformed:
            ++counts.malformed;
            ++counters_.malformed_by_reason[static_cast<unsigned>(b.infos[i].malformed)];
            *v = Verdict::drop;
            return true;
        case ParseStatus::non_ip:
            ++counts.non_ip;
            *v = Verdict::pass;
            return true;
        case ParseStatus::ip:
        default:
            if (b.source[i].verdict == PrefixVerdict::allow) {
                ++counts.allow_hits;
                *v = Verdict::pass;
                return true;
            }
            if (b.source[i].verdict == PrefixVerdict::block) {
                ++counts.block_hits;
                *v = Verdict::drop;
                return true;
            }
            return false;
    }
}

// Stage 2 of a burst without checks: passed unless malformed or block-listed.
inline void Pipeline::decide_unmatched(const Burst &b, Verdict *verdicts, BurstCounts &counts) {
    uint64_t epoch_end_ns = epoch_end_ns_;  // in a register: the verdicts' stores may alias it
    for (uint16_t i = 0; i < b.n; ++i) {
        Verdict v;
        if (!settled_verdict(b, i, counts, &v)) {
            if (b.now_ns[i] >= epoch_end_ns) [[unlikely]] {
                end_epoch(b.now_ns[i]);
                epoch_end_ns = epoch_end_ns_;
            }
            v = Verdict::pass;
        }
        verdicts[i] = v;
        counts.passed += v == Verdict::pass;
    }
}

// Stage 2 of any burst, one packet after another; returns how many of ahead's checks it
// prefetched.
inline unsigned Pipeline::decide_in_order(Burst &b, Verdict *verdicts, Burst *ahead,
                                          BurstCounts &counts) {
    const uint16_t n = b.n;
    // n_checks / n of the ahead burst's checks a packet, without a division: each packet adds
    // n_checks to the budget, each prefetch takes n.
    unsigned ahead_done = 0, budget = 0;
    // The common case, a check a packet: the i-th packet prefetches the i-th check.
    const bool one_each = ahead != nullptr && ahead->n_checks == n;
    if (one_each) ahead_done = n;
    // Read once, not per packet: the loop's stores (verdicts, checks) may alias them.
    Check *const checks = b.checks.get();
    const bool syn_auth = rules_->has_syn_auth();
    for (uint16_t i = 0; i < n; ++i) {
        if (one_each)
            prefetch_check(ahead->checks[i]);
        else if (ahead != nullptr)
            for (budget += ahead->n_checks; budget >= n; budget -= n)
                prefetch_check(ahead->checks[ahead_done++]);
        const uint64_t now_ns = b.now_ns[i];
        const PacketInfo &info = b.infos[i];
        Verdict v;
        if (settled_verdict(b, i, counts, &v)) {
            // malformed, non-IP or on a prefix list: decided, with no rule to ask
        } else if (syn_auth && is_bare_rst(info) &&
                   take_cookie_reply(info, b.source[i], *b.dst_rules[i], now_ns)) {
            ++counts.syn_auth_replies;
            v = Verdict::drop;
        } else {
            if (now_ns >= epoch_end_ns_) [[unlikely]]
                end_epoch(now_ns);
            // No rule matched: passed, with nothing to check or commit.
            v = Verdict::pass;
            const unsigned first = b.first_check[i];
            if (const unsigned n_checks = b.first_check[i + 1] - first; n_checks != 0) {
                v = decide_one(b, i, checks + first, n_checks, now_ns);
                // A rule's refusal, answered or not (decide_one drops nothing else).
                counts.rate_limited += v == Verdict::drop || v == Verdict::answer;
            }
            // A passed segment toward a syn-proxy rule's servers that may be the proxy's (a
            // connection it holds, a handshake's ACK) goes through it (syn_proxy_path.h); the
            // others go on at once.
            if (v == Verdict::pass && b.proxy_rule[i] != kNoProxyRule && proxy_.wants(info, now_ns))
                [[unlikely]]
                v = Verdict::proxy;
        }
        verdicts[i] = v;
        if (v == Verdict::delay) [[unlikely]]
            b.held_item[i] = shaper_.last_held();
        // An adaptive rule's sampled connection: the client's handshake end and request.
        if (samples_.active() > 0 && v == Verdict::pass && b.status[i] == ParseStatus::ip &&
            info.l4_proto == kProtoTcp && (info.tcp_flags & kTcpSyn) == 0) [[unlikely]]
            client_segment(info, b.frame(i), now_ns);
        // answered: dropped; delayed: passed, later
        counts.passed += v == Verdict::pass || v == Verdict::delay || v == Verdict::proxy;
    }
    return ahead_done;
}

// Stage 2: verdicts, in arrival order (a packet's commit is seen by the next one). ahead: a
// burst keyed since, whose checks' buckets are prefetched along the way, spread evenly over
// this burst's packets.
void Pipeline::stage_two(Burst &b, Verdict *verdicts, Burst *ahead) {
    const uint16_t n = b.n;
    if (rules_->has_adaptive() && n > 0) [[unlikely]]
        refresh_adaptive(b.now_ns[0]);
    BurstCounts counts;
    if (ahead != nullptr && ahead->n_checks == 0) {  // nothing of it to prefetch
        ahead->prefetched = true;
        ahead = nullptr;
    }
    unsigned ahead_done = 0;
    // A burst no rule matched, with no cookie or proxied connection to look for and no
    // connection sampled, has nothing in arrival order but the epoch's end: its own loop, 28
    // instructions a packet fewer with no rules, 180 -> 152 (callgrind, perf/results/notes.md).
    // Its ahead burst is prefetched after it.
    if (b.n_checks == 0 && !rules_->has_syn_auth() && !rules_->has_syn_proxy() &&
        samples_.active() == 0)
        decide_unmatched(b, verdicts, counts);
    else
        ahead_done = decide_in_order(b, verdicts, ahead, counts);
    counters_.packets += n;
    counters_.passed += counts.passed;
    counters_.dropped += n - counts.passed;
    counters_.malformed += counts.malformed;
    counters_.non_ip += counts.non_ip;
    counters_.allow_hits += counts.allow_hits;
    counters_.block_hits += counts.block_hits;
    counters_.syn_auth_replies += counts.syn_auth_replies;
    counters_.rate_limited += counts.rate_limited;
    if (ahead != nullptr) prefetch_checks(*ahead, ahead_done);  // any left
    if (n > 0) {
        table_->sweep(b.now_ns[n - 1], kSweepBucketsPerBurst);
        clock_ns_ = b.now_ns[n - 1];
    }
}

// A check's table buckets: its key's, and its source's verified or established and known
// marks where the rule reads them (a syn-auth source's verified mark only where it may exist,
// RememberedFilter).
inline void Pipeline::prefetch_check(const Check &c) {
    table_->prefetch(c.hash);
    if (c.aux_hash != 0 &&
        (!verifies_sources(rules_->rules()[c.rule].action) || remembered_.may_contain(c.aux_hash)))
        table_->prefetch(c.aux_hash);
    if (c.known_hash != 0) table_->prefetch(c.known_hash);
}

// The buckets of b's checks from the from-th on; b's are all prefetched then.
void Pipeline::prefetch_checks(Burst &b, unsigned from) {
    for (unsigned k = from; k < b.n_checks; ++k) prefetch_check(b.checks[k]);
    b.prefetched = true;
}

// The proxy's step for a frame of the decided burst; a completed handshake proves its source,
// whose next connections then go straight to the server.
Pipeline::ProxyOut Pipeline::proxy_client(uint16_t i, uint8_t *frame, uint32_t cap) {
    const Burst &b = bursts_[decided_];
    const CompiledRule &rule = rules_->rules()[b.proxy_rule[i]];
    const ProxyOut out = proxy_.from_client(b.infos[i], frame, b.lens[i], cap, b.now_ns[i], rule);
    if (out.step == ProxyStep::server_syn && verify(rule, b.infos[i], b.now_ns[i]))
        ++mine(rule).counters.verified;
    return out;
}

}  // namespace floodgate
