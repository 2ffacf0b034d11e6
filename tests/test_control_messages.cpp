// The control protocol's message checks and the rules diff: plain functions, no sockets.
// Hostile input must come back as a MessageError, never a crash or a hang. Durations are in
// test_numbers.cpp, with the other numbers operators type.
#include <gtest/gtest.h>

#include "control/common/rules_diff.h"
#include "dataplane/api/control_protocol.h"
#include "dataplane/api/daemon_commands.h"
#include "dataplane/api/message.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/load.h"

namespace floodgate {
namespace {

TEST(ControlMessage, AcceptsARequestObjectWithACommand) {
    nlohmann::json j = parse_request(R"({"cmd": "override_add", "ttl_s": 60, "dry_run": true})");
    EXPECT_EQ(get_string(j, "cmd"), "override_add");
    EXPECT_EQ(get_int(j, "ttl_s", 0, 100, -1), 60);
    EXPECT_EQ(get_int(j, "absent", 0, 100, -1), -1);
    EXPECT_TRUE(get_bool(j, "dry_run", false));
}

TEST(ControlMessage, RefusesWhatIsNotARequest) {
    const char *bad[] = {"",
                         "not json",
                         "[1, 2]",
                         "\"cmd\"",
                         "{}",
                         R"({"cmd": 5})",
                         R"({"cmd": null})",
                         R"({"cmd": "x"} trailing)",
                         "{\"cmd\": \"\xff\xfe\"}"};
    for (const char *line : bad) EXPECT_THROW(parse_request(line), MessageError) << line;
}

TEST(ControlMessage, RefusesDeepNestingBeforeParsing) {
    std::string deep =
        R"({"cmd": "x", "a": )" + std::string(1000000, '[') + std::string(1000000, ']') + "}";
    EXPECT_THROW(parse_request(deep), MessageError);
    // Brackets inside strings are not nesting.
    EXPECT_NO_THROW(parse_request(R"({"cmd": ")" + std::string(1000, '[') + "\"}"));
    std::string ok = R"({"cmd": "x", "a": )" + std::string(kMaxMessageDepth - 1, '[') +
                     std::string(kMaxMessageDepth - 1, ']') + "}";
    EXPECT_NO_THROW(parse_request(ok));
}

TEST(ControlMessage, RefusesACommandGivenTwice) {
    // The DOM would keep one of them; which one the router saw is another matter.
    EXPECT_THROW(parse_request(R"({"cmd": "mode", "rule": "load", "cmd": "load"})"), MessageError);
    // Nested objects may have a "cmd" of their own.
    EXPECT_NO_THROW(parse_request(R"({"cmd": "load", "rules": {"cmd": "x", "a": [{"cmd": 1}]}})"));
}

TEST(ControlMessage, ReadsTheCommandWithoutParsingTheLine) {
    const struct {
        const char *line;
        std::optional<std::string_view> command;
    } cases[] = {
        {R"({"cmd":"stats"})", "stats"},
        {R"(  { "cmd" : "mode", "rule": "load"})", "mode"},
        // Members before it skipped, whatever they hold: strings with quotes, brackets and
        // escapes, nested values, scalars.
        {R"({"rule": "a\"b}]", "n": -1.5e3, "t": true, "x": null, "rules": {"a": [1, {"cmd": "load"}],
             "b": "]"}, "cmd": "override_add"})",
         "override_add"},
        {R"({"rules": ["load"], "cmd": "mode", "cmd": "load"})",
         "mode"},                                   // the first: parse refuses
        {R"({"cmd": "lo\u0061d"})", std::nullopt},  // escaped: not read
        {R"({"cmd": 5})", std::nullopt},
        {R"({"rule": "load"})", std::nullopt},
        {R"({"a": [1, 2, "cmd"})", std::nullopt},
        {R"(["cmd", "load"])", std::nullopt},
        {R"({"a": "unterminated)", std::nullopt},
        {"", std::nullopt},
    };
    for (const auto &c : cases) EXPECT_EQ(read_command(c.line), c.command) << c.line;
}

