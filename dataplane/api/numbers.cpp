#include "dataplane/api/numbers.h"

#include <cstdio>

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

constexpr uint64_t kNsPerSecond = 1000000000;
constexpr unsigned kMaxDecimals = 9;  // nanoseconds

bool is_digit(char c) {
    return c >= '0' && c <= '9';  // not std::isdigit: no locale may widen what a digit is
}

// Reads the digits at text[*at...] into *value; false when there are none or when the value
// would pass max (the digits are still consumed, so a caller can tell "too big" from "junk").
bool read_digits(std::string_view text, size_t *at, uint64_t max, uint64_t *value) {
    const size_t start = *at;
    bool fits = true;
    uint64_t v = 0;
    for (; *at < text.size() && is_digit(text[*at]); ++*at) {
        const uint64_t d = static_cast<uint64_t>(text[*at] - '0');
        if (d > max || v > (max - d) / 10)
            fits = false;
        else if (fits)
            v = v * 10 + d;
    }
    *value = v;
    return *at > start && fits;
}

// Appends 'text' quoted. Built by appending: GCC 12 warns (-Wrestrict, a false positive) on
// "literal" + std::string temporaries.
void append_quoted(std::string *out, std::string_view text) {
    *out += '\'';
    *out += text;
    *out += '\'';
}

// Nanoseconds as seconds, with only the decimals needed: 100000000 -> "0.1".
std::string format_seconds(uint64_t ns) {
    std::string out = std::to_string(ns / kNsPerSecond);
    uint64_t frac = ns % kNsPerSecond;
    if (frac != 0) {
        std::string digits = std::to_string(frac);
        digits.insert(0, kMaxDecimals - digits.size(), '0');
        while (digits.back() == '0') digits.pop_back();
        out += '.';
        out += digits;
    }
    return out;
}

}  // namespace

std::optional<uint64_t> parse_uint(std::string_view text, uint64_t lo, uint64_t hi,
                                   std::string *why) {
    size_t at = 0;
    uint64_t v = 0;
    if (read_digits(text, &at, UINT64_MAX, &v) && at == text.size() && v >= lo && v <= hi) return v;
    *why = "takes a whole number from ";
    *why += std::to_string(lo);
    *why += " to ";
    *why += std::to_string(hi);
    *why += ", not ";
    append_quoted(why, text);
    return std::nullopt;
}

std::optional<uint64_t> parse_seconds_ns(std::string_view text, uint64_t lo_ns, uint64_t hi_ns,
                                         std::string *why) {
    size_t at = 0;
    uint64_t whole = 0, frac = 0;
    // One second less than fits, so that adding the fraction cannot wrap either.
    bool ok = read_digits(text, &at, UINT64_MAX / kNsPerSecond - 1, &whole);
    if (ok && at < text.size() && text[at] == '.') {
        const size_t first = ++at;
        ok = read_digits(text, &at, UINT64_MAX, &frac) && at - first <= kMaxDecimals;
        for (size_t n = at - first; ok && n < kMaxDecimals; ++n) frac *= 10;
    }
    const uint64_t ns = whole * kNsPerSecond + frac;
    if (ok && at == text.size() && ns >= lo_ns && ns <= hi_ns) return ns;
    *why = "takes seconds from ";
    *why += format_seconds(lo_ns);
    *why += " to ";
    *why += format_seconds(hi_ns);
    *why += " (like 5 or 0.5), not ";
    append_quoted(why, text);
    return std::nullopt;
}

std::optional<long long> parse_duration_s(const std::string &text, std::string *why) {
    const auto refuse = [&](const char *reason) {
        *why = "takes a duration from 1s to ";
        *why += format_duration_s(kMaxOverrideTtlSeconds);
        *why += " (like 90s, 15m, 2h, 1d, 1h30m): ";
        append_quoted(why, text);
        *why += ' ';
        *why += reason;
        return std::nullopt;
    };
    if (text.empty()) return refuse("is empty");
    const uint64_t max = static_cast<uint64_t>(kMaxOverrideTtlSeconds);
    uint64_t total = 0;
    for (size_t at = 0; at < text.size();) {
        uint64_t n = 0;
        if (!is_digit(text[at])) return refuse("is not a number with a unit");
        if (!read_digits(text, &at, max, &n)) return refuse("is longer than ten years");
        if (at == text.size()) return refuse("needs a unit (s, m, h, d) after every number");
        uint64_t unit_s;
        switch (text[at++]) {
            case 's':
                unit_s = 1;
                break;
            case 'm':
                unit_s = 60;
                break;
            case 'h':
                unit_s = 3600;
                break;
            case 'd':
                unit_s = 86400;
                break;
            default:
                return refuse("has an unknown unit (s, m, h or d)");
        }
        // n <= max and unit_s <= 86400: the product fits easily in 64 bits.
        total += n * unit_s;
        if (total > max) return refuse("is longer than ten years");
    }
    if (total < 1) return refuse("is shorter than 1s");
    return static_cast<long long>(total);
}

std::string format_duration_s(long long s) {
    std::string out;
    if (s >= 86400) out += std::to_string(s / 86400) + "d", s %= 86400;
    if (s >= 3600) out += std::to_string(s / 3600) + "h", s %= 3600;
    if (s >= 60) out += std::to_string(s / 60) + "m", s %= 60;
    if (s > 0 || out.empty()) out += std::to_string(s) + "s";
    return out;
}

bool uint_option(const char *command, const char *option, std::string_view text, uint64_t lo,
                 uint64_t hi, uint64_t *out) {
    std::string why;
    const std::optional<uint64_t> n = parse_uint(text, lo, hi, &why);
    if (!n) {
        std::fprintf(stderr, "%s: %s %s\n", command, option, why.c_str());
        return false;
    }
    *out = *n;
    return true;
}

}  // namespace floodgate
