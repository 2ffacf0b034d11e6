// syn-proxy's connections segment by segment (dataplane/pipeline/syn_proxy.h), with real frames on
// IPv4 and IPv6: a whole connection (the cookie SYN-ACK, the server's SYN built over the
// client's ACK, a held request, the server's SYN-ACK answered, data both ways translated, SACK,
// windows, FIN both ways), and each way it can fail, with exact counts. The expected numbers are
// worked out here from the handshake's values, not read back from the code under test.
#include <gtest/gtest.h>

#include <vector>

#include "dataplane/answer/proxy_frames.h"
#include "dataplane/pipeline/syn_proxy.h"
#include "tests/answer_frames.h"
#include "tests/proxy_segments.h"

namespace floodgate::answer_test {
namespace {

const HashSeed kProxySeed{{5, 6, 7, 8}};
const CookieKey kProxyKey = proxy_cookie_key(CookieKey{11, 12});

// The client's SYN answered as the pipeline will: its cookie, from the options it offered.
uint32_t cookie_for(const Net &n, const std::vector<uint8_t> &syn_options, uint64_t now_ns) {
    Seg syn = parsed(syn_with_options(n, syn_options, kClientIsn));
    const Answer a = answer(AnswerKind::syn_proxy, syn.frame);
    EXPECT_TRUE(a.plan.ok());
    return proxy_cookie(kProxyKey, syn.info, kClientIsn, a.plan.client, cookie_slot(now_ns));
}

class SynProxyNet : public ::testing::TestWithParam<Net> {
  protected:
    ProxyFlows flows_{64, 3 * kProxySecond, 60 * kProxySecond, kProxySeed, 0};
    SynProxy proxy_{&flows_, kProxyKey};
    ProxyAnnounce announce_{1460, 7, 65535};
    uint16_t window_ = 0;
    uint32_t isn_ = 0;
    ProxyFlow *flow_ = nullptr;

    // Every connection here was answered with the cookie SYN-ACK (the pipeline tells the proxy
    // so: AnsweredFilter), so its ACK is checked.
    ProxyStep client(Seg &s, uint64_t now = kT0) {
        proxy_.answering(s.info, kT0);
        return proxy_.from_client(s.info, s.tcp(), s.tcp_len(), announce_, now, &window_, &flow_);
    }
    ProxyStep server(Seg &s, uint64_t now = kT0) {
        return proxy_.from_server(s.info, s.tcp(), s.tcp_len(), now, &isn_, &window_, &flow_);
    }
    // The handshake up to the open connection: returns the cookie.
    uint32_t open(const Net &n, const std::vector<uint8_t> &syn_options,
                  const std::vector<uint8_t> &server_options) {
        const uint32_t cookie = cookie_for(n, syn_options, kT0);
        Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
        EXPECT_EQ(client(ack), ProxyStep::server_syn);
        Seg synack =
            from_server_seg(n, kSyn | kAck, kServerIsn, kClientIsn + 1, 29200, server_options);
        EXPECT_EQ(server(synack), ProxyStep::server_ack);
        return cookie;
    }
};

TEST_P(SynProxyNet, AWholeConnection) {
    const Net &n = GetParam();
    const uint32_t cookie = cookie_for(n, kLinuxSynOptions, kT0);

    // The client's ACK: the server's SYN is written over it.
    Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    ASSERT_EQ(client(ack), ProxyStep::server_syn);
    EXPECT_EQ(window_, 64256) << "502 << 7: a SYN's window is unscaled";
    Frame buf = ack.frame;
    buf.resize(buf.size() + 64);
    ASSERT_NE(flow_, nullptr);
    EXPECT_EQ(flow_->client, (ProxiedOptions{1460, 7, true})) << "what the cookie carried";
    const uint32_t syn_len =
        build_server_syn(ack.info, buf.data(), static_cast<uint32_t>(ack.frame.size()),
                         static_cast<uint32_t>(buf.size()), flow_->client, window_);
    ASSERT_GT(syn_len, 0u);
    Seg syn = parsed(Frame(buf.begin(), buf.begin() + syn_len));
    EXPECT_EQ(syn.info.tcp_flags, kSyn);
    EXPECT_EQ(syn.info.tcp_seq, kClientIsn);
    EXPECT_EQ(flows_.size(), 1u);

    // The request, sent before the server answered: held.
    Seg request = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 100);
    ASSERT_EQ(client(request), ProxyStep::hold);
    proxy_.hold(flow_, 7);

