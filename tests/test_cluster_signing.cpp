// Signed entries (control/cluster/entry_signing.h): the key file's checks and mode, the verifier's
// reasons one by one, and boxes signing through a real redis-server, which the fixture starts on
// a free loopback port without persistence, against forged, replayed and wrongly keyed entries
// written by a plain client, and through a key rotation. Expected values are the deltas the
// test pushed and the entries it forged, counted here.
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

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "control/cluster/cluster_store.h"
#include "control/cluster/entry_signing.h"
#include "control/cluster/store_auth.h"
#include "tests/redis_server.h"

extern char **environ;

namespace floodgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Deltas = std::vector<ClusterDelta>;

const ClusterKey kOne{"one", std::string(40, 'a')}, kTwo{"two", std::string(40, 'b')};

uint64_t now_ms() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

size_t reason(EntryRefusal r) {
    return static_cast<size_t>(r);
}

TEST(ClusterKeysFile, OneOrTwoKeysOfAnIdAndALongSecret) {
    std::string why;
    const std::string a(32, 's'), b(64, 't');
    const auto one = parse_cluster_keys("k1 " + a + "\n", &why);
    ASSERT_TRUE(one) << why;
    EXPECT_EQ(one->keys, (std::vector<ClusterKey>{{"k1", a}}));
    const auto two = parse_cluster_keys("new " + b + "\r\nold " + a, &why);
    ASSERT_TRUE(two) << why;
    EXPECT_EQ(two->keys, (std::vector<ClusterKey>{{"new", b}, {"old", a}}));
    for (const std::string &bad :
         std::vector<std::string>{"", "\n", "k1 " + std::string(31, 's'), "k1", "k/1 " + a,
                                  std::string(17, 'k') + " " + a, "k1 " + a + " x",
                                  "k1 " + a + "\nk1 " + b, "k1 " + a + "\nk2 " + a + "\nk3 " + a})
        EXPECT_FALSE(parse_cluster_keys(bad, &why)) << bad;
}

// The daemon's --cluster-key-file: a secret like the password, so refused unless only its owner
// may read it, and refused when malformed, naming the option either way.
TEST(ClusterKeysFile, ReadOwnerOnlyAndNamedWhenRefused) {
    std::string pattern = (fs::temp_directory_path() / "fg-keys-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    const fs::path dir = pattern, file = dir / "cluster.key";
    auto write = [&](const std::string &text, fs::perms mode) {
        std::ofstream(file) << text;
        fs::permissions(file, mode);
    };
    const std::string good = "new " + kTwo.secret + "\nold " + kOne.secret + "\n";
    std::string why;
    write(good, fs::perms::owner_read | fs::perms::owner_write);
    const std::optional<StoreAuth> auth = load_store_auth("", "", {}, &why, file.string());
    ASSERT_TRUE(auth) << why;
    EXPECT_EQ(auth->keys.keys,
              (std::vector<ClusterKey>{{"new", kTwo.secret}, {"old", kOne.secret}}));
    write(good, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    EXPECT_FALSE(load_store_auth("", "", {}, &why, file.string()));
    EXPECT_NE(why.find("--cluster-key-file: "), std::string::npos) << why;
    EXPECT_NE(why.find("chmod 600"), std::string::npos) << why;
    write("k1 short\n", fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_FALSE(load_store_auth("", "", {}, &why, file.string()));
    EXPECT_NE(why.find("--cluster-key-file: each line"), std::string::npos) << why;
    std::error_code ignored;
    fs::remove_all(dir, ignored);
}

// Each reason on its own, from one genuine entry changed in one way.
TEST(EntryVerifierTest, EachWayOfBeingWrongHasItsReason) {
    const uint64_t now = 1'000'000'000;
    EntrySigner box_b("c", "B", kOne, 100);
    EntryVerifier v("c", ClusterKeys{{kOne}}, 3000);
    const EntrySignature genuine = box_b.sign("r\tk\t5\n", now);
    EXPECT_EQ(v.check("B", EntrySignature{}, "r\tk\t5\n", now), EntryRefusal::unsigned_entry);
    EXPECT_EQ(v.check("B", {genuine.seq, genuine.time_ms, "two", genuine.mac}, "r\tk\t5\n", now),
              EntryRefusal::unknown_key);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t6\n", now), EntryRefusal::bad_mac);  // the payload
    EXPECT_EQ(v.check("C", genuine, "r\tk\t5\n", now), EntryRefusal::bad_mac);  // another box
    EXPECT_EQ(v.check("B", {"101", genuine.time_ms, "one", genuine.mac}, "r\tk\t5\n", now),
              EntryRefusal::bad_mac);  // its number raised
    EXPECT_EQ(EntryVerifier("d", ClusterKeys{{kOne}}, 3000).check("B", genuine, "r\tk\t5\n", now),
              EntryRefusal::bad_mac);  // another cluster
    EXPECT_EQ(v.check("B", {"", "", "one", ""}, "", now), EntryRefusal::bad_mac);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t5\n", now + 3001), EntryRefusal::too_old);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t5\n", now - 3001), EntryRefusal::future);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t5\n", now), std::nullopt);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t5\n", now), EntryRefusal::replayed);
    EXPECT_EQ(v.live_others(now + 3000), 1u);
    EXPECT_EQ(v.live_others(now + 3001), 0u);
    EXPECT_EQ(v.check("B", genuine, "r\tk\t5\n", now + 3001), EntryRefusal::too_old);  // forgotten
    const EntrySignature next = box_b.sign("", now + 3001);
    EXPECT_EQ(v.check("B", next, "", now + 3001), std::nullopt);
}

