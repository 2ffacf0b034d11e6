// floodctl daemon's cluster sync (docs/cluster.md, "Several boxes"): the one place Redis is spoken
// to. Every sync interval of the running rules' cluster section, on a thread of its own with its
// own connection to the dataplane:
//   1. cluster_take: what this box admitted for shared keys since the last take;
//   2. the store (control/cluster/cluster_store.h): push that, pull what the other boxes
//      pushed, the number of live boxes; entries signed and checked with the cluster key
//      (--cluster-key-file, read again when it changes): with no key there is no sync at all;
//   3. cluster_sync: whether the store answered, the live boxes and the others' consumption,
//      which the dataplane charges to its workers (within the bounds it takes,
//      control/cluster/cluster_request.h); a sync it refuses is a round lost, counted and logged.
// The dataplane never waits for any of it: a slow or dead store costs this thread its bounded
// timeouts, and the dataplane, told the store did not answer, or hearing nothing for three
// intervals, falls back on its own (dataplane/pipeline/cluster_state.h).
//
// Escalations and allows ride in the same entries as the consumption, as lines of reserved
// rule names (a rule name never starts with '!'):
//   !escalated  PREFIX  TTL_MS   a source this box's XDP tier escalated; the others add it to
//                                theirs with the TTL left
//   !allow      PREFIX  TTL_MS   an allow override the operator added here; the others add it
//                                too (kNeverMs: no TTL), which lifts what it covers everywhere
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "control/cluster/store_auth.h"

namespace floodgate {

struct ClusterSyncOptions {
    std::string dataplane;  // the dataplane's control socket
    std::string box;        // this box's id in the cluster (--box; default: the host name)
    std::string redis;      // overrides the rules file's cluster.redis (--redis), if not empty
    StoreAuth auth;         // the ACL user, password and TLS (--redis-user, ...)
};

class ClusterSync {
  public:
    explicit ClusterSync(ClusterSyncOptions options);
    ~ClusterSync();
    // Syncs until stop is set; idle (checking every second) while the running rules have no
    // cluster section or the dataplane is away.
    void run(const std::atomic<bool> &stop);
    // For floodctl status and the metrics: the store as this daemon sees it.
    nlohmann::json status() const;
    // An allow the operator added through this daemon (ttl_s 0: never expires): told to the
    // other boxes at the next sync, where it lifts the same sources (and their escalations).
    void tell_allow(const std::string &prefix, long long ttl_s);

  private:
    struct Round;
    bool round(const nlohmann::json &cluster, std::string *error);
    void reload_keys(const std::string &cluster_name);

    const ClusterSyncOptions options_;
    std::unique_ptr<Round> state_;  // the store and the dataplane link, this thread's only
    mutable std::mutex lock_;       // guards what status() reads, and allows_
    nlohmann::json status_ = {{"active", false}};
    std::vector<std::pair<std::string, long long>> allows_;  // to tell at the next sync
};

}  // namespace floodgate
