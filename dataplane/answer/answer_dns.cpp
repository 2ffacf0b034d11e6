// dns_truncated: a DNS query over UDP answered with an empty, truncated response, which sends
// a real resolver to TCP (RFC 1035 4.2.1, RFC 7766 5), where a spoofed source cannot follow.
//
// The query must have QR 0, opcode QUERY (0) and exactly one question, whose name is walked
// label by label (RFC 1035 3.1, 4.1.2): lengths 1..63, at most 255 bytes in all with the
// root's zero, no compression pointer (a query's only name has nothing before it to point
// to), all within the UDP length. Anything else is not_a_query.
//
// The response keeps the header and the question and drops the rest (EDNS's OPT record
// among it): the same ID, QR 1, opcode 0, AA 0, TC 1, RD as in the query, RA 0, Z 0, AD 0,
// CD as in the query (RFC 4035 3.1.6: a name server copies it), RCODE 0; QDCOUNT 1 and the
// other counts 0. It is never longer than the query.
#include <cstring>

#include "dataplane/answer/answer_kinds.h"

namespace floodgate::answer {

namespace {
constexpr uint32_t kDnsHeaderBytes = 12;
constexpr uint32_t kMaxNameBytes = 255;  // RFC 1035 2.3.4, the length bytes and the zero in
constexpr uint8_t kMaxLabelBytes = 63;
constexpr uint8_t kDnsRd = 0x01;  // header byte 2: QR, opcode (4 bits), AA, TC, RD
constexpr uint8_t kDnsTc = 0x02;
constexpr uint8_t kDnsQr = 0x80;
constexpr uint8_t kDnsCd = 0x10;  // header byte 3: RA, Z, AD, CD, RCODE (4 bits)
}  // namespace

NoAnswer plan_dns_truncated(const uint8_t *frame, uint32_t len, const PacketInfo &info,
                            AnswerPlan *plan) {
    if (info.l4_proto != kProtoUdp || !info.has_l4) return NoAnswer::wrong_protocol;
    if (info.l4_len < kUdpHeaderBytes) return NoAnswer::too_short;  // parse_packet: never
    const uint8_t *udp = frame + info.l4_offset;
    // The message ends where the UDP length says. Past the IP payload it cannot be read: a
    // bad length, or a first fragment, whose UDP length is the whole datagram's.
    const uint32_t udp_len = load_be16(udp + 4);
    if (udp_len < kUdpHeaderBytes + kDnsHeaderBytes || udp_len > info.l4_len)
        return NoAnswer::not_a_query;
    const uint8_t *msg = udp + kUdpHeaderBytes;
    const uint32_t msg_len = udp_len - kUdpHeaderBytes;
    if ((msg[2] & 0xf8) != 0) return NoAnswer::not_a_query;     // QR 0, opcode 0
    if (load_be16(msg + 4) != 1) return NoAnswer::not_a_query;  // QDCOUNT

    // Each pass moves at least two bytes on, and the walk ends by 255 bytes: at most 128.
    uint32_t at = kDnsHeaderBytes;
    for (;;) {
        if (at >= msg_len) return NoAnswer::not_a_query;
        const uint8_t label = msg[at];
        if (label == 0) break;
        // 0xc0: a compression pointer; 0x40 and 0x80: extended label types (RFC 6891 5).
        if (label > kMaxLabelBytes) return NoAnswer::not_a_query;
        at += 1u + label;
        if (at - kDnsHeaderBytes + 1 > kMaxNameBytes) return NoAnswer::not_a_query;
    }
    const uint32_t keep = at + 1 + 4;  // the zero, QTYPE, QCLASS
    if (keep > msg_len) return NoAnswer::not_a_query;
    plan->dns_keep = static_cast<uint16_t>(keep);
    plan->answer_len = answer_frame_len(info, kUdpHeaderBytes + keep, len);
    return NoAnswer::none;
}

bool build_dns_truncated(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame,
                         uint32_t len) {
    const uint32_t keep = plan.dns_keep;
    const uint32_t udp_at = answer_l4_offset(info);
    if (keep < kDnsHeaderBytes || udp_at + kUdpHeaderBytes + keep > plan.answer_len ||
        info.l4_offset + kUdpHeaderBytes + keep > len)
        return false;
    uint8_t *udp = frame + udp_at;
    uint8_t *msg = udp + kUdpHeaderBytes;
    // To the answer's place first (never later in the frame than the query's: answer_kinds.h).
    std::memmove(msg, frame + info.l4_offset + kUdpHeaderBytes, keep);
    msg[2] = static_cast<uint8_t>(kDnsQr | kDnsTc | (msg[2] & kDnsRd));
    msg[3] &= kDnsCd;
    store_be16(msg + 4, 1);   // QDCOUNT
    store_be16(msg + 6, 0);   // ANCOUNT
    store_be16(msg + 8, 0);   // NSCOUNT
    store_be16(msg + 10, 0);  // ARCOUNT: the OPT record is gone
    const uint32_t udp_len = kUdpHeaderBytes + keep;
    store_be16(udp, info.dst_port);
    store_be16(udp + 2, info.src_port);
    store_be16(udp + 4, static_cast<uint16_t>(udp_len));
    store_be16(udp + 6, 0);  // computed by finish_answer(), also over IPv4 (RFC 768 allows 0)
    finish_answer(frame, info, kProtoUdp, udp_len, plan.answer_len, plan.offload_checksums);
    return true;
}

}  // namespace floodgate::answer
