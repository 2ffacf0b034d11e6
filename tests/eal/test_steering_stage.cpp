// NIC steering's hand-over (dataplane/live/steering_stage.h): frames the NIC hashed stay on the
// queue it put them on, and those it did not (no RTE_MBUF_F_RX_RSS_HASH: a QinQ tag, a flow type
// it does not parse) all land on one queue and are handed to the worker the NIC sends their
// hashed siblings to. The expected worker comes from a bit-by-bit Toeplitz written here, not
// from rte_softrss or the stage's nic_queue, over the round-robin RETA setup_port programs.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "dataplane/core/steering.h"
#include "dataplane/live/steering_stage.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr unsigned kWorkers = 4;
constexpr unsigned kRetaSize = 128;
constexpr unsigned kKeyBytes = 40;
constexpr unsigned kSourcesPerFamily = 64;
constexpr unsigned kArpFrames = 5;

// Toeplitz, as the NIC computes it: for each set bit i of the input (most significant first),
// XOR in the 32 key bits that start at bit i.
uint32_t toeplitz(const uint8_t *input, unsigned input_bytes, const std::vector<uint8_t> &key) {
    auto key_bit = [&](unsigned b) { return (key[b / 8] >> (7 - b % 8)) & 1u; };
    uint32_t hash = 0;
    for (unsigned i = 0; i < input_bytes * 8; ++i) {
        if (((input[i / 8] >> (7 - i % 8)) & 1u) == 0) continue;
        uint32_t window = 0;
        for (unsigned b = 0; b < 32; ++b) window = window << 1 | key_bit(i + b);
        hash ^= window;
    }
    return hash;
}

struct Source {
    test::Frame plain, qinq;  // the same source's frame, bare and behind two tags
    unsigned owner;           // the queue the NIC's RSS puts it on
};

class NicHandOver : public ::testing::Test {
  protected:
    void SetUp() override {
        pool_ = rte_pktmbuf_pool_create("test_steer_stage", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                        SOCKET_ID_ANY);
        ASSERT_NE(pool_, nullptr);
        std::mt19937_64 rng(45);
        key_.resize(kKeyBytes);
        for (uint8_t &b : key_) b = static_cast<uint8_t>(rng());
        // A /64 key, as NIC steering makes one (nic_prefix_bits).
        zero_key_past_prefix(key_.data(), key_.size(), 64);
        rings_ = std::make_unique<SteeringRings>(kWorkers, SteeringRings::kRingSize,
                                                 nic_steering(SteeringOptions{true, 32, 64}, false),
                                                 NicHash{key_, kRetaSize});
        ASSERT_TRUE(rings_->ok());
        for (unsigned w = 0; w < kWorkers; ++w)
            stages_.push_back(std::make_unique<SteeringStage>(rings_.get(), w));
    }
    void TearDown() override {
        stages_.clear();
        rings_.reset();
        rte_mempool_free(pool_);
    }

    Source source_v4(unsigned i) {
        const test::Ipv4Addr a = {198, 18, static_cast<uint8_t>(i * 37), static_cast<uint8_t>(i)};
        return {test::PacketBuilder().ipv4(a, {198, 19, 0, 1}).udp(4000, 53).payload(8).build(),
                test::PacketBuilder()
                    .qinq(10)
                    .vlan(20)
                    .ipv4(a, {198, 19, 0, 1})
                    .udp(4000, 53)
                    .payload(8)
                    .build(),
                toeplitz(a.data(), 4, key_) % kRetaSize % kWorkers};
    }
    Source source_v6(unsigned i) {
        test::Ipv6Addr a = test::ipv6_addr("2001:db8::1");
        a[4] = static_cast<uint8_t>(i * 53);  // another /64 each
        a[7] = static_cast<uint8_t>(i);
        const test::Ipv6Addr dst = test::ipv6_addr("2001:db8:ffff::1");
        return {
            test::PacketBuilder().ipv6(a, dst).udp(4000, 53).payload(8).build(),
            test::PacketBuilder().qinq(10).vlan(20).ipv6(a, dst).udp(4000, 53).payload(8).build(),
            toeplitz(a.data(), 16, key_) % kRetaSize % kWorkers};
    }

    rte_mbuf *mbuf(const test::Frame &f, bool hashed) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool_);
        EXPECT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        if (hashed) m->ol_flags |= RTE_MBUF_F_RX_RSS_HASH;
        return m;
    }

    // What each worker's stage is given, in bursts of kMaxBurst; then each takes in what the
    // others handed it. out[w]: the frames worker w is left to decide.
    void run(const std::vector<std::vector<rte_mbuf *>> &received,
             std::vector<std::vector<rte_mbuf *>> *out) {
        out->assign(kWorkers, {});
        rte_mbuf *kept[kMaxBurst];
        for (unsigned w = 0; w < kWorkers; ++w)
            for (size_t at = 0; at < received[w].size(); at += kMaxBurst) {
                const auto n =
                    static_cast<uint16_t>(std::min<size_t>(kMaxBurst, received[w].size() - at));
                const uint16_t mine = stages_[w]->steer(&received[w][at], n, kept);
                (*out)[w].insert((*out)[w].end(), kept, kept + mine);
            }
        for (unsigned w = 0; w < kWorkers; ++w)
            while (const uint16_t mine = stages_[w]->steer(nullptr, 0, kept))
                (*out)[w].insert((*out)[w].end(), kept, kept + mine);
    }

    std::vector<uint8_t> key_;
    rte_mempool *pool_ = nullptr;
    std::unique_ptr<SteeringRings> rings_;
    std::vector<std::unique_ptr<SteeringStage>> stages_;
};

