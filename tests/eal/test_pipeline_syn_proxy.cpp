// syn-proxy through the Pipeline (dataplane/pipeline/syn_proxy_path.cpp), end to end over real
// frames on IPv4 and IPv6 as a worker drives it: a rules file's syn-proxy rule, an unverified
// source's SYN answered with the cookie SYN-ACK (built and read back), its ACK given the verdict
// proxy and written into the server's SYN, a request held until the server's SYN-ACK, which is
// answered with the ACK, the held request and the data both ways translated, the source verified;
// a wrong cookie, a full connection table and none at all (syn-auth's challenge instead), a server
// that never answers, a verified source's own connection left alone, and what proxy_table_full
// counts. Expected numbers are worked out here from the handshake's values, and the counters are
// read as the control side reads them (Pipeline::read_stats).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/answer/proxy_cookie.h"
#include "dataplane/answer/syn_cookie.h"
#include "dataplane/core/proxy_flows.h"
#include "dataplane/pipeline/pipeline.h"
#include "rules/load.h"
#include "tests/answer_frames.h"
#include "tests/proxy_segments.h"

namespace floodgate::answer_test {
namespace {

const CookieKey kCookieKey{11, 12};
// A second client, for the full table's fallback (another source key: IPv6 sources are /64s).
constexpr const char *kOtherClient4 = "198.51.100.8";
constexpr const char *kOtherClient6 = "2001:db8:2::8";

// One syn-proxy rule on SYNs to port 443, announcing a server other than the defaults (MSS
// 1400, window scale 8, window 29200).
const std::string kRules = R"(rules:
  - name: web-syn
    match: { proto: tcp, tcp_flags: "syn !ack", dst_port: 443 }
    limit: { rate: 100/s, burst: 10 }
    action: syn-proxy
    announce: { mss: 1400, wscale: 8, window: 29200 }
)";

// What a Linux client's SYN (kLinuxSynOptions) asks for, as the cookie carries it.
constexpr ProxiedOptions kLinuxClient{1460, 7, true};

uint32_t expected_proxy_cookie(const Seg &syn, uint64_t now_ns) {
    return proxy_cookie(proxy_cookie_key(kCookieKey), syn.info, syn.info.tcp_seq, kLinuxClient,
                        cookie_slot(now_ns));
}

class PipelineProxyNet : public ::testing::TestWithParam<Net> {
  protected:
    // A pipeline of kRules (after the given top-level fields) whose syn-proxy has a connection
    // table of capacity connections (0: none, enable_syn_proxy() not called).
    void start(uint32_t capacity, const std::string &before_rules = "") {
        const Config config = parse_config(before_rules + kRules, "rules.yaml");
        std::string error;
        rules_ = RuleSet::build(config, -1, &error);
        ASSERT_NE(rules_, nullptr) << error;
        ASSERT_TRUE(rules_->has_syn_proxy());
        table_ = std::make_unique<LimitTable>(4096, HashSeed{{1, 2, 3, 4}});
        pipeline_ = std::make_unique<Pipeline>(rules_.get(), table_.get());
        pipeline_->set_cookie_key(kCookieKey);
        if (capacity > 0) {
            flows_ = std::make_unique<ProxyFlows>(capacity, 3 * kProxySecond, 60 * kProxySecond,
                                                  HashSeed{{5, 6, 7, 8}}, 0);
            ASSERT_TRUE(flows_->ok());
            pipeline_->enable_syn_proxy(flows_.get());
        }
    }

    // The length and time stay in the fixture: proxy_client() reads the decided burst's
    // through the pointers decide() was given (a worker's burst arrays live on).
    Verdict decide(const Seg &s, uint64_t now_ns = kT0) {
        const uint8_t *frame = s.frame.data();
        len_ = static_cast<uint32_t>(s.frame.size());
        now_ns_ = now_ns;
        Verdict v;
        pipeline_->decide(&frame, &len_, 1, &now_ns_, &v);
        return v;
    }

