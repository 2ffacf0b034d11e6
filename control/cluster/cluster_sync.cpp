#include "control/cluster/cluster_sync.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "control/cluster/cluster_request.h"
#include "control/cluster/cluster_store.h"
#include "control/cluster/key_file_watch.h"
#include "control/cluster/remote_allows.h"
#include "control/cluster/sync_latency.h"
#include "control/common/daemon_log.h"
#include "dataplane/api/control_protocol.h"
#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/unix_socket.h"

namespace floodgate {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "box";
    return name;
}

ClusterSyncOptions with_box(ClusterSyncOptions o) {
    if (o.box.empty()) o.box = host_name();
    return o;
}

// An allow without a TTL, told as the longest TTL an override may have.
constexpr uint64_t kNeverMs = static_cast<uint64_t>(kMaxOverrideTtlSeconds) * 1000;

// A bounded request to the dataplane: its replies are a few KB per thousand shared keys.
constexpr int kDataplaneTimeoutMs = 1000;

// Without a cluster key nothing another box writes can be told from what anyone who reaches the
// store writes: such a box takes nothing from the store, and is alone (a failed sync, shown).
constexpr const char *kNoKey =
    "no cluster key (--cluster-key-file): the other boxes' entries cannot be authenticated, so "
    "this box takes none and is alone";

json key_ids(const ClusterKeys &keys) {
    json ids = json::array();
    for (const ClusterKey &k : keys.keys) ids.push_back(k.id);
    return ids;
}

}  // namespace

struct ClusterSync::Round {
    LineClient dataplane;
    std::unique_ptr<ClusterStore> store;
    std::string store_for;  // address, cluster and timeout the store was made for
    uint64_t syncs = 0, store_failures = 0, refused = 0;
    uint64_t syncs_refused = 0;       // cluster_sync requests the dataplane answered with an error
    uint64_t dataplane_failures = 0;  // rounds the dataplane did not answer, or not in protocol
    uint64_t left_out = 0;            // the others' deltas past one request's bounds
    uint32_t live_boxes = 0;          // as the store counted them
    uint32_t boxes_told = 0;          // ... as told the dataplane, capped
    uint64_t allows_added = 0, allows_refused = 0;  // the others' allows, as overrides here
    RemoteAllows remote_allows;                     // ... and those not taken, by reason
    bool store_ok = false;
    std::string last_error;
    double last_round_ms = 0;
    std::optional<KeyFileWatch> key_file;  // with --cluster-key-file: the keys in use
    const ClusterKeys &keys() const { return key_file ? key_file->in_use() : no_keys; }
    const ClusterKeys no_keys{};  // without it (clang asks a const member for an initializer)
    uint64_t key_reloads = 0;
    std::string key_refused;  // why the key file as it is now is not in use
    SyncLatency latency;      // each sync's round trip to the store
};

ClusterSync::ClusterSync(ClusterSyncOptions options)
    : options_(with_box(std::move(options))), state_(std::make_unique<Round>()) {
    if (!options_.auth.key_file.empty())
        state_->key_file.emplace(options_.auth.key_file, options_.auth.keys);
}

// The key file, read again when it changed: a key rotated without a restart.
void ClusterSync::reload_keys(const std::string &cluster_name) {
    Round &r = *state_;
    if (!r.key_file) return;
    if (r.key_file->changed()) {
        ++r.key_reloads;
        if (r.store) r.store->set_keys(r.keys());
        daemon_log("cluster " + cluster_name + ": the cluster key file changed: keys " +
                   key_ids(r.keys()).dump() + " from now on");
    }
    if (r.key_file->refused() != r.key_refused) {
        r.key_refused = r.key_file->refused();
        if (!r.key_refused.empty())
            daemon_log(
                "cluster " + cluster_name +
                ": the cluster key file is refused, the keys in use are kept: " + r.key_refused);
    }
}

ClusterSync::~ClusterSync() = default;

