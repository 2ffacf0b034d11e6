#include "dataplane/pipeline/syn_proxy_path.h"

#include "dataplane/answer/proxy_frames.h"

namespace floodgate {

void SynProxyPath::enable(ProxyFlows *flows) {
    proxy_ = std::make_unique<SynProxy>(flows, key_);
}

void SynProxyPath::set_key(const CookieKey &syn_auth_key) {
    key_ = proxy_cookie_key(syn_auth_key);
    if (proxy_) proxy_->set_key(key_);
}

bool SynProxyPath::room() const {
    const ProxyFlows *flows = proxy_ ? proxy_->flows() : nullptr;
    return flows != nullptr && flows->size() < flows->capacity();
}

// Its ISN the cookie that carries the SYN's options, the rule's announcement.
void SynProxyPath::plan_syn_ack(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns,
                                AnswerPlan *plan) {
    proxy_->answering(info, now_ns);
    plan->cookie = proxy_cookie(key_, info, info.tcp_seq, plan->client, cookie_slot(now_ns));
    // announce.mss is IPv4's (1460 on Ethernet); an IPv6 header is 20 bytes longer.
    plan->mss = static_cast<uint16_t>(info.family == 6 ? r.announce.mss - 20 : r.announce.mss);
    plan->wscale = r.announce.wscale;
    plan->window = r.announce.window;
}

SynProxyPath::Out SynProxyPath::from_client(const PacketInfo &info, uint8_t *frame, uint32_t len,
                                            uint32_t cap, uint64_t now_ns,
                                            const CompiledRule &rule) {
    const Out out = segment(info, frame, len, cap, now_ns, &rule);
    // Passed, and not sent on (for now, if held).
    if (out.step == ProxyStep::hold || out.step == ProxyStep::drop ||
        out.step == ProxyStep::reset_client)
        ++withheld_;
    return out;
}

SynProxyPath::Out SynProxyPath::from_held(const Frame &frame, uint64_t now_ns) {
    PacketInfo info;
    if (parse_packet(frame.bytes, frame.len, &info, frame.captured) != ParseStatus::ip ||
        info.l4_proto != kProtoTcp || !info.has_l4)
        return Out{ProxyStep::drop};
    const Out out = segment(info, frame.bytes, frame.len, frame.cap, now_ns, nullptr);
    if (out.step == ProxyStep::forward) --withheld_;  // withheld since it was held
    return out;
}

// rule: the syn-proxy rule the segment went toward (null for a held segment, whose connection
// is open by now): its announcement for a new connection.
SynProxyPath::Out SynProxyPath::segment(const PacketInfo &info, uint8_t *frame, uint32_t len,
                                        uint32_t cap, uint64_t now_ns, const CompiledRule *rule) {
    Out out;
    uint16_t window = 0;
    out.step = proxy_->from_client(info, frame + info.l4_offset, info.l4_len,
                                   rule != nullptr ? rule->announce : ProxyAnnounce{}, now_ns,
                                   &window, &out.flow);
    switch (out.step) {
        case ProxyStep::server_syn:
            out.len = build_server_syn(info, frame, len, cap, out.flow->client, window);
            if (out.len == 0) {  // no room for the options: never with a real mbuf
                proxy_->abandon(out.flow);
                out = Out{ProxyStep::drop};
            }
            break;
        case ProxyStep::reset_client: {
            const AnswerPlan plan = plan_answer(AnswerKind::tcp_rst, frame, len, info);
            out.len = plan.ok() ? build_answer(plan, info, frame, len) : 0;
            if (out.len == 0)
                out.step = ProxyStep::drop;
            else
                ++resets_;
            break;
        }
        default:
            break;
    }
    return out;
}

// What the proxy writes toward the server (the ACK) is never longer than the SYN-ACK it is
// written over: cap is not needed.
SynProxyPath::Out SynProxyPath::from_server(const Frame &frame, uint64_t now_ns) {
    PacketInfo info;
    if (parse_packet(frame.bytes, frame.len, &info, frame.captured) != ParseStatus::ip ||
        info.l4_proto != kProtoTcp || !info.has_l4)
        return Out{};
    Out out;
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

void SynProxyPath::fill_counters(WorkerCounters *out) const {
    out->proxy_withheld = withheld_;
    out->proxy_client_resets = resets_;
    if (proxy_) {
        const SynProxyStats &s = proxy_->stats();
#define FG_X(name) out->name = s.name;
        FG_SYN_PROXY_COUNTERS(FG_X)
#undef FG_X
    }
    out->proxy_table_full += fallbacks_;
    if (!proxy_) return;
    const ProxyFlowsStats &f = proxy_->flows()->stats();
    out->proxy_closed = f.closed;
    out->proxy_expired = f.timed_out;
    out->proxy_connections = proxy_->flows()->size();
}

}  // namespace floodgate