    // The caller's side of Verdict::proxy for the frame just decided: proxy_client() on a
    // writable copy with 64 bytes of room; *out holds the frame as it leaves (out.len bytes
    // where the step wrote a new frame, else the whole buffer's original length).
    Pipeline::ProxyOut client(const Seg &s, Frame *out) {
        Frame buf = s.frame;
        buf.resize(s.frame.size() + 64);
        const Pipeline::ProxyOut o =
            pipeline_->proxy_client(0, buf.data(), static_cast<uint32_t>(buf.size()));
        buf.resize(o.len != 0 ? o.len : s.frame.size());
        *out = std::move(buf);
        return o;
    }
    // The same for a frame from the inside (proxy_server) or a held one (proxy_held).
    Pipeline::ProxyOut server(const Seg &s, Frame *out, uint64_t now_ns = kT0) {
        Frame buf = s.frame;
        buf.resize(s.frame.size() + 64);
        const auto len = static_cast<uint32_t>(s.frame.size());
        const Pipeline::ProxyOut o = pipeline_->proxy_server(
            {buf.data(), len, len, static_cast<uint32_t>(buf.size())}, now_ns);
        buf.resize(o.len != 0 ? o.len : s.frame.size());
        *out = std::move(buf);
        return o;
    }
    Pipeline::ProxyOut held(const Frame &f, Frame *out, uint64_t now_ns = kT0) {
        Frame buf = f;
        buf.resize(f.size() + 64);
        const auto len = static_cast<uint32_t>(f.size());
        const Pipeline::ProxyOut o = pipeline_->proxy_held(
            {buf.data(), len, len, static_cast<uint32_t>(buf.size())}, now_ns);
        buf.resize(o.len != 0 ? o.len : f.size());
        *out = std::move(buf);
        return o;
    }

    // The handshake up to the server's SYN for the client at n's address, port 40000: its SYN
    // answered, its ACK written into the server's SYN. Returns the cookie.
    uint32_t open_to_server_syn(const Net &n) {
        Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn));
        EXPECT_EQ(decide(syn), Verdict::answer);
        EXPECT_EQ(pipeline_->answer_plan(0).kind, AnswerKind::syn_proxy);
        const uint32_t cookie = expected_proxy_cookie(syn, kT0);
        Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
        EXPECT_EQ(decide(ack), Verdict::proxy);
        Frame out;
        EXPECT_EQ(client(ack, &out).step, ProxyStep::server_syn);
        return cookie;
    }

    Pipeline::Stats stats() {
        Pipeline::Stats s;
        EXPECT_TRUE(pipeline_->read_stats(*rules_, &s));
        EXPECT_EQ(s.rules.size(), 1u);
        if (s.rules.empty()) s.rules.resize(1);
        return s;
    }

    uint32_t len_ = 0;
    uint64_t now_ns_ = 0;
    // Destroyed in reverse: the pipeline before the connection table it points to.
    std::unique_ptr<RuleSet> rules_;
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<ProxyFlows> flows_;
    std::unique_ptr<Pipeline> pipeline_;
};

// Every syn-proxy counter of a reading but the ones named: zero.
void expect_other_proxy_counters_zero(const WorkerCounters &c,
                                      const std::vector<const uint64_t *> &named) {
    const std::pair<const char *, const uint64_t *> all[] = {
        {"proxy_opened", &c.proxy_opened},
        {"proxy_established", &c.proxy_established},
        {"proxy_server_refused", &c.proxy_server_refused},
        {"proxy_server_timeout", &c.proxy_server_timeout},
        {"proxy_table_full", &c.proxy_table_full},
        {"proxy_cookie_failed", &c.proxy_cookie_failed},
        {"proxy_held", &c.proxy_held},
        {"proxy_held_dropped", &c.proxy_held_dropped},
        {"proxy_translated", &c.proxy_translated},
        {"proxy_untranslatable", &c.proxy_untranslatable},
        {"proxy_closed", &c.proxy_closed},
        {"proxy_expired", &c.proxy_expired},
        {"proxy_client_resets", &c.proxy_client_resets},
    };
    for (const auto &[name, p] : all) {
        bool is_named = false;
        for (const uint64_t *q : named) is_named |= p == q;
        if (!is_named) {
            EXPECT_EQ(*p, 0u) << name;
        }
    }
}

