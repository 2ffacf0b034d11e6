// What the rules-file tests share (tests/test_config.cpp, test_config_errors.cpp,
// test_config_files.cpp): the refused-file case and its check of where the error points, the
// smallest rule bodies around the field under test, and file names of this process's own.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "rules/load.h"

namespace floodgate::config_test {

inline constexpr const char *kFile = "rules.yaml";

// One refused config: where the error must point. The line is 1-based, 0 for "no line".
struct ErrorCase {
    const char *description;
    std::string yaml;
    int line;
    const char *field;
    const char *reason;  // a piece of the message
};

inline void expect_errors(const std::vector<ErrorCase> &cases) {
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
inline const std::string kLimit = "limit: { rate: 1/s, burst: 1 }";

// A config holding one rule "r" whose match is the given flow map.
inline std::string rule_with_match(const std::string &match) {
    return "rules:\n  - name: r\n    match: " + match + "\n    " + kLimit + "\n";
}

// A rule "a" with the given lines after its name (each indented as a rule field).
inline std::string rule_lines(const std::vector<std::string> &lines) {
    std::string s = "rules:\n  - name: a\n";
    for (const std::string &l : lines) s += "    " + l + "\n";
    return s;
}

// The limit of the aggregate-key cases (issue 11): a burst the default reserve leaves room in.
inline const std::string kAggLimit = "limit: { rate: 100/s, burst: 10 }";

// A file name of this process's own, so that concurrent test runs do not share files.
inline std::string temp_path(const char *name) {
    return testing::TempDir() + "floodgate-test-" + std::to_string(getpid()) + "-" + name;
}

inline Prefix prefix(const char *text) {
    std::string why;
    const std::optional<Prefix> p = parse_prefix(text, &why);
    EXPECT_TRUE(p.has_value()) << why;
    return p.value_or(Prefix{});
}

}  // namespace floodgate::config_test
