// syn-proxy's connection table (dataplane/core/proxy_flows.h) on DPDK's rte_hash: a connection is
// found from either side, a full table refuses exactly the opens past its capacity and takes new
// ones once some end, and the sweep ends exactly the connections past their timeouts.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "dataplane/core/proxy_flows.h"

namespace floodgate {
namespace {

constexpr uint64_t kFlowSecond = 1'000'000'000;
const HashSeed kSeed{{1, 2, 3, 4}};

// A client's segment toward 198.19.0.1:443 (or 2001:db8::1), client i.
PacketInfo from_client(uint32_t i, uint8_t family = 4) {
    PacketInfo p;
    std::memset(static_cast<void *>(&p), 0, sizeof p);
    p.family = family;
    if (family == 4) {
        const uint8_t src[4] = {198, 18, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        const uint8_t dst[4] = {198, 19, 0, 1};
        std::memcpy(p.src, src, 4);
        std::memcpy(p.dst, dst, 4);
    } else {
        const uint8_t src[16] = {0x20,
                                 0x01,
                                 0x0d,
                                 0xb8,
                                 0,
                                 2,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 static_cast<uint8_t>(i >> 8),
                                 static_cast<uint8_t>(i)};
        const uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        std::memcpy(p.src, src, 16);
        std::memcpy(p.dst, dst, 16);
    }
    p.src_port = static_cast<uint16_t>(40000 + i % 1000);
    p.dst_port = 443;
    return p;
}

PacketInfo reply_to(const PacketInfo &c) {
    PacketInfo p = c;
    std::memcpy(p.src, c.dst, 16);
    std::memcpy(p.dst, c.src, 16);
    p.src_port = c.dst_port;
    p.dst_port = c.src_port;
    return p;
}

TEST(ProxyFlows, FindsAConnectionFromEitherSide) {
    ProxyFlows flows(1024, 3 * kFlowSecond, 300 * kFlowSecond, kSeed, 0);
    ASSERT_TRUE(flows.ok());
    for (uint8_t family : {4, 6}) {
        const PacketInfo c = from_client(7, family);
        ProxyFlow *f = flows.open(flow_key(c, true), kFlowSecond);
        ASSERT_NE(f, nullptr);
        EXPECT_EQ(f->state, FlowState::opening);
        f->cookie = 1234u + family;
        EXPECT_EQ(flows.find(flow_key(c, true)), f);
        EXPECT_EQ(flows.find(flow_key(reply_to(c), false)), f);
        // The same ports the other way round, or another family, are other connections.
        EXPECT_EQ(flows.find(flow_key(reply_to(c), true)), nullptr);
    }
    EXPECT_EQ(flows.find(flow_key(from_client(7, 4), true))->cookie, 1238u);
    EXPECT_EQ(flows.find(flow_key(from_client(7, 6), true))->cookie, 1240u);
    EXPECT_EQ(flows.size(), 2u);
    EXPECT_EQ(flows.stats().opened, 2u);
}

// Opening a connection twice gives back the first, closing twice ends it once: the count of
// connections never drifts (a drift past zero would refuse every later open).
TEST(ProxyFlows, OpensAndClosesCountOnce) {
    ProxyFlows flows(16, 3 * kFlowSecond, 300 * kFlowSecond, kSeed, 0);
    ASSERT_TRUE(flows.ok());
    const FlowKey k = flow_key(from_client(3), true);
    ProxyFlow *f = flows.open(k, kFlowSecond);
    ASSERT_NE(f, nullptr);
    f->cookie = 77;
    EXPECT_EQ(flows.open(k, 2 * kFlowSecond), f);
    EXPECT_EQ(f->cookie, 77u) << "left as it was";
    EXPECT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows.stats().opened, 1u);
    flows.close(f);
    flows.close(f);
    EXPECT_EQ(flows.size(), 0u);
    EXPECT_EQ(flows.stats().closed, 1u);
    for (uint32_t i = 0; i < 16; ++i)
        EXPECT_NE(flows.open(flow_key(from_client(i), true), 0), nullptr);
    EXPECT_EQ(flows.size(), 16u);
}

TEST(ProxyFlows, FindsInBulkWhatItFindsOneByOne) {
    ProxyFlows flows(256, 3 * kFlowSecond, 300 * kFlowSecond, kSeed, 0);
    ASSERT_TRUE(flows.ok());
    for (uint32_t i = 0; i < 100; i += 2) flows.open(flow_key(from_client(i), true), kFlowSecond);
    std::vector<FlowKey> keys;
    for (uint32_t i = 0; i < ProxyFlows::kFindBulkMax; ++i)
        keys.push_back(flow_key(from_client(i * 3 % 101), true));
    std::vector<const FlowKey *> ptrs;
    for (const FlowKey &k : keys) ptrs.push_back(&k);
    ProxyFlow *found[ProxyFlows::kFindBulkMax];
    flows.find_bulk(ptrs.data(), ProxyFlows::kFindBulkMax, found);
    unsigned present = 0;
    for (uint32_t i = 0; i < ProxyFlows::kFindBulkMax; ++i) {
        EXPECT_EQ(found[i], flows.find(keys[i])) << i;
        const uint32_t client = i * 3 % 101;
        EXPECT_EQ(found[i] != nullptr, client < 100 && client % 2 == 0) << i;
        present += found[i] != nullptr ? 1 : 0;
    }
    EXPECT_EQ(present, 32u);
}

TEST(ProxyFlows, AFullTableRefusesExactlyThePastCapacity) {
    ProxyFlows flows(1000, 3 * kFlowSecond, 300 * kFlowSecond, kSeed, 0);
    ASSERT_TRUE(flows.ok());
    std::vector<ProxyFlow *> opened;
    for (uint32_t i = 0; i < 1200; ++i) {
        ProxyFlow *f = flows.open(flow_key(from_client(i), true), kFlowSecond);
        if (f != nullptr) opened.push_back(f);
    }
    EXPECT_EQ(opened.size(), 1000u);
    EXPECT_EQ(flows.stats().full, 200u);
    EXPECT_EQ(flows.size(), 1000u);
    std::set<ProxyFlow *> distinct(opened.begin(), opened.end());
    EXPECT_EQ(distinct.size(), 1000u) << "every connection has its own state";
    flows.close(opened[10]);
    flows.close(opened[20]);
    EXPECT_EQ(flows.find(flow_key(from_client(10), true)), nullptr);
    EXPECT_NE(flows.open(flow_key(from_client(5000), true), 2 * kFlowSecond), nullptr);
    EXPECT_NE(flows.open(flow_key(from_client(5001), true), 2 * kFlowSecond), nullptr);
    EXPECT_EQ(flows.open(flow_key(from_client(5002), true), 2 * kFlowSecond), nullptr);
    EXPECT_EQ(flows.stats().full, 201u);
    EXPECT_EQ(flows.stats().closed, 2u);
    EXPECT_NE(flows.find(flow_key(from_client(999), true)), nullptr);
}

TEST(ProxyFlows, SweepEndsExactlyTheConnectionsPastTheirTimeouts) {
    ProxyFlows flows(256, 3 * kFlowSecond, 60 * kFlowSecond, kSeed, 0);
    ASSERT_TRUE(flows.ok());
    // 100 opening since t = 10 s; 100 open, last seen at t = 10 s.
    for (uint32_t i = 0; i < 200; ++i) {
        ProxyFlow *f = flows.open(flow_key(from_client(i), true), 10 * kFlowSecond);
        ASSERT_NE(f, nullptr);
        f->cookie = i;
        if (i >= 100) f->state = FlowState::open;
    }
    auto sweep_all = [&](uint64_t now) {
        std::vector<uint32_t> ended;
        flows.sweep(now, 1u << 20, [&](const ProxyFlow &f) {
            ended.push_back(f.cookie);
            return false;
        });
        return ended;
    };
    EXPECT_TRUE(sweep_all(13 * kFlowSecond - 1).empty());
    std::vector<uint32_t> ended = sweep_all(13 * kFlowSecond);  // the server timeout
    ASSERT_EQ(ended.size(), 100u);
    for (uint32_t c : ended) EXPECT_LT(c, 100u);
    EXPECT_EQ(flows.size(), 100u);
    EXPECT_TRUE(sweep_all(70 * kFlowSecond - 1).empty());
    EXPECT_EQ(sweep_all(70 * kFlowSecond).size(), 100u);  // the idle timeout
    EXPECT_EQ(flows.size(), 0u);
    EXPECT_EQ(flows.stats().timed_out, 200u);
    // Sweeps of a few slots each go round the whole table.
    for (uint32_t i = 0; i < 10; ++i) flows.open(flow_key(from_client(i), true), 0);
    for (unsigned calls = 0; flows.size() > 0 && calls < 10000; ++calls)
        flows.sweep(100 * kFlowSecond, 8, [](const ProxyFlow &) { return false; });
    EXPECT_EQ(flows.size(), 0u);
}

}  // namespace
}  // namespace floodgate