// The SYN-ACK of the cookie: what a server announcing the rule's values would send, each
// option the SYN offered answered (MSS, SACK-permitted, window scale; no timestamps).
void expect_proxy_syn_ack(const Frame &f, uint32_t cookie) {
    Seg s = parsed(f);
    EXPECT_TRUE(s.checksum_ok());
    const size_t t = s.info.l4_offset;
    EXPECT_EQ(s.info.src_port, 443);
    EXPECT_EQ(s.info.dst_port, 40000);
    EXPECT_EQ(s.info.tcp_flags, kSyn | kAck);
    EXPECT_EQ(s.info.tcp_seq, cookie) << "seq: the cookie";
    EXPECT_EQ(s.info.tcp_ack, kClientIsn + 1) << "ack: the client's ISN + 1";
    EXPECT_EQ(f.at(t + 12), 8 << 4) << "32 bytes of header";
    EXPECT_EQ(be16(f, t + 14), 29200) << "the announced window";
    // announce.mss is IPv4's: an IPv6 client is told 20 bytes less (1380 = 0x0564).
    const uint8_t mss_low = s.info.family == 6 ? 0x64 : 0x78;
    EXPECT_EQ(slice(f, t + 20, t + 32), (Frame{2, 4, 0x05, mss_low, 1, 1, 4, 2, 1, 3, 3, 8}))
        << "MSS 1400 (IPv6: 1380), SACK-permitted, window scale 8: as announced";
}

