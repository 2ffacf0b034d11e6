// The segments of a proxied connection as the syn-proxy tests send them (tests/eal/
// test_syn_proxy.cpp, the SynProxy state machine; tests/eal/test_pipeline_syn_proxy.cpp, the
// same through the Pipeline): a frame with parse_packet's view of it, from the client (port
// 40000) to the server (443) or back, with options (a multiple of 4 bytes), a payload, a window
// and their sequence numbers; and a Linux server's SYN-ACK options.
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "dataplane/core/parse.h"
#include "tests/answer_frames.h"

namespace floodgate::answer_test {

// The connections' clock and sequence numbers: the client's wraps during the connection.
inline constexpr uint64_t kProxySecond = 1'000'000'000;
inline constexpr uint64_t kT0 = 100 * kProxySecond;
inline constexpr uint32_t kClientIsn = 0xfffffff0;
inline constexpr uint32_t kServerIsn = 0x7000'0000;

struct Seg {
    Frame frame;
    PacketInfo info;
    uint8_t *tcp() { return frame.data() + info.l4_offset; }
    uint32_t tcp_len() const { return info.l4_len; }
    bool checksum_ok() const {
        return l4_sum(frame, info.l3_offset, info.l4_offset, info.l4_len, info.family, kProtoTcp) ==
               0xffff;
    }
};

inline Seg parsed(Frame f) {
    Seg s{std::move(f), {}};
    EXPECT_EQ(parse_packet(s.frame.data(), static_cast<uint32_t>(s.frame.size()), &s.info),
              ParseStatus::ip);
    return s;
}

// client: the client's address (n's kClient4 or kClient6 when null), and its port.
inline Seg from_client_seg(const Net &n, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t window,
                           std::vector<uint8_t> options = {}, size_t payload = 0,
                           uint16_t port = 40000, const char *client = nullptr) {
    const auto words = static_cast<uint8_t>(5 + options.size() / 4);
    for (size_t i = 0; i < payload; ++i) options.push_back(static_cast<uint8_t>('a' + i % 26));
    Frame f =
        build(n, base(n, client).tcp(port, 443, flags).tcp_data_offset(words).payload(options));
    put16(&f, n.l4() + 14, window);
    return parsed(with_seq_ack(f, n, seq, ack));
}
inline Seg from_server_seg(const Net &n, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t window,
                           std::vector<uint8_t> options = {}, size_t payload = 0,
                           uint16_t port = 40000) {
    const char *client = n.family == 4 ? kClient4 : kClient6;
    const char *server = n.family == 4 ? kServer4 : kServer6;
    const auto words = static_cast<uint8_t>(5 + options.size() / 4);
    for (size_t i = 0; i < payload; ++i) options.push_back(static_cast<uint8_t>('A' + i % 26));
    Frame f = build(
        n, base(n, server, client).tcp(443, port, flags).tcp_data_offset(words).payload(options));
    put16(&f, n.l4() + 14, window);
    return parsed(with_seq_ack(f, n, seq, ack));
}

// Linux's server SYN-ACK options: MSS 1460, SACK-permitted, timestamps, NOP, window scale 9.
inline const std::vector<uint8_t> kServerOptions = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                                    0, 1, 0,    0,    0, 0, 1, 3,  3, 9};

}  // namespace floodgate::answer_test
