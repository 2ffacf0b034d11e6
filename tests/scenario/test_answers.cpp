// Scenarios on answers (rule actions syn-auth, dns-truncate, tcp-rst, icmp-unreachable), end to
// end through `floodgate replay --answers`. The reference model knows nothing of answers, so
// every test here states its expectations itself, worked out by hand from the rule parameters:
// which frame passes, which is dropped, which answer goes out (byte for byte, built here with
// tests/pkt_builder, and at which time), and every counter of stats.json, whose invariants
// (dataplane/api/stats.h) are checked after every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "dataplane/api/protocols.h"
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

// The addresses every frame here is sent to (the protected servers), and the Ethernet
// addresses PacketBuilder uses by default (client side first).
const char *const kServer4 = "192.0.2.10";
const char *const kServer6 = "2001:db8:ffff::10";
const Mac kClientMac{0x02, 0, 0, 0, 0, 0x01};
const Mac kServerMac{0x02, 0, 0, 0, 0, 0x02};

constexpr uint64_t kSlotNs = uint64_t{1} << 36;  // a syn-auth cookie slot
// A packet time on a slot boundary near kStartNs.
constexpr uint64_t kSlotStartNs = ((kStartNs >> 36) + 1) << 36;
static_assert(kSlotStartNs % kSlotNs == 0);

bool is_v6(const std::string &addr) {
    return addr.find(':') != std::string::npos;
}

// A frame from src to dst.
PacketBuilder from(const std::string &src, const std::string &dst) {
    PacketBuilder b;
    if (is_v6(src))
        b.ipv6(src, dst);
    else
        b.ipv4(src, dst);
    return b;
}

// What an answer to a frame from client to server looks like: Ethernet addresses swapped,
// addresses swapped, a fresh IP header (TTL / hop limit 64, IPv4 ID 0 and DF).
PacketBuilder answer_to(const std::string &client, const std::string &server) {
    PacketBuilder b;
    b.macs(kServerMac, kClientMac).ttl(64);
    if (is_v6(client)) {
        b.ipv6(server, client);
    } else {
        b.ipv4(server, client).ipv4_dont_fragment();
    }
    return b;
}

// Answers shorter than the Ethernet minimum are padded with zeros to min(60, the original).
Frame padded(Frame f, size_t original_len) {
    const size_t min_len = std::min<size_t>(60, original_len);
    if (f.size() < min_len) f.resize(min_len, 0);
    return f;
}

Frame syn(const std::string &src, uint16_t sport, uint32_t seq = 1000, const char *dst = nullptr) {
    const std::string d = dst != nullptr ? dst : (is_v6(src) ? kServer6 : kServer4);
    return from(src, d).tcp(sport, 443, kTcpSyn).tcp_seq(seq).build();
}

// The bare RST a client's TCP sends for floodgate's SYN-ACK: seq = that SYN-ACK's ack.
Frame bare_rst(const std::string &src, uint16_t sport, uint32_t seq) {
    return from(src, is_v6(src) ? kServer6 : kServer4)
        .tcp(sport, 443, kTcpRst)
        .tcp_seq(seq)
        .build();
}

Frame syn_ack(const std::string &client, uint16_t sport, uint32_t cookie) {
    return answer_to(client, is_v6(client) ? kServer6 : kServer4)
        .tcp(443, sport, kTcpSyn | kTcpAck)
        .tcp_seq(~cookie)
        .tcp_ack(cookie)
        .tcp_window(0)
        .build();
}

size_t l4_offset(const Frame &f) {
    size_t at = 12;
    while (f.size() >= at + 2 && (f[at] == 0x81 || f[at] == 0x88) && f[at + 1] == 0x00) at += 4;
    const bool v6 = f.size() >= at + 2 && f[at] == 0x86 && f[at + 1] == 0xdd;
    return at + 2 + (v6 ? 40 : 20);
}

uint32_t be32(const Frame &f, size_t at) {
    return uint32_t{f[at]} << 24 | uint32_t{f[at + 1]} << 16 | uint32_t{f[at + 2]} << 8 | f[at + 3];
}

// DNS: a query for www.example.com A, RD and the AD and CD bits set, with an EDNS OPT record.
std::vector<uint8_t> dns_question() {
    std::vector<uint8_t> q;
    for (const char *label : {"www", "example", "com"}) {
        q.push_back(static_cast<uint8_t>(std::string(label).size()));
        for (const char *c = label; *c != '\0'; ++c) q.push_back(static_cast<uint8_t>(*c));
    }
    q.push_back(0);
    for (uint8_t b : {0, 1, 0, 1}) q.push_back(b);  // QTYPE A, QCLASS IN
    return q;
}

Frame dns_query(const std::string &src, uint16_t sport, uint16_t id, uint16_t vlan = 0) {
    std::vector<uint8_t> m = {static_cast<uint8_t>(id >> 8),
                              static_cast<uint8_t>(id),
                              0x01,  // RD
                              0x30,  // AD, CD
                              0,
                              1,
                              0,
                              0,
                              0,
                              0,
                              0,
                              1};
    const std::vector<uint8_t> q = dns_question();
    m.insert(m.end(), q.begin(), q.end());
    // OPT: root name, type 41, class 4096 (the UDP size), TTL 0, no RDATA.
    for (uint8_t b : {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0}) m.push_back(b);
    PacketBuilder b;
    if (vlan != 0) b.vlan(vlan);
    if (is_v6(src))
        b.ipv6(src, kServer6);
    else
        b.ipv4(src, kServer4);
    return b.udp(sport, 53).payload(m).build();
}

// RFC 1035 response, as dataplane/answer/answer.h promises it: the ID, QR TC and RD (as asked), CD
// kept (AD cleared), one question, no records (the OPT record is gone).
Frame dns_truncated_answer(const std::string &client, uint16_t sport, uint16_t id,
                           uint16_t vlan = 0) {
    std::vector<uint8_t> m = {static_cast<uint8_t>(id >> 8),
                              static_cast<uint8_t>(id),
                              0x83,
                              0x10,
                              0,
                              1,
                              0,
                              0,
                              0,
                              0,
                              0,
                              0};
    const std::vector<uint8_t> q = dns_question();
    m.insert(m.end(), q.begin(), q.end());
    PacketBuilder b = answer_to(client, is_v6(client) ? kServer6 : kServer4);
    if (vlan != 0) {
        PacketBuilder t;
        t.macs(kServerMac, kClientMac).ttl(64).vlan(vlan);
        if (is_v6(client))
            t.ipv6(kServer6, client);
        else
            t.ipv4(kServer4, client).ipv4_dont_fragment();
        b = t;
    }
    return b.udp(53, sport).payload(m).build();
}

// One frame of a trace, what must become of it, and the answer sent in its place, if any.
struct Step {
    uint64_t ts;
    Frame frame;
    bool pass;
    std::optional<Frame> answer;
};

Step passes(uint64_t ts, Frame f) {
    return {ts, std::move(f), true, std::nullopt};
}
Step dropped(uint64_t ts, Frame f) {
    return {ts, std::move(f), false, std::nullopt};
}
Step answered(uint64_t ts, Frame f, Frame answer) {
    return {ts, std::move(f), false, std::move(answer)};
}