TEST(ControlMessage, TheDaemonsCommandsComeBeforeThoseItPassesOn) {
    EXPECT_EQ(parse_daemon_command("status"),
              DaemonCommand::status);  // its own, not the dataplane's
    EXPECT_EQ(parse_daemon_command("rules_load"), DaemonCommand::rules_load);
    EXPECT_FALSE(parse_daemon_command("stats"));
    EXPECT_EQ(passed_to_dataplane(DataplaneCommand::stats), PassedCommand::reads);
    EXPECT_EQ(passed_to_dataplane(DataplaneCommand::override_del), PassedCommand::changes);
    for (const DataplaneCommand kept :
         {DataplaneCommand::load, DataplaneCommand::cluster_take, DataplaneCommand::cluster_sync})
        EXPECT_FALSE(passed_to_dataplane(kept)) << command_name(kept);
    EXPECT_EQ(daemon_request(DaemonCommand::rules_load, {{"dry_run", true}}).dump(),
              R"({"cmd":"rules_load","dry_run":true})");
    EXPECT_EQ(dataplane_request(DataplaneCommand::stats, {{"top", 5}}).dump(),
              R"({"cmd":"stats","top":5})");
}

TEST(ControlMessage, TypedFieldsAreChecked) {
    nlohmann::json j = parse_request(
        R"({"cmd": "x", "s": 1, "i": "1", "big": 18446744073709551615, "neg": -1, "f": 1.5})");
    EXPECT_THROW(get_string(j, "s"), MessageError);
    EXPECT_THROW(get_string(j, "missing"), MessageError);
    EXPECT_THROW(get_int(j, "i", 0, 10, 0), MessageError);
    EXPECT_THROW(get_int(j, "big", 0, 10, 0), MessageError);
    EXPECT_THROW(get_int(j, "neg", 0, 10, 0), MessageError);
    EXPECT_THROW(get_int(j, "f", 0, 10, 0), MessageError);
    EXPECT_THROW(get_bool(j, "s", false), MessageError);
}

TEST(ControlMessage, ResponsesNeedOk) {
    EXPECT_NO_THROW(parse_response(R"({"ok": false, "error": "x"})"));
    EXPECT_THROW(parse_response(R"({"error": "x"})"), MessageError);
    EXPECT_THROW(parse_response(R"({"ok": "yes"})"), MessageError);
}

