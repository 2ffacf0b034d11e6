// The cluster store's connection (control/cluster/cluster_store.h): TCP or a Unix socket,
// plain or in TLS, non-blocking, every wait bounded by a deadline.
//
// Why OpenSSL here, around a socket we own: hiredis 0.14 (Debian 12's) has no TLS (hiredis_ssl
// came with 1.0), and the store already does its own I/O on the socket hiredis connects, to bound
// a reply in bytes and time and to keep SIGPIPE away; TLS goes under that I/O as one layer, and
// hiredis stays what it is here, a connector and a reply parser. A TLS proxy (stunnel) would be
// one more process to run and watch, whose failures the daemon could not see or count.
// The server's certificate must chain to the configured CA and carry the configured name (or the
// address's host); TLS 1.2 at least. OpenSSL's socket BIO writes with write(): the daemon ignores
// SIGPIPE (control/daemon/daemon.cpp), as any program of this link's must.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "control/cluster/store_auth.h"

struct redisContext;
struct ssl_st;
struct ssl_ctx_st;

namespace floodgate {

// What the TLS files make, once: the CA, the name to verify, the client certificate and key.
class StoreTlsContext {
  public:
    // nullptr and *why when a file cannot be read or does not hold what it should.
    static std::shared_ptr<const StoreTlsContext> make(const StoreTlsFiles &files,
                                                       const std::string &host, std::string *why);
    ~StoreTlsContext();
    StoreTlsContext(const StoreTlsContext &) = delete;
    StoreTlsContext &operator=(const StoreTlsContext &) = delete;

    ssl_ctx_st *ctx() const { return ctx_; }
    const std::string &name() const { return name_; }

  private:
    StoreTlsContext() = default;
    ssl_ctx_st *ctx_ = nullptr;
    std::string name_;  // what the server's certificate must name
};

enum class LinkFailure { none, connect, tls };

class StoreLink {
  public:
    using Clock = std::chrono::steady_clock;

    // Connects to host:port (port 0: the Unix socket at host), then, with tls, handshakes and
    // verifies the server, each within timeout_ms. nullptr, *failure and *error when it cannot.
    static std::unique_ptr<StoreLink> open(const std::string &host, int port,
                                           const StoreTlsContext *tls, int timeout_ms,
                                           LinkFailure *failure, std::string *error);
    ~StoreLink();
    StoreLink(const StoreLink &) = delete;
    StoreLink &operator=(const StoreLink &) = delete;

    bool send_all(std::string_view data, Clock::time_point deadline, std::string *error);
    // Up to size bytes into buf, at least one; 0 with *error when the store closed the
    // connection, the deadline passed or the link failed.
    size_t receive(char *buf, size_t size, Clock::time_point deadline, std::string *error);
    // An idle link that has data to read was closed by the store (its `timeout`) or holds data
    // nobody asked for: it cannot carry a sync. (TLS records that are not data, such as TLS
    // 1.3's session tickets, are read and do not count.)
    bool idle_and_open();
    // Whether TLS itself failed on this link, or its session ended before the store's first
    // answer (in TLS 1.3 a server refuses the client's certificate after the client's handshake
    // is done, and the client finds out at its first read).
    bool tls_refused() const { return tls_refused_; }

  private:
    StoreLink() = default;
    bool handshake(const StoreTlsContext &tls, Clock::time_point deadline, std::string *error);

    redisContext *redis_ = nullptr;  // owns the socket
    ssl_st *ssl_ = nullptr;          // the TLS session on it, or nullptr
    bool tls_refused_ = false;
    bool answered_ = false;  // the store sent data through TLS
};

}  // namespace floodgate
