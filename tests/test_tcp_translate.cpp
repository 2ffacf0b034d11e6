// syn-proxy's segment rewrite (dataplane/core/tcp_translate.h): sequence, acknowledgment and
// SACK edges moved by exactly the deltas, windows rescaled, and a checksum that still verifies
// over the pseudo-header after the incremental update, checked against a full recomputation
// (tests/answer_bytes.h) on IPv4 and IPv6 segments with random numbers and payloads.
#include <gtest/gtest.h>

#include <vector>

#include "dataplane/core/tcp_translate.h"
#include "tests/answer_frames.h"

namespace floodgate::answer_test {
namespace {

struct Segment {
    Frame frame;
    size_t l4;
    const Net *net;
    uint8_t *tcp() { return frame.data() + l4; }
    uint32_t tcp_len() const { return static_cast<uint32_t>(frame.size() - l4); }
    bool checksum_ok() const {
        return l4_sum(frame, net->l3(), l4, frame.size() - l4, net->family, kProtoTcp) == 0xffff;
    }
};

// An ACK carrying options (a multiple of 4 bytes) and payload bytes, with a valid checksum.
Segment segment(const Net &n, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t window,
                const std::vector<uint8_t> &options, size_t payload) {
    std::vector<uint8_t> bytes = options;
    for (size_t i = 0; i < payload; ++i) bytes.push_back(static_cast<uint8_t>(i * 7 + 3));
    const auto words = static_cast<uint8_t>(5 + options.size() / 4);
    Frame f = build(n, base(n).tcp(40000, 443, flags).tcp_data_offset(words).payload(bytes));
    put16(&f, n.l4() + 14, window);
    return {with_seq_ack(f, n, seq, ack), n.l4(), &n};
}

std::vector<uint8_t> sack_option(const std::vector<uint32_t> &edges) {
    std::vector<uint8_t> o = {1, 1, 5, static_cast<uint8_t>(2 + 4 * edges.size())};
    for (uint32_t e : edges)
        for (int s = 24; s >= 0; s -= 8) o.push_back(static_cast<uint8_t>(e >> s));
    return o;
}

TEST(TcpTranslate, ClientToServerMovesAckAndSackEdges) {
    for (const Net &n : kNets) {
        SCOPED_TRACE(n.name);
        Segment s = segment(n, kAck | kPsh, 1000, 0x00000010, 512,
                            sack_option({0x100, 0x200, 0xfffffff0, 0x20}), 100);
        ASSERT_TRUE(s.checksum_ok());
        const SegmentRewrite r{.ack_sub = 0x30};
        ASSERT_TRUE(rewrite_segment(s.tcp(), s.tcp_len(), r));
        EXPECT_EQ(be32(s.frame, s.l4 + 4), 1000u) << "seq unchanged";
        EXPECT_EQ(be32(s.frame, s.l4 + 8), 0xffffffe0u) << "ack - delta, modulo 2^32";
        const size_t sack = s.l4 + 20 + 4;
        EXPECT_EQ(be32(s.frame, sack), 0xd0u);
        EXPECT_EQ(be32(s.frame, sack + 4), 0x1d0u);
        EXPECT_EQ(be32(s.frame, sack + 8), 0xffffffc0u);
        EXPECT_EQ(be32(s.frame, sack + 12), 0xfffffff0u);
        EXPECT_EQ(be16(s.frame, s.l4 + 14), 512) << "window unchanged: same shift";
        EXPECT_TRUE(s.checksum_ok());
    }
}

// A SACK option after one NOP: its edges sit at odd offsets, each across three checksum words
// (the fuzzer's find: tests/fuzz/corpus/fuzz_tcp/regress-sack-at-odd-offset).
TEST(TcpTranslate, SackEdgesAtOddOffsets) {
    for (const Net &n : kNets) {
        SCOPED_TRACE(n.name);
        std::vector<uint8_t> o = {1, 5, 18};
        for (uint32_t e : {0x100u, 0x200u, 0xfffffff0u, 0x20u})
            for (int s = 24; s >= 0; s -= 8) o.push_back(static_cast<uint8_t>(e >> s));
        o.push_back(0);  // End, to a multiple of 4 (20 bytes)
        Segment s = segment(n, kAck, 1000, 0x40, 512, o, 33);
        ASSERT_TRUE(s.checksum_ok());
        ASSERT_TRUE(rewrite_segment(s.tcp(), s.tcp_len(), SegmentRewrite{.ack_sub = 0x30}));
        EXPECT_EQ(be32(s.frame, s.l4 + 8), 0x10u);
        EXPECT_EQ(be32(s.frame, s.l4 + 23), 0xd0u);
        EXPECT_EQ(be32(s.frame, s.l4 + 35), 0xfffffff0u);
        EXPECT_TRUE(s.checksum_ok());
    }
}

TEST(TcpTranslate, ServerToClientMovesSeqOnly) {
    for (const Net &n : kNets) {
        SCOPED_TRACE(n.name);
        Segment s = segment(n, kAck, 0xfffffff0, 77, 1000, sack_option({5, 9}), 1448);
        const SegmentRewrite r{.seq_add = 0x20};
        ASSERT_TRUE(rewrite_segment(s.tcp(), s.tcp_len(), r));
        EXPECT_EQ(be32(s.frame, s.l4 + 4), 0x10u);
        EXPECT_EQ(be32(s.frame, s.l4 + 8), 77u);
        EXPECT_EQ(be32(s.frame, s.l4 + 24), 5u) << "the server's SACK names client bytes";
        EXPECT_TRUE(s.checksum_ok());
    }
}

TEST(TcpTranslate, RescalesWindowsAndNeverClosesAnOpenOne) {
    EXPECT_EQ(rescale_window(1000, 7, 7), 1000);
    EXPECT_EQ(rescale_window(1000, 9, 7), 4000);  // server shift 9, client told 7
    EXPECT_EQ(rescale_window(1000, 7, 9), 250);
    EXPECT_EQ(rescale_window(60000, 9, 7), 0xffff);  // capped
    EXPECT_EQ(rescale_window(100, 0, 7), 1);         // 100 bytes unscaled: not a closed window
    EXPECT_EQ(rescale_window(0, 0, 7), 0);           // a closed window stays closed
    EXPECT_EQ(rescale_window(29200, 0, 7), 228);     // a server without scaling
    EXPECT_EQ(rescale_window(600, 7, 0), 0xffff);    // a client scaling toward one without

    Segment s = segment(net4(), kAck, 1, 2, 1000, {}, 0);
    ASSERT_TRUE(
        rewrite_segment(s.tcp(), s.tcp_len(), SegmentRewrite{.shift_in = 9, .shift_out = 7}));
    EXPECT_EQ(be16(s.frame, s.l4 + 14), 4000);
    EXPECT_TRUE(s.checksum_ok());
}

TEST(TcpTranslate, LeavesAckAloneWithoutTheAckFlag) {
    Segment s = segment(net6(), kRst, 5, 1234, 0, {}, 0);
    ASSERT_TRUE(rewrite_segment(s.tcp(), s.tcp_len(), SegmentRewrite{.ack_sub = 1000}));
    EXPECT_EQ(be32(s.frame, s.l4 + 8), 1234u);
    EXPECT_TRUE(s.checksum_ok());
}

TEST(TcpTranslate, RefusesWhatItCannotReadAndChangesNothing) {
    const std::vector<std::vector<uint8_t>> bad = {
        {1, 1, 5, 11, 0, 0, 0, 0, 0, 0, 0, 0},  // SACK of 9 bytes of blocks
        {1, 1, 5, 20},                          // running past the header
        {1, 1, 1, 9},                           // a kind with no length byte
    };
    for (const auto &o : bad) {
        Segment s = segment(net4(), kAck, 1, 2, 3, o, 10);
        const Frame before = s.frame;
        EXPECT_FALSE(rewrite_segment(s.tcp(), s.tcp_len(), SegmentRewrite{.ack_sub = 1}));
        EXPECT_EQ(s.frame, before);
    }
    Segment s = segment(net4(), kAck, 1, 2, 3, {}, 0);
    EXPECT_FALSE(rewrite_segment(s.tcp(), 19, SegmentRewrite{.seq_add = 1}));
    s.frame[s.l4 + 12] = 6 << 4;  // 24-byte header in 20 bytes
    EXPECT_FALSE(rewrite_segment(s.tcp(), s.tcp_len(), SegmentRewrite{.seq_add = 1}));
}

// Random segments and deltas, the SACK option after 0 to 3 NOPs (so its edges sit at every
// alignment): each field is what the rewrite promises, and the incrementally updated checksum
// verifies over the pseudo-header as a full recomputation would.
TEST(TcpTranslate, RandomSegmentsGetExactlyTheirRewrite) {
    uint64_t x = 0x853c49e6748fea9bull;
    auto next = [&x] {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        return x;
    };
    for (int i = 0; i < 4000; ++i) {
        const Net &n = kNets[next() % std::size(kNets)];
        const unsigned nops = static_cast<unsigned>(next() % 4);
        const unsigned blocks = static_cast<unsigned>(next() % 4);
        std::vector<uint32_t> edges;
        std::vector<uint8_t> o(nops, 1);
        if (blocks > 0) {
            o.push_back(5);
            o.push_back(static_cast<uint8_t>(2 + 8 * blocks));
            for (unsigned e = 0; e < 2 * blocks; ++e) {
                edges.push_back(static_cast<uint32_t>(next()));
                for (int b = 24; b >= 0; b -= 8)
                    o.push_back(static_cast<uint8_t>(edges.back() >> b));
            }
        }
        while (o.size() % 4 != 0) o.push_back(0);
        const bool syn = next() % 8 == 0;
        const auto seq = static_cast<uint32_t>(next()), ack = static_cast<uint32_t>(next());
        const auto window = static_cast<uint16_t>(next());
        Segment s = segment(n, static_cast<uint8_t>(kAck | (syn ? kSyn : 0)), seq, ack, window, o,
                            next() % 64);
        const SegmentRewrite r{static_cast<uint32_t>(next()), static_cast<uint32_t>(next()),
                               static_cast<uint8_t>(next() % 15),
                               static_cast<uint8_t>(next() % 15)};
        ASSERT_TRUE(rewrite_segment(s.tcp(), s.tcp_len(), r));
        ASSERT_EQ(be32(s.frame, s.l4 + 4), seq + r.seq_add) << i;
        ASSERT_EQ(be32(s.frame, s.l4 + 8), ack - r.ack_sub) << i;
        for (unsigned e = 0; e < edges.size(); ++e)
            ASSERT_EQ(be32(s.frame, s.l4 + 20 + nops + 2 + 4 * e), edges[e] - r.ack_sub) << i;
        ASSERT_EQ(be16(s.frame, s.l4 + 14),
                  syn ? window : rescale_window(window, r.shift_in, r.shift_out))
            << i;
        ASSERT_TRUE(s.checksum_ok()) << i;
    }
}

}  // namespace
}  // namespace floodgate::answer_test