    // The server's SYN-ACK: answered with the ACK, then the held request goes on.
    Seg synack = from_server_seg(n, kSyn | kAck, kServerIsn, kClientIsn + 1, 29200, kServerOptions);
    ASSERT_EQ(server(synack), ProxyStep::server_ack);
    EXPECT_EQ(isn_, kClientIsn);
    EXPECT_EQ(window_, 502) << "the server scales: the client's field as it is";
    Frame ack_buf = synack.frame;
    const uint32_t ack_len = build_server_ack(synack.info, ack_buf.data(),
                                              static_cast<uint32_t>(ack_buf.size()), isn_, window_);
    Seg server_ack = parsed(Frame(ack_buf.begin(), ack_buf.begin() + ack_len));
    EXPECT_EQ(server_ack.info.tcp_seq, kClientIsn + 1);
    EXPECT_EQ(server_ack.info.tcp_ack, kServerIsn + 1);
    uint64_t held[kHeldPerFlow];
    ASSERT_EQ(proxy_.take_held(flow_, held), 1u);
    EXPECT_EQ(held[0], 7u);
    ASSERT_EQ(client(request), ProxyStep::forward);
    EXPECT_EQ(request.frame.size(), from_client_seg(n, kAck, 0, 0, 0, {}, 100).frame.size());
    Seg r = parsed(request.frame);
    EXPECT_EQ(r.info.tcp_seq, kClientIsn + 1);
    EXPECT_EQ(r.info.tcp_ack, kServerIsn + 1) << "the cookie's space moved onto the server's";
    EXPECT_TRUE(r.checksum_ok());

    // The response: the server's numbers moved onto the cookie's; its window 1000 << 9 read by
    // the client at the announced 7.
    Seg response =
        from_server_seg(n, kAck | kPsh, kServerIsn + 1, kClientIsn + 101, 1000, {}, 1400);
    ASSERT_EQ(server(response), ProxyStep::forward);
    Seg rr = parsed(response.frame);
    EXPECT_EQ(rr.info.tcp_seq, cookie + 1);
    EXPECT_EQ(rr.info.tcp_ack, kClientIsn + 101);
    EXPECT_EQ(be16(rr.frame, rr.info.l4_offset + 14), 4000);
    EXPECT_TRUE(rr.checksum_ok());

    // The client's SACK of the response's second half: its edges move onto the server's space.
    std::vector<uint8_t> sack = {1, 1, 5, 10};
    for (uint32_t e : {cookie + 701, cookie + 1401})
        for (int b = 24; b >= 0; b -= 8) sack.push_back(static_cast<uint8_t>(e >> b));
    Seg sacked = from_client_seg(n, kAck, kClientIsn + 101, cookie + 1, 502, sack);
    ASSERT_EQ(client(sacked), ProxyStep::forward);
    Seg sr = parsed(sacked.frame);
    EXPECT_EQ(sr.info.tcp_ack, kServerIsn + 1);
    EXPECT_EQ(be32(sr.frame, sr.info.l4_offset + 24), kServerIsn + 701);
    EXPECT_EQ(be32(sr.frame, sr.info.l4_offset + 28), kServerIsn + 1401);
    EXPECT_TRUE(sr.checksum_ok());

