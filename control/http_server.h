// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics answers with the text the
// callback returns; anything else gets 404 or 405. One request per connection, served in
// turn; a client that does not send its request within 2 s is dropped.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "control/listen_address.h"

namespace floodgate {

class HttpServer {
  public:
    HttpServer() = default;
    ~HttpServer();
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    // Binds and listens on address (control/listen_address.h has the rules).
    bool listen(const std::string &address, std::string *error);
    void serve(const std::atomic<bool> &stop, const std::function<std::string()> &metrics);
    // The address actually bound, as "127.0.0.1:9417" (with the port chosen for port 0).
    const std::string &address() const { return address_; }
    int port() const { return port_; }
    // Whether the address is a loopback one; if not, the endpoint is reachable from other hosts.
    bool loopback() const { return loopback_; }

  private:
    int fd_ = -1;
    std::string address_;
    int port_ = 0;
    bool loopback_ = false;
};

}  // namespace floodgate
