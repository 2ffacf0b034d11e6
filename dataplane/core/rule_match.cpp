#include "dataplane/core/rule_match.h"

#include "dataplane/patterns/payload_database.h"

namespace floodgate {

static_assert(kMaxRatePeriodNs <= kMaxWindowNs, "every rate's period can be a window");

void key_masks(unsigned len, uint64_t *hi, uint64_t *lo) {
    IpAddr ones;
    ones.fill(0xff);
    mask_addr(&ones, len);
    std::memcpy(hi, ones.data(), 8);
    std::memcpy(lo, ones.data() + 8, 8);
}

CompiledRule compile_rule(const Rule &r, uint16_t index, RuleState *state) {
    CompiledRule c;
    c.name = r.name;
    c.index = index;
    c.state = state;
    c.key_id = state != nullptr ? state->key_id : index;
    c.has_proto = r.match.proto.has_value();
    c.proto = r.match.proto.value_or(0);
    c.dst_ports = r.match.dst_ports;
    c.src_ports = r.match.src_ports;
    c.src_list = !r.match.src.empty();
    c.dst_list = !r.match.dst.empty();
    c.tcp_flags = r.match.tcp_flags;
    if (r.match.payload.compiled) {
        c.payload = r.match.payload.compiled->database();
        c.payload_offset = r.match.payload.offset;
        c.payload_depth = r.match.payload.depth;
        const std::vector<PayloadPattern> &ps = r.match.payload.patterns;
        if (ps.size() == 1 && ps[0].kind == PayloadPattern::Kind::literal && !ps[0].caseless &&
            ps[0].text.size() >= 2 && ps[0].text.size() <= sizeof c.payload_literal.bytes) {
            std::memcpy(c.payload_literal.bytes, ps[0].text.data(), ps[0].text.size());
            c.payload_literal.len = static_cast<uint8_t>(ps[0].text.size());
        }
        c.payload_min_len = shortest_pattern(ps);
    }
    c.ports_need_l4 = !c.dst_ports.empty() || !c.src_ports.empty() ||
                      (c.tcp_flags.must_set | c.tcp_flags.must_clear) != 0;
    c.key_kind = r.key_kind;
    const bool by_dst = r.key_kind == KeyKind::dst;
    c.key_len[0] = by_dst ? r.dst_key_ipv4_len : r.key_ipv4_len;
    c.key_len[1] = by_dst ? r.dst_key_ipv6_len : r.key_ipv6_len;
    if (r.key_kind == KeyKind::none) c.key_len[0] = c.key_len[1] = 0;
    key_masks(c.key_len[0], &c.key_mask_hi[0], &c.key_mask_lo[0]);
    key_masks(c.key_len[1], &c.key_mask_hi[1], &c.key_mask_lo[1]);
    key_masks(r.dst_key_ipv4_len, &c.dst_mask_hi[0], &c.dst_mask_lo[0]);
    key_masks(r.dst_key_ipv6_len, &c.dst_mask_hi[1], &c.dst_mask_lo[1]);
    switch (r.algorithm) {
        case RuleAlgorithm::fixed_window:
        case RuleAlgorithm::sliding_window:
            c.limit.kind = r.algorithm == RuleAlgorithm::fixed_window ? LimitKind::fixed_window
                                                                      : LimitKind::sliding_window;
            c.limit.window_ns = r.rate_period_ns;
            c.limit.window_pkts = r.rate_count;
            break;
        case RuleAlgorithm::gcra:
        case RuleAlgorithm::token_bucket:  // the same admissions (gcra.h)
            c.limit.gcra = gcra_profile(r.interval_ns(), r.burst_pkts);
            break;
    }
    // Classes: each sees the same state with its own allowance (tau, or a window's N), the
    // whole less the reserve kept for the classes above it (validation leaves every class a
    // packet at least).
    const ClassReserve reserve = is_aggregate(r.key_kind) ? r.reserve : ClassReserve{0, 0, 0};
    const uint64_t whole = c.limit.allowance();
    const unsigned above[kTrustClasses] = {
        0, reserve.established, unsigned{reserve.established} + reserve.verified, reserve.total()};
    for (unsigned k = 0; k < kTrustClasses; ++k) {
        c.class_reserved_pct[k] = above[k];
        c.class_allowance[k] =
            whole - static_cast<uint64_t>(static_cast<unsigned __int128>(whole) * above[k] / 100);
    }
    c.classes = reserve.total() > 0;
    c.adaptive = r.adaptive.enabled;
    if (c.adaptive) {
        c.adaptive_profile = adaptive_profile(r.adaptive);
        c.adaptive_initial_milli = rate_milli(r.rate_count, r.rate_period_ns);
    }
    c.burst_pkts = r.burst_pkts;
    c.action = r.action;
    switch (r.action) {
        case RuleAction::syn_auth:
            c.answer = AnswerKind::syn_cookie;
            break;
        case RuleAction::syn_proxy:
            c.answer = AnswerKind::syn_proxy;
            c.announce = r.announce;
            break;
        case RuleAction::dns_truncate:
            c.answer = AnswerKind::dns_truncated;
            break;
        case RuleAction::tcp_rst:
            c.answer = AnswerKind::tcp_rst;
            break;
        case RuleAction::icmp_unreachable:
            c.answer = AnswerKind::icmp_unreachable;
            break;
        case RuleAction::shape:
            c.shape_lead_ns = r.queue.delay_ns != 0
                                  ? r.queue.delay_ns
                                  : tat_charge(0, r.queue.packets, r.interval_ns());
            break;
        case RuleAction::drop:
            break;
    }
    c.slip = r.action == RuleAction::dns_truncate ? r.slip : 1;
    c.verified_ttl_ns = r.verified_ttl_ns;
    c.shadow = r.mode == RuleMode::shadow;
    c.escalates = r.escalate.enabled() && !c.shadow;
    c.shared = r.shared;
    c.on_table_full = r.on_table_full;
    c.exact_top = r.top_offenders == TopOffenders::exact;
    c.plain = !is_aggregate(c.key_kind) && !verifies_sources(c.action) && !c.shadow && !c.shared;
    return c;
}

}  // namespace floodgate
