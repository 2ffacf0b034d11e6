#include "tests/pkt_builder.h"

#include <arpa/inet.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace floodgate::test {

namespace {

void put16(std::vector<uint8_t> *out, uint16_t v) {
    out->push_back(static_cast<uint8_t>(v >> 8));
    out->push_back(static_cast<uint8_t>(v));
}

void set16(std::vector<uint8_t> *out, size_t at, uint16_t v) {
    (*out)[at] = static_cast<uint8_t>(v >> 8);
    (*out)[at + 1] = static_cast<uint8_t>(v);
}

// RFC 1071 one's-complement sum, continued from acc; fold and invert with checksum_finish().
uint32_t checksum_add(const uint8_t *p, size_t n, uint32_t acc) {
    for (size_t i = 0; i + 1 < n; i += 2) acc += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) acc += static_cast<uint32_t>(p[n - 1] << 8);
    return acc;
}

uint16_t checksum_finish(uint32_t acc) {
    while (acc >> 16 != 0) acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}

// An extension header of size_bytes whose options area is one PadN option (RFC 8200 4.2).
std::vector<uint8_t> padded_ext(size_t size_bytes) {
    if (size_bytes < 8 || size_bytes % 8 != 0 || size_bytes > 2048)
        throw std::invalid_argument("IPv6 extension header size must be 8..2048 in steps of 8");
    std::vector<uint8_t> b(size_bytes, 0);
    b[1] = static_cast<uint8_t>(size_bytes / 8 - 1);
    b[2] = 1;  // PadN
    b[3] = static_cast<uint8_t>(size_bytes - 4 > 255 ? 255 : size_bytes - 4);
    return b;
}

}  // namespace

Ipv4Addr ipv4_addr(const std::string &text) {
    Ipv4Addr a{};
    if (inet_pton(AF_INET, text.c_str(), a.data()) != 1)
        throw std::invalid_argument("bad IPv4 address: " + text);
    return a;
}

Ipv6Addr ipv6_addr(const std::string &text) {
    Ipv6Addr a{};
    if (inet_pton(AF_INET6, text.c_str(), a.data()) != 1)
        throw std::invalid_argument("bad IPv6 address: " + text);
    return a;
}

PacketBuilder &PacketBuilder::eth(std::optional<uint16_t> ethertype) {
    ethertype_ = ethertype;
    return *this;
}

PacketBuilder &PacketBuilder::macs(const Mac &src, const Mac &dst) {
    src_mac_ = src;
    dst_mac_ = dst;
    return *this;
}

PacketBuilder &PacketBuilder::vlan(uint16_t id) {
    tags_.push_back({kTpidVlan, id});
    return *this;
}

PacketBuilder &PacketBuilder::qinq(uint16_t id) {
    tags_.push_back({kTpidQinq, id});
    return *this;
}

PacketBuilder &PacketBuilder::ipv4(const std::string &src, const std::string &dst) {
    return ipv4(ipv4_addr(src), ipv4_addr(dst));
}

PacketBuilder &PacketBuilder::ipv4(const Ipv4Addr &src, const Ipv4Addr &dst) {
    ip_ = Ip::v4;
    src_ = {};
    dst_ = {};
    std::copy(src.begin(), src.end(), src_.begin());
    std::copy(dst.begin(), dst.end(), dst_.begin());
    return *this;
}

PacketBuilder &PacketBuilder::ipv4_options(std::vector<uint8_t> options) {
    if (options.size() > 40) throw std::invalid_argument("IPv4 options are at most 40 bytes");
    options.resize((options.size() + 3) / 4 * 4, 0);  // 0 is End of Option List
    ipv4_options_ = std::move(options);
    return *this;
}

PacketBuilder &PacketBuilder::ipv4_fragment(uint16_t offset_blocks, bool more_fragments) {
    frag_offset_blocks_ = offset_blocks;
    more_fragments_ = more_fragments;
    return *this;
}

PacketBuilder &PacketBuilder::ipv4_ihl(uint8_t ihl_words) {
    ihl_words_ = ihl_words;
    return *this;
}

PacketBuilder &PacketBuilder::ipv4_dont_fragment() {
    dont_fragment_ = true;
    return *this;
}

PacketBuilder &PacketBuilder::ipv4_total_length(uint16_t length_bytes) {
    total_length_ = length_bytes;
    return *this;
}

PacketBuilder &PacketBuilder::ipv6(const std::string &src, const std::string &dst) {
    return ipv6(ipv6_addr(src), ipv6_addr(dst));
}

PacketBuilder &PacketBuilder::ipv6(const Ipv6Addr &src, const Ipv6Addr &dst) {
    ip_ = Ip::v6;
    src_ = src;
    dst_ = dst;
    return *this;
}

PacketBuilder &PacketBuilder::hop_by_hop(size_t size_bytes) {
    exts_.push_back({kProtoHopByHop, padded_ext(size_bytes)});
    return *this;
}

