// The cluster's shared store (control/cluster/cluster_store.h) against a real redis-server, which
// the fixture starts on a free loopback port and a Unix socket, without persistence, in a directory
// of its own; and against a fake server that answers what no Redis would. Expected values are the
// deltas the test pushed, summed here.
#include "control/cluster/cluster_store.h"
#include "tests/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char **environ;

namespace floodgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Deltas = std::vector<ClusterDelta>;
using Totals = std::map<std::pair<std::string, std::string>, uint64_t>;  // (rule, key) -> packets

constexpr auto kDeadline = std::chrono::seconds(10);
// Between two looks at a condition awaited with a deadline.
constexpr auto kPollPause = std::chrono::milliseconds(10);

void add(Totals *t, const Deltas &d) {
    for (const ClusterDelta &x : d) (*t)[{x.rule, x.key}] += x.packets;
}

// A plain client, for what no box does: foreign entries, a key of another type, DEBUG SLEEP.
using Raw = RawRedis;

Raw raw_client(int port) {
    const timeval tv{10, 0};
    Raw c(redisConnectWithTimeout("127.0.0.1", port, tv), redisFree);
    if (c != nullptr && c->err != 0) c.reset();
    return c;
}

class ClusterStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(::access(kRedisServer, X_OK), 0)
            << kRedisServer << " is missing: these tests need redis-server (apt-get install "
            << "redis-server; scripts/lib.sh lists it)";
        std::string pattern = (fs::temp_directory_path() / "fg-redis-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
        dir_ = pattern;
        // The port was free a moment ago; another process may take it first: try another.
        for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
            port_ = free_loopback_port();
            start_redis();
        }
        ASSERT_GT(pid_, 0) << "redis-server did not start; its log:\n" << redis_log();
        raw_ = raw_client(port_);
        ASSERT_NE(raw_, nullptr);
    }

    void TearDown() override {
        raw_.reset();
        stop_redis();
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    // Starts redis-server on port_ and waits until it answers PING; pid_ stays -1 when it
    // exited first (the port taken) or did not answer within the deadline.
    void start_redis() {
        const std::string port = std::to_string(port_), dir = dir_.string();
        const std::string sock = (dir_ / "redis.sock").string(),
                          log = (dir_ / "redis.log").string();
        std::vector<std::string> args = {
            kRedisServer, "--port",       port, "--bind",
            "127.0.0.1",  "--unixsocket", sock, "--unixsocketperm",
            "700",        "--save",       "",   "--appendonly",
            "no",         "--dir",        dir,  "--daemonize",
            "no",         "--logfile",    log,  "--enable-debug-command",
            "local"};
        std::vector<char *> argv;
        for (std::string &a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid = -1;
        const int rc = posix_spawn(&pid, kRedisServer, &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) return;
        const auto deadline = Clock::now() + kDeadline;
        while (Clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == pid) return;  // exited: the port was taken
            if (Raw c = raw_client(port_); c != nullptr && redis_run(c.get(), {"PING"}) == "PONG") {
                pid_ = pid;
                return;
            }
            std::this_thread::sleep_for(kPollPause);
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }

    void stop_redis() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

    std::string redis_log() const {
        std::ifstream in(dir_ / "redis.log");
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }

    ClusterStoreOptions options(const std::string &box, uint64_t box_timeout_ms = 3000) const {
        ClusterStoreOptions o;
        o.address = "127.0.0.1:" + std::to_string(port_);
        o.cluster = "test";
        o.box = box;
        o.box_timeout_ms = box_timeout_ms;
        return o;
    }
    ClusterStoreOptions unix_options(const std::string &box) const {
        ClusterStoreOptions o = options(box);
        o.address = "unix:" + (dir_ / "redis.sock").string();
        return o;
    }

    // An entry written as a box would, or not, by someone else.
    void xadd(const std::vector<std::string> &fields) {
        std::vector<std::string> args = {"XADD", "fg:{test}:log", "*"};
        args.insert(args.end(), fields.begin(), fields.end());
        ASSERT_FALSE(redis_run(raw_.get(), args).starts_with("ERR:"));
    }

    // INFO commandstats' calls for one command ("eval"), 0 when it has none.
    uint64_t calls(const std::string &command) {
        const std::string info = redis_run(raw_.get(), {"INFO", "commandstats"});
        const std::string key = "cmdstat_" + command + ":calls=";
        const size_t at = info.find(key);
        return at == std::string::npos ? 0 : std::stoull(info.substr(at + key.size()));
    }

    fs::path dir_;
    int port_ = 0;
    pid_t pid_ = -1;
    Raw raw_{nullptr, redisFree};
};

// Syncs `store` until `done` holds for a result, or the deadline; returns the last result.
template <typename Done>
ClusterSyncResult sync_until(ClusterStore &store, Done done) {
    const auto deadline = Clock::now() + kDeadline;
    ClusterSyncResult r = store.sync({});
    while (!done(r) && Clock::now() < deadline) {
        std::this_thread::sleep_for(kPollPause);
        r = store.sync({});
    }
    return r;
}

// 1. Each box gets the other's deltas, exactly once each, and never its own.
TEST_F(ClusterStoreTest, TwoBoxesGetEachOthersDeltasExactlyOnce) {
    ClusterStore a(options("A")), b(unix_options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);

    const ClusterSyncResult pushed = a.sync({{"r", "k", 5}});
    ASSERT_TRUE(pushed.ok) << pushed.error;
    EXPECT_TRUE(pushed.remote.empty());
    const ClusterSyncResult got = b.sync({});
    ASSERT_TRUE(got.ok) << got.error;
    EXPECT_EQ(got.remote, (Deltas{{"r", "k", 5}}));
    EXPECT_EQ(got.live_boxes, 2u);
    EXPECT_EQ(got.refused, 0u);
    const ClusterSyncResult again = a.sync({});
    ASSERT_TRUE(again.ok) << again.error;
    EXPECT_TRUE(again.remote.empty());  // its own entry is not read back

    // Rounds with several keys, A now and then syncing twice before B.
    Totals pushed_by_a, pushed_by_b, got_by_a, got_by_b;
    size_t deltas_from_a = 0, deltas_from_b = 0, deltas_to_a = 0, deltas_to_b = 0;
    for (uint64_t round = 1; round <= 12; ++round) {
        Deltas from_a, from_b;
        for (uint64_t i = 0; i < round % 4 + 1; ++i)
            from_a.push_back({"syn", "198.18.0." + std::to_string(i) + "/32", round * 10 + i});
        from_b.push_back({"udp", "*", round});
        from_b.push_back({"syn", "198.18.0.1/32", 1000 + round});
        add(&pushed_by_a, from_a);
        add(&pushed_by_b, from_b);
        deltas_from_a += from_a.size();
        deltas_from_b += from_b.size();
        for (int twice = 0; twice < (round % 3 == 0 ? 2 : 1); ++twice) {
            const ClusterSyncResult ra = a.sync(twice == 0 ? from_a : Deltas{});
            ASSERT_TRUE(ra.ok) << ra.error;
            add(&got_by_a, ra.remote);
            deltas_to_a += ra.remote.size();
        }
        const ClusterSyncResult rb = b.sync(from_b);
        ASSERT_TRUE(rb.ok) << rb.error;
        EXPECT_EQ(rb.live_boxes, 2u);
        add(&got_by_b, rb.remote);
        deltas_to_b += rb.remote.size();
    }
    for (ClusterStore *s : {&a, &b}) {
        const ClusterSyncResult r = s->sync({});
        ASSERT_TRUE(r.ok) << r.error;
        add(s == &a ? &got_by_a : &got_by_b, r.remote);
        (s == &a ? deltas_to_a : deltas_to_b) += r.remote.size();
    }
    EXPECT_EQ(got_by_b, pushed_by_a);
    EXPECT_EQ(got_by_a, pushed_by_b);
    EXPECT_EQ(deltas_to_b, deltas_from_a);
    EXPECT_EQ(deltas_to_a, deltas_from_b);
    EXPECT_EQ(a.totals().failed + b.totals().failed, 0u);
    EXPECT_EQ(a.totals().refused + b.totals().refused, 0u);
}

// 2. What was pushed before a box's first sync is not charged to it.
TEST_F(ClusterStoreTest, FirstSyncDoesNotReturnHistory) {
    ClusterStore a(options("A"));
    ASSERT_TRUE(a.sync({{"r", "k", 1}}).ok);
    ASSERT_TRUE(a.sync({{"r", "k", 2}}).ok);
    ClusterStore b(options("B"));
    const ClusterSyncResult first = b.sync({});
    ASSERT_TRUE(first.ok) << first.error;
    EXPECT_TRUE(first.remote.empty());
    EXPECT_EQ(first.live_boxes, 2u);
    ASSERT_TRUE(a.sync({{"r", "k", 3}}).ok);
    const ClusterSyncResult next = b.sync({});
    ASSERT_TRUE(next.ok) << next.error;
    EXPECT_EQ(next.remote, (Deltas{{"r", "k", 3}}));
}

// 3. A box that stops syncing stops being counted after box_timeout.
TEST_F(ClusterStoreTest, ABoxThatStopsSyncingIsNoLongerLive) {
    ClusterStore a(options("A", 100)), b(options("B", 100));
    const ClusterSyncResult both = sync_until(a, [&](const ClusterSyncResult &r) {
        b.sync({});
        return r.ok && r.live_boxes == 2;
    });
    ASSERT_TRUE(both.ok) << both.error;
    ASSERT_EQ(both.live_boxes, 2u);
    const ClusterSyncResult alone =
        sync_until(a, [](const ClusterSyncResult &r) { return r.ok && r.live_boxes == 1; });
    ASSERT_TRUE(alone.ok) << alone.error;
    EXPECT_EQ(alone.live_boxes, 1u);
}

// 3b. A boxes set of any size is counted as it is (the daemon caps what it tells the
// dataplane); members stamped in the store's future are not, and are removed.
TEST_F(ClusterStoreTest, AnyNumberOfBoxesIsCountedAndFutureOnesRemoved) {
    ClusterStore a(options("A", 60000));
    ASSERT_TRUE(a.sync({}).ok);
    // 1,101 members at the store's clock now, 5 an hour ahead of it.
    ASSERT_EQ(redis_run(raw_.get(), {"EVAL", R"(
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000
        for i = 1, 1101 do redis.call('ZADD', KEYS[1], now, 'forged' .. i) end
        for i = 1, 5 do redis.call('ZADD', KEYS[1], now + 3600000, 'ahead' .. i) end
        return redis.call('ZCARD', KEYS[1]))",
                                     "1", "fg:{test}:boxes"}),
              "1107");
    const ClusterSyncResult r = a.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.live_boxes, 1102u);
    EXPECT_EQ(r.refused, 0u);
    EXPECT_EQ(redis_run(raw_.get(), {"ZCARD", "fg:{test}:boxes"}), "1102");
}

