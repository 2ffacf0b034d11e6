// TraceRun's syn-proxy steps (dataplane/pipeline/syn_proxy.h): what replay writes for the
// frames the proxy rewrites, holds, answers with a RST or drops, in both directions.
#include "dataplane/replay/trace_run.h"

namespace floodgate {

void TraceRun::proxy_from_client(Pipeline &core, uint16_t i, Slot &s) {
    PcapRecord original = s.rec;  // for --drop, should it be rewritten into a RST
    const uint32_t len = s.rec.captured_len();
    s.rec.data.resize(len + kProxyRoom);
    const Pipeline::ProxyOut out = core.proxy_client(i, s.rec.data.data(), len + kProxyRoom);
    // The SYN may be longer than the ACK it was written over; nothing else is.
    s.rec.data.resize(out.step == ProxyStep::server_syn ? out.len : len);
    s.verdict = Verdict::pass;
    switch (out.step) {
        case ProxyStep::server_syn:
            s.rec.orig_len = out.len;
            break;
        case ProxyStep::hold:
            core.proxy_hold(out.flow, keep(s.rec));
            s.verdict = Verdict::delay;  // written when the server answers
            break;
        case ProxyStep::reset_client:
            s.answer = s.rec;
            set_len(&s.answer, out.len);
            s.answered = out_.answers != nullptr;
            s.rec = std::move(original);
            s.verdict = Verdict::drop;
            break;
        case ProxyStep::drop:
            s.rec = std::move(original);
            s.verdict = Verdict::drop;
            break;
        default:
            break;
    }
}

void TraceRun::proxy_from_server(Pipeline &core, Slot &s) {
    const uint32_t len = s.rec.captured_len();
    s.rec.data.resize(len + kProxyRoom);
    const Pipeline::ProxyOut out =
        core.proxy_server({s.rec.data.data(), s.rec.wire_len(), len, len + kProxyRoom}, s.now_ns);
    s.rec.data.resize(len);
    switch (out.step) {
        case ProxyStep::server_ack:
            set_len(&s.rec, out.len);
            take_held(core, out.flow, true, s);
            break;
        case ProxyStep::refused:
            take_held(core, out.flow, false, s);
            break;
        case ProxyStep::drop:
            s.verdict = Verdict::drop;
            break;
        default:
            break;
    }
}

void TraceRun::take_held(Pipeline &core, ProxyFlow *flow, bool send, Slot &s) {
    uint64_t held[kHeldPerFlow];
    const unsigned n = core.proxy_take_held(flow, held);
    for (unsigned k = 0; k < n; ++k) {
        bool sent = false;
        if (send) {
            PcapRecord &r = held_[held[k]];
            const uint32_t len = r.captured_len();
            r.data.resize(len + kProxyRoom);
            sent = core.proxy_held({r.data.data(), r.wire_len(), len, len + kProxyRoom}, s.now_ns)
                       .step == ProxyStep::forward;
            r.data.resize(len);
        }
        s.then.emplace_back(held[k], sent);
    }
}

void TraceRun::sweep_proxy(Pipeline &core, Slot &s) {
    core.proxy_sweep(s.now_ns, 64, [&](uint64_t h) { s.then.emplace_back(h, false); });
}

}  // namespace floodgate
