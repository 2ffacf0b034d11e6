// The payload compile budget (issue 31, dataplane/patterns/compile_budget.h): a regex's weight,
// one database per distinct pattern list, and the ruleset's budget over the distinct lists,
// refused with file, line and field before anything is compiled. The weights below are counted
// by hand from the rule in compile_budget.h, not by the code under test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config_cases.h"
#include "dataplane/patterns/compile_budget.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/load.h"

namespace floodgate {
namespace {

using config_test::ErrorCase;
using config_test::expect_errors;
using config_test::kFile;

TEST(RegexWeight, OneAnAtomARepeatItsUpperBoundTimesWhatItRepeats) {
    const struct {
        const char *regex;
        uint64_t weight;
    } cases[] = {
        {"abc", 3},
        {"a{5}", 5},
        {"a{2,7}", 7},
        {"a{4,}", 4},   // unbounded: the copies its lower bound asks for
        {"a*b+c?", 3},  // loops and options copy nothing
        {"(ab){3}", 6},
        {"(a|bb)", 3},  // every alternative is compiled
        {"(a|aa)+1$", 5},
        {"a.{0,1000}b", 1002},
        {"[a-z0-9]{20}[^q]{30}x", 51},           // a class is one atom
        {"[]a]{2}", 2},                          // ']' first is a member of the class
        {"\\d{3}\\{", 4},                        // an escape is one atom, \{ too
        {"(a{10}){10}", 100},                    // nested repeats multiply
        {"a{x}", 4},                             // not a quantifier: four literal characters
        {"(a{100}){100}", kMaxRegexWeight + 1},  // saturates past the per-regex bound
        {"a.{0,1000}b.{0,1000}c", kMaxRegexWeight + 1},
        {"[[:alpha:])]{3}", 3},  // a POSIX class inside a class, ')' a member
        {"([[:alpha:])].{0,500}){500}", kMaxRegexWeight + 1},
        {"\\x{41}{30}", 30},  // \x{..} is one atom, not a repeat
        // what this reading cannot see into weighs the most
        {"(?#[)(.{0,500}){500}", kMaxRegexWeight + 1},
        {"(?x)(.{0,500}) {500}", kMaxRegexWeight + 1},
        {"\\Q[\\E(a)", kMaxRegexWeight + 1},
        // not well formed: weighed as it stands (Hyperscan refuses them with its own message)
        {"a)", 2},
        {"(a", 1},
        {"[ab", 1},
        {"(?i)abc",
         4},  // flags without x: read as a group of one atom (i; ? copies nothing), then abc
    };
    for (const auto &c : cases) EXPECT_EQ(regex_weight(c.regex), c.weight) << c.regex;
}

std::string regexes(unsigned n, const char *prefix = "") {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
        s += std::string(i ? ", " : "") + "{ regex: '" + prefix + "(a|aa)+" + std::to_string(i) +
             "$' }";
    return s + "]";
}

std::string literals(unsigned n, const char *prefix) {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
        s += std::string(i ? ", " : "") + "'" + prefix + std::to_string(i) + "'";
    return s + "]";
}

// Rule i matches udp port 1000 + i; the first carries `list` as the anchor &p, the others
// alias it, or carry others[i - 1] when given.
std::string rules_file(unsigned rules, const std::string &list,
                       const std::vector<std::string> &others = {}) {
    std::string s = "rules:\n";
    for (unsigned i = 0; i < rules; ++i) {
        s += "  - name: r" + std::to_string(i) + "\n";
        s += "    match:\n      proto: udp\n      dst_port: " + std::to_string(1000 + i) + "\n";
        if (i == 0)
            s += "      payload: { patterns: &p " + list + " }\n";
        else if (i - 1 < others.size())
            s += "      payload: { patterns: " + others[i - 1] + " }\n";
        else
            s += "      payload: { patterns: *p }\n";
        s += "    limit: { rate: 1/s, burst: 1 }\n";
    }
    return s;
}

class PayloadBudget : public testing::Test {
  protected:
    void SetUp() override {
        if (!payload_engine_available()) GTEST_SKIP() << "built without Hyperscan";
    }
};

TEST_F(PayloadBudget, RulesThatShareAListShareOneDatabase) {
    // Three aliases of one list, one rule writing the same list again, one other list.
    const std::string list = literals(3, "x");
    const Config cfg =
        parse_config(rules_file(5, list, {"*p", "*p", list, literals(3, "y")}), kFile);
    ASSERT_EQ(cfg.rules.size(), 5u);
    const auto &db = cfg.rules[0].match.payload.compiled;
    ASSERT_TRUE(db);
    EXPECT_EQ(cfg.rules[1].match.payload.compiled, db);
    EXPECT_EQ(cfg.rules[2].match.payload.compiled, db);
    EXPECT_EQ(cfg.rules[3].match.payload.compiled, db);  // equal, though written twice
    ASSERT_TRUE(cfg.rules[4].match.payload.compiled);
    EXPECT_NE(cfg.rules[4].match.payload.compiled, db);
}

TEST_F(PayloadBudget, AListAliasedByManyRulesIsCountedOnce) {
    // 900 regexes: under the 1,000; aliased by 45 rules, 40,500 written, one list compiled.
    // Weights: (a|aa) 3, + 0, the digits 1-3, $ 1: 10x5 + 90x6 + 800x7 = 6,190 is over 5,000,
    // so the list is 600 regexes: 10x5 + 90x6 + 500x7 = 4,090.
    const Config cfg = parse_config(rules_file(45, regexes(600)), kFile);
    ASSERT_EQ(cfg.rules.size(), 45u);
    for (const Rule &r : cfg.rules)
        EXPECT_EQ(r.match.payload.compiled, cfg.rules[0].match.payload.compiled);
}

TEST_F(PayloadBudget, TheRulesetsBudgetRefusesBeforeCompiling) {
    std::vector<ErrorCase> cases = {
        {"10,000 regexes in one rule (the first of issue 31's slow files)",
         rules_file(1, regexes(10000)), 6, "rules[0].match.payload.patterns",
         "10000 regexes, over the ruleset's budget of 1000"},
        {"the same list aliased by 20 rules: refused at the first, counted once",
         rules_file(20, regexes(10000)), 6, "rules[0].match.payload.patterns",
         "10000 regexes, over the ruleset's budget of 1000"},
        {"three distinct lists of 8,000 literals: the third passes 20,000",
         rules_file(3, literals(8000, "a"), {literals(8000, "b"), literals(8000, "c")}), 18,
         "rules[2].match.payload.patterns",
         "24000 payload patterns, over the ruleset's budget of 20000"},
        {"600 + 400 regexes: 1,000 regexes but 4,090 + 10x6 + 90x7 + 300x8 = 7,180 of weight",
         rules_file(2, regexes(600), {regexes(400, "b")}), 12, "rules[1].match.payload.patterns",
         "of regex weight"},
        {"one regex weighing over 1,024", rules_file(1, "[{ regex: 'a.{0,1000}b.{0,1000}c' }]"), 6,
         "rules[0].match.payload.patterns[0].regex", "weighs over 1024"},
    };
    // 1 MiB of pattern bytes in 2 lists of 1,000 literals of 600 bytes: 1,200,000 bytes.
    const std::string long_a(590, 'a'), long_b(590, 'b');
    cases.push_back(
        {"1,200,000 bytes of patterns over 1 MiB",
         rules_file(2, literals(1000, long_a.c_str()), {literals(1000, long_b.c_str())}), 12,
         "rules[1].match.payload.patterns",
         "bytes of payload patterns, over the ruleset's budget of 1048576"});
    expect_errors(cases);
}

TEST_F(PayloadBudget, ABadPatternIsStillNamedByItsIndex) {
    expect_errors(
        {{"an empty-matching regex in an aliased list", rules_file(3, "['abc', { regex: 'x*' }]"),
          6, "rules[0].match.payload.patterns[1]", "pattern 1: "}});
}

}  // namespace
}  // namespace floodgate
