// The segments syn-proxy writes toward the server (dataplane/answer/proxy_frames.h), on every Net
// of the answers' tests: the SYN over the client's ACK (same direction, the client's ISN, the
// options the cookie carried, room checked) and the ACK over the server's SYN-ACK; checksums
// verified independently (tests/answer_bytes.h).
#include <gtest/gtest.h>

#include "dataplane/answer/proxy_frames.h"
#include "tests/answer_frames.h"

namespace floodgate::answer_test {
namespace {

class ProxyFramesNet : public ::testing::TestWithParam<Net> {};

void expect_checksums(const Frame &out, uint32_t n) {
    PacketInfo back;
    ASSERT_EQ(parse_packet(out.data(), n, &back), ParseStatus::ip);
    if (back.family == 4) {
        EXPECT_EQ(ones_sum(&out[back.l3_offset], 20), 0xffff);
    }
    EXPECT_EQ(l4_sum(out, back.l3_offset, back.l4_offset, back.l4_len, back.family, kProtoTcp),
              0xffff);
}

TEST_P(ProxyFramesNet, ServerSynGoesOnWithTheClientsIsnAndOptions) {
    const Net &n = GetParam();
    Frame ack = tcp_frame(n, kAck, 0x11223345, 0xc0ffee12);
    put16(&ack, n.l4() + 14, 502);  // the client's window field, scaled by 7
    PacketInfo info;
    ASSERT_EQ(parse_packet(ack.data(), static_cast<uint32_t>(ack.size()), &info), ParseStatus::ip);
    const ProxiedOptions client{1452, 7, true};
    EXPECT_EQ(syn_window(502, client), 64256);
    EXPECT_EQ(syn_window(600, client), 0xffff);
    EXPECT_EQ(syn_window(100, client), 12800);
    EXPECT_EQ(syn_window(100, ProxiedOptions{536, kNoWindowScale, false}), 100);

    // Too little room: nothing written.
    const uint32_t ip_end = static_cast<uint32_t>(n.answer_l4()) + 32;
    Frame small = ack;
    small.resize(std::max<size_t>(small.size(), ip_end - 1));
    const Frame small_before = small;
    EXPECT_EQ(build_server_syn(info, small.data(), static_cast<uint32_t>(ack.size()), ip_end - 1,
                               client, 12800),
              0u);
    EXPECT_EQ(small, small_before);

    Frame buf = ack;
    buf.resize(ack.size() + 64, 0xee);
    const uint32_t len = build_server_syn(info, buf.data(), static_cast<uint32_t>(ack.size()),
                                          static_cast<uint32_t>(buf.size()), client, 12800);
    ASSERT_EQ(len, std::max(ip_end, 60u));
    const Frame out(buf.begin(), buf.begin() + len);
    EXPECT_EQ(slice(out, 0, n.l3()), slice(ack, 0, n.l3())) << "Ethernet and tags as they were";
    PacketInfo syn;
    ASSERT_EQ(parse_packet(out.data(), len, &syn), ParseStatus::ip);
    EXPECT_EQ(std::memcmp(syn.src, info.src, 16), 0) << "from the client";
    EXPECT_EQ(std::memcmp(syn.dst, info.dst, 16), 0) << "to the server";
    EXPECT_EQ(syn.src_port, 40000);
    EXPECT_EQ(syn.dst_port, 443);
    EXPECT_EQ(syn.tcp_flags, kSyn);
    EXPECT_EQ(syn.tcp_seq, 0x11223344u) << "the client's ISN";
    EXPECT_EQ(syn.tcp_ack, 0u);
    const size_t t = n.answer_l4();
    EXPECT_EQ(out[t + 12], 8 << 4);
    EXPECT_EQ(be16(out, t + 14), 12800);
    EXPECT_EQ(slice(out, t + 20, t + 32), (Frame{2, 4, 0x05, 0xac, 1, 1, 4, 2, 1, 3, 3, 7}));
    expect_checksums(out, len);

    // A client without SACK or window scaling: MSS alone.
    Frame buf2 = ack;
    buf2.resize(ack.size() + 64);
    const uint32_t len2 = build_server_syn(info, buf2.data(), static_cast<uint32_t>(ack.size()),
                                           static_cast<uint32_t>(buf2.size()),
                                           ProxiedOptions{536, kNoWindowScale, false}, 100);
    ASSERT_GT(len2, 0u);
    EXPECT_EQ(buf2[t + 12], 6 << 4);
    EXPECT_EQ(slice(Frame(buf2.begin(), buf2.begin() + len2), t + 20, t + 24),
              (Frame{2, 4, 0x02, 0x18}));
    expect_checksums(Frame(buf2.begin(), buf2.begin() + len2), len2);
}

TEST_P(ProxyFramesNet, ServerAckAnswersTheServersSynAck) {
    const Net &n = GetParam();
    const char *client = n.family == 4 ? kClient4 : kClient6;
    const char *server = n.family == 4 ? kServer4 : kServer6;
    // The server's SYN-ACK with options (MSS, SACK-permitted, timestamps, window scale).
    Frame synack = with_seq_ack(build(n, base(n, server, client)
                                             .tcp(443, 40000, kSyn | kAck)
                                             .tcp_data_offset(10)
                                             .payload(kLinuxSynOptions)),
                                n, 0x55667788, 0x11223345);
    PacketInfo info;
    ASSERT_EQ(parse_packet(synack.data(), static_cast<uint32_t>(synack.size()), &info),
              ParseStatus::ip);
    Frame buf = synack;
    const uint32_t len =
        build_server_ack(info, buf.data(), static_cast<uint32_t>(buf.size()), 0x11223344, 502);
    ASSERT_GT(len, 0u);
    ASSERT_LE(len, synack.size());
    const Frame out(buf.begin(), buf.begin() + len);
    PacketInfo a;
    ASSERT_EQ(parse_packet(out.data(), len, &a), ParseStatus::ip);
    EXPECT_EQ(std::memcmp(a.src, info.dst, 16), 0) << "from the client";
    EXPECT_EQ(std::memcmp(a.dst, info.src, 16), 0) << "to the server";
    EXPECT_EQ(a.src_port, 40000);
    EXPECT_EQ(a.dst_port, 443);
    EXPECT_EQ(a.tcp_flags, kAck);
    EXPECT_EQ(a.tcp_seq, 0x11223345u);
    EXPECT_EQ(a.tcp_ack, 0x55667789u) << "the server's ISN + 1";
    EXPECT_EQ(be16(out, n.answer_l4() + 14), 502);
    EXPECT_EQ(slice(out, 0, 6), slice(synack, 6, 12)) << "back to the server's MAC";
    expect_checksums(out, len);
}

INSTANTIATE_TEST_SUITE_P(ProxyNets, ProxyFramesNet, ::testing::ValuesIn(kNets),
                         [](const ::testing::TestParamInfo<Net> &info) {
                             return std::string(info.param.name);
                         });

}  // namespace
}  // namespace floodgate::answer_test
