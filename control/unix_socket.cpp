#include "control/unix_socket.h"

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

#include "control/message.h"
#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

constexpr size_t kMaxClients = 16;

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

void set_timeout(int fd, int option, int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

// Root, or the user the server runs as.
bool peer_allowed(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
    return cred.uid == 0 || cred.uid == geteuid();
}

struct Client {
    int fd;
    std::string in;
};

}  // namespace

bool write_all(int fd, const std::string &data) {
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
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
    std::error_code ec;
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);

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
    // Created with no permissions for group and others before it can be connected to.
    mode_t old = ::umask(0077);
    int rc = ::bind(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
    ::umask(old);
    if (rc != 0 || ::listen(fd_, 16) != 0) {
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
    std::vector<Client> clients;
    auto drop = [&](size_t i) {
        ::close(clients[i].fd);
        clients.erase(clients.begin() + static_cast<long>(i));
    };
    auto last_tick = std::chrono::steady_clock::now();
    while (!stop.load()) {
        std::vector<pollfd> fds;
        fds.push_back({fd_, POLLIN, 0});
        for (const Client &c : clients) fds.push_back({c.fd, POLLIN, 0});
        int n = ::poll(fds.data(), fds.size(), tick_ms);
        auto now = std::chrono::steady_clock::now();
        if (now - last_tick >= std::chrono::milliseconds(tick_ms) || n == 0) {
            last_tick = now;
            if (tick) tick();
        }
        if (n <= 0) continue;

        // Clients first (their indexes match fds[1..]), newest last so erasing is safe.
        for (size_t i = clients.size(); i-- > 0;) {
            if (fds[i + 1].revents == 0) continue;
            char buf[65536];
            ssize_t got = ::recv(clients[i].fd, buf, sizeof buf, 0);
            if (got <= 0) {
                drop(i);
                continue;
            }
            Client &c = clients[i];
            c.in.append(buf, static_cast<size_t>(got));
            bool ok = true;
            for (size_t nl; ok && (nl = c.in.find('\n')) != std::string::npos;) {
                std::string line = c.in.substr(0, nl);
                c.in.erase(0, nl + 1);
                ok = write_all(c.fd, handler(line) + "\n");
            }
            if (ok && c.in.size() > kMaxMessageBytes) {
                std::fprintf(stderr, "%s: a client sent a line over %zu bytes; disconnected\n",
                             path_.c_str(), kMaxMessageBytes);
                write_all(c.fd, error_reply("message too long").dump() + "\n");
                ok = false;
            }
            if (!ok) drop(i);
        }
        if (fds[0].revents & POLLIN) {
            int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            if (!peer_allowed(fd)) {
                std::fprintf(stderr, "%s: refused a client that is neither root nor our user\n",
                             path_.c_str());
                ::close(fd);
            } else if (clients.size() >= kMaxClients) {
                write_all(fd, error_reply("too many clients").dump() + "\n");
                ::close(fd);
            } else {
                set_timeout(fd, SO_SNDTIMEO, 2000);
                clients.push_back({fd, {}});
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
    set_timeout(fd_, SO_SNDTIMEO, timeout_ms);
    if (!write_all(fd_, request.dump() + "\n")) {
        *error = std::string("cannot send: ") + std::strerror(errno);
        close();
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t nl;
    while ((nl = buffer_.find('\n')) == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        pollfd p{fd_, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
            *error = "no reply within " + std::to_string(timeout_ms) + " ms";
            close();
            return false;
        }
        char buf[65536];
        ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
        if (got <= 0) {
            *error = "connection closed";
            close();
            return false;
        }
        buffer_.append(buf, static_cast<size_t>(got));
        if (buffer_.size() > kMaxMessageBytes + 1) {
            *error = "reply too long";
            close();
            return false;
        }
    }
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
