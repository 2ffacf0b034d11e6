// The cluster_sync request the daemon sends the dataplane, built from what the store returned,
// within the bounds the dataplane puts on one request (dataplane/service/request.cpp refuses a
// whole request past any of them, and with it every charge of the round): at most
// kMaxClusterCharges charges, kMaxClusterEscalations escalations, kMaxClusterBoxes boxes,
// kMaxMessageBytes bytes and kMaxMessageValues values. What the store returned past those is
// left out and counted, delta by delta; what fits always goes.
//
// Charges are summed per (rule, key) and box first, a row per box, which the dataplane bounds
// by what one box could admit before it sums them (dataplane/pipeline/remote_bounds.h); escalations
// go in before charges (fewer, and a source to stop), each in stream order. The live boxes are told
// as the store counted them, capped at kMaxClusterBoxes: a larger cluster falls back as if it
// had 1,024 boxes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/cluster/cluster_store.h"

namespace floodgate {

// Reserved rule names of the lines that carry escalations and allows (cluster_sync.h).
inline constexpr const char *kEscalatedRule = "!escalated";
inline constexpr const char *kAllowRule = "!allow";

struct ClusterRequest {
    nlohmann::json request;            // the cluster_sync request
    std::vector<ClusterDelta> allows;  // the others' allows, each told as an override of its own
    uint32_t boxes = 1;                // the live boxes told
    uint64_t left_out = 0;             // deltas past the request's bounds, not sent
};

ClusterRequest cluster_sync_request(bool store_ok, uint32_t live_boxes,
                                    const std::vector<ClusterDelta> &remote);

}  // namespace floodgate
