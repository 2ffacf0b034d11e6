// What the answers scenarios (tests/scenario/test_replayed_answers.cpp,
// test_replayed_syn_auth.cpp) share: a trace written as steps (each frame, what must become of
// it and the answer sent in its place), `floodgate replay --answers` run on it, and the checks
// of its outputs: the PASS, DROP and ANSWERS files frame by frame, every counter of stats.json
// and its invariants (dataplane/api/stats.h). The reference model knows nothing of answers, so
// every test states its expectations itself, worked out by hand from the rule parameters.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/api/protocols.h"
#include "tests/answer_bytes.h"
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {

// The addresses every frame here is sent to (the protected servers), and the Ethernet
// addresses PacketBuilder uses by default (client side first).
inline constexpr const char *kServer4 = "192.0.2.10";
inline constexpr const char *kServer6 = "2001:db8:ffff::10";
inline constexpr Mac kClientMac{0x02, 0, 0, 0, 0, 0x01};
inline constexpr Mac kServerMac{0x02, 0, 0, 0, 0, 0x02};

inline bool is_v6(const std::string &addr) {
    return addr.find(':') != std::string::npos;
}

// A frame from src to dst.
inline PacketBuilder from(const std::string &src, const std::string &dst) {
    PacketBuilder b;
    if (is_v6(src))
        b.ipv6(src, dst);
    else
        b.ipv4(src, dst);
    return b;
}

// What an answer to a frame from client to server looks like: Ethernet addresses swapped,
// addresses swapped, a fresh IP header (TTL / hop limit 64, IPv4 ID 0 and DF).
inline PacketBuilder answer_to(const std::string &client, const std::string &server) {
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
inline Frame padded(Frame f, size_t original_len) {
    const size_t min_len = std::min<size_t>(60, original_len);
    if (f.size() < min_len) f.resize(min_len, 0);
    return f;
}

inline Frame syn(const std::string &src, uint16_t sport, uint32_t seq = 1000,
                 const char *dst = nullptr) {
    const std::string d = dst != nullptr ? dst : (is_v6(src) ? kServer6 : kServer4);
    return from(src, d).tcp(sport, 443, kTcpSyn).tcp_seq(seq).build();
}

// One frame of a trace, what must become of it, and the answer sent in its place, if any.
struct Step {
    uint64_t ts;
    Frame frame;
    bool pass;
    std::optional<Frame> answer;
};

inline Step passes(uint64_t ts, Frame f) {
    return {ts, std::move(f), true, std::nullopt};
}
inline Step dropped(uint64_t ts, Frame f) {
    return {ts, std::move(f), false, std::nullopt};
}
inline Step answered(uint64_t ts, Frame f, Frame answer) {
    return {ts, std::move(f), false, std::move(answer)};
}

inline std::vector<Step> sorted(std::vector<Step> steps) {
    std::stable_sort(steps.begin(), steps.end(),
                     [](const Step &a, const Step &b) { return a.ts < b.ts; });
    return steps;
}

struct Outcome {
    PcapFile pass, drop, answers;
    nlohmann::json stats;
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
    using json = nlohmann::json;

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
                    const size_t tcp = plain_l4_offset(g);
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
            const size_t tcp = plain_l4_offset(a);
            ASSERT_GE(a.size(), tcp + 20);
            EXPECT_EQ(a[tcp + 13], kTcpSyn | kTcpAck);
            const uint32_t seq = be32(a, tcp + 4), ack = be32(a, tcp + 8);
            EXPECT_EQ(seq, ~ack) << "a SYN-ACK's seq is ~cookie";
            cookies->push_back(ack);
        }
    }
};

}  // namespace floodgate::test
