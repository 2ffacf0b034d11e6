// A fluent Ethernet frame builder for tests, benchmarks and the scenario generator:
//
//   Frame f = PacketBuilder().vlan(100).ipv4("198.18.0.1", "198.18.1.1").udp(1234, 53)
//                 .payload(20).build();
//
// Lengths (IPv4 IHL and total length, IPv6 payload length, UDP length, TCP data offset) and
// checksums (IPv4 header, TCP/UDP/ICMP/ICMPv6) are computed by default; the override methods
// write a chosen value instead so that malformed packets can be built on purpose.
// Plain C++, no DPDK: every method only records what to build, build() lays the bytes out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace floodgate::test {

using Frame = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;
using Ipv4Addr = std::array<uint8_t, 4>;
using Ipv6Addr = std::array<uint8_t, 16>;

// Text to bytes (network order); throw std::invalid_argument on a bad address.
Ipv4Addr ipv4_addr(const std::string &text);
Ipv6Addr ipv6_addr(const std::string &text);

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeLldp = 0x88cc;
inline constexpr uint16_t kTpidVlan = 0x8100;  // 802.1Q customer tag
inline constexpr uint16_t kTpidQinq = 0x88a8;  // 802.1ad service (outer) tag

inline constexpr uint8_t kProtoHopByHop = 0;
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoRouting = 43;
inline constexpr uint8_t kProtoFragment = 44;
inline constexpr uint8_t kProtoGre = 47;
inline constexpr uint8_t kProtoEsp = 50;
inline constexpr uint8_t kProtoAh = 51;
inline constexpr uint8_t kProtoIcmpv6 = 58;
inline constexpr uint8_t kProtoNoNext = 59;
inline constexpr uint8_t kProtoDestOpts = 60;

class PacketBuilder {
  public:
    // Ethernet header; always present, so calling eth() is only needed to set the type. Without
    // an explicit type it follows the IP layer (IPv4 when there is none).
    PacketBuilder &eth(std::optional<uint16_t> ethertype = std::nullopt);
    PacketBuilder &macs(const Mac &src, const Mac &dst);
    // Tags are laid out outermost first, in call order.
    PacketBuilder &vlan(uint16_t id);  // TPID 0x8100
    PacketBuilder &qinq(uint16_t id);  // TPID 0x88a8

    PacketBuilder &ipv4(const std::string &src, const std::string &dst);
    PacketBuilder &ipv4(const Ipv4Addr &src, const Ipv4Addr &dst);
    PacketBuilder &ipv4_options(std::vector<uint8_t> options);  // zero-padded to 4-byte words
    // Offset in 8-byte blocks, as carried in the header.
    PacketBuilder &ipv4_fragment(uint16_t offset_blocks, bool more_fragments);
    PacketBuilder &ipv4_ihl(uint8_t ihl_words);               // override
    PacketBuilder &ipv4_total_length(uint16_t length_bytes);  // override
    PacketBuilder &ipv4_dont_fragment();                      // sets DF (off by default)

    PacketBuilder &ipv6(const std::string &src, const std::string &dst);
    PacketBuilder &ipv6(const Ipv6Addr &src, const Ipv6Addr &dst);
    // Extension headers, chained in call order. Sizes are in bytes (multiples of 8; AH: of 4).
    PacketBuilder &hop_by_hop(size_t size_bytes = 8);
    PacketBuilder &routing(size_t size_bytes = 8);
    PacketBuilder &dest_opts(size_t size_bytes = 8);
    PacketBuilder &auth_header(size_t size_bytes = 16);
    PacketBuilder &ipv6_fragment(uint16_t offset_blocks, bool more_fragments);
    PacketBuilder &ipv6_payload_length(uint16_t length_bytes);  // override

    PacketBuilder &ttl(uint8_t ttl);             // IPv4 TTL or IPv6 hop limit
    PacketBuilder &ip_version(uint8_t version);  // override of the version nibble

    PacketBuilder &tcp(uint16_t src_port, uint16_t dst_port, uint8_t flags);
    PacketBuilder &tcp_data_offset(uint8_t words);  // override; the header stays 20 bytes
    PacketBuilder &tcp_seq(uint32_t seq);           // 0 by default
    PacketBuilder &tcp_ack(uint32_t ack);           // 0 by default (whatever the ACK flag)
    PacketBuilder &tcp_window(uint16_t window);     // 65535 by default
    PacketBuilder &udp(uint16_t src_port, uint16_t dst_port);
    PacketBuilder &icmp(uint8_t type, uint8_t code = 0);
    PacketBuilder &icmpv6(uint8_t type, uint8_t code = 0);
    // An upper-layer protocol number with no header built for it (GRE, ESP, 59, or the
    // protocol of a non-first fragment); the payload follows the IP headers directly.
    PacketBuilder &ip_proto(uint8_t proto);

    PacketBuilder &payload(size_t size_bytes);  // bytes 0, 1, 2, ...
    PacketBuilder &payload(std::vector<uint8_t> bytes);
    PacketBuilder &trailing(size_t size_bytes);  // after the IP packet, outside its lengths
    PacketBuilder &truncate(size_t frame_len);   // cut the finished frame to this length

    Frame build() const;

  private:
    enum class Ip : uint8_t { none, v4, v6 };
    enum class L4 : uint8_t { none, tcp, udp, icmp, icmpv6 };
    struct Tag {
        uint16_t tpid;
        uint16_t id;
    };
    struct Ext {
        uint8_t type;
        std::vector<uint8_t> bytes;  // byte 0 (next header) is filled in by build()
    };

    std::optional<uint16_t> ethertype_;
    Mac src_mac_{0x02, 0, 0, 0, 0, 0x01};
    Mac dst_mac_{0x02, 0, 0, 0, 0, 0x02};
    std::vector<Tag> tags_;

    Ip ip_ = Ip::none;
    std::array<uint8_t, 16> src_{};
    std::array<uint8_t, 16> dst_{};
    uint8_t ttl_ = 64;
    std::optional<uint8_t> version_;
    std::vector<uint8_t> ipv4_options_;
    uint16_t frag_offset_blocks_ = 0;
    bool more_fragments_ = false;
    bool dont_fragment_ = false;
    std::optional<uint8_t> ihl_words_;
    std::optional<uint16_t> total_length_;
    std::vector<Ext> exts_;
    std::optional<uint16_t> payload_length_;

    L4 l4_ = L4::none;
    std::optional<uint8_t> proto_;
    uint16_t src_port_ = 0;
    uint16_t dst_port_ = 0;
    uint8_t tcp_flags_ = 0;
    std::optional<uint8_t> tcp_data_offset_;
    uint32_t tcp_seq_ = 0;
    uint32_t tcp_ack_ = 0;
    uint16_t tcp_window_ = 65535;
    uint8_t icmp_type_ = 0;
    uint8_t icmp_code_ = 0;

    std::vector<uint8_t> payload_;
    size_t trailing_bytes_ = 0;
    std::optional<size_t> truncate_len_;
};

}  // namespace floodgate::test
