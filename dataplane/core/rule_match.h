// A rule compiled for the hot path: its match conditions, its source-key masks and its limit
// (GCRA or a window: limit_admit.h). Plain data with no DPDK types, so matching and keying are
// unit-testable. Its src and dst prefix lists live in the RuleSet's prefix tables, which say for
// each packet which rules' lists hold its source and destination (RuleBits); matching reads one
// bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/api/answers.h"
#include "dataplane/api/rules.h"
#include "dataplane/core/adaptive_limit.h"
#include "dataplane/core/limit_admit.h"
#include "dataplane/core/limit_table.h"
#include "dataplane/core/parse.h"
#include "dataplane/core/payload_scan.h"
#include "dataplane/core/prefix_table.h"
#include "dataplane/core/rule_state.h"

struct hs_database;

namespace floodgate {

struct CompiledRule {
    std::string name;
    uint16_t index = 0;  // position in its RuleSet
    // Counters, top offenders and the key id; owned by the RuleSet, shared with the rule's
    // successors in later RuleSets.
    RuleState *state = nullptr;
    uint32_t key_id = 0;  // == state->key_id, kept here to key without a pointer chase

    // Match. has_proto: l4_proto must equal proto. ports_need_l4: the rule names ports or TCP
    // flags, so a packet without a parsed TCP/UDP header cannot match.
    bool has_proto = false;
    uint8_t proto = 0;
    bool ports_need_l4 = false;
    std::vector<PortRange> dst_ports;
    std::vector<PortRange> src_ports;
    bool src_list = false;  // the source must be in the rule's src list
    bool dst_list = false;  // the destination must be in its dst list
    TcpFlagMatch tcp_flags;
    // match.payload: the compiled patterns (owned by the RuleSet's config) and the window,
    // checked after everything else (dataplane/core/payload_scan.h); null: no payload condition.
    const hs_database *payload = nullptr;
    uint32_t payload_offset = 0;
    uint32_t payload_depth = 0;
    PayloadLiteral payload_literal;  // len 0 unless the only pattern is a short literal
    // The shortest pattern's length when every pattern is a literal or a DNS suffix (0 with a
    // regular expression): a shorter window cannot match, and is not scanned.
    uint32_t payload_min_len = 0;

    // Key: what the limit is kept per (KeyKind), and the address masks per family; [0] IPv4,
    // [1] IPv6, in raw memory byte order like LimitKey's words. key_mask_* mask the source
    // (src, src_dst) or the destination (dst); dst_mask_* the destination of a src_dst key.
    // key_len is the prefix length of the address a refusal is reported by (top offenders):
    // the source, or for dst keys the destination.
    KeyKind key_kind = KeyKind::src;
    uint8_t key_len[2] = {32, 64};
    uint64_t key_mask_hi[2] = {};
    uint64_t key_mask_lo[2] = {};
    uint64_t dst_mask_hi[2] = {};
    uint64_t dst_mask_lo[2] = {};

