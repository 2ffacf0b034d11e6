#include "dataplane/api/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/message.h"

namespace floodgate {

namespace {

// Each client costs a buffer of up to kMaxMessageBytes; idle ones are dropped after 60 s.
constexpr size_t kMaxClients = 32;

bool make_address(const std::string &path, sockaddr_un *addr, std::string *error) {
    *addr = {};
    addr->sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof addr->sun_path) {
        *error = path + ": socket path empty or too long";
        return false;
    }
    std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
    return true;
}

// The directory of a socket path must exist; only the run directory is created, with mkdir
// rather than create_directories: a mistyped --control or --socket is refused instead of
// growing a directory tree (0755 by default) somewhere.
bool directory_ready(const std::string &path, const std::string &run_directory,
                     std::string *error) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) return true;  // a bare name: the working directory
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return true;
        *error = path + ": " + dir.string() + " is not a directory";
        return false;
    }
    int err = errno;
    if (err == ENOENT && dir == std::filesystem::path(run_directory)) {
        // 0700: only root (or our own user) has any business in it. EEXIST: the other
        // process created it meanwhile.
        if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return true;
        err = errno;
    }
    *error = path + ": directory " + dir.string() + ": " + std::strerror(err);
    if (err == ENOENT) *error += " (only " + run_directory + " is created; make it first)";
    return false;
}

// Root, or the user the server runs as.
bool peer_allowed(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
    return cred.uid == 0 || cred.uid == geteuid();
}

// A last word to a client about to be closed: whatever the socket takes now.
void send_once(int fd, const std::string &data) {
    ssize_t ignored = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
}

}  // namespace

bool write_all(int fd, const std::string &data, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        pollfd p{fd, POLLOUT, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    }
    return true;
}

ReadResult read_until(int fd, std::string *buf,
                      const std::function<bool(const std::string &)> &complete, int timeout_ms,
                      size_t max_bytes) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!complete(*buf)) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return ReadResult::timeout;
        char chunk[65536];
        ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
        if (got <= 0) return ReadResult::closed;
        buf->append(chunk, static_cast<size_t>(got));
        if (buf->size() > max_bytes) return ReadResult::too_long;
    }
    return ReadResult::complete;
}

LineServer::~LineServer() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(path_.c_str());
    }
}

bool LineServer::listen(const std::string &path, std::string *error) {
    sockaddr_un addr;
    if (!make_address(path, &addr, error)) return false;
    if (!directory_ready(path, run_directory_, error)) return false;

    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            *error = path + ": exists and is not a socket";
            return false;
        }
        LineClient probe;
        std::string ignored;
        if (probe.connect(path, &ignored)) {
            *error = path + ": another process is already serving on it";
            return false;
        }
        ::unlink(path.c_str());  // stale: its server is gone
    }

    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        *error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    // bind() creates the socket file with the mode of the socket's own inode, less the umask
    // (Linux, unix_bind() in net/unix/af_unix.c), so the file is 0600 from the moment it can
    // be connected to, without the umask() this used to change for the whole process, under
    // the feet of every other thread creating a file.
    if (::fchmod(fd_, 0600) != 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0) {
        *error = path + ": " + std::strerror(errno);
        ::close(fd_);
        fd_ = -1;
        return false;
    }
    path_ = path;
    return true;
}

