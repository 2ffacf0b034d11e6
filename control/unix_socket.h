// Newline-delimited messages over UNIX stream sockets, for the control protocol
// (dataplane/api/control_protocol.h): a server that answers one line with one line, and a
// client that sends a request and waits for its reply. Sockets are created mode 0600 and only
// peers running as root or as the server's own user are served.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

class LineServer {
  public:
    // Answers one request line with one response line (no newline in either).
    using Handler = std::function<std::string(const std::string &)>;

    LineServer() = default;
    ~LineServer();
    LineServer(const LineServer &) = delete;
    LineServer &operator=(const LineServer &) = delete;

    // Binds path, replacing a stale socket file but refusing one a live server answers on.
    bool listen(const std::string &path, std::string *error);
    // Serves until stop is set, calling tick at least every tick_ms. A client whose line
    // grows past kMaxMessageBytes gets an error reply and is disconnected; one that does not
    // read its reply within 2 s is disconnected.
    void serve(const std::atomic<bool> &stop, const Handler &handler,
               const std::function<void()> &tick, int tick_ms);
    const std::string &path() const { return path_; }

  private:
    int fd_ = -1;
    std::string path_;
};

class LineClient {
  public:
    LineClient() = default;
    ~LineClient() { close(); }
    LineClient(const LineClient &) = delete;
    LineClient &operator=(const LineClient &) = delete;

    bool connect(const std::string &path, std::string *error);
    bool connected() const { return fd_ >= 0; }
    void close();
    // Sends request and reads the reply line within timeout_ms; on any failure the connection
    // is closed and *error says why.
    bool request(const nlohmann::json &request, nlohmann::json *reply, std::string *error,
                 int timeout_ms = 10000);

  private:
    int fd_ = -1;
    std::string buffer_;  // bytes read past the last reply
};

// Writes all of data; false on error or timeout (the socket's SO_SNDTIMEO).
bool write_all(int fd, const std::string &data);

}  // namespace floodgate
