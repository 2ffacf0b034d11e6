#include "control/cluster/store_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace floodgate {

namespace {

// OpenSSL's last error as text ("" when its queue is empty).
std::string ssl_error() {
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(e, text, sizeof text);
        out = text;  // the last is the nearest to the cause
    }
    return out;
}

bool wait_for(int fd, short events, StoreLink::Clock::time_point deadline, std::string *error) {
    for (;;) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - StoreLink::Clock::now());
        if (left.count() <= 0) {
            *error = "timed out";
            return false;
        }
        pollfd p{fd, events, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
        if (rc > 0) return true;  // ready, or an error that the send or recv reports
        if (rc < 0 && errno != EINTR) {
            *error = std::string("poll: ") + std::strerror(errno);
            return false;
        }
    }
}

// After an SSL call returned rc <= 0: waits for what it wants and returns true, or sets *error
// (and *refused when TLS itself failed: an alert, a certificate refused; or when the session
// ended before the store's first answer, which is how a server refuses a client's certificate
// in TLS 1.3: after the client's handshake is done).
bool ssl_wait(SSL *ssl, int rc, int fd, StoreLink::Clock::time_point deadline, std::string *error,
              bool answered, bool *refused) {
    switch (SSL_get_error(ssl, rc)) {
        case SSL_ERROR_WANT_READ:
            return wait_for(fd, POLLIN, deadline, error);
        case SSL_ERROR_WANT_WRITE:
            return wait_for(fd, POLLOUT, deadline, error);
        case SSL_ERROR_ZERO_RETURN:
            *refused |= !answered;
            *error = "the store closed the connection";
            return false;
        case SSL_ERROR_SYSCALL:
            *refused |= !answered;
            *error = errno != 0 ? std::string("TLS: ") + std::strerror(errno)
                                : "the store closed the connection";
            return false;
        default: {
            *refused = true;
            const std::string why = ssl_error();
            *error = "TLS: " + (why.empty() ? "failed" : why);
            return false;
        }
    }
}

}  // namespace

std::shared_ptr<const StoreTlsContext> StoreTlsContext::make(const StoreTlsFiles &files,
                                                             const std::string &host,
                                                             std::string *why) {
    std::shared_ptr<StoreTlsContext> t(new StoreTlsContext);
    t->name_ = files.name.empty() ? host : files.name;
    ERR_clear_error();
    t->ctx_ = SSL_CTX_new(TLS_client_method());
    auto failed = [&](const std::string &what) {
        *why = what + ": " + ssl_error();
        return nullptr;
    };
    if (t->ctx_ == nullptr) return failed("TLS");
    SSL_CTX_set_min_proto_version(t->ctx_, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx_, SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(t->ctx_, files.ca.c_str(), nullptr) != 1)
        return failed("the CA file '" + files.ca + "'");
    if (!files.cert.empty()) {
        if (SSL_CTX_use_certificate_chain_file(t->ctx_, files.cert.c_str()) != 1)
            return failed("the certificate file '" + files.cert + "'");
        if (SSL_CTX_use_PrivateKey_file(t->ctx_, files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx_) != 1)
            return failed("the key file '" + files.key + "'");
    }
    return t;
}

