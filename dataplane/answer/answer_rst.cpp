// tcp_rst: a TCP segment answered with the reset a TCP with no connection for it would send
// (RFC 9293 3.10.7.1, "If the state is CLOSED"), so that the client gives up at once:
//
//   if the segment has ACK:  <SEQ=SEG.ACK><CTL=RST>
//   otherwise:               <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>
//
// where SEG.LEN counts the payload and one each for SYN and FIN (RFC 9293 3.4). A RST is
// never answered (RFC 9293 3.10.7.1: "An incoming segment containing a RST is discarded").
// 20-byte header, window 0, no payload.
#include "dataplane/answer/answer_kinds.h"

namespace floodgate::answer {

NoAnswer plan_tcp_rst(const uint8_t *, uint32_t len, const PacketInfo &info, AnswerPlan *plan) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return NoAnswer::wrong_protocol;
    if ((info.tcp_flags & kTcpRst) != 0) return NoAnswer::answers_rst;
    if (info.l4_len < kTcpHeaderBytes) return NoAnswer::too_short;  // parse_packet: never
    plan->answer_len = answer_frame_len(info, kTcpHeaderBytes, len);
    return NoAnswer::none;
}

bool build_tcp_rst(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t len) {
    const uint32_t tcp_at = answer_l4_offset(info);
    if (tcp_at + kTcpHeaderBytes > plan.answer_len || info.l4_offset + 13u > len) return false;
    // Read before the answer's header overwrites it (it may start earlier: answer_kinds.h).
    const uint32_t data_offset = (frame[info.l4_offset + 12] >> 4) * 4u;
    const uint32_t payload = info.l4_len > data_offset ? info.l4_len - data_offset : 0;
    uint32_t seq = 0, ack = 0;
    uint8_t flags = kTcpRst;
    if ((info.tcp_flags & kTcpAck) != 0) {
        seq = info.tcp_ack;
    } else {
        const uint32_t seg_len = payload + ((info.tcp_flags & kTcpSyn) != 0 ? 1 : 0) +
                                 ((info.tcp_flags & kTcpFin) != 0 ? 1 : 0);
        ack = info.tcp_seq + seg_len;  // modulo 2^32, as sequence numbers are
        flags |= kTcpAck;
    }
    write_tcp_header(frame + tcp_at, info.dst_port, info.src_port, seq, ack, flags);
    finish_answer(frame, info, kProtoTcp, kTcpHeaderBytes, plan.answer_len, plan.offload_checksums);
    return true;
}

}  // namespace floodgate::answer