std::vector<Step> sorted(std::vector<Step> steps) {
    std::stable_sort(steps.begin(), steps.end(),
                     [](const Step &a, const Step &b) { return a.ts < b.ts; });
    return steps;
}

struct Outcome {
    PcapFile pass, drop, answers;
    json stats;
};

// The counters a test expects of one rule (stats.json "rules"), every one of them.
struct RuleWant {
    uint64_t matched = 0, passed = 0, refused = 0, overruled = 0, answered = 0, answer_capped = 0,
             answer_skipped = 0, unanswered = 0, verified = 0, cookie_failed = 0;
};

// And of the whole run.
struct TopWant {
    uint64_t packets = 0, passed = 0, dropped = 0, rate_limited = 0, answered = 0,
             answer_capped = 0, syn_auth_replies = 0, cookie_failed = 0;
    std::map<std::string, uint64_t> answers_by_kind;  // the others must be 0
};

class Answers : public Scenario {
  protected:
    // Writes rules<s>.yaml and trace<s>.pcap (nanosecond), replays them with --answers; the
    // outputs are pass<s>.pcap, drop<s>.pcap, answers<s>.pcap and stats<s>.json.
    void replay_answers(const std::string &rules, const std::vector<Step> &steps,
                        const std::string &s, Outcome *out,
                        const std::vector<std::string> &extra = {}) {
        ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        ASSERT_NO_FATAL_FAILURE(write_text("rules" + s + ".yaml", rules));
        {
            PcapWriter w(path("trace" + s + ".pcap"), PcapPrecision::nano);
            uint64_t last = 0;
            for (const Step &st : steps) {
                ASSERT_GE(st.ts, last) << "test bug: steps out of time order";
                last = st.ts;
                w.write(st.ts, st.frame);
            }
            w.close();
        }
        std::vector<std::string> argv = {floodgate_bin(), "replay",
                                         "--config",      path("rules" + s + ".yaml"),
                                         "--in",          path("trace" + s + ".pcap"),
                                         "--pass",        path("pass" + s + ".pcap"),
                                         "--drop",        path("drop" + s + ".pcap"),
                                         "--answers",     path("answers" + s + ".pcap"),
                                         "--stats",       path("stats" + s + ".json"),
                                         "--quiet"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        const ProcessResult r = run_process(argv, dir_);
        ASSERT_EQ(r.exit_code, 0) << "floodgate replay failed; stderr:\n" << r.err;
        out->pass = read_pcap(path("pass" + s + ".pcap"));
        out->drop = read_pcap(path("drop" + s + ".pcap"));
        out->answers = read_pcap(path("answers" + s + ".pcap"));
        out->stats = json::parse(read_file(path("stats" + s + ".json")));
        EXPECT_EQ(out->answers.precision, PcapPrecision::nano);
        check_invariants(*out);
    }

    // Every invariant of dataplane/api/stats.h, and the files agreeing with the counters.
    static void check_invariants(const Outcome &o) {
        SCOPED_TRACE("invariants");
        const json &s = o.stats;
        EXPECT_EQ(u64(s, "packets"), u64(s, "passed") + u64(s, "dropped"));
        EXPECT_EQ(u64(s, "dropped"), u64(s, "malformed") + u64(s, "block_hits") +
                                         u64(s, "rate_limited") + u64(s, "syn_auth_replies"));
        uint64_t malformed = 0;
        for (const auto &[reason, n] : s.at("malformed_reasons").items())
            malformed += n.get<uint64_t>();
        EXPECT_EQ(u64(s, "malformed"), malformed);
        uint64_t by_kind = 0;
        for (const auto &[kind, n] : s.at("answers_by_kind").items()) by_kind += n.get<uint64_t>();
        EXPECT_EQ(u64(s, "answered"), by_kind);
        EXPECT_LE(u64(s, "answered") + u64(s, "answer_capped"), u64(s, "rate_limited"));
        uint64_t answered = 0, capped = 0, bytes = 0, refused = 0;
        for (const json &r : s.at("rules")) {
            SCOPED_TRACE("rule " + r.value("name", ""));
            EXPECT_EQ(u64(r, "matched"),
                      u64(r, "passed") + u64(r, "refused") + u64(r, "overruled"));
            EXPECT_EQ(u64(r, "refused"), u64(r, "answered") + u64(r, "answer_capped") +
                                             u64(r, "answer_skipped") + u64(r, "unanswered"));
            EXPECT_LE(u64(r, "answered_bytes"), u64(r, "answered_for_bytes"));
            answered += u64(r, "answered");
            capped += u64(r, "answer_capped");
            bytes += u64(r, "answered_bytes");
            refused += u64(r, "refused");
        }
        // Each refused packet is blamed on exactly one rule.
        EXPECT_EQ(refused, u64(s, "rate_limited"));
        EXPECT_EQ(answered, u64(s, "answered"));
        EXPECT_EQ(capped, u64(s, "answer_capped"));
        EXPECT_EQ(bytes, u64(s, "answered_bytes"));
        // The files hold what the counters say.
        EXPECT_EQ(o.pass.records.size(), u64(s, "passed"));
        EXPECT_EQ(o.drop.records.size(), u64(s, "dropped"));
        EXPECT_EQ(o.answers.records.size(), u64(s, "answered"));
        uint64_t answer_bytes = 0;
        for (const PcapRecord &r : o.answers.records) answer_bytes += r.bytes.size();
        EXPECT_EQ(answer_bytes, u64(s, "answered_bytes"));
    }

    // PASS, DROP and ANSWERS hold exactly the steps' frames, in order, with their times.
    // mask_cookies: the answers are SYN-ACKs whose cookies the test does not know; they must
    // carry seq = ~ack and be the expected frame in every other byte (seq, ack and the TCP
    // checksum, which covers them, are left out of the comparison).
    static void expect_outputs(const Outcome &o, const std::vector<Step> &steps,
                               bool mask_cookies = false) {
        std::vector<std::pair<uint64_t, const Frame *>> pass, drop, answers;
        for (const Step &s : steps) {
            (s.pass ? pass : drop).push_back({s.ts, &s.frame});
            if (s.answer) answers.push_back({s.ts, &*s.answer});
        }
        const auto same = [](const char *what, const PcapFile &got,
                             const std::vector<std::pair<uint64_t, const Frame *>> &want,
                             bool mask) {
            SCOPED_TRACE(what);
            EXPECT_EQ(got.records.size(), want.size());
            unsigned shown = 0;
            for (size_t i = 0; i < std::min(got.records.size(), want.size()); ++i) {
                const PcapRecord &r = got.records[i];
                Frame g = r.bytes, w = *want[i].second;
                if (mask && g.size() == w.size()) {
                    const size_t tcp = l4_offset(g);
                    if (g.size() >= tcp + 20) {
                        EXPECT_EQ(be32(g, tcp + 4), ~be32(g, tcp + 8)) << "answer " << i;
                        for (size_t at : {4, 5, 6, 7, 8, 9, 10, 11, 16, 17})
                            g[tcp + at] = w[tcp + at] = 0;
                    }
                }
                if (r.ts_ns == want[i].first && g == w) continue;
                if (++shown > 5) continue;
                ADD_FAILURE() << "frame " << i << ": ts " << r.ts_ns << " (want " << want[i].first
                              << "), " << g.size() << " bytes (want " << w.size() << ")"
                              << hex_diff(g, w);
            }
        };
        same("PASS.pcap", o.pass, pass, false);
        same("DROP.pcap", o.drop, drop, false);
        same("ANSWERS.pcap", o.answers, answers, mask_cookies);
    }

    static std::string hex_diff(const Frame &got, const Frame &want) {
        std::ostringstream s;
        for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
            const int g = i < got.size() ? got[i] : -1, w = i < want.size() ? want[i] : -1;
            if (g != w) {
                s << "; first difference at byte " << i << ": " << g << " (want " << w << ")";
                break;
            }
        }
        return s.str();
    }