TEST_P(PipelineProxyNet, AWholeConnection) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(64));

    // The unverified source's SYN: answered with syn-proxy's SYN-ACK, its ISN the cookie.
    Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn));
    ASSERT_EQ(decide(syn), Verdict::answer);
    const AnswerPlan plan = pipeline_->answer_plan(0);
    ASSERT_EQ(plan.kind, AnswerKind::syn_proxy);
    EXPECT_EQ(plan.client, kLinuxClient);
    const uint32_t cookie = expected_proxy_cookie(syn, kT0);
    EXPECT_EQ(plan.cookie, cookie);
    Frame synack = syn.frame;
    const uint32_t synack_len = build_answer(plan, pipeline_->packet_info(0), synack.data(),
                                             static_cast<uint32_t>(synack.size()));
    ASSERT_EQ(synack_len, plan.answer_len);
    synack.resize(synack_len);
    ASSERT_NO_FATAL_FAILURE(expect_proxy_syn_ack(synack, cookie));
    EXPECT_EQ(slice(synack, 0, 6), slice(syn.frame, 6, 12)) << "back to the client's MAC";

    // The client's ACK: proxied; written into the server's SYN, with the client's ISN and the
    // options its SYN asked for (MSS 1460, SACK-permitted, window scale 7).
    Seg ack = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    ASSERT_EQ(decide(ack), Verdict::proxy);
    Frame out;
    Pipeline::ProxyOut o = client(ack, &out);
    ASSERT_EQ(o.step, ProxyStep::server_syn);
    ASSERT_NE(o.flow, nullptr);
    ProxyFlow *const flow = o.flow;
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(std::memcmp(s.info.src, ack.info.src, 16), 0) << "from the client";
        EXPECT_EQ(std::memcmp(s.info.dst, ack.info.dst, 16), 0) << "to the server";
        EXPECT_EQ(s.info.src_port, 40000);
        EXPECT_EQ(s.info.dst_port, 443);
        EXPECT_EQ(s.info.tcp_flags, kSyn);
        EXPECT_EQ(s.info.tcp_seq, kClientIsn) << "the client's ISN";
        EXPECT_EQ(s.info.tcp_ack, 0u);
        const size_t t = s.info.l4_offset;
        EXPECT_EQ(be16(out, t + 14), 64256) << "502 << 7: a SYN's window is unscaled";
        EXPECT_EQ(out.at(t + 12), 8 << 4);
        EXPECT_EQ(slice(out, t + 20, t + 32), (Frame{2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7}));
    }
    EXPECT_EQ(flows_->size(), 1u);
    EXPECT_EQ(stats().rules[0].verified, 1u) << "the cookie ACK proved the source";

    // The request, sent before the server answered: held (its bytes as they were).
    Seg request = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 100);
    ASSERT_EQ(decide(request), Verdict::proxy);
    o = client(request, &out);
    ASSERT_EQ(o.step, ProxyStep::hold);
    ASSERT_EQ(o.flow, flow);
    EXPECT_EQ(out, request.frame);
    std::vector<Frame> kept = {out};
    pipeline_->proxy_hold(o.flow, 0);

    // The server's SYN-ACK: written into the ACK back to the server (seq ISN + 1, ack the
    // server's ISN + 1, the client's window field as the server reads it).
    Seg server_synack =
        from_server_seg(n, kSyn | kAck, kServerIsn, kClientIsn + 1, 29200, kServerOptions);
    o = server(server_synack, &out);
    ASSERT_EQ(o.step, ProxyStep::server_ack);
    ASSERT_EQ(o.flow, flow);
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(std::memcmp(s.info.src, server_synack.info.dst, 16), 0) << "from the client";
        EXPECT_EQ(std::memcmp(s.info.dst, server_synack.info.src, 16), 0) << "to the server";
        EXPECT_EQ(s.info.src_port, 40000);
        EXPECT_EQ(s.info.dst_port, 443);
        EXPECT_EQ(s.info.tcp_flags, kAck);
        EXPECT_EQ(s.info.tcp_seq, kClientIsn + 1);
        EXPECT_EQ(s.info.tcp_ack, kServerIsn + 1);
        EXPECT_EQ(be16(out, s.info.l4_offset + 14), 502) << "both scale by 7";
    }
    // Then the held request goes on, its acknowledgment moved onto the server's numbers
    // (delta = cookie - server ISN).
    uint64_t handles[kHeldPerFlow];
    ASSERT_EQ(pipeline_->proxy_take_held(o.flow, handles), 1u);
    ASSERT_EQ(handles[0], 0u);
    o = held(kept[handles[0]], &out);
    ASSERT_EQ(o.step, ProxyStep::forward);
    ASSERT_EQ(out.size(), request.frame.size());
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(s.info.tcp_seq, kClientIsn + 1);
        EXPECT_EQ(s.info.tcp_ack, kServerIsn + 1) << "cookie + 1 - (cookie - server ISN)";
        EXPECT_EQ(slice(out, s.info.l4_offset + 20, out.size()),
                  slice(request.frame, request.info.l4_offset + 20, request.frame.size()))
            << "the payload as it was";
    }
    EXPECT_EQ(pipeline_->proxy_take_held(flow, handles), 0u);

    // The response: its sequence number moved onto the cookie's; its window 1000 << 9 read by
    // the client at the announced 8.
    Seg response =
        from_server_seg(n, kAck | kPsh, kServerIsn + 1, kClientIsn + 101, 1000, {}, 1400);
    o = server(response, &out);
    ASSERT_EQ(o.step, ProxyStep::forward);
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(s.info.tcp_seq, cookie + 1) << "server ISN + 1 + delta";
        EXPECT_EQ(s.info.tcp_ack, kClientIsn + 101);
        EXPECT_EQ(be16(out, s.info.l4_offset + 14), 2000);
    }

    // The client's ACK of it, through the pipeline again: translated the other way.
    Seg ack2 = from_client_seg(n, kAck, kClientIsn + 101, cookie + 1401, 502);
    ASSERT_EQ(decide(ack2), Verdict::proxy);
    o = client(ack2, &out);
    ASSERT_EQ(o.step, ProxyStep::forward);
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(s.info.tcp_seq, kClientIsn + 101);
        EXPECT_EQ(s.info.tcp_ack, kServerIsn + 1401);
    }

    // The source is verified: its next connection's SYN goes straight to the server.
    Seg syn2 = parsed(syn_with_options(n, kLinuxSynOptions, 0x12345678, 40001));
    EXPECT_EQ(decide(syn2), Verdict::pass);

    // The client resets the connection: translated, then the connection ends.
    Seg rst = from_client_seg(n, kRst | kAck, kClientIsn + 101, cookie + 1401, 0);
    ASSERT_EQ(decide(rst), Verdict::proxy);
    o = client(rst, &out);
    ASSERT_EQ(o.step, ProxyStep::forward);
    EXPECT_EQ(parsed(out).info.tcp_ack, kServerIsn + 1401);
    EXPECT_EQ(flows_->size(), 0u);

    // Six frames decided: the SYN answered (dropped), the rest passed (proxy counts as
    // passed); four segments translated (the held request, the response, the ACK, the RST).
    const Pipeline::Stats st = stats();
    const WorkerCounters &c = st.counters;
    EXPECT_EQ(c.packets, 6u);
    EXPECT_EQ(c.passed, 5u);
    EXPECT_EQ(c.dropped, 1u);
    EXPECT_EQ(c.rate_limited, 1u);
    EXPECT_EQ(c.answered, 1u);
    EXPECT_EQ(c.answered_bytes, synack_len);
    EXPECT_EQ(c.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_proxy)], 1u);
    EXPECT_EQ(c.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_cookie)], 0u);
    EXPECT_EQ(c.proxy_opened, 1u);
    EXPECT_EQ(c.proxy_established, 1u);
    EXPECT_EQ(c.proxy_held, 1u);
    EXPECT_EQ(c.proxy_translated, 4u);
    EXPECT_EQ(c.proxy_closed, 1u);
    EXPECT_EQ(c.proxy_connections, 0u);
    expect_other_proxy_counters_zero(c, {&c.proxy_opened, &c.proxy_established, &c.proxy_held,
                                         &c.proxy_translated, &c.proxy_closed});
    const RuleCounters &rc = st.rules[0];
    EXPECT_EQ(rc.matched, 2u) << "the two SYNs";
    EXPECT_EQ(rc.refused, 1u);
    EXPECT_EQ(rc.answered, 1u);
    EXPECT_EQ(rc.passed, 1u);
    EXPECT_EQ(rc.verified, 1u);
    EXPECT_EQ(rc.cookie_failed, 0u);
}