// One sync: take, store, sync. False, with *error, when the dataplane did not answer.
bool ClusterSync::round(const json &cluster, std::string *error) {
    Round &r = *state_;
    json reply;
    if (!r.dataplane.request(dataplane_request(DataplaneCommand::cluster_take), &reply, error,
                             kDataplaneTimeoutMs) ||
        !reply.value("ok", false)) {
        if (error->empty()) *error = reply.value("error", std::string("refused"));
        return false;
    }
    std::vector<ClusterDelta> mine;
    for (const json &row : reply.at("consumed"))
        mine.push_back({row.at(0).get<std::string>(), row.at(1).get<std::string>(),
                        row.at(2).get<uint64_t>()});
    for (const json &row : reply.value("escalated", json::array()))
        mine.push_back({kEscalatedRule, row.at(0).get<std::string>(), row.at(1).get<uint64_t>()});
    {
        std::lock_guard<std::mutex> guard(lock_);
        for (const auto &[prefix, ttl_s] : allows_)
            mine.push_back(
                {kAllowRule, prefix, ttl_s == 0 ? kNeverMs : static_cast<uint64_t>(ttl_s) * 1000});
        allows_.clear();
    }

    const std::string address =
        options_.redis.empty() ? cluster.value("redis", std::string()) : options_.redis;
    const std::string name = cluster.value("name", std::string());
    const uint64_t timeout_ms = cluster.value("box_timeout_ms", uint64_t{3000});
    const std::string store_for = address + "|" + name + "|" + std::to_string(timeout_ms);
    reload_keys(name);
    if (r.keys().on() && (!r.store || r.store_for != store_for)) {
        ClusterStoreOptions o;
        o.address = address;
        o.cluster = name;
        o.box = options_.box;
        o.box_timeout_ms = timeout_ms;
        o.auth = options_.auth;
        o.auth.keys = r.keys();
        // Half an interval at most, so that a slow store never delays the next round.
        o.timeout_ms = static_cast<int>(
            std::clamp<uint64_t>(cluster.value("sync_ms", uint64_t{100}) / 2, 5, 200));
        r.store = std::make_unique<ClusterStore>(o);
        r.store_for = store_for;
        daemon_log("cluster " + name + ": box " + options_.box + " syncs through Redis at " +
                   address + (options_.auth.tls.on() ? " in TLS" : "") +
                   (options_.auth.password.empty()
                        ? ""
                        : " as " + (options_.auth.user.empty() ? std::string("the default user")
                                                               : options_.auth.user)));
    }
    ClusterSyncResult got;
    if (r.keys().on()) {
        const auto asked = Clock::now();
        got = r.store->sync(mine);
        r.latency.add(Clock::now(),
                      std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
    } else {
        got.error = kNoKey;
    }
    if (got.ok != r.store_ok || r.syncs == 0)
        daemon_log("cluster " + name + ": the store " +
                   (got.ok ? "answers" : "does not answer: " + got.error));
    r.store_ok = got.ok;
    if (got.ok) r.live_boxes = got.live_boxes;
    if (!got.ok) {
        ++r.store_failures;
        r.last_error = got.error;
    }
    r.refused += got.refused;

    ClusterRequest sync = cluster_sync_request(got.ok, r.live_boxes, got.remote);
    r.left_out += sync.left_out;
    r.boxes_told = sync.boxes;
    if (!r.dataplane.request(sync.request, &reply, error, kDataplaneTimeoutMs)) return false;
    // A refusal is a round lost: a failed sync, shown and logged (once a change of reason).
    if (reply.value("ok", false)) {
        ++r.syncs;
    } else {
        ++r.syncs_refused;
        const std::string why = "the dataplane refused the sync: " +
                                reply.value("error", std::string("no reason given"));
        if (why != r.last_error) daemon_log("cluster " + name + ": " + why);
        r.last_error = why;
    }
    // The others' allows, as overrides here, within the cluster section's bounds (a refusal
    // by the dataplane counted as well).
    const RemoteAllowPolicy policy = RemoteAllowPolicy::from_status(cluster);
    r.remote_allows.start_round(r.live_boxes);
    for (const ClusterDelta &a : sync.allows) {
        const std::optional<long long> ttl_s = r.remote_allows.take(policy, a.key, a.packets);
        if (!ttl_s) continue;
        json added;
        std::string why;
        if (r.dataplane.request(
                dataplane_request(DataplaneCommand::override_add,
                                  {{"list", "allow"}, {"prefix", a.key}, {"ttl_s", *ttl_s}}),
                &added, &why, kDataplaneTimeoutMs) &&
            added.value("ok", false)) {
            ++r.allows_added;
        } else {
            ++r.allows_refused;
            if (!r.dataplane.connected()) return false;
        }
    }
    return true;
}

void ClusterSync::run(const std::atomic<bool> &stop) {
    Round &r = *state_;
    auto next = Clock::now();
    while (!stop.load()) {
        const auto started = Clock::now();
        std::string error;
        json cluster = json::object();
        // The cluster section of what runs (it changes with a load): from the status. A
        // dataplane away (not started yet, restarting) is tried again next time.
        if (!r.dataplane.connected()) r.dataplane.connect(options_.dataplane, &error);
        json status;
        if (r.dataplane.connected() &&
            r.dataplane.request(dataplane_request(DataplaneCommand::status), &status, &error,
                                kDataplaneTimeoutMs) &&
            status.is_object() && status.contains("cluster") && status["cluster"].is_object())
            cluster = status["cluster"];
        uint64_t sync_ms = 1000;
        const bool active = cluster.value("configured", false);
        if (active) {
            sync_ms = cluster.value("sync_ms", uint64_t{100});
            bool done = false;
            try {
                done = round(cluster, &error);
            } catch (const nlohmann::json::exception &e) {  // a reply not of the protocol
                error = e.what();
            }
            if (!done) {  // the round is lost: counted, and logged once a change of reason
                ++r.dataplane_failures;
                const std::string why = "a round with the dataplane failed: " + error;
                if (why != r.last_error)
                    daemon_log("cluster " + cluster.value("name", std::string()) + ": " + why);
                r.last_error = why;
                r.dataplane.close();
            }
        }
        {
            std::lock_guard<std::mutex> guard(lock_);
            status_ = {{"active", active},
                       {"box", options_.box},
                       {"store_ok", r.store_ok},
                       {"live_boxes", r.live_boxes},
                       {"boxes_told", r.boxes_told},
                       {"syncs", r.syncs},
                       {"syncs_refused", r.syncs_refused},
                       {"dataplane_failures", r.dataplane_failures},
                       {"left_out", r.left_out},
                       {"store_failures", r.store_failures},
                       {"refused", r.refused},
                       {"allows_added", r.allows_added},
                       {"allows_refused", r.allows_refused},
                       {"allows_bounded", r.remote_allows.counts()},
                       {"last_error", r.last_error},
                       {"keys", key_ids(r.keys())},
                       {"key_reloads", r.key_reloads},
                       {"key_file_refused", r.key_refused},
                       {"round_ms",
                        std::chrono::duration<double, std::milli>(Clock::now() - started).count()}};
            const SyncLatency::Figures lat = r.latency.figures(Clock::now());
            status_["store_round_trip"] = {
                {"window_s", std::chrono::duration<double>(SyncLatency::kWindow).count()},
                {"samples", lat.samples},
                {"p50_ms", lat.p50_ms},
                {"p99_ms", lat.p99_ms},
                {"max_ms", lat.max_ms}};
            if (r.store) {
                const ClusterStore::Totals &t = r.store->totals();
                status_["store"] = {{"ok", t.ok},
                                    {"failed", t.failed},
                                    {"refused", t.refused},
                                    {"bytes", t.bytes},
                                    {"auth_refused", t.auth_refused},
                                    {"tls_refused", t.tls_refused},
                                    {"timeouts", t.timeouts}};
                json &entries = status_["store"]["entries_refused"] = json::object();
                for (size_t i = 0; i < kEntryRefusals; ++i)
                    entries[kEntryRefusalNames[i]] = t.entries_refused[i];
            }
        }
        // On a fixed schedule; a round that overran is not made up for.
        next += std::chrono::milliseconds(sync_ms);
        if (next < Clock::now()) next = Clock::now();
        while (!stop.load() && Clock::now() < next)
            std::this_thread::sleep_for(
                std::min<Clock::duration>(next - Clock::now(), std::chrono::milliseconds(50)));
    }
}

void ClusterSync::tell_allow(const std::string &prefix, long long ttl_s) {
    std::lock_guard<std::mutex> guard(lock_);
    if (allows_.size() < kMaxOverrides) allows_.emplace_back(prefix, ttl_s);
}

json ClusterSync::status() const {
    std::lock_guard<std::mutex> guard(lock_);
    return status_;
}

}  // namespace floodgate
