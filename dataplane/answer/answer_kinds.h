// What the answer kinds (answer.h) share: the planner and builder each kind's file defines, for
// answer.cpp's table, and the steps every builder ends with. Internal to the answers.
//
// A planner runs after the shared checks (answer.cpp), so it may rely on: family 4 or 6,
// 14 <= l3_offset, l3_offset + the fresh IP header <= l4_offset, l4_offset + l4_len <= len (an
// L4 header is there: not a non-first fragment), and unicast addresses at both ends. It
// decides, sets answer_len (and its kind's fields) and reads only frame[0, len).
//
// A builder writes its upper-layer header and payload at answer_l4_offset() with a zero
// checksum field, reading everything it needs from the original headers first (a fresh IP
// header is shorter than one with IPv4 options or IPv6 extension headers, so the answer's L4
// header may overlap them), then calls finish_answer(). It checks again that what it will
// touch is within len (false: nothing is built), so a plan given with the wrong frame cannot
// make it write out of bounds.
#pragma once

#include <cstdint>

#include "dataplane/answer/answer.h"
#include "dataplane/api/protocols.h"
#include "dataplane/core/load_be.h"
#include "dataplane/core/parse.h"

namespace floodgate::answer {

inline constexpr uint8_t kAnswerTtl = 64;  // IPv4 TTL and IPv6 hop limit of every answer
inline constexpr uint32_t kEthHeaderBytes = 14;
inline constexpr uint32_t kIpv4HeaderBytes = 20;  // IHL 5: answers carry no options
inline constexpr uint32_t kIpv6HeaderBytes = 40;  // and no extension headers
inline constexpr uint32_t kTcpHeaderBytes = 20;
inline constexpr uint32_t kUdpHeaderBytes = 8;
inline constexpr uint32_t kIcmpHeaderBytes = 8;  // type, code, checksum, 4 bytes unused
// The shortest Ethernet frame without its FCS (IEEE 802.3 clause 4: 64 bytes with it).
inline constexpr uint32_t kMinFrameBytes = 60;

inline void store_be16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

// The answer's fresh IP header, and where its upper-layer header starts.
inline uint32_t ip_header_bytes(const PacketInfo &info) {
    return info.family == 4 ? kIpv4HeaderBytes : kIpv6HeaderBytes;
}
inline uint32_t answer_l4_offset(const PacketInfo &info) {
    return info.l3_offset + ip_header_bytes(info);
}

// The frame length of an answer whose upper layer is l4_bytes long: padded to the Ethernet
// minimum, but never past the original frame (len), which is at least as long on any kind's
// path (the planners check that the IP packet itself fits).
inline uint32_t answer_frame_len(const PacketInfo &info, uint32_t l4_bytes, uint32_t len) {
    const uint32_t ip_end = answer_l4_offset(info) + l4_bytes;
    const uint32_t min_len = len < kMinFrameBytes ? len : kMinFrameBytes;
    return ip_end > min_len ? ip_end : min_len;
}

// A 20-byte TCP header (data offset 5, no options), window 0, checksum and urgent pointer 0:
// what the SYN-ACK and the RST share.
inline void write_tcp_header(uint8_t *tcp, uint16_t src_port, uint16_t dst_port, uint32_t seq,
                             uint32_t ack, uint8_t flags) {
    store_be16(tcp + kTcpSrcPortOffset, src_port);
    store_be16(tcp + kTcpDstPortOffset, dst_port);
    store_be32(tcp + kTcpSeqOffset, seq);
    store_be32(tcp + kTcpAckOffset, ack);
    tcp[kTcpDataOffsetOffset] = 5 << 4;
    tcp[kTcpFlagsOffset] = flags;
    store_be16(tcp + kTcpWindowOffset, 0);
    store_be16(tcp + kTcpChecksumOffset, 0);  // computed by finish_answer()
    store_be16(tcp + kTcpUrgentOffset, 0);
}

// The options of a SYN or SYN-ACK that syn-proxy writes, each in one 4-byte word and only if
// offered (kOffered*): MSS; NOP, NOP, SACK-permitted; NOP, window scale.
inline uint32_t syn_options_bytes(uint8_t offered) {
    return 4 * static_cast<uint32_t>(__builtin_popcount(offered));
}
inline void write_syn_options(uint8_t *o, uint8_t offered, uint16_t mss, uint8_t wscale) {
    if ((offered & kOfferedMss) != 0) {
        o[0] = kTcpOptionMss;
        o[1] = 4;
        store_be16(o + 2, mss);
        o += 4;
    }
    if ((offered & kOfferedSack) != 0) {
        o[0] = kTcpOptionNop;
        o[1] = kTcpOptionNop;
        o[2] = kTcpOptionSackPermitted;
        o[3] = 2;
        o += 4;
    }
    if ((offered & kOfferedWscale) != 0) {
        o[0] = kTcpOptionNop;
        o[1] = kTcpOptionWindowScale;
        o[2] = 3;
        o[3] = wscale;
    }
}

// Where a frame built from another goes: back to its source (an answer), or on toward its
// destination (syn-proxy's SYN to the server, written over the client's ACK).
enum class Toward : uint8_t { source, destination };

// The common tail of every builder: a fresh IP header at info.l3_offset (addresses swapped,
// protocol proto, l4_bytes of upper layer after it), the upper layer's checksum, the Ethernet
// addresses swapped (VLAN tags and the ethertype stay as they were) and zeros from the end of
// the IP packet to answer_len. With offload (TCP and UDP only), the IPv4 header checksum is
// left 0 and the L4 checksum field holds the pseudo-header sum, for the port to finish.
// Toward::destination keeps the addresses, IP and Ethernet, as they were.
void finish_answer(uint8_t *frame, const PacketInfo &info, uint8_t proto, uint32_t l4_bytes,
                   uint32_t answer_len, bool offload = false, Toward toward = Toward::source);

// One planner and one builder per kind, in answer_<kind>.cpp.
#define FG_X(name)                                                                   \
    NoAnswer plan_##name(const uint8_t *frame, uint32_t len, const PacketInfo &info, \
                         AnswerPlan *plan);                                          \
    bool build_##name(const AnswerPlan &plan, const PacketInfo &info, uint8_t *frame, uint32_t len);
FG_ANSWER_KINDS(FG_X)
#undef FG_X

}  // namespace floodgate::answer
