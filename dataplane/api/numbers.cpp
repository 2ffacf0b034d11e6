#include "dataplane/api/numbers.h"

#include <cctype>

#include "dataplane/api/control_protocol.h"

namespace floodgate {

std::optional<long long> parse_duration_s(const std::string &text, std::string *why) {
    long long total = 0;
    size_t i = 0;
    if (text.empty()) {
        *why = "empty duration";
        return std::nullopt;
    }
    while (i < text.size()) {
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
            *why = "'" + text + "': expected a number (like 90s, 15m, 2h, 1d)";
            return std::nullopt;
        }
        long long n = 0;
        for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
            n = n * 10 + (text[i] - '0');
            if (n > kMaxOverrideTtlSeconds) {
                *why = "'" + text + "': longer than ten years";
                return std::nullopt;
            }
        }
        long long unit = 1;
        if (i < text.size()) {
            switch (text[i++]) {
                case 's':
                    unit = 1;
                    break;
                case 'm':
                    unit = 60;
                    break;
                case 'h':
                    unit = 3600;
                    break;
                case 'd':
                    unit = 86400;
                    break;
                default:
                    *why = "'" + text + "': unknown unit (expected s, m, h or d)";
                    return std::nullopt;
            }
        }
        total += n * unit;
        if (total > kMaxOverrideTtlSeconds) {
            *why = "'" + text + "': longer than ten years";
            return std::nullopt;
        }
    }
    if (total < 1) {
        *why = "'" + text + "': at least 1s";
        return std::nullopt;
    }
    return total;
}

std::string format_duration_s(long long s) {
    std::string out;
    if (s >= 86400) out += std::to_string(s / 86400) + "d", s %= 86400;
    if (s >= 3600) out += std::to_string(s / 3600) + "h", s %= 3600;
    if (s >= 60) out += std::to_string(s / 60) + "m", s %= 60;
    if (s > 0 || out.empty()) out += std::to_string(s) + "s";
    return out;
}

}  // namespace floodgate
