// The cluster's families (docs/cluster.md, "Several boxes"): the dataplane's side from its status,
// the store's from the daemon's sync. Internal to control/metrics/metrics.cpp; like it, never
// throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// status: the dataplane's status reply; daemon: ClusterSync::status() (either may be null).
void cluster_metrics(const nlohmann::json *status, const nlohmann::json *daemon, std::string &out);

}  // namespace floodgate