    // FIN both ways: closing, still translated, then ended by the sweep.
    Seg fin1 = from_client_seg(n, kAck | kFin, kClientIsn + 101, cookie + 1401, 502);
    ASSERT_EQ(client(fin1), ProxyStep::forward);
    Seg fin2 = from_server_seg(n, kAck | kFin, kServerIsn + 1401, kClientIsn + 102, 1000);
    ASSERT_EQ(server(fin2), ProxyStep::forward);
    EXPECT_EQ(flow_->state, FlowState::closing);
    Seg last = from_client_seg(n, kAck, kClientIsn + 102, cookie + 1402, 502);
    ASSERT_EQ(client(last, kT0 + kProxySecond), ProxyStep::forward);
    EXPECT_EQ(parsed(last.frame).info.tcp_ack, kServerIsn + 1402);
    std::vector<uint64_t> released;
    proxy_.sweep(kT0 + 3 * kProxySecond, 1u << 20, [&](uint64_t h) { released.push_back(h); });
    EXPECT_EQ(flows_.size(), 0u);
    EXPECT_TRUE(released.empty());

    const SynProxyStats &st = proxy_.stats();
    EXPECT_EQ(st.proxy_opened, 1u);
    EXPECT_EQ(st.proxy_established, 1u);
    EXPECT_EQ(st.proxy_held, 1u);
    EXPECT_EQ(st.proxy_server_refused + st.proxy_server_timeout + st.proxy_table_full +
                  st.proxy_held_dropped + st.proxy_untranslatable,
              0u);
}

TEST_P(SynProxyNet, WrongCookiesStoreNothing) {
    const Net &n = GetParam();
    const uint32_t cookie = cookie_for(n, kLinuxSynOptions, kT0);
    // Any of the MAC's 24 bits wrong (the low byte carries the options, which only a client
    // that saw the SYN-ACK can change: proxy_cookie.h).
    for (uint32_t wrong : {cookie ^ 0x100, cookie ^ 0x8000'0000, cookie + 0x1000, 0u}) {
        Seg ack = from_client_seg(n, kAck, kClientIsn + 1, wrong + 1, 502);
        EXPECT_EQ(client(ack), ProxyStep::not_proxied);
    }
    Seg other_isn = from_client_seg(n, kAck, kClientIsn + 2, cookie + 1, 502);
    EXPECT_EQ(client(other_isn), ProxyStep::not_proxied);
    Seg late = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    EXPECT_EQ(client(late, kT0 + (uint64_t{2} << kCookieSlotShift)), ProxyStep::not_proxied);
    Seg rst = from_client_seg(n, kRst | kAck, kClientIsn + 1, cookie + 1, 0);
    EXPECT_EQ(client(rst), ProxyStep::not_proxied);
    EXPECT_EQ(flows_.size(), 0u);
    EXPECT_EQ(proxy_.stats().proxy_opened, 0u);
}

TEST_P(SynProxyNet, TheServerRefuses) {
    const Net &n = GetParam();
    const uint32_t cookie = cookie_for(n, kLinuxSynOptions, kT0);
    Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    ASSERT_EQ(client(ack), ProxyStep::server_syn);
    Seg data = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 10);
    ASSERT_EQ(client(data), ProxyStep::hold);
    proxy_.hold(flow_, 42);
    // A closed port: <SEQ=0><ACK=ISN+1><CTL=RST,ACK>, passed to the client as its reset.
    Seg rst = from_server_seg(n, kRst | kAck, 0, kClientIsn + 1, 0);
    ASSERT_EQ(server(rst), ProxyStep::refused);
    uint64_t held[kHeldPerFlow];
    ASSERT_EQ(proxy_.take_held(flow_, held), 1u);
    EXPECT_EQ(held[0], 42u);
    Seg r = parsed(rst.frame);
    EXPECT_EQ(r.info.tcp_seq, cookie + 1) << "the client's RCV.NXT";
    EXPECT_TRUE(r.checksum_ok());
    EXPECT_EQ(proxy_.stats().proxy_server_refused, 1u);
    // The held segment is freed by the sweep; the client's next segment is reset.
    std::vector<uint64_t> released;
    proxy_.sweep(kT0, 1u << 20, [&](uint64_t h) { released.push_back(h); });
    EXPECT_TRUE(released.empty()) << "not before the server timeout";
    Seg again = from_client_seg(n, kAck | kPsh, kClientIsn + 11, cookie + 1, 502, {}, 10);
    ASSERT_EQ(client(again), ProxyStep::reset_client);
    EXPECT_EQ(flows_.size(), 0u);
    EXPECT_EQ(proxy_.stats().proxy_server_timeout, 0u);
}

TEST_P(SynProxyNet, TheServerTimesOut) {
    const Net &n = GetParam();
    const uint32_t cookie = cookie_for(n, kLinuxSynOptions, kT0);
    Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    ASSERT_EQ(client(ack), ProxyStep::server_syn);
    for (uint64_t h = 1; h <= kHeldPerFlow + 1; ++h) {
        Seg data = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 10);
        const ProxyStep step = client(data);
        if (h <= kHeldPerFlow) {
            ASSERT_EQ(step, ProxyStep::hold);
            proxy_.hold(flow_, h);
        } else {
            EXPECT_EQ(step, ProxyStep::drop);
        }
    }
    EXPECT_EQ(proxy_.stats().proxy_held, kHeldPerFlow);
    EXPECT_EQ(proxy_.stats().proxy_held_dropped, 1u);
    std::vector<uint64_t> released;
    auto release = [&](uint64_t h) { released.push_back(h); };
    proxy_.sweep(kT0 + 3 * kProxySecond - 1, 1u << 20, release);
    EXPECT_TRUE(released.empty());
    proxy_.sweep(kT0 + 3 * kProxySecond, 1u << 20, release);
    EXPECT_EQ(released, (std::vector<uint64_t>{1, 2, 3, 4}));
    EXPECT_EQ(proxy_.stats().proxy_server_timeout, 1u);
    EXPECT_EQ(flows_.size(), 1u) << "failed, kept for the client's next segment";
    // A SYN-ACK that comes after all is dropped; the client's next segment is reset.
    Seg synack = from_server_seg(n, kSyn | kAck, kServerIsn, kClientIsn + 1, 29200, kServerOptions);
    EXPECT_EQ(server(synack, kT0 + 4 * kProxySecond), ProxyStep::drop);
    Seg data = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 10);
    EXPECT_EQ(client(data, kT0 + 4 * kProxySecond), ProxyStep::reset_client);
    EXPECT_EQ(flows_.size(), 0u);
    // A client that never comes back: the failed connection ends one server timeout later.
    const uint32_t cookie2 = cookie_for(n, kLinuxSynOptions, kT0);
    Seg ack2 = from_client_seg(n, kAck, kClientIsn + 1, cookie2 + 1, 502);
    ASSERT_EQ(client(ack2), ProxyStep::server_syn);
    proxy_.sweep(kT0 + 3 * kProxySecond, 1u << 20, release);
    EXPECT_EQ(flows_.size(), 1u);
    proxy_.sweep(kT0 + 6 * kProxySecond, 1u << 20, release);
    EXPECT_EQ(flows_.size(), 0u);
    EXPECT_EQ(proxy_.stats().proxy_server_timeout, 2u);
}

