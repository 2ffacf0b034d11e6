// icmp_unreachable: any IP packet answered with "communication administratively prohibited":
// ICMPv4 type 3 code 13 (RFC 1812 5.2.7.1) or ICMPv6 type 1 code 1 (RFC 4443 3.1), so that
// the sender's stack reports a refusal at once instead of retrying.
//
// The message quotes the original datagram from its IP header on (options and extension
// headers included), as much as fits without making the answer's frame longer than the
// original's, and no more than the datagram its IP lengths give (not the Ethernet padding),
// than 576 bytes of IPv4 answer (RFC 1812 4.3.2.3) or 1280 of IPv6 (RFC 4443 2.4 (c)). The
// sender needs the IP header and the first 8 bytes after it to find the socket (RFC 792,
// RFC 1122 3.2.2); when those do not fit, too_short. A datagram shorter than that is quoted
// whole.
//
// Never for an ICMP error (RFC 1122 3.2.2: types 3, 4, 5, 11, 12; RFC 4443 2.4 (e.1): ICMPv6
// types below 128) nor for an ICMPv6 redirect (RFC 4443 2.4 (e.2): type 137).
#include <cstring>

#include "dataplane/answer/answer_kinds.h"

namespace floodgate::answer {

namespace {

constexpr uint32_t kIpv4MaxAnswerBytes = 576;
constexpr uint32_t kIpv6MaxAnswerBytes = 1280;
constexpr uint32_t kQuoteAfterHeader = 8;

bool answers_icmp_error(const PacketInfo &info) {
    if (info.family == 4 && info.l4_proto == kProtoIcmp) {
        if (!info.has_l4) return true;  // the type was not read: assume the worst
        switch (info.icmp_type) {
            case 3:   // destination unreachable
            case 4:   // source quench
            case 5:   // redirect
            case 11:  // time exceeded
            case 12:  // parameter problem
                return true;
            default:
                return false;
        }
    }
    if (info.family == 6 && info.l4_proto == kProtoIcmpv6)
        return !info.has_l4 || info.icmp_type < 128 || info.icmp_type == 137;
    return false;
}

}  // namespace

NoAnswer plan_icmp_unreachable(const uint8_t *, uint32_t len, const PacketInfo &info,
                               AnswerPlan *plan) {
    if (answers_icmp_error(info)) return NoAnswer::answers_icmp_error;
    const uint32_t datagram = info.l4_offset + info.l4_len - info.l3_offset;
    const uint32_t orig_header = info.l4_offset - info.l3_offset;
    const uint32_t must =
        orig_header + kQuoteAfterHeader < datagram ? orig_header + kQuoteAfterHeader : datagram;
    const uint32_t head = ip_header_bytes(info) + kIcmpHeaderBytes;
    const uint32_t max_ip = info.family == 4 ? kIpv4MaxAnswerBytes : kIpv6MaxAnswerBytes;
    uint32_t room = len - info.l3_offset;  // for the answer's IP packet
    if (room > max_ip) room = max_ip;
    if (room < head + must) return NoAnswer::too_short;
    const uint32_t quote = room - head < datagram ? room - head : datagram;
    plan->icmp_quote = static_cast<uint16_t>(quote);
    plan->answer_len = answer_frame_len(info, kIcmpHeaderBytes + quote, len);
    return NoAnswer::none;
}

bool build_icmp_unreachable(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame,
                            uint32_t len) {
    const uint32_t quote = plan.icmp_quote;
    const uint32_t icmp_at = answer_l4_offset(info);
    if (quote == 0 || info.l3_offset + quote > len ||
        icmp_at + kIcmpHeaderBytes + quote > plan.answer_len)
        return false;
    // The quote moves later in the frame, over the original's headers: first.
    std::memmove(frame + icmp_at + kIcmpHeaderBytes, frame + info.l3_offset, quote);
    uint8_t *icmp = frame + icmp_at;
    icmp[0] = info.family == 4 ? 3 : 1;
    icmp[1] = info.family == 4 ? 13 : 1;
    std::memset(icmp + 2, 0, 6);  // checksum (finish_answer()), then 4 bytes unused
    finish_answer(frame, info, info.family == 4 ? kProtoIcmp : kProtoIcmpv6,
                  kIcmpHeaderBytes + quote, plan.answer_len);
    return true;
}

}  // namespace floodgate::answer