// 4. Nothing on the port.
TEST_F(ClusterStoreTest, NoRedisFailsAndCounts) {
    ClusterStoreOptions o = options("A");
    o.address = "127.0.0.1:" + std::to_string(free_loopback_port());
    ClusterStore a(o);
    for (uint64_t i = 1; i <= 2; ++i) {
        const ClusterSyncResult r = a.sync({{"r", "k", 1}});
        EXPECT_FALSE(r.ok);
        EXPECT_FALSE(r.error.empty());
        EXPECT_EQ(r.live_boxes, 0u);
        EXPECT_EQ(a.totals().failed, i);
        EXPECT_EQ(a.totals().ok, 0u);
    }
}

// 5. A restart without persistence: syncs fail while it is down, then work again (EVALSHA
// meets NOSCRIPT and EVAL runs once), and deltas pushed after it arrive exactly.
TEST_F(ClusterStoreTest, RedisRestartJustWorks) {
    ClusterStore a(options("A")), b(options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    ASSERT_TRUE(a.sync({{"r", "k", 1}}).ok);
    EXPECT_EQ(b.sync({}).remote, (Deltas{{"r", "k", 1}}));

    raw_.reset();
    stop_redis();
    const ClusterSyncResult down = a.sync({{"r", "k", 100}});
    EXPECT_FALSE(down.ok);
    EXPECT_FALSE(down.error.empty());
    EXPECT_FALSE(b.sync({}).ok);

    start_redis();
    ASSERT_GT(pid_, 0) << "redis-server did not start again on port " << port_ << ":\n"
                       << redis_log();
    raw_ = raw_client(port_);
    ASSERT_NE(raw_, nullptr);
    const ClusterSyncResult back = a.sync({{"r", "k", 3}});
    ASSERT_TRUE(back.ok) << back.error;
    EXPECT_EQ(calls("eval"), 1u);  // after NOSCRIPT: A knew the script's SHA-1 already
    const ClusterSyncResult after = b.sync({});
    ASSERT_TRUE(after.ok) << after.error;
    EXPECT_EQ(after.remote, (Deltas{{"r", "k", 3}}));
    EXPECT_EQ(calls("eval"), 1u);  // B's EVALSHA found the script A's EVAL cached
    ASSERT_TRUE(b.sync({{"r", "k", 4}}).ok);
    EXPECT_EQ(a.sync({}).remote, (Deltas{{"r", "k", 4}}));
    EXPECT_EQ(a.totals().failed, 1u);
    EXPECT_EQ(b.totals().failed, 1u);
}

// 6. A store busy past the timeout fails the sync rather than holding it; a later one works.
TEST_F(ClusterStoreTest, SlowRedisTimesOut) {
    ClusterStore a(options("A"));
    ASSERT_TRUE(a.sync({}).ok);
    // Sent, not waited for: the reply comes when the sleep ends.
    ASSERT_EQ(redisAppendCommand(raw_.get(), "DEBUG SLEEP 1"), REDIS_OK);
    for (int done = 0; done == 0;) ASSERT_EQ(redisBufferWrite(raw_.get(), &done), REDIS_OK);

    const ClusterSyncResult slow = a.sync({{"r", "k", 1}});
    EXPECT_FALSE(slow.ok);
    EXPECT_NE(slow.error.find("timed out"), std::string::npos) << slow.error;
    void *reply = nullptr;
    ASSERT_EQ(redisGetReply(raw_.get(), &reply), REDIS_OK);
    freeReplyObject(reply);
    const ClusterSyncResult later = sync_until(a, [](const ClusterSyncResult &r) { return r.ok; });
    EXPECT_TRUE(later.ok) << later.error;
}

// 7a. The log key holding a string: refused as bad data, and the string is left as it is.
TEST_F(ClusterStoreTest, AKeyOfAnotherTypeIsRefusedAndKept) {
    ASSERT_EQ(redis_run(raw_.get(), {"SET", "fg:{test}:log", "not a stream"}), "OK");
    ClusterStore a(options("A"));
    const ClusterSyncResult r = a.sync({{"r", "k", 1}});
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.refused, 1u);
    EXPECT_NE(r.error.find("fg:{test}:log holds a string"), std::string::npos) << r.error;
    EXPECT_EQ(a.totals().refused, 1u);
    EXPECT_EQ(a.totals().failed, 1u);
    EXPECT_EQ(redis_run(raw_.get(), {"GET", "fg:{test}:log"}), "not a stream");

    ASSERT_EQ(redis_run(raw_.get(), {"DEL", "fg:{test}:log"}), "1");
    ASSERT_EQ(redis_run(raw_.get(), {"HSET", "fg:{test}:boxes", "f", "v"}), "1");
    const ClusterSyncResult boxes = a.sync({});
    EXPECT_FALSE(boxes.ok);
    EXPECT_NE(boxes.error.find("fg:{test}:boxes holds a hash"), std::string::npos) << boxes.error;
    EXPECT_EQ(redis_run(raw_.get(), {"HGET", "fg:{test}:boxes", "f"}), "v");
}