// An ACK whose acknowledgment is no cookie: given the verdict proxy (it could belong to a
// connection), then not proxied: it goes on unchanged, nothing is stored, and the source stays
// unverified; the right ACK afterwards still opens the connection.
TEST_P(PipelineProxyNet, AWrongCookieOpensNothing) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(64));
    Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn));
    ASSERT_EQ(decide(syn), Verdict::answer);
    const uint32_t cookie = expected_proxy_cookie(syn, kT0);
    ASSERT_EQ(pipeline_->answer_plan(0).cookie, cookie);

    Seg wrong = from_client_seg(n, kAck, kClientIsn + 1, (cookie ^ 0x100) + 1, 502);
    ASSERT_EQ(decide(wrong), Verdict::proxy);
    Frame out;
    const Pipeline::ProxyOut o = client(wrong, &out);
    EXPECT_EQ(o.step, ProxyStep::not_proxied);
    EXPECT_EQ(o.flow, nullptr);
    EXPECT_EQ(out, wrong.frame) << "passed on as it came";
    EXPECT_EQ(flows_->size(), 0u);
    {
        const Pipeline::Stats st = stats();
        EXPECT_EQ(st.counters.proxy_cookie_failed, 1u);
        EXPECT_EQ(st.counters.proxy_connections, 0u);
        expect_other_proxy_counters_zero(st.counters, {&st.counters.proxy_cookie_failed});
        EXPECT_EQ(st.rules[0].verified, 0u);
    }
    // Still unverified: the next SYN is answered again.
    ASSERT_EQ(decide(syn), Verdict::answer);
    EXPECT_EQ(pipeline_->answer_plan(0).kind, AnswerKind::syn_proxy);

    Seg right = from_client_seg(n, kAck, kClientIsn + 1, cookie + 1, 502);
    ASSERT_EQ(decide(right), Verdict::proxy);
    EXPECT_EQ(client(right, &out).step, ProxyStep::server_syn);
    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.proxy_cookie_failed, 1u);
    EXPECT_EQ(st.counters.proxy_opened, 1u);
    EXPECT_EQ(st.counters.proxy_connections, 1u);
    EXPECT_EQ(st.rules[0].verified, 1u);
    EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_proxy)], 2u);
}

