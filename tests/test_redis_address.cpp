// The one reading of a Redis address (rules/redis_address.h), for the rules file's
// cluster.redis and `floodctl daemon --redis` alike.
#include "rules/redis_address.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate {
namespace {

TEST(RedisAddress, AcceptsHostPortAndUnixPath) {
    const struct {
        const char *text, *host;
        int port;
    } cases[] = {
        {"127.0.0.1:6379", "127.0.0.1", 6379},
        {"10.0.0.5:1", "10.0.0.5", 1},
        {"redis-1.example_net:65535", "redis-1.example_net", 65535},
        {"unix:/run/redis.sock", "/run/redis.sock", 0},
        {"unix:/", "/", 0},
    };
    for (const auto &c : cases) {
        std::string why;
        const std::optional<RedisAddress> a = parse_redis_address(c.text, &why);
        ASSERT_TRUE(a.has_value()) << c.text << ": " << why;
        EXPECT_EQ(a->host, c.host) << c.text;
        EXPECT_EQ(a->port, c.port) << c.text;
    }
}

// What the rules loader refused and the daemon's store refused before, now one set: the store
// also refuses a relative socket path, a host that is no name or IPv4 address (it took any, to
// fail at connect) and an address over 256 characters.
TEST(RedisAddress, RefusesEachWrongShapeSayingWhy) {
    const struct {
        std::string text;
        const char *why;
    } cases[] = {
        {"127.0.0.1", "is not host:port or unix:/path"},
        {":6379", "is not host:port or unix:/path"},
        {"", "is not host:port or unix:/path"},
        {"127.0.0.1:0", "has a port that takes a whole number from 1 to 65535"},
        {"127.0.0.1:65536", "has a port that takes a whole number from 1 to 65535"},
        {"h:70000", "70000"},
        {"h:", "has a port that"},
        {"h:63x", "has a port that"},
        {"unix:", "a Unix socket's path is absolute"},
        {"unix:run/redis.sock", "a Unix socket's path is absolute"},
        {"[::1]:6379", "has a host that is not a name or an IPv4 address"},
        {"a b:6379", "has a host that is not a name or an IPv4 address"},
        {"rediss://10.0.0.5:6379", "no URL, and no user or password in it"},
        {"user:secret@10.0.0.5:6379", "no URL, and no user or password in it"},
        {std::string(252, 'h') + ":6379", "is longer than 256 characters"},
    };
    for (const auto &c : cases) {
        std::string why;
        EXPECT_FALSE(parse_redis_address(c.text, &why).has_value()) << c.text;
        EXPECT_NE(why.find(c.why), std::string::npos) << c.text << ": " << why;
    }
}

TEST(RedisAddress, TakesTheLongestAddress) {
    const std::string longest = std::string(251, 'h') + ":6379";
    ASSERT_EQ(longest.size(), kMaxRedisAddressBytes);
    std::string why;
    EXPECT_TRUE(parse_redis_address(longest, &why).has_value()) << why;
}

}  // namespace
}  // namespace floodgate