TEST(RulesDiff, NamesEveryChangeAndWhatKeepsItsState) {
    Config a = parse_config(R"(
allow: [198.18.200.0/24]
block: [198.19.255.0/24]
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
  - name: syn
    match: { tcp_flags: "syn !ack" }
    limit: { rate: 20/s, burst: 10 }
  - name: old
    limit: { rate: 1/s, burst: 1 }
)");
    Config b = parse_config(R"(
allow: [198.18.200.0/24]
block: [198.19.0.0/16]
table: { entries_per_core: 1024 }
rules:
  - name: new
    match: { proto: icmp }
    limit: { rate: 5/min, burst: 2 }
  - name: syn
    match: { tcp_flags: "syn !ack" }
    key: { ipv4: 24 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-auth
    verified_ttl: 90m
    mode: shadow
  - name: dns
    match: { proto: udp, dst_port: [53, 853] }
    limit: { rate: 20/s, burst: 5 }
answers:
  per_core: { rate: 10/s, burst: 1 }
)");
    RulesDiff d = diff_rules(a, b);
    const std::vector<std::string> want = {
        "block + 198.19.0.0/16",
        "block - 198.19.255.0/24",
        "table.entries_per_core 1048576 -> 1024 (takes effect when floodgate restarts)",
        "answers per_destination 1000/s burst 100 per ipv4 /24, ipv6 /64; per_core 100000/s burst "
        "1000 -> per_destination 1000/s burst 100 per ipv4 /24, ipv6 /64; per_core 10/s burst 1",
        "rule old: removed (its limiter state is dropped)",
        "rule new: added (proto icmp; 5/min burst 2)",
        "rule syn: action drop -> syn-auth verified_ttl 1h30m",
        "rule syn: mode enforce -> shadow",
        "rule syn: key ipv4 /32, ipv6 /64 -> ipv4 /24, ipv6 /64 (its limiter state starts afresh)",
        "rule dns: match proto udp, dst_port 53 -> proto udp, dst_port 53,853",
        "rule dns: limit 10/s burst 5 -> 20/s burst 5",
        "rule order changed",
    };
    EXPECT_EQ(d.changes, want);
    EXPECT_EQ(d.kept, std::vector<std::string>{"dns"});
    EXPECT_EQ(d.reset, (std::vector<std::string>{"new", "syn"}));
    EXPECT_EQ(d.removed, std::vector<std::string>{"old"});
    EXPECT_TRUE(diff_rules(a, a).changes.empty());
}

TEST(RulesDiff, NamesTheAlgorithm) {
    const Config a = parse_config(R"(
rules:
  - name: login
    limit: { rate: 3/10m, burst: 3 }
  - name: daily
    algorithm: fixed-window
    limit: { rate: 10000/d }
  - name: api
    limit: { rate: 100/s, burst: 20 }
)");
    const Config b = parse_config(R"(
rules:
  - name: login
    algorithm: fixed-window
    limit: { rate: 3/10m }
  - name: daily
    algorithm: fixed-window
    limit: { rate: 20000/d }
  - name: api
    algorithm: token-bucket
    limit: { rate: 100/s, burst: 20 }
)");
    EXPECT_EQ(describe_limit(a.rules[0]), "3/10min burst 3");
    EXPECT_EQ(describe_limit(b.rules[0]), "fixed-window 3/10min");
    EXPECT_EQ(describe_limit(b.rules[2]), "token-bucket 100/s burst 20");
    const RulesDiff d = diff_rules(a, b);
    const std::vector<std::string> want = {
        "rule login: limit 3/10min burst 3 -> fixed-window 3/10min (its limiter state starts "
        "afresh)",
        "rule daily: limit fixed-window 10000/d -> fixed-window 20000/d",
        "rule api: limit 100/s burst 20 -> token-bucket 100/s burst 20",
    };
    EXPECT_EQ(d.changes, want);
    EXPECT_EQ(d.kept, (std::vector<std::string>{"daily", "api"}));
    EXPECT_EQ(d.reset, std::vector<std::string>{"login"});
}

TEST(RulesDiff, DescribesMatches) {
    Config c = parse_config(R"(
rules:
  - name: a
    match: { src: [198.18.0.0/16, "2001:db8::/32"], dst_port: "1000-2000", tcp_flags: "syn !ack" }
    limit: { rate: 1/h, burst: 1 }
  - name: b
    limit: { rate: 1/s, burst: 1 }
)");
    EXPECT_EQ(
        describe_match(c.rules[0].match),
        "proto tcp, dst_port 1000-2000, src 198.18.0.0/16,2001:db8::/32, tcp_flags \"syn !ack\"");
    EXPECT_EQ(describe_match(c.rules[1].match), "every IP packet");
    EXPECT_EQ(describe_limit(c.rules[0]), "1/h burst 1");
}

// A payload match is described by its size, window and fingerprint, so that `rules load
// --dry-run` shows a change of any pattern.
TEST(RulesDiff, DescribesPayloadMatches) {
    if (!payload_engine_available()) GTEST_SKIP() << "built without Hyperscan";
    const auto rule = [](const std::string &patterns) {
        return parse_config("rules:\n  - name: p\n    match: { proto: udp, payload: { patterns: " +
                            patterns + ", offset: 12 } }\n    limit: { rate: 1/s, burst: 1 }\n")
            .rules[0];
    };
    const Rule one = rule("['attack']"), other = rule("['attacks']"), two = rule("['a1', 'a2']");
    const std::string d = describe_match(one.match);
    EXPECT_EQ(d.rfind("proto udp, payload 1 pattern offset 12 (", 0), 0u) << d;
    EXPECT_NE(describe_match(other.match), d);  // one byte more: another fingerprint
    EXPECT_NE(describe_match(two.match).find("payload 2 patterns"), std::string::npos);
}

}  // namespace
}  // namespace floodgate
