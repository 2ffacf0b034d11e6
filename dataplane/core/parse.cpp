#include "dataplane/core/parse.h"

#include <cstddef>
#include <cstring>

#include "dataplane/core/load_be.h"

namespace floodgate {

namespace {

constexpr uint8_t kIpv6HopByHop = 0;
constexpr uint8_t kIpv6Routing = 43;
constexpr uint8_t kIpv6Fragment = 44;
constexpr uint8_t kIpv6Ah = 51;
constexpr uint8_t kIpv6DestOpts = 60;

[[gnu::cold]] ParseStatus malformed(PacketInfo *out, MalformedReason why) {
    out->malformed = why;
    out->family = 0;  // set by a valid IP header whose payload then failed: not an IP packet
    return ParseStatus::malformed;
}

// L4 header of an unfragmented packet or first fragment; l4 points at it, len bytes are left
// in the IP payload. A header cut short here is malformed: no stack would accept it, and
// letting it through without ports would let a flood skip port-based rules.
// l4_offset is l4's offset from the frame start. Inlined into both families' parsers: 6
// instructions a packet fewer of the parse's 106 (callgrind, perf/results/notes.md).
[[gnu::always_inline]] inline ParseStatus parse_l4(const uint8_t *l4, uint32_t len,
                                                   const uint8_t *cap_end, uint32_t l4_offset,
                                                   PacketInfo *out) {
    // Header bytes must also have been captured (see parse_packet's captured_len).
    auto captured = [&](uint32_t n) { return n <= static_cast<uint32_t>(cap_end - l4); };
    // A frame is at most 65535 + headers long, and an IP payload at most 65535 bytes.
    out->l4_offset = static_cast<uint16_t>(l4_offset);
    out->l4_len = static_cast<uint16_t>(len);
    switch (out->l4_proto) {
        case kProtoTcp: {
            if (len < 20) return malformed(out, MalformedReason::l4_truncated);
            if (!captured(20)) return malformed(out, MalformedReason::capture_truncated);
            unsigned data_offset = (l4[kTcpDataOffsetOffset] >> 4) * 4u;
            if (data_offset < 20 || data_offset > len)
                return malformed(out, MalformedReason::l4_truncated);
            out->src_port = load_be16(l4 + kTcpSrcPortOffset);
            out->dst_port = load_be16(l4 + kTcpDstPortOffset);
            out->tcp_seq = load_be32(l4 + kTcpSeqOffset);
            out->tcp_ack = load_be32(l4 + kTcpAckOffset);
            out->tcp_flags = l4[kTcpFlagsOffset];
            out->has_l4 = true;
            return ParseStatus::ip;
        }
        case kProtoUdp:
            if (len < 8) return malformed(out, MalformedReason::l4_truncated);
            if (!captured(8)) return malformed(out, MalformedReason::capture_truncated);
            out->src_port = load_be16(l4);
            out->dst_port = load_be16(l4 + 2);
            out->has_l4 = true;
            return ParseStatus::ip;
        case kProtoIcmp:
        case kProtoIcmpv6:
            if (len < 4) return malformed(out, MalformedReason::l4_truncated);
            if (!captured(4)) return malformed(out, MalformedReason::capture_truncated);
            out->icmp_type = l4[0];
            out->has_l4 = true;
            return ParseStatus::ip;
        default:
            return ParseStatus::ip;  // GRE, ESP, SCTP, ...: judged on L3 alone
    }
}

// RFC 791 header checks. The checksum is not verified: the receiving host does that, and a
// bad checksum costs an attacker nothing extra, so it would only slow the hot path.
[[gnu::always_inline]] inline ParseStatus parse_ipv4(const uint8_t *ip, uint32_t avail,
                                                     const uint8_t *cap_end, PacketInfo *out) {
    // captured <= avail: a header short on the wire is short in the capture too.
    const auto captured = static_cast<uint32_t>(cap_end - ip);  // ip <= cap_end
    if (captured < 20)
        return malformed(
            out, avail < 20 ? MalformedReason::ipv4_truncated : MalformedReason::capture_truncated);
    uint32_t ihl_bytes = 20;
    if (ip[0] != 0x45) [[unlikely]] {  // not version 4 without options: the checks 0x45 passes
        if ((ip[0] >> 4) != 4) return malformed(out, MalformedReason::ipv4_bad_version);
        ihl_bytes = (ip[0] & 0x0fu) * 4u;
        if (ihl_bytes < 20) return malformed(out, MalformedReason::ipv4_bad_ihl);
        if (ihl_bytes > avail) return malformed(out, MalformedReason::ipv4_truncated);
        if (captured < ihl_bytes) return malformed(out, MalformedReason::capture_truncated);
    }
    uint32_t total_len = load_be16(ip + 2);
    if (total_len < ihl_bytes || total_len > avail)
        return malformed(out, MalformedReason::ipv4_bad_total_length);

    out->family = 4;
    out->l4_proto = ip[9];
    std::memcpy(out->src, ip + 12, 4);
    std::memcpy(out->dst, ip + 16, 4);

    uint16_t frag = load_be16(ip + 6);
    uint16_t frag_offset = frag & 0x1fffu;
    bool more_fragments = (frag & 0x2000u) != 0;
    out->fragment = frag_offset != 0 || more_fragments;
    if (frag_offset != 0) return ParseStatus::ip;  // only the first fragment carries L4
    return parse_l4(ip + ihl_bytes, total_len - ihl_bytes, cap_end, out->l3_offset + ihl_bytes,
                    out);
}

// RFC 8200 section 4: walk the extension headers up to kMaxIpv6ExtHeaders of them.
ParseStatus parse_ipv6(const uint8_t *ip, uint32_t avail, const uint8_t *cap_end, PacketInfo *out) {
    if (avail < 40) return malformed(out, MalformedReason::ipv6_truncated);
    if (cap_end - ip < 40) return malformed(out, MalformedReason::capture_truncated);
    if ((ip[0] >> 4) != 6) return malformed(out, MalformedReason::ipv6_bad_version);
    uint32_t payload_len = load_be16(ip + 4);
    if (40 + payload_len > avail) return malformed(out, MalformedReason::ipv6_bad_payload_length);

    out->family = 6;
    std::memcpy(out->src, ip + 8, 16);
    std::memcpy(out->dst, ip + 24, 16);

    uint8_t next = ip[6];
    const uint8_t *p = ip + 40;
    uint32_t left = payload_len;
    for (unsigned n = 0;; ++n) {
        if (next != kIpv6HopByHop && next != kIpv6Routing && next != kIpv6Fragment &&
            next != kIpv6DestOpts && next != kIpv6Ah)
            break;
        if (n == kMaxIpv6ExtHeaders)
            return malformed(out, MalformedReason::ipv6_ext_chain_too_long);
        if (left < 8) return malformed(out, MalformedReason::ipv6_ext_truncated);
        if (cap_end - p < 8) return malformed(out, MalformedReason::capture_truncated);
        uint32_t hdr_len;
        if (next == kIpv6Fragment) {
            hdr_len = 8;
            uint16_t offset_flags = load_be16(p + 2);
            out->fragment = true;
            if ((offset_flags & 0xfff8u) != 0) {  // non-first fragment: no L4 header here
                out->l4_proto = p[0];
                return ParseStatus::ip;
            }
        } else if (next == kIpv6Ah) {
            hdr_len = (p[1] + 2u) * 4u;
        } else {
            hdr_len = (p[1] + 1u) * 8u;
        }
        if (hdr_len > left) return malformed(out, MalformedReason::ipv6_ext_truncated);
        // Pointers never move past the captured bytes; the next header could not be read.
        if (cap_end - p < static_cast<ptrdiff_t>(hdr_len))
            return malformed(out, MalformedReason::capture_truncated);
        next = p[0];
        p += hdr_len;
        left -= hdr_len;
    }
    out->l4_proto = next;
    return parse_l4(p, left, cap_end, out->l3_offset + static_cast<uint32_t>(p - ip), out);
}

// parse_packet's body, inlined into it and into parse_burst's loop.
[[gnu::always_inline]] inline ParseStatus parse_one(const uint8_t *frame, uint32_t frame_len,
                                                    PacketInfo *out, uint32_t captured_len) {
    // Lengths are judged against the frame as it was on the wire; header bytes are read only
    // from what was captured.
    if (captured_len > frame_len) captured_len = frame_len;
    const uint8_t *cap_end = frame + captured_len;
    // Every byte from zero, padding included (a copy of PacketInfo{} leaves padding undefined,
    // which the packet fuzzer's byte comparison of two parses caught): nothing is left from
    // the frame before (l3_offset included, when the tags are cut short).
    std::memset(static_cast<void *>(out), 0, sizeof *out);

    if (captured_len < 14)  // captured_len <= frame_len
        return malformed(out, frame_len < 14 ? MalformedReason::eth_truncated
                                             : MalformedReason::capture_truncated);
    uint32_t off = 12;
    uint16_t ether_type = load_be16(frame + off);
    // An untagged IPv4 frame, the common one, pays one compare here.
    while (ether_type != kEtherIpv4 && is_vlan_tag(ether_type)) {
        if (out->vlan_tags == kMaxVlanTags)
            return malformed(out, MalformedReason::too_many_vlan_tags);
        if (frame_len < off + 4 + 2) return malformed(out, MalformedReason::vlan_truncated);
        if (captured_len < off + 4 + 2) return malformed(out, MalformedReason::capture_truncated);
        off += 4;
        ++out->vlan_tags;
        ether_type = load_be16(frame + off);
    }
    off += 2;
    out->l3_offset = static_cast<uint16_t>(off);

    switch (ether_type) {
        case kEtherIpv4:
            return parse_ipv4(frame + off, frame_len - off, cap_end, out);
        case kEtherIpv6:
            return parse_ipv6(frame + off, frame_len - off, cap_end, out);
        default:
            return ParseStatus::non_ip;
    }
}

}  // namespace

ParseStatus parse_packet(const uint8_t *frame, uint32_t frame_len, PacketInfo *out,
                         uint32_t captured_len) {
    return parse_one(frame, frame_len, out, captured_len);
}

void parse_burst(const uint8_t *const *frames, const uint32_t *frame_lens,
                 const uint32_t *captured_lens, uint16_t n, PacketInfo *out, ParseStatus *status) {
    for (uint16_t i = 0; i < n; ++i)
        status[i] = parse_one(frames[i], frame_lens[i], &out[i], captured_lens[i]);
}

}  // namespace floodgate
