// The NIC tier's per-rule series (control/metrics/nic_tier_metrics.h): of the dataplane's
// nic_tier.top_by_hits, exactly the N rules with most hits, ties in prefix order (family,
// length, address, then origin), whatever the rows' order; the sums over every rule as the
// stats give them; odd rows left out and counted; and the scrape passes promtool's lint.
// Expected series are written out here by hand, not computed by the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "control/metrics/metrics.h"
#include "dataplane/api/nic_stats.h"

namespace floodgate {
namespace {

using nlohmann::json;

std::vector<std::string> samples_of(const std::string &text, const std::string &name) {
    std::vector<std::string> samples;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l.rfind('#', 0) != 0 && l.substr(0, l.find_first_of("{ ")) == name)
            samples.push_back(l);
    return samples;
}

json row(const std::string &prefix, const char *origin, uint64_t hits, uint64_t bytes) {
    return {
        {"prefix", prefix}, {"origin", origin}, {"rule", "dns"}, {"hits", hits}, {"bytes", bytes}};
}

json nic_stats(json top) {
    return {{"nic_tier",
             {{"port", "net_memif0"},
              {"rules", 30},
              {"rules_by_origin", {{"block", 1}, {"escalated", 29}}},
              {"hits", 9000},
              {"bytes", 540000},
              {"held_hits", 7000},
              {"held_bytes", 420000},
              {"withdrawn_hits", 2000},
              {"withdrawn_bytes", 120000},
              {"top_by_hits", std::move(top)}}}};
}

std::string scrape(const json &stats, size_t top_rules) {
    MetricsInput in;
    in.dataplane_up = true;
    in.stats = &stats;
    in.nic_top_rules = top_rules;
    return prometheus_text(in);
}

std::string hits_line(const std::string &prefix, const char *origin, uint64_t hits) {
    return "floodgate_nic_rule_hits{port=\"net_memif0\",prefix=\"" + prefix + "\",origin=\"" +
           origin + "\"} " + std::to_string(hits);
}

// 30 rules, listed lowest hits first: 26 light ones (hits 1 to 26 under 10.1.0.0/16), then
// four that tie at 500 in an order that is not prefix order, with one heavier block.
json thirty_rules() {
    json top = json::array();
    for (int i = 1; i <= 25; ++i)
        top.push_back(row("10.1.0." + std::to_string(i) + "/32", "escalated", i, 60 * i));
    top.push_back(row("2001:db8::/64", "escalated", 500, 30000));
    top.push_back(row("10.0.0.10/32", "escalated", 500, 30000));
    top.push_back(row("10.0.0.9/32", "escalated", 500, 30000));
    top.push_back(row("10.0.0.0/24", "escalated", 500, 30000));
    top.push_back(row("203.0.113.0/24", "block", 4000, 240000));
    return top;
}

TEST(NicRuleMetrics, ExactlyTheTopNOfMoreRulesTiesInPrefixOrder) {
    const std::string text = scrape(nic_stats(thirty_rules()), 6);
    // 4000 first; the four at 500 by family, then length (/24 before /32), then address (9
    // before 10, which text order would reverse), IPv6 last; then the heaviest light one.
    const std::vector<std::string> want = {
        hits_line("203.0.113.0/24", "block", 4000),   hits_line("10.0.0.0/24", "escalated", 500),
        hits_line("10.0.0.9/32", "escalated", 500),   hits_line("10.0.0.10/32", "escalated", 500),
        hits_line("2001:db8::/64", "escalated", 500), hits_line("10.1.0.25/32", "escalated", 25),
    };
    EXPECT_EQ(samples_of(text, "floodgate_nic_rule_hits"), want) << text;
    const std::vector<std::string> bytes = samples_of(text, "floodgate_nic_rule_bytes");
    ASSERT_EQ(bytes.size(), 6u);
    EXPECT_EQ(bytes[0],
              "floodgate_nic_rule_bytes{port=\"net_memif0\",prefix=\"203.0.113.0/24\","
              "origin=\"block\"} 240000");
    EXPECT_EQ(bytes[5],
              "floodgate_nic_rule_bytes{port=\"net_memif0\",prefix=\"10.1.0.25/32\","
              "origin=\"escalated\"} 1500");
    // A cut through the tie keeps the first in prefix order.
    EXPECT_EQ(samples_of(scrape(nic_stats(thirty_rules()), 3), "floodgate_nic_rule_hits"),
              std::vector<std::string>(want.begin(), want.begin() + 3));
    // The sums cover every rule, not the six shown.
    for (const char *line :
         {"floodgate_nic_held_hits 7000", "floodgate_nic_held_bytes 420000",
          "floodgate_nic_withdrawn_hits_total 2000", "floodgate_nic_withdrawn_bytes_total 120000",
          "floodgate_nic_hits_total 9000", "floodgate_nic_rule_rows_unreadable 0"})
        EXPECT_EQ(samples_of(text, std::string(line).substr(0, std::string(line).find(' '))),
                  std::vector<std::string>{line});
}

TEST(NicRuleMetrics, TwentyByDefaultAndNeverPastTheCap) {
    json many = json::array();
    for (int i = 0; i < 250; ++i)
        many.push_back(row("10.2." + std::to_string(i) + ".0/24", "escalated", 1000 - i, 1));
    EXPECT_EQ(
        samples_of(scrape(nic_stats(many), kDefaultNicTopRules), "floodgate_nic_rule_hits").size(),
        20u);
    const std::vector<std::string> capped =
        samples_of(scrape(nic_stats(many), 1000), "floodgate_nic_rule_hits");
    ASSERT_EQ(capped.size(), size_t{kNicTopRules});
    EXPECT_EQ(capped.back(), hits_line("10.2.99.0/24", "escalated", 901));
    // Fewer rules than N: each once.
    EXPECT_EQ(samples_of(scrape(nic_stats(thirty_rules()), 50), "floodgate_nic_rule_hits").size(),
              30u);
}

TEST(NicRuleMetrics, OddRowsAreLeftOutAndCounted) {
    json top = json::array();
    top.push_back(row("198.51.100.1/32", "escalated", UINT64_MAX, 7));  // the top of 64 bits
    top.push_back(row("198.51.100.2/32", "escalated", 3, 180));
    top.push_back(42);                                                    // not an object
    top.push_back({{"origin", "escalated"}, {"hits", 1}, {"bytes", 1}});  // no prefix
    top.push_back(row("10.0.0.1/8", "escalated", 9, 9));                  // host bits set: refused
    top.push_back(row("not a prefix", "escalated", 9, 9));
    top.push_back({{"prefix", "198.51.100.3/32"}, {"origin", 4}, {"hits", 9}, {"bytes", 9}});
    top.push_back({{"prefix", "198.51.100.4/32"}, {"origin", "block"}, {"hits", -1}, {"bytes", 9}});
    top.push_back(
        {{"prefix", "198.51.100.5/32"}, {"origin", "block"}, {"hits", 1.5}, {"bytes", 9}});
    top.push_back(json::parse(
        R"({"prefix": "198.51.100.6/32", "origin": "block", "hits": 1e30, "bytes": 9})"));
    top.push_back(
        {{"prefix", "198.51.100.7/32"}, {"origin", "block"}, {"hits", "9"}, {"bytes", 9}});
    top.push_back({{"prefix", "198.51.100.8/32"}, {"origin", "block"}, {"hits", 9}});  // no bytes
    top.push_back(row("198.51.100.2/32", "escalated", 2, 120));  // a second of the same rule
    const std::string text = scrape(nic_stats(top), 20);
    EXPECT_EQ(samples_of(text, "floodgate_nic_rule_hits"),
              (std::vector<std::string>{hits_line("198.51.100.1/32", "escalated", UINT64_MAX),
                                        hits_line("198.51.100.2/32", "escalated", 3)}))
        << text;
    EXPECT_EQ(samples_of(text, "floodgate_nic_rule_rows_unreadable"),
              std::vector<std::string>{"floodgate_nic_rule_rows_unreadable 11"});

    // No list, or not a list: the families with no sample, nothing counted.
    for (const json &odd : {json(nullptr), json("rows"), json::object()}) {
        json stats = nic_stats(odd);
        const std::string t = scrape(stats, 20);
        EXPECT_NE(t.find("# TYPE floodgate_nic_rule_hits gauge\n"), std::string::npos);
        EXPECT_TRUE(samples_of(t, "floodgate_nic_rule_hits").empty());
        EXPECT_TRUE(samples_of(t, "floodgate_nic_rule_rows_unreadable").empty());
    }
}

// promtool's own reading of the scrape: it parses, and its lint finds nothing (a counter
// without _total, a gauge with it, a missing HELP). Skipped where promtool is not installed.
TEST(NicRuleMetrics, PromtoolChecksTheScrape) {
    if (std::system("command -v promtool > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "promtool not installed";
    const std::string text = scrape(nic_stats(thirty_rules()), 6);
    const std::string out_path = testing::TempDir() + "nic_rule_metrics_promtool.txt";
    FILE *p = popen(("promtool check metrics > " + out_path + " 2>&1").c_str(), "w");
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), p), text.size());
    const int status = pclose(p);
    std::string said;
    if (FILE *f = std::fopen(out_path.c_str(), "r")) {
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) said.append(buf, n);
        std::fclose(f);
    }
    std::remove(out_path.c_str());
    EXPECT_EQ(status, 0) << said << "\n" << text;
    EXPECT_EQ(said, "");
}

}  // namespace
}  // namespace floodgate
