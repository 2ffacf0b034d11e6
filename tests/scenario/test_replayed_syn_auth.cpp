// syn-auth through `floodgate replay --answers` (tests/scenario/replayed_answers.h): the
// challenge, the RST carrying the cookie, verified SYNs under the limit, failed cookies and
// verification expiry; the cookie's two slots; the answer caps (per destination, per core, and
// which is charged when); and a verification crossing cores at the merge.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/answer_bytes.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/replayed_answers.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

constexpr uint64_t kSlotNs = uint64_t{1} << 36;  // a syn-auth cookie slot
// A packet time on a slot boundary near kStartNs.
constexpr uint64_t kSlotStartNs = ((kStartNs >> 36) + 1) << 36;
static_assert(kSlotStartNs % kSlotNs == 0);

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

}  // namespace
}  // namespace floodgate::test
