// The dataplane's half of the control plane: the rules as the operator wrote them, the runtime
// overrides and their expiry, and the commands of the control protocol
// (dataplane/api/control_protocol.h). Each change is compiled into a new RuleSet here, off the
// hot path, and handed to the workers with LiveRuleSet::swap; a change that does not compile
// leaves everything as it was.
//
// Rules arrive as the rules file's JSON document, which floodctl has validated and which is
// validated again here (rules/load.h): the dataplane never parses YAML from a socket.
//
// The dataplane owns override expiry (expire_overrides() runs on the control thread), so
// overrides expire on time whether or not floodctl's daemon is running. TTLs and uptime follow
// the monotonic clock: a step of the wall clock (NTP, an operator's `date -s`) moves none of
// them; wall-clock times in replies only label instants for people.
//
// Thread safety: every public method takes one lock; they run on the control thread and the
// telemetry thread, never on a worker.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/api/unix_socket.h"
#include "dataplane/live/live_ruleset.h"
#include "dataplane/service/request.h"
#include "rules/load.h"

namespace floodgate {

uint64_t unix_now_ns();       // CLOCK_REALTIME
uint64_t monotonic_now_ns();  // CLOCK_MONOTONIC

// The two clocks the service reads, as a seam for tests.
struct ServiceClock {
    std::function<uint64_t()> monotonic_ns = monotonic_now_ns;
    std::function<uint64_t()> wall_ns = unix_now_ns;
};

// What runs, for the XDP tier's feed (dataplane/service/xdp_feed.h): the lists and overrides it
// keeps in the maps, the rules (with floodctl's modes applied) it escalates for, and the version
// that changes whenever any of them does.
struct RunningRules {
    uint64_t version = 0;
    std::vector<Prefix> allow;
    std::vector<Prefix> block;
    std::vector<PrefixOverride> overrides;
    std::vector<Rule> rules;
};

struct ServiceInfo {
    unsigned workers = 1;
    int socket_id = -1;
    std::string instance;                // unique per dataplane process start
    std::string steering_mode = "none";  // how packets reach their owner (LiveView)
};

class Service {
  public:
    // Everything the dataplane counts, for the current ruleset, with the top refused sources
    // of each rule (see live_stats.h).
    using StatsFn = std::function<nlohmann::ordered_json(const RuleSet &, unsigned top)>;

    // live already runs the ruleset compiled from startup (version 1, origin "startup").
    Service(LiveRuleSet *live, RulesFile startup, ServiceInfo info, StatsFn stats,
            ServiceClock clock = {});

    // One request line in, one response line out. Never throws.
    std::string handle(const std::string &request_line);
    // The same for the control socket's server: a load is decoded (its rules validated and
    // their payload patterns compiled) on a thread of its own, off the service's lock, and
    // applied on the server's thread once decoded, so stats and the other requests are answered
    // meanwhile; a second load while one is decoded is refused as busy.
    LineServer::Answer answer(const std::string &request_line);
    // Drops overrides whose time has come (swapping in a ruleset without them).
    void expire_overrides();
    // The cluster sync's hooks into the running dataplane (before the control socket serves);
    // without them `cluster_sync` is refused.
    void attach_cluster(ClusterHooks hooks);
    // Falls back to the shared rules' fallbacks when floodctl has not synced for three
    // intervals (dataplane/pipeline/cluster_state.h).
    void cluster_tick();

    RunningRules running();
    uint64_t version();  // of the running rules, overrides and modes: up by one on each change

    // The replies to status, stats, rules and overrides, for telemetry.
    nlohmann::ordered_json status();
    nlohmann::ordered_json stats();
    nlohmann::ordered_json rules();
    nlohmann::ordered_json overrides();

  private:
    // Executes a decoded request (dataplane/service/request.h) against the running state.
    nlohmann::ordered_json dispatch(const ServiceRequest &request);
    // decode() off the lock, then dispatch() under it, refusals counted and logged: the reply.
    std::string reply_to(const std::function<ServiceRequest()> &decode);
    nlohmann::ordered_json status_locked() const;
    nlohmann::ordered_json rules_locked() const;
    nlohmann::ordered_json overrides_locked() const;
    nlohmann::ordered_json execute(const StatusRequest &) { return status_locked(); }
    nlohmann::ordered_json execute(const StatsRequest &request);
    nlohmann::ordered_json execute(const RulesRequest &) { return rules_locked(); }
    nlohmann::ordered_json execute(const OverridesRequest &) { return overrides_locked(); }
    nlohmann::ordered_json execute(const LoadRequest &request);
    nlohmann::ordered_json execute(const RefusedLoadRequest &request);
    nlohmann::ordered_json execute(const ModeRequest &request);
    nlohmann::ordered_json execute(const OverrideAddRequest &request);
    nlohmann::ordered_json execute(const OverrideDelRequest &request);
    nlohmann::ordered_json execute(const ClusterTakeRequest &request);
    nlohmann::ordered_json execute(const ClusterSyncRequest &request);
    // Compiles and swaps in the rules with modes, overrides and the cluster's fallbacks
    // applied; on success they become the running state and the version goes up. On failure
    // nothing changes. A reload counts in reloads (ok or failed); a change of the cluster's
    // state does not.
    bool apply(const RulesFile &rules, const std::map<std::string, RuleMode> &modes,
               const std::vector<PrefixOverride> &overrides, const char *origin, std::string *error,
               bool reload = true);
    // The running rules again after the cluster joined or left, logged.
    void cluster_changed();
    // Refuses a cluster request when there is no cluster to sync.
    void check_cluster() const;

    std::mutex lock_;
    LiveRuleSet *live_;
    const ServiceInfo info_;
    const StatsFn stats_;
    const ServiceClock clock_;
    const uint64_t started_ns_;       // monotonic
    const uint64_t started_unix_ns_;  // wall, for people

    RulesFile rules_;                        // as written, with what it means
    std::string origin_ = "startup";         // who loaded rules_: "startup" or "floodctl"
    std::map<std::string, RuleMode> modes_;  // floodctl rule NAME shadow|enforce since the load
    std::vector<PrefixOverride> overrides_;
    uint64_t version_ = 1;
    uint64_t loaded_unix_ns_ = 0;
    uint64_t reloads_ok_ = 0;
    uint64_t reloads_failed_ = 0;
    uint64_t overrides_expired_ = 0;
    uint64_t expiry_retry_ns_ = 0;   // after a failed expiry: not before this (monotonic)
    uint64_t requests_refused_ = 0;  // malformed or invalid control messages
    ClusterLink cluster_;
    // Declared last: destroyed first, waiting for a load being decoded, which uses none of the
    // above.
    BackgroundAnswer<ServiceRequest> loading_;
};

}  // namespace floodgate
