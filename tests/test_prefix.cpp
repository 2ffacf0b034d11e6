#include "dataplane/api/prefix.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

namespace floodgate {
namespace {

Prefix must_parse(const std::string &text) {
    std::string why;
    std::optional<Prefix> p = parse_prefix(text, &why);
    EXPECT_TRUE(p.has_value()) << text << ": " << why;
    return p.value_or(Prefix{});
}

// An address of either family, through inet_pton rather than the code under test.
IpAddr addr(const char *text) {
    IpAddr a{};
    const int af = std::string(text).find(':') != std::string::npos ? AF_INET6 : AF_INET;
    EXPECT_EQ(inet_pton(af, text, a.data()), 1) << text;
    return a;
}

struct RoundTripCase {
    const char *input;
    uint8_t family;
    uint8_t len;
    const char *formatted;
};

TEST(Prefix, ParsesAndFormats) {
    const RoundTripCase cases[] = {
        {"192.0.2.0/24", 4, 24, "192.0.2.0/24"},
        {"192.0.2.7", 4, 32, "192.0.2.7/32"},  // no length: host prefix
        {"0.0.0.0/0", 4, 0, "0.0.0.0/0"},
        {"10.0.0.0/8", 4, 8, "10.0.0.0/8"},
        {"255.255.255.255/32", 4, 32, "255.255.255.255/32"},
        {"2001:db8::/32", 6, 32, "2001:db8::/32"},
        {"2001:DB8:BAD::/48", 6, 48, "2001:db8:bad::/48"},  // formatted in canonical form
        {"2001:db8::1", 6, 128, "2001:db8::1/128"},
        {"::/0", 6, 0, "::/0"},
        {"::ffff:192.0.2.1", 6, 128, "::ffff:192.0.2.1/128"},  // IPv4-mapped stays IPv6
        {"2001:db8:0:0:0:0:0:0/64", 6, 64, "2001:db8::/64"},
    };
    for (const RoundTripCase &c : cases) {
        SCOPED_TRACE(c.input);
        const Prefix p = must_parse(c.input);
        EXPECT_EQ(p.family, c.family);
        EXPECT_EQ(p.len, c.len);
        EXPECT_EQ(format_prefix(p), c.formatted);
        // What format_prefix writes parses back to the same prefix.
        EXPECT_EQ(must_parse(format_prefix(p)), p);
    }
}

TEST(Prefix, StoresAddressInNetworkOrder) {
    const Prefix v4 = must_parse("192.0.2.0/24");
    EXPECT_EQ(v4.addr[0], 192);
    EXPECT_EQ(v4.addr[1], 0);
    EXPECT_EQ(v4.addr[2], 2);
    for (size_t i = 3; i < 16; ++i) EXPECT_EQ(v4.addr[i], 0) << i;

    const Prefix v6 = must_parse("2001:db8::/32");
    EXPECT_EQ(v6.addr, addr("2001:db8::"));
}

struct BadCase {
    const char *input;
    const char *why_contains;
};

TEST(Prefix, RefusesBadInput) {
    const BadCase cases[] = {
        {"", "not an IPv4 address"},
        {"/24", "not an IPv4 address"},
        {"junk", "not an IPv4 address"},
        {"300.1.1.1", "not an IPv4 address"},
        {"1.2.3", "not an IPv4 address"},
        {"01.2.3.4", "not an IPv4 address"},
        {" 1.2.3.4", "not an IPv4 address"},
        {"fe80::1%eth0", "not an IPv6 address"},
        {"2001:db8:::1", "not an IPv6 address"},
        {"192.0.2.0/", "prefix length '' is not a number"},
        {"192.0.2.0/x", "is not a number"},
        {"192.0.2.0/24/1", "is not a number"},
        {"192.0.2.0/ 24", "is not a number"},
        {"192.0.2.0/+24", "is not a number"},
        {"192.0.2.0/-1", "is not a number"},
        {"192.0.2.0/24 ", "is not a number"},
        {"192.0.2.0/0024", "is not a number"},
        {"192.0.2.0/33", "out of range for IPv4 (0-32)"},
        {"2001:db8::/129", "out of range for IPv6 (0-128)"},
        {"10.0.0.1/8", "host bits are set below /8 (did you mean 10.0.0.0/8?)"},
        {"192.0.2.1/31", "did you mean 192.0.2.0/31?"},
        {"2001:db8::1/64", "did you mean 2001:db8::/64?"},
        {"::1/0", "did you mean ::/0?"},
    };
    for (const BadCase &c : cases) {
        SCOPED_TRACE(c.input);
        std::string why;
        EXPECT_FALSE(parse_prefix(c.input, &why).has_value());
        EXPECT_NE(why.find(c.why_contains), std::string::npos) << why;
    }
}

TEST(Prefix, ReasonIsOptional) {
    EXPECT_FALSE(parse_prefix("junk", nullptr).has_value());
}

TEST(Prefix, FormatsAddresses) {
    EXPECT_EQ(format_addr(4, addr("198.51.100.7")), "198.51.100.7");
    EXPECT_EQ(format_addr(6, addr("2001:0db8:0000:0000:0000:0000:0000:0001")), "2001:db8::1");
    EXPECT_EQ(format_addr(6, IpAddr{}), "::");
    EXPECT_EQ(format_addr(5, IpAddr{}), "<bad address>");
}

struct MaskCase {
    unsigned len;
    const char *masked;  // the all-ones address after masking to len bits
};

TEST(Prefix, MaskAddrKeepsTheFirstLenBits) {
    const MaskCase cases[] = {
        {0, "::"},
        {7, "fe00::"},
        {8, "ff00::"},
        {9, "ff80::"},
        {31, "ffff:fffe::"},
        {32, "ffff:ffff::"},
        {64, "ffff:ffff:ffff:ffff::"},
        {127, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"},
        {128, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
    };
    for (const MaskCase &c : cases) {
        SCOPED_TRACE(c.len);
        IpAddr a;
        a.fill(0xff);
        mask_addr(&a, c.len);
        EXPECT_EQ(a, addr(c.masked)) << format_addr(6, a);
    }
}

TEST(Prefix, MaskAddrOnIpv4) {
    IpAddr a = addr("192.0.2.255");
    mask_addr(&a, 25);
    EXPECT_EQ(format_addr(4, a), "192.0.2.128");
    mask_addr(&a, 9);
    EXPECT_EQ(format_addr(4, a), "192.0.0.0");
}

struct ContainsCase {
    const char *prefix;
    const char *address;
    bool inside;
};

TEST(Prefix, Contains) {
    const ContainsCase cases[] = {
        {"0.0.0.0/0", "203.0.113.9", true},
        {"0.0.0.0/0", "::1", false},  // a /0 still holds only its own family
        {"::/0", "192.0.2.1", false},
        {"::/0", "2001:db8::1", true},
        {"8.0.0.0/7", "9.255.255.255", true},
        {"8.0.0.0/7", "10.0.0.0", false},
        {"10.0.0.0/8", "10.255.255.255", true},
        {"10.0.0.0/8", "11.0.0.0", false},
        {"10.128.0.0/9", "10.200.0.1", true},
        {"10.128.0.0/9", "10.127.255.255", false},
        {"192.0.2.0/31", "192.0.2.1", true},
        {"192.0.2.0/31", "192.0.2.2", false},
        {"192.0.2.7/32", "192.0.2.7", true},
        {"192.0.2.7/32", "192.0.2.6", false},
        {"2001:db8:1:2::/64", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
        {"2001:db8:1:2::/64", "2001:db8:1:3::", false},
        {"2001:db8::/127", "2001:db8::1", true},
        {"2001:db8::/127", "2001:db8::2", false},
        {"2001:db8::1/128", "2001:db8::1", true},
        {"2001:db8::1/128", "2001:db8::", false},
    };
    for (const ContainsCase &c : cases) {
        SCOPED_TRACE(std::string(c.prefix) + " " + c.address);
        const Prefix p = must_parse(c.prefix);
        const uint8_t family = std::string(c.address).find(':') != std::string::npos ? 6 : 4;
        EXPECT_EQ(prefix_contains(p, family, addr(c.address)), c.inside);
    }
}

}  // namespace
}  // namespace floodgate
