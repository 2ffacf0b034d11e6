// Valid rules files and what they parse to: every field and its defaults, the forms of rates,
// matches and keys, the algorithms, answers, reserves and escalation. The refused ones are in
// test_config_errors.cpp; hostile, large and real files in test_config_files.cpp.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "rules/load.h"
#include "tests/config_cases.h"

namespace floodgate::config_test {
namespace {

TEST(Config, EmptyDocumentGivesDefaults) {
    for (const char *yaml : {"", "# nothing but a comment\n", "---\n", "~\n", "rules:\n",
                             "allow:\nblock:\nrules: []\n"}) {
        SCOPED_TRACE(yaml);
        const Config cfg = parse_config(yaml, kFile);
        EXPECT_EQ(cfg.path, kFile);
        EXPECT_TRUE(cfg.allow.empty());
        EXPECT_TRUE(cfg.block.empty());
        EXPECT_TRUE(cfg.rules.empty());
        EXPECT_EQ(cfg.table_entries_per_core, 1u << 20);
    }
    EXPECT_EQ(parse_config("").path, "<string>");
}

TEST(Config, RuleDefaults) {
    const Config cfg = parse_config("\n\nrules:\n  - name: a\n    " + kLimit + "\n");
    ASSERT_EQ(cfg.rules.size(), 1u);
    const Rule &r = cfg.rules[0];
    EXPECT_EQ(r.name, "a");
    EXPECT_EQ(r.line, 4);
    EXPECT_FALSE(r.match.proto.has_value());
    EXPECT_TRUE(r.match.dst_ports.empty());
    EXPECT_TRUE(r.match.src_ports.empty());
    EXPECT_TRUE(r.match.src.empty());
    EXPECT_TRUE(r.match.dst.empty());
    EXPECT_EQ(r.match.tcp_flags.must_set, 0);
    EXPECT_EQ(r.match.tcp_flags.must_clear, 0);
    EXPECT_EQ(r.key_ipv4_len, 32);
    EXPECT_EQ(r.key_ipv6_len, 64);
    EXPECT_EQ(r.action, RuleAction::drop);
    EXPECT_EQ(r.mode, RuleMode::enforce);
    EXPECT_EQ(r.on_table_full, TableFullPolicy::shared);
    EXPECT_EQ(r.top_offenders, TopOffenders::sampled);
}

TEST(Config, EveryFieldParses) {
    const Config cfg = parse_config(R"(# all fields
allow: [192.0.2.0/24, 198.51.100.7]
block:
  - 203.0.113.0/24
  - 2001:db8:bad::/48
  - 192.0.2.0/25         # more specific than an allow entry: not a conflict
table: { entries_per_core: 4096 }
rules:
  - name: web.in_1-A
    match:
      proto: tcp
      dst_port: [80, "8000-8099", 443]
      src_port: "1024-65535"
      src: [198.51.100.0/24, "2001:db8:1::/48"]
      dst: 192.0.2.80
      tcp_flags: "syn, !ack !rst"
    key: { ipv4: 24, ipv6: 48 }
    limit: { rate: 30/min, burst: 20 }
    action: drop
    mode: shadow
    on_table_full: pass
  - name: other
    match: { proto: 47 }
    key: { ipv4: 0, ipv6: 128 }
    limit: { rate: 1/h, burst: 1048576 }
    mode: enforce
    on_table_full: drop
    top_offenders: exact
)",
                                    kFile);
    EXPECT_EQ(cfg.path, kFile);
    EXPECT_EQ(cfg.allow, (std::vector<Prefix>{prefix("192.0.2.0/24"), prefix("198.51.100.7/32")}));
    EXPECT_EQ(cfg.block, (std::vector<Prefix>{prefix("203.0.113.0/24"), prefix("2001:db8:bad::/48"),
                                              prefix("192.0.2.0/25")}));
    EXPECT_EQ(cfg.table_entries_per_core, 4096u);
    ASSERT_EQ(cfg.rules.size(), 2u);

