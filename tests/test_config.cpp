#include "dataplane/patterns/payload_database.h"
#include "rules/config_error_reply.h"
#include "rules/load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace floodgate {
namespace {

constexpr const char *kFile = "rules.yaml";

// One refused config: where the error must point. The line is 1-based, 0 for "no line".
struct ErrorCase {
    const char *description;
    std::string yaml;
    int line;
    const char *field;
    const char *reason;  // a piece of the message
};

void expect_errors(const std::vector<ErrorCase> &cases) {
    for (const ErrorCase &c : cases) {
        SCOPED_TRACE(c.description);
        try {
            parse_config(c.yaml, kFile);
            ADD_FAILURE() << "accepted:\n" << c.yaml;
        } catch (const ConfigError &e) {
            EXPECT_EQ(e.file(), kFile);
            EXPECT_EQ(e.line(), c.line) << e.what();
            EXPECT_EQ(e.field(), c.field) << e.what();
            const std::string what = e.what();
            std::string where = kFile;
            if (c.line > 0) where.append(":").append(std::to_string(c.line));
            where += ": ";
            if (*c.field != '\0') where += std::string(c.field) + ": ";
            EXPECT_EQ(what.rfind(where, 0), 0u) << what;
            EXPECT_NE(what.find(c.reason), std::string::npos) << what;
        }
    }
}

// The smallest valid rule body, to keep the cases about the field under test.
const std::string kLimit = "limit: { rate: 1/s, burst: 1 }";

// A config holding one rule "r" whose match is the given flow map.
std::string rule_with_match(const std::string &match) {
    return "rules:\n  - name: r\n    match: " + match + "\n    " + kLimit + "\n";
}

TEST(ConfigError, FormatsFileLineFieldReason) {
    const ConfigError e("a.yaml", 3, "rules[1].limit.rate", "bad rate");
    EXPECT_STREQ(e.what(), "a.yaml:3: rules[1].limit.rate: bad rate");
    EXPECT_EQ(e.file(), "a.yaml");
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "rules[1].limit.rate");
    EXPECT_STREQ(ConfigError("a.yaml", 0, "allow", "x").what(), "a.yaml: allow: x");
    EXPECT_STREQ(ConfigError("a.yaml", 7, "", "syntax").what(), "a.yaml:7: syntax");
}

// The control protocol's reply to a refused file, as floodctl daemon and the dataplane send it.
TEST(ConfigError, ReplyCarriesFileLineField) {
    const ConfigError e("a.yaml", 3, "rules[1].limit.rate", "bad rate");
    const nlohmann::json reply = config_error_reply(e);
    EXPECT_EQ(reply, nlohmann::json({{"ok", false},
                                     {"error", "a.yaml:3: rules[1].limit.rate: bad rate"},
                                     {"file", "a.yaml"},
                                     {"line", 3},
                                     {"field", "rules[1].limit.rate"}}));
    // The dataplane's ordered reply: the error reply's fields, then file, line and field.
    EXPECT_EQ(config_error_reply<nlohmann::ordered_json>(e).dump(),
              R"({"error":"a.yaml:3: rules[1].limit.rate: bad rate","ok":false,)"
              R"("file":"a.yaml","line":3,"field":"rules[1].limit.rate"})");
}

TEST(ConfigErrors, YamlSyntax) {
    expect_errors({
        {"unclosed flow list", "rules: [dns\n", 2, "", "did not find expected ',' or ']'"},
        {"unclosed flow map", "allow: []\ntable: { entries_per_core: 5\n", 3, "",
         "did not find expected ',' or '}'"},
        {"map value on a map value", "allow: []\nblock: a: b\n", 2, "",
         "mapping values are not allowed in this context"},
        {"bad indentation", "rules:\n  - name: a\n   limit: x\n", 3, "",
         "did not find expected '-' indicator"},
    });
}

