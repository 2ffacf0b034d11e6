// The answers' dispatcher (answer.h): the checks every kind shares, a table of the kinds'
// planners and builders (answer_<kind>.cpp), and the Ethernet and IP headers they all end with.
#include "dataplane/answer/answer.h"

#include <rte_ip.h>

#include <cstring>
#include <iterator>

#include "dataplane/answer/answer_kinds.h"

namespace floodgate {

namespace answer {

namespace {

// Where the upper layer's checksum field is: TCP 16, UDP 6, ICMP and ICMPv6 2.
uint32_t checksum_field(uint8_t proto) {
    switch (proto) {
        case kProtoTcp:
            return 16;
        case kProtoUdp:
            return 6;
        default:
            return 2;
    }
}

// The Internet checksum's one's complement sum (RFC 1071) in memory order, 32 bits at a time
// into a 64-bit accumulator: DPDK's rte_ipv4_cksum and rte_ipv4_udptcp_cksum go 16 bits at a
// time and sum the pseudo-header's addresses a second time; with this, a SYN-ACK's two
// checksums take 61 instructions instead of 144 (callgrind, bench_decision BM_SynFlood).
// Summing words of any width in memory order gives the checksum in memory order (RFC 1071
// 2(B)), stored as is.
[[gnu::always_inline]] inline uint64_t add_words(uint64_t acc, const uint8_t *p, uint32_t n) {
    for (; n >= 4; p += 4, n -= 4) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        acc += w;
    }
    if (n > 0) {  // the tail, padded with zeros after it
        uint32_t w = 0;
        std::memcpy(&w, p, n);
        acc += w;
    }
    return acc;
}

// The upper layer's words: a bare TCP header (a SYN-ACK, a RST) in straight-line code, the
// loop unrolled.
uint64_t l4_words(const uint8_t *l4, uint32_t l4_bytes) {
    return l4_bytes == kTcpHeaderBytes ? add_words(0, l4, kTcpHeaderBytes)
                                       : add_words(0, l4, l4_bytes);
}

uint16_t fold(uint64_t acc) {
    acc = (acc >> 32) + (acc & 0xffffffff);
    acc = (acc >> 32) + (acc & 0xffffffff);
    acc = (acc >> 16) + (acc & 0xffff);
    acc = (acc >> 16) + (acc & 0xffff);
    return static_cast<uint16_t>(acc);
}

// The pseudo-header's (RFC 9293 3.1, RFC 8200 8.1) sum: the addresses already summed, then
// the protocol and the upper layer's length, as 16-bit big-endian words read in memory order.
uint64_t pseudo_header(uint64_t addresses, uint8_t proto, uint32_t l4_bytes) {
    return addresses + (uint32_t{proto} << 8) + __builtin_bswap16(static_cast<uint16_t>(l4_bytes));
}

// The checksum of a TCP or UDP segment over its pseudo-header: 0 is sent as 0xffff (UDP's 0
// means no checksum, RFC 768; TCP's receiver sees the same sum either way), as DPDK does.
uint16_t transport_checksum(uint64_t sum) {
    const auto c = static_cast<uint16_t>(~fold(sum));
    return c == 0 ? 0xffff : c;
}

}  // namespace

void finish_answer(uint8_t *frame, const PacketInfo &info, uint8_t proto, uint32_t l4_bytes,
                   uint32_t answer_len, bool offload, Toward toward) {
    offload = offload && (proto == kProtoTcp || proto == kProtoUdp);
    const bool back = toward == Toward::source;
    const uint8_t *from = back ? info.dst : info.src;
    const uint8_t *to = back ? info.src : info.dst;
    uint8_t *ip = frame + info.l3_offset;
    uint8_t *l4 = ip + ip_header_bytes(info);
    uint8_t *sum_at = l4 + checksum_field(proto);
    sum_at[0] = 0;
    sum_at[1] = 0;
    // Every sum here is in memory order (DPDK's pseudo-header helpers' too): stored as is.
    uint16_t l4_sum;
    if (info.family == 4) {
        ip[0] = 0x45;  // version 4, IHL 5
        ip[1] = 0;     // DSCP, ECN
        store_be16(ip + 2, static_cast<uint16_t>(kIpv4HeaderBytes + l4_bytes));
        // ID 0 with DF: an atomic datagram, whose ID nobody reads (RFC 6864 4.1).
        store_be16(ip + 4, 0);
        store_be16(ip + 6, 0x4000);
        ip[8] = kAnswerTtl;
        ip[9] = proto;
        ip[10] = 0;
        ip[11] = 0;
        std::memcpy(ip + 12, from, 4);
        std::memcpy(ip + 16, to, 4);
        if (offload) {
            l4_sum = rte_ipv4_phdr_cksum(reinterpret_cast<const rte_ipv4_hdr *>(ip), 0);
        } else {
            const uint16_t ip_sum =
                static_cast<uint16_t>(~fold(add_words(0, ip, kIpv4HeaderBytes)));
            std::memcpy(ip + 10, &ip_sum, 2);
            // ICMPv4 has no pseudo-header (RFC 792).
            const uint64_t words = l4_words(l4, l4_bytes);
            l4_sum = proto == kProtoIcmp
                         ? static_cast<uint16_t>(~fold(words))
                         : transport_checksum(
                               pseudo_header(add_words(0, ip + 12, 8), proto, l4_bytes) + words);
        }
    } else {
        store_be32(ip, 6u << 28);  // version 6, traffic class and flow label 0
        store_be16(ip + 4, static_cast<uint16_t>(l4_bytes));
        ip[6] = proto;
        ip[7] = kAnswerTtl;
        std::memcpy(ip + 8, from, 16);
        std::memcpy(ip + 24, to, 16);
        if (offload) {
            l4_sum = rte_ipv6_phdr_cksum(reinterpret_cast<const rte_ipv6_hdr *>(ip), 0);
        } else {
            const uint64_t sum =
                pseudo_header(add_words(0, ip + 8, 32), proto, l4_bytes) + l4_words(l4, l4_bytes);
            // RFC 4443 2.3: ICMPv6 has the same pseudo-header as TCP and UDP (RFC 8200 8.1),
            // but no 0 -> 0xffff substitution, which is UDP's alone.
            l4_sum =
                proto == kProtoIcmpv6 ? static_cast<uint16_t>(~fold(sum)) : transport_checksum(sum);
        }
    }
    std::memcpy(sum_at, &l4_sum, 2);

    if (back) {
        uint8_t mac[6];
        std::memcpy(mac, frame, 6);
        std::memcpy(frame, frame + 6, 6);
        std::memcpy(frame + 6, mac, 6);
    }

    const uint32_t ip_end = answer_l4_offset(info) + l4_bytes;
    if (answer_len > ip_end) std::memset(frame + ip_end, 0, answer_len - ip_end);
}

}  // namespace answer

