// The cluster's store (control/cluster/cluster_store.h) against a real redis-server that wants a
// login and TLS: ACL users confined to the cluster's keys and the commands the sync script uses,
// the default user off; TLS with certificates this test makes with the openssl command. The
// fixture reaches the server as an admin user on a Unix socket of its own. Expected values are
// the deltas the test pushed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control/cluster/cluster_store.h"
#include "control/cluster/store_auth.h"
#include "tests/redis_server.h"

extern char **environ;

namespace floodgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Deltas = std::vector<ClusterDelta>;

constexpr auto kDeadline = std::chrono::seconds(10);
constexpr auto kPollPause = std::chrono::milliseconds(10);
constexpr const char *kAdminPassword = "admin-secret";

// What the sync script calls (control/cluster/cluster_store.lua), and the calls that run it.
constexpr const char *kBoxCommands =
    "-@all +evalsha +eval +script|load +time +type +zadd +zremrangebyscore +zcard +xrevrange "
    "+xadd +xrange";

void write_file(const fs::path &path, const std::string &text, mode_t mode) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
}

using Raw = RawRedis;

// A redis-server from a configuration file written here: ACL users A and B (cluster "test"),
// an admin, the default user off; plain on a TCP port, or TLS only (port 0) with tls.
class AuthStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(::access(kRedisServer, X_OK), 0) << "these tests need redis-server";
        std::string pattern = (fs::temp_directory_path() / "fg-redis-auth-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
        dir_ = pattern;
    }

    void TearDown() override {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    // Two CAs (the second one the server's certificate was not made by), a server certificate
    // for 127.0.0.1 and localhost, and a client certificate; all by the openssl command.
    void make_certificates() {
        const std::string d = dir_.string();
        const std::string script =
            "set -e; cd '" + d +
            "'; ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
            "for ca in ca other-ca; do openssl req -x509 $ec -keyout $ca.key -out $ca.pem"
            " -days 2 -subj /CN=$ca; done;"
            "openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost;"
            "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext;"
            "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
            " -out server.pem -days 2 -extfile san.ext;"
            "openssl req $ec -keyout client.key -out client.csr -subj /CN=box-a;"
            "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
            " -out client.pem -days 2; chmod 600 *.key) > '" +
            d + "/openssl.log' 2>&1";
        ASSERT_EQ(std::system(("(" + script).c_str()), 0) << read(dir_ / "openssl.log");
    }

    void start_redis(bool tls) {
        for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
            port_ = free_loopback_port();
            std::string conf = "bind 127.0.0.1\nsave \"\"\nappendonly no\ndaemonize no\n";
            conf += "dir " + dir_.string() + "\nlogfile " + (dir_ / "redis.log").string() + "\n";
            conf += "unixsocket " + admin_socket() + "\nunixsocketperm 700\n";
            if (tls) {
                const std::string d = dir_.string();
                conf += "port 0\ntls-port " + std::to_string(port_) + "\n";
                conf += "tls-cert-file " + d + "/server.pem\ntls-key-file " + d + "/server.key\n";
                conf += "tls-ca-cert-file " + d + "/ca.pem\ntls-auth-clients yes\n";
            } else {
                conf += "port " + std::to_string(port_) + "\n";
            }
            conf += "user default off\n";
            conf += "user admin on >" + std::string(kAdminPassword) + " ~* &* +@all\n";
            conf += "user box-a on >secret-a ~fg:{test}:* " + std::string(kBoxCommands) + "\n";
            conf += "user box-b on >secret-b ~fg:{test}:* " + std::string(kBoxCommands) + "\n";
            write_file(dir_ / "redis.conf", conf, 0600);
            spawn_redis();
        }
        ASSERT_GT(pid_, 0) << "redis-server did not start; its log:\n" << read(dir_ / "redis.log");
    }

    void spawn_redis() {
        std::string conf = (dir_ / "redis.conf").string();
        std::vector<char *> argv = {const_cast<char *>(kRedisServer), conf.data(), nullptr};
        pid_t pid = -1;
        if (posix_spawn(&pid, kRedisServer, nullptr, nullptr, argv.data(), environ) != 0) return;
        const auto deadline = Clock::now() + kDeadline;
        while (Clock::now() < deadline) {
            if (::waitpid(pid, nullptr, WNOHANG) == pid) return;  // exited: the port was taken
            if (Raw c = admin(); c != nullptr && redis_run(c.get(), {"PING"}) == "PONG") {
                pid_ = pid;
                return;
            }
            std::this_thread::sleep_for(kPollPause);
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }

    std::string admin_socket() const { return (dir_ / "redis.sock").string(); }

    // The admin, logged in on the Unix socket; nullptr until the server answers.
    Raw admin() const {
        const timeval tv{10, 0};
        Raw c(redisConnectUnixWithTimeout(admin_socket().c_str(), tv), redisFree);
        if (c == nullptr || c->err != 0 ||
            redis_run(c.get(), {"AUTH", "admin", kAdminPassword}) != "OK")
            return Raw(nullptr, redisFree);
        return c;
    }

    static std::string read(const fs::path &path) {
        std::ifstream in(path);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }

    ClusterStoreOptions options(const std::string &box, const std::string &user,
                                const std::string &password) const {
        ClusterStoreOptions o;
        o.address = "127.0.0.1:" + std::to_string(port_);
        o.cluster = "test";
        o.box = box;
        o.auth.user = user;
        o.auth.password = password;
        o.timeout_ms = 2000;  // a handshake on a loaded test machine, not a bound under test
        return o;
    }

    StoreTlsFiles tls_files(const std::string &ca = "ca.pem") const {
        return {(dir_ / ca).string(), "", (dir_ / "client.pem").string(),
                (dir_ / "client.key").string()};
    }

    // Two boxes joined: A pushes, B gets exactly that, and the other way.
    static void expect_two_boxes_sync(ClusterStore &a, ClusterStore &b) {
        ClusterSyncResult r = a.sync({});
        ASSERT_TRUE(r.ok) << r.error;
        ASSERT_TRUE((r = b.sync({})).ok) << r.error;
        ASSERT_TRUE((r = a.sync({{"total", "198.18.1.1/32", 7}})).ok) << r.error;
        ASSERT_TRUE((r = b.sync({{"total", "198.18.1.1/32", 5}})).ok) << r.error;
        EXPECT_EQ(r.remote, (Deltas{{"total", "198.18.1.1/32", 7}}));
        EXPECT_EQ(r.live_boxes, 2u);
        ASSERT_TRUE((r = a.sync({})).ok) << r.error;
        EXPECT_EQ(r.remote, (Deltas{{"total", "198.18.1.1/32", 5}}));
        EXPECT_EQ(a.totals().failed + b.totals().failed, 0u);
    }

    fs::path dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

TEST_F(AuthStoreTest, TwoBoxesSyncAsAclUsers) {
    start_redis(false);
    ClusterStore a(options("A", "box-a", "secret-a")), b(options("B", "box-b", "secret-b"));
    expect_two_boxes_sync(a, b);
}

TEST_F(AuthStoreTest, AUnixSocketStaysPossible) {
    start_redis(false);
    ClusterStoreOptions o = options("A", "box-a", "secret-a");
    o.address = "unix:" + admin_socket();
    ClusterStore a(o), b(options("B", "box-b", "secret-b"));
    expect_two_boxes_sync(a, b);
}

// A wrong password, or none with the default user off: each sync fails with Redis's error,
// counted, and nothing reaches the stream. (Without a login Redis closes the connection at the
// script's length: "Protocol error: unauthenticated bulk length".)
TEST_F(AuthStoreTest, AWrongPasswordIsAFailedSyncCounted) {
    start_redis(false);
    ClusterStore wrong(options("A", "box-a", "secret-b")), none(options("B", "", ""));
    for (int i = 0; i < 3; ++i) {
        const ClusterSyncResult r = wrong.sync({{"total", "198.18.1.1/32", 7}});
        EXPECT_FALSE(r.ok);
        EXPECT_NE(r.error.find("refused the login as box-a: WRONGPASS"), std::string::npos)
            << r.error;
        const ClusterSyncResult n = none.sync({{"total", "198.18.1.1/32", 7}});
        EXPECT_FALSE(n.ok);
        EXPECT_NE(n.error.find("unauthenticated"), std::string::npos) << n.error;
    }
    EXPECT_EQ(wrong.totals().failed, 3u);
    EXPECT_EQ(wrong.totals().auth_refused, 3u);
    EXPECT_EQ(none.totals().failed, 3u);
    EXPECT_EQ(none.totals().auth_refused, 0u);  // it sent no login to refuse
    Raw c = admin();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(redis_run(c.get(), {"EXISTS", "fg:{test}:log", "fg:{test}:boxes"}), "0");
}

// The box's user reaches the cluster's keys and the script's commands, nothing else: another
// cluster's keys and other commands are refused by Redis.
TEST_F(AuthStoreTest, ABoxUserIsConfinedToItsClustersKeys) {
    start_redis(false);
    ClusterStoreOptions o = options("A", "box-a", "secret-a");
    o.cluster = "other";
    ClusterStore elsewhere(o);
    const ClusterSyncResult r = elsewhere.sync({});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("NOPERM"), std::string::npos) << r.error;
    EXPECT_EQ(elsewhere.totals().auth_refused, 0u);  // logged in, then refused the keys

    const timeval tv{10, 0};
    Raw c(redisConnectWithTimeout("127.0.0.1", port_, tv), redisFree);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(redis_run(c.get(), {"AUTH", "box-a", "secret-a"}), "OK");
    EXPECT_TRUE(redis_run(c.get(), {"XADD", "fg:{other}:log", "*", "b", "x", "d", "y"})
                    .starts_with("ERR:NOPERM"));
    EXPECT_TRUE(redis_run(c.get(), {"DEL", "fg:{test}:log"}).starts_with("ERR:NOPERM"));
    EXPECT_TRUE(redis_run(c.get(), {"CONFIG", "GET", "*"}).starts_with("ERR:NOPERM"));
    EXPECT_TRUE(redis_run(c.get(), {"SCRIPT", "FLUSH"}).starts_with("ERR:NOPERM"));
}