TEST_F(NicHandOver, FramesWithoutTheHashReachTheQueueOfTheirHashedSiblings) {
    std::vector<Source> sources;
    for (unsigned i = 0; i < kSourcesPerFamily; ++i) sources.push_back(source_v4(i));
    for (unsigned i = 0; i < kSourcesPerFamily; ++i) sources.push_back(source_v6(i));

    // The NIC: each source's bare frame hashed onto its queue; its QinQ frame, and the same
    // bare frame once more with the hash left off, unhashed on queue 0; and ARP, which has no
    // source to steer by, unhashed on queue 0.
    std::vector<std::vector<rte_mbuf *>> received(kWorkers);
    std::map<rte_mbuf *, unsigned> expected;  // each frame's owner
    std::array<unsigned, kWorkers> owned{};
    for (const Source &s : sources) {
        rte_mbuf *hashed = mbuf(s.plain, true);
        rte_mbuf *tagged = mbuf(s.qinq, false);
        rte_mbuf *bare = mbuf(s.plain, false);
        received[s.owner].push_back(hashed);
        received[0].push_back(tagged);
        received[0].push_back(bare);
        for (rte_mbuf *m : {hashed, tagged, bare}) expected[m] = s.owner;
        ++owned[s.owner];
    }
    const test::Frame arp = test::PacketBuilder().eth(0x0806).payload(28).build();
    for (unsigned i = 0; i < kArpFrames; ++i) {
        rte_mbuf *m = mbuf(arp, false);
        received[0].push_back(m);
        expected[m] = 0;
    }
    for (unsigned w = 0; w < kWorkers; ++w) ASSERT_GT(owned[w], 0u) << "worker " << w;

    std::vector<std::vector<rte_mbuf *>> out;
    run(received, &out);

    size_t decided = 0;
    for (unsigned w = 0; w < kWorkers; ++w) {
        // Each source's three frames on its owner, ARP where it arrived.
        EXPECT_EQ(out[w].size(), 3 * owned[w] + (w == 0 ? kArpFrames : 0)) << "worker " << w;
        for (rte_mbuf *m : out[w]) EXPECT_EQ(expected.at(m), w) << "a frame on worker " << w;
        decided += out[w].size();
        // Only queue 0 saw unhashed frames; it handed over those of the other owners, and
        // each took in its own sources' two.
        EXPECT_EQ(stages_[w]->unhashed(), w == 0 ? 2 * sources.size() + kArpFrames : 0u)
            << "worker " << w;
        EXPECT_EQ(stages_[w]->handed_out(), w == 0 ? 2 * (sources.size() - owned[0]) : 0u);
        EXPECT_EQ(stages_[w]->taken_in(), w == 0 ? 0u : 2 * owned[w]) << "worker " << w;
        EXPECT_EQ(stages_[w]->ring_full(), 0u);
    }
    EXPECT_EQ(decided, expected.size());
    for (auto &frames : out)
        rte_pktmbuf_free_bulk(frames.data(), static_cast<unsigned>(frames.size()));
}

// A hashed frame is the NIC's to place: the stage keeps it wherever it arrives, with no
// address read and nothing counted.
TEST_F(NicHandOver, HashedFramesStayWhereTheNicPutThem) {
    std::vector<std::vector<rte_mbuf *>> received(kWorkers);
    std::map<rte_mbuf *, unsigned> arrived;
    for (unsigned i = 0; i < 40; ++i) {
        const Source s = i % 2 == 0 ? source_v4(i) : source_v6(i);
        const unsigned queue = i % kWorkers;  // wherever: the test plays a NIC with other RSS
        rte_mbuf *m = mbuf(s.plain, true);
        received[queue].push_back(m);
        arrived[m] = queue;
    }
    std::vector<std::vector<rte_mbuf *>> out;
    run(received, &out);
    for (unsigned w = 0; w < kWorkers; ++w) {
        EXPECT_EQ(out[w].size(), 10u);
        for (rte_mbuf *m : out[w]) EXPECT_EQ(arrived.at(m), w);
        EXPECT_EQ(stages_[w]->unhashed(), 0u);
        EXPECT_EQ(stages_[w]->handed_out(), 0u);
        rte_pktmbuf_free_bulk(out[w].data(), static_cast<unsigned>(out[w].size()));
    }
}

}  // namespace
}  // namespace floodgate
