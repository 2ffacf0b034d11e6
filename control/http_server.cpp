#include "control/http_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dataplane/api/unix_socket.h"

namespace floodgate {

namespace {

constexpr size_t kMaxRequestHeader = 8192;

std::string response(const char *status, const char *type, const std::string &body) {
    return std::string("HTTP/1.0 ") + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
}

// Reads up to the end of the request header, within 2 s.
bool read_header(int fd, std::string *header) {
    return read_until(
               fd, header,
               [](const std::string &h) {
                   return h.find("\r\n\r\n") != std::string::npos ||
                          h.find("\n\n") != std::string::npos;
               },
               2000, kMaxRequestHeader) == ReadResult::complete;
}

}  // namespace

HttpServer::~HttpServer() {
    if (fd_ >= 0) ::close(fd_);
}

bool HttpServer::listen(const std::string &text, std::string *error) {
    ListenAddress address;
    if (!resolve_listen_address(text, &address, error)) return false;
    const auto *addr = reinterpret_cast<const sockaddr *>(&address.addr);
    fd_ = ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd_ < 0 || ::bind(fd_, addr, address.len) != 0 || ::listen(fd_, 16) != 0) {
        *error = "'" + text + "': " + format_address(addr) + ": " + std::strerror(errno);
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        return false;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd_, reinterpret_cast<sockaddr *>(&bound), &len);
    address_ = format_address(reinterpret_cast<const sockaddr *>(&bound));
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    loopback_ = address.loopback;
    return true;
}

void HttpServer::serve(const std::atomic<bool> &stop, const std::function<std::string()> &metrics) {
    while (!stop.load()) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) continue;
        int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::string header;
        if (read_header(fd, &header)) {
            std::string line = header.substr(0, header.find_first_of("\r\n"));
            std::string reply;
            if (line.rfind("GET ", 0) != 0) {
                reply = response("405 Method Not Allowed", "text/plain", "GET only\n");
            } else {
                size_t start = line.find(' ') + 1;
                std::string path = line.substr(start, line.find(' ', start) - start);
                if (path == "/metrics" || path.rfind("/metrics?", 0) == 0)
                    reply =
                        response("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics());
                else if (path == "/")
                    reply =
                        response("200 OK", "text/plain", "floodctl daemon: metrics at /metrics\n");
                else
                    reply = response("404 Not Found", "text/plain", "not found\n");
            }
            write_all(fd, reply, 5000);  // a scraper that reads slower is dropped
        }
        ::close(fd);
    }
}

}  // namespace floodgate