// An error from Redis itself (here a write refused past maxmemory) fails the sync; it is not
// bad data.
TEST_F(ClusterStoreTest, AnErrorReplyFailsTheSync) {
    ClusterStore a(options("A"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_EQ(redis_run(raw_.get(), {"CONFIG", "SET", "maxmemory", "1"}), "OK");
    const ClusterSyncResult r = a.sync({{"r", "k", 1}});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("OOM"), std::string::npos) << r.error;
    EXPECT_EQ(r.refused, 0u);
    EXPECT_EQ(a.totals().failed, 1u);
    ASSERT_EQ(redis_run(raw_.get(), {"CONFIG", "SET", "maxmemory", "0"}), "OK");
    const ClusterSyncResult again = a.sync({});
    EXPECT_TRUE(again.ok) << again.error;
}

// 7b. Entries with other fields are skipped and counted; the good ones of the read arrive.
TEST_F(ClusterStoreTest, ForeignEntriesAreSkipped) {
    ClusterStore a(options("A")), b(options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    ASSERT_TRUE(a.sync({{"r", "k", 1}}).ok);
    xadd({"foo", "bar"});
    xadd({"b", "C", "d", "r\tk\t2\n"});  // as a box would write it
    xadd({"b", "C", "d", "r\tk\t50\n", "x", "y"});
    xadd({"d", "r\tk\t60\n"});
    ASSERT_TRUE(a.sync({{"r", "k", 4}}).ok);
    const ClusterSyncResult r = b.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.remote, (Deltas{{"r", "k", 1}, {"r", "k", 2}, {"r", "k", 4}}));
    EXPECT_EQ(r.refused, 3u);
    EXPECT_EQ(b.totals().refused, 3u);
}

// 7c. An entry past kMaxEntryBytes stays in Redis: skipped by the script, never sent.
TEST_F(ClusterStoreTest, OversizeEntryIsRefusedAndNotSent) {
    ClusterStore a(options("A")), b(options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    std::string huge;
    while (huge.size() < (2u << 20)) huge += "r\tk\t1\n";
    xadd({"b", "C", "d", huge});
    ASSERT_TRUE(a.sync({{"r", "k", 9}}).ok);
    const ClusterSyncResult r = b.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.remote, (Deltas{{"r", "k", 9}}));
    EXPECT_EQ(r.refused, 1u);
    EXPECT_LT(b.totals().bytes, 64u * 1024);
}

// 7d. Bad lines are refused one by one; the good lines of the same entry arrive.
TEST_F(ClusterStoreTest, BadLinesAreRefusedGoodOnesDelivered) {
    ClusterStore b(options("B"));
    ASSERT_TRUE(b.sync({}).ok);
    const std::string max = std::to_string(kMaxDeltaPackets);
    const struct {
        std::string line;
        bool good;
    } lines[] = {
        {"r\tk\tabc\n", false},
        {"r\tk\t0\n", false},
        {"r\tk\t99999999999999999999\n", false},
        {"r\tk\t" + std::to_string(kMaxDeltaPackets + 1) + "\n", false},
        {"r\tk\t-1\n", false},
        {"r\tk\t 1\n", false},
        {"r\tk\t\n", false},
        {"r\tk\n", false},
        {"r\tk\t1\textra\n", false},
        {"\n", false},
        {"\tk\t1\n", false},
        {"r\t\t1\n", false},
        {std::string(kMaxRuleBytes + 1, 'r') + "\tk\t1\n", false},
        {"r\t" + std::string(kMaxKeyBytes + 1, 'k') + "\t1\n", false},
        {"r\t\xff\t1\n", false},              // not UTF-8 (JSON takes nothing else)
        {"\xc0\x80\tk\t1\n", false},          // an overlong form
        {"r\t\xed\xa0\x80\t1\n", false},      // a surrogate
        {"r\t\xf4\x90\x80\x80\t1\n", false},  // past U+10FFFF
        {"r\tk\xe2\x82\t1\n", false},         // a sequence cut short
        {"r\tgood\t7\n", true},
        {"r\xc3\xa9\tk\xf0\x9f\x98\x80\t5\n", true},  // UTF-8 of two and four bytes
        {std::string(kMaxRuleBytes, 'r') + "\t" + std::string(kMaxKeyBytes, 'k') + "\t" + max +
             "\n",
         true},
        {"r\tnewline missing\t1", false},
    };
    std::string payload;
    Deltas expected;
    uint64_t bad = 0;
    for (const auto &l : lines) {
        payload += l.line;
        if (!l.good) ++bad;
    }
    expected.push_back({"r", "good", 7});
    expected.push_back({"r\xc3\xa9", "k\xf0\x9f\x98\x80", 5});
    expected.push_back(
        {std::string(kMaxRuleBytes, 'r'), std::string(kMaxKeyBytes, 'k'), kMaxDeltaPackets});
    xadd({"b", "C", "d", payload});
    const ClusterSyncResult r = b.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.remote, expected);
    EXPECT_EQ(r.refused, bad);
    EXPECT_EQ(bad, 20u);
}

