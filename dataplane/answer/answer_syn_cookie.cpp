// syn_cookie: a SYN answered with a SYN-ACK that the client's own TCP will refuse, to learn
// whether the SYN's source is real.
//
// The SYN-ACK acknowledges plan.cookie (which the pipeline derives from the connection and a
// secret), deliberately not the client's ISN + 1. A TCP in SYN-SENT that receives an ACK it
// did not expect answers with <SEQ=SEG.ACK><CTL=RST> and drops the segment (RFC 9293
// 3.10.7.3), and retransmits its SYN about a second later. So a real client sends back a RST
// whose sequence number is the cookie, which floodgate checks before admitting the source.
// A caveat for the verifier: a live host whose address was spoofed, holding no connection,
// also answers the SYN-ACK with <SEQ=SEG.ACK><CTL=RST> (RFC 9293 3.10.7.1), so a RST carrying
// the cookie proves that a host at that address is alive, not that it sent the SYN; only the
// real client retransmits the SYN afterwards. (That host's RST is one packet for one SYN-ACK,
// no larger: no amplification either way.)
//
// The SYN-ACK's own sequence number is ~cookie. Nothing checks it: the client refuses the
// segment before it looks at SEG.SEQ. It is derived from the cookie, not random, so that the
// builder stays a pure function and the answer to a SYN retransmitted with the same cookie is
// the same bytes. Window 0 and no options: the client is never meant to reach ESTABLISHED,
// and if it did by chance (an ISN + 1 equal to the cookie), it could send nothing.
#include "dataplane/answer/answer_kinds.h"

namespace floodgate::answer {

namespace {
uint32_t syn_ack_seq(uint32_t cookie) {
    return ~cookie;
}
}  // namespace

NoAnswer plan_syn_cookie(const uint8_t *, uint32_t len, const PacketInfo &info, AnswerPlan *plan) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return NoAnswer::wrong_protocol;
    if ((info.tcp_flags & kTcpRst) != 0) return NoAnswer::answers_rst;
    if ((info.tcp_flags & (kTcpSyn | kTcpAck)) != kTcpSyn) return NoAnswer::wrong_protocol;
    if (info.l4_len < kTcpHeaderBytes) return NoAnswer::too_short;  // parse_packet: never
    plan->answer_len = answer_frame_len(info, kTcpHeaderBytes, len);
    return NoAnswer::none;
}

bool build_syn_cookie(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t) {
    const uint32_t tcp_at = answer_l4_offset(info);
    if (tcp_at + kTcpHeaderBytes > plan.answer_len) return false;
    write_tcp_header(frame + tcp_at, info.dst_port, info.src_port, syn_ack_seq(plan.cookie),
                     plan.cookie, kTcpSyn | kTcpAck);
    finish_answer(frame, info, kProtoTcp, kTcpHeaderBytes, plan.answer_len, plan.offload_checksums);
    return true;
}

}  // namespace floodgate::answer