    static void expect_rule(const Outcome &o, size_t i, const RuleWant &w) {
        ASSERT_LT(i, o.stats.at("rules").size());
        const json &r = o.stats.at("rules")[i];
        SCOPED_TRACE("rule " + r.value("name", ""));
        EXPECT_EQ(u64(r, "matched"), w.matched);
        EXPECT_EQ(u64(r, "passed"), w.passed);
        EXPECT_EQ(u64(r, "refused"), w.refused);
        EXPECT_EQ(u64(r, "overruled"), w.overruled);
        EXPECT_EQ(u64(r, "answered"), w.answered);
        EXPECT_EQ(u64(r, "answer_capped"), w.answer_capped);
        EXPECT_EQ(u64(r, "answer_skipped"), w.answer_skipped);
        EXPECT_EQ(u64(r, "unanswered"), w.unanswered);
        EXPECT_EQ(u64(r, "verified"), w.verified);
        EXPECT_EQ(u64(r, "cookie_failed"), w.cookie_failed);
    }

    static void expect_top(const Outcome &o, const TopWant &w) {
        const json &s = o.stats;
        EXPECT_EQ(u64(s, "packets"), w.packets);
        EXPECT_EQ(u64(s, "passed"), w.passed);
        EXPECT_EQ(u64(s, "dropped"), w.dropped);
        EXPECT_EQ(u64(s, "malformed"), 0u);
        EXPECT_EQ(u64(s, "block_hits"), 0u);
        EXPECT_EQ(u64(s, "rate_limited"), w.rate_limited);
        EXPECT_EQ(u64(s, "answered"), w.answered);
        EXPECT_EQ(u64(s, "answer_capped"), w.answer_capped);
        EXPECT_EQ(u64(s, "syn_auth_replies"), w.syn_auth_replies);
        EXPECT_EQ(u64(s, "cookie_failed"), w.cookie_failed);
        for (const auto &[kind, n] : s.at("answers_by_kind").items()) {
            const auto it = w.answers_by_kind.find(kind);
            EXPECT_EQ(n.get<uint64_t>(), it == w.answers_by_kind.end() ? 0 : it->second) << kind;
        }
        for (const auto &[kind, n] : w.answers_by_kind)
            EXPECT_TRUE(s.at("answers_by_kind").contains(kind)) << kind;
    }

    // Run 1 of a syn-auth scenario: the SYNs alone, every one challenged (nothing verifies
    // anyone), so that answers.pcap holds one SYN-ACK per SYN, in order: the cookie each SYN
    // gets at its time, the same in run 2 (replay's cookie key is fixed).
    void collect_cookies(const std::string &rules, const std::vector<Step> &syns,
                         std::vector<uint32_t> *cookies) {
        Outcome o;
        ASSERT_NO_FATAL_FAILURE(replay_answers(rules, syns, "_cookies", &o));
        ASSERT_EQ(o.answers.records.size(), syns.size()) << "every SYN of run 1 is challenged";
        for (size_t i = 0; i < syns.size(); ++i) {
            const Frame &a = o.answers.records[i].bytes;
            EXPECT_EQ(o.answers.records[i].ts_ns, syns[i].ts);
            const size_t tcp = l4_offset(a);
            ASSERT_GE(a.size(), tcp + 20);
            EXPECT_EQ(a[tcp + 13], kTcpSyn | kTcpAck);
            const uint32_t seq = be32(a, tcp + 4), ack = be32(a, tcp + 8);
            EXPECT_EQ(seq, ~ack) << "a SYN-ACK's seq is ~cookie";
            cookies->push_back(ack);
        }
    }
};

// ---------------------------------------------------------------------------------------------
// 1. dns-truncate: every slip-th refusal answered with TC=1.

std::string dns_rules(unsigned slip) {
    return R"(rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 1/s, burst: 3 }
    action: dns-truncate
    slip: )" +
           std::to_string(slip) + "\n";
}

TEST_F(Answers, DnsTruncateAnswersEverySlipthRefusal) {
    // 12 queries from one source, 1 us apart: rate 1/s refills nothing in 11 us, so the burst
    // of 3 passes and the 9 others are refused. Refusal k (1-based) is answered iff slip != 0
    // and k % slip == 0 (the slip counter is the rule's, on its one core).
    constexpr unsigned kQueries = 12, kBurst = 3;
    const std::string src = "198.51.100.53";
    for (unsigned slip : {1u, 2u, 3u, 0u}) {
        SCOPED_TRACE("slip " + std::to_string(slip));
        std::vector<Step> steps;
        uint64_t want_answered = 0, answered_bytes = 0, answered_for = 0;
        for (unsigned i = 0; i < kQueries; ++i) {
            const uint64_t ts = kStartNs + i * kNsPerUs;
            const auto sport = static_cast<uint16_t>(5000 + i);
            const auto id = static_cast<uint16_t>(0xa000 + i);
            Frame q = dns_query(src, sport, id);
            const unsigned refusal = i + 1 > kBurst ? i + 1 - kBurst : 0;
            if (refusal == 0) {
                steps.push_back(passes(ts, std::move(q)));
            } else if (slip != 0 && refusal % slip == 0) {
                Frame a = dns_truncated_answer(src, sport, id);
                ++want_answered;
                answered_bytes += a.size();
                answered_for += q.size();
                steps.push_back(answered(ts, std::move(q), std::move(a)));
            } else {
                steps.push_back(dropped(ts, std::move(q)));
            }
        }
        const uint64_t refused = kQueries - kBurst;
        EXPECT_EQ(want_answered, slip == 0 ? 0 : refused / slip);  // 9, 4, 3, 0
        Outcome o;
        ASSERT_NO_FATAL_FAILURE(replay_answers(dns_rules(slip), steps, std::to_string(slip), &o));
        expect_outputs(o, steps);
        expect_top(o, {.packets = kQueries,
                       .passed = kBurst,
                       .dropped = refused,
                       .rate_limited = refused,
                       .answered = want_answered,
                       .answers_by_kind = {{"dns_truncated", want_answered}}});
        expect_rule(o, 0,
                    {.matched = kQueries,
                     .passed = kBurst,
                     .refused = refused,
                     .answered = want_answered,
                     .unanswered = refused - want_answered});
        const json &r = o.stats.at("rules")[0];
        EXPECT_EQ(u64(r, "answered_bytes"), answered_bytes);
        EXPECT_EQ(u64(r, "answered_for_bytes"), answered_for);
        EXPECT_EQ(r.value("action", ""), "dns-truncate");
    }
}