// Sizes and nesting are refused at the first event over the limit, with the line.
TEST(ConfigErrors, TooLargeOrTooDeep) {
    expect_errors({
        {"5 MiB", "# " + std::string(5u << 20, 'x') + "\n", 0, "", "larger than 4194304 bytes"},
        {"deep flow nesting", "allow: []\nrules: " + std::string(100000, '[') + "\n", 2, "",
         "nested more than 32 levels deep"},
        {"deep block sequences, spaced",
         [] {
             std::string s = "rules:\n";
             for (int i = 0; i < 40; ++i) s += "- ";
             return s + "x\n";
         }(),
         2, "", "nested more than 32 levels deep"},
    });
    // Brackets in quotes and comments are not nesting.
    Config c = parse_config(
        "# " + std::string(100, '[') + "\nrules:\n  - name: \"a\"\n    " + kLimit + "  # ]]]]\n",
        kFile);
    EXPECT_EQ(c.rules.size(), 1u);
    // ... nor in quoted strings: this one is refused as a prefix, not as nesting.
    expect_errors({{"brackets in quotes", "rules: []\nallow: ['" + std::string(40, '[') + "']\n", 2,
                    "allow[0]", "is not an IPv4 address"}});
}

// Files that made yaml-cpp 0.7 create documents without end (all memory in seconds), or slip
// past the old bracket-counting pre-check: each is refused at once, naming its line.
TEST(ConfigErrors, OneTypoFiles) {
    expect_errors({
        {"a lone comma", ",", 1, "", "did not find expected node content"},
        {"comma and text", ",AA", 1, "", "did not find expected node content"},
        {"comma after a list", "- a\n,", 2, "", "did not find expected '-' indicator"},
        {"comma after a string", "\"x\" ,", 1, "", "did not find expected <document start>"},
        {"comma in a second document", "a: 1\n---\n,", 2, "", "more than one YAML document"},
        {"a quote that opens nothing, then deep brackets",
         "x: a '\n" + std::string(100000, '[') + "\n", 2, "", "could not find expected ':'"},
        {"a quote that opens nothing, then nested brackets within a simple key's reach",
         "x: a '\ny: " + std::string(40, '[') + "\n", 2, "", "nested more than 32 levels deep"},
    });
}

// Anchors and aliases work, and what an alias repeats counts against the node budget, so a
// "billion laughs" file is refused instead of expanded.
TEST(ConfigErrors, AliasBomb) {
    Config c = parse_config(
        "allow: &nets [198.18.1.0/24, 198.18.2.0/24]\nrules:\n"
        "  - name: a\n    match: { src: *nets }\n    " +
            kLimit + "\n",
        kFile);
    ASSERT_EQ(c.rules.size(), 1u);
    EXPECT_EQ(c.rules[0].match.src.size(), 2u);
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i) {
        bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int j = 0; j < 10; ++j)
            bomb += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
        bomb += "]\n";
    }
    // One big scalar repeated: few nodes, but each alias copies 1 MiB.
    std::string big = "a: &x \"" + std::string(1u << 20, 'x') + "\"\nb: [";
    for (int i = 0; i < 150; ++i) big += std::string(i ? ", " : "") + "*x";
    big += "]\n";
    expect_errors(
        {{"150 aliases of a 1 MiB scalar", big, 2, "", "more than 8388608 bytes of text"}});
    expect_errors({{"ten levels of ten aliases", bomb, 6, "", "more than 1048576 values"},
                   {"alias to nothing", "allow: *none\n", 1, "", "alias to an unknown anchor"}});

    // An alias repeats its anchor's nesting where it stands. Each of these lines is 31 lists
    // deep around an alias of the line before: before the alias counted its levels, 180 of
    // them (13 KB) made a tree 5,600 levels deep, walked by every recursive function after it.
    std::string chain = "a0: &a0 " + std::string(31, '[') + "x" + std::string(31, ']') + "\n";
    for (int i = 1; i <= 180; ++i)
        chain += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " " + std::string(31, '[') +
                 "*a" + std::to_string(i - 1) + std::string(31, ']') + "\n";
    expect_errors({{"aliases of deep lists, nested", chain, 2, "",
                    "nested more than 32 levels deep (counting what the alias repeats)"},
                   {"one alias one level too deep",
                    "a: &a " + std::string(16, '[') + "x" + std::string(16, ']') +
                        "\nb: " + std::string(16, '[') + "*a" + std::string(16, ']') + "\n",
                    2, "", "nested more than 32 levels deep (counting what the alias repeats)"}});
    // ... and one that fits is read: 15 levels in 16 (with the top-level map, 32).
    expect_errors({{"an alias that fits",
                    "a: &a " + std::string(16, '[') + "x" + std::string(16, ']') +
                        "\nb: " + std::string(15, '[') + "*a" + std::string(15, ']') + "\n",
                    1, "a", "unknown field"}});
}

