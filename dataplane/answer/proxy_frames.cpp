#include "dataplane/answer/proxy_frames.h"

#include "dataplane/answer/answer_kinds.h"

namespace floodgate {

using answer::answer_frame_len;
using answer::answer_l4_offset;
using answer::finish_answer;
using answer::kTcpHeaderBytes;
using answer::Toward;

uint16_t syn_window(uint16_t ack_window, const ProxiedOptions &client) {
    const uint8_t shift = client.wscale == kNoWindowScale ? 0 : client.wscale;
    const uint64_t bytes = uint64_t{ack_window} << shift;
    return bytes > 0xffff ? 0xffff : static_cast<uint16_t>(bytes);
}

uint32_t build_server_syn(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t cap,
                          const ProxiedOptions &client, uint16_t window) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return 0;
    const uint8_t offered =
        static_cast<uint8_t>(kOfferedMss | (client.sack_permitted ? kOfferedSack : 0) |
                             (client.wscale != kNoWindowScale ? kOfferedWscale : 0));
    const uint32_t tcp_bytes = kTcpHeaderBytes + answer::syn_options_bytes(offered);
    const uint32_t tcp_at = answer_l4_offset(info);
    // Padded to the Ethernet minimum like an answer, but never cut to the ACK's length.
    const uint32_t out_len = answer_frame_len(info, tcp_bytes, cap);
    if (tcp_at + tcp_bytes > cap || out_len > cap || len < tcp_at) return 0;
    uint8_t *tcp = frame + tcp_at;
    answer::write_tcp_header(tcp, info.src_port, info.dst_port, info.tcp_seq - 1, 0, kTcpSyn);
    tcp[kTcpDataOffsetOffset] = static_cast<uint8_t>(tcp_bytes / 4 << 4);
    answer::store_be16(tcp + kTcpWindowOffset, window);
    answer::write_syn_options(tcp + kTcpHeaderBytes, offered, client.mss,
                              client.wscale == kNoWindowScale ? 0 : client.wscale);
    finish_answer(frame, info, kProtoTcp, tcp_bytes, out_len, false, Toward::destination);
    return out_len;
}

uint32_t build_server_ack(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t client_isn,
                          uint16_t window) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return 0;
    const uint32_t tcp_at = answer_l4_offset(info);
    const uint32_t out_len = answer_frame_len(info, kTcpHeaderBytes, len);
    if (tcp_at + kTcpHeaderBytes > len) return 0;
    uint8_t *tcp = frame + tcp_at;
    answer::write_tcp_header(tcp, info.dst_port, info.src_port, client_isn + 1, info.tcp_seq + 1,
                             kTcpAck);
    answer::store_be16(tcp + kTcpWindowOffset, window);
    finish_answer(frame, info, kProtoTcp, kTcpHeaderBytes, out_len);
    return out_len;
}

}  // namespace floodgate