// ---------------------------------------------------------------------------------------------
// 2. syn-auth end to end: challenge, RST with the cookie, verified SYNs under the limit,
// failed cookies, verification expiry.

constexpr const char *kSynAuthRules = R"(rules:
  - name: syn_guard
    match: { proto: tcp, dst_port: 443, tcp_flags: "syn !ack" }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 3 }
    action: syn-auth
    verified_ttl: 60s
  # Bare RSTs that carry no cookie are ordinary packets: this rule sees them.
  - name: rst_limit
    match: { proto: tcp, tcp_flags: rst }
    limit: { rate: 1/s, burst: 1 }
)";

TEST_F(Answers, SynAuthChallengeVerifyLimitAndExpiry) {
    const std::string a = "198.51.100.7";
    const uint16_t port = 40001;
    const uint64_t t0 = kStartNs;
    const uint64_t t_rst = t0 + ms(1);
    const uint64_t ttl = sec(60);
    // The SYNs challenged in run 2: at t0, and at t_rst + ttl when the verification expired.
    const std::vector<uint64_t> challenged = {t0, t_rst + ttl};
    std::vector<Step> syns;
    for (uint64_t ts : challenged) syns.push_back(dropped(ts, syn(a, port)));
    std::vector<uint32_t> cookie;
    ASSERT_NO_FATAL_FAILURE(collect_cookies(kSynAuthRules, syns, &cookie));

    std::vector<Step> steps;
    // Unverified: challenged; the limit is not charged.
    steps.push_back(answered(t0, syn(a, port), syn_ack(a, port, cookie[0])));
    // The RST carrying the cookie: verified, dropped; rst_limit never sees it.
    steps.push_back(dropped(t_rst, bare_rst(a, port, cookie[0])));
    // Verified: the limit's burst of 3 passes, the 4th is refused, unanswered.
    for (uint16_t i = 0; i < 4; ++i) {
        Frame f = syn(a, static_cast<uint16_t>(port + 1 + i));
        steps.push_back(i < 3 ? passes(t0 + ms(2), std::move(f))
                              : dropped(t0 + ms(2), std::move(f)));
    }
    // Wrong cookies: cookie_failed, then ordinary packets of rst_limit (burst 1: pass, drop).
    steps.push_back(passes(t0 + ms(3), bare_rst(a, port, cookie[0] + 1)));
    steps.push_back(dropped(t0 + ms(3), bare_rst(a, port, cookie[0] ^ 0x80000000u)));
    // Verified until t_rst + ttl exclusive (the limit has long refilled by then).
    steps.push_back(passes(t_rst + ttl - 1, syn(a, port)));
    steps.push_back(answered(t_rst + ttl, syn(a, port), syn_ack(a, port, cookie[1])));

    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(kSynAuthRules, steps, "", &o));
    expect_outputs(o, steps);
    expect_top(o, {.packets = 10,
                   .passed = 5,
                   .dropped = 5,
                   .rate_limited = 4,
                   .answered = 2,
                   .syn_auth_replies = 1,
                   .cookie_failed = 2,
                   .answers_by_kind = {{"syn_cookie", 2}}});
    expect_rule(o, 0,
                {.matched = 7,
                 .passed = 4,
                 .refused = 3,
                 .answered = 2,
                 .unanswered = 1,
                 .verified = 1,
                 .cookie_failed = 2});
    expect_rule(o, 1, {.matched = 2, .passed = 1, .refused = 1, .unanswered = 1});
    EXPECT_EQ(o.stats.at("rules")[0].value("action", ""), "syn-auth");
}

constexpr const char *kSynAuthOnly = R"(rules:
  - name: syn_guard
    match: { proto: tcp, dst_port: 443, tcp_flags: "syn !ack" }
    limit: { rate: 10/s, burst: 3 }
    action: syn-auth
)";

TEST_F(Answers, SynAuthCookieLivesForTheCurrentAndThePreviousSlot) {
    // S is a slot boundary (slot k starts there). A cookie made in slot j is accepted in slots
    // j and j + 1. Each source answers its SYN at the time shown; its next SYN, 1 ms after the
    // RST, passes if the RST verified it and is challenged again otherwise.
    const uint64_t S = kSlotStartNs;
    const uint64_t half = kSlotNs / 2;
    struct Case {
        const char *src;
        uint64_t syn_ts, rst_ts;
        bool valid;
    };
    const std::vector<Case> cases = {
        {"198.51.100.11", S, S + 3 * half, true},                // slot k -> k+1 (1.5 slots later)
        {"198.51.101.12", S + half, S + 2 * kSlotNs - 1, true},  // k -> last ns of k+1
        {"198.51.102.13", S + half, S + 2 * kSlotNs, false},     // k -> first ns of k+2 (1.5 later)
        {"198.51.103.14", S - 1, S, true},                       // last ns of k-1 -> first of k
        {"2001:db8:14::15", S + half, S + 3 * half, true},       // IPv6, k -> k+1
        {"2001:db8:15::16", S + half, S + 2 * kSlotNs + 1, false},
    };
    std::vector<Step> syns;
    for (const Case &c : cases) {
        syns.push_back(dropped(c.syn_ts, syn(c.src, 40000)));
        syns.push_back(dropped(c.rst_ts + ms(1), syn(c.src, 40001)));
    }
    syns = sorted(std::move(syns));
    std::vector<uint32_t> cookies;
    ASSERT_NO_FATAL_FAILURE(collect_cookies(kSynAuthOnly, syns, &cookies));
    // The cookie of each (source, port, time), from run 1.
    std::map<std::pair<uint64_t, Frame>, uint32_t> cookie_of;
    for (size_t i = 0; i < syns.size(); ++i) cookie_of[{syns[i].ts, syns[i].frame}] = cookies[i];

    std::vector<Step> steps;
    uint64_t valid = 0, invalid = 0;
    for (const Case &c : cases) {
        const uint32_t first = cookie_of.at({c.syn_ts, syn(c.src, 40000)});
        steps.push_back(answered(c.syn_ts, syn(c.src, 40000), syn_ack(c.src, 40000, first)));
        // A wrong cookie is an ordinary packet: no rule matches a RST here, so it passes.
        steps.push_back(c.valid ? dropped(c.rst_ts, bare_rst(c.src, 40000, first))
                                : passes(c.rst_ts, bare_rst(c.src, 40000, first)));
        const uint64_t next = c.rst_ts + ms(1);
        if (c.valid) {
            steps.push_back(passes(next, syn(c.src, 40001)));
        } else {
            const uint32_t again = cookie_of.at({next, syn(c.src, 40001)});
            steps.push_back(answered(next, syn(c.src, 40001), syn_ack(c.src, 40001, again)));
        }
        ++(c.valid ? valid : invalid);
    }
    steps = sorted(std::move(steps));
    const uint64_t n = cases.size();
    ASSERT_EQ(valid, 4u);
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(kSynAuthOnly, steps, "", &o));
    expect_outputs(o, steps);
    expect_top(o, {.packets = 3 * n,
                   .passed = valid + invalid,       // the verified SYNs, the failed RSTs
                   .dropped = n + valid + invalid,  // first SYNs, good RSTs, re-challenged SYNs
                   .rate_limited = n + invalid,
                   .answered = n + invalid,
                   .syn_auth_replies = valid,
                   .cookie_failed = invalid,
                   .answers_by_kind = {{"syn_cookie", n + invalid}}});
    expect_rule(o, 0,
                {.matched = 2 * n,
                 .passed = valid,
                 .refused = n + invalid,
                 .answered = n + invalid,
                 .verified = valid,
                 .cookie_failed = invalid});
}

