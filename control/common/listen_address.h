// What `floodctl daemon --metrics HOST:PORT` means: the one TCP address the metrics endpoint
// listens on. The endpoint has no authentication, so the defaults keep it on this machine:
//   :PORT             127.0.0.1 (a missing host is loopback, never every interface)
//   localhost:PORT    host names resolve (the first IPv4 address, else the first address:
//                     the endpoint has one listening socket)
//   [::1]:PORT        an IPv6 address goes in brackets ("::1:9417" is refused as ambiguous)
//   0.0.0.0:PORT      any other address is allowed when written out; the daemon then logs
//                     that the endpoint is reachable from other hosts (see loopback)
// PORT is 0 to 65535; 0 lets the kernel choose.
#pragma once

#include <sys/socket.h>

#include <string>

namespace floodgate {

struct ListenAddress {
    sockaddr_storage addr{};
    socklen_t len = 0;
    bool loopback = false;  // 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104
};

// Parses and resolves text as above; false with *error saying why (without the option's
// name, which the caller knows).
bool resolve_listen_address(const std::string &text, ListenAddress *out, std::string *error);

// "127.0.0.1:9417" or "[::1]:9417": an IPv4 or IPv6 socket address as HOST:PORT.
std::string format_address(const sockaddr *addr);

}  // namespace floodgate