// Local deltas outside the bounds are not pushed (and counted); the rest are.
TEST_F(ClusterStoreTest, LocalDeltasOutsideTheBoundsAreNotPushed) {
    ClusterStore a(options("A")), b(options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    const ClusterSyncResult pushed = a.sync({{"", "k", 1},
                                             {"r", "", 1},
                                             {"r", "k", 0},
                                             {"r", "k", kMaxDeltaPackets + 1},
                                             {std::string(kMaxRuleBytes + 1, 'r'), "k", 1},
                                             {"r", std::string(kMaxKeyBytes + 1, 'k'), 1},
                                             {"r\t", "k", 1},
                                             {"r", "k\n", 1},
                                             {"r", "ok", 3}});
    ASSERT_TRUE(pushed.ok) << pushed.error;
    EXPECT_EQ(pushed.refused, 8u);
    const ClusterSyncResult r = b.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.remote, (Deltas{{"r", "ok", 3}}));
    EXPECT_EQ(r.refused, 0u);
}

// A push past kMaxEntryBytes goes as several entries, all of which arrive.
TEST_F(ClusterStoreTest, LargePushIsSplitIntoEntries) {
    // Megabytes each way: a timeout that a loaded machine cannot reach.
    ClusterStoreOptions oa = options("A"), ob = options("B");
    oa.timeout_ms = ob.timeout_ms = 10000;
    ClusterStore a(oa), b(ob);
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    Deltas local;
    size_t bytes = 0;
    for (uint64_t i = 0; bytes < 3 * kMaxEntryBytes; ++i) {
        local.push_back({std::string(kMaxRuleBytes, 'r'), "key" + std::to_string(i), i + 1});
        bytes +=
            local.back().rule.size() + local.back().key.size() + 3 + std::to_string(i + 1).size();
    }
    const ClusterSyncResult pushed = a.sync(local);
    ASSERT_TRUE(pushed.ok) << pushed.error;
    EXPECT_EQ(redis_run(raw_.get(), {"XLEN", "fg:{test}:log"}), "4");  // 3 MiB and a bit
    const ClusterSyncResult r = b.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.remote, local);
    EXPECT_EQ(r.refused, 0u);
}