// ---------------------------------------------------------------------------------------------
// 3. Answer caps.

// A GCRA cap of burst b and interval T, asked at t0, t0 + d, t0 + 2d, ... with d dividing T
// and T >= b d: the first b pass, then one at each t0 + m T. Computed by hand here, not by
// running the GCRA: the admitted indices i (times t0 + i d).
std::vector<uint64_t> cap_admitted(uint64_t n, uint64_t d, uint64_t T, uint64_t b) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < n; ++i)
        if (i < b || (i * d) % T == 0) out.push_back(i);
    return out;
}

std::string caps_rules(const std::string &answers) {
    return "answers:\n" + answers + R"(rules:
  - name: syn_guard
    match: { proto: tcp, dst_port: 443, tcp_flags: "syn !ack" }
    limit: { rate: 10/s, burst: 3 }
    action: syn-auth
)";
}

TEST_F(Answers, PerDestinationCapOnASpoofedSynFlood) {
    // per_destination 100/s (T = 10 ms) burst 5, by the source's /24. 200 SYNs toward victim
    // 203.0.113.0/24, one every 1 ms (elapsed 199 ms): 5 + floor(199 / 10) = 24 answered, at
    // i = 0..4, 10, 20, ..., 190. Meanwhile 10 SYNs from 198.18.7.0/24, 1 ms apart from
    // t0 + 0.5 ms: its own bucket, 5 answered; 9.5 ms < T, so no more. And an IPv6 victim /64,
    // 2001:db8:aa:bb::/64, 200 SYNs from rotating addresses in it: 24 as the IPv4 one, while one
    // SYN from the next /64 at the end is answered. per_core (default 100000/s, burst 1000)
    // never binds: 54 answers in 200 ms.
    const std::string rules = caps_rules(R"(  per_destination: { rate: 100/s, burst: 5 }
)");
    const uint64_t t0 = kStartNs;
    std::vector<Step> steps;
    uint64_t answered_n = 0, capped = 0;
    const std::vector<uint64_t> admitted = cap_admitted(200, ms(1), ms(10), 5);
    ASSERT_EQ(admitted.size(), 24u);
    const auto is_admitted = [&](uint64_t i) {
        return std::find(admitted.begin(), admitted.end(), i) != admitted.end();
    };
    const auto add = [&](uint64_t ts, const std::string &src, uint16_t port, bool answer) {
        Frame f = syn(src, port);
        if (answer) {
            ++answered_n;
            steps.push_back(answered(ts, f, syn_ack(src, port, 0)));
        } else {
            ++capped;
            steps.push_back(dropped(ts, f));
        }
    };
    for (uint64_t i = 0; i < 200; ++i) {
        const std::string src = "203.0.113." + std::to_string(1 + i % 250);
        add(t0 + i * ms(1), src, static_cast<uint16_t>(1024 + i), is_admitted(i));
        std::ostringstream v6;
        v6 << "2001:db8:aa:bb:" << std::hex << (0x1000 + i) << ":" << (i * 7919 % 65536) << "::1";
        add(t0 + i * ms(1) + 100, v6.str(), static_cast<uint16_t>(2048 + i), is_admitted(i));
    }
    for (uint64_t i = 0; i < 10; ++i)
        add(t0 + ms(1) / 2 + i * ms(1), "198.18.7." + std::to_string(10 + i),
            static_cast<uint16_t>(3000 + i), i < 5);
    add(t0 + ms(199) + 200, "2001:db8:aa:bc::1", 4000, true);
    steps = sorted(std::move(steps));
    ASSERT_EQ(answered_n, 24u + 24u + 5u + 1u);
    const uint64_t total = steps.size();

    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(rules, steps, "", &o));
    expect_outputs(o, steps, /*mask_cookies=*/true);
    expect_top(o, {.packets = total,
                   .dropped = total,
                   .rate_limited = total,
                   .answered = answered_n,
                   .answer_capped = capped,
                   .answers_by_kind = {{"syn_cookie", answered_n}}});
    expect_rule(
        o, 0,
        {.matched = total, .refused = total, .answered = answered_n, .answer_capped = capped});
}

TEST_F(Answers, PerCoreCapOnASynFloodFromManyPrefixes) {
    // per_core 1000/s (T = 1 ms) burst 10; 300 SYNs 100 us apart (elapsed 29.9 ms) from
    // sources in 256 /24s (at most 2 SYNs each, so per_destination's default burst of 100 never
    // binds): 10 + floor(29.9) = 39 answered, at i = 0..9 and every 10th after.
    const std::string rules = caps_rules(R"(  per_core: { rate: 1000/s, burst: 10 }
)");
    const uint64_t t0 = kStartNs;
    const std::vector<uint64_t> admitted = cap_admitted(300, 100 * kNsPerUs, ms(1), 10);
    ASSERT_EQ(admitted.size(), 39u);
    std::vector<Step> steps;
    for (uint64_t i = 0; i < 300; ++i) {
        const std::string src =
            "198.18." + std::to_string(i % 256) + "." + std::to_string(1 + i / 256);
        const auto port = static_cast<uint16_t>(1024 + i);
        Frame f = syn(src, port);
        if (std::find(admitted.begin(), admitted.end(), i) != admitted.end())
            steps.push_back(answered(t0 + i * 100 * kNsPerUs, f, syn_ack(src, port, 0)));
        else
            steps.push_back(dropped(t0 + i * 100 * kNsPerUs, f));
    }
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(rules, steps, "", &o));
    expect_outputs(o, steps, /*mask_cookies=*/true);
    expect_top(o, {.packets = 300,
                   .dropped = 300,
                   .rate_limited = 300,
                   .answered = 39,
                   .answer_capped = 261,
                   .answers_by_kind = {{"syn_cookie", 39}}});
    expect_rule(o, 0, {.matched = 300, .refused = 300, .answered = 39, .answer_capped = 261});
}