TEST_F(AuthStoreTest, TwoBoxesSyncOverTls) {
    make_certificates();
    start_redis(true);
    ClusterStoreOptions oa = options("A", "box-a", "secret-a"),
                        ob = options("B", "box-b", "secret-b");
    oa.auth.tls = ob.auth.tls = tls_files();
    ob.auth.tls.name = "localhost";  // a name in the certificate, not the address
    ClusterStore a(oa), b(ob);
    expect_two_boxes_sync(a, b);
    EXPECT_EQ(a.totals().tls_refused + b.totals().tls_refused, 0u);
}

// A server whose certificate another CA made, or that does not carry the name asked for, or a
// client without a certificate where the server wants one: refused, counted, nothing stored.
TEST_F(AuthStoreTest, ACertificateFromAnotherCaIsRefusedCounted) {
    make_certificates();
    start_redis(true);
    ClusterStoreOptions other_ca = options("A", "box-a", "secret-a");
    other_ca.auth.tls = tls_files("other-ca.pem");
    ClusterStoreOptions other_name = other_ca;
    other_name.auth.tls = tls_files();
    other_name.auth.tls.name = "redis.example";
    ClusterStoreOptions no_client_cert = other_name;
    no_client_cert.auth.tls.name = "";
    no_client_cert.auth.tls.cert = no_client_cert.auth.tls.key = "";
    struct Case {
        ClusterStoreOptions o;
        const char *error;
    } cases[] = {
        {other_ca,
         "the store's certificate is refused: self-signed certificate in certificate chain"},
        {other_name, "the store's certificate is refused: hostname mismatch"},
        {no_client_cert, "TLS"}};
    for (const Case &c : cases) {
        ClusterStore store(c.o);
        for (int i = 0; i < 2; ++i) {
            const ClusterSyncResult r = store.sync({{"total", "198.18.1.1/32", 7}});
            EXPECT_FALSE(r.ok);
            EXPECT_NE(r.error.find(c.error), std::string::npos) << r.error;
        }
        EXPECT_EQ(store.totals().failed, 2u);
        EXPECT_EQ(store.totals().tls_refused, 2u) << c.error;
    }
    Raw admin_client = admin();
    ASSERT_NE(admin_client, nullptr);
    EXPECT_EQ(redis_run(admin_client.get(), {"EXISTS", "fg:{test}:log", "fg:{test}:boxes"}), "0");
}