    const Rule &web = cfg.rules[0];
    EXPECT_EQ(web.name, "web.in_1-A");
    EXPECT_EQ(web.line, 9);
    EXPECT_EQ(web.match.proto, 6);
    ASSERT_EQ(web.match.dst_ports.size(), 3u);
    EXPECT_EQ(web.match.dst_ports[0].lo, 80);
    EXPECT_EQ(web.match.dst_ports[0].hi, 80);
    EXPECT_EQ(web.match.dst_ports[1].lo, 8000);
    EXPECT_EQ(web.match.dst_ports[1].hi, 8099);
    EXPECT_EQ(web.match.dst_ports[2].lo, 443);
    EXPECT_EQ(web.match.dst_ports[2].hi, 443);
    ASSERT_EQ(web.match.src_ports.size(), 1u);
    EXPECT_EQ(web.match.src_ports[0].lo, 1024);
    EXPECT_EQ(web.match.src_ports[0].hi, 65535);
    EXPECT_EQ(web.match.src,
              (std::vector<Prefix>{prefix("198.51.100.0/24"), prefix("2001:db8:1::/48")}));
    EXPECT_EQ(web.match.dst, (std::vector<Prefix>{prefix("192.0.2.80/32")}));
    EXPECT_EQ(web.match.tcp_flags.must_set, 0x02);           // SYN
    EXPECT_EQ(web.match.tcp_flags.must_clear, 0x10 | 0x04);  // ACK, RST
    EXPECT_EQ(web.key_ipv4_len, 24);
    EXPECT_EQ(web.key_ipv6_len, 48);
    EXPECT_EQ(web.rate_count, 30u);
    EXPECT_EQ(web.rate_period_ns, 60'000'000'000u);
    EXPECT_EQ(web.burst_pkts, 20u);
    EXPECT_EQ(web.interval_ns(), 2'000'000'000u);
    EXPECT_EQ(web.action, RuleAction::drop);
    EXPECT_EQ(web.mode, RuleMode::shadow);
    EXPECT_EQ(web.on_table_full, TableFullPolicy::pass);
    EXPECT_EQ(web.top_offenders, TopOffenders::sampled);

    const Rule &other = cfg.rules[1];
    EXPECT_EQ(other.name, "other");
    EXPECT_EQ(other.line, 22);
    EXPECT_EQ(other.match.proto, 47);
    EXPECT_EQ(other.key_ipv4_len, 0);
    EXPECT_EQ(other.key_ipv6_len, 128);
    EXPECT_EQ(other.rate_period_ns, 3'600'000'000'000u);
    EXPECT_EQ(other.burst_pkts, kMaxBurstPkts);
    EXPECT_EQ(other.mode, RuleMode::enforce);
    EXPECT_EQ(other.on_table_full, TableFullPolicy::drop);
    EXPECT_EQ(other.top_offenders, TopOffenders::exact);
}

TEST(Config, Rates) {
    struct RateCase {
        const char *rate;
        uint64_t count;
        uint64_t period_ns;
        uint64_t interval_ns;
    };
    const RateCase cases[] = {
        {"10/s", 10, 1'000'000'000, 100'000'000},
        {"30/min", 30, 60'000'000'000, 2'000'000'000},
        {"1/h", 1, 3'600'000'000'000, 3'600'000'000'000},
        {"3/s", 3, 1'000'000'000, 333'333'333},  // rounded down: never below the rate
        {"1000000000/s", 1'000'000'000, 1'000'000'000, 1},
        {"3600000000000/h", 3'600'000'000'000, 3'600'000'000'000, 1},
        {"3/10m", 3, 600'000'000'000, 200'000'000'000},
        {"3/10min", 3, 600'000'000'000, 200'000'000'000},
        {"10000/d", 10000, 86'400'000'000'000, 8'640'000'000},
        {"1/500ms", 1, 500'000'000, 500'000'000},
        {"2/1s", 2, 1'000'000'000, 500'000'000},
        {"1/366d", 1, 366 * 86'400'000'000'000ull, 366 * 86'400'000'000'000ull},
    };
    for (const RateCase &c : cases) {
        SCOPED_TRACE(c.rate);
        const Config cfg = parse_config(std::string("rules:\n  - name: a\n    limit: { rate: ") +
                                        c.rate + ", burst: 1 }\n");
        ASSERT_EQ(cfg.rules.size(), 1u);
        EXPECT_EQ(cfg.rules[0].rate_count, c.count);
        EXPECT_EQ(cfg.rules[0].rate_period_ns, c.period_ns);
        EXPECT_EQ(cfg.rules[0].interval_ns(), c.interval_ns);
    }
}

TEST(Config, MatchForms) {
    struct MatchCase {
        const char *match;
        std::optional<uint8_t> proto;
        size_t dst_ports;
        uint8_t must_set;
        uint8_t must_clear;
    };
    const MatchCase cases[] = {
        {"{ proto: udp, dst_port: 53 }", 17, 1, 0, 0},
        {"{ proto: icmp }", 1, 0, 0, 0},
        {"{ proto: icmpv6 }", 58, 0, 0, 0},
        {"{ proto: 0 }", 0, 0, 0, 0},
        {"{ proto: 255 }", 255, 0, 0, 0},
        {"{ proto: \"17\", dst_port: \"53\" }", 17, 1, 0, 0},  // quoted numbers are numbers
        {"{ dst_port: 53 }", std::nullopt, 1, 0, 0},           // ports alone: TCP or UDP
        {"{ dst_port: [\"0-65535\"] }", std::nullopt, 1, 0, 0},
        {"{ tcp_flags: syn }", 6, 0, 0x02, 0},  // tcp_flags implies tcp
        {"{ tcp_flags: \"syn !ack\" }", 6, 0, 0x02, 0x10},
        {"{ proto: 6, tcp_flags: \"!syn,!fin\" }", 6, 0, 0, 0x03},
        {"{ tcp_flags: \"fin syn rst psh ack urg ece cwr\" }", 6, 0, 0xff, 0},
        {"{ tcp_flags: \"!fin !syn !rst !psh !ack !urg !ece !cwr\" }", 6, 0, 0, 0xff},
        {"{ tcp_flags: \"syn syn\" }", 6, 0, 0x02, 0},
        {"{ tcp_flags: rst, dst_port: 179 }", 6, 1, 0x04, 0},
        {"{}", std::nullopt, 0, 0, 0},
    };
    for (const MatchCase &c : cases) {
        SCOPED_TRACE(c.match);
        const Config cfg = parse_config(rule_with_match(c.match));
        ASSERT_EQ(cfg.rules.size(), 1u);
        const RuleMatch &m = cfg.rules[0].match;
        EXPECT_EQ(m.proto, c.proto);
        EXPECT_EQ(m.dst_ports.size(), c.dst_ports);
        EXPECT_EQ(m.tcp_flags.must_set, c.must_set);
        EXPECT_EQ(m.tcp_flags.must_clear, c.must_clear);
    }
}

TEST(Config, Algorithms) {
    const Config cfg = parse_config(R"(rules:
  - name: default
    limit: { rate: 10/s, burst: 5 }
  - name: gcra
    algorithm: gcra
    limit: { rate: 10/s, burst: 5 }
  - name: login
    algorithm: fixed-window
    limit: { rate: 3/10m }
  - name: daily
    algorithm: sliding-window
    limit: { rate: 10000/d }
  - name: bucket
    algorithm: token-bucket
    limit: { rate: 100/min, burst: 20 }
  - name: largest_sliding
    algorithm: sliding-window
    limit: { rate: 31621/s }
  - name: largest_fixed
    algorithm: fixed-window
    limit: { rate: 999999/ms }
)");
    ASSERT_EQ(cfg.rules.size(), 7u);
    EXPECT_EQ(cfg.rules[0].algorithm, RuleAlgorithm::gcra);
    EXPECT_EQ(cfg.rules[1].algorithm, RuleAlgorithm::gcra);
    const Rule &login = cfg.rules[2];
    EXPECT_EQ(login.algorithm, RuleAlgorithm::fixed_window);
    EXPECT_EQ(login.rate_count, 3u);
    EXPECT_EQ(login.rate_period_ns, 600'000'000'000u);
    EXPECT_EQ(login.burst_pkts, 0u);
    const Rule &daily = cfg.rules[3];
    EXPECT_EQ(daily.algorithm, RuleAlgorithm::sliding_window);
    EXPECT_EQ(daily.rate_count, 10000u);
    EXPECT_EQ(daily.rate_period_ns, 86'400'000'000'000u);
    const Rule &bucket = cfg.rules[4];
    EXPECT_EQ(bucket.algorithm, RuleAlgorithm::token_bucket);
    EXPECT_EQ(bucket.interval_ns(), 600'000'000u);
    EXPECT_EQ(bucket.burst_pkts, 20u);
    EXPECT_EQ(cfg.rules[5].rate_count, 31621u);
    EXPECT_EQ(cfg.rules[6].rate_count, 999999u);
    EXPECT_STREQ(rule_algorithm_name(login.algorithm), "fixed-window");
    EXPECT_STREQ(rule_algorithm_name(daily.algorithm), "sliding-window");
    EXPECT_STREQ(rule_algorithm_name(bucket.algorithm), "token-bucket");
    EXPECT_STREQ(rule_algorithm_name(cfg.rules[0].algorithm), "gcra");
}

TEST(Config, FormatRate) {
    EXPECT_EQ(format_rate(10, 1'000'000'000), "10/s");
    EXPECT_EQ(format_rate(30, 60'000'000'000), "30/min");
    EXPECT_EQ(format_rate(1, 3'600'000'000'000), "1/h");
    EXPECT_EQ(format_rate(3, 600'000'000'000), "3/10min");
    EXPECT_EQ(format_rate(10000, 86'400'000'000'000), "10000/d");
    EXPECT_EQ(format_rate(5, 90'000'000'000), "5/90s");
    EXPECT_EQ(format_rate(1, 500'000'000), "1/500ms");
}

TEST(Config, AnswerFields) {
    const Config defaults = parse_config("rules:\n  - name: a\n    " + kLimit + "\n");
    EXPECT_EQ(defaults.answers.per_destination.count, 1000u);
    EXPECT_EQ(defaults.answers.per_destination.period_ns, 1'000'000'000u);
    EXPECT_EQ(defaults.answers.per_destination.burst, 100u);
    EXPECT_EQ(defaults.answers.destination_ipv4_len, 24);
    EXPECT_EQ(defaults.answers.destination_ipv6_len, 64);
    EXPECT_EQ(defaults.answers.per_core.count, 100000u);
    EXPECT_EQ(defaults.answers.per_core.burst, 1000u);
    EXPECT_EQ(defaults.rules[0].slip, 2u);
    EXPECT_EQ(defaults.rules[0].verified_ttl_ns, 600'000'000'000u);

    const Config cfg = parse_config(R"(answers:
  per_destination: { rate: 60/min, burst: 7, ipv4: 16, ipv6: 48 }
  per_core: { rate: 5000/s, burst: 50 }
rules:
  - name: syn
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-auth
    verified_ttl: 1h30m
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
    action: dns-truncate
    slip: 0
  - name: rst
    match: { proto: tcp, dst_port: 9 }
    limit: { rate: 1/s, burst: 1 }
    action: tcp-rst
  - name: icmp
    limit: { rate: 1/s, burst: 1 }
    action: icmp-unreachable
)");
    EXPECT_EQ(cfg.answers.per_destination.count, 60u);
    EXPECT_EQ(cfg.answers.per_destination.period_ns, 60'000'000'000u);
    EXPECT_EQ(cfg.answers.per_destination.burst, 7u);
    EXPECT_EQ(cfg.answers.destination_ipv4_len, 16);
    EXPECT_EQ(cfg.answers.destination_ipv6_len, 48);
    EXPECT_EQ(cfg.answers.per_core.count, 5000u);
    EXPECT_EQ(cfg.answers.per_core.burst, 50u);
    ASSERT_EQ(cfg.rules.size(), 4u);
    EXPECT_EQ(cfg.rules[0].action, RuleAction::syn_auth);
    EXPECT_EQ(cfg.rules[0].verified_ttl_ns, 5400'000'000'000u);
    EXPECT_EQ(cfg.rules[1].action, RuleAction::dns_truncate);
    EXPECT_EQ(cfg.rules[1].slip, 0u);
    EXPECT_EQ(cfg.rules[2].action, RuleAction::tcp_rst);
    EXPECT_EQ(cfg.rules[3].action, RuleAction::icmp_unreachable);
}

// ---------------------------------------------------------------------------------------------
// Aggregate keys, reserves and the established options (issue 11).

TEST(Config, KeyForms) {
    struct Case {
        const char *key;
        KeyKind kind;
        uint8_t src4, src6, dst4, dst6;
    };
    const Case cases[] = {
        {"{ ipv4: 24, ipv6: 48 }", KeyKind::src, 24, 48, 32, 64},
        {"{ src: { ipv4: 16 } }", KeyKind::src, 16, 64, 32, 64},
        {"src", KeyKind::src, 32, 64, 32, 64},
        {"dst", KeyKind::dst, 32, 64, 32, 64},
        {"{ dst: { ipv4: 24 } }", KeyKind::dst, 32, 64, 24, 64},
        {"{ dst: }", KeyKind::dst, 32, 64, 32, 64},
        {"{ dst: { ipv4: 32, ipv6: 56 } }", KeyKind::dst, 32, 64, 32, 56},
        {"{ src: { ipv4: 24 }, dst: { ipv6: 48 } }", KeyKind::src_dst, 24, 64, 32, 48},
        {"none", KeyKind::none, 32, 64, 32, 64},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.key);
        const Config cfg = parse_config(rule_lines({kAggLimit, std::string("key: ") + c.key}));
        ASSERT_EQ(cfg.rules.size(), 1u);
        const Rule &r = cfg.rules[0];
        EXPECT_EQ(r.key_kind, c.kind);
        EXPECT_EQ(r.key_ipv4_len, c.src4);
        EXPECT_EQ(r.key_ipv6_len, c.src6);
        EXPECT_EQ(r.dst_key_ipv4_len, c.dst4);
        EXPECT_EQ(r.dst_key_ipv6_len, c.dst6);
        // Aggregate keys get the default reserve; the others none at all.
        const bool aggregate = c.kind == KeyKind::dst || c.kind == KeyKind::none;
        EXPECT_EQ(r.reserve.established, aggregate ? 30 : 0);
        EXPECT_EQ(r.reserve.verified, aggregate ? 20 : 0);
        EXPECT_EQ(r.reserve.known, aggregate ? 10 : 0);
    }
}

TEST(Config, ReserveAndEstablished) {
    const Config cfg = parse_config(
        "established: { ttl: 90s, ipv4: 24, ipv6: 48 }\n" +
        rule_lines({kAggLimit, "key: none", "reserve: { established: 50%, known: 0% }"}));
    EXPECT_EQ(cfg.established.ttl_ns, 90'000'000'000ull);
    EXPECT_EQ(cfg.established.ipv4_len, 24);
    EXPECT_EQ(cfg.established.ipv6_len, 48);
    const Rule &r = cfg.rules[0];
    EXPECT_EQ(r.reserve.established, 50);
    EXPECT_EQ(r.reserve.verified, 0) << "a reserve written replaces the defaults";
    EXPECT_EQ(r.reserve.known, 0);

    const Config defaults = parse_config(rule_lines({kAggLimit}));
    EXPECT_EQ(defaults.established.ttl_ns, 600'000'000'000ull);
    EXPECT_EQ(defaults.established.ipv4_len, 32);
    EXPECT_EQ(defaults.established.ipv6_len, 64);
    // A ttl alone, and the lengths alone.
    EXPECT_EQ(parse_config("established: { ttl: 2s }\n").established.ttl_ns, 2'000'000'000ull);
    EXPECT_EQ(parse_config("established: { ipv6: 56 }\n").established.ipv6_len, 56);
    // The most a reserve may keep: 90%, with a burst that leaves new sources one packet.
    EXPECT_NO_THROW(parse_config(rule_lines(
        {"limit: { rate: 100/s, burst: 10 }", "key: dst", "reserve: { established: 90% }"})));
    // Burst 3 at the default 60%: 1.2 packets left for new sources.
    EXPECT_NO_THROW(parse_config(rule_lines({"limit: { rate: 100/s, burst: 3 }", "key: dst"})));
}

// The top-level established section with all its fields (ttl beside the prefix lengths), and
// an aggregate rule with its reserve: what tests/lab/aggregate.sh writes.
TEST(Config, EstablishedAndAggregateFields) {
    const Config defaults = parse_config("rules:\n  - name: a\n    " + kLimit + "\n");
    EXPECT_EQ(defaults.established.ttl_ns, 600'000'000'000u);
    EXPECT_EQ(defaults.established.ipv4_len, 32);
    EXPECT_EQ(defaults.established.ipv6_len, 64);

    const Config cfg = parse_config(R"(established: { ttl: 2m, ipv4: 24, ipv6: 56 }
rules:
  - name: web-total
    match: { proto: tcp, dst_port: 80 }
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 2000/s, burst: 1000 }
    reserve: { established: 40%, verified: 10%, known: 5% }
)");
    EXPECT_EQ(cfg.established.ttl_ns, 120'000'000'000u);
    EXPECT_EQ(cfg.established.ipv4_len, 24);
    EXPECT_EQ(cfg.established.ipv6_len, 56);
    ASSERT_EQ(cfg.rules.size(), 1u);
    EXPECT_EQ(cfg.rules[0].key_kind, KeyKind::dst);
    EXPECT_EQ(cfg.rules[0].reserve.established, 40);
    EXPECT_EQ(cfg.rules[0].reserve.verified, 10);
    EXPECT_EQ(cfg.rules[0].reserve.known, 5);
    EXPECT_EQ(parse_config("established: { ttl: 30s }\nrules: []\n").established.ttl_ns,
              30'000'000'000u);
}

TEST(Config, Steering) {
    struct Case {
        std::string text;
        bool set;
        unsigned ipv4_len, ipv6_len;
    };
    const Case cases[] = {
        {"steering: { ipv4: 24, ipv6: 56 }\n" + rule_lines({kLimit}), true, 24, 56},
        {"steering:\n  ipv4: 1\n  ipv6: 128\n", true, 1, 128},  // the extremes, block style
        {"steering: { ipv4: 32, ipv6: 1 }\n", true, 32, 1},
        // One family given: the other keeps its default; an empty map is still a choice made.
        {"steering: { ipv4: 16 }\n", true, 16, 64},
        {"steering: { ipv6: 48 }\n", true, 32, 48},
        {"steering: {}\n", true, 32, 64},
        // Not written: not set (floodgate derives it from the rules), the defaults /32 and /64.
        {rule_lines({kLimit}), false, 32, 64},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.text);
        const Config config = parse_config(c.text);
        EXPECT_EQ(config.steering.set, c.set);
        EXPECT_EQ(config.steering.ipv4_len, c.ipv4_len);
        EXPECT_EQ(config.steering.ipv6_len, c.ipv6_len);
    }
}

TEST(Config, Escalate) {
    const Config c =
        parse_config("rules:\n  - name: a\n    " + kLimit +
                         "\n    escalate: { after: 3s, min_refused_rate: 500/s, ttl: 2m }\n"
                         "  - name: b\n    " +
                         kLimit + "\n    escalate: {}\n  - name: c\n    " + kLimit + "\n",
                     kFile);
    ASSERT_EQ(c.rules.size(), 3u);
    EXPECT_EQ(c.rules[0].escalate.after_ns, 3'000'000'000ull);
    EXPECT_EQ(c.rules[0].escalate.min_refused_count, 500u);
    EXPECT_EQ(c.rules[0].escalate.min_refused_period_ns, 1'000'000'000ull);
    EXPECT_EQ(c.rules[0].escalate.ttl_ns, 120'000'000'000ull);
    // The defaults: 5 s at 1000/s, then 10 minutes.
    EXPECT_EQ(c.rules[1].escalate.after_ns, 5'000'000'000ull);
    EXPECT_EQ(c.rules[1].escalate.min_refused_count, 1000u);
    EXPECT_EQ(c.rules[1].escalate.ttl_ns, 600'000'000'000ull);
    EXPECT_FALSE(c.rules[2].escalate.enabled());
    EXPECT_FALSE(c.rules[0].escalate.nic);
    EXPECT_FALSE(c.nic_tier.set);
}

TEST(Config, NicTier) {
    const Config c = parse_config(
        "nic_tier: { max_rules: 64, inserts_per_second: 5, ttl: 30s }\nrules:\n  - name: a\n    " +
            kLimit + "\n    escalate: { nic: true }\n",
        kFile);
    EXPECT_TRUE(c.nic_tier.set);
    EXPECT_EQ(c.nic_tier.max_rules, 64u);
    EXPECT_EQ(c.nic_tier.inserts_per_second, 5u);
    EXPECT_EQ(c.nic_tier.ttl_ns, 30'000'000'000ull);
    EXPECT_TRUE(c.rules[0].escalate.nic);
    // The defaults: 1000 rules, 20 a second, 10 minutes.
    const Config d = parse_config("nic_tier: {}\n", kFile);
    EXPECT_TRUE(d.nic_tier.set);
    EXPECT_EQ(d.nic_tier.max_rules, 1000u);
    EXPECT_EQ(d.nic_tier.inserts_per_second, 20u);
    EXPECT_EQ(d.nic_tier.ttl_ns, 600'000'000'000ull);
}

}  // namespace
}  // namespace floodgate::config_test