// The largest sensible file, 100,000 allow and 100,000 block prefixes (3.8 MB), is read whole;
// the same with one prefix in both lists names that prefix's line.
TEST(ConfigErrors, HundredThousandPrefixes) {
    std::string text = "allow:\n";
    for (unsigned i = 0; i < 100000; ++i)
        text += "  - 10." + std::to_string(i >> 8 & 0xff) + "." + std::to_string(i & 0xff) + "." +
                std::to_string(i >> 16 << 4) + "/28\n";
    text += "block:\n";
    for (unsigned i = 0; i < 100000; ++i)
        text += "  - 11." + std::to_string(i >> 8 & 0xff) + "." + std::to_string(i & 0xff) + "." +
                std::to_string(i >> 16 << 4) + "/28\n";
    Config c = parse_config(text, kFile);
    EXPECT_EQ(c.allow.size(), 100000u);
    EXPECT_EQ(c.block.size(), 100000u);
    text += "  - 10.0.7.0/28\n";  // allow[7], line 9
    expect_errors({{"one prefix in both", text, 200003, "block[100000]",
                    "10.0.7.0/28 is also in allow[7] (line 9)"}});
}

TEST(ConfigErrors, LongPortList) {
    std::string ports;
    for (int i = 0; i < 65; ++i) ports += (i ? ", " : "") + std::to_string(1000 + i);
    expect_errors({{"65 ports", rule_with_match("{ proto: udp, dst_port: [" + ports + "] }"), 3,
                    "rules[0].match.dst_port[64]", "more than 64 ports or ranges"}});
}

TEST(ConfigErrors, TopLevelNotAMap) {
    expect_errors({
        {"list", "- allow\n- block\n", 1, "", "the top level must be a map, found a list"},
        {"scalar", "\n\nhello\n", 3, "", "the top level must be a map, found a scalar"},
        {"second document", "rules: []\n---\nrules: []\n", 2, "", "more than one YAML document"},
    });
}

TEST(ConfigErrors, UnknownField) {
    expect_errors({
        {"top level", "allow: []\nrulez: []\n", 2, "rulez",
         "unknown field (expected one of: allow, block, table, answers, established, rules)"},
        {"table", "table:\n  entries: 5\n", 2, "table.entries", "unknown field"},
        {"rule", "rules:\n  - name: a\n    " + kLimit + "\n    burst: 5\n", 4, "rules[0].burst",
         "expected one of: name, match, key, algorithm, limit, action, slip, verified_ttl, mode, "
         "on_table_full, reserve, escalate"},
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
         "icmp-unreachable)"},
        {"on_table_full", with("on_table_full: bucket"), 4, "rules[0].on_table_full",
         "(expected one of: shared, pass, drop)"},
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

TEST(ConfigErrors, TooManyRules) {
    std::string yaml = "rules:\n";
    for (size_t i = 0; i <= kMaxRules; ++i)
        yaml += "  - { name: r" + std::to_string(i) + ", " + kLimit + " }\n";
    expect_errors({
        {"257 rules", yaml, 2 + static_cast<int>(kMaxRules), "rules[256]",
         "too many rules (at most 256)"},
    });
}

// A file name of this process's own, so that concurrent test runs do not share files.
std::string temp_path(const char *name) {
    return testing::TempDir() + "floodgate-test-" + std::to_string(getpid()) + "-" + name;
}

TEST(ConfigErrors, FileErrorsNameTheFile) {
    const std::string missing = temp_path("no-such-file.yaml");
    try {
        load_config(missing);
        ADD_FAILURE() << "loaded a missing file";
    } catch (const ConfigError &e) {
        EXPECT_EQ(e.file(), missing);
        EXPECT_EQ(e.line(), 0);
        EXPECT_EQ(e.field(), "");
        EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
    }

    // A directory opens but cannot be read.
    try {
        load_config(testing::TempDir());
        ADD_FAILURE() << "loaded a directory";
    } catch (const ConfigError &e) {
        EXPECT_EQ(e.line(), 0);
        EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
    }

    const std::string path = temp_path("bad.yaml");
    std::ofstream(path) << "rules:\n  - name: a\n    limit: { rate: 10/s, burst: 0 }\n";
    try {
        load_config(path);
        ADD_FAILURE() << "accepted burst 0";
    } catch (const ConfigError &e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_EQ(e.line(), 3);
        EXPECT_EQ(e.field(), "rules[0].limit.burst");
        EXPECT_EQ(std::string(e.what()).rfind(path + ":3: rules[0].limit.burst: ", 0), 0u);
    }
    std::remove(path.c_str());
}

// Bytes this process has passed to read() so far (/proc/self/io's rchar), or -1.
long long bytes_read_so_far() {
    std::ifstream io("/proc/self/io");
    std::string key;
    long long value = 0;
    while (io >> key >> value)
        if (key == "rchar:") return value;
    return -1;
}

// A multi-gigabyte rules file (sparse: truncate(1) makes one in no time and no disk) is refused
// after at most kMaxDocBytes and one more read of it, whatever its size: nothing is read, or
// kept, past the cap.
TEST(ConfigErrors, MultiGigabyteFileIsRefusedAfterTheCap) {
    const std::string path = temp_path("huge.yaml");
    std::ofstream(path) << "rules:\n";
    ASSERT_EQ(truncate(path.c_str(), 3ll << 30), 0) << "cannot make a 3 GiB sparse file";
    const long long before = bytes_read_so_far();
    if (before < 0) GTEST_SKIP() << "no /proc/self/io to count the bytes read";
    try {
        load_rules_file(path);
        ADD_FAILURE() << "loaded a 3 GiB rules file";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), path + ": larger than 4194304 bytes");
    }
    const long long read = bytes_read_so_far() - before;
    std::remove(path.c_str());
    // One read is 64 KiB (rules/load.cpp); a page more for reading /proc/self/io itself.
    EXPECT_LE(read, static_cast<long long>(kMaxDocBytes) + 65536 + 4096);
    EXPECT_GT(read, static_cast<long long>(kMaxDocBytes));
}