namespace {

struct KindOps {
    NoAnswer (*plan)(const uint8_t *frame, uint32_t len, const PacketInfo &info, AnswerPlan *plan);
    bool (*build)(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t len);
};

constexpr KindOps kKinds[] = {
#define FG_X(name) {answer::plan_##name, answer::build_##name},
    FG_ANSWER_KINDS(FG_X)
#undef FG_X
};
static_assert(std::size(kKinds) == static_cast<size_t>(AnswerKind::count));

// RFC 1122 3.2.1.3 and 3.2.2: 0.0.0.0/8 ("this network"), 127/8 (loopback), 224/4
// (multicast) and 240/4 (reserved, 255.255.255.255 among them) are no host's address.
// A subnet's directed broadcast cannot be told from a host here: the rules must keep it out.
bool ipv4_unicast(const uint8_t *a) {
    return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

// RFC 4291 2.5.2, 2.5.3, 2.7: ::, ::1 and ff00::/8.
bool ipv6_unicast(const uint8_t *a) {
    if (a[0] == 0xff) return false;
    for (unsigned i = 0; i < 15; ++i)
        if (a[i] != 0) return true;
    return a[15] > 1;
}

bool unicast(const PacketInfo &info, const uint8_t *addr) {
    return info.family == 4 ? ipv4_unicast(addr) : ipv6_unicast(addr);
}

// What every kind checks first (answer.h gives the order).
NoAnswer shared_checks(const uint8_t *frame, uint32_t len, const PacketInfo &info) {
    if (info.family != 4 && info.family != 6) return NoAnswer::wrong_protocol;
    // Never so from parse_packet on this frame; checked so that no frame is read past len.
    if (info.l3_offset < answer::kEthHeaderBytes || info.l3_offset > len)
        return NoAnswer::too_short;
    // RFC 1122 3.2.2 and RFC 4443 2.4 (e.3-e.6): no error for a packet sent to a multicast or
    // broadcast address, link-layer or IP, nor for one whose source is not a single host. The
    // same holds for every kind: an answer to a group would come from no one (and be sent to
    // a group, for a group source). Bit 0 of an Ethernet address's first byte: I/G, a group.
    if ((frame[6] & 1) != 0 || !unicast(info, info.src)) return NoAnswer::source_not_unicast;
    if ((frame[0] & 1) != 0 || !unicast(info, info.dst)) return NoAnswer::dst_not_unicast;
    // A non-first fragment has no upper-layer header (parse.h: l4_offset 0).
    if (info.l4_offset == 0) return NoAnswer::not_first_fragment;
    if (info.l4_offset < answer::answer_l4_offset(info) ||
        uint32_t{info.l4_offset} + info.l4_len > len)
        return NoAnswer::too_short;
    return NoAnswer::none;
}

}  // namespace

const char *answer_kind_name(AnswerKind k) {
    static constexpr const char *kNames[] = {
#define FG_X(name) #name,
        FG_ANSWER_KINDS(FG_X)
#undef FG_X
    };
    auto i = static_cast<unsigned>(k);
    return i < static_cast<unsigned>(AnswerKind::count) ? kNames[i] : "unknown";
}

const char *no_answer_name(NoAnswer r) {
    static constexpr const char *kNames[] = {
#define FG_X(name) #name,
        FG_NO_ANSWER_REASONS(FG_X)
#undef FG_X
    };
    auto i = static_cast<unsigned>(r);
    return i < static_cast<unsigned>(NoAnswer::count) ? kNames[i] : "unknown";
}

AnswerPlan plan_answer(AnswerKind kind, const uint8_t *frame, uint32_t len,
                       const PacketInfo &info) {
    const auto k = static_cast<unsigned>(kind);
    AnswerPlan plan;
    NoAnswer why = k < static_cast<unsigned>(AnswerKind::count) ? shared_checks(frame, len, info)
                                                                : NoAnswer::wrong_protocol;
    if (why == NoAnswer::none) why = kKinds[k].plan(frame, len, info, &plan);
    // The planners keep answers within the frame; this is the last word on it (answer.h).
    if (why == NoAnswer::none && plan.answer_len > len) why = NoAnswer::too_short;
    if (why != NoAnswer::none) {
        AnswerPlan refused;
        refused.why = why;
        return refused;
    }
    plan.kind = kind;
    return plan;
}

uint32_t build_answer(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame,
                      uint32_t len) {
    const auto k = static_cast<unsigned>(plan.kind);
    if (k >= static_cast<unsigned>(AnswerKind::count) || plan.answer_len > len) return 0;
    if ((info.family != 4 && info.family != 6) || info.l3_offset < answer::kEthHeaderBytes ||
        answer::answer_l4_offset(info) > plan.answer_len)
        return 0;
    return kKinds[k].build(plan, info, frame, len) ? plan.answer_len : 0;
}

}  // namespace floodgate
