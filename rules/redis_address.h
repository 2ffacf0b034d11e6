// The address of a Redis server, as a rules file's cluster.redis and `floodctl daemon --redis`
// give it: host:port (a name or an IPv4 address, port 1-65535) or unix:/absolute/path. One
// reading for both, so that an address the rules loader accepts is one the daemon connects to.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace floodgate {

inline constexpr size_t kMaxRedisAddressBytes = 256;

struct RedisAddress {
    std::string host;  // the name or address, or the Unix socket's path
    int port = 0;      // 0 for a Unix socket
};

// The address, or nullopt with *why saying what is wrong after the address itself (for
// "'ADDRESS' " + *why). Only its shape is read: whether it answers is the daemon's to find out.
std::optional<RedisAddress> parse_redis_address(std::string_view text, std::string *why);

}  // namespace floodgate
