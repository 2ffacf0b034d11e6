#include "control/metrics/http_server.h"

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

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

// Whether the connection's client certificate, if any, chains to the trusted CAs: a missing
// one is refused only when required.
bool client_certificate_ok(MHD_Connection *connection, ClientAuth mode) {
    if (mode == ClientAuth::none) return true;
    const MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return false;
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    unsigned int status = 0;
    const int checked = gnutls_certificate_verify_peers2(session, &status);
    if (checked == GNUTLS_E_NO_CERTIFICATE_FOUND ||
        (checked == 0 && gnutls_certificate_get_peers(session, nullptr) == nullptr))
        return mode == ClientAuth::verify_if_given;
    return checked == 0 && status == 0;
}

}  // namespace

struct HttpRequest {
    // Called once the request header is in (a body, which no path here takes, is not waited
    // for: the answer is queued at once and libmicrohttpd discards what follows).
    static MHD_Result serve(void *cls, MHD_Connection *connection, const char *url,
                            const char *method, const char * /*version*/,
                            const char * /*upload_data*/, size_t * /*upload_data_size*/,
                            void ** /*request_state*/) {
        auto &server = *static_cast<HttpServer *>(cls);
        mark_requested(connection);
        if (!client_certificate_ok(connection, server.auth_.tls.client_auth)) {
            server.client_certificate_.fetch_add(1, std::memory_order_relaxed);
            return answer(connection, MHD_HTTP_FORBIDDEN, "text/plain",
                          "a client certificate from the trusted CA is required\n");
        }
        const CredentialVerdict credentials =
            server.credentials_ ? authenticated(server, connection) : CredentialVerdict::match;
        if (credentials == CredentialVerdict::throttled) {
            MHD_Response *response =
                MHD_create_response_from_buffer(0, const_cast<char *>(""), MHD_RESPMEM_PERSISTENT);
            if (response == nullptr) return MHD_NO;
            MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, "1");
            const MHD_Result queued =
                MHD_queue_response(connection, MHD_HTTP_TOO_MANY_REQUESTS, response);
            MHD_destroy_response(response);
            return queued;
        }
        if (credentials == CredentialVerdict::wrong) {
            MHD_Response *response =
                MHD_create_response_from_buffer(0, const_cast<char *>(""), MHD_RESPMEM_PERSISTENT);
            if (response == nullptr) return MHD_NO;
            const MHD_Result queued =
                MHD_queue_basic_auth_fail_response(connection, "floodgate", response);
            MHD_destroy_response(response);
            return queued;
        }
        const std::string path = url;
        if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
            std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
            return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET only\n",
                          "GET, HEAD");
        if (path == "/metrics") {
            // A C callback: nothing may be thrown through libmicrohttpd.
            try {
                return answer(connection, MHD_HTTP_OK, kMetricsType, server.metrics_());
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

    // The request's basic auth credentials against the users' hashes (credential_check.h),
    // the refusal counted.
    static CredentialVerdict authenticated(HttpServer &server, MHD_Connection *connection) {
        char *password = nullptr;
        char *user = MHD_basic_auth_get_username_password(connection, &password);
        CredentialVerdict verdict = CredentialVerdict::wrong;
        if (user == nullptr || password == nullptr) {
            server.no_credentials_.fetch_add(1, std::memory_order_relaxed);
        } else {
            const double now_s =
                std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                    .count();
            verdict = server.credentials_->check(user, password, now_s);
            if (verdict == CredentialVerdict::wrong)
                server.wrong_credentials_.fetch_add(1, std::memory_order_relaxed);
            if (verdict == CredentialVerdict::throttled)
                server.throttled_.fetch_add(1, std::memory_order_relaxed);
        }
        if (user != nullptr) MHD_free(user);
        if (password != nullptr) MHD_free(password);
        return verdict;
    }

    // A connection's socket context says whether a request came on it: one that closes without
    // any (a TLS handshake that failed, a client that sent nothing) is counted at its close.
    static void mark_requested(MHD_Connection *connection) {
        const MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (info != nullptr && info->socket_context != nullptr)
            *static_cast<bool *>(info->socket_context) = true;
    }

    static void notify(void *cls, MHD_Connection * /*connection*/, void **socket_context,
                       MHD_ConnectionNotificationCode code) {
        auto &server = *static_cast<HttpServer *>(cls);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
            *socket_context = new (std::nothrow) bool(false);
            return;
        }
        auto *requested = static_cast<bool *>(*socket_context);
        if (requested != nullptr && !*requested)
            server.no_request_.fetch_add(1, std::memory_order_relaxed);
        delete requested;
        *socket_context = nullptr;
    }
};

namespace {

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

bool HttpServer::start(Metrics metrics, std::string *error, const WebAuth &auth) {
    if (fd_ < 0 || daemon_ != nullptr) {
        *error = "metrics endpoint: not listening";
        return false;
    }
    metrics_ = std::move(metrics);
    auth_ = auth;
    if (!auth_.users.empty()) credentials_ = std::make_unique<CredentialCheck>(auth_.users);
    const int fd = fd_;
    // From here the socket is libmicrohttpd's: it closes it on stop. If the start fails it may
    // or may not have; it is not closed again (the number might be reused by then), the
    // daemon exits anyway.
    fd_ = -1;
    // The options as an array: the TLS ones only with TLS.
    std::vector<MHD_OptionItem> options = {
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&on_log), nullptr},
        {MHD_OPTION_LISTEN_SOCKET, fd, nullptr},
        {MHD_OPTION_THREAD_POOL_SIZE, kThreads, nullptr},
        {MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, kIdleTimeoutS, nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&HttpRequest::notify), this},
    };
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (auth_.tls_on) {
        flags |= MHD_USE_TLS;
        const auto text = [](const std::string &s) { return const_cast<char *>(s.c_str()); };
        options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, text(auth_.tls.cert_pem)});
        options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, text(auth_.tls.key_pem)});
        options.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, text(auth_.tls.priorities)});
        // A trust list makes libmicrohttpd ask for a client certificate; serve() checks it.
        if (!auth_.tls.client_ca_pem.empty())
            options.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, text(auth_.tls.client_ca_pem)});
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &HttpRequest::serve, this,
                               MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
    if (daemon_ == nullptr) {
        *error = "metrics endpoint on " + address_ + ": libmicrohttpd would not start";
        return false;
    }
    return true;
}

AuthRefusals HttpServer::refusals() const {
    return {no_credentials_.load(std::memory_order_relaxed),
            wrong_credentials_.load(std::memory_order_relaxed),
            client_certificate_.load(std::memory_order_relaxed),
            throttled_.load(std::memory_order_relaxed),
            no_request_.load(std::memory_order_relaxed)};
}

void HttpServer::stop() {
    if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

}  // namespace floodgate
