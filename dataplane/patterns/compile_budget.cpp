#include "dataplane/patterns/compile_budget.h"

#include <algorithm>
#include <cctype>

namespace floodgate {

namespace {

constexpr uint64_t kSaturated = kMaxRegexWeight + 1;

uint64_t capped(uint64_t w) {
    return std::min(w, kSaturated);
}

// {m}, {m,} or {m,n} at text[i] (i at '{'): the repeat's multiplier and the index past '}'; 0
// when it is not a quantifier (Hyperscan reads such a brace as a literal).
uint64_t bounded_repeat(const std::string &text, size_t i, size_t *end) {
    size_t j = i + 1;
    uint64_t lo = 0, hi = 0;
    bool has_lo = false, comma = false, has_hi = false;
    for (; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j) {
        lo = capped(lo * 10 + static_cast<uint64_t>(text[j] - '0'));
        has_lo = true;
    }
    if (j < text.size() && text[j] == ',') {
        comma = true;
        for (++j; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j) {
            hi = capped(hi * 10 + static_cast<uint64_t>(text[j] - '0'));
            has_hi = true;
        }
    }
    if (!has_lo || j >= text.size() || text[j] != '}') return 0;
    *end = j + 1;
    return std::max<uint64_t>(1, comma ? (has_hi ? hi : lo) : lo);
}

// Past a character class opened at text[i] ('['): ']' first (or after '^') is a member.
size_t past_class(const std::string &text, size_t i) {
    size_t j = i + 1;
    if (j < text.size() && text[j] == '^') ++j;
    if (j < text.size() && text[j] == ']') ++j;
    for (; j < text.size() && text[j] != ']'; ++j)
        if (text[j] == '\\') ++j;
    return std::min(j + 1, text.size());
}

}  // namespace

uint64_t regex_weight(const std::string &regex) {
    // One frame per open group: the alternatives closed so far, the current one's items, and
    // the last item (what a quantifier repeats).
    struct Frame {
        uint64_t alternatives = 0, sequence = 0, last = 0;
    };
    std::vector<Frame> stack(1);
    const auto item = [&](uint64_t w) {
        stack.back().sequence = capped(stack.back().sequence + w);
        stack.back().last = w;
    };
    for (size_t i = 0; i < regex.size();) {
        const char c = regex[i];
        size_t end = 0;
        if (c == '\\') {
            item(1);
            i += 2;
        } else if (c == '[') {
            item(1);
            i = past_class(regex, i);
        } else if (c == '(') {
            stack.emplace_back();
            ++i;
        } else if (c == ')' && stack.size() > 1) {
            const Frame inner = stack.back();
            stack.pop_back();
            item(capped(inner.alternatives + inner.sequence));
            ++i;
        } else if (c == '|') {
            Frame &f = stack.back();
            f.alternatives = capped(f.alternatives + f.sequence);
            f.sequence = f.last = 0;
            ++i;
        } else if (c == '{' && bounded_repeat(regex, i, &end) > 0) {
            Frame &f = stack.back();
            const uint64_t times = bounded_repeat(regex, i, &end);
            const uint64_t repeated = capped(f.last * times);
            f.sequence = capped(f.sequence - f.last + repeated);
            f.last = repeated;
            i = end;
        } else if (c == '*' || c == '+' || c == '?') {
            ++i;  // an unbounded loop or an option: no copies
        } else {
            item(1);
            ++i;
        }
    }
    uint64_t total = 0;
    for (const Frame &f : stack) total = capped(total + f.alternatives + f.sequence);
    return total;
}

PatternCost pattern_cost(const std::vector<PayloadPattern> &patterns) {
    PatternCost cost;
    for (const PayloadPattern &p : patterns) {
        ++cost.patterns;
        cost.bytes += p.text.size();
        if (p.kind == PayloadPattern::Kind::regex) {
            ++cost.regexes;
            cost.regex_weight += regex_weight(p.text);
        }
    }
    return cost;
}

std::string over_budget(const PatternCost &total) {
    const auto over = [](const char *what, uint64_t n, uint64_t max) {
        return std::to_string(n) + " " + what + ", over the ruleset's budget of " +
               std::to_string(max) + " (distinct pattern lists counted once)";
    };
    if (total.patterns > kMaxRulesetPayloadPatterns)
        return over("payload patterns", total.patterns, kMaxRulesetPayloadPatterns);
    if (total.bytes > kMaxRulesetPayloadBytes)
        return over("bytes of payload patterns", total.bytes, kMaxRulesetPayloadBytes);
    if (total.regexes > kMaxRulesetRegexes)
        return over("regexes", total.regexes, kMaxRulesetRegexes);
    if (total.regex_weight > kMaxRulesetRegexWeight)
        return over("of regex weight (a bounded repeat x{m,n} weighs n times x)",
                    total.regex_weight, kMaxRulesetRegexWeight);
    return {};
}

}  // namespace floodgate
