#include "rules/redis_address.h"

#include "dataplane/api/numbers.h"

namespace floodgate {

namespace {

bool host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

}  // namespace

std::optional<RedisAddress> parse_redis_address(std::string_view text, std::string *why) {
    if (text.size() > kMaxRedisAddressBytes) {
        *why = "is longer than " + std::to_string(kMaxRedisAddressBytes) + " characters";
        return std::nullopt;
    }
    if (text.starts_with("unix:")) {
        if (!text.substr(5).starts_with('/')) {
            *why = "is not unix:/path: a Unix socket's path is absolute";
            return std::nullopt;
        }
        return RedisAddress{std::string(text.substr(5)), 0};
    }
    if (text.find("://") != std::string_view::npos || text.find('@') != std::string_view::npos) {
        *why =
            "is not host:port or unix:/path (no URL, and no user or password in it: "
            "floodctl daemon's --redis-user, --redis-password-file and --redis-tls-ca)";
        return std::nullopt;
    }
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
        *why = "is not host:port or unix:/path";
        return std::nullopt;
    }
    for (char c : text.substr(0, colon))
        if (!host_char(c)) {
            *why = "has a host that is not a name or an IPv4 address";
            return std::nullopt;
        }
    std::string port_why;
    const std::optional<uint64_t> port = parse_uint(text.substr(colon + 1), 1, 65535, &port_why);
    if (!port) {
        *why = "has a port that " + port_why;
        return std::nullopt;
    }
    return RedisAddress{std::string(text.substr(0, colon)), static_cast<int>(*port)};
}

}  // namespace floodgate
