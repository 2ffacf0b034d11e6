// syn_proxy: a SYN answered with the SYN-ACK a server would send, so that the client's own TCP
// completes its handshake with floodgate at once, whatever its stack (proxy_cookie.h says how
// its ISN carries what the server's SYN will need).
//
// <SEQ=cookie><ACK=SEG.SEQ+1><CTL=SYN,ACK>, window plan.window (a SYN-ACK's window is never
// scaled, RFC 7323 2.2), and the options the client offered, each answered as a server would:
//   MSS              plan.mss (what floodgate announces for the server behind it)
//   SACK-permitted   NOP, NOP, SACK-permitted (RFC 2018)
//   window scale     NOP, plan.wscale (RFC 7323: only if the SYN carried one)
// Timestamps are not offered (the client's SYN's are not echoed): the server's clock is not
// known yet, and every later segment would need its timestamps translated. What is lost is
// RFC 7323's PAWS and RTT measurement on proxied connections.
//
// The answer is never longer than the SYN: each option is answered in 4 bytes only if the
// client's SYN carried it, where it took at least 2 (SACK-permitted), 3 (window scale) or 4
// (MSS), in a header padded to 4-byte words; the answer's IP header has no options either.
#include "dataplane/answer/answer_kinds.h"
#include "dataplane/core/tcp_options.h"

namespace floodgate::answer {

NoAnswer plan_syn_proxy(const uint8_t *frame, uint32_t len, const PacketInfo &info,
                        AnswerPlan *plan) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return NoAnswer::wrong_protocol;
    if ((info.tcp_flags & kTcpRst) != 0) return NoAnswer::answers_rst;
    if ((info.tcp_flags & (kTcpSyn | kTcpAck)) != kTcpSyn) return NoAnswer::wrong_protocol;
    SynOptions syn;
    if (!read_syn_options(frame + info.l4_offset, info.l4_len, &syn))
        return NoAnswer::bad_tcp_options;
    plan->client = proxied_options(syn, info.family);
    plan->offered = static_cast<uint8_t>((syn.mss != 0 ? kOfferedMss : 0) |
                                         (syn.sack_permitted ? kOfferedSack : 0) |
                                         (syn.wscale != kNoWindowScale ? kOfferedWscale : 0));
    const uint32_t tcp_bytes = kTcpHeaderBytes + syn_options_bytes(plan->offered);
    if (answer_l4_offset(info) + tcp_bytes > len) return NoAnswer::too_short;  // never, see above
    plan->answer_len = answer_frame_len(info, tcp_bytes, len);
    return NoAnswer::none;
}

bool build_syn_proxy(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t) {
    const uint32_t tcp_at = answer_l4_offset(info);
    const uint32_t tcp_bytes = kTcpHeaderBytes + syn_options_bytes(plan.offered);
    if (tcp_at + tcp_bytes > plan.answer_len) return false;
    uint8_t *tcp = frame + tcp_at;
    write_tcp_header(tcp, info.dst_port, info.src_port, plan.cookie, info.tcp_seq + 1,
                     kTcpSyn | kTcpAck);
    tcp[kTcpDataOffsetOffset] = static_cast<uint8_t>(tcp_bytes / 4 << 4);
    store_be16(tcp + kTcpWindowOffset, plan.window);
    write_syn_options(tcp + kTcpHeaderBytes, plan.offered, plan.mss, plan.wscale);
    finish_answer(frame, info, kProtoTcp, tcp_bytes, plan.answer_len, plan.offload_checksums);
    return true;
}

}  // namespace floodgate::answer