TEST_P(SynProxyNet, AFullTableRefusesNewConnections) {
    const Net &n = GetParam();
    ProxyFlows one(1, 3 * kProxySecond, 60 * kProxySecond, kProxySeed, 0);
    SynProxy proxy(&one, kProxyKey);
    for (uint16_t port : {40000, 40001}) {
        Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn, port));
        const Answer a = answer(AnswerKind::syn_proxy, syn.frame);
        const uint32_t cookie =
            proxy_cookie(kProxyKey, syn.info, kClientIsn, a.plan.client, cookie_slot(kT0));
        proxy.answering(syn.info, kT0);
        Seg ack = parsed(tcp_frame(n, kAck, kClientIsn + 1, cookie + 1, 0, port));
        const ProxyStep step =
            proxy.from_client(ack.info, ack.tcp(), ack.tcp_len(), announce_, kT0, &window_, &flow_);
        EXPECT_EQ(step, port == 40000 ? ProxyStep::server_syn : ProxyStep::drop);
    }
    EXPECT_EQ(proxy.stats().proxy_table_full, 1u);
    EXPECT_EQ(proxy.stats().proxy_opened, 1u);
    EXPECT_EQ(one.size(), 1u);
}

// Window scaling as RFC 7323 has it, when a side does not offer it.
TEST_P(SynProxyNet, WindowsWhenOneSideDoesNotScale) {
    const Net &n = GetParam();
    // The server offers no window scale: the client's fields (shift 7) go out unscaled, the
    // server's (unscaled) come to the client at the announced 7.
    const std::vector<uint8_t> no_ws = {2, 4, 0x05, 0xb4, 4, 2, 0, 0};
    const uint32_t cookie = open(n, kLinuxSynOptions, no_ws);
    EXPECT_EQ(window_, 64256) << "502 << 7, unscaled for a server that does not scale";
    Seg c = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 100);
    ASSERT_EQ(client(c), ProxyStep::forward);
    EXPECT_EQ(be16(c.frame, c.info.l4_offset + 14), 12800);
    Seg s = from_server_seg(n, kAck, kServerIsn + 1, kClientIsn + 1, 29200);
    ASSERT_EQ(server(s), ProxyStep::forward);
    EXPECT_EQ(be16(s.frame, s.info.l4_offset + 14), 228);
    EXPECT_TRUE(parsed(s.frame).checksum_ok());
}

