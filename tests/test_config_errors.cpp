// Every refused field of a rules file, each naming the line and the field path where the
// mistake is and saying what is wrong (tests/config_cases.h's expect_errors).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/load.h"
#include "tests/config_cases.h"

namespace floodgate::config_test {
namespace {

TEST(ConfigErrors, LongPortList) {
    std::string ports;
    for (int i = 0; i < 65; ++i) ports += (i ? ", " : "") + std::to_string(1000 + i);
    expect_errors({{"65 ports", rule_with_match("{ proto: udp, dst_port: [" + ports + "] }"), 3,
                    "rules[0].match.dst_port[64]", "more than 64 ports or ranges"}});
}

// The cluster section and a rule's share and fallback (issue 26): each refusal names the field.
TEST(ConfigErrors, Cluster) {
    const std::string cluster = "cluster: { name: edge, redis: \"127.0.0.1:6379\" }\n";
    const std::string shared =
        "rules:\n  - name: a\n    key: dst\n    limit: { rate: 1/s, burst: 10 }\n";
    expect_errors({
        {"no name", "cluster: { redis: \"127.0.0.1:6379\" }\n", 1, "cluster.name",
         "missing required field"},
        {"bad name", "cluster: { name: \"a b\", redis: \"127.0.0.1:6379\" }\n", 1, "cluster.name",
         "may use only"},
        {"bad redis", "cluster: { name: e, redis: \"127.0.0.1\" }\n", 1, "cluster.redis",
         "is not host:port or unix:/path"},
        {"bad port", "cluster: { name: e, redis: \"h:70000\" }\n", 1, "cluster.redis", "70000"},
        // A box's login and TLS are its daemon's options, never the shared rules file's.
        {"a password", "cluster: { name: e, redis: \"h:1\",\n  password: s3cret }\n", 2,
         "cluster.password", "is not the rules file's"},
        {"tls", "cluster: { name: e, redis: \"h:1\", tls: true }\n", 1, "cluster.tls",
         "--redis-tls-*"},
        {"a URL with a user", "cluster: { name: e, redis: \"rediss://u:p@h:1\" }\n", 1,
         "cluster.redis", "no URL, and no user or password in it"},
        {"sync too short", "cluster: { name: e, redis: \"h:1\", sync_ms: 5 }\n", 1,
         "cluster.sync_ms", "10"},
        {"timeout below two syncs",
         "cluster: { name: e, redis: \"h:1\", sync_ms: 1000, box_timeout: 1s }\n", 1,
         "cluster.box_timeout", "at least two sync intervals"},
        // The other boxes' allows (issue 42): never a whole family, never past a day.
        {"remote allows not a boolean",
         "cluster: { name: e, redis: \"h:1\",\n  remote_allows: no }\n", 2, "cluster.remote_allows",
         "expected one of: true, false"},
        {"remote allow TTL past a day",
         "cluster: { name: e, redis: \"h:1\", remote_allow_max_ttl: 25h }\n", 1,
         "cluster.remote_allow_max_ttl", "'25h' is longer than a day"},
        {"remote allows of 0.0.0.0/0",
         "cluster: { name: e, redis: \"h:1\",\n\n"
         "  remote_allow_min_ipv4: 0 }\n",
         3, "cluster.remote_allow_min_ipv4", "0 is out of range (8-32)"},
        {"remote allows past /128",
         "cluster: { name: e, redis: \"h:1\", remote_allow_min_ipv6: 129 }\n", 1,
         "cluster.remote_allow_min_ipv6", "129 is out of range (16-128)"},
        {"share without cluster", shared + "    share: cluster\n", 5, "rules[0].share",
         "needs a cluster section"},
        {"share of a source key",
         cluster + "rules:\n  - name: a\n    " + kLimit + "\n    share: cluster\n", 5,
         "rules[0].share", "per-source key stays on the box"},
        {"unknown share", cluster + shared + "    share: world\n", 6, "rules[0].share",
         "expected one of: cluster, none"},
        {"fallback without share", shared + "    fallback: local\n", 5, "rules[0].fallback",
         "fallback needs share: cluster"},
        {"unknown fallback", cluster + shared + "    share: cluster\n    fallback: closed\n", 7,
         "rules[0].fallback", "expected one of: local, fail-open"},
    });
}

TEST(ConfigErrors, UnknownField) {
    expect_errors({
        {"top level", "allow: []\nrulez: []\n", 2, "rulez",
         "unknown field (expected one of: allow, block, table, steering, cluster, answers, "
         "established, nic_tier, rules)"},
        {"table", "table:\n  entries: 5\n", 2, "table.entries", "unknown field"},
        {"rule", "rules:\n  - name: a\n    " + kLimit + "\n    burst: 5\n", 4, "rules[0].burst",
         "expected one of: name, match, key, algorithm, limit, action, slip, verified_ttl, "
         "announce, mode, on_table_full, reserve, escalate, share, fallback"},
        {"match", rule_with_match("{ proto: udp, dport: 53 }"), 3, "rules[0].match.dport",
         "unknown field"},
        {"match in block style",
         "rules:\n  - name: a\n    match:\n      proto: udp\n      dport: 53\n    " + kLimit + "\n",
         5, "rules[0].match.dport", "unknown field"},
        {"key", "rules:\n  - name: a\n    key: { ip4: 24 }\n    " + kLimit + "\n", 3,
         "rules[0].key.ip4", "expected one of: ipv4, ipv6"},
        {"limit", "rules:\n  - name: a\n    limit: { rate: 1/s, burst: 1, ceil: 2 }\n", 3,
         "rules[0].limit.ceil", "expected one of: rate, burst"},
        {"field name is a list", "? [a]\n: 1\n", 1, "", "field names must be plain words"},
    });
}

TEST(ConfigErrors, DuplicateField) {
    expect_errors({
        {"top level", "allow: []\nblock: []\nallow: []\n", 3, "allow", "field given twice"},
        {"rule", "rules:\n  - name: a\n    name: b\n    " + kLimit + "\n", 3, "rules[0].name",
         "field given twice"},
    });
}

TEST(ConfigErrors, WrongNodeType) {
    expect_errors({
        {"allow is a scalar", "allow: 192.0.2.0/24\n", 1, "allow", "list expected, found a scalar"},
        {"allow entry is a list", "allow:\n  - [192.0.2.0/24]\n", 2, "allow[0]",
         "scalar expected, found a list"},
        {"block is a map", "block: { a: 1 }\n", 1, "block", "list expected, found a map"},
        {"table is a scalar", "table: 5\n", 1, "table", "map expected, found a scalar"},
        {"table is empty", "allow: []\ntable:\nrules: []\n", 2, "table",
         "map expected, found nothing"},
        {"rules is a map", "rules: { name: a }\n", 1, "rules", "list expected, found a map"},
        {"rule is a scalar", "rules:\n  - dns\n", 2, "rules[0]", "map expected, found a scalar"},
        {"rule is empty", "rules:\n  -\n  - name: x\n", 2, "rules[0]",
         "map expected, found nothing"},
        {"name is a list", "rules:\n  - name: [a]\n    " + kLimit + "\n", 2, "rules[0].name",
         "scalar expected, found a list"},
        {"match is a list", rule_with_match("[udp]"), 3, "rules[0].match",
         "map expected, found a list"},
        {"match is empty", "rules:\n  - name: a\n    match:\n    " + kLimit + "\n", 3,
         "rules[0].match", "map expected, found nothing"},
        {"limit is a scalar", "rules:\n  - name: a\n    limit: 10/s\n", 3, "rules[0].limit",
         "map expected, found a scalar"},
        {"rate is a list", "rules:\n  - name: a\n    limit: { rate: [10/s], burst: 1 }\n", 3,
         "rules[0].limit.rate", "scalar expected, found a list"},
        {"mode is a map", "rules:\n  - name: a\n    " + kLimit + "\n    mode: { a: 1 }\n", 4,
         "rules[0].mode", "scalar expected, found a map"},
        {"port is a map", rule_with_match("{ dst_port: [53, { lo: 1 }] }"), 3,
         "rules[0].match.dst_port[1]", "scalar expected, found a map"},
    });
}

TEST(ConfigErrors, MissingRequiredField) {
    expect_errors({
        {"name", "rules:\n  - " + kLimit + "\n", 2, "rules[0].name", "missing required field"},
        {"limit", "rules:\n  - name: a\n  - name: b\n", 2, "rules[0].limit",
         "missing required field"},
        {"rate", "rules:\n  - name: a\n    limit:\n      burst: 5\n", 4, "rules[0].limit.rate",
         "missing required field"},
        {"burst",
         "rules:\n  - name: a\n    " + kLimit + "\n  - name: b\n    limit: { rate: 1/s }\n", 5,
         "rules[1].limit.burst", "missing required field"},
    });
}

TEST(ConfigErrors, BadRuleName) {
    const std::string long_name(65, 'a');
    auto named = [](const std::string &name) {
        return "rules:\n  - " + kLimit + "\n    name: " + name + "\n";
    };
    expect_errors({
        {"empty", named("\"\""), 3, "rules[0].name", "name must be 1-64 characters"},
        {"65 characters", named(long_name), 3, "rules[0].name", "name must be 1-64 characters"},
        {"space", named("\"a b\""), 3, "rules[0].name", "may use only A-Z a-z 0-9 _ . -"},
        {"slash", named("dns/1"), 3, "rules[0].name", "may use only"},
        {"non-ASCII", named("d\xc3\xa9j\xc3\xa0"), 3, "rules[0].name", "may use only"},
    });
}

TEST(ConfigErrors, DuplicateRuleName) {
    expect_errors({
        {"third rule repeats the first", R"(rules:
  - name: a
    limit: { rate: 1/s, burst: 1 }
  - name: b
    limit: { rate: 1/s, burst: 1 }
  - limit: { rate: 1/s, burst: 1 }
    name: a
)",
         7, "rules[2].name", "duplicate rule name 'a' (first used by rules[0], line 2)"},
    });
}

TEST(ConfigErrors, BadPrefix) {
    expect_errors({
        {"host bits in allow[3]",
         "allow: [192.0.2.0/24, 198.51.100.0/24, 2001:db8::/32, 10.0.0.1/8]\n", 1, "allow[3]",
         "host bits are set below /8 (did you mean 10.0.0.0/8?)"},
        {"not an address", "block:\n  - 203.0.113.0/24\n  - example.com\n", 3, "block[1]",
         "'example.com' is not an IPv4 address"},
        {"junk length", "block: [203.0.113.0/2x]\n", 1, "block[0]", "is not a number"},
        {"bad IPv6", "allow: [2001:db8::g/64]\n", 1, "allow[0]", "is not an IPv6 address"},
        {"match.src", rule_with_match("{ src: bogus }"), 3, "rules[0].match.src",
         "not an IPv4 address"},
        {"match.dst list", rule_with_match("{ dst: [192.0.2.0/24, 192.0.2.300] }"), 3,
         "rules[0].match.dst[1]", "not an IPv4 address"},
        {"empty src list", rule_with_match("{ src: [] }"), 3, "rules[0].match.src", "empty list"},
    });
}

TEST(ConfigErrors, PrefixLengthOutOfRange) {
    expect_errors({
        {"IPv4 /33", "allow:\n  - 192.0.2.0/33\n", 2, "allow[0]", "out of range for IPv4 (0-32)"},
        {"IPv6 /129", "block:\n  - 2001:db8:bad::/48\n  - 2001:db8:bad::/129\n", 3, "block[1]",
         "out of range for IPv6 (0-128)"},
        {"in match.dst", rule_with_match("{ dst: 192.0.2.0/99 }"), 3, "rules[0].match.dst",
         "out of range for IPv4"},
    });
}

TEST(ConfigErrors, PrefixInAllowAndBlock) {
    expect_errors({
        {"same IPv6 prefix written differently",
         "allow: [192.0.2.0/24, 2001:db8::/32]\n"
         "block:\n"
         "  - 198.51.100.0/24\n"
         "  - 2001:DB8:0::/32\n",
         4, "block[1]", "2001:db8::/32 is also in allow[1] (line 1)"},
    });
}

TEST(ConfigErrors, TableEntries) {
    expect_errors({
        {"zero", "table: { entries_per_core: 0 }\n", 1, "table.entries_per_core",
         "0 is out of range (1-1073741824)"},
        {"above 2^30", "table:\n  entries_per_core: 1073741825\n", 2, "table.entries_per_core",
         "out of range"},
        {"negative", "table: { entries_per_core: -1 }\n", 1, "table.entries_per_core",
         "out of range"},
        {"suffix", "table: { entries_per_core: 1M }\n", 1, "table.entries_per_core",
         "'1M' is not an integer"},
        {"hex", "table: { entries_per_core: 0x100 }\n", 1, "table.entries_per_core",
         "not an integer"},
        {"huge", "table: { entries_per_core: 99999999999999999999999 }\n", 1,
         "table.entries_per_core", "out of range"},
    });
}

TEST(ConfigErrors, KeyLengths) {
    auto keyed = [](const std::string &key) {
        return "rules:\n  - name: a\n    " + kLimit + "\n    key: " + key + "\n";
    };
    expect_errors({
        {"ipv4 33", keyed("{ ipv4: 33 }"), 4, "rules[0].key.ipv4", "33 is out of range (0-32)"},
        {"ipv4 -1", keyed("{ ipv4: -1 }"), 4, "rules[0].key.ipv4", "out of range (0-32)"},
        {"ipv6 129", keyed("{ ipv6: 129 }"), 4, "rules[0].key.ipv6", "out of range (0-128)"},
        {"ipv6 text", keyed("{ ipv6: /64 }"), 4, "rules[0].key.ipv6", "not an integer"},
    });
}

// steering: { ipv4, ipv6 }: the source prefix packets are steered to workers by; not /0, which
// would give one worker every source.
TEST(ConfigErrors, Steering) {
    expect_errors({
        {"ipv4 0", "steering: { ipv4: 0 }\n", 1, "steering.ipv4", "0 is out of range (1-32)"},
        {"ipv4 33", "rules: []\nsteering:\n  ipv4: 33\n", 3, "steering.ipv4",
         "33 is out of range (1-32)"},
        {"ipv6 0", "steering: { ipv4: 24, ipv6: 0 }\n", 1, "steering.ipv6",
         "0 is out of range (1-128)"},
        {"ipv6 129", "steering:\n  ipv4: 24\n  ipv6: 129\n", 3, "steering.ipv6",
         "129 is out of range (1-128)"},
        {"ipv4 text", "steering: { ipv4: /24 }\n", 1, "steering.ipv4", "not an integer"},
        {"unknown field", "steering:\n  ipv4: 24\n  ports: 2\n", 3, "steering.ports",
         "unknown field (expected one of: ipv4, ipv6)"},
        {"given twice", "steering: { ipv4: 24, ipv4: 32 }\n", 1, "steering.ipv4",
         "field given twice"},
        {"a scalar", "steering: 24\n", 1, "steering", "map expected, found a scalar"},
        {"a list", "steering: [24, 64]\n", 1, "steering", "map expected, found a list"},
    });
}

TEST(ConfigErrors, BadRate) {
    struct RateCase {
        const char *rate;
        const char *reason;
    };
    const RateCase rates[] = {
        {"0/s", "whole number of packets >= 1"},
        {"-1/s", "whole number of packets >= 1"},
        {"1.5/s", "whole number of packets >= 1"},
        {"ten/s", "whole number of packets >= 1"},
        {"/s", "whole number of packets >= 1"},
        {"99999999999999999999/s", "whole number of packets >= 1"},
        {"10", "'10' has no unit"},
        {"10/", "unknown unit '' (expected ms, s, min, m, h, d)"},
        {"10/w", "unknown unit 'w'"},
        {"10/5", "unknown unit ''"},
        {"10/0s", "the period's multiplier must be a whole number >= 1"},
        {"10/99999999999999999999s", "the period's multiplier must be a whole number >= 1"},
        {"10/367d", "the period is longer than 366 days"},
        {"10/8785h", "the period is longer than 366 days"},
        {"10/s5", "unknown unit 's5'"},
        {"10/sec", "unknown unit 'sec'"},
        {"10/ s", "unknown unit ' s'"},
        {"1000000001/s", "faster than one packet per nanosecond"},
        {"60000000001/min", "faster than one packet per nanosecond"},
        {"3600000000001/h", "faster than one packet per nanosecond"},
        {"1000001/ms", "faster than one packet per nanosecond"},
    };
    std::vector<ErrorCase> cases;
    for (const RateCase &r : rates) {
        cases.push_back({r.rate,
                         "rules:\n  - name: a\n    " + kLimit + "\n  - name: b\n    limit:\n" +
                             "      burst: 5\n      rate: \"" + r.rate + "\"\n",
                         7, "rules[1].limit.rate", r.reason});
    }
    expect_errors(cases);
}

TEST(ConfigErrors, BadAlgorithm) {
    const auto rule = [](const std::string &algorithm, const std::string &limit) {
        return "rules:\n  - name: a\n    algorithm: " + algorithm + "\n    limit: " + limit + "\n";
    };
    expect_errors({
        {"unknown", rule("leaky-bucket", "{ rate: 1/s, burst: 1 }"), 3, "rules[0].algorithm",
         "unknown value 'leaky-bucket' (expected one of: gcra, fixed-window, sliding-window, "
         "token-bucket)"},
        {"a list", rule("[gcra]", "{ rate: 1/s, burst: 1 }"), 3, "rules[0].algorithm",
         "scalar expected"},
        {"fixed-window takes no burst", rule("fixed-window", "{ rate: 3/10m, burst: 2 }"), 4,
         "rules[0].limit.burst", "burst does not apply to fixed-window"},
        {"sliding-window takes no burst",
         rule("sliding-window", "\n      rate: 3/10m\n      burst: 2"), 6, "rules[0].limit.burst",
         "burst does not apply to sliding-window"},
        {"a window needs a rate", rule("fixed-window", "{}"), 4, "rules[0].limit.rate",
         "missing required field"},
        {"token-bucket needs a burst", rule("token-bucket", "{ rate: 1/s }"), 4,
         "rules[0].limit.burst", "missing required field"},
        {"fixed window: N < W in ns", rule("fixed-window", "{ rate: 1000000/ms }"), 4,
         "rules[0].limit.rate", "a fixed window admits fewer packets than its length in ns"},
        // (N + 1)^2 <= 10^9: N <= 31621 (31622^2 = 999,950,884; 31623^2 > 10^9).
        {"sliding window: (N + 1)^2 <= W", rule("sliding-window", "{ rate: 31622/s }"), 4,
         "rules[0].limit.rate",
         "'31622/s': a sliding window of 1000000000 ns admits at most 31621"},
        {"window N fits the merge record", rule("fixed-window", "{ rate: 1073741824/d }"), 4,
         "rules[0].limit.rate", "a window admits at most 1073741823 packets"},
        {"a bad rate is still a bad rate", rule("fixed-window", "{ rate: 3/10w }"), 4,
         "rules[0].limit.rate", "unknown unit 'w'"},
    });
}

TEST(ConfigErrors, BadBurst) {
    auto burst = [](const std::string &b) {
        return "rules:\n  - name: a\n    limit: { rate: 1/s, burst: " + b + " }\n";
    };
    expect_errors({
        {"zero", burst("0"), 3, "rules[0].limit.burst", "0 is out of range (1-1048576)"},
        {"above max", burst("1048577"), 3, "rules[0].limit.burst", "out of range"},
        {"negative", burst("-3"), 3, "rules[0].limit.burst", "out of range"},
        {"fraction", burst("2.5"), 3, "rules[0].limit.burst", "not an integer"},
        {"list", burst("[5]"), 3, "rules[0].limit.burst", "scalar expected"},
    });
}

TEST(ConfigErrors, BadShapeQueue) {
    auto with = [](const std::string &lines) {
        return "rules:\n  - name: a\n    " + kLimit + "\n    " + lines + "\n";
    };
    expect_errors({
        {"shape without a queue", with("action: shape"), 4, "rules[0].action",
         "action shape needs a queue"},
        {"a queue without shape", with("queue: { packets: 10 }"), 4, "rules[0].queue",
         "queue needs action shape"},
        {"both bounds", with("action: shape\n    queue: { packets: 10, delay: 200ms }"), 5,
         "rules[0].queue", "queue needs one of packets"},
        {"no packets", with("action: shape\n    queue: { packets: 0 }"), 5,
         "rules[0].queue.packets", "out of range (1-1048576)"},
        {"a delay without a unit", with("action: shape\n    queue: { delay: 200 }"), 5,
         "rules[0].queue.delay", "not a time in whole ms or s"},
        {"a delay past a minute", with("action: shape\n    queue: { delay: 61s }"), 5,
         "rules[0].queue.delay", "must be from 1ms to 60000ms"},
        {"a window cannot shape",
         "rules:\n  - name: a\n    algorithm: fixed-window\n    limit: { rate: 10/s }\n"
         "    action: shape\n    queue: { packets: 5 }\n",
         5, "rules[0].action", "shape releases packets at the rule's rate: it needs gcra"},
    });
}

TEST(ConfigErrors, BadEnumValue) {
    auto with = [](const std::string &line) {
        return "rules:\n  - name: a\n    " + kLimit + "\n    " + line + "\n";
    };
    expect_errors({
        {"mode", with("mode: dryrun"), 4, "rules[0].mode",
         "unknown value 'dryrun' (expected one of: enforce, shadow)"},
        {"mode is case-sensitive", with("mode: Enforce"), 4, "rules[0].mode", "unknown value"},
        {"action", with("action: pass"), 4, "rules[0].action",
         "unknown value 'pass' (expected one of: drop, syn-auth, dns-truncate, tcp-rst, "
         "icmp-unreachable, shape, syn-proxy)"},
        {"on_table_full", with("on_table_full: bucket"), 4, "rules[0].on_table_full",
         "(expected one of: shared, pass, drop)"},
        {"top_offenders", with("top_offenders: rough"), 4, "rules[0].top_offenders",
         "unknown value 'rough' (expected one of: sampled, exact)"},
        {"proto name", rule_with_match("{ proto: sctp }"), 3, "rules[0].match.proto",
         "unknown protocol 'sctp' (expected tcp, udp, icmp, icmpv6 or a number 0-255)"},
        {"proto 256", rule_with_match("{ proto: 256 }"), 3, "rules[0].match.proto",
         "256 is out of range (0-255)"},
        {"proto -1", rule_with_match("{ proto: -1 }"), 3, "rules[0].match.proto",
         "unknown protocol '-1'"},
    });
}

TEST(ConfigErrors, AnswerActions) {
    auto rule = [](const std::string &match, const std::string &more) {
        return "rules:\n  - name: a\n    match: " + match + "\n    " + kLimit + "\n    " + more +
               "\n";
    };
    expect_errors({
        {"syn-auth without tcp_flags", rule("{ proto: tcp }", "action: syn-auth"), 5,
         "rules[0].action", "syn-auth needs match.tcp_flags with \"syn !ack\""},
        {"syn-auth on any SYN, ACKs included", rule("{ tcp_flags: syn }", "action: syn-auth"), 5,
         "rules[0].action", "syn-auth needs"},
        {"dns-truncate on TCP", rule("{ proto: tcp, dst_port: 53 }", "action: dns-truncate"), 5,
         "rules[0].action", "dns-truncate needs match.proto udp and a dst_port"},
        {"dns-truncate without a port", rule("{ proto: udp }", "action: dns-truncate"), 5,
         "rules[0].action", "dns-truncate needs"},
        {"tcp-rst on UDP", rule("{ proto: udp }", "action: tcp-rst"), 5, "rules[0].action",
         "tcp-rst needs match.proto tcp"},
        {"slip without dns-truncate", rule("{ proto: udp }", "slip: 2"), 5, "rules[0].slip",
         "slip needs action dns-truncate"},
        {"slip out of range",
         rule("{ proto: udp, dst_port: 53 }", "action: dns-truncate\n    slip: 101"), 6,
         "rules[0].slip", "101 is out of range (0-100)"},
        {"verified_ttl without syn-auth", rule("{ proto: tcp }", "verified_ttl: 10m"), 5,
         "rules[0].verified_ttl", "verified_ttl needs action syn-auth"},
        {"verified_ttl without a unit",
         rule("{ tcp_flags: \"syn !ack\" }", "action: syn-auth\n    verified_ttl: 600"), 6,
         "rules[0].verified_ttl", "unit"},
        {"verified_ttl over a day",
         rule("{ tcp_flags: \"syn !ack\" }", "action: syn-auth\n    verified_ttl: 2d"), 6,
         "rules[0].verified_ttl", "longer than a day"},
        {"answers: unknown cap", "answers:\n  per_source: { rate: 1/s, burst: 1 }\n", 2,
         "answers.per_source", "unknown field (expected one of: per_destination, per_core)"},
        {"answers: prefix length",
         "answers:\n  per_destination: { rate: 1/s, burst: 1, ipv4: 33 }\n", 2,
         "answers.per_destination.ipv4", "33 is out of range (0-32)"},
        {"answers: per_core needs a burst", "answers:\n  per_core: { rate: 1/s }\n", 2,
         "answers.per_core.burst", "required"},
        {"answers: per_core has no prefix",
         "answers:\n  per_core: { rate: 1/s, burst: 1, ipv4: 24 }\n", 2, "answers.per_core.ipv4",
         "unknown field"},
    });
}

TEST(ConfigErrors, BadPorts) {
    expect_errors({
        {"above 65535", rule_with_match("{ dst_port: 65536 }"), 3, "rules[0].match.dst_port",
         "65536 is out of range (0-65535)"},
        {"range backwards", rule_with_match("{ src_port: \"2000-1000\" }"), 3,
         "rules[0].match.src_port", "port range '2000-1000' ends below its start"},
        {"range without end", rule_with_match("{ dst_port: [53, \"100-\"] }"), 3,
         "rules[0].match.dst_port[1]", "'' is not an integer"},
        {"third element", rule_with_match("{ dst_port: [53, \"1000-2000\", 70000] }"), 3,
         "rules[0].match.dst_port[2]", "70000 is out of range"},
        {"three parts", rule_with_match("{ dst_port: 1-2-3 }"), 3, "rules[0].match.dst_port",
         "'2-3' is not an integer"},
        {"negative", rule_with_match("{ dst_port: -5 }"), 3, "rules[0].match.dst_port",
         "-5 is out of range"},
        {"empty list", rule_with_match("{ dst_port: [] }"), 3, "rules[0].match.dst_port",
         "empty list"},
        {"ports with icmp",
         "rules:\n  - name: a\n    match:\n      proto: icmp\n      src_port: 7\n    " + kLimit +
             "\n",
         5, "rules[0].match.src_port", "ports need proto tcp or udp (proto is 1)"},
        {"ports with proto 47", rule_with_match("{ proto: 47, dst_port: 1723 }"), 3,
         "rules[0].match.dst_port", "ports need proto tcp or udp (proto is 47)"},
    });
}

TEST(ConfigErrors, BadTcpFlags) {
    expect_errors({
        {"set and cleared", rule_with_match("{ tcp_flags: \"syn ack !syn\" }"), 3,
         "rules[0].match.tcp_flags", "both required and excluded"},
        {"unknown flag", rule_with_match("{ tcp_flags: \"syn,fin,bogus\" }"), 3,
         "rules[0].match.tcp_flags",
         "unknown TCP flag 'bogus' (expected fin, syn, rst, psh, ack, urg, ece, cwr"},
        {"upper case", rule_with_match("{ tcp_flags: SYN }"), 3, "rules[0].match.tcp_flags",
         "unknown TCP flag 'SYN'"},
        {"bare !", rule_with_match("{ tcp_flags: \"syn !\" }"), 3, "rules[0].match.tcp_flags",
         "unknown TCP flag ''"},
        {"empty", rule_with_match("{ tcp_flags: \" , \" }"), 3, "rules[0].match.tcp_flags",
         "no TCP flags given"},
        {"with udp",
         "rules:\n  - name: a\n    match:\n      tcp_flags: syn\n      proto: udp\n    " + kLimit +
             "\n",
         4, "rules[0].match.tcp_flags", "tcp_flags needs proto tcp (proto is 17)"},
    });
}

// ---------------------------------------------------------------------------------------------
// Aggregate keys, reserves and the established options (issue 11).

TEST(ConfigErrors, AggregateKeys) {
    expect_errors({
        {"unknown key word", rule_lines({kAggLimit, "key: dest"}), 4, "rules[0].key",
         "expected one of: src, dst, none"},
        {"unknown key field", rule_lines({kAggLimit, "key: { destination: { ipv4: 24 } }"}), 4,
         "rules[0].key.destination", "unknown field (expected one of: ipv4, ipv6, src, dst)"},
        {"source lengths beside dst", rule_lines({kAggLimit, "key: { ipv4: 24, dst: {} }"}), 4,
         "rules[0].key", "write the source's lengths under key.src"},
        {"dst length out of range", rule_lines({kAggLimit, "key: { dst: { ipv4: 33 } }"}), 4,
         "rules[0].key.dst.ipv4", "out of range (0-32)"},
        {"unknown dst field", rule_lines({kAggLimit, "key: { dst: { ipv5: 3 } }"}), 4,
         "rules[0].key.dst.ipv5", "unknown field"},
        {"syn-auth with key dst",
         rule_lines({"match: { proto: tcp, tcp_flags: \"syn !ack\" }", kAggLimit, "key: dst",
                     "action: syn-auth"}),
         6, "rules[0].action", "syn-auth verifies sources: it needs a per-source key, not key dst"},
        {"syn-auth with key none",
         rule_lines({"match: { proto: tcp, tcp_flags: \"syn !ack\" }", kAggLimit, "key: none",
                     "action: syn-auth"}),
         6, "rules[0].action", "not key none"},
    });
}

TEST(ConfigErrors, Reserve) {
    expect_errors({
        {"reserve on a per-source rule", rule_lines({kAggLimit, "reserve: { established: 30% }"}),
         4, "rules[0].reserve", "reserve needs an aggregate key"},
        {"reserve on a pair key",
         rule_lines({kAggLimit, "key: { src: {}, dst: {} }", "reserve: { known: 10% }"}), 5,
         "rules[0].reserve", "reserve needs an aggregate key"},
        {"over 90%",
         rule_lines({kAggLimit, "key: dst",
                     "reserve: { established: 50%, verified: 30%, known: "
                     "11% }"}),
         5, "rules[0].reserve", "the reserves add up to 91%, over 90%"},
        {"no percent sign", rule_lines({kAggLimit, "key: dst", "reserve: { established: 30 }"}), 5,
         "rules[0].reserve.established", "'30' is not a percentage (write it as 30%)"},
        {"101%", rule_lines({kAggLimit, "key: dst", "reserve: { verified: 101% }"}), 5,
         "rules[0].reserve.verified", "out of range (0-100)"},
        {"a fraction", rule_lines({kAggLimit, "key: dst", "reserve: { known: 2.5% }"}), 5,
         "rules[0].reserve.known", "not an integer"},
        {"unknown class", rule_lines({kAggLimit, "key: dst", "reserve: { allowed: 10% }"}), 5,
         "rules[0].reserve.allowed",
         "unknown field (expected one of: established, verified, "
         "known)"},
        // burst 10 with 91%... refused above; burst 2 at the default 60%: 0.8 of a packet.
        {"burst too small for the default reserve",
         rule_lines({"limit: { rate: 100/s, burst: 2 }", "key: dst"}), 3, "rules[0].limit",
         "burst 2 leaves new sources less than one packet after the classes' reserve of 60%"},
        {"burst too small for the reserve written",
         rule_lines(
             {"limit: { rate: 100/s, burst: 5 }", "key: none", "reserve: { established: 81% }"}),
         5, "rules[0].reserve", "burst 5 leaves new sources less than one packet"},
    });
}

TEST(ConfigErrors, Established) {
    expect_errors({
        {"ttl 0s", "established: { ttl: 0s }\n", 1, "established.ttl", "'0s' is shorter than 1s"},
        {"ttl over a day", "established: { ttl: 2d }\n", 1, "established.ttl", "longer than a day"},
        {"ttl without a unit", "established: { ttl: 10 }\n", 1, "established.ttl", ""},
        {"ipv4 33", "established: { ipv4: 33 }\n", 1, "established.ipv4", "out of range (0-32)"},
        {"unknown field", "established: { ttl: 1m, timeout: 5m }\n", 1, "established.timeout",
         "unknown field (expected one of: ttl, ipv4, ipv6)"},
        {"a scalar", "established: 10m\n", 1, "established", ""},
    });
}

TEST(ConfigErrors, Escalate) {
    const auto rule = [](const std::string &key, const std::string &escalate) {
        return "rules:\n  - name: a\n    " + key + "\n    " + kLimit +
               "\n    escalate: " + escalate + "\n";
    };
    expect_errors({
        {"an aggregate key",
         rule("key: dst\n    reserve: { established: 0%, verified: 0%, known: 0% }", "{}"), 6,
         "rules[0].escalate", "escalate blocks sources: it needs a per-source key, not key dst"},
        {"unknown field", rule("key: { ipv4: 24 }", "{ afterwards: 5s }"), 5,
         "rules[0].escalate.afterwards",
         "unknown field (expected one of: after, min_refused_rate, ttl, flowspec, nic)"},
        {"ttl over a day", rule("key: { ipv4: 24 }", "{ ttl: 2d }"), 5, "rules[0].escalate.ttl",
         "longer than a day"},
        {"rate without unit", rule("key: { ipv4: 24 }", "{ min_refused_rate: 100 }"), 5,
         "rules[0].escalate.min_refused_rate", "has no unit"},
        {"nic without the tier", rule("key: { ipv4: 24 }", "{ nic: true }"), 5,
         "rules[0].escalate.nic", "nic: true needs a nic_tier section at the top level"},
    });
}

TEST(ConfigErrors, NicTier) {
    expect_errors({
        {"no rules", "nic_tier: { max_rules: 0 }\n", 1, "nic_tier.max_rules", ""},
        {"too many rules", "nic_tier: { max_rules: 1048577 }\n", 1, "nic_tier.max_rules", ""},
        {"no inserts", "nic_tier:\n  inserts_per_second: 0\n", 2, "nic_tier.inserts_per_second",
         ""},
        {"too many inserts", "nic_tier: { inserts_per_second: 100001 }\n", 1,
         "nic_tier.inserts_per_second", ""},
        {"ttl over a day", "nic_tier: { ttl: 2d }\n", 1, "nic_tier.ttl", "longer than a day"},
        {"unknown field", "nic_tier: { port: 1 }\n", 1, "nic_tier.port",
         "unknown field (expected one of: max_rules, inserts_per_second, ttl)"},
        {"a scalar", "nic_tier: true\n", 1, "nic_tier", ""},
    });
}

}  // namespace
}  // namespace floodgate::config_test
