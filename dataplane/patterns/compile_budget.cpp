#include "dataplane/patterns/compile_budget.h"

#include <algorithm>
#include <cctype>
#include <cstring>

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

// Past a character class opened at text[i] ('['): ']' first (or after '^') is a member, and so
// is a POSIX class [:alpha:] (or [.x.], [=x=]) inside it. npos when it never closes.
size_t past_class(const std::string &text, size_t i) {
    size_t j = i + 1;
    if (j < text.size() && text[j] == '^') ++j;
    if (j < text.size() && text[j] == ']') ++j;
    for (; j < text.size() && text[j] != ']'; ++j) {
        if (text[j] == '\\') {
            ++j;
        } else if (text[j] == '[' && j + 1 < text.size() &&
                   (text[j + 1] == ':' || text[j + 1] == '.' || text[j + 1] == '=')) {
            const size_t end = text.find(std::string{text[j + 1], ']'}, j + 2);
            if (end == std::string::npos) return std::string::npos;
            j = end + 1;
        }
    }
    return j < text.size() ? j + 1 : std::string::npos;
}

// Past an escape at text[i] ('\\'): \x{...}, \o{...}, \p{...} and the like run to their brace.
size_t past_escape(const std::string &text, size_t i) {
    if (i + 2 < text.size() && text[i + 2] == '{' &&
        std::strchr("xopPNgk", text[i + 1]) != nullptr) {
        const size_t end = text.find('}', i + 3);
        return end == std::string::npos ? std::string::npos : end + 1;
    }
    return i + 2;
}

// Syntax whose cost this reading cannot see: comments (?#...) and quoted runs \Q...\E hide
// what follows, and extended mode (?x) makes white space between an item and its repeat
// meaningless. A regex using them weighs as much as any (it is refused).
bool opaque(const std::string &text) {
    if (text.find("(?#") != std::string::npos || text.find("\\Q") != std::string::npos) return true;
    for (size_t at = text.find("(?"); at != std::string::npos; at = text.find("(?", at + 2)) {
        for (size_t j = at + 2;
             j < text.size() &&
             (std::isalpha(static_cast<unsigned char>(text[j])) || text[j] == '-');
             ++j)
            if (text[j] == 'x') return true;
    }
    return false;
}

}  // namespace

uint64_t regex_weight(const std::string &regex) {
    if (opaque(regex)) return kSaturated;
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
        if (c == '\\' || c == '[') {
            item(1);
            // Unclosed, it runs to the end: Hyperscan refuses it with its own message.
            i = std::min(c == '[' ? past_class(regex, i) : past_escape(regex, i), regex.size());
        } else if (c == '(') {
            stack.emplace_back();
            ++i;
        } else if (c == ')' && stack.size() > 1) {  // one closing nothing: an atom, refused later
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
    uint64_t total = 0;  // groups left open (Hyperscan refuses them) summed as they stand
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