PacketBuilder &PacketBuilder::routing(size_t size_bytes) {
    // Type 0 with no segments left: RFC 5095 says to skip it and go on with the next header.
    std::vector<uint8_t> b = padded_ext(size_bytes);
    b[2] = 0;
    b[3] = 0;
    exts_.push_back({kProtoRouting, std::move(b)});
    return *this;
}

PacketBuilder &PacketBuilder::dest_opts(size_t size_bytes) {
    exts_.push_back({kProtoDestOpts, padded_ext(size_bytes)});
    return *this;
}

PacketBuilder &PacketBuilder::auth_header(size_t size_bytes) {
    // RFC 4302: the length field counts 4-byte words minus 2; 12 bytes without an ICV.
    if (size_bytes < 12 || size_bytes % 4 != 0 || size_bytes > 1028)
        throw std::invalid_argument("AH size must be 12..1028 in steps of 4");
    std::vector<uint8_t> b(size_bytes, 0);
    b[1] = static_cast<uint8_t>(size_bytes / 4 - 2);
    b[7] = 1;  // SPI 1
    exts_.push_back({kProtoAh, std::move(b)});
    return *this;
}

PacketBuilder &PacketBuilder::ipv6_fragment(uint16_t offset_blocks, bool more_fragments) {
    std::vector<uint8_t> b(8, 0);
    const uint16_t off_flags =
        static_cast<uint16_t>((offset_blocks & 0x1fff) << 3 | (more_fragments ? 1 : 0));
    set16(&b, 2, off_flags);
    b[7] = 1;  // identification 1
    exts_.push_back({kProtoFragment, std::move(b)});
    return *this;
}

PacketBuilder &PacketBuilder::ipv6_payload_length(uint16_t length_bytes) {
    payload_length_ = length_bytes;
    return *this;
}

PacketBuilder &PacketBuilder::ttl(uint8_t ttl) {
    ttl_ = ttl;
    return *this;
}

PacketBuilder &PacketBuilder::ip_version(uint8_t version) {
    version_ = version;
    return *this;
}

PacketBuilder &PacketBuilder::tcp(uint16_t src_port, uint16_t dst_port, uint8_t flags) {
    l4_ = L4::tcp;
    proto_.reset();
    src_port_ = src_port;
    dst_port_ = dst_port;
    tcp_flags_ = flags;
    return *this;
}

PacketBuilder &PacketBuilder::tcp_data_offset(uint8_t words) {
    tcp_data_offset_ = words;
    return *this;
}

PacketBuilder &PacketBuilder::tcp_seq(uint32_t seq) {
    tcp_seq_ = seq;
    return *this;
}

PacketBuilder &PacketBuilder::tcp_ack(uint32_t ack) {
    tcp_ack_ = ack;
    return *this;
}

PacketBuilder &PacketBuilder::tcp_window(uint16_t window) {
    tcp_window_ = window;
    return *this;
}

PacketBuilder &PacketBuilder::udp(uint16_t src_port, uint16_t dst_port) {
    l4_ = L4::udp;
    proto_.reset();
    src_port_ = src_port;
    dst_port_ = dst_port;
    return *this;
}

PacketBuilder &PacketBuilder::icmp(uint8_t type, uint8_t code) {
    l4_ = L4::icmp;
    proto_.reset();
    icmp_type_ = type;
    icmp_code_ = code;
    return *this;
}

PacketBuilder &PacketBuilder::icmpv6(uint8_t type, uint8_t code) {
    l4_ = L4::icmpv6;
    proto_.reset();
    icmp_type_ = type;
    icmp_code_ = code;
    return *this;
}

PacketBuilder &PacketBuilder::ip_proto(uint8_t proto) {
    l4_ = L4::none;
    proto_ = proto;
    return *this;
}

PacketBuilder &PacketBuilder::payload(size_t size_bytes) {
    payload_.resize(size_bytes);
    for (size_t i = 0; i < size_bytes; ++i) payload_[i] = static_cast<uint8_t>(i);
    return *this;
}

PacketBuilder &PacketBuilder::payload(std::vector<uint8_t> bytes) {
    payload_ = std::move(bytes);
    return *this;
}

PacketBuilder &PacketBuilder::trailing(size_t size_bytes) {
    trailing_bytes_ = size_bytes;
    return *this;
}

PacketBuilder &PacketBuilder::truncate(size_t frame_len) {
    truncate_len_ = frame_len;
    return *this;
}

