// syn-proxy in the pipeline: which client segments go to the proxy (stage two gives them the
// verdict proxy), the SYN-ACK's cookie and announcement, and each segment's step in both
// directions with the frame it leaves (SynProxy, syn_proxy.h, does the connection's part).
#include "dataplane/answer/proxy_frames.h"
#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

void Pipeline::enable_syn_proxy(ProxyFlows *flows) {
    proxy_ = std::make_unique<SynProxy>(flows, proxy_key_);
}

// Whether a new connection could be proxied: else (the connection table full, or none) the SYN
// is challenged as syn-auth does, which stores nothing either.
bool Pipeline::proxy_room() const {
    const ProxyFlows *flows = proxy_ ? proxy_->flows() : nullptr;
    return flows != nullptr && flows->size() < flows->capacity();
}

// The SYN-ACK for an unproven source's SYN: its ISN the cookie that carries the SYN's options,
// the rule's announcement.
void Pipeline::plan_proxy_answer(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns,
                                 AnswerPlan *plan) {
    proxy_->answering(info, now_ns);
    plan->cookie = proxy_cookie(proxy_key_, info, info.tcp_seq, plan->client, cookie_slot(now_ns));
    // announce.mss is IPv4's (1460 on Ethernet); an IPv6 header is 20 bytes longer.
    plan->mss = static_cast<uint16_t>(info.family == 6 ? r.announce.mss - 20 : r.announce.mss);
    plan->wscale = r.announce.wscale;
    plan->window = r.announce.window;
}

Pipeline::ProxyOut Pipeline::proxy_client(uint16_t i, uint8_t *frame, uint32_t cap) {
    const Burst &b = bursts_[decided_];
    const ProxyOut out = proxy_segment(b.infos[i], frame, b.lens[i], cap, b.now_ns[i],
                                       &rules_->rules()[b.proxy_rule[i]]);
    // Passed, and not sent on (for now, if held).
    if (out.step == ProxyStep::hold || out.step == ProxyStep::drop ||
        out.step == ProxyStep::reset_client)
        ++proxy_withheld_;
    return out;
}

Pipeline::ProxyOut Pipeline::proxy_held(const ProxyFrame &frame, uint64_t now_ns) {
    PacketInfo info;
    if (parse_packet(frame.bytes, frame.len, &info, frame.captured) != ParseStatus::ip ||
        info.l4_proto != kProtoTcp || !info.has_l4)
        return ProxyOut{ProxyStep::drop};
    const ProxyOut out = proxy_segment(info, frame.bytes, frame.len, frame.cap, now_ns, nullptr);
    if (out.step == ProxyStep::forward) --proxy_withheld_;  // withheld since it was held
    return out;
}

// rule: the syn-proxy rule the segment went toward (null for a held segment, whose connection
// is open by now): its announcement for a new connection, and the source it verifies.
Pipeline::ProxyOut Pipeline::proxy_segment(const PacketInfo &info, uint8_t *frame, uint32_t len,
                                           uint32_t cap, uint64_t now_ns,
                                           const CompiledRule *rule) {
    ProxyOut out;
    uint16_t window = 0;
    out.step = proxy_->from_client(info, frame + info.l4_offset, info.l4_len,
                                   rule != nullptr ? rule->announce : ProxyAnnounce{}, now_ns,
                                   &window, &out.flow);
    switch (out.step) {
        case ProxyStep::server_syn:
            out.len = build_server_syn(info, frame, len, cap, out.flow->client, window);
            if (out.len == 0) {  // no room for the options: never with a real mbuf
                proxy_->abandon(out.flow);
                out = ProxyOut{ProxyStep::drop};
                break;
            }
            // Its ACK proved the source: its next connections go straight to the server.
            if (rule != nullptr && verify(*rule, info, now_ns)) ++mine(*rule).counters.verified;
            break;
        case ProxyStep::reset_client: {
            const AnswerPlan plan = plan_answer(AnswerKind::tcp_rst, frame, len, info);
            out.len = plan.ok() ? build_answer(plan, info, frame, len) : 0;
            if (out.len == 0)
                out.step = ProxyStep::drop;
            else
                ++proxy_resets_;
            break;
        }
        default:
            break;
    }
    return out;
}

// What the proxy writes toward the server (the ACK) is never longer than the SYN-ACK it is
// written over: cap is not needed.
Pipeline::ProxyOut Pipeline::proxy_server(const ProxyFrame &frame, uint64_t now_ns) {
    PacketInfo info;
    if (parse_packet(frame.bytes, frame.len, &info, frame.captured) != ParseStatus::ip ||
        info.l4_proto != kProtoTcp || !info.has_l4)
        return ProxyOut{};
    ProxyOut out;
    uint32_t isn = 0;
    uint16_t window = 0;
    out.step = proxy_->from_server(info, frame.bytes + info.l4_offset, info.l4_len, now_ns, &isn,
                                   &window, &out.flow);
    if (out.step == ProxyStep::server_ack) {
        out.len = build_server_ack(info, frame.bytes, frame.len, isn, window);
        if (out.len == 0) out.step = ProxyStep::drop;
    }
    return out;
}

// The proxy's counters in a reading of this core's.
void Pipeline::fill_proxy_counters(WorkerCounters *out) const {
    out->proxy_withheld = proxy_withheld_;
    out->proxy_client_resets = proxy_resets_;
    if (proxy_) {
        const SynProxyStats &s = proxy_->stats();
#define FG_X(name) out->name = s.name;
        FG_SYN_PROXY_COUNTERS(FG_X)
#undef FG_X
    }
    out->proxy_table_full += proxy_fallbacks_;
    if (!proxy_) return;
    const ProxyFlowsStats &f = proxy_->flows()->stats();
    out->proxy_closed = f.closed;
    out->proxy_expired = f.timed_out;
    out->proxy_connections = proxy_->flows()->size();
}

}  // namespace floodgate