// A holder of the key inventing box ids: remembered up to kMaxHeardBoxes, the rest refused until
// some are forgotten (their window over), while the boxes already heard go on being believed.
TEST(EntryVerifierTest, BoxesHeardAreBounded) {
    const uint64_t now = 1'000'000'000;
    EntryVerifier v("c", ClusterKeys{{kOne}}, 3000);
    for (size_t i = 0; i < kMaxHeardBoxes; ++i) {
        const std::string box = "box" + std::to_string(i);
        ASSERT_EQ(v.check(box, EntrySigner("c", box, kOne, 1).sign("", now), "", now),
                  std::nullopt);
    }
    EntrySigner extra("c", "extra", kOne, 1), first("c", "box0", kOne, 2);
    EXPECT_EQ(v.check("extra", extra.sign("", now), "", now), EntryRefusal::too_many_boxes);
    EXPECT_EQ(v.check("box0", first.sign("", now), "", now), std::nullopt);
    EXPECT_EQ(v.live_others(now), kMaxHeardBoxes);
    EXPECT_EQ(v.live_others(now + 3001), 0u);
    EXPECT_EQ(v.check("extra", extra.sign("", now + 3001), "", now + 3001), std::nullopt);
}

using Raw = RawRedis;

class ClusterSigningTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(::access(kRedisServer, X_OK), 0) << kRedisServer << " is missing";
        std::string pattern = (fs::temp_directory_path() / "fg-redis-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
        dir_ = pattern;
        for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) start_redis();
        ASSERT_GT(pid_, 0) << "redis-server did not start";
    }
    void TearDown() override {
        raw_.reset();
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    void start_redis() {
        port_ = free_loopback_port();
        std::vector<std::string> args = {kRedisServer, "--port",       std::to_string(port_),
                                         "--bind",     "127.0.0.1",    "--save",
                                         "",           "--appendonly", "no",
                                         "--dir",      dir_.string()};
        std::vector<char *> argv;
        for (std::string &s : args) argv.push_back(s.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid = -1;
        const int rc = posix_spawn(&pid, kRedisServer, &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) return;
        const auto deadline = Clock::now() + std::chrono::seconds(10);
        while (Clock::now() < deadline) {
            if (::waitpid(pid, nullptr, WNOHANG) == pid) return;  // the port was taken
            const timeval tv{10, 0};
            Raw c(redisConnectWithTimeout("127.0.0.1", port_, tv), redisFree);
            if (c != nullptr && c->err == 0 && redis_run(c.get(), {"PING"}) == "PONG") {
                pid_ = pid;
                raw_ = std::move(c);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }

    // An entry written by someone else, as its fields say.
    void xadd(const std::vector<std::string> &fields) {
        std::vector<std::string> args = {"XADD", "fg:{test}:log", "*"};
        args.insert(args.end(), fields.begin(), fields.end());
        redis_run(raw_.get(), args);
    }

    // The fields of the stream's last entry, as a box wrote them.
    std::vector<std::string> last_entry_fields() {
        auto *r = static_cast<redisReply *>(
            redisCommand(raw_.get(), "XREVRANGE fg:{test}:log + - COUNT 1"));
        std::vector<std::string> out;
        if (r != nullptr && r->elements == 1)
            for (size_t i = 0; i < r->element[0]->element[1]->elements; ++i)
                out.emplace_back(r->element[0]->element[1]->element[i]->str,
                                 r->element[0]->element[1]->element[i]->len);
        freeReplyObject(r);
        return out;
    }

    ClusterStoreOptions options(const std::string &box, std::vector<ClusterKey> keys) const {
        ClusterStoreOptions o;
        o.address = "127.0.0.1:" + std::to_string(port_);
        o.cluster = "test";
        o.box = box;
        o.auth.keys.keys = std::move(keys);
        return o;
    }

    fs::path dir_;
    int port_ = 0;
    pid_t pid_ = -1;
    Raw raw_{nullptr, redisFree};
};

// Signed boxes charge each other; every forged, replayed or wrongly keyed entry is refused,
// counted by its reason, and charges nothing; a forged heartbeat makes no box live.
TEST_F(ClusterSigningTest, ForgedReplayedAndWronglyKeyedEntriesChargeNothing) {
    ClusterStore a(options("A", {kOne})), b(options("B", {kOne}));
    ASSERT_TRUE(a.sync({}).ok);
    ASSERT_TRUE(b.sync({}).ok);
    ASSERT_TRUE(a.sync({{"r", "k", 5}}).ok);
    const std::vector<std::string> genuine = last_entry_fields();  // A's, to replay
    ASSERT_EQ(genuine.size(), 12u);
    const ClusterSyncResult got = b.sync({});
    ASSERT_TRUE(got.ok) << got.error;
    EXPECT_EQ(got.remote, (Deltas{{"r", "k", 5}}));
    EXPECT_EQ(got.live_boxes, 2u);
    EXPECT_EQ(got.refused, 0u);

    const std::string t = std::to_string(now_ms()), s = std::to_string(now_ms() * 1000 + 7);
    auto signed_by = [&](const ClusterKey &k, const std::string &box, const std::string &d) {
        return std::vector<std::string>{
            "b", box, "s",  s,   "t",
            t,   "k", k.id, "m", entry_mac(k, "test", box, std::stoull(s), std::stoull(t), d),
            "d", d};
    };
    xadd({"b", "A", "d", "!allow\t0.0.0.0/0\t315360000000\n"});        // unsigned, a real box's id
    xadd({"b", "X", "d", "r\tk\t1000000000\n"});                       // unsigned
    xadd(genuine);                                                     // replayed
    xadd(signed_by({"one", std::string(40, 'z')}, "A", "r\tk\t9\n"));  // a wrong key
    xadd(signed_by(kTwo, "A", "r\tk\t9\n"));                           // a key not held
    std::vector<std::string> raised = genuine;                         // a bigger charge
    raised[11] = "r\tk\t500\n";
    xadd(raised);
    xadd({"b", "X", "d", ""});  // a forged heartbeat, in the stream and the boxes set
    redis_run(raw_.get(), {"ZADD", "fg:{test}:boxes", t, "X"});

    const ClusterSyncResult forged = b.sync({});
    ASSERT_TRUE(forged.ok) << forged.error;
    EXPECT_TRUE(forged.remote.empty());
    EXPECT_EQ(forged.live_boxes, 2u);  // A and B: X's heartbeat is not believed
    EXPECT_EQ(forged.refused, 7u);
    EXPECT_EQ(forged.signature_refused[reason(EntryRefusal::unsigned_entry)], 3u);
    EXPECT_EQ(forged.signature_refused[reason(EntryRefusal::replayed)], 1u);
    EXPECT_EQ(forged.signature_refused[reason(EntryRefusal::bad_mac)], 2u);
    EXPECT_EQ(forged.signature_refused[reason(EntryRefusal::unknown_key)], 1u);
    EXPECT_EQ(b.totals().entries_refused, forged.signature_refused);

    // A's next charge still arrives, once.
    ASSERT_TRUE(a.sync({{"r", "k", 3}}).ok);
    const ClusterSyncResult after = b.sync({});
    ASSERT_TRUE(after.ok) << after.error;
    EXPECT_EQ(after.remote, (Deltas{{"r", "k", 3}}));
    EXPECT_EQ(after.refused, 0u);
}

// A box that joins learns who is live from the entries of the box_timeout before, and is
// charged none of them.
TEST_F(ClusterSigningTest, AJoiningBoxCountsTheLiveButIsChargedNoHistory) {
    ClusterStore a(options("A", {kOne}));
    ASSERT_TRUE(a.sync({{"r", "k", 1}}).ok);
    ClusterStore b(options("B", {kOne}));
    const ClusterSyncResult first = b.sync({});
    ASSERT_TRUE(first.ok) << first.error;
    EXPECT_TRUE(first.remote.empty());
    EXPECT_EQ(first.live_boxes, 2u);
    ASSERT_TRUE(a.sync({{"r", "k", 2}}).ok);
    EXPECT_EQ(b.sync({}).remote, (Deltas{{"r", "k", 2}}));
}

// A key rotated as docs/cluster.md says (new key second everywhere, then first, then the old one
// gone), one box at a time, each step a new store as a restarted daemon makes: every charge
// arrives, no entry is refused and both boxes stay live throughout.
TEST_F(ClusterSigningTest, KeyRotationWhileSyncingLosesNothing) {
    const std::vector<std::vector<ClusterKey>> steps = {{kOne}, {kOne, kTwo}, {kTwo, kOne}, {kTwo}};
    auto a = std::make_unique<ClusterStore>(options("A", steps[0]));
    auto b = std::make_unique<ClusterStore>(options("B", steps[0]));
    ASSERT_TRUE(a->sync({}).ok);
    ASSERT_TRUE(b->sync({}).ok);
    uint64_t charge = 0, refused = 0;
    auto exchange = [&] {
        ++charge;
        ASSERT_TRUE(a->sync({{"r", "k", charge}}).ok);
        const ClusterSyncResult rb = b->sync({{"r", "k", charge + 100}});
        ASSERT_TRUE(rb.ok) << rb.error;
        EXPECT_EQ(rb.remote, (Deltas{{"r", "k", charge}}));
        EXPECT_EQ(rb.live_boxes, 2u);
        const ClusterSyncResult ra = a->sync({});
        ASSERT_TRUE(ra.ok) << ra.error;
        EXPECT_EQ(ra.remote, (Deltas{{"r", "k", charge + 100}}));
        EXPECT_EQ(ra.live_boxes, 2u);
        refused += ra.refused + rb.refused;
    };
    exchange();
    for (size_t step = 1; step < steps.size(); ++step) {
        a = std::make_unique<ClusterStore>(options("A", steps[step]));
        ASSERT_TRUE(a->sync({}).ok);
        exchange();
        b = std::make_unique<ClusterStore>(options("B", steps[step]));
        ASSERT_TRUE(b->sync({}).ok);
        exchange();
    }
    EXPECT_EQ(refused, 0u);
}

}  // namespace
}  // namespace floodgate
