// What `floodctl daemon --metrics HOST:PORT` means (control/common/listen_address.h): the address
// resolved, and whether it stays on this machine. Nothing is bound here.
#include "control/common/listen_address.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate {
namespace {

struct Resolved {
    bool ok;
    std::string address;  // format_address of the result
    bool loopback;
    std::string error;
};

Resolved resolve(const std::string &text) {
    ListenAddress a;
    Resolved r{};
    r.ok = resolve_listen_address(text, &a, &r.error);
    if (r.ok) {
        r.address = format_address(reinterpret_cast<const sockaddr *>(&a.addr));
        r.loopback = a.loopback;
    }
    return r;
}

TEST(ListenAddress, AMissingHostIsLoopbackNotEveryInterface) {
    const Resolved r = resolve(":9417");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.address, "127.0.0.1:9417");
    EXPECT_TRUE(r.loopback);
}

TEST(ListenAddress, HostNamesResolvePreferringIPv4) {
    const Resolved r = resolve("localhost:0");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.address, "127.0.0.1:0");
    EXPECT_TRUE(r.loopback);
}

TEST(ListenAddress, NumericAddresses) {
    const struct {
        const char *text, *address;
        bool loopback;
    } cases[] = {
        {"127.0.0.1:9417", "127.0.0.1:9417", true},
        {"127.1.2.3:1", "127.1.2.3:1", true},
        {"[::1]:9417", "[::1]:9417", true},
        {"[::ffff:127.0.0.1]:80", "[::ffff:127.0.0.1]:80", true},
        {"0.0.0.0:9417", "0.0.0.0:9417", false},
        {"192.0.2.7:65535", "192.0.2.7:65535", false},
        {"[::]:9417", "[::]:9417", false},
        {"[2001:db8::1]:0", "[2001:db8::1]:0", false},
    };
    for (const auto &c : cases) {
        const Resolved r = resolve(c.text);
        ASSERT_TRUE(r.ok) << c.text << ": " << r.error;
        EXPECT_EQ(r.address, c.address) << c.text;
        EXPECT_EQ(r.loopback, c.loopback) << c.text;
    }
}

TEST(ListenAddress, BadAddressesAreRefusedSayingWhy) {
    const struct {
        const char *text, *why;
    } cases[] = {
        {"", "expected HOST:PORT"},
        {"127.0.0.1", "expected HOST:PORT"},
        {"127.0.0.1:", "port"},
        {"127.0.0.1:65536", "port"},
        {"127.0.0.1:99999", "port"},
        {"127.0.0.1:http", "port"},
        {"127.0.0.1:-1", "port"},
        {"127.0.0.1: 80", "port"},
        {"::1:9417", "brackets"},
        {"[::1:9417", "[IPv6]:PORT"},
        {"[::1]9417", "[IPv6]:PORT"},
        {"[]:9417", "empty"},
        {"[127.0.0.1]:9417", "not an IPv6 address"},
    };
    for (const auto &c : cases) {
        const Resolved r = resolve(c.text);
        EXPECT_FALSE(r.ok) << c.text << " resolved to " << r.address;
        EXPECT_NE(r.error.find(c.why), std::string::npos) << c.text << ": " << r.error;
        EXPECT_NE(r.error.find(std::string("'") + c.text + "'"), std::string::npos) << r.error;
    }
}

}  // namespace
}  // namespace floodgate
