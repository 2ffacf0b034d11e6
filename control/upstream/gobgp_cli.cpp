#include "control/upstream/gobgp_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace floodgate {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBytes = 4096;  // of a call's stderr, for the error

std::string first_line(const std::string &text) {
    const size_t start = text.find_first_not_of(" \n");
    if (start == std::string::npos) return "";
    return text.substr(start, std::min<size_t>(text.find('\n', start) - start, 200));
}

// Waits for pid until the deadline, then kills it; true when it exited with status 0.
bool reap(pid_t pid, Clock::time_point deadline, std::string *why) {
    int status = 0;
    for (;;) {
        const pid_t got = ::waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            *why = std::string("waitpid: ") + std::strerror(errno);
            return false;
        }
        if (Clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            *why = "timed out";
            return false;
        }
        ::poll(nullptr, 0, 1);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    *why = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                             : "killed by signal " + std::to_string(WTERMSIG(status));
    return false;
}

}  // namespace

bool run_cli(const std::vector<std::string> &argv, int timeout_ms, size_t max_output_bytes,
             std::string *out, std::string *error) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string command;
    for (const std::string &a : argv) command.append(command.empty() ? "" : " ").append(a);
    auto fail = [&](const std::string &why) {
        *error = command.substr(0, 300) + ": " + why;
        return false;
    };
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        return fail(std::strerror(e));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    // The daemon ignores SIGPIPE and its threads may block signals: the child starts clean.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, pipe_only;
    sigemptyset(&none);
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe_only);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        return fail(std::string("cannot run: ") + std::strerror(rc));
    }

    out->clear();
    std::string err_text;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string why;
    while ((fds[0].fd >= 0 || fds[1].fd >= 0) && why.empty()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            why = "timed out";
            break;
        }
        if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) {
            why = std::string("poll: ") + std::strerror(errno);
            break;
        }
        for (pollfd &p : fds) {
            if (p.fd < 0 || p.revents == 0) continue;
            char buf[65536];
            const ssize_t got = ::read(p.fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                ::close(p.fd);
                p.fd = -1;
            } else if (&p == &fds[0]) {
                if (out->size() + static_cast<size_t>(got) > max_output_bytes) {
                    why = "more than " + std::to_string(max_output_bytes) + " bytes of output";
                    break;
                }
                out->append(buf, static_cast<size_t>(got));
            } else {
                if (err_text.size() < kMaxErrorBytes)
                    err_text.append(
                        buf, std::min(static_cast<size_t>(got), kMaxErrorBytes - err_text.size()));
            }
        }
    }
    for (pollfd &p : fds)
        if (p.fd >= 0) ::close(p.fd);
    if (!why.empty()) {
        ::kill(pid, SIGKILL);
        std::string ignored;
        reap(pid, deadline, &ignored);
        return fail(why);
    }
    if (reap(pid, deadline, &why)) return true;
    // gobgp writes errors to stderr, and to stdout as {"error": ...} with -j.
    const std::string said = first_line(err_text.empty() ? *out : err_text);
    return fail(said.empty() ? why : why + ": " + said);
}

}  // namespace floodgate
