#include "control/http_server.h"

#include <netdb.h>
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

bool HttpServer::listen(const std::string &address, std::string *error) {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
        *error = "metrics address '" + address + "': expected HOST:PORT";
        return false;
    }
    std::string host = address.substr(0, colon), port = address.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
        *error = "metrics address '" + address + "': " + gai_strerror(rc);
        return false;
    }
    fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd_ < 0 || ::bind(fd_, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd_, 16) != 0) {
        *error = "metrics address '" + address + "': " + std::strerror(errno);
        ::freeaddrinfo(res);
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        return false;
    }
    ::freeaddrinfo(res);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd_, reinterpret_cast<sockaddr *>(&bound), &len);
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
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
