// action: syn-proxy in a rules file (rules/validate.cpp): the rule's announce and the table's
// proxy_* fields as written and their defaults, and every refusal naming its file, line and
// field (tests/config_cases.h's expect_errors).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/api/protocols.h"
#include "rules/load.h"
#include "tests/config_cases.h"

namespace floodgate::config_test {
namespace {

constexpr uint64_t kS = 1'000'000'000;
const std::string kSynMatch = "match: { proto: tcp, tcp_flags: \"syn !ack\", dst_port: 443 }";

// A syn-proxy rule "a" on SYNs to port 443, then the given lines (each a rule field).
std::string proxy_rule(const std::vector<std::string> &more = {}) {
    std::vector<std::string> lines = {kSynMatch, kLimit, "action: syn-proxy"};
    lines.insert(lines.end(), more.begin(), more.end());
    return rule_lines(lines);
}

TEST(ConfigSynProxy, Defaults) {
    const Config cfg = parse_config(proxy_rule(), kFile);
    ASSERT_EQ(cfg.rules.size(), 1u);
    const Rule &r = cfg.rules[0];
    EXPECT_EQ(r.action, RuleAction::syn_proxy);
    EXPECT_STREQ(rule_action_name(r.action), "syn-proxy");
    EXPECT_TRUE(verifies_sources(r.action));
    EXPECT_EQ(r.match.tcp_flags.must_set, kTcpSyn);
    EXPECT_EQ(r.match.tcp_flags.must_clear, kTcpAck);
    // Linux's on Ethernet.
    EXPECT_EQ(r.announce.mss, 1460);
    EXPECT_EQ(r.announce.wscale, 7);
    EXPECT_EQ(r.announce.window, 65535);
    EXPECT_EQ(r.announce, ProxyAnnounce{});
    EXPECT_EQ(r.verified_ttl_ns, 600 * kS) << "syn-auth's";
    EXPECT_EQ(cfg.proxy_connections_per_core, 65536u);
    EXPECT_EQ(cfg.proxy_server_timeout_ns, 3 * kS);
    EXPECT_EQ(cfg.proxy_idle_timeout_ns, 900 * kS);
    // The table's defaults hold without any syn-proxy rule too.
    const Config none = parse_config("", kFile);
    EXPECT_EQ(none.proxy_connections_per_core, 65536u);
    EXPECT_EQ(none.proxy_server_timeout_ns, 3 * kS);
    EXPECT_EQ(none.proxy_idle_timeout_ns, 900 * kS);
}

TEST(ConfigSynProxy, AsWritten) {
    const Config cfg = parse_config(R"(table:
  entries_per_core: 4096
  proxy_connections_per_core: 16777216
  proxy_server_timeout: 500ms
  proxy_idle_timeout: 1h
rules:
  - name: web
    match: { proto: tcp, tcp_flags: "syn !ack", dst_port: [80, 443] }
    limit: { rate: 100/s, burst: 20 }
    action: syn-proxy
    announce: { mss: 1400, wscale: 9, window: 29200 }
    verified_ttl: 1h30m
  - name: low
    match: { tcp_flags: "syn !ack", dst_port: 8080 }
    limit: { rate: 1/s, burst: 1 }
    action: syn-proxy
    announce:
      mss: 536
      wscale: 0
      window: 1
  - name: high
    match: { tcp_flags: "syn !ack !rst", dst_port: 8443 }
    limit: { rate: 1/s, burst: 1 }
    announce: { mss: 9000, wscale: 14, window: 65535 }
    action: syn-proxy
  - name: partial
    match: { tcp_flags: "syn !ack", dst_port: 22 }
    limit: { rate: 1/s, burst: 1 }
    action: syn-proxy
    announce: { wscale: 10 }
    mode: shadow
)",
                                    kFile);
    EXPECT_EQ(cfg.table_entries_per_core, 4096u);
    EXPECT_EQ(cfg.proxy_connections_per_core, 16777216u) << "kMaxProxyConnectionsPerCore";
    EXPECT_EQ(cfg.proxy_server_timeout_ns, 500'000'000u);
    EXPECT_EQ(cfg.proxy_idle_timeout_ns, 3600 * kS);
    ASSERT_EQ(cfg.rules.size(), 4u);
    for (const Rule &r : cfg.rules) EXPECT_EQ(r.action, RuleAction::syn_proxy) << r.name;
    EXPECT_EQ(cfg.rules[0].announce, (ProxyAnnounce{1400, 9, 29200}));
    EXPECT_EQ(cfg.rules[0].verified_ttl_ns, 5400 * kS);
    EXPECT_EQ(cfg.rules[1].announce, (ProxyAnnounce{536, 0, 1})) << "the lowest of each";
    EXPECT_EQ(cfg.rules[2].announce, (ProxyAnnounce{9000, 14, 65535}))
        << "the highest of each, announce before action";
    EXPECT_EQ(cfg.rules[3].announce, (ProxyAnnounce{1460, 10, 65535})) << "the others default";
    EXPECT_EQ(cfg.rules[3].mode, RuleMode::shadow);
}

TEST(ConfigSynProxy, TableBounds) {
    // 0 connections: no table; syn-proxy rules challenge as syn-auth does.
    const Config none = parse_config("table: { proxy_connections_per_core: 0 }\n", kFile);
    EXPECT_EQ(none.proxy_connections_per_core, 0u);
    const Config edges = parse_config(
        "table: { proxy_server_timeout: 60s, proxy_idle_timeout: 1d }\n" + proxy_rule(), kFile);
    EXPECT_EQ(edges.proxy_server_timeout_ns, 60 * kS);
    EXPECT_EQ(edges.proxy_idle_timeout_ns, 86'400 * kS);
    const Config shortest = parse_config("table: { proxy_server_timeout: 1ms }\n", kFile);
    EXPECT_EQ(shortest.proxy_server_timeout_ns, 1'000'000u);
}

TEST(ConfigSynProxyErrors, Action) {
    auto rule = [](const std::string &match, const std::string &more) {
        return "rules:\n  - name: a\n    match: " + match + "\n    " + kLimit + "\n    " + more +
               "\n";
    };
    expect_errors({
        {"without tcp_flags", rule("{ proto: tcp, dst_port: 443 }", "action: syn-proxy"), 5,
         "rules[0].action", "syn-proxy needs match.tcp_flags with \"syn !ack\""},
        {"on any SYN, ACKs included", rule("{ tcp_flags: syn }", "action: syn-proxy"), 5,
         "rules[0].action", "syn-proxy needs match.tcp_flags with \"syn !ack\""},
        {"on ACKs", rule("{ tcp_flags: \"ack !syn\" }", "action: syn-proxy"), 5, "rules[0].action",
         "syn-proxy needs"},
        {"with a payload match",
         rule("{ tcp_flags: \"syn !ack\", payload: { patterns: ['x'] } }", "action: syn-proxy"), 5,
         "rules[0].action", "syn-proxy answers SYNs, which carry no payload: no payload match"},
        {"with key dst",
         rule_lines({"match: { proto: tcp, tcp_flags: \"syn !ack\" }", kAggLimit, "key: dst",
                     "action: syn-proxy"}),
         6, "rules[0].action",
         "syn-proxy verifies sources: it needs a per-source key, not key dst"},
        {"with key none",
         rule_lines({"match: { proto: tcp, tcp_flags: \"syn !ack\" }", kAggLimit, "key: none",
                     "action: syn-proxy"}),
         6, "rules[0].action", "not key none"},
        {"misspelt", rule("{ tcp_flags: \"syn !ack\" }", "action: synproxy"), 5, "rules[0].action",
         "unknown value 'synproxy' (expected one of: "},
    });
}

TEST(ConfigSynProxyErrors, Announce) {
    expect_errors({
        {"announce on a drop rule", rule_lines({kLimit, "announce: { mss: 1400 }"}), 4,
         "rules[0].announce", "announce needs action syn-proxy"},
        {"announce on a syn-auth rule",
         rule_lines({kSynMatch, kLimit, "action: syn-auth", "announce: { mss: 1400 }"}), 6,
         "rules[0].announce", "announce needs action syn-proxy"},
        {"mss 535", proxy_rule({"announce: { mss: 535 }"}), 6, "rules[0].announce.mss",
         "535 is out of range (536-9000)"},
        {"mss 9001", proxy_rule({"announce: { mss: 9001 }"}), 6, "rules[0].announce.mss",
         "9001 is out of range (536-9000)"},
        {"mss in block style", proxy_rule({"announce:", "  window: 100", "  mss: 9001"}), 8,
         "rules[0].announce.mss", "9001 is out of range (536-9000)"},
        {"wscale 15", proxy_rule({"announce: { wscale: 15 }"}), 6, "rules[0].announce.wscale",
         "15 is out of range (0-14)"},
        {"window 0", proxy_rule({"announce: { window: 0 }"}), 6, "rules[0].announce.window",
         "0 is out of range (1-65535)"},
        {"window 65536", proxy_rule({"announce: { window: 65536 }"}), 6, "rules[0].announce.window",
         "65536 is out of range (1-65535)"},
        {"mss not a number", proxy_rule({"announce: { mss: 1.4k }"}), 6, "rules[0].announce.mss",
         "'1.4k' is not an integer"},
        {"unknown field", proxy_rule({"announce: { mss: 1400, ttl: 64 }"}), 6,
         "rules[0].announce.ttl", "unknown field (expected one of: mss, wscale, window)"},
        {"announce is a scalar", proxy_rule({"announce: 1400"}), 6, "rules[0].announce",
         "map expected, found a scalar"},
        {"announce given twice", proxy_rule({"announce: { mss: 1400 }", "announce: { mss: 1300 }"}),
         7, "rules[0].announce", "field given twice"},
    });
}

TEST(ConfigSynProxyErrors, VerifiedTtl) {
    expect_errors({
        {"verified_ttl on a drop rule", rule_lines({kSynMatch, kLimit, "verified_ttl: 10m"}), 5,
         "rules[0].verified_ttl", "verified_ttl needs action syn-auth or syn-proxy"},
        {"verified_ttl on a shape rule",
         rule_lines({kLimit, "action: shape", "queue: { packets: 5 }", "verified_ttl: 10m"}), 6,
         "rules[0].verified_ttl", "verified_ttl needs action syn-auth or syn-proxy"},
        {"verified_ttl over a day", proxy_rule({"verified_ttl: 2d"}), 6, "rules[0].verified_ttl",
         "longer than a day"},
    });
}

TEST(ConfigSynProxyErrors, Table) {
    expect_errors({
        {"server timeout 61s", "table: { proxy_server_timeout: 61s }\n", 1,
         "table.proxy_server_timeout", "'61s' must be from 1ms to 60000ms"},
        {"server timeout 60001ms", "table:\n  proxy_server_timeout: 60001ms\n", 2,
         "table.proxy_server_timeout", "'60001ms' must be from 1ms to 60000ms"},
        {"server timeout 0s", "table: { proxy_server_timeout: 0s }\n", 1,
         "table.proxy_server_timeout", "must be from 1ms"},
        {"server timeout in minutes", "table: { proxy_server_timeout: 1m }\n", 1,
         "table.proxy_server_timeout", "'1m' is not a time in whole ms or s"},
        {"server timeout without a unit", "table: { proxy_server_timeout: 3 }\n", 1,
         "table.proxy_server_timeout", "is not a time in whole ms or s"},
        {"idle timeout over a day", "table: { proxy_idle_timeout: 25h }\n", 1,
         "table.proxy_idle_timeout", "'25h' is longer than a day"},
        {"idle timeout 0s", "table: { proxy_idle_timeout: 0s }\n", 1, "table.proxy_idle_timeout",
         "'0s' is shorter than 1s"},
        {"connections above 2^24", "table:\n  proxy_connections_per_core: 16777217\n", 2,
         "table.proxy_connections_per_core", "16777217 is out of range (0-16777216)"},
        {"connections negative", "table: { proxy_connections_per_core: -1 }\n", 1,
         "table.proxy_connections_per_core", "-1 is out of range"},
        {"connections with a suffix", "table: { proxy_connections_per_core: 64k }\n", 1,
         "table.proxy_connections_per_core", "'64k' is not an integer"},
        {"unknown table field", "table: { proxy_connections: 5 }\n", 1, "table.proxy_connections",
         "unknown field (expected one of: entries_per_core, proxy_connections_per_core, "
         "proxy_server_timeout, proxy_idle_timeout)"},
    });
}

}  // namespace
}  // namespace floodgate::config_test
