// IP prefixes ("192.0.2.0/24", "2001:db8::/32") and source-key masking, shared by the config
// loader and the dataplane. Addresses are 16 bytes in network order; IPv4 uses the first 4.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace floodgate {

using IpAddr = std::array<uint8_t, 16>;

struct Prefix {
    uint8_t family = 4;  // 4 or 6
    uint8_t len = 0;     // 0-32 for IPv4, 0-128 for IPv6
    IpAddr addr{};       // host bits are zero

    bool operator==(const Prefix &) const = default;
    auto operator<=>(const Prefix &) const = default;  // for ordered maps and sets
};

// Parses "a.b.c.d[/n]" or "x:y::z[/n]" (no length means a host prefix). Host bits set below the
// length are refused, because "10.0.0.1/8" is almost always a typo.
// Returns nullopt and sets *why on error.
std::optional<Prefix> parse_prefix(const std::string &text, std::string *why);

std::string format_prefix(const Prefix &p);
std::string format_addr(uint8_t family, const IpAddr &addr);

// Zeroes every bit after the first len bits of addr (len counts from the first byte).
inline void mask_addr(IpAddr *addr, unsigned len) {
    for (unsigned i = 0; i < 16; ++i) {
        unsigned bit = i * 8;
        if (bit >= len)
            (*addr)[i] = 0;
        else if (len - bit < 8)
            (*addr)[i] &= static_cast<uint8_t>(0xff00u >> (len - bit));
    }
}

// True when addr (same family) lies inside p.
inline bool prefix_contains(const Prefix &p, uint8_t family, const IpAddr &addr) {
    if (family != p.family) return false;
    IpAddr masked = addr;
    mask_addr(&masked, p.len);
    return masked == p.addr;
}

}  // namespace floodgate
