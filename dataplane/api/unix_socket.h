// Newline-delimited messages over UNIX stream sockets, for the control protocol
// (dataplane/api/control_protocol.h): a server that answers one line with one line, and a
// client that sends a request and waits for its reply. Socket files are mode 0600 (less the
// umask, which can only take bits away) from the moment they exist, and only peers running as
// root or as the server's own user are served (SO_PEERCRED).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/message.h"

namespace floodgate {

class LineServer {
  public:
    // The answer to one request line: the reply line (no newline) now, or, when `later` is set,
    // later: the server asks `later` every pass (at least every tick_ms) until it gives the
    // line, answering its other clients meanwhile; the client waiting is not read from until
    // its reply has left, as with any reply. For work that takes seconds (a load that
    // compiles: BackgroundAnswer below).
    struct Answer {
        Answer(std::string reply = {}) : line(std::move(reply)) {}
        std::string line;
        std::function<std::optional<std::string>()> later;
    };
    using Handler = std::function<Answer(const std::string &)>;

    // run_directory: the one socket directory listen() creates when it is missing (the tests
    // point it at a temporary directory).
    explicit LineServer(std::string run_directory = kRunDirectory)
        : run_directory_(std::move(run_directory)) {}
    ~LineServer();
    LineServer(const LineServer &) = delete;
    LineServer &operator=(const LineServer &) = delete;

    // Binds path, replacing a stale socket file but refusing one a live server answers on.
    // path's directory must exist, except the run directory, which is created mode 0700.
    // Does not touch the process umask (DPDK's threads share it).
    bool listen(const std::string &path, std::string *error);
    // Serves until stop is set, calling tick every tick_ms. Sockets are non-blocking and a
    // client is read from only once its last reply has left, so no client can hold the
    // thread: one whose line grows past kMaxMessageBytes gets an error reply and is
    // disconnected, as is one that leaves a reply unread for 2 s or sends nothing for 60 s
    // (a reply still being worked out is not late).
    void serve(const std::atomic<bool> &stop, const Handler &handler,
               const std::function<void()> &tick, int tick_ms);
    const std::string &path() const { return path_; }

  private:
    std::string run_directory_;
    int fd_ = -1;
    std::string path_;
};

// One request at a time answered on a thread of its own, so that the server's thread goes on
// answering the others (stats during a load that compiles for seconds). start() runs work on
// its thread and gives the Answer whose `later` calls finish with work's future, on the
// server's thread, once it is ready (finish calls get(), so it sees work's exceptions). While
// one runs, start() gives nullopt: the caller refuses the request as busy. A result whose client
// left before it was ready is dropped when the next start() finds it done.
template <typename T>
class BackgroundAnswer {
  public:
    using Finish = std::function<std::string(std::future<T> &)>;
    BackgroundAnswer() = default;
    BackgroundAnswer(const BackgroundAnswer &) = delete;
    BackgroundAnswer &operator=(const BackgroundAnswer &) = delete;
    ~BackgroundAnswer() {
        if (running_.valid()) running_.wait();
    }

    std::optional<LineServer::Answer> start(std::function<T()> work, Finish finish) {
        if (running_.valid()) {
            const bool done =
                running_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
            if (!done || !waiter_.expired()) return std::nullopt;
            running_ = {};  // done, and its client is gone
        }
        try {
            running_ = std::async(std::launch::async, std::move(work));
        } catch (const std::system_error &e) {  // no thread to be had: say so, serve on
            return LineServer::Answer(
                error_reply(std::string("no thread for it: ") + e.what()).dump());
        }
        auto waiter = std::make_shared<bool>(true);
        waiter_ = waiter;
        LineServer::Answer answer;
        answer.later = [this, waiter, finish = std::move(finish)]() -> std::optional<std::string> {
            if (running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
                return std::nullopt;
            std::future<T> done = std::move(running_);
            return finish(done);
        };
        return answer;
    }

  private:
    std::future<T> running_;
    std::weak_ptr<bool> waiter_;  // alive while the client waiting for running_ is connected
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

enum class ReadResult { complete, timeout, closed, too_long };
// Appends what fd sends to *buf until complete(*buf) holds, within timeout_ms in all and
// max_bytes of buffer.
ReadResult read_until(int fd, std::string *buf,
                      const std::function<bool(const std::string &)> &complete, int timeout_ms,
                      size_t max_bytes);

// Writes all of data within timeout_ms in all (a peer reading slowly cannot stretch it);
// false on error or timeout.
bool write_all(int fd, const std::string &data, int timeout_ms);

}  // namespace floodgate
