#include "dataplane/pipeline/syn_proxy.h"

#include "dataplane/answer/proxy_frames.h"
#include "dataplane/api/protocols.h"
#include "dataplane/core/load_be.h"

namespace floodgate {

namespace {
uint8_t shift_of(uint8_t wscale) {
    return wscale == kNoWindowScale ? 0 : wscale;
}
}  // namespace

ProxyStep SynProxy::from_client(const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len,
                                const ProxyAnnounce &announce, uint64_t now_ns, uint16_t *window,
                                ProxyFlow **flow) {
    *flow = nullptr;
    if ((info.tcp_flags & kTcpSyn) != 0) return ProxyStep::not_proxied;
    ProxyFlow *f = flows_->size() > 0 ? flows_->find(flow_key(info, true)) : nullptr;
    if (f == nullptr) {
        if (!may_open(info, now_ns)) return ProxyStep::not_proxied;
        return open_from_ack(info, tcp, announce, now_ns, window, flow);
    }
    *flow = f;
    switch (f->state) {
        case FlowState::opening:
            if ((info.tcp_flags & kTcpRst) != 0) return ProxyStep::drop;  // the sweep ends it
            if (f->held_count >= kHeldPerFlow || held_now_ >= held_capacity_) {
                ++stats_.proxy_held_dropped;
                return ProxyStep::drop;
            }
            return ProxyStep::hold;
        case FlowState::failed:
            if ((info.tcp_flags & kTcpRst) != 0) return ProxyStep::drop;
            flows_->close(f);
            return ProxyStep::reset_client;
        case FlowState::open:
        case FlowState::closing:
            return translate(*f, info, tcp, tcp_len, now_ns, true);
        case FlowState::free:
            break;
    }
    return ProxyStep::not_proxied;
}

ProxyStep SynProxy::open_from_ack(const PacketInfo &info, const uint8_t *tcp,
                                  const ProxyAnnounce &a, uint64_t now_ns, uint16_t *window,
                                  ProxyFlow **flow) {
    ProxiedOptions o;
    if (!proxy_cookie_check(key_, info, now_ns, &o)) {
        ++stats_.proxy_cookie_failed;
        return ProxyStep::not_proxied;
    }
    ProxyFlow *f = flows_->open(flow_key(info, true), now_ns);
    if (f == nullptr) {
        ++stats_.proxy_table_full;
        return ProxyStep::drop;
    }
    f->client = o;
    f->client_isn = info.tcp_seq - 1;
    f->cookie = info.tcp_ack - 1;
    f->announced_wscale = o.wscale == kNoWindowScale ? kNoWindowScale : a.wscale;
    f->client_window = load_be16(tcp + kTcpWindowOffset);
    *window = syn_window(f->client_window, o);
    *flow = f;
    ++stats_.proxy_opened;
    return ProxyStep::server_syn;
}

ProxyStep SynProxy::from_server(const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len,
                                uint64_t now_ns, uint32_t *isn, uint16_t *window,
                                ProxyFlow **flow) {
    ProxyFlow *f = flows_->find(flow_key(info, false));
    *flow = f;
    if (f == nullptr) return ProxyStep::not_proxied;
    const bool syn_ack = (info.tcp_flags & (kTcpSyn | kTcpAck | kTcpRst)) == (kTcpSyn | kTcpAck);
    // A SYN-ACK to another SYN than the proxy's: a new connection with the same addresses and
    // ports (a verified client's, straight to the server), which ends what is left of the old.
    if (syn_ack && info.tcp_ack != f->client_isn + 1 && f->state != FlowState::opening) {
        flows_->close(f);
        *flow = nullptr;
        return ProxyStep::not_proxied;
    }
    const uint8_t c = shift_of(f->client.wscale);
    switch (f->state) {
        case FlowState::opening:
            if ((info.tcp_flags & kTcpRst) != 0) {
                // Refused: the client hears it as its own connection's reset, whose sequence
                // number must be the one it expects next (RFC 5961 3.2): the cookie + 1.
                rewrite_segment(tcp, tcp_len, SegmentRewrite{f->cookie + 1 - info.tcp_seq});
                ++stats_.proxy_server_refused;
                f->state = FlowState::failed;
                f->last_ns = now_ns;
                return ProxyStep::refused;
            }
            if (!syn_ack || info.tcp_ack != f->client_isn + 1) return ProxyStep::drop;
            {
                SynOptions server;
                if (!read_syn_options(tcp, tcp_len, &server)) {
                    ++stats_.proxy_untranslatable;
                    return ProxyStep::drop;
                }
                // Scaling is on only if both SYNs offered it (RFC 7323 2.2).
                f->server_wscale =
                    f->client.wscale == kNoWindowScale ? kNoWindowScale : server.wscale;
            }
            f->delta = f->cookie - info.tcp_seq;
            f->state = FlowState::open;
            f->last_ns = now_ns;
            ++stats_.proxy_established;
            break;
        case FlowState::open:
        case FlowState::closing:
            if (!syn_ack) return translate(*f, info, tcp, tcp_len, now_ns, false);
            if (info.tcp_seq + f->delta != f->cookie) return ProxyStep::drop;
            break;  // our ACK was lost: the server sent its SYN-ACK again
        case FlowState::failed:
        case FlowState::free:
            return ProxyStep::drop;
    }
    *isn = f->client_isn;
    *window = rescale_window(f->client_window, c, f->server_wscale == kNoWindowScale ? 0 : c);
    return ProxyStep::server_ack;
}

unsigned SynProxy::take_held(ProxyFlow *flow, uint64_t *out) {
    const unsigned n = flow->held_count;
    for (unsigned i = 0; i < n; ++i) out[i] = flow->held[i];
    flow->held_count = 0;
    held_now_ -= n;
    return n;
}

ProxyStep SynProxy::translate(ProxyFlow &f, const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len,
                              uint64_t now_ns, bool from_client) {
    const uint8_t c = shift_of(f.client.wscale);
    const bool server_scales = f.server_wscale != kNoWindowScale;
    SegmentRewrite r;
    if (from_client) {
        r.ack_sub = f.delta;
        r.shift_in = c;
        r.shift_out = server_scales ? c : 0;
    } else {
        r.seq_add = f.delta;
        r.shift_in = server_scales ? f.server_wscale : 0;
        r.shift_out = shift_of(f.announced_wscale);
    }
    if (!rewrite_segment(tcp, tcp_len, r)) {
        ++stats_.proxy_untranslatable;
        return ProxyStep::drop;
    }
    ++stats_.proxy_translated;
    if ((info.tcp_flags & kTcpRst) != 0) {
        flows_->close(&f);
        return ProxyStep::forward;
    }
    if ((info.tcp_flags & kTcpFin) != 0) f.fins |= from_client ? kFinFromClient : kFinFromServer;
    if (f.fins == (kFinFromClient | kFinFromServer) && f.state == FlowState::open) {
        f.state = FlowState::closing;  // one more server timeout for the last ACKs
        f.last_ns = now_ns;
    } else if (f.state == FlowState::open) {
        f.last_ns = now_ns;
    }
    return ProxyStep::forward;
}

}  // namespace floodgate