TEST_F(Answers, PerCoreCapIsCheckedFirstAndNeitherChargesAnAnswerNotSent) {
    // per_core 1/s burst 2, per_destination 1/min burst 1 (so a charged /24 stays spent for
    // the whole test). X, Y, Z, W are four /24s.
    //   t0        X1  core 1st of 2, X fresh           answered
    //   t0+1us    Y1  core 2nd of 2, Y fresh           answered
    //   t0+2us    Z1  core spent                       capped (Z's bucket not touched)
    //   t0+1s     X2  core has 1 again, X spent        capped (the core's token not taken)
    //   t0+1s     Z2  core's token still there, Z fresh answered
    //   t0+1s     W1  core spent                       capped
    // Z2 is answered only if Z1 did not charge Z (per-core first) and X2 did not take the
    // core's token (nothing is charged for an answer not sent).
    const std::string rules = caps_rules(R"(  per_core: { rate: 1/s, burst: 2 }
  per_destination: { rate: 1/min, burst: 1 }
)");
    const uint64_t t0 = kStartNs;
    const auto ans = [](uint64_t ts, const std::string &src) {
        return answered(ts, syn(src, 40000), syn_ack(src, 40000, 0));
    };
    const std::vector<Step> steps = {
        ans(t0, "198.18.1.1"),
        ans(t0 + kNsPerUs, "198.18.2.1"),
        dropped(t0 + 2 * kNsPerUs, syn("198.18.3.1", 40000)),
        dropped(t0 + sec(1), syn("198.18.1.2", 40000)),
        ans(t0 + sec(1), "198.18.3.2"),
        dropped(t0 + sec(1), syn("198.18.4.1", 40000)),
    };
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(rules, steps, "", &o));
    expect_outputs(o, steps, /*mask_cookies=*/true);
    expect_top(o, {.packets = 6,
                   .dropped = 6,
                   .rate_limited = 6,
                   .answered = 3,
                   .answer_capped = 3,
                   .answers_by_kind = {{"syn_cookie", 3}}});
    expect_rule(o, 0, {.matched = 6, .refused = 6, .answered = 3, .answer_capped = 3});
}

// ---------------------------------------------------------------------------------------------
// 4. tcp-rst and icmp-unreachable, with the packets that may never be answered.

constexpr const char *kRstIcmpRules = R"(rules:
  - name: smtp_reset
    match: { proto: tcp, dst_port: 25 }
    limit: { rate: 1/s, burst: 1 }
    action: tcp-rst
  - name: ping_refuse
    match: { proto: icmp }
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
  - name: udp_refuse
    match: { proto: udp, dst_port: 9999 }
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
  - name: ping6_refuse
    match: { proto: icmpv6 }
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
)";

Frame tcp_seg(const std::string &src, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload) {
    return from(src, is_v6(src) ? kServer6 : kServer4)
        .tcp(40000, 25, flags)
        .tcp_seq(seq)
        .tcp_ack(ack)
        .payload(payload)
        .build();
}

Frame rst_answer(const std::string &client, uint8_t flags, uint32_t seq, uint32_t ack,
                 size_t original_len) {
    return padded(answer_to(client, is_v6(client) ? kServer6 : kServer4)
                      .tcp(25, 40000, flags)
                      .tcp_seq(seq)
                      .tcp_ack(ack)
                      .tcp_window(0)
                      .build(),
                  original_len);
}

// ICMP 3/13 or ICMPv6 1/1 quoting the first `quote` bytes of the original IP datagram.
Frame unreachable_answer(const std::string &client, const Frame &original, size_t quote) {
    std::vector<uint8_t> q(original.begin() + 14, original.begin() + 14 + quote);
    PacketBuilder b = answer_to(client, is_v6(client) ? kServer6 : kServer4);
    if (is_v6(client))
        b.icmpv6(1, 1);
    else
        b.icmp(3, 13);
    return padded(b.payload(q).build(), original.size());
}

TEST_F(Answers, TcpRstAndIcmpUnreachableAndTheNeverAnswered) {
    const std::string v4 = "198.51.100.20", v6 = "2001:db8:5::20";
    const uint64_t t0 = kStartNs;
    const auto us = [t0](uint64_t n) { return t0 + n * kNsPerUs; };
    std::vector<Step> steps;
    const auto refuse = [&](uint64_t ts, Frame f, std::optional<Frame> answer) {
        steps.push_back(answer ? answered(ts, std::move(f), std::move(*answer))
                               : dropped(ts, std::move(f)));
    };
    // tcp-rst (RFC 9293 3.10.7.1). Burst 1 per source: the first segment passes.
    steps.push_back(passes(us(0), tcp_seg(v4, kTcpSyn, 1000, 0, 0)));
    Frame f = tcp_seg(v4, kTcpSyn, 0x11223344, 0, 0);  // no ACK: <SEQ=0><ACK=SEQ+LEN><RST,ACK>
    refuse(us(1), f, rst_answer(v4, kTcpRst | kTcpAck, 0, 0x11223345, f.size()));
    f = tcp_seg(v4, kTcpPsh | kTcpAck, 5, 777, 10);  // ACK: <SEQ=SEG.ACK><RST>
    refuse(us(2), f, rst_answer(v4, kTcpRst, 777, 0, f.size()));
    f = tcp_seg(v4, kTcpPsh, 100, 0, 10);  // data without ACK: LEN = 10
    refuse(us(3), f, rst_answer(v4, kTcpRst | kTcpAck, 0, 110, f.size()));
    f = tcp_seg(v4, kTcpFin, 0xffffffffu, 0, 0);  // FIN counts 1: the ack wraps to 0
    refuse(us(4), f, rst_answer(v4, kTcpRst | kTcpAck, 0, 0, f.size()));
    refuse(us(5), tcp_seg(v4, kTcpRst | kTcpAck, 9, 1, 0), std::nullopt);  // never a RST for a RST
    f = tcp_seg(v4, kTcpSyn | kTcpFin, 50, 0, 4);  // SYN and FIN count 1 each: 50 + 4 + 2
    refuse(us(6), f, rst_answer(v4, kTcpRst | kTcpAck, 0, 56, f.size()));
    steps.push_back(passes(us(7), tcp_seg(v6, kTcpSyn, 41, 0, 0)));
    f = tcp_seg(v6, kTcpSyn, 42, 0, 0);
    refuse(us(8), f, rst_answer(v6, kTcpRst | kTcpAck, 0, 43, f.size()));

    // icmp-unreachable on ICMPv4: quotes as much of the datagram as the original frame's
    // length leaves room for (at most 576 bytes of answer IP packet), never an ICMP error.
    const auto icmp4 = [&](uint8_t type, uint8_t code, size_t payload) {
        return from(v4, kServer4).icmp(type, code).payload(payload).build();
    };
    steps.push_back(passes(us(10), icmp4(8, 0, 100)));
    f = icmp4(8, 0, 100);  // 142-byte frame: 128-byte datagram, 100 of it quoted
    refuse(us(11), f, unreachable_answer(v4, f, 100));
    refuse(us(12), icmp4(3, 1, 100), std::nullopt);  // an ICMP error
    refuse(us(13), icmp4(8, 0, 18), std::nullopt);   // 46-byte datagram: no room for 20 + 8
    f = icmp4(8, 0, 600);                            // 576 - 20 - 8 = 548 quoted
    refuse(us(14), f, unreachable_answer(v4, f, 548));

    // icmp-unreachable on UDP, per /128 and per /32.
    const auto udp = [&](const std::string &src) {
        return from(src, is_v6(src) ? kServer6 : kServer4).udp(5353, 9999).payload(100).build();
    };
    steps.push_back(passes(us(20), udp(v6)));
    f = udp(v6);  // 162-byte frame: room for 100 bytes of quote after 40 + 8
    refuse(us(21), f, unreachable_answer(v6, f, 100));
    steps.push_back(passes(us(22), udp(v4)));
    f = udp(v4);
    refuse(us(23), f, unreachable_answer(v4, f, 100));

    // ICMPv6: errors (types below 128) and redirects (137) are never answered.
    const auto icmp6 = [&](uint8_t type, uint8_t code) {
        return from(v6, kServer6).icmpv6(type, code).payload(100).build();
    };
    steps.push_back(passes(us(30), icmp6(128, 0)));
    refuse(us(31), icmp6(1, 4), std::nullopt);
    refuse(us(32), icmp6(2, 0), std::nullopt);
    f = icmp6(128, 0);
    refuse(us(33), f, unreachable_answer(v6, f, 100));
    refuse(us(34), icmp6(137, 0), std::nullopt);

    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(kRstIcmpRules, steps, "", &o));
    expect_outputs(o, steps);
    expect_top(o, {.packets = 23,
                   .passed = 6,
                   .dropped = 17,
                   .rate_limited = 17,
                   .answered = 11,
                   .answers_by_kind = {{"tcp_rst", 6}, {"icmp_unreachable", 5}}});
    expect_rule(o, 0,
                {.matched = 9, .passed = 2, .refused = 7, .answered = 6, .answer_skipped = 1});
    expect_rule(o, 1,
                {.matched = 5, .passed = 1, .refused = 4, .answered = 2, .answer_skipped = 2});
    expect_rule(o, 2, {.matched = 4, .passed = 2, .refused = 2, .answered = 2});
    expect_rule(o, 3,
                {.matched = 5, .passed = 1, .refused = 4, .answered = 1, .answer_skipped = 3});
}

