// The daemon's HTTP endpoint for Prometheus, on libmicrohttpd (Debian's libmicrohttpd-dev):
// GET (or HEAD) /metrics answers with the text the callback returns, as text format 0.0.4;
// GET / says where the metrics are; any other path is 404 and any other method 405.
// With a WebAuth (control/metrics/web_auth.h), it speaks TLS only, and every request without
// the credentials it asks for is answered 401 (basic auth, with WWW-Authenticate), 403 (no
// verified client certificate) or 429 (credentials not checked: over the bcrypt budget,
// credential_check.h), counted by reason, before its path or method is looked at; so is a
// connection that closes without a request (a TLS handshake that failed).
//
// Clients are served concurrently, so no client can delay another's scrape: connections are
// multiplexed (epoll) by a small pool of threads, a connection idle for kIdleTimeoutS is
// closed, at most kMaxConnections are open at once, and a request header is bounded by
// libmicrohttpd's per-connection memory (32 KiB by default; larger is answered 431).
// (A hand-written server that served one connection at a time was here before: five idle
// connections and a half request held a scrape for 12 s, past Prometheus's 10 s timeout.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "control/common/listen_address.h"
#include "control/metrics/credential_check.h"
#include "control/metrics/web_auth.h"

struct MHD_Daemon;

namespace floodgate {

class HttpServer {
  public:
    using Metrics = std::function<std::string()>;

    // Threads that serve connections. A scrape's callback waits for the dataplane (one
    // request at a time on the daemon's link, 10 s timeout at most), so a second thread keeps
    // accepting and answering while one waits; more would only queue on that link.
    static constexpr unsigned kThreads = 2;
    static constexpr unsigned kMaxConnections = 64;
    // An idle connection gives its slot back after this. Prometheus's own keep-alive
    // connection may be one (its scrape interval is usually longer): it opens a new one.
    static constexpr unsigned kIdleTimeoutS = 10;

    HttpServer() = default;
    ~HttpServer() { stop(); }
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    // Binds and listens on address (control/common/listen_address.h has the rules); serves nothing
    // until start(). False with *error saying why.
    bool listen(const std::string &address, std::string *error);
    // Serves on the server's own threads until stop(), asking what auth asks (no TLS and no
    // credentials by default). metrics is called from them, up to kThreads at once, and must
    // stay valid until stop() returns.
    bool start(Metrics metrics, std::string *error, const WebAuth &auth = {});
    // Stops serving; returns once no callback runs any more. Idempotent.
    void stop();

    // The address actually bound, as "127.0.0.1:9417" (with the port chosen for port 0).
    const std::string &address() const { return address_; }
    int port() const { return port_; }
    // Whether the address is a loopback one; if not, the endpoint is reachable from other hosts.
    bool loopback() const { return loopback_; }
    // Requests refused for want of credentials, so far.
    AuthRefusals refusals() const;

  private:
    int fd_ = -1;  // the listening socket until start() hands it to libmicrohttpd
    std::string address_;
    int port_ = 0;
    bool loopback_ = false;
    Metrics metrics_;
    WebAuth auth_;
    std::unique_ptr<CredentialCheck> credentials_;  // with basic auth's users
    std::atomic<uint64_t> no_credentials_{0}, wrong_credentials_{0}, client_certificate_{0},
        throttled_{0}, no_request_{0};
    MHD_Daemon *daemon_ = nullptr;

    friend struct HttpRequest;
};

}  // namespace floodgate