// A connection table of one: the second unverified source's SYN is challenged as syn-auth does
// (the SYN-ACK acknowledging syn-auth's cookie), counted in proxy_table_full; its RST carrying
// that cookie verifies it, and its next SYN passes.
TEST_P(PipelineProxyNet, AFullTableFallsBackToSynAuth) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(1));
    open_to_server_syn(n);
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(flows_->size(), 1u);

    const char *other = n.family == 4 ? kOtherClient4 : kOtherClient6;
    Seg syn_b = from_client_seg(n, kSyn, 0x11223344, 0, 64240, kLinuxSynOptions, 0, 40000, other);
    ASSERT_EQ(decide(syn_b), Verdict::answer);
    const AnswerPlan plan = pipeline_->answer_plan(0);
    ASSERT_EQ(plan.kind, AnswerKind::syn_cookie);
    const uint32_t auth_cookie = syn_cookie(kCookieKey, syn_b.info, cookie_slot(kT0));
    EXPECT_EQ(plan.cookie, auth_cookie);
    Frame synack = syn_b.frame;
    const uint32_t len = build_answer(plan, pipeline_->packet_info(0), synack.data(),
                                      static_cast<uint32_t>(synack.size()));
    ASSERT_EQ(len, plan.answer_len);
    synack.resize(len);
    {
        Seg s = parsed(synack);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(s.info.tcp_flags, kSyn | kAck);
        EXPECT_EQ(s.info.tcp_ack, auth_cookie) << "syn-auth's SYN-ACK: it acknowledges the cookie";
    }
    {
        const Pipeline::Stats st = stats();
        EXPECT_EQ(st.counters.proxy_table_full, 1u);
        EXPECT_EQ(st.counters.proxy_opened, 1u);
        EXPECT_EQ(st.counters.proxy_connections, 1u);
        expect_other_proxy_counters_zero(
            st.counters, {&st.counters.proxy_table_full, &st.counters.proxy_opened});
        EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_proxy)], 1u);
        EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_cookie)], 1u);
    }

    // The client's RST to the unexpected SYN-ACK carries the cookie: verified, the RST dropped.
    Seg rst = from_client_seg(n, kRst, auth_cookie, 0, 0, {}, 0, 40000, other);
    EXPECT_EQ(decide(rst), Verdict::drop);
    Seg syn_b2 = from_client_seg(n, kSyn, 0x11223355, 0, 64240, kLinuxSynOptions, 0, 40001, other);
    EXPECT_EQ(decide(syn_b2), Verdict::pass);
    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.syn_auth_replies, 1u);
    EXPECT_EQ(st.rules[0].verified, 2u) << "the first client by its ACK, the second by its RST";
    EXPECT_EQ(st.counters.proxy_table_full, 1u);
}