// One sync of 1,000 keys each way, timed (printed, not asserted).
TEST_F(ClusterStoreTest, ThousandKeysTimed) {
    ClusterStore a(options("A")), b(options("B"));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    Deltas local;
    for (uint64_t i = 0; i < 1000; ++i)
        local.push_back(
            {"syn-flood",
             "198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256) + "/32", 100 + i});
    std::vector<double> push_us, pull_us;
    uint64_t bytes = 0;
    for (int round = 0; round < 21; ++round) {
        auto t0 = Clock::now();
        const ClusterSyncResult pushed = a.sync(local);
        auto t1 = Clock::now();
        const uint64_t before = b.totals().bytes;
        const ClusterSyncResult pulled = b.sync({});
        auto t2 = Clock::now();
        ASSERT_TRUE(pushed.ok) << pushed.error;
        ASSERT_TRUE(pulled.ok) << pulled.error;
        ASSERT_EQ(pulled.remote, local);
        bytes = b.totals().bytes - before;
        push_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        pull_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    std::sort(push_us.begin(), push_us.end());
    std::sort(pull_us.begin(), pull_us.end());
    std::printf(
        "1,000 keys: push sync median %.0f us (max %.0f), pull sync median %.0f us "
        "(max %.0f), %llu bytes received by the pulling box\n",
        push_us[push_us.size() / 2], push_us.back(), pull_us[pull_us.size() / 2], pull_us.back(),
        static_cast<unsigned long long>(bytes));
}

// ---- A server that answers what no Redis would ----

// An entry's four signed fields, empty: unsigned, in a reply.
constexpr const char *kUnsignedFields = "$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n";

// Accepts one connection, reads the request, answers `answer` (then `filler` bytes of 'x'
// until the client goes) and waits for the client to close.
class FakeServer {
  public:
    FakeServer(std::string answer, bool filler) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
            ::listen(fd_, 1) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) != 0)
            std::abort();
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this, answer = std::move(answer), filler] {
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            char buf[4096];
            if (::recv(c, buf, sizeof buf, 0) > 0) {
                bool open = ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL) >= 0;
                const std::string x(1 << 16, 'x');
                while (open && filler) open = ::send(c, x.data(), x.size(), MSG_NOSIGNAL) > 0;
                while (::recv(c, buf, sizeof buf, 0) > 0) {
                }
            }
            ::close(c);
        });
    }
    ~FakeServer() {
        thread_.join();
        ::close(fd_);
    }
    int port() const { return port_; }

  private:
    int fd_ = -1;
    int port_ = 0;
    std::thread thread_;
};