// ---------------------------------------------------------------------------------------------
// 5. Two virtual cores: a verification on one reaches the other at the next merge.

TEST_F(Answers, SynAuthVerificationCrossesCoresAtTheMerge) {
    // --workers 2 --spread rr: frame i goes to core i % 2. The first merge is due at t0 + 1 ms
    // (the first frame's time + the interval) and runs before the first frame at or past it;
    // a verification published there holds on the other core until that merge's time + ttl,
    // while on its own core it holds until the RST's time + ttl.
    const std::string rules = R"(rules:
  - name: syn_guard
    match: { proto: tcp, dst_port: 443, tcp_flags: "syn !ack" }
    limit: { rate: 10/s, burst: 3 }
    action: syn-auth
    verified_ttl: 30s
)";
    const std::string a = "198.51.100.77";
    const uint64_t t0 = kStartNs, t_rst = t0 + 200 * kNsPerUs, t_merge = t0 + ms(1);
    const uint64_t ttl = sec(30);
    struct Plan {
        uint64_t ts;
        char what;  // 'A' challenged, 'P' passes, 'R' the RST with the cookie
    };
    const std::vector<Plan> plan = {
        {t0, 'A'},                   // 0 core 0
        {t0 + 100 * kNsPerUs, 'A'},  // 1 core 1
        {t_rst, 'R'},                // 2 core 0: verified there
        {t_merge - 1, 'A'},          // 3 core 1: not merged yet
        {t_merge, 'P'},              // 4 core 0 (the merge runs first)
        {t_merge, 'P'},              // 5 core 1: merged
        {t_rst + ttl - 1, 'P'},      // 6 core 0
        {t_rst + ttl, 'P'},          // 7 core 1: until t_merge + ttl
        {t_rst + ttl, 'A'},          // 8 core 0: expired
        {t_merge + ttl - 1, 'P'},    // 9 core 1
        {t_merge + ttl, 'A'},        // 10 core 0
        {t_merge + ttl, 'A'},        // 11 core 1: expired
    };
    std::vector<Step> syns;
    for (const Plan &p : plan)
        if (p.what == 'A') syns.push_back(dropped(p.ts, syn(a, 40000)));
    std::vector<uint32_t> cookies;
    ASSERT_NO_FATAL_FAILURE(collect_cookies(rules, syns, &cookies));
    EXPECT_EQ(cookies[0], cookies[1]) << "one tuple, one slot: one cookie";

    std::vector<Step> steps;
    size_t next_cookie = 0;
    for (const Plan &p : plan) {
        if (p.what == 'A') {
            steps.push_back(
                answered(p.ts, syn(a, 40000), syn_ack(a, 40000, cookies[next_cookie++])));
        } else if (p.what == 'P') {
            steps.push_back(passes(p.ts, syn(a, 40000)));
        } else {
            steps.push_back(dropped(p.ts, bare_rst(a, 40000, cookies[0])));
        }
    }
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(
        rules, steps, "", &o, {"--workers", "2", "--spread", "rr", "--merge-interval-us", "1000"}));
    expect_outputs(o, steps);
    expect_top(o, {.packets = 12,
                   .passed = 5,
                   .dropped = 7,
                   .rate_limited = 6,
                   .answered = 6,
                   .syn_auth_replies = 1,
                   .answers_by_kind = {{"syn_cookie", 6}}});
    expect_rule(o, 0, {.matched = 11, .passed = 5, .refused = 6, .answered = 6, .verified = 1});
}

// ---------------------------------------------------------------------------------------------
// 6. tshark's dissectors on a mixed scenario's answers.

std::string find_in_path(const std::string &name) {
    const char *p = std::getenv("PATH");
    std::stringstream dirs(p != nullptr ? p : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
        const std::string full = d + "/" + name;
        if (!d.empty() && access(full.c_str(), X_OK) == 0) return full;
    }
    return "";
}

