// How operators' numbers are read (dataplane/api/numbers.h): one table per parser, every
// looseness of the library readers it replaces among the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/numbers.h"

namespace floodgate {
namespace {

constexpr uint64_t kMsNs = 1000000;
constexpr uint64_t kSecondNs = 1000 * kMsNs;

struct UintCase {
    const char *text;
    uint64_t lo, hi;
    std::optional<uint64_t> want;  // nullopt: refused
};

const UintCase kUintCases[] = {
    {"1", 1, 64, 1},
    {"64", 1, 64, 64},
    {"010", 1, 64, 10},  // decimal, not octal
    {"0", 0, 65535, 0},
    {"18446744073709551615", 0, UINT64_MAX, UINT64_MAX},
    {"0", 1, 64, std::nullopt},
    {"65", 1, 64, std::nullopt},
    {"", 1, 64, std::nullopt},
    {"-5", 1, 64, std::nullopt},  // strtoul: 2^64 - 5
    {"-0", 0, 64, std::nullopt},  // a sign, even on zero
    {"+5", 1, 64, std::nullopt},
    {" 5", 1, 64, std::nullopt},  // strtoul skips leading spaces
    {"5 ", 1, 64, std::nullopt},
    {"3x", 1, 64, std::nullopt},    // atoi and std::stoi: 3
    {"0x10", 0, 64, std::nullopt},  // strtoul base 0: 16
    {"1e3", 1, 5000, std::nullopt},
    {"1.0", 1, 64, std::nullopt},
    {"18446744073709551616", 0, UINT64_MAX, std::nullopt},  // 2^64: does not wrap to 0
    {"99999999999999999999999999", 0, UINT64_MAX, std::nullopt},
    {"\xd9\xa1", 0, 64, std::nullopt},  // ARABIC-INDIC DIGIT ONE: ASCII digits only
};

TEST(Numbers, WholeNumbersAreDigitsOnlyAndInRange) {
    for (const UintCase &c : kUintCases) {
        std::string why;
        EXPECT_EQ(parse_uint(c.text, c.lo, c.hi, &why), c.want) << "'" << c.text << "'";
        if (!c.want) {
            // The message states the range and quotes what was typed.
            const std::string range = std::to_string(c.lo) + " to " + std::to_string(c.hi);
            EXPECT_NE(why.find(range), std::string::npos) << why;
            EXPECT_NE(why.find(std::string("'") + c.text + "'"), std::string::npos) << why;
        }
    }
}

struct SecondsCase {
    const char *text;
    std::optional<uint64_t> want_ns;
};

// Within 0.1 s to 1 day, --stats-interval's range.
const SecondsCase kSecondsCases[] = {
    {"5", 5 * kSecondNs},
    {"0.5", 500 * kMsNs},
    {"0.1", 100 * kMsNs},
    {"86400", 86400 * kSecondNs},
    {"1.000000001", kSecondNs + 1},  // nine decimals: exact in nanoseconds
    {"007.250", 7250 * kMsNs},
    {"-5", std::nullopt},  // std::stod: -5, and then nothing was ever printed
    {"+5", std::nullopt},
    {"1e3", std::nullopt},  // std::stod: 1000
    {"nan", std::nullopt},
    {"inf", std::nullopt},
    {"0x1p3", std::nullopt},  // std::stod: 8
    {".5", std::nullopt},
    {"5.", std::nullopt},
    {"5.5.5", std::nullopt},
    {"1.0000000001", std::nullopt},  // ten decimals
    {" 5", std::nullopt},
    {"5s", std::nullopt},
    {"", std::nullopt},
    {"0", std::nullopt},
    {"0.09", std::nullopt},
    {"86400.5", std::nullopt},
    {"18446744073.709551615", std::nullopt},  // 2^64 - 1 ns: must not wrap into range
    {"99999999999999999999", std::nullopt},
};

TEST(Numbers, SecondsAreDecimalAndInRange) {
    for (const SecondsCase &c : kSecondsCases) {
        std::string why;
        EXPECT_EQ(parse_seconds_ns(c.text, 100 * kMsNs, 86400 * kSecondNs, &why), c.want_ns)
            << "'" << c.text << "'";
        if (!c.want_ns) {
            EXPECT_NE(why.find("from 0.1 to 86400"), std::string::npos) << why;
            EXPECT_NE(why.find(std::string("'") + c.text + "'"), std::string::npos) << why;
        }
    }
    std::string why;
    // The largest value there is, when the range allows it.
    EXPECT_EQ(parse_seconds_ns("18446744072.999999999", 0, UINT64_MAX, &why),
              18446744072999999999ull);
}

struct DurationCase {
    const char *text;
    std::optional<long long> want_s;
    const char *why_has = "";  // for a refusal: part of the reason
};

const DurationCase kDurationCases[] = {
    {"90s", 90},
    {"15m", 900},
    {"2h", 7200},
    {"1d", 86400},
    {"1h30m", 5400},
    {"1d1h1m1s", 90061},
    {"3660d", kMaxOverrideTtlSeconds},
    {"15", std::nullopt, "needs a unit (s, m, h, d)"},  // was 15 seconds
    {"90", std::nullopt, "needs a unit (s, m, h, d)"},
    {"1h30", std::nullopt, "needs a unit (s, m, h, d)"},
    {"", std::nullopt, "empty"},
    {"0s", std::nullopt, "shorter than 1s"},
    {"0m0s", std::nullopt, "shorter than 1s"},
    {"-5m", std::nullopt, "not a number"},
    {"+5m", std::nullopt, "not a number"},
    {" 5m", std::nullopt, "not a number"},
    {"m", std::nullopt, "not a number"},
    {"5x", std::nullopt, "unknown unit"},
    {"5M", std::nullopt, "unknown unit"},
    {"5m ", std::nullopt, "not a number"},
    {"1.5h", std::nullopt, "unknown unit"},
    {"3661d", std::nullopt, "longer than ten years"},
    {"3660d1s", std::nullopt, "longer than ten years"},
    {"99999999999999999999s", std::nullopt, "longer than ten years"},
};

TEST(Numbers, DurationsNeedAUnitOnEveryNumber) {
    for (const DurationCase &c : kDurationCases) {
        std::string why;
        EXPECT_EQ(parse_duration_s(c.text, &why), c.want_s) << "'" << c.text << "'";
        if (!c.want_s) {
            EXPECT_NE(why.find("from 1s to 3660d"), std::string::npos) << why;
            EXPECT_NE(why.find(c.why_has), std::string::npos) << c.text << ": " << why;
        }
    }
}

TEST(Numbers, DurationsForPeople) {
    EXPECT_EQ(format_duration_s(5400), "1h30m");
    EXPECT_EQ(format_duration_s(0), "0s");
    EXPECT_EQ(format_duration_s(90061), "1d1h1m1s");
}

}  // namespace
}  // namespace floodgate
