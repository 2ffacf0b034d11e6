// LineServer::listen: the socket file's mode, the process umask, and which directories it
// creates. Plain sockets in a temporary directory: no EAL, no root.
#include "dataplane/api/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

// Every umask() call in this binary lands here (an executable's own definition wins over
// libc's), so a test can see whether listen() touched the umask at all, even for a moment: a
// change restored before listen() returns is invisible from outside, yet it races with every
// other thread creating a file.
namespace {
std::atomic<int> g_umask_calls{0};
}  // namespace
extern "C" mode_t umask(mode_t mask) noexcept {
    g_umask_calls.fetch_add(1);
    return static_cast<mode_t>(::syscall(SYS_umask, mask));
}

namespace floodgate {
namespace {

namespace fs = std::filesystem;

class TempDir {
  public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "fg-socket-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) std::abort();
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const fs::path &path() const { return path_; }

  private:
    fs::path path_;
};

// Runs f with the process umask set to mask, and restores it.
template <typename F>
auto with_umask(mode_t mask, F f) {
    const mode_t old = ::umask(mask);
    auto result = f();
    ::umask(old);
    return result;
}

TEST(LineServerListen, SocketFileIsMode0600EvenWithUmaskZero) {
    TempDir dir;
    const std::string path = (dir.path() / "s.sock").string();
    LineServer server;
    std::string error;
    ASSERT_TRUE(with_umask(0, [&] { return server.listen(path, &error); })) << error;
    struct stat st;
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFSOCK | 0600)) << std::oct << st.st_mode;
}

TEST(LineServerListen, LeavesTheProcessUmaskAlone) {
    TempDir dir;
    const std::string path = (dir.path() / "s.sock").string();
    LineServer server;
    std::string error;
    const mode_t before = ::umask(0022);
    const int calls_before = g_umask_calls.load();
    const bool ok = server.listen(path, &error);
    const int calls_during = g_umask_calls.load() - calls_before;
    const mode_t after = ::umask(before);
    ASSERT_TRUE(ok) << error;
    EXPECT_EQ(calls_during, 0) << "listen() changed the process umask, if only for a moment";
    EXPECT_EQ(after, 0022u);
}

TEST(LineServerListen, RefusesAPathInAMissingDirectoryAndCreatesNothing) {
    TempDir dir;
    const fs::path missing = dir.path() / "no" / "such";
    const std::string path = (missing / "s.sock").string();
    LineServer server;
    std::string error;
    EXPECT_FALSE(server.listen(path, &error));
    EXPECT_NE(error.find(missing.string()), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir.path() / "no"));
}

TEST(LineServerListen, CreatesOnlyTheRunDirectoryMode0700) {
    TempDir dir;
    const fs::path run = dir.path() / "run";
    LineServer server(run.string());
    std::string error;
    const std::string path = (run / "s.sock").string();
    ASSERT_TRUE(with_umask(0, [&] { return server.listen(path, &error); })) << error;
    struct stat st;
    ASSERT_EQ(::stat(run.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFDIR | 0700)) << std::oct << st.st_mode;
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFSOCK | 0600)) << std::oct << st.st_mode;

    // Below the run directory is not the run directory.
    LineServer deeper(run.string());
    EXPECT_FALSE(deeper.listen((run / "sub" / "s.sock").string(), &error));
    EXPECT_FALSE(fs::exists(run / "sub"));
}

TEST(LineServerListen, AnExistingDirectoryIsUsedAsItIs) {
    TempDir dir;
    fs::create_directory(dir.path() / "mine");
    fs::permissions(dir.path() / "mine", fs::perms(0750));
    LineServer server;
    std::string error;
    ASSERT_TRUE(server.listen((dir.path() / "mine" / "s.sock").string(), &error)) << error;
    EXPECT_EQ(fs::status(dir.path() / "mine").permissions(), fs::perms(0750));
}

}  // namespace
}  // namespace floodgate