TEST(ClusterStoreHostile, RepliesNoRedisWouldSendAreRefusedWithinBounds) {
    const std::string sha = "$40\r\n" + std::string(40, 'a') + "\r\n";
    const std::string joined = "$3\r\n0-0\r\n", unsigned_fields = kUnsignedFields;
    const struct {
        const char *what;
        std::string answer;
        bool filler;
        const char *error;
        uint64_t refused;
    } cases[] = {
        {"an array of 2^31 - 1", "*2147483647\r\n", false, "reply too large", 0},
        {"an endless string", "$1000000000\r\n", true, "reply too large", 0},
        {"arrays past the value budget", "*5000\r\n*5000\r\n", false, "reply too large", 0},
        {"junk", "*100\r\n", true, "bad reply", 0},
        {"arrays nested past hiredis's depth",
         "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", false, "bad reply", 0},
        {"a reply that is not RESP2", "%1\r\n", false, "bad reply", 0},
        {"an integer", sha + ":5\r\n", false, "malformed reply", 1},
        {"an array too short", sha + "*2\r\n$3\r\n1-0\r\n:1\r\n", false, "malformed reply", 1},
        {"a cursor that is not an ID", sha + "*4\r\n$3\r\n1-x\r\n:1\r\n:0\r\n" + joined, false,
         "malformed reply", 1},
        {"a nil cursor", sha + "*4\r\n$-1\r\n:1\r\n:0\r\n" + joined, false, "malformed reply", 1},
        {"no live box", sha + "*4\r\n$3\r\n1-0\r\n:0\r\n:0\r\n" + joined, false, "malformed reply",
         1},
        {"more skipped than read", sha + "*4\r\n$3\r\n1-0\r\n:1\r\n:1025\r\n" + joined, false,
         "malformed reply", 1},
        {"a join point that is not an ID", sha + "*4\r\n$3\r\n1-0\r\n:1\r\n:0\r\n:7\r\n", false,
         "malformed reply", 1},
        {"an entry of an integer",
         sha + "*11\r\n$3\r\n1-0\r\n:1\r\n:0\r\n" + joined + "$3\r\n1-0\r\n$1\r\nC\r\n" +
             unsigned_fields + ":7\r\n",
         false, "malformed reply", 1},
        {"an entry whose ID is not one",
         sha + "*11\r\n$3\r\n1-0\r\n:1\r\n:0\r\n" + joined + "$1\r\nx\r\n$1\r\nC\r\n" +
             unsigned_fields + "$0\r\n\r\n",
         false, "malformed reply", 1},
        {"a part of an entry", sha + "*5\r\n$3\r\n1-0\r\n:1\r\n:0\r\n" + joined + "$1\r\nC\r\n",
         false, "malformed reply", 1},
        {"more than was asked", sha + "*4\r\n$3\r\n1-0\r\n:1\r\n:0\r\n" + joined + "+extra\r\n",
         false, "unexpected data after the reply", 0},
        {"an error", sha + "-ERR something\r\n", false, "the store answered: ERR something", 0},
    };
    for (const auto &c : cases) {
        FakeServer server(c.answer, c.filler);
        ClusterStoreOptions o;
        o.address = "127.0.0.1:" + std::to_string(server.port());
        o.cluster = "test";
        o.box = "A";
        o.timeout_ms = 10000;  // the endless string reaches the cap well before
        ClusterStore store(o);
        const ClusterSyncResult r = store.sync({});
        EXPECT_FALSE(r.ok) << c.what;
        EXPECT_NE(r.error.find(c.error), std::string::npos) << c.what << ": " << r.error;
        EXPECT_EQ(r.refused, c.refused) << c.what;
        EXPECT_LE(store.totals().bytes, kMaxReplyBytes + (1 << 16)) << c.what;
    }
}

