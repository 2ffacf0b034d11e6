// The cluster_sync request the daemon builds from what the store returned
// (control/cluster/cluster_request.h): whatever the store held, the request stays within the
// bounds the dataplane refuses a whole request past, and what is left out is counted exactly.
// Expected figures are worked out here from the bounds, not read from the builder.
#include "control/cluster/cluster_request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/rules.h"
#include "dataplane/service/request.h"

namespace floodgate {
namespace {

using Deltas = std::vector<ClusterDelta>;

size_t rows(const ClusterRequest &r, const char *field) {
    return r.request.at(field).size();
}

TEST(ClusterRequest, SortsChargesEscalationsAndAllows) {
    const ClusterRequest r = cluster_sync_request(true, 3,
                                                  {{"total", "198.18.1.1/32", 3, "B"},
                                                   {kEscalatedRule, "198.18.9.9/32", 60000, "B"},
                                                   {kAllowRule, "198.18.66.0/24", 60000, "C"},
                                                   {"total", "198.18.1.1/32", 4, "B"},
                                                   {"total", "198.18.1.1/32", 9, "C"},
                                                   {"other", "*", 5, "C"}});
    EXPECT_EQ(r.request.at("cmd"), "cluster_sync");
    EXPECT_EQ(r.request.at("store_ok"), true);
    EXPECT_EQ(r.request.at("boxes"), 3);
    // Summed per (rule, key) and box: a row a box, which the dataplane bounds on its own.
    EXPECT_EQ(r.request.at("charges"),
              nlohmann::json::parse(
                  R"([["other","*",5],["total","198.18.1.1/32",7],["total","198.18.1.1/32",9]])"));
    EXPECT_EQ(r.request.at("escalations"), nlohmann::json::parse(R"([["198.18.9.9/32",60000]])"));
    EXPECT_EQ(r.allows, (Deltas{{kAllowRule, "198.18.66.0/24", 60000}}));
    EXPECT_EQ(r.left_out, 0u);
}

// 1,101 members of the boxes set, and this box: told as kMaxClusterBoxes, which the dataplane
// takes; none and one are both told as one.
TEST(ClusterRequest, LiveBoxesAreCapped) {
    EXPECT_EQ(cluster_sync_request(true, 1102, {}).request.at("boxes"), kMaxClusterBoxes);
    EXPECT_EQ(cluster_sync_request(true, 1102, {}).boxes, 1024u);
    EXPECT_EQ(cluster_sync_request(true, UINT32_MAX, {}).boxes, 1024u);
    EXPECT_EQ(cluster_sync_request(false, 0, {}).boxes, 1u);
    EXPECT_EQ(cluster_sync_request(true, 1024, {}).boxes, 1024u);
}

// The dataplane's own decoder takes the request (it refuses a whole request past its bounds).
void expect_taken(const ClusterRequest &r) {
    EXPECT_NO_THROW(decode_service_request(r.request.dump()));
}

Deltas charges(size_t n) {
    Deltas out;
    for (size_t i = 0; i < n; ++i) out.push_back({"r", std::to_string(i), 1});
    return out;
}

Deltas escalations(size_t n) {
    return Deltas(n, {kEscalatedRule, "198.18.0.1/32", 1000});
}

TEST(ClusterRequest, CountsPastTheDataplanesBoundsAreLeftOutAndCounted) {
    const ClusterRequest c = cluster_sync_request(true, 1, charges(kMaxClusterCharges + 1000));
    EXPECT_EQ(rows(c, "charges"), kMaxClusterCharges);
    EXPECT_EQ(c.left_out, 1000u);
    expect_taken(c);
    const ClusterRequest e = cluster_sync_request(true, 1, escalations(kMaxClusterEscalations + 7));
    EXPECT_EQ(rows(e, "escalations"), kMaxClusterEscalations);
    EXPECT_EQ(e.left_out, 7u);
    expect_taken(e);
    // Both at their most pass the values a message may hold (2^18 x 4 + 2^16 x 3 > 2^20 +
    // 2^16): the escalations go in whole, the charges up to the values left.
    Deltas both = charges(kMaxClusterCharges);
    const Deltas more = escalations(kMaxClusterEscalations);
    both.insert(both.end(), more.begin(), more.end());
    const ClusterRequest b = cluster_sync_request(true, 1, both);
    EXPECT_EQ(rows(b, "escalations"), kMaxClusterEscalations);
    EXPECT_LT(rows(b, "charges"), kMaxClusterCharges);
    EXPECT_EQ(rows(b, "charges") + b.left_out, kMaxClusterCharges);
    expect_taken(b);
}

// The longest fields, each byte escaped as \u00XX: the bytes, not the count, bound the request.
TEST(ClusterRequest, BytesPastTheDataplanesBoundsAreLeftOutAndCounted) {
    Deltas remote;
    const std::string rule(kMaxRuleBytes, '\x01');
    for (size_t i = 0; i < kMaxClusterCharges; ++i) {
        std::string key = std::to_string(i);
        key.resize(kMaxKeyBytes, '\x02');
        remote.push_back({rule, key, kMaxDeltaPackets});
    }
    const ClusterRequest r = cluster_sync_request(true, 1, remote);
    const size_t sent = rows(r, "charges");
    EXPECT_GT(sent, 0u);
    EXPECT_LT(sent, kMaxClusterCharges);
    EXPECT_EQ(sent + r.left_out, kMaxClusterCharges);
    EXPECT_LE(r.request.dump().size(), kMaxMessageBytes);
    expect_taken(r);
}

}  // namespace
}  // namespace floodgate
