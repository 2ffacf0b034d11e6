// Packet parsing: Ethernet, up to four 802.1Q/802.1ad tags, IPv4 or IPv6 (with a bounded walk
// of the extension-header chain), then TCP/UDP ports and flags or the ICMP type.
// A plain function over bytes so it can be unit-tested and fuzzed without DPDK.
#pragma once

#include <cstdint>

#include "dataplane/api/malformed.h"
#include "dataplane/api/protocols.h"

namespace floodgate {

enum class ParseStatus : uint8_t {
    ip,         // an IPv4 or IPv6 packet whose L3 (and L4, when present) headers are valid
    non_ip,     // ARP, LLDP, ...: not ours to judge
    malformed,  // bad or truncated L3/L4 header: dropped and counted
};

inline constexpr unsigned kMaxVlanTags = 4;

// EtherTypes the parser (and steering's address reader, steering.h) knows.
inline constexpr uint16_t kEtherIpv4 = 0x0800;
inline constexpr uint16_t kEtherIpv6 = 0x86dd;
inline constexpr uint16_t kEtherVlan = 0x8100;     // 802.1Q
inline constexpr uint16_t kEtherQinq = 0x88a8;     // 802.1ad service tag
inline constexpr uint16_t kEtherQinqOld = 0x9100;  // pre-standard QinQ, still common
inline bool is_vlan_tag(uint16_t ether_type) {
    return ether_type == kEtherVlan || ether_type == kEtherQinq || ether_type == kEtherQinqOld;
}
inline constexpr unsigned kMaxIpv6ExtHeaders = 8;

struct PacketInfo {
    uint8_t family = 0;     // 4 or 6 when status is ip, else 0
    uint8_t l4_proto = 0;   // upper-layer protocol (after the IPv6 extension chain)
    bool has_l4 = false;    // false for non-first fragments and protocols we do not parse
    bool fragment = false;  // any fragment (first or not)
    uint8_t tcp_flags = 0;
    uint8_t icmp_type = 0;
    uint16_t src_port = 0;  // host order
    uint16_t dst_port = 0;
    uint16_t l3_offset = 0;  // bytes from the frame start to the IP header; 0 if never reached
    // Where the upper-layer header starts and how many bytes of it and its payload the IP
    // lengths give (also for protocols the parser does not read); both 0 for a non-first
    // fragment, which has none.
    uint16_t l4_offset = 0;
    uint16_t l4_len = 0;
    uint32_t tcp_seq = 0;  // TCP sequence and acknowledgment numbers, host order
    uint32_t tcp_ack = 0;
    uint8_t vlan_tags = 0;
    MalformedReason malformed = MalformedReason::none;
    alignas(8) uint8_t src[16];  // network order; IPv4 in the first 4 bytes, the rest zero
    alignas(8) uint8_t dst[16];
};

// Parses a frame of frame_len bytes on the wire. IP lengths are taken from the IPv4 total
// length / IPv6 payload length; trailing bytes after them (Ethernet padding) are ignored.
// captured_len (default: all of it) is how many bytes are present at frame: a capture cut by
// its snap length is judged by its wire length, but a header beyond the captured bytes cannot
// be read and is counted as capture_truncated.
ParseStatus parse_packet(const uint8_t *frame, uint32_t frame_len, PacketInfo *out,
                         uint32_t captured_len = UINT32_MAX);

// parse_packet over a burst, in one loop (no call a packet: the pipeline's first stage).
void parse_burst(const uint8_t *const *frames, const uint32_t *frame_lens,
                 const uint32_t *captured_lens, uint16_t n, PacketInfo *out, ParseStatus *status);

}  // namespace floodgate