    // The limit (LimitProfile::allowance(): tau for GCRA, N for a window) is the least trusted
    // class's when the rule has classes: an aggregate rule's more trusted classes may go
    // further, class_allowance[TrustClass] (the reserve). A per-source rule has one class.
    LimitProfile limit;
    bool classes = false;  // an aggregate rule with a reserve
    uint64_t class_allowance[kTrustClasses] = {};
    // The percent of the allowance kept above each class (from its reserve), for an adaptive
    // rule's allowances, which follow its learned rate.
    unsigned class_reserved_pct[kTrustClasses] = {};
    // limit.adaptive: the rate is learned (RuleState::adaptive), from adaptive_initial_milli,
    // with burst_pkts packets of tolerance at whatever rate it is.
    bool adaptive = false;
    AdaptiveProfile adaptive_profile;
    uint64_t adaptive_initial_milli = 0;
    uint32_t burst_pkts = 0;
    uint64_t allowance() const { return class_allowance[static_cast<unsigned>(TrustClass::fresh)]; }
    // What a refused packet gets: RuleAction::drop (answer count) or an answer of this kind.
    RuleAction action = RuleAction::drop;
    AnswerKind answer = AnswerKind::count;
    uint32_t slip = 1;  // dns_truncate: answer one refused query in slip (0: none)
    // shape: how far ahead of now a held packet's release may be (its queue: packets x T, or
    // the delay), and T itself for the check that the queue carries over a reload.
    uint64_t shape_lead_ns = 0;
    uint64_t verified_ttl_ns = 0;  // syn_auth, syn_proxy
    ProxyAnnounce announce;        // syn_proxy
    bool shadow = false;
    // An enforcing rule with escalate options: its refusals are sampled for the XDP tier
    // (dataplane/pipeline/refusal_samples.h).
    bool escalates = false;
    TableFullPolicy on_table_full = TableFullPolicy::shared;
    bool exact_top = false;  // top_offenders: exact (every refusal counted)
    // Whether the consumption of its keys (and a syn-auth rule's verifications) is published to
    // the other cores by the merge, per family ([0] IPv4, [1] IPv6): not when steering gives
    // each key one owner core (RuleSet, dataplane/core/steering.h).
    bool published[2] = {true, true};
    bool publishes(const PacketInfo &p) const { return published[p.family == 6]; }
    // share: cluster: what its keys admit is also counted for the other boxes (Pipeline's
    // cluster ledger, dataplane/pipeline/cluster_ledger.h).
    bool shared = false;
    // Neither aggregate nor syn-auth/syn-proxy nor shadow nor shared: a packet it alone matches is
    // decided by its limit and nothing else (Pipeline::decide_one's short path).
    bool plain = false;
};

// The masks that keep the first len bits of an address, as two words in raw memory order.
void key_masks(unsigned len, uint64_t *hi, uint64_t *lo);

// state may be null for code that only matches and keys (tests); then key_id is index.
CompiledRule compile_rule(const Rule &r, uint16_t index, RuleState *state = nullptr);

namespace detail {
inline bool in_ranges(const std::vector<PortRange> &ranges, uint16_t port) {
    for (const PortRange &r : ranges)
        if (port >= r.lo && port <= r.hi) return true;
    return false;
}
}  // namespace detail

// What RuleIndex (rule_index.h) does not check of a rule it lists as a candidate for the
// packet: the source ports, the TCP flags and the src and dst lists. src_rules and dst_rules:
// the rules whose src and dst lists hold the packet's addresses (RuleSet::classify_source and
// dst_rules). With check_flags false, the rule's TCP flag condition is left out: whether a RST
// answering floodgate's SYN-ACK belongs to a syn-auth rule (its SYN matched the rule; the RST
// has the same addresses and ports).
inline bool rule_matches_rest(const CompiledRule &r, const PacketInfo &p, const RuleBits &src_rules,
                              const RuleBits &dst_rules, bool check_flags = true) {
    if (r.ports_need_l4) {
        if (!r.src_ports.empty() && !detail::in_ranges(r.src_ports, p.src_port)) return false;
        if (check_flags && (r.tcp_flags.must_set | r.tcp_flags.must_clear) != 0) {
            if (p.l4_proto != kProtoTcp) return false;
            if ((p.tcp_flags & r.tcp_flags.must_set) != r.tcp_flags.must_set) return false;
            if ((p.tcp_flags & r.tcp_flags.must_clear) != 0) return false;
        }
    }
    if (r.src_list && !src_rules.test(r.index)) return false;
    if (r.dst_list && !dst_rules.test(r.index)) return false;
    return true;
}

// Whether the packet matches the rule (its payload condition aside): the protocol and
// destination ports that RuleIndex checks, then the rest.
inline bool rule_matches(const CompiledRule &r, const PacketInfo &p, const RuleBits &src_rules,
                         const RuleBits &dst_rules, bool check_flags = true) {
    if (r.has_proto && p.l4_proto != r.proto) return false;
    if (r.ports_need_l4) {
        if (!p.has_l4 || (p.l4_proto != kProtoTcp && p.l4_proto != kProtoUdp)) return false;
        if (!r.dst_ports.empty() && !detail::in_ranges(r.dst_ports, p.dst_port)) return false;
    }
    return rule_matches_rest(r, p, src_rules, dst_rules, check_flags);
}

// LimitKey::tag's low byte is the IP family (4 or 6); these bits say which of a rule's kinds
// of state a key is, so that a source's limit and its syn-auth verification never share a
// TAT, and answer caps never share one with any rule.
inline constexpr uint32_t kTagVerified = 0x80;
inline constexpr uint32_t kTagAnswerCap = 0x40;

// An address of the packet (its source or destination, 16 bytes) masked for the packet's
// family (masks from key_masks(): [0] IPv4, [1] IPv6), under tag.
inline LimitKey masked_key(const PacketInfo &p, const uint8_t *addr, const uint64_t (&mask_hi)[2],
                           const uint64_t (&mask_lo)[2], uint32_t tag) {
    unsigned f = p.family == 6;
    uint64_t hi, lo;
    std::memcpy(&hi, addr, 8);
    std::memcpy(&lo, addr + 8, 8);
    return LimitKey{hi & mask_hi[f], lo & mask_lo[f], tag};
}

inline LimitKey source_key(const PacketInfo &p, const uint64_t (&mask_hi)[2],
                           const uint64_t (&mask_lo)[2], uint32_t tag) {
    return masked_key(p, p.src, mask_hi, mask_lo, tag);
}

inline LimitKey destination_key(const PacketInfo &p, const uint64_t (&mask_hi)[2],
                                const uint64_t (&mask_lo)[2], uint32_t tag) {
    return masked_key(p, p.dst, mask_hi, mask_lo, tag);
}

// The address a rule's key names for this packet, as top offenders report it: the source
// prefix (src, src_dst), the destination prefix (dst), nothing (none: one bucket for both
// families).
inline LimitKey rule_key(const CompiledRule &r, const PacketInfo &p) {
    switch (r.key_kind) {
        case KeyKind::dst:
            return destination_key(p, r.key_mask_hi, r.key_mask_lo, r.key_id << 8 | p.family);
        case KeyKind::none:
            return LimitKey{0, 0, r.key_id << 8};
        case KeyKind::src:
        case KeyKind::src_dst:
        default:
            return source_key(p, r.key_mask_hi, r.key_mask_lo, r.key_id << 8 | p.family);
    }
}

// The table's hash of the rule's key for this packet: the hash of rule_key, except that a
// src_dst key also hashes the destination prefix (keyed, so that no source can be chosen to
// share a pair's TAT).
inline uint64_t rule_key_hash(const CompiledRule &r, const PacketInfo &p, const LimitTable &table,
                              const LimitKey &key) {
    const uint64_t h = table.hash(key);
    if (r.key_kind != KeyKind::src_dst) [[likely]]
        return h;
    const LimitKey d = destination_key(p, r.dst_mask_hi, r.dst_mask_lo, 0);
    return table.hash(LimitKey{d.addr_hi ^ h, d.addr_lo, key.tag});
}

// The key under which a syn-auth rule (always keyed by source) remembers that the packet's
// source proved itself.
inline LimitKey verified_key(const CompiledRule &r, const PacketInfo &p) {
    LimitKey k = source_key(p, r.key_mask_hi, r.key_mask_lo, r.key_id << 8 | p.family);
    k.tag |= kTagVerified;
    return k;
}

// The key under which a source the protected side answered is remembered (one per prefix of
// EstablishedOptions, for every rule).
inline constexpr uint32_t kTagEstablished = 0x20;
// And a source an aggregate rule admitted while it was not saturated (the known class).
inline constexpr uint32_t kTagKnown = 0x10;

}  // namespace floodgate
