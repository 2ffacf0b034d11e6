// syn-proxy's connections, segment by segment: what a core does with each segment of a
// connection it proxies, in both directions, once the client's SYN was answered with the
// cookie SYN-ACK (answer_syn_proxy.cpp). Owns no packets: it decides, rewrites headers in
// place (tcp_translate.h), keeps the caller's handles of the client's early segments, and says
// which frame to build (proxy_frames.h) and where to send it.
//
//   client ACK, no connection, valid cookie   -> open it; the ACK becomes the server's SYN
//   client segment, connection opening        -> held (kHeldPerFlow at most, else dropped)
//   server SYN-ACK acknowledging the SYN      -> open: the SYN-ACK becomes the server's ACK,
//                                                then the held segments go on, translated
//   server RST while opening                  -> the client gets it as its connection's RST,
//                                                the held segments are freed
//   no SYN-ACK within server_timeout          -> failed: the client's next segment gets a RST
//   any segment of an open connection         -> translated (sequence space, SACK, windows)
//   FIN both ways                             -> closing: translated one server timeout more
//   a RST either way, once open               -> the connection ends (after that segment)
//
// Window scaling (RFC 7323): the client told floodgate its shift c and was told a (the rule's,
// when c was offered); the server was told c and answered s, or nothing. Each side's window
// fields are read with the shift the sender uses and written with the one the receiver
// applies: client -> server c to (s offered ? c : 0); server -> client (s offered ? s : 0)
// to a. With no shift from the client, scaling is off both ways.
#pragma once

#include <cstdint>

#include "dataplane/answer/proxy_cookie.h"
#include "dataplane/api/rules.h"
#include "dataplane/api/stats.h"
#include "dataplane/core/answered_filter.h"
#include "dataplane/core/proxy_flows.h"
#include "dataplane/core/tcp_translate.h"

namespace floodgate {

// Client segments a core's syn-proxy may hold at once (their mbufs are reserved in the pool):
// 256 connections' worth of kHeldPerFlow, waiting for their servers at the same time.
inline constexpr uint32_t kProxyHeldPerWorker = 1024;

enum class ProxyStep : uint8_t {
    not_proxied,   // no connection and no cookie: the segment is judged as any other
    forward,       // sent on its way (rewritten in place where the connection needs it)
    drop,          // consumed or refused (counted)
    server_syn,    // write build_server_syn over it and send it to the server
    server_ack,    // write build_server_ack over it, send it back to the server, then the held
    hold,          // keep it (hold()) until the server answers
    refused,       // the server's RST, rewritten for the client: send it on, free take_held()
    reset_client,  // answer it with a RST (answer kind tcp_rst): its connection failed
};

struct SynProxyStats {
#define FG_X(name) uint64_t name = 0;
    FG_SYN_PROXY_COUNTERS(FG_X)
#undef FG_X
};

class SynProxy {
  public:
    // held_capacity: client segments this core may hold at once, over all its connections
    // (their mbufs come out of the port's pool, sized for it: kProxyHeldPerWorker).
    SynProxy(ProxyFlows *flows, const CookieKey &proxy_key,
             uint32_t held_capacity = kProxyHeldPerWorker)
        : flows_(flows), key_(proxy_key), held_capacity_(held_capacity) {}

    // Notes that a SYN (info: as the client sent it) is being answered with a cookie, so that
    // its ACK is checked (AnsweredFilter).
    void answering(const PacketInfo &info, uint64_t now_ns) { answered_.add(info, now_ns); }

    // Whether a client's segment toward a proxied destination may be the proxy's: a
    // connection's it holds, or a handshake's ACK. False (counted as from_client would count
    // it: no cookie) and it goes on as it is, without from_client.
    bool wants(const PacketInfo &info, uint64_t now_ns) {
        if ((info.tcp_flags & kTcpSyn) != 0) return false;
        return flows_->may_contain(flow_key(info, true)) || may_open(info, now_ns);
    }

