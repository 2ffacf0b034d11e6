// Traffic for the scenario tests: a generator emits frames in timestamp order, each with what
// the reference model needs to know about it (tests/reference_model.h). It is called twice
// (once to write the trace, once to check the output), so the two-million-frame scenario never
// holds its frames in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/core/parse.h"  // the TCP flag bits only; the model itself uses no dataplane code
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/reference_model.h"

namespace floodgate::test {

inline constexpr uint64_t kNsPerUs = 1'000;
inline constexpr uint64_t kNsPerMs = 1'000'000;
inline constexpr uint64_t kNsPerSec = 1'000'000'000;
// Packet time starts at a realistic wall-clock time (November 2023) rather than at 0.
inline constexpr uint64_t kStartNs = 1'700'000'000 * kNsPerSec;

inline uint64_t ms(uint64_t n) {
    return n * kNsPerMs;
}
inline uint64_t sec(uint64_t n) {
    return n * kNsPerSec;
}
// The period of a rate.
inline uint64_t per_second(uint64_t n) {
    return kNsPerSec / n;
}

struct GenPacket {
    Frame frame;
    ModelPacket info;
};
using Sink = std::function<void(const GenPacket &)>;
using Generator = std::function<void(const Sink &)>;

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Text to the model's address form: IPv4 in the first 4 bytes, the rest zero.
IpAddr a4(const char *text);
IpAddr a6(const char *text);
Ipv4Addr first4(const IpAddr &a);

// Destinations of every generated flow.
extern const IpAddr kDst4;
extern const IpAddr kDst6;

struct Flow {
    uint8_t family = 4;
    IpAddr src{};
    IpAddr dst{};
    uint8_t proto = kProtoUdp;
    uint16_t src_port = 40000;
    uint16_t dst_port = 53;
    uint8_t tcp_flags = 0;
    uint16_t qinq = 0;  // outer 802.1ad tag, 0 for none
    uint16_t vlan = 0;  // 802.1Q tag, 0 for none
    size_t payload_bytes = 18;
    std::vector<uint8_t> payload;  // when not empty: these bytes instead of payload_bytes
};

Flow flow4(const char *src, uint8_t proto, uint16_t dst_port = 0, uint8_t tcp_flags = 0);
Flow flow6(const char *src, uint8_t proto, uint16_t dst_port = 0, uint8_t tcp_flags = 0);

GenPacket make_packet(uint64_t ts_ns, const Flow &f);
GenPacket non_ip_frame(uint64_t ts_ns, Frame frame);
GenPacket malformed_frame(uint64_t ts_ns, Frame frame, const char *reason);

// A small scenario's traffic, put together from periodic flows, then sorted.
class Traffic {
  public:
    // count frames made by make(ts), the first at start_ns, then every period_ns, each moved
    // later by up to jitter_ns (deterministic).
    void every(uint64_t start_ns, uint64_t period_ns, size_t count,
               const std::function<GenPacket(uint64_t)> &make, uint64_t jitter_ns = 0);
    void every(uint64_t start_ns, uint64_t period_ns, size_t count, const Flow &f,
               uint64_t jitter_ns = 0);

    // In timestamp order (ties keep insertion order); for a microsecond trace the timestamps are
    // cut to whole microseconds first, as the file will carry them.
    Generator generator(PcapPrecision precision) const;

  private:
    std::vector<GenPacket> packets_;
};

}  // namespace floodgate::test