// No connection table at all: every unverified SYN is challenged as syn-auth does, and no
// segment is given the verdict proxy.
TEST_P(PipelineProxyNet, NoConnectionTableFallsBackToSynAuth) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(0));
    Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn));
    ASSERT_EQ(decide(syn), Verdict::answer);
    const AnswerPlan plan = pipeline_->answer_plan(0);
    ASSERT_EQ(plan.kind, AnswerKind::syn_cookie);
    EXPECT_EQ(plan.cookie, syn_cookie(kCookieKey, syn.info, cookie_slot(kT0)));
    // An ACK as if the SYN-ACK had been syn-proxy's: an ordinary segment.
    Seg ack = from_client_seg(n, kAck, kClientIsn + 1, expected_proxy_cookie(syn, kT0) + 1, 502);
    EXPECT_EQ(decide(ack), Verdict::pass);
    EXPECT_FALSE(pipeline_->proxying());
    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.proxy_table_full, 1u);
    EXPECT_EQ(st.counters.proxy_connections, 0u);
    expect_other_proxy_counters_zero(st.counters, {&st.counters.proxy_table_full});
    EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_cookie)], 1u);
    EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_proxy)], 0u);
    EXPECT_EQ(st.rules[0].verified, 0u);
}

// A server that never answers: after the server timeout the sweep frees the held request and
// fails the connection; the client's next segment is answered with a RST in the client's
// sequence space (seq = its acknowledgment, RFC 9293 3.10.7.1).
TEST_P(PipelineProxyNet, AServerThatNeverAnswers) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(64));
    const uint32_t cookie = open_to_server_syn(n);
    ASSERT_FALSE(HasFailure());
    Frame out;
    Seg request = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 10);
    ASSERT_EQ(decide(request), Verdict::proxy);
    const Pipeline::ProxyOut o = client(request, &out);
    ASSERT_EQ(o.step, ProxyStep::hold);
    pipeline_->proxy_hold(o.flow, 77);

    std::vector<uint64_t> released;
    auto release = [&](uint64_t h) { released.push_back(h); };
    pipeline_->proxy_sweep(kT0 + 3 * kProxySecond - 1, 1u << 20, release);
    EXPECT_TRUE(released.empty());
    pipeline_->proxy_sweep(kT0 + 3 * kProxySecond, 1u << 20, release);
    EXPECT_EQ(released, std::vector<uint64_t>{77});

    const uint64_t later = kT0 + 4 * kProxySecond;
    Seg again = from_client_seg(n, kAck | kPsh, kClientIsn + 1, cookie + 1, 502, {}, 10);
    ASSERT_EQ(decide(again, later), Verdict::proxy);
    const Pipeline::ProxyOut r = client(again, &out);
    ASSERT_EQ(r.step, ProxyStep::reset_client);
    ASSERT_GT(r.len, 0u);
    {
        Seg s = parsed(out);
        EXPECT_TRUE(s.checksum_ok());
        EXPECT_EQ(std::memcmp(s.info.src, again.info.dst, 16), 0) << "from the server";
        EXPECT_EQ(std::memcmp(s.info.dst, again.info.src, 16), 0) << "to the client";
        EXPECT_EQ(s.info.tcp_flags, kRst);
        EXPECT_EQ(s.info.tcp_seq, cookie + 1);
    }
    EXPECT_EQ(flows_->size(), 0u);
    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.proxy_opened, 1u);
    EXPECT_EQ(st.counters.proxy_held, 1u);
    EXPECT_EQ(st.counters.proxy_server_timeout, 1u);
    EXPECT_EQ(st.counters.proxy_closed, 1u) << "ended by the RST";
    EXPECT_EQ(st.counters.proxy_client_resets, 1u);
    EXPECT_EQ(st.counters.proxy_withheld, 2u) << "the held request (freed) and the reset one";
    EXPECT_EQ(st.counters.proxy_connections, 0u);
    expect_other_proxy_counters_zero(
        st.counters,
        {&st.counters.proxy_opened, &st.counters.proxy_held, &st.counters.proxy_server_timeout,
         &st.counters.proxy_closed, &st.counters.proxy_client_resets});
}

