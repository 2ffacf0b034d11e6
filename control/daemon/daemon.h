// `floodctl daemon`: the long-running control-plane process. It talks to the dataplane over
// its control socket (dataplane/api/control_protocol.h), serves the floodctl CLI on its own
// socket and Prometheus on HTTP. The dataplane never depends on it: it keeps filtering with
// its last rules, and expires overrides itself, while the daemon is down.
//
// On every (re)connection the daemon reads the running state and carries on from it. Two
// cases push state instead:
//   - the dataplane still runs the rules it started with and --config differs from them (a
//     fresh start of both services): the daemon loads --config;
//   - the dataplane restarted (new instance) while the daemon remembers rules, mode switches
//     or overrides applied through it: the daemon applies them again (overrides with what is
//     left of their TTL), so a dataplane crash does not undo an operator's changes.
//
// The CLI's commands, one JSON request per line on --socket, are listed in
// dataplane/api/daemon_commands.h: the daemon's own, and the dataplane's it passes on.
#pragma once

#include <string>

#include "control/cluster/store_auth.h"
#include "control/metrics/metrics.h"
#include "control/upstream/flowspec.h"
#include "dataplane/api/control_protocol.h"

namespace floodgate {

struct DaemonOptions {
    std::string config;  // rules file for a fresh start (may be empty)
    std::string dataplane = kDefaultDataplaneSocket;
    std::string socket = kDefaultDaemonSocket;
    std::string metrics = kDefaultMetricsAddress;  // "none": no HTTP endpoint
    // The endpoint's TLS and basic auth (control/daemon/web_config.h), read at start ("": plain
    // HTTP, open).
    std::string web_config_file;
    // The cluster (control/cluster/cluster_sync.h): this box's id (default: the host name), and a
    // Redis address instead of the rules file's.
    std::string box;
    std::string redis;
    StoreAuth store_auth;  // Redis's ACL user, password and TLS, read at start
    // Upstream (control/upstream/flowspec_feed.h): the local gobgpd's API (empty: nothing
    // announced), the most rules at once, new ones a second, and the RTBH form beside FlowSpec;
    // the shortest source prefix announced per family, and the sources never announced
    // (FlowspecOptions says why and the defaults).
    std::string flowspec;
    size_t flowspec_max = 1000;
    double flowspec_rate = 20;
    bool rtbh = false;
    uint8_t flowspec_min_source4 = FlowspecOptions{}.min_source_len4;
    uint8_t flowspec_min_source6 = FlowspecOptions{}.min_source_len6;
    std::vector<Prefix> flowspec_never_block;
    // The NIC tier's rules with most hits that get Prometheus series of their own (1 to
    // kNicTopRules; control/metrics/nic_tier_metrics.h).
    size_t nic_top_rules = kDefaultNicTopRules;
};

// Runs until SIGINT or SIGTERM; returns the exit code.
int run_daemon(const DaemonOptions &options);

}  // namespace floodgate