// A store that does not speak TLS, a listener that accepts nothing or a plain Redis (which reads
// the ClientHello as the start of an inline command and waits for its end): given up on at the
// attempt's bound, a failed sync that says so, not counted as a refusal (a slow store's
// handshake would look the same).
TEST_F(AuthStoreTest, AStoreWithoutTlsFailsWithinTheBound) {
    make_certificates();
    const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(silent, 4), 0);
    ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr *>(&a), &len), 0);
    ClusterStoreOptions o = options("A", "box-a", "secret-a");
    o.address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    o.auth.tls = tls_files();
    o.timeout_ms = 100;
    ClusterStore never(o);
    ClusterSyncResult r = never.sync({});
    ::close(silent);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("TLS: the handshake timed out"), std::string::npos) << r.error;
    EXPECT_EQ(never.totals().tls_refused, 0u);
    EXPECT_EQ(never.totals().failed, 1u);

    start_redis(false);
    ClusterStoreOptions plain = options("A", "box-a", "secret-a");
    plain.auth.tls = tls_files();
    plain.timeout_ms = 100;
    ClusterStore store(plain);
    r = store.sync({});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("TLS: the handshake timed out"), std::string::npos) << r.error;
    EXPECT_EQ(store.totals().tls_refused, 0u);
    EXPECT_EQ(store.totals().failed, 1u);
}