StoreTlsContext::~StoreTlsContext() {
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

std::unique_ptr<StoreLink> StoreLink::open(const std::string &host, int port,
                                           const StoreTlsContext *tls, int timeout_ms,
                                           LinkFailure *failure, std::string *error) {
    *failure = LinkFailure::connect;
    const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = port == 0 ? redisConnectUnixWithTimeout(host.c_str(), tv)
                                : redisConnectWithTimeout(host.c_str(), port, tv);
    if (c == nullptr || c->err != 0) {
        *error = c != nullptr ? c->errstr : "out of memory";
        if (c != nullptr) redisFree(c);
        return nullptr;
    }
    std::unique_ptr<StoreLink> link(new StoreLink);
    link->redis_ = c;
    const int flags = ::fcntl(c->fd, F_GETFL);
    if (flags < 0 || ::fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        *error = std::string("fcntl: ") + std::strerror(errno);
        return nullptr;
    }
    if (tls != nullptr &&
        !link->handshake(*tls, Clock::now() + std::chrono::milliseconds(timeout_ms), error)) {
        // A handshake that did not end in time is a slow or silent store, as a connect that
        // did not: only what TLS itself refused counts as a refusal.
        *failure = link->tls_refused_ ? LinkFailure::tls : LinkFailure::connect;
        return nullptr;
    }
    *failure = LinkFailure::none;
    return link;
}

bool StoreLink::handshake(const StoreTlsContext &tls, Clock::time_point deadline,
                          std::string *error) {
    ERR_clear_error();
    ssl_ = SSL_new(tls.ctx());
    if (ssl_ == nullptr || SSL_set_fd(ssl_, redis_->fd) != 1) {
        *error = "TLS: " + ssl_error();
        return false;
    }
    // The name checked in the certificate: an IP address against its IP entries, a name
    // against its DNS entries (and sent as SNI).
    in6_addr ip{};
    const std::string &name = tls.name();
    const bool is_ip = ::inet_pton(AF_INET, name.c_str(), &ip) == 1 ||
                       ::inet_pton(AF_INET6, name.c_str(), &ip) == 1;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl_);
    if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1
              : (SSL_set1_host(ssl_, name.c_str()) != 1 ||
                 SSL_set_tlsext_host_name(ssl_, name.c_str()) != 1)) {
        *error = "TLS: cannot check for the name '" + name + "'";
        return false;
    }
    for (;;) {
        ERR_clear_error();
        const int rc = SSL_connect(ssl_);
        if (rc == 1) return true;
        const long verified = SSL_get_verify_result(ssl_);
        if (verified != X509_V_OK) {
            tls_refused_ = true;
            *error = "TLS: the store's certificate is refused: " +
                     std::string(X509_verify_cert_error_string(verified));
            return false;
        }
        if (!ssl_wait(ssl_, rc, redis_->fd, deadline, error, false, &tls_refused_)) {
            if (error->starts_with("timed out")) *error = "TLS: the handshake timed out";
            return false;
        }
    }
}

StoreLink::~StoreLink() {
    if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: the socket closes with it
    if (redis_ != nullptr) redisFree(redis_);
}

bool StoreLink::send_all(std::string_view data, Clock::time_point deadline, std::string *error) {
    const int fd = redis_->fd;
    while (!data.empty()) {
        if (ssl_ != nullptr) {
            // A write that must be retried is retried with the same bytes, as OpenSSL asks.
            ERR_clear_error();
            const int n = SSL_write(ssl_, data.data(),
                                    static_cast<int>(std::min<size_t>(data.size(), 1u << 30)));
            if (n > 0)
                data.remove_prefix(static_cast<size_t>(n));
            else if (!ssl_wait(ssl_, n, fd, deadline, error, answered_, &tls_refused_))
                return false;
            continue;
        }
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            *error = std::string("send: ") + std::strerror(errno);
            return false;
        }
        if (!wait_for(fd, POLLOUT, deadline, error)) return false;
    }
    return true;
}

size_t StoreLink::receive(char *buf, size_t size, Clock::time_point deadline, std::string *error) {
    const int fd = redis_->fd;
    for (;;) {
        if (ssl_ != nullptr) {
            // Read before polling: a record already decrypted leaves nothing on the socket.
            ERR_clear_error();
            const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, 1u << 30)));
            if (n > 0) {
                answered_ = true;
                return static_cast<size_t>(n);
            }
            if (!ssl_wait(ssl_, n, fd, deadline, error, answered_, &tls_refused_)) return 0;
            continue;
        }
        const ssize_t got = ::recv(fd, buf, size, 0);
        if (got > 0) return static_cast<size_t>(got);
        if (got == 0) {
            *error = "the store closed the connection";
            return 0;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            *error = std::string("recv: ") + std::strerror(errno);
            return 0;
        }
        if (!wait_for(fd, POLLIN, deadline, error)) return 0;
    }
}

bool StoreLink::idle_and_open() {
    pollfd p{redis_->fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return true;
    if (ssl_ == nullptr) return false;
    char byte;
    ERR_clear_error();
    const int n = SSL_peek(ssl_, &byte, 1);
    return n <= 0 && SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ;
}

}  // namespace floodgate
