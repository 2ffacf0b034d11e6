// Answers through `floodgate replay --answers` (tests/scenario/replayed_answers.h): dns-truncate
// answering every slip-th refusal with TC set, tcp-rst and icmp-unreachable with the packets
// that may never be answered, and tshark's dissectors on a mixed scenario's answers. Each
// answer is built here with tests/pkt_builder and compared byte for byte, with its time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/answer_bytes.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/replayed_answers.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

// DNS: a query for www.example.com A, RD and the AD and CD bits set, with an EDNS OPT record.
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
