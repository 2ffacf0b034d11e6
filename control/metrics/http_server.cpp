#include "control/metrics/http_server.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

namespace floodgate {

namespace {

constexpr const char *kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

MHD_Result answer(MHD_Connection *connection, unsigned status, const char *type,
                  const std::string &body, const char *allow = nullptr) {
    MHD_Response *response = MHD_create_response_from_buffer(
        body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (response == nullptr) return MHD_NO;  // out of memory: libmicrohttpd closes it
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (allow != nullptr) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
    const MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued;
}

// Called once the request header is in (a body, which no path here takes, is not waited
// for: the answer is queued at once and libmicrohttpd discards what follows).
MHD_Result on_request(void *cls, MHD_Connection *connection, const char *url, const char *method,
                      const char * /*version*/, const char * /*upload_data*/,
                      size_t * /*upload_data_size*/, void ** /*request_state*/) {
    const auto &metrics = *static_cast<const HttpServer::Metrics *>(cls);
    const std::string path = url;
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET only\n",
                      "GET, HEAD");
    if (path == "/metrics") {
        // A C callback: nothing may be thrown through libmicrohttpd.
        try {
            return answer(connection, MHD_HTTP_OK, kMetricsType, metrics());
        } catch (const std::exception &e) {
            return answer(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                          std::string("cannot build the metrics: ") + e.what() + "\n");
        }
    }
    if (path == "/")
        return answer(connection, MHD_HTTP_OK, "text/plain",
                      "floodctl daemon: metrics at /metrics\n");
    return answer(connection, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n");
}

void on_log(void * /*cls*/, const char *format, va_list args) {
    std::fputs("floodctl daemon: http: ", stderr);
    std::vfprintf(stderr, format, args);
    std::fflush(stderr);
}

}  // namespace

bool HttpServer::listen(const std::string &text, std::string *error) {
    ListenAddress address;
    if (!resolve_listen_address(text, &address, error)) return false;
    const auto *addr = reinterpret_cast<const sockaddr *>(&address.addr);
    // Our own socket rather than libmicrohttpd's: the bind error is ours to word, and the
    // address family and the chosen port are known before anything is served.
    fd_ = ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd_ < 0 || ::bind(fd_, addr, address.len) != 0 ||
        ::listen(fd_, static_cast<int>(kMaxConnections)) != 0) {
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

bool HttpServer::start(Metrics metrics, std::string *error) {
    if (fd_ < 0 || daemon_ != nullptr) {
        *error = "metrics endpoint: not listening";
        return false;
    }
    metrics_ = std::move(metrics);
    const int fd = fd_;
    // From here the socket is libmicrohttpd's: it closes it on stop. If the start fails it may
    // or may not have; it is not closed again (the number might be reused by then), the
    // daemon exits anyway.
    fd_ = -1;
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG,
                               0, nullptr, nullptr, &on_request, &metrics_,
                               MHD_OPTION_EXTERNAL_LOGGER, &on_log, nullptr,
                               MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, kThreads,
                               MHD_OPTION_CONNECTION_LIMIT, kMaxConnections,
                               MHD_OPTION_CONNECTION_TIMEOUT, kIdleTimeoutS, MHD_OPTION_END);
    if (daemon_ == nullptr) {
        *error = "metrics endpoint on " + address_ + ": libmicrohttpd would not start";
        return false;
    }
    return true;
}

void HttpServer::stop() {
    if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

}  // namespace floodgate
