// syn-proxy in the pipeline, a part the pipeline holds (pipeline.h): the connection table's
// proxy (SynProxy, syn_proxy.h) under its cookie key, the SYN-ACK's cookie and announcement,
// which passed segments are the proxy's, each segment's step in both directions with the frame
// it leaves, and the proxy's counters in a reading. What it needs of the pipeline is the
// source's verification once a handshake completes, which the pipeline does itself
// (Pipeline::proxy_client).
#pragma once

#include <cstdint>
#include <memory>

#include "dataplane/answer/answer.h"
#include "dataplane/answer/proxy_cookie.h"
#include "dataplane/api/stats.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/pipeline/syn_proxy.h"

namespace floodgate {

class SynProxyPath {
  public:
    // A step's frame is written in place in a buffer of cap bytes; len is its new length where
    // it changed (server_syn, server_ack, reset_client); flow is the connection to hold() the
    // frame in (hold) or whose held frames go next (server_ack) or are to be freed (refused).
    struct Out {
        ProxyStep step = ProxyStep::not_proxied;
        uint32_t len = 0;
        ProxyFlow *flow = nullptr;
    };
    // A frame to rewrite in place: len bytes on the wire, the first captured of them at bytes
    // (its headers among them), room for cap.
    struct Frame {
        uint8_t *bytes;
        uint32_t len;
        uint32_t captured;
        uint32_t cap;
    };

    // The connection table (this core's, outliving the pipeline); without one a syn-proxy rule
    // challenges as syn-auth does.
    void enable(ProxyFlows *flows);
    // Its cookies are under a key derived from syn-auth's (proxy_cookie.h).
    void set_key(const CookieKey &syn_auth_key);
    bool active() const { return proxy_ != nullptr && proxy_->flows()->size() > 0; }
    // Whether a new connection could be proxied: else (the table full, or none) the SYN is
    // challenged as syn-auth does, which stores nothing either (note_fallback()).
    bool room() const;
    void note_fallback() { ++fallbacks_; }
    // Whether a passed segment toward a syn-proxy rule's servers is the proxy's (a connection
    // it holds, a handshake's ACK).
    bool wants(const PacketInfo &info, uint64_t now_ns) {
        return proxy_ != nullptr && proxy_->wants(info, now_ns);
    }
    // The SYN-ACK for an unproven source's SYN toward rule r's servers.
    void plan_syn_ack(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns,
                      AnswerPlan *plan);

    // A client segment the pipeline gave the verdict proxy (info its parse; rule the syn-proxy
    // rule it went toward, for a new connection's announcement). server_syn: the handshake's
    // ACK proved the source.
    Out from_client(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t cap,
                    uint64_t now_ns, const CompiledRule &rule);
    // A client frame held while its connection opened, once the server answered.
    Out from_held(const Frame &frame, uint64_t now_ns);
    // A frame from the inside (any: not_proxied unless it belongs to a proxied connection).
    Out from_server(const Frame &frame, uint64_t now_ns);

    void hold(ProxyFlow *flow, uint64_t handle) { proxy_->hold(flow, handle); }
    unsigned take_held(ProxyFlow *flow, uint64_t *out) { return proxy_->take_held(flow, out); }
    // Ends timed-out connections among the next n table slots; release(handle) frees each
    // frame they held.
    template <class F>
    void sweep(uint64_t now_ns, uint32_t n, F &&release) {
        if (active()) proxy_->sweep(now_ns, n, release);
    }
    // Frees every frame the connections hold (a stopping core).
    template <class F>
    void drop_held(F &&release) {
        if (proxy_) proxy_->drop_held(release);
    }

    // The proxy's counters, into a reading of this core's.
    void fill_counters(WorkerCounters *out) const;

  private:
    Out segment(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t cap, uint64_t now_ns,
                const CompiledRule *rule);

    CookieKey key_{};
    std::unique_ptr<SynProxy> proxy_;
    uint64_t fallbacks_ = 0;  // syn-proxy SYNs challenged instead: no room for more
    uint64_t withheld_ = 0;   // WorkerCounters::proxy_withheld
    uint64_t resets_ = 0;     // WorkerCounters::proxy_client_resets
};

}  // namespace floodgate