TEST_F(AuthStoreTest, TlsOnAUnixSocketIsRefused) {
    ClusterStoreOptions o = options("A", "box-a", "secret-a");
    o.address = "unix:" + admin_socket();
    o.auth.tls.ca = "/nonexistent/ca.pem";
    ClusterStore store(o);
    const ClusterSyncResult r = store.sync({});
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "TLS needs a host:port address, not a Unix socket");
}

// Secrets come from files only their owner can read; systemd's credentials stand in for the
// password file.
TEST_F(AuthStoreTest, ASecretFileOthersCanReadIsRefused) {
    const fs::path file = dir_ / "password";
    write_file(file, "s3cret\n", 0640);
    std::string why;
    EXPECT_FALSE(read_secret_file(file, &why));
    EXPECT_NE(why.find("(mode 0640): chmod 600 it"), std::string::npos) << why;
    EXPECT_FALSE(load_store_auth("box-a", file, {}, &why));
    EXPECT_TRUE(why.starts_with("--redis-password-file: '")) << why;
    ::chmod(file.c_str(), 0600);
    EXPECT_EQ(read_secret_file(file, &why), "s3cret");
    write_file(dir_ / "empty", "\n", 0600);
    EXPECT_FALSE(read_secret_file(dir_ / "empty", &why));
    EXPECT_FALSE(load_store_auth("box-a", "", {}, &why));  // a user and no password
    EXPECT_EQ(why, "--redis-user needs a password (--redis-password-file)");
    EXPECT_FALSE(load_store_auth("", "", {"", "localhost", "", ""}, &why));

    // systemd grants a credential to the unit's user with an ACL where it is not the owner: the
    // ACL's mask shows as group bits, and systemd's word is taken for who may read it.
    write_file(dir_ / "redis-password", "from-systemd\n", 0440);
    ::setenv("CREDENTIALS_DIRECTORY", dir_.c_str(), 1);
    const std::optional<StoreAuth> a = load_store_auth("box-a", "", {}, &why);
    ::unsetenv("CREDENTIALS_DIRECTORY");
    ASSERT_TRUE(a) << why;
    EXPECT_EQ(a->password, "from-systemd");
}

}  // namespace
}  // namespace floodgate
