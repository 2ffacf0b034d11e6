// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics answers with the text the
// callback returns; anything else gets 404 or 405. One request per connection, served in
// turn; a client that does not send its request within 2 s is dropped.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace floodgate {

class HttpServer {
  public:
    HttpServer() = default;
    ~HttpServer();
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    // address: "HOST:PORT" ("127.0.0.1:9417", "[::1]:9417", "0.0.0.0:9417").
    bool listen(const std::string &address, std::string *error);
    void serve(const std::atomic<bool> &stop, const std::function<std::string()> &metrics);
    // The port actually bound (useful with port 0).
    int port() const { return port_; }

  private:
    int fd_ = -1;
    int port_ = 0;
};

}  // namespace floodgate
