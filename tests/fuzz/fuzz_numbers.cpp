// The small parsers of what operators type (dataplane/api/prefix.h, numbers.h). Every input
// goes to every parser in kParsers, so adding one is one line there and the corpus serves all.
// Besides not crashing: a refusal says why, and what is accepted is in range and reads back
// the same from its own formatting.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/prefix.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace floodgate;

void prefix(const std::string &text) {
    std::string why;
    const std::optional<Prefix> p = parse_prefix(text, &why);
    if (!p) {
        FUZZ_CHECK(!why.empty());
        return;
    }
    FUZZ_CHECK(p->family == 4 || p->family == 6);
    FUZZ_CHECK(p->len <= (p->family == 4 ? 32 : 128));
    IpAddr masked = p->addr;
    mask_addr(&masked, p->len);
    FUZZ_CHECK(masked == p->addr);  // host bits are zero
    if (p->family == 4)
        for (size_t i = 4; i < 16; ++i) FUZZ_CHECK(p->addr[i] == 0);
    FUZZ_CHECK(prefix_contains(*p, p->family, p->addr));
    const std::optional<Prefix> again = parse_prefix(format_prefix(*p), &why);
    FUZZ_CHECK(again && *again == *p);
}

void duration(const std::string &text) {
    std::string why;
    const std::optional<long long> s = parse_duration_s(text, &why);
    if (!s) {
        FUZZ_CHECK(!why.empty());
        return;
    }
    FUZZ_CHECK(*s >= 1 && *s <= kMaxOverrideTtlSeconds);
    const std::optional<long long> again = parse_duration_s(format_duration_s(*s), &why);
    FUZZ_CHECK(again && *again == *s);
}

// Digits only, in range; the value reads back from its decimal form.
void whole_number(const std::string &text) {
    std::string why;
    const std::optional<uint64_t> n = parse_uint(text, 5, 70000, &why);
    if (!n) {
        FUZZ_CHECK(!why.empty());
        return;
    }
    FUZZ_CHECK(*n >= 5 && *n <= 70000);
    FUZZ_CHECK(!text.empty() && text.find_first_not_of("0123456789") == std::string::npos);
    FUZZ_CHECK(parse_uint(std::to_string(*n), 5, 70000, &why) == n);
}

// DIGITS[.DIGITS] only, in range.
void seconds(const std::string &text) {
    std::string why;
    const std::optional<uint64_t> ns = parse_seconds_ns(text, 1, 86400ull * 1000000000, &why);
    if (!ns) {
        FUZZ_CHECK(!why.empty());
        return;
    }
    FUZZ_CHECK(*ns >= 1 && *ns <= 86400ull * 1000000000);
    FUZZ_CHECK(text.find_first_not_of("0123456789.") == std::string::npos);
    FUZZ_CHECK(text.front() != '.' && text.back() != '.');
}

constexpr void (*kParsers[])(const std::string &) = {
    prefix,
    duration,
    whole_number,
    seconds,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    for (auto *parse : kParsers) parse(text);
    return 0;
}