Frame PacketBuilder::build() const {
    // The upper-layer segment first: IP lengths and pseudo-header checksums need its size.
    std::vector<uint8_t> seg;
    size_t checksum_at = 0;  // offset of the L4 checksum field; 0 means none
    uint8_t upper = ip_ == Ip::v6 ? kProtoNoNext : 255;  // 255: reserved, no header follows
    switch (l4_) {
        case L4::tcp:
            upper = kProtoTcp;
            put16(&seg, src_port_);
            put16(&seg, dst_port_);
            put16(&seg, static_cast<uint16_t>(tcp_seq_ >> 16));  // sequence number
            put16(&seg, static_cast<uint16_t>(tcp_seq_));
            put16(&seg, static_cast<uint16_t>(tcp_ack_ >> 16));  // acknowledgement number
            put16(&seg, static_cast<uint16_t>(tcp_ack_));
            seg.push_back(static_cast<uint8_t>(tcp_data_offset_.value_or(5) << 4));
            seg.push_back(tcp_flags_);
            put16(&seg, tcp_window_);
            put16(&seg, 0);  // checksum
            put16(&seg, 0);  // urgent pointer
            checksum_at = 16;
            break;
        case L4::udp:
            upper = kProtoUdp;
            put16(&seg, src_port_);
            put16(&seg, dst_port_);
            put16(&seg, static_cast<uint16_t>(8 + payload_.size()));
            put16(&seg, 0);
            checksum_at = 6;
            break;
        case L4::icmp:
        case L4::icmpv6:
            upper = l4_ == L4::icmp ? kProtoIcmp : kProtoIcmpv6;
            seg = {icmp_type_, icmp_code_, 0, 0, 0, 0, 0, 0};  // checksum, then rest of header
            checksum_at = 2;
            break;
        case L4::none:
            if (proto_) upper = *proto_;
            break;
    }
    seg.insert(seg.end(), payload_.begin(), payload_.end());

    if (checksum_at != 0 && ip_ != Ip::none) {
        uint32_t acc = 0;
        if (l4_ != L4::icmp) {  // ICMPv4 has no pseudo-header
            const size_t addr_len = ip_ == Ip::v4 ? 4 : 16;
            acc = checksum_add(src_.data(), addr_len, acc);
            acc = checksum_add(dst_.data(), addr_len, acc);
            acc += upper;
            acc += static_cast<uint32_t>(seg.size() & 0xffff) +
                   static_cast<uint32_t>(seg.size() >> 16);
        }
        uint16_t sum = checksum_finish(checksum_add(seg.data(), seg.size(), acc));
        if (sum == 0 && l4_ == L4::udp) sum = 0xffff;  // 0 means "no checksum" in UDP
        set16(&seg, checksum_at, sum);
    }

    Frame f;
    f.reserve(14 + 4 * tags_.size() + 60 + 40 * exts_.size() + seg.size() + trailing_bytes_);
    f.insert(f.end(), dst_mac_.begin(), dst_mac_.end());
    f.insert(f.end(), src_mac_.begin(), src_mac_.end());
    for (const Tag &t : tags_) {
        put16(&f, t.tpid);
        put16(&f, t.id & 0x0fff);  // PCP 0, DEI 0
    }
    put16(&f, ethertype_.value_or(ip_ == Ip::v6 ? kEtherTypeIpv6 : kEtherTypeIpv4));

    if (ip_ == Ip::v4) {
        const size_t ip_at = f.size();
        const size_t header_bytes = 20 + ipv4_options_.size();
        const uint8_t ihl = ihl_words_.value_or(static_cast<uint8_t>(header_bytes / 4));
        f.push_back(static_cast<uint8_t>(version_.value_or(4) << 4 | (ihl & 0x0f)));
        f.push_back(0);  // DSCP/ECN
        put16(&f, total_length_.value_or(static_cast<uint16_t>(header_bytes + seg.size())));
        put16(&f, 0);  // identification
        put16(&f,
              static_cast<uint16_t>((dont_fragment_ ? 0x4000 : 0) | (more_fragments_ ? 0x2000 : 0) |
                                    (frag_offset_blocks_ & 0x1fff)));
        f.push_back(ttl_);
        f.push_back(upper);
        put16(&f, 0);  // header checksum, filled below
        f.insert(f.end(), src_.begin(), src_.begin() + 4);
        f.insert(f.end(), dst_.begin(), dst_.begin() + 4);
        f.insert(f.end(), ipv4_options_.begin(), ipv4_options_.end());
        set16(&f, ip_at + 10, checksum_finish(checksum_add(&f[ip_at], header_bytes, 0)));
    } else if (ip_ == Ip::v6) {
        size_t ext_bytes = 0;
        for (const Ext &e : exts_) ext_bytes += e.bytes.size();
        f.push_back(static_cast<uint8_t>(version_.value_or(6) << 4));
        f.insert(f.end(), 3, 0);  // traffic class, flow label
        put16(&f, payload_length_.value_or(static_cast<uint16_t>(ext_bytes + seg.size())));
        f.push_back(exts_.empty() ? upper : exts_.front().type);
        f.push_back(ttl_);
        f.insert(f.end(), src_.begin(), src_.end());
        f.insert(f.end(), dst_.begin(), dst_.end());
        for (size_t i = 0; i < exts_.size(); ++i) {
            const size_t at = f.size();
            f.insert(f.end(), exts_[i].bytes.begin(), exts_[i].bytes.end());
            f[at] = i + 1 < exts_.size() ? exts_[i + 1].type : upper;
        }
    }
    f.insert(f.end(), seg.begin(), seg.end());
    f.insert(f.end(), trailing_bytes_, 0);
    if (truncate_len_ && *truncate_len_ < f.size()) f.resize(*truncate_len_);
    return f;
}

}  // namespace floodgate::test