// What a store returns for entries the script should have kept back is not believed.
TEST(ClusterStoreHostile, EntriesTheScriptSkipsAreRefusedIfSent) {
    const std::string sha = "$40\r\n" + std::string(40, 'a') + "\r\n";
    const std::string id = "$3\r\n5-0\r\n", u = kUnsignedFields;
    const std::string own = id + "$1\r\nA\r\n" + u + "$6\r\nr\tk\t1\n\r\n";
    const std::string good = id + "$1\r\nC\r\n" + u + "$6\r\nr\tk\t2\n\r\n";
    const std::string long_box =
        id + "$65\r\n" + std::string(65, 'C') + "\r\n" + u + "$6\r\nr\tk\t3\n\r\n";
    FakeServer server(sha + "*25\r\n$3\r\n7-0\r\n:3\r\n:0\r\n$3\r\n0-0\r\n" + own + good + long_box,
                      false);
    ClusterStoreOptions o;
    o.address = "127.0.0.1:" + std::to_string(server.port());
    o.cluster = "test";
    o.box = "A";
    ClusterStore store(o);
    const ClusterSyncResult r = store.sync({});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.live_boxes, 3u);
    EXPECT_EQ(r.remote, (Deltas{{"r", "k", 2}}));
    EXPECT_EQ(r.refused, 2u);
}

