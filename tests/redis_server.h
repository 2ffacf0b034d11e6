// What the store's tests share to start and speak to a real redis-server (scripts/lib.sh
// installs it): its path, a free loopback port, and a plain client for what no box does. One
// definition for every test file, since the ASan build compiles a target's files as one.
#pragma once

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace floodgate {

inline constexpr const char *kRedisServer = "/usr/bin/redis-server";

// A loopback port nobody listens on (the kernel's choice, given back at once).
inline int free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
        std::abort();
    ::close(fd);
    return ntohs(a.sin_port);
}

using RawRedis = std::unique_ptr<redisContext, decltype(&redisFree)>;

// One command's reply as text: a string or status as it is, an integer in decimal, "ERR:" and
// an error (the client's own when there is no reply).
inline std::string redis_run(redisContext *c, const std::vector<std::string> &args) {
    std::vector<const char *> argv;
    std::vector<size_t> lens;
    for (const std::string &a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
    }
    auto *r = static_cast<redisReply *>(
        redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
    if (r == nullptr) return std::string("ERR:") + c->errstr;
    std::string out = r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer)
                      : r->type == REDIS_REPLY_ERROR ? "ERR:" + std::string(r->str, r->len)
                      : r->str != nullptr            ? std::string(r->str, r->len)
                                                     : "?";
    freeReplyObject(r);
    return out;
}

}  // namespace floodgate