void LineServer::serve(const std::atomic<bool> &stop, const Handler &handler,
                       const std::function<void()> &tick, int tick_ms) {
    using Clock = std::chrono::steady_clock;
    // A reply not taken within this is a stuck client: it is dropped, so that no client can
    // hold the thread (which also expires overrides) for longer.
    constexpr auto kReplyDeadline = std::chrono::seconds(2);
    constexpr auto kIdle = std::chrono::seconds(60);
    // Lines answered per client per loop pass, so a client pipelining many requests shares
    // the thread with the others and with tick.
    constexpr int kLinesPerPass = 16;

    struct Client {
        int fd;
        std::string in;
        size_t scanned = 0;  // bytes of `in` known to hold no newline
        std::string out;     // reply bytes not yet sent
        Clock::time_point out_since, last_request;
        std::function<std::optional<std::string>()> later;  // a reply still being worked out
    };
    std::vector<Client> clients;
    auto last_tick = Clock::now();

    // Sends what the socket takes now; false when the client is gone.
    auto flush = [](Client &c) {
        while (!c.out.empty()) {
            ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
            if (n <= 0) return false;
            c.out.erase(0, static_cast<size_t>(n));
        }
        return true;
    };
    // Answers complete lines while replies leave at once; false when the client must go.
    auto answer = [&](Client &c) {
        for (int lines = 0; lines < kLinesPerPass && c.out.empty(); ++lines) {
            size_t nl = c.in.find('\n', c.scanned);
            if (nl == std::string::npos) {
                c.scanned = c.in.size();
                if (c.in.size() > kMaxMessageBytes) {
                    std::fprintf(stderr, "%s: a client sent a line over %zu bytes; disconnected\n",
                                 path_.c_str(), kMaxMessageBytes);
                    send_once(c.fd, error_reply("message too long").dump() + "\n");
                    return false;
                }
                return true;
            }
            std::string line = c.in.substr(0, nl);
            c.in.erase(0, nl + 1);
            c.scanned = 0;
            c.last_request = Clock::now();
            LineServer::Answer a = handler(line);
            if (a.later) {
                c.later = std::move(a.later);
                return true;
            }
            c.out = a.line + "\n";
            c.out_since = Clock::now();
            if (!flush(c)) return false;
        }
        return true;
    };
    // A reply worked out elsewhere, once it is there: sent, and the client read from again.
    auto collect = [&](Client &c) {
        std::optional<std::string> line = c.later();
        if (!line) return true;
        c.later = nullptr;
        c.last_request = Clock::now();  // its wait was not idleness
        c.out = *line + "\n";
        c.out_since = Clock::now();
        return flush(c) && answer(c);
    };

    while (!stop.load()) {
        std::vector<pollfd> fds;
        fds.push_back({fd_, POLLIN, 0});
        // A client with a reply pending is not read from until the reply has left.
        for (const Client &c : clients)
            fds.push_back({c.fd,
                           static_cast<short>(c.later         ? 0
                                              : c.out.empty() ? POLLIN
                                                              : POLLOUT),
                           0});
        int n = ::poll(fds.data(), fds.size(), tick_ms);
        const auto now = Clock::now();
        if (now - last_tick >= std::chrono::milliseconds(tick_ms)) {
            last_tick = now;
            if (tick) tick();
        }

        std::vector<bool> keep(clients.size(), true);
        for (size_t i = 0; i < clients.size(); ++i) {
            Client &c = clients[i];
            const short revents = n > 0 ? fds[i + 1].revents : 0;
            if (c.later) {
                keep[i] = !(revents & (POLLHUP | POLLERR)) && collect(c);
            } else if (revents & POLLOUT) {
                keep[i] = flush(c) && answer(c);
            } else if (revents & (POLLIN | POLLHUP | POLLERR)) {
                char buf[65536];
                ssize_t got = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                if (got <= 0) {
                    keep[i] = false;
                    continue;
                }
                c.in.append(buf, static_cast<size_t>(got));
                keep[i] = answer(c);
            } else if (c.out.empty() && !c.in.empty() &&
                       c.in.find('\n', c.scanned) != std::string::npos) {
                keep[i] = answer(c);  // lines left over from the last pass's limit
            }
            if (keep[i] && !c.out.empty() && now - c.out_since > kReplyDeadline) {
                std::fprintf(stderr, "%s: a client did not read its reply in time; disconnected\n",
                             path_.c_str());
                keep[i] = false;
            }
            if (keep[i] && c.out.empty() && !c.later && now - c.last_request > kIdle)
                keep[i] = false;
        }
        for (size_t i = clients.size(); i-- > 0;)
            if (!keep[i]) {
                ::close(clients[i].fd);
                clients.erase(clients.begin() + static_cast<long>(i));
            }

        if (n > 0 && (fds[0].revents & POLLIN)) {
            int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) continue;
            if (!peer_allowed(fd)) {
                std::fprintf(stderr, "%s: refused a client that is neither root nor our user\n",
                             path_.c_str());
                ::close(fd);
            } else if (clients.size() >= kMaxClients) {
                send_once(fd, error_reply("too many clients").dump() + "\n");
                ::close(fd);
            } else {
                clients.push_back({fd, {}, 0, {}, now, now});
            }
        }
    }
    for (const Client &c : clients) ::close(c.fd);
}

bool LineClient::connect(const std::string &path, std::string *error) {
    close();
    sockaddr_un addr;
    if (!make_address(path, &addr, error)) return false;
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        *error = path + ": " + std::strerror(errno);
        close();
        return false;
    }
    return true;
}

void LineClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
}

bool LineClient::request(const nlohmann::json &request, nlohmann::json *reply, std::string *error,
                         int timeout_ms) {
    if (fd_ < 0) {
        *error = "not connected";
        return false;
    }
    if (!write_all(fd_, request.dump() + "\n", timeout_ms)) {
        *error = std::string("cannot send: ") + std::strerror(errno);
        close();
        return false;
    }
    const ReadResult got = read_until(
        fd_, &buffer_, [](const std::string &b) { return b.find('\n') != std::string::npos; },
        timeout_ms, kMaxMessageBytes + 1);
    if (got != ReadResult::complete) {
        *error = got == ReadResult::timeout
                     ? "no reply within " + std::to_string(timeout_ms) + " ms"
                 : got == ReadResult::closed ? "connection closed"
                                             : "reply too long";
        close();
        return false;
    }
    const size_t nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    try {
        *reply = parse_response(line);
    } catch (const MessageError &e) {
        *error = std::string("bad reply: ") + e.what();
        close();
        return false;
    }
    return true;
}

}  // namespace floodgate