TEST_F(Answers, MixedAnswersDecodeCleanlyInTshark) {
    const std::string tshark = find_in_path("tshark");
    if (tshark.empty()) GTEST_SKIP() << "tshark is not installed (apt-get install tshark)";
    const std::string rules = R"(rules:
  - name: syn_guard
    match: { proto: tcp, dst_port: 443, tcp_flags: "syn !ack" }
    limit: { rate: 10/s, burst: 3 }
    action: syn-auth
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 1/s, burst: 1 }
    action: dns-truncate
    slip: 1
  - name: smtp_reset
    match: { proto: tcp, dst_port: 25 }
    limit: { rate: 1/s, burst: 1 }
    action: tcp-rst
  - name: ping_refuse
    match: { proto: icmp }
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
  - name: ping6_refuse
    match: { proto: icmpv6 }
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
)";
    const uint64_t t0 = kStartNs;
    uint64_t n = 0;
    const auto ts = [&] { return t0 + (n++) * kNsPerUs; };
    std::vector<Step> steps;
    uint64_t want_syn_ack = 0, want_dns = 0, want_rst = 0, want_icmp = 0;
    for (const std::string src : {"198.51.100.90", "2001:db8:9::90"}) {
        const char *server = is_v6(src) ? kServer6 : kServer4;
        steps.push_back(answered(ts(), syn(src, 40100), Frame{}));
        ++want_syn_ack;
        steps.push_back(passes(ts(), dns_query(src, 5300, 1)));
        steps.push_back(answered(ts(), dns_query(src, 5301, 2), Frame{}));
        steps.push_back(answered(ts(), dns_query(src, 5302, 3, 100), Frame{}));  // 802.1Q
        want_dns += 2;
        steps.push_back(passes(ts(), tcp_seg(src, kTcpSyn, 1, 0, 0)));
        steps.push_back(answered(ts(), tcp_seg(src, kTcpSyn, 7, 0, 0), Frame{}));
        steps.push_back(answered(ts(), tcp_seg(src, kTcpPsh | kTcpAck, 7, 99, 20), Frame{}));
        want_rst += 2;
        PacketBuilder echo = from(src, server);
        if (is_v6(src))
            echo.icmpv6(128);
        else
            echo.icmp(8);
        steps.push_back(passes(ts(), echo.payload(64).build()));
        steps.push_back(answered(ts(), echo.payload(64).build(), Frame{}));
        steps.push_back(answered(ts(), echo.payload(700).build(), Frame{}));
        want_icmp += 2;
    }
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(replay_answers(rules, steps, "", &o));
    const uint64_t want = want_syn_ack + want_dns + want_rst + want_icmp;
    ASSERT_EQ(o.answers.records.size(), want);
    expect_top(o, {.packets = steps.size(),
                   .passed = steps.size() - want,
                   .dropped = want,
                   .rate_limited = want,
                   .answered = want,
                   .answers_by_kind = {{"syn_cookie", want_syn_ack},
                                       {"dns_truncated", want_dns},
                                       {"tcp_rst", want_rst},
                                       {"icmp_unreachable", want_icmp}}});

    const std::vector<std::string> prefs = {"-o", "ip.check_checksum:TRUE",
                                            "-o", "tcp.check_checksum:TRUE",
                                            "-o", "udp.check_checksum:TRUE"};
    const auto run_tshark = [&](std::vector<std::string> args) {
        std::vector<std::string> argv = {tshark, "-r", path("answers.pcap")};
        argv.insert(argv.end(), prefs.begin(), prefs.end());
        argv.insert(argv.end(), args.begin(), args.end());
        const ProcessResult r = run_process(argv, dir_);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return read_file(dir_ / "stdout.txt");
    };
    const std::string verbose = run_tshark({"-V"});
    // As tests/answers_tshark.sh judges it: no malformed packet, no bad checksum, every IPv4
    // header and upper-layer checksum Good, and no Warning or Error expert item but a RST's
    // "Connection reset (RST)" and a SYN-ACK's "ACKed segment that wasn't captured" (the
    // cookie); items inside an ICMP error's quote are the quoted datagram's.
    std::istringstream lines(verbose);
    std::string layer, flags;
    bool quote = false;
    uint64_t frames = 0, v4 = 0, v4_good = 0, l4_good = 0, rst_items = 0, synack_items = 0;
    std::vector<std::string> problems;
    const auto starts = [](const std::string &s, const char *p) { return s.rfind(p, 0) == 0; };
    for (std::string line; std::getline(lines, line);) {
        if (starts(line, "Frame ") && line.find(':') != std::string::npos &&
            std::isdigit(static_cast<unsigned char>(line[6]))) {
            ++frames;
            layer.clear();
            flags.clear();
            quote = false;
            continue;
        }
        if (!line.empty() && line[0] != ' ') {
            layer = line;
            quote = false;
            if (starts(layer, "Internet Protocol Version 4")) ++v4;
        }
        if (starts(layer, "Internet Control Message Protocol") &&
            starts(line, "    Internet Protocol Version"))
            quote = true;
        if (starts(layer, "Transmission Control Protocol") && starts(line, "    Flags: 0x"))
            flags = line;
        const std::string where = "frame " + std::to_string(frames) + ": ";
        if (line.find("Malformed") != std::string::npos) problems.push_back(where + line);
        if (quote) continue;
        if (starts(line, "    [Header checksum status: Good]") &&
            starts(layer, "Internet Protocol Version 4"))
            ++v4_good;
        if (starts(line, "    [Checksum Status: Good]") &&
            (starts(layer, "Transmission Control Protocol") ||
             starts(layer, "User Datagram Protocol") ||
             starts(layer, "Internet Control Message Protocol")))
            ++l4_good;
        if (line.find("Bad checksum") != std::string::npos ||
            line.find("incorrect, should be") != std::string::npos)
            problems.push_back(where + line);
        if (line.find("[Expert Info (Warning/") != std::string::npos ||
            line.find("[Expert Info (Error/") != std::string::npos) {
            if (line.find("Connection reset (RST)") != std::string::npos &&
                flags.find("RST") != std::string::npos) {
                ++rst_items;
            } else if (line.find("ACKed segment that wasn") != std::string::npos &&
                       flags.find("(SYN, ACK)") != std::string::npos) {
                ++synack_items;
            } else {
                problems.push_back(where + line);
            }
        }
    }
    EXPECT_EQ(frames, want);
    EXPECT_EQ(l4_good, want) << "every upper-layer checksum Good";
    EXPECT_EQ(v4_good, v4) << "every IPv4 header checksum Good";
    EXPECT_EQ(v4, want / 2) << "half the answers are IPv4 (the ICMP quotes are not counted)";
    EXPECT_EQ(rst_items, want_rst);
    EXPECT_TRUE(problems.empty()) << [&] {
        std::string all;
        for (const std::string &p : problems) all += p + "\n";
        return all;
    }();

    const auto count = [&](const std::string &filter) {
        const std::string out = run_tshark({"-Y", filter});
        return static_cast<uint64_t>(std::count(out.begin(), out.end(), '\n'));
    };
    EXPECT_EQ(count("tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.window_size_value == 0"),
              want_syn_ack);
    EXPECT_EQ(count("dns.flags.response == 1 && dns.flags.truncated == 1 && "
                    "dns.count.queries == 1 && dns.count.answers == 0 && dns.count.add_rr == 0 && "
                    "dns.qry.name == \"www.example.com\""),
              want_dns);
    EXPECT_EQ(count("tcp.flags.reset == 1"), want_rst);
    EXPECT_EQ(
        count("(icmp.type == 3 && icmp.code == 13) || (icmpv6.type == 1 && icmpv6.code == 1)"),
        want_icmp);
    EXPECT_EQ(count("vlan.id == 100 && dns"), 2u);
}

}  // namespace
}  // namespace floodgate::test
