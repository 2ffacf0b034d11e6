// Durations as operators type them: "90", "90s", "15m", "2h", "1d", "1h30m".
#pragma once

#include <optional>
#include <string>

namespace floodgate {

// Whole seconds, at least 1; nullopt and *why on error.
std::optional<long long> parse_duration_s(const std::string &text, std::string *why);
// "1h30m0s" style, for people.
std::string format_duration_s(long long seconds);

}  // namespace floodgate