// The verified source's next connection goes to the server directly: none of its segments is
// proxied or rewritten, either way, and the proxied connection beside it is kept.
TEST_P(PipelineProxyNet, AVerifiedSourcesOwnConnectionIsLeftAlone) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(64));
    open_to_server_syn(n);
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(stats().rules[0].verified, 1u);

    Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, 0x01020304, 40001));
    ASSERT_EQ(decide(syn), Verdict::pass);
    Frame out;
    Seg synack =
        from_server_seg(n, kSyn | kAck, 0x0a0b0c0d, 0x01020305, 65160, kServerOptions, 0, 40001);
    EXPECT_EQ(server(synack, &out).step, ProxyStep::not_proxied);
    EXPECT_EQ(out, synack.frame);
    // Toward the rule's servers, but of no connection the proxy holds and answered by no
    // cookie: passed at once, untouched (SynProxy::wants).
    Seg ack = from_client_seg(n, kAck, 0x01020305, 0x0a0b0c0e, 502, {}, 0, 40001);
    ASSERT_EQ(decide(ack), Verdict::pass);
    Seg request = from_client_seg(n, kAck | kPsh, 0x01020305, 0x0a0b0c0e, 502, {}, 100, 40001);
    ASSERT_EQ(decide(request), Verdict::pass);
    Seg response = from_server_seg(n, kAck | kPsh, 0x0a0b0c0e, 0x01020369, 509, {}, 1000, 40001);
    EXPECT_EQ(server(response, &out).step, ProxyStep::not_proxied);
    EXPECT_EQ(out, response.frame);

    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.proxy_opened, 1u);
    EXPECT_EQ(st.counters.proxy_connections, 1u) << "the proxied one, still opening";
    EXPECT_EQ(st.counters.proxy_translated, 0u);
    EXPECT_EQ(st.counters.passed, 4u) << "the first ACK, the SYN, the ACK, the request";
    EXPECT_EQ(st.rules[0].verified, 1u);
}

// proxy_table_full counts "SYNs challenged as syn-auth does" (dataplane/api/stats.h): a SYN that
// meets a full (here: absent) connection table and then the answer cap is not challenged at
// all, and is counted in answer_capped alone. Per core cap 1/s, burst 1: the first source's SYN
// is challenged, the second's capped.
TEST_P(PipelineProxyNet, ACappedSynIsNotCountedAsChallenged) {
    const Net &n = GetParam();
    ASSERT_NO_FATAL_FAILURE(start(0, "answers:\n  per_core: { rate: 1/s, burst: 1 }\n"));
    Seg syn = parsed(syn_with_options(n, kLinuxSynOptions, kClientIsn));
    ASSERT_EQ(decide(syn), Verdict::answer);
    EXPECT_EQ(pipeline_->answer_plan(0).kind, AnswerKind::syn_cookie);
    const char *other = n.family == 4 ? kOtherClient4 : kOtherClient6;
    Seg syn_b = from_client_seg(n, kSyn, 0x11223344, 0, 64240, kLinuxSynOptions, 0, 40000, other);
    ASSERT_EQ(decide(syn_b), Verdict::drop);
    const Pipeline::Stats st = stats();
    EXPECT_EQ(st.counters.answer_capped, 1u);
    EXPECT_EQ(st.counters.answers_by_kind[static_cast<unsigned>(AnswerKind::syn_cookie)], 1u);
    EXPECT_EQ(st.counters.proxy_table_full, 1u)
        << "one SYN was challenged in syn-auth's place; the capped one was not";
}

INSTANTIATE_TEST_SUITE_P(PipelineProxyNets, PipelineProxyNet,
                         ::testing::Values(net4(), net6(), kNets[3], kNets[7]),
                         [](const ::testing::TestParamInfo<Net> &info) {
                             return std::string(info.param.name);
                         });

}  // namespace
}  // namespace floodgate::answer_test
