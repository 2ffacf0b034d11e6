#include "control/common/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

#include "dataplane/api/numbers.h"

namespace floodgate {

namespace {

bool is_loopback(const sockaddr *addr) {
    if (addr->sa_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(addr);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->sa_family == AF_INET6) {
        const in6_addr &a = reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
    }
    return false;
}

}  // namespace

bool resolve_listen_address(const std::string &text, ListenAddress *out, std::string *error) {
    auto refuse = [&](const std::string &why) {
        *error = "'" + text + "': " + why;
        return false;
    };
    std::string host, port;
    bool bracketed = false;
    if (!text.empty() && text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return refuse("expected [IPv6]:PORT");
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        bracketed = true;
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string::npos) return refuse("expected HOST:PORT");
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string::npos)
            return refuse("an IPv6 address goes in brackets: [" + host + "]:" + port);
    }
    // Read strictly here: getaddrinfo takes service names and " 80", and wraps "70000" to
    // port 4464 and "65536" to 0 (any free port).
    std::string why;
    if (!parse_uint(port, 0, 65535, &why)) return refuse("the port " + why);
    if (host.empty()) {
        if (bracketed) return refuse("empty address in brackets");
        host = "127.0.0.1";  // a missing host is loopback: the endpoint has no authentication
    }

    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = bracketed ? AF_INET6 : AF_UNSPEC;
    hints.ai_flags = AI_NUMERICSERV | (bracketed ? AI_NUMERICHOST : 0);
    if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
        return refuse(std::string(bracketed ? "not an IPv6 address: " : "cannot resolve: ") +
                      gai_strerror(rc));
    const addrinfo *pick = res;
    for (const addrinfo *a = res; a != nullptr; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    const bool usable = pick != nullptr &&
                        (pick->ai_family == AF_INET || pick->ai_family == AF_INET6) &&
                        pick->ai_addrlen <= sizeof out->addr;
    if (usable) {
        *out = {};
        std::memcpy(&out->addr, pick->ai_addr, pick->ai_addrlen);
        out->len = pick->ai_addrlen;
        out->loopback = is_loopback(pick->ai_addr);
    }
    ::freeaddrinfo(res);
    return usable || refuse("resolves to no IPv4 or IPv6 address");
}

std::string format_address(const sockaddr *addr) {
    char host[INET6_ADDRSTRLEN] = "?";
    std::string out;
    if (addr->sa_family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(addr);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        out.append("[").append(host).append("]:");
        out += std::to_string(ntohs(in6->sin6_port));
    } else {
        const auto *in = reinterpret_cast<const sockaddr_in *>(addr);
        ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        out.append(host).append(":");
        out += std::to_string(ntohs(in->sin_port));
    }
    return out;
}

}  // namespace floodgate
