// Rules files as a whole: the error's form and its control-protocol reply, YAML syntax,
// hostile files (sizes, nesting, one-typo files, alias bombs, 100,000 prefixes, a 3 GiB file),
// the rule count's limit, files that cannot be read, and the shipped config/ files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/patterns/payload_database.h"
#include "rules/config_error_reply.h"
#include "rules/load.h"
#include "tests/config_cases.h"

namespace floodgate::config_test {
namespace {

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

TEST(ConfigErrors, TopLevelNotAMap) {
    expect_errors({
        {"list", "- allow\n- block\n", 1, "", "the top level must be a map, found a list"},
        {"scalar", "\n\nhello\n", 3, "", "the top level must be a map, found a scalar"},
        {"second document", "rules: []\n---\nrules: []\n", 2, "", "more than one YAML document"},
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

TEST(Config, AcceptsExactlyMaxRules) {
    std::string yaml = "rules:\n";
    for (size_t i = 0; i < kMaxRules; ++i)
        yaml += "  - { name: r" + std::to_string(i) + ", " + kLimit + " }\n";
    const Config cfg = parse_config(yaml);
    ASSERT_EQ(cfg.rules.size(), kMaxRules);
    EXPECT_EQ(cfg.rules.back().line, 1 + static_cast<int>(kMaxRules));
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
         escalates = false, payload = false, shapes = false, adapts = false, exact_top = false;
    bool algorithms[4] = {};
    for (const Rule &r : cfg.rules) {
        algorithms[static_cast<unsigned>(r.algorithm)] = true;
        shadow = shadow || r.mode == RuleMode::shadow;
        table_full_pass = table_full_pass || r.on_table_full == TableFullPolicy::pass;
        table_full_drop = table_full_drop || r.on_table_full == TableFullPolicy::drop;
        for (const PortRange &p : r.match.dst_ports) port_list = port_list || p.lo < p.hi;
        escalates = escalates || r.escalate.enabled();
        payload = payload || r.match.payload.present();
        shapes = shapes || r.action == RuleAction::shape;
        adapts = adapts || r.adaptive.enabled;
        exact_top = exact_top || r.top_offenders == TopOffenders::exact;
    }
    EXPECT_TRUE(exact_top);
    EXPECT_TRUE(shapes);
    EXPECT_TRUE(adapts);
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
}  // namespace floodgate::config_test