// Positive cases.

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
}

Prefix prefix(const char *text) {
    std::string why;
    const std::optional<Prefix> p = parse_prefix(text, &why);
    EXPECT_TRUE(p.has_value()) << why;
    return p.value_or(Prefix{});
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

TEST(Config, AcceptsExactlyMaxRules) {
    std::string yaml = "rules:\n";
    for (size_t i = 0; i < kMaxRules; ++i)
        yaml += "  - { name: r" + std::to_string(i) + ", " + kLimit + " }\n";
    const Config cfg = parse_config(yaml);
    ASSERT_EQ(cfg.rules.size(), kMaxRules);
    EXPECT_EQ(cfg.rules.back().line, 1 + static_cast<int>(kMaxRules));
}

TEST(Config, LoadsFromFile) {
    const std::string path = temp_path("good.yaml");
    std::ofstream(path) << "rules:\n  - name: a\n    " << kLimit << "\n";
    const Config cfg = load_config(path);
    EXPECT_EQ(cfg.path, path);
    ASSERT_EQ(cfg.rules.size(), 1u);
    EXPECT_EQ(cfg.rules[0].line, 2);
    std::remove(path.c_str());
}

// The shipped files. FLOODGATE_SRC is the source tree (meson sets it for tests that need it).
std::string shipped(const char *name) {
    const char *src = std::getenv("FLOODGATE_SRC");
    return src == nullptr ? "" : std::string(src) + "/config/" + name;
}

const Rule *find_rule(const Config &cfg, const std::string &name) {
    for (const Rule &r : cfg.rules)
        if (r.name == name) return &r;
    return nullptr;
}

TEST(ShippedConfig, DefaultLoads) {
    const std::string path = shipped("default.yaml");
    if (path.empty()) GTEST_SKIP() << "FLOODGATE_SRC is not set";
    const Config cfg = load_config(path);
    EXPECT_EQ(cfg.allow, std::vector<Prefix>{prefix("198.18.200.0/24")});
    EXPECT_EQ(cfg.block,
              (std::vector<Prefix>{prefix("198.19.255.0/24"), prefix("2001:db8:bad::/48")}));
    EXPECT_EQ(cfg.table_entries_per_core, 1048576u);
    ASSERT_EQ(cfg.rules.size(), 4u);
    EXPECT_EQ(cfg.rules[0].name, "dns");
    EXPECT_EQ(cfg.rules[1].name, "syn");
    EXPECT_EQ(cfg.rules[2].name, "icmp");
    EXPECT_EQ(cfg.rules[3].name, "all");

    const Rule &dns = cfg.rules[0];
    EXPECT_EQ(dns.match.proto, 17);
    ASSERT_EQ(dns.match.dst_ports.size(), 1u);
    EXPECT_EQ(dns.match.dst_ports[0].lo, 53);
    EXPECT_EQ(dns.interval_ns(), 100'000'000u);
    EXPECT_EQ(dns.burst_pkts, 5u);

    const Rule &syn = cfg.rules[1];
    EXPECT_EQ(syn.match.proto, 6);
    EXPECT_EQ(syn.match.tcp_flags.must_set, 0x02);
    EXPECT_EQ(syn.match.tcp_flags.must_clear, 0x10);
    EXPECT_EQ(syn.rate_count, 20u);
    EXPECT_EQ(syn.burst_pkts, 10u);

    const Rule &icmp = cfg.rules[2];
    EXPECT_EQ(icmp.match.proto, 1);
    EXPECT_EQ(icmp.rate_count, 5u);
    EXPECT_EQ(icmp.burst_pkts, 5u);

    const Rule &all = cfg.rules[3];
    EXPECT_FALSE(all.match.proto.has_value());
    EXPECT_EQ(all.key_ipv4_len, 32);
    EXPECT_EQ(all.key_ipv6_len, 64);
    EXPECT_EQ(all.rate_count, 1000u);
    EXPECT_EQ(all.burst_pkts, 200u);
    for (const Rule &r : cfg.rules) EXPECT_EQ(r.mode, RuleMode::enforce) << r.name;
}

TEST(ShippedConfig, ExampleFullLoads) {
    const std::string path = shipped("example-full.yaml");
    if (path.empty()) GTEST_SKIP() << "FLOODGATE_SRC is not set";
    const Config cfg = load_config(path);
    bool shadow = false, table_full_pass = false, table_full_drop = false, port_list = false,
         escalates = false, payload = false;
    bool algorithms[4] = {};
    for (const Rule &r : cfg.rules) {
        algorithms[static_cast<unsigned>(r.algorithm)] = true;
        shadow = shadow || r.mode == RuleMode::shadow;
        table_full_pass = table_full_pass || r.on_table_full == TableFullPolicy::pass;
        table_full_drop = table_full_drop || r.on_table_full == TableFullPolicy::drop;
        for (const PortRange &p : r.match.dst_ports) port_list = port_list || p.lo < p.hi;
        escalates = escalates || r.escalate.enabled();
        payload = payload || r.match.payload.present();
    }
    EXPECT_TRUE(payload || !payload_engine_available());
    EXPECT_TRUE(escalates);
    EXPECT_TRUE(shadow);
    EXPECT_TRUE(table_full_pass);
    EXPECT_TRUE(table_full_drop);
    EXPECT_TRUE(port_list);
    for (bool used : algorithms) EXPECT_TRUE(used);  // every algorithm appears
    EXPECT_FALSE(cfg.allow.empty());
    EXPECT_FALSE(cfg.block.empty());
    EXPECT_NE(find_rule(cfg, "web-from-partners"), nullptr);
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

// ---------------------------------------------------------------------------------------------
// Aggregate keys, reserves and the established options (issue 11).

// A rule "a" with the given lines after its name (each indented as a rule field).
std::string rule_lines(const std::vector<std::string> &lines) {
    std::string s = "rules:\n  - name: a\n";
    for (const std::string &l : lines) s += "    " + l + "\n";
    return s;
}

const std::string kAggLimit = "limit: { rate: 100/s, burst: 10 }";

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

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

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
         "unknown field (expected one of: after, min_refused_rate, ttl)"},
        {"ttl over a day", rule("key: { ipv4: 24 }", "{ ttl: 2d }"), 5, "rules[0].escalate.ttl",
         "longer than a day"},
        {"rate without unit", rule("key: { ipv4: 24 }", "{ min_refused_rate: 100 }"), 5,
         "rules[0].escalate.min_refused_rate", "has no unit"},
    });
}

}  // namespace
}  // namespace floodgate