    // A client's segment toward a proxied destination; tcp: its TCP header, tcp_len bytes of
    // header and payload. On server_syn, *window is the SYN's window and *flow the new
    // connection (its client options are the SYN's); on hold, *flow is the connection to
    // hold() it in.
    ProxyStep from_client(const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len,
                          const ProxyAnnounce &announce, uint64_t now_ns, uint16_t *window,
                          ProxyFlow **flow);
    // A segment from the inside. On server_ack, *isn and *window are build_server_ack's and
    // *flow is the connection whose held segments go next (take_held(), then each through
    // from_client again); on refused, *flow's held segments are to be freed.
    ProxyStep from_server(const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len, uint64_t now_ns,
                          uint32_t *isn, uint16_t *window, ProxyFlow **flow);

    // Keeps a client segment from_client said to hold (the handle is the caller's).
    void hold(ProxyFlow *flow, uint64_t handle) {
        flow->held[flow->held_count++] = handle;
        ++held_now_;
        ++stats_.proxy_held;
    }
    uint32_t holding() const { return held_now_; }
    // Ends a connection just opened whose SYN could not be written (its held handles none).
    void abandon(ProxyFlow *flow) { flows_->close(flow); }
    // The connection's held handles, in arrival order; it forgets them.
    unsigned take_held(ProxyFlow *flow, uint64_t *out);

    // Ends timed-out connections among the next n slots; the handles they held are handed to
    // release (to free).
    template <class F>
    void sweep(uint64_t now_ns, uint32_t n, F &&release) {
        flows_->sweep(now_ns, n, [&](ProxyFlow &f) {
            release_held(f, release);
            if (f.state != FlowState::opening) return false;  // idle, closed or failed
            ++stats_.proxy_server_timeout;
            f.state = FlowState::failed;
            f.last_ns = now_ns;
            return true;
        });
    }

    // Hands every held handle to release, keeping the connections as they are.
    template <class F>
    void drop_held(F &&release) {
        flows_->sweep(~uint64_t{0}, flows_->slots(), [&](ProxyFlow &f) {
            release_held(f, release);
            return true;
        });
    }

    const SynProxyStats &stats() const { return stats_; }
    ProxyFlows *flows() const { return flows_; }
    void set_key(const CookieKey &proxy_key) { key_ = proxy_key; }

  private:
    // Whether a segment of no connection may open one: the handshake's ACK, or, if that was
    // lost, the client's first data segment (its sequence number is the client's ISN + 1, which
    // the cookie binds: a later segment of a connection whose entry ended moved on, and fails
    // the check); no RST or FIN; to a connection answered lately (AnsweredFilter). An ACK that
    // is not is counted: no cookie.
    bool may_open(const PacketInfo &info, uint64_t now_ns) {
        if ((info.tcp_flags & (kTcpAck | kTcpRst | kTcpFin)) != kTcpAck) return false;
        if (answered_.may_contain(info, now_ns)) return true;
        ++stats_.proxy_cookie_failed;
        return false;
    }
    // Hands a connection's held handles to release and forgets them.
    template <class F>
    void release_held(ProxyFlow &f, F &release) {
        for (unsigned i = 0; i < f.held_count; ++i) release(f.held[i]);
        held_now_ -= f.held_count;
        f.held_count = 0;
    }
    ProxyStep open_from_ack(const PacketInfo &info, const uint8_t *tcp, const ProxyAnnounce &a,
                            uint64_t now_ns, uint16_t *window, ProxyFlow **flow);
    ProxyStep translate(ProxyFlow &f, const PacketInfo &info, uint8_t *tcp, uint32_t tcp_len,
                        uint64_t now_ns, bool from_client);

    ProxyFlows *flows_;
    CookieKey key_;
    SynProxyStats stats_;
    AnsweredFilter answered_;
    uint32_t held_capacity_;
    uint32_t held_now_ = 0;
};

}  // namespace floodgate