TEST_P(SynProxyNet, WindowsWhenTheClientDoesNotScale) {
    const Net &n = GetParam();
    // MSS alone: scaling is off both ways, whatever the server offers.
    const uint32_t cookie = open(n, {2, 4, 0x05, 0xb4}, kServerOptions);
    EXPECT_EQ(window_, 502);
    Seg s = from_server_seg(n, kAck, kServerIsn + 1, kClientIsn + 1, 29200);
    ASSERT_EQ(server(s), ProxyStep::forward);
    EXPECT_EQ(be16(s.frame, s.info.l4_offset + 14), 29200);
    Seg c = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 100);
    ASSERT_EQ(client(c), ProxyStep::forward);
    EXPECT_EQ(be16(c.frame, c.info.l4_offset + 14), 100);
}

TEST_P(SynProxyNet, ARetransmittedSynAckIsAnsweredAgain) {
    const Net &n = GetParam();
    open(n, kLinuxSynOptions, kServerOptions);
    Seg again = from_server_seg(n, kSyn | kAck, kServerIsn, kClientIsn + 1, 29200, kServerOptions);
    EXPECT_EQ(server(again), ProxyStep::server_ack);
    EXPECT_EQ(isn_, kClientIsn);
    Seg other =
        from_server_seg(n, kSyn | kAck, kServerIsn + 5, kClientIsn + 1, 29200, kServerOptions);
    EXPECT_EQ(server(other), ProxyStep::drop) << "not this connection's SYN-ACK";
    EXPECT_EQ(proxy_.stats().proxy_established, 1u);
}

INSTANTIATE_TEST_SUITE_P(SynProxyNets, SynProxyNet,
                         ::testing::Values(net4(), net6(), kNets[3], kNets[7]),
                         [](const ::testing::TestParamInfo<Net> &info) {
                             return std::string(info.param.name);
                         });

}  // namespace
}  // namespace floodgate::answer_test
