// Numbers as operators type them, read the same way by floodgate and floodctl: every numeric
// option of every command goes through one of these.
//
// Strict on purpose. Decimal digits only: no sign, no spaces, no hex, no exponent and nothing
// after the number, because the library readers guess instead of refusing (std::stoi reads
// "3x" as 3, strtoul reads "-5" as 2^64 - 5 and skips leading spaces, std::stod reads "1e3",
// "nan" and "-5"), and a guessed value is worse than an error. Leading zeros are decimal
// ("010" is 10), never octal.
//
// Each returns nullopt on a refusal and sets *why to a phrase that names the accepted range and
// quotes the text, written to follow the option's name:
//   "--workers " + why  ->  "--workers takes a whole number from 1 to 64, not '3x'"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate {

// A whole number in [lo, hi].
std::optional<uint64_t> parse_uint(std::string_view text, uint64_t lo, uint64_t hi,
                                   std::string *why);

// A command's numeric option: parse_uint, or the message "COMMAND: OPTION why" on stderr and
// false.
bool uint_option(const char *command, const char *option, std::string_view text, uint64_t lo,
                 uint64_t hi, uint64_t *out);

// Seconds, whole or with a decimal fraction ("5", "0.5"; at most 9 decimals, so the value is
// exact in nanoseconds), returned in nanoseconds within [lo_ns, hi_ns]. The grammar is
// DIGITS[.DIGITS]: "-5", "1e3", "nan", "inf", ".5" and "5." are refused.
std::optional<uint64_t> parse_seconds_ns(std::string_view text, uint64_t lo_ns, uint64_t hi_ns,
                                         std::string *why);

// A duration in whole seconds, from 1 s to ten years (kMaxOverrideTtlSeconds), written as
// numbers that each carry a unit: "90s", "15m", "2h", "1d", "1h30m". A bare "15" is refused:
// whoever typed it may have meant minutes, and an override that lapses 59 times too early is
// a silent failure.
std::optional<long long> parse_duration_s(const std::string &text, std::string *why);
// "1h30m0s" style, for people.
std::string format_duration_s(long long seconds);

}  // namespace floodgate
