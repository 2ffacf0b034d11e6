#include "tests/scenario/traffic.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace floodgate::test {

IpAddr a4(const char *text) {
    IpAddr a{};
    const Ipv4Addr b = ipv4_addr(text);
    std::copy(b.begin(), b.end(), a.begin());
    return a;
}

IpAddr a6(const char *text) {
    return ipv6_addr(text);
}

Ipv4Addr first4(const IpAddr &a) {
    return {a[0], a[1], a[2], a[3]};
}

const IpAddr kDst4 = a4("198.18.255.1");
const IpAddr kDst6 = a6("2001:db8:ffff:ffff::1");

Flow flow4(const char *src, uint8_t proto, uint16_t dst_port, uint8_t tcp_flags) {
    return {.family = 4,
            .src = a4(src),
            .dst = kDst4,
            .proto = proto,
            .dst_port = dst_port,
            .tcp_flags = tcp_flags};
}

Flow flow6(const char *src, uint8_t proto, uint16_t dst_port, uint8_t tcp_flags) {
    return {.family = 6,
            .src = a6(src),
            .dst = kDst6,
            .proto = proto,
            .dst_port = dst_port,
            .tcp_flags = tcp_flags};
}

GenPacket make_packet(uint64_t ts_ns, const Flow &f) {
    PacketBuilder b;
    if (f.qinq != 0) b.qinq(f.qinq);
    if (f.vlan != 0) b.vlan(f.vlan);
    if (f.family == 4)
        b.ipv4(first4(f.src), first4(f.dst));
    else
        b.ipv6(f.src, f.dst);
    const bool ports = f.proto == kProtoTcp || f.proto == kProtoUdp;
    switch (f.proto) {
        case kProtoTcp:
            b.tcp(f.src_port, f.dst_port, f.tcp_flags);
            break;
        case kProtoUdp:
            b.udp(f.src_port, f.dst_port);
            break;
        case kProtoIcmp:
            b.icmp(8);
            break;
        case kProtoIcmpv6:
            b.icmpv6(128);
            break;
        default:
            b.ip_proto(f.proto);
    }
    std::vector<uint8_t> payload = f.payload;
    if (payload.empty())
        for (size_t i = 0; i < f.payload_bytes; ++i) payload.push_back(static_cast<uint8_t>(i));
    b.payload(payload);
    GenPacket p{b.build(), {}};
    p.info = {.ts_ns = ts_ns,
              .kind = FrameKind::ip,
              .family = f.family,
              .src = f.src,
              .dst = f.dst,
              .proto = f.proto,
              .has_l4 = ports || f.proto == kProtoIcmp || f.proto == kProtoIcmpv6,
              .src_port = ports ? f.src_port : uint16_t{0},
              .dst_port = ports ? f.dst_port : uint16_t{0},
              .tcp_flags = f.proto == kProtoTcp ? f.tcp_flags : uint8_t{0},
              .payload = payload};
    return p;
}

GenPacket non_ip_frame(uint64_t ts_ns, Frame frame) {
    return {std::move(frame), {.ts_ns = ts_ns, .kind = FrameKind::non_ip}};
}

GenPacket malformed_frame(uint64_t ts_ns, Frame frame, const char *reason) {
    return {std::move(frame),
            {.ts_ns = ts_ns, .kind = FrameKind::malformed, .malformed_reason = reason}};
}

void Traffic::every(uint64_t start_ns, uint64_t period_ns, size_t count,
                    const std::function<GenPacket(uint64_t)> &make, uint64_t jitter_ns) {
    for (size_t k = 0; k < count; ++k) {
        const uint64_t jitter = jitter_ns == 0 ? 0 : splitmix64(packets_.size()) % jitter_ns;
        packets_.push_back(make(start_ns + k * period_ns + jitter));
    }
}

void Traffic::every(uint64_t start_ns, uint64_t period_ns, size_t count, const Flow &f,
                    uint64_t jitter_ns) {
    every(
        start_ns, period_ns, count, [&f](uint64_t ts) { return make_packet(ts, f); }, jitter_ns);
}

Generator Traffic::generator(PcapPrecision precision) const {
    auto sorted = std::make_shared<std::vector<GenPacket>>(packets_);
    std::stable_sort(sorted->begin(), sorted->end(), [](const GenPacket &x, const GenPacket &y) {
        return x.info.ts_ns < y.info.ts_ns;
    });
    if (precision == PcapPrecision::micro)
        for (GenPacket &p : *sorted) p.info.ts_ns -= p.info.ts_ns % kNsPerUs;
    return [sorted](const Sink &sink) {
        for (const GenPacket &p : *sorted) sink(p);
    };
}

}  // namespace floodgate::test