TEST(ClusterStoreConfig, BadOptionsFailEverySync) {
    const struct {
        std::string address, cluster, box;
        uint64_t box_timeout_ms;
        const char *error;
    } cases[] = {
        {"127.0.0.1", "c", "A", 3000, "not host:port"},
        {":6379", "c", "A", 3000, "not host:port"},
        {"127.0.0.1:0", "c", "A", 3000, "port"},
        {"127.0.0.1:65536", "c", "A", 3000, "port"},
        {"unix:", "c", "A", 3000, "path is absolute"},
        {"unix:redis.sock", "c", "A", 3000, "path is absolute"},
        {"[::1]:6379", "c", "A", 3000, "not a name or an IPv4 address"},
        {"127.0.0.1:6379", "", "A", 3000, "cluster name"},
        {"127.0.0.1:6379", "c", "", 3000, "box id"},
        {"127.0.0.1:6379", "c", std::string(kMaxBoxBytes + 1, 'b'), 3000, "box id"},
        {"127.0.0.1:6379", "c", "A", 0, "box timeout"},
    };
    for (const auto &c : cases) {
        ClusterStore store({c.address, c.cluster, c.box, c.box_timeout_ms, 200});
        const ClusterSyncResult r = store.sync({});
        EXPECT_FALSE(r.ok) << c.address;
        EXPECT_NE(r.error.find(c.error), std::string::npos) << c.address << ": " << r.error;
        EXPECT_EQ(store.totals().failed, 1u);
    }
}

}  // namespace
}  // namespace floodgate
