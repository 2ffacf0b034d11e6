// floodgate-gen: writes generated traffic as pcap files, for the demo and for load tests.
//
//   floodgate-gen demo --out demo.pcap      a 10-second mixed attack on legitimate traffic
//   floodgate-gen lab --out lab.pcap        the lab test's 3 seconds
//   floodgate-gen syn-flood --out syn.pcap  spoofed SYNs toward the answers lab's web server
//                                           (tests/lab/answers.sh), replayed in a loop by
//                                           floodgate-tx
//   floodgate-gen proxied --out two-way.pcap
//                                           both sides of syn-proxy's connections to a web
//                                           server, as `floodgate replay --inside` reads them
//                                           (below)
//   floodgate-gen mix-a|mix-b|mix-b15|mix-c|mix-d|mix-e|mix-f --out mix.pcap
//                                           the benchmark mixes (perf/harness.py), 64-byte
//                                           frames on the wire (IPv6: 66, its minimum)
//
// Deterministic (fixed seed): the same command writes the same bytes. Addresses are inside
// 198.18.0.0/15 and 2001:db8::/32, except mix-b's 1,048,576 distinct sources, which need
// more than a /15: they are drawn from 10.0.0.0/8 and that mix is only ever replayed inside
// one process or over shared memory, never sent on a network (mix-b15 is its /15 variant), and
// mix-e's, the same 1,048,576 sources sending SYNs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "dataplane/answer/proxy_cookie.h"
#include "dataplane/replay/replay.h"
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"

namespace {

using floodgate::test::Frame;
using floodgate::test::PacketBuilder;
using Ipv4 = floodgate::test::Ipv4Addr;
using Ipv6 = floodgate::test::Ipv6Addr;

constexpr uint64_t kSecond = 1000000000;

// A stream of frames at a fixed interval between start and stop (packet time, ns).
struct Stream {
    uint64_t next_ns;
    uint64_t interval_ns;
    uint64_t stop_ns;
    std::function<Frame(uint64_t n)> make;
    uint64_t sent = 0;
};

std::string v4(unsigned a, unsigned b) {
    return "198." + std::to_string(18 + a / 256) + "." + std::to_string(a % 256) + "." +
           std::to_string(b);
}

// Merges the streams in time order (ties: stream order), so the trace is deterministic.
int write_streams(std::vector<Stream> &streams, const std::string &out) {
    auto later = [&](size_t a, size_t b) {
        return streams[a].next_ns != streams[b].next_ns ? streams[a].next_ns > streams[b].next_ns
                                                        : a > b;
    };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
    for (size_t i = 0; i < streams.size(); ++i) heap.push(i);
    floodgate::test::PcapWriter w(out, floodgate::test::PcapPrecision::nano);
    while (!heap.empty()) {
        size_t i = heap.top();
        heap.pop();
        Stream &s = streams[i];
        w.write(s.next_ns, s.make(s.sent++));
        s.next_ns += s.interval_ns;
        if (s.next_ns < s.stop_ns) heap.push(i);
    }
    w.close();
    std::printf("wrote %llu frames to %s\n", static_cast<unsigned long long>(w.records_written()),
                out.c_str());
    return 0;
}

// Well-behaved clients 198.18.1.10 and up, from t = 0 to stop_ns: DNS queries at 2/s and TCP
// traffic at tcp_per_s each, starting 1 ms apart.
void add_clients(std::vector<Stream> *streams, unsigned count, uint64_t tcp_per_s,
                 uint64_t stop_ns) {
    for (unsigned c = 0; c < count; ++c) {
        std::string src = v4(1, 10 + c);
        streams->push_back({c * 1000000ull, kSecond / 2, stop_ns, [src](uint64_t n) {
                                return PacketBuilder()
                                    .ipv4(src, "198.18.100.53")
                                    .udp(static_cast<uint16_t>(30000 + n % 1000), 53)
                                    .payload(30)
                                    .build();
                            }});
        streams->push_back({c * 1000000ull, kSecond / tcp_per_s, stop_ns, [src](uint64_t) {
                                return PacketBuilder()
                                    .ipv4(src, "198.18.100.80")
                                    .tcp(45000, 443, 0x10)
                                    .payload(100)
                                    .build();
                            }});
    }
}

int demo(const std::string &out) {
    std::vector<Stream> streams;
    // Legitimate users: 20 clients, DNS at 2/s and TCP traffic at 40/s each, for 10 s.
    add_clients(&streams, 20, 40, 10 * kSecond);
    // DNS flood from one source: 2,000 queries/s from t = 2 s to 7 s.
    streams.push_back({2 * kSecond, kSecond / 2000, 7 * kSecond, [](uint64_t n) {
                           return PacketBuilder()
                               .ipv4("198.18.66.6", "198.18.100.53")
                               .udp(static_cast<uint16_t>(1024 + n % 60000), 53)
                               .payload(30)
                               .build();
                       }});
    // SYN flood from spoofed sources all over 198.19.0.0/16: 4,000/s, t = 3 s to 8 s.
    streams.push_back({3 * kSecond, kSecond / 4000, 8 * kSecond, [](uint64_t n) {
                           uint64_t h = n * 0x9e3779b97f4a7c15ull;
                           std::string src = "198.19." + std::to_string((h >> 8) & 255) + "." +
                                             std::to_string((h >> 16) & 255);
                           return PacketBuilder()
                               .ipv4(src, "198.18.100.80")
                               .tcp(static_cast<uint16_t>(h >> 32), 443, 0x02)
                               .build();
                       }});
    // ICMP flood from one source: 500/s, t = 1 s to 9 s.
    streams.push_back(
        {1 * kSecond, kSecond / 500, 9 * kSecond, [](uint64_t) {
             return PacketBuilder().ipv4("198.18.77.7", "198.18.100.1").icmp(8).payload(56).build();
         }});
    // IPv6 flood rotating through one /64: 1,000/s, t = 4 s to 9 s; limited as one source.
    streams.push_back(
        {4 * kSecond, kSecond / 1000, 9 * kSecond, [](uint64_t n) {
             char src[64];
             std::snprintf(src, sizeof src, "2001:db8:66:1:%x:%x::1",
                           static_cast<unsigned>(n & 0xffff), static_cast<unsigned>(n >> 16));
             return PacketBuilder().ipv6(src, "2001:db8:100::53").udp(5353, 53).payload(30).build();
         }});
    // A blocked network probing (198.19.255.0/24 is in the default block list): 50/s.
    streams.push_back({0, kSecond / 50, 10 * kSecond, [](uint64_t n) {
                           return PacketBuilder()
                               .ipv4("198.19.255." + std::to_string(1 + n % 200), "198.18.100.22")
                               .tcp(50000, 22, 0x02)
                               .build();
                       }});
    // A monitoring host in the default allow list (198.18.200.0/24) pinging at 50/s: never
    // limited, though the icmp rule allows 5/s.
    streams.push_back({0, kSecond / 50, 10 * kSecond, [](uint64_t) {
                           return PacketBuilder()
                               .ipv4("198.18.200.10", "198.18.100.1")
                               .icmp(8)
                               .payload(56)
                               .build();
                       }});
    // Broken frames (bad IHL) and ARP, 2/s each.
    streams.push_back({kSecond / 3, kSecond / 2, 10 * kSecond, [](uint64_t) {
                           return PacketBuilder()
                               .ipv4("198.18.9.9", "198.18.100.53")
                               .ipv4_ihl(3)
                               .udp(1, 53)
                               .build();
                       }});
    streams.push_back(
        {kSecond / 5, kSecond / 2, 10 * kSecond, [](uint64_t) {
             return PacketBuilder().eth(floodgate::test::kEtherTypeArp).payload(28).build();
         }});

    return write_streams(streams, out);
}

// The lab test's traffic, 3 seconds: 10 well-behaved clients (DNS at 2/s, TCP at 20/s), a
// DNS flood from one source (1,000/s for 2 s), spoofed SYNs from 198.19.0.0/16 (500/s), an
// IPv6 DNS flood rotating through one /64 (500/s for 2 s) and an ICMP flood (300/s).
int lab(const std::string &out) {
    std::vector<Stream> streams;
    add_clients(&streams, 10, 20, 3 * kSecond);
    streams.push_back({kSecond / 2, kSecond / 1000, 5 * kSecond / 2, [](uint64_t n) {
                           return PacketBuilder()
                               .ipv4("198.18.66.6", "198.18.100.53")
                               .udp(static_cast<uint16_t>(1024 + n), 53)
                               .payload(30)
                               .build();
                       }});
    streams.push_back(
        {0, kSecond / 500, 3 * kSecond, [](uint64_t n) {
             uint64_t h = n * 0x9e3779b97f4a7c15ull;
             std::string src =
                 "198.19." + std::to_string((h >> 8) & 254) + "." + std::to_string((h >> 16) & 255);
             return PacketBuilder().ipv4(src, "198.18.100.80").tcp(2000, 443, 0x02).build();
         }});
    streams.push_back(
        {kSecond / 2, kSecond / 500, 5 * kSecond / 2, [](uint64_t n) {
             char src[64];
             std::snprintf(src, sizeof src, "2001:db8:66:1:%x::%x",
                           static_cast<unsigned>(n & 0xffff), static_cast<unsigned>(n >> 16) + 1);
             return PacketBuilder().ipv6(src, "2001:db8:100::53").udp(5353, 53).payload(30).build();
         }});
    streams.push_back(
        {0, kSecond / 300, 3 * kSecond, [](uint64_t) {
             return PacketBuilder().ipv4("198.18.77.7", "198.18.100.1").icmp(8).payload(56).build();
         }});
    return write_streams(streams, out);
}

// Benchmark mixes: frames with no timing of their own (a replay loops over them as fast as it
// can), 1 us apart in the file. UDP to port 53, 64 bytes on the wire with the FCS.
Frame udp64(const Ipv4 &src) {
    return PacketBuilder().ipv4(src, Ipv4{198, 18, 255, 1}).udp(40000, 53).payload(18).build();
}

// Microsecond pcap, which every replay tool reads (Pktgen-DPDK refuses nanosecond files).
int write_frames(const std::vector<Frame> &frames, const std::string &out) {
    floodgate::test::PcapWriter w(out, floodgate::test::PcapPrecision::micro);
    for (size_t i = 0; i < frames.size(); ++i) w.write(kSecond + i * 1000, frames[i]);
    w.close();
    std::printf("wrote %zu frames to %s\n", frames.size(), out.c_str());
    return 0;
}

Ipv4 from_u32(uint32_t a) {
    return Ipv4{static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
}

// The n addresses base .. base + n - 1, in a random order.
std::vector<uint32_t> shuffled_range(uint32_t base, uint32_t n, std::mt19937_64 &rng) {
    std::vector<uint32_t> v(n);
    for (uint32_t i = 0; i < n; ++i) v[i] = base + i;
    std::shuffle(v.begin(), v.end(), rng);
    return v;
}

// The answers lab's spoofed SYN flood (tests/lab/answers.sh, which replays it in a loop with
// floodgate-tx as fast as it goes, so the frames carry no timing of their own): 65,536 SYNs
// to the lab's web server, 198.18.1.1 and 2001:db8:1::1 port 80, from random source ports.
// 7 in 8 come from random addresses of 198.19.0.0/20 (4,096 sources, 16 /24s), 1 in 8 from
// random interface ids in 16 /64s of 2001:db8:66::/48. So few prefixes keep floodgate's
// per-destination answer cap (one bucket per /24 or /64) the binding one, not the per-core
// cap that real clients' SYN-ACKs share with the flood's. The sources never answer: the
// frames come from MAC 02:00:00:00:00:01, which no interface of the lab has, and are sent to
// 02:00:00:00:00:02, the server's.
int syn_flood(const std::string &out) {
    std::mt19937_64 rng(20260315);
    std::vector<Frame> frames;
    for (uint32_t i = 0; i < 65536; ++i) {
        const uint64_t r = rng();
        const auto src_port = static_cast<uint16_t>(1024 + (r >> 48) % 64512);
        if (i % 8 != 7) {
            frames.push_back(PacketBuilder()
                                 .ipv4(from_u32(0xc6130000u + (r & 0xfff)), Ipv4{198, 18, 1, 1})
                                 .tcp(src_port, 80, 0x02)
                                 .build());
            continue;
        }
        Ipv6 src{0x20, 0x01, 0x0d, 0xb8, 0, 0x66, 0, static_cast<uint8_t>(r & 15)};
        for (int b = 0; b < 4; ++b) src[12 + b] = static_cast<uint8_t>(r >> (8 + 8 * b));
        src[8] = 0x02;  // some interface id bits, so that no source is the /64's ::0
        Ipv6 dst{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};  // 2001:db8:1::1
        frames.push_back(PacketBuilder().ipv6(src, dst).tcp(src_port, 80, 0x02).build());
    }
    return write_frames(frames, out);
}

int mix(const std::string &name, const std::string &out) {
    std::mt19937_64 rng(20261130);
    std::vector<Frame> frames;
    if (name == "mix-a") {  // (a) one source flooding
        frames.assign(4096, udp64(Ipv4{198, 18, 66, 6}));
    } else if (name == "mix-b") {  // (b) 1,048,576 random sources, each once per pass
        for (uint32_t a : shuffled_range(0x0a000000u, 1u << 20, rng))
            frames.push_back(udp64(from_u32(a)));
    } else if (name == "mix-b15") {  // (b) inside 198.18.0.0/15: 131,072 sources, each 8 times
        for (int pass = 0; pass < 8; ++pass)
            for (uint32_t a : shuffled_range(0xc6120000u, 1u << 17, rng))
                frames.push_back(udp64(from_u32(a)));
    } else if (name == "mix-c") {  // (c) IPv6 sources over 65,536 /64s, random interface ids
        for (int pass = 0; pass < 4; ++pass)
            for (uint32_t net : shuffled_range(0, 1u << 16, rng)) {
                Ipv6 src{0x20,
                         0x01,
                         0x0d,
                         0xb8,
                         0,
                         0,
                         static_cast<uint8_t>(net >> 8),
                         static_cast<uint8_t>(net)};
                uint64_t iid = rng();
                for (int i = 0; i < 8; ++i) src[8 + i] = static_cast<uint8_t>(iid >> (8 * i));
                Ipv6 dst{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
                frames.push_back(PacketBuilder().ipv6(src, dst).udp(40000, 53).build());
            }
    } else if (name == "mix-d") {
        // (d) 90% flood from 1,000 sources (198.18.0.0 - 198.18.3.231), 10% from 100,000
        // legitimate ones (198.18.16.0 and up), each of them once per pass: replayed at
        // 10 Mpps, a pass takes 0.1 s, so each sends 10/s, under perf/perf.yaml's 100/s.
        std::vector<uint32_t> legit = shuffled_range(0xc6121000u, 100000, rng);
        std::uniform_int_distribution<uint32_t> flood(0, 999);
        for (uint32_t i = 0; i < 1000000; ++i)
            frames.push_back(
                udp64(from_u32(i % 10 == 9 ? legit[i / 10] : 0xc6120000u + flood(rng))));
    } else if (name == "mix-e") {
        // (e) a SYN flood from 1,048,576 random sources of 10.0.0.0/8, each once per pass, to
        // port 80 from random source ports: 54-byte SYNs padded to 60 (64 on the wire).
        for (uint32_t a : shuffled_range(0x0a000000u, 1u << 20, rng))
            frames.push_back(PacketBuilder()
                                 .ipv4(from_u32(a), Ipv4{198, 18, 255, 1})
                                 .tcp(static_cast<uint16_t>(1024 + rng() % 64512), 80, 0x02)
                                 .trailing(6)
                                 .build());
    } else if (name == "mix-f") {
        // (f) established TCP: ACKs of 65,536 connections to port 80, one a source of
        // 198.18.0.0/16, each once per pass, 54 bytes padded to 60 (64 on the wire).
        for (uint32_t a : shuffled_range(0xc6120000u, 1u << 16, rng))
            frames.push_back(PacketBuilder()
                                 .ipv4(from_u32(a), Ipv4{198, 18, 255, 80})
                                 .tcp(static_cast<uint16_t>(1024 + rng() % 64512), 80, 0x10)
                                 .tcp_seq(static_cast<uint32_t>(rng()))
                                 .tcp_ack(static_cast<uint32_t>(rng()))
                                 .trailing(6)
                                 .build());
    } else {
        return -1;
    }
    return write_frames(frames, out);
}

// The held-out mix: drawn afresh from a seed the harness picks at random for each run (and
// records), so that no one tunes for its frames. 1,048,576 frames from 262,144 sources: 7 in 8
// addresses of 10.0.0.0/8, 1 in 8 random /64s of 2001:db8::/32 with random interface ids; each
// sends once, and the other 786,432 frames follow Zipf's law (rank k sends in proportion to 1/k,
// so a few hundred heavy sources are refused and the long tail is not); 3 in 4 frames UDP to
// port 53, 1 in 4 TCP ACKs to port 80, from random ports, in a random order. 64 bytes on the wire
// (IPv6 frames 78 at least).
int held_out_mix(uint64_t seed, const std::string &out) {
    constexpr uint32_t kSources = 1u << 18, kFrames = 1u << 20;
    std::mt19937_64 rng(seed);
    std::vector<PacketBuilder> sources(kSources);
    std::vector<bool> ipv6(kSources);
    for (uint32_t s = 0; s < kSources; ++s) {
        PacketBuilder &b = sources[s];
        const uint64_t r = rng();
        ipv6[s] = r % 8 == 7;
        if (!ipv6[s]) {
            b.ipv4(from_u32(0x0a000000u | static_cast<uint32_t>(r >> 40)), Ipv4{198, 18, 255, 1});
            continue;
        }
        Ipv6 src{0x20, 0x01, 0x0d, 0xb8};
        const uint64_t net = rng(), iid = rng();
        for (int i = 0; i < 4; ++i) src[4 + i] = static_cast<uint8_t>(net >> (8 * i));
        for (int i = 0; i < 8; ++i) src[8 + i] = static_cast<uint8_t>(iid >> (8 * i));
        b.ipv6(src, Ipv6{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    }
    // Zipf by inverse transform over the cumulative weights 1/k.
    std::vector<double> cumulative(kSources);
    double sum = 0;
    for (uint32_t k = 0; k < kSources; ++k) cumulative[k] = sum += 1.0 / (k + 1);
    std::uniform_real_distribution<double> pick(0, sum);
    std::vector<Frame> frames;
    frames.reserve(kFrames);
    for (uint32_t i = 0; i < kFrames; ++i) {
        size_t k = i;
        if (i >= kSources)
            k = std::min<size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), pick(rng)) -
                                     cumulative.begin(),
                                 kSources - 1);
        PacketBuilder b = sources[k];
        const uint64_t r = rng();
        const auto port = static_cast<uint16_t>(1024 + (r >> 16) % 64512);
        if (r % 4 == 3) {
            b.tcp(port, 80, 0x10);
            if (!ipv6[k]) b.trailing(6);  // 54 bytes padded to 60
        } else {
            b.udp(port, 53).payload(18);
        }
        frames.push_back(b.build());
    }
    std::shuffle(frames.begin(), frames.end(), rng);
    return write_frames(frames, out);
}

// Both sides of syn-proxy's connections to the web server 198.18.1.1 / 2001:db8:1::1 port 80,
// as a tap on both of floodgate's ports would see them: each client's SYN (Linux's options),
// its ACK to floodgate's SYN-ACK (the cookie replay's fixed key gives), its request before the
// server answered (held), then the server's side as if it had received floodgate's SYN: its
// SYN-ACK, a 1000-byte response, and a close both ways. Clients 198.18.1.10-11 and
// 2001:db8:1::10 and 2001:db8:2::11 (another /64: syn-proxy verifies IPv6 sources per /64)
// are served; 198.18.1.12 is refused by the server (its RST); 198.18.1.13
// answers with a wrong cookie (passed on, nothing opened). 10 ms between connections, 1 ms
// between a connection's steps.
int proxied(const std::string &out) {
    using floodgate::CookieKey;
    using floodgate::PacketInfo;
    const CookieKey key = floodgate::proxy_cookie_key(floodgate::kReplayCookieKey);
    const std::vector<uint8_t> syn_options = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                              0x12, 0x34, 0,    0,    0, 0, 1, 3,  3, 7};
    const std::vector<uint8_t> server_options = {2, 4, 0x05, 0xb4, 4, 2, 1, 3, 3, 7};  // + pad
    floodgate::test::PcapWriter w(out, floodgate::test::PcapPrecision::nano);
    enum class Kind { served, refused, wrong_cookie };
    struct Client {
        std::string addr;
        bool v6;
        Kind kind;
    };
    const Client clients[] = {
        {"198.18.1.10", false, Kind::served},   {"198.18.1.11", false, Kind::served},
        {"2001:db8:1::10", true, Kind::served}, {"2001:db8:2::11", true, Kind::served},
        {"198.18.1.12", false, Kind::refused},  {"198.18.1.13", false, Kind::wrong_cookie}};
    uint64_t t = kSecond;
    uint16_t port = 40000;
    for (const Client &c : clients) {
        const std::string server = c.v6 ? "2001:db8:1::1" : "198.18.1.1";
        const auto from_client = [&](uint8_t flags) {
            PacketBuilder b;
            if (c.v6)
                b.ipv6(c.addr, server);
            else
                b.ipv4(c.addr, server);
            return b.tcp(port, 80, flags);
        };
        const auto from_server = [&](uint8_t flags) {
            PacketBuilder b;
            if (c.v6)
                b.ipv6(server, c.addr);
            else
                b.ipv4(server, c.addr);
            return b.tcp(80, port, flags);
        };
        const uint32_t isn = 0x10000000u + port * 7919u, server_isn = 0x70000000u + port * 104729u;
        // The cookie floodgate's SYN-ACK carries, as replay computes it at this time.
        PacketInfo p{};
        p.family = c.v6 ? 6 : 4;
        floodgate::test::PacketBuilder probe = from_client(0x02);
        const Frame syn_frame = probe.build();
        const size_t l3 = 14, addr_at = c.v6 ? l3 + 8 : l3 + 12, addr_len = c.v6 ? 16 : 4;
        std::memcpy(p.src, syn_frame.data() + addr_at, addr_len);
        std::memcpy(p.dst, syn_frame.data() + addr_at + addr_len, addr_len);
        p.src_port = port;
        p.dst_port = 80;
        const floodgate::ProxiedOptions asked{1460, 7, true};
        uint32_t cookie = floodgate::proxy_cookie(key, p, isn, asked, floodgate::cookie_slot(t));
        if (c.kind == Kind::wrong_cookie) cookie ^= 0x5a5a5a00u;
        const uint32_t request = 40, response = 1000;
        const auto step = [&](Frame f) {
            w.write(t, f);
            t += kSecond / 1000;
        };
        step(from_client(0x02).tcp_seq(isn).tcp_data_offset(10).payload(syn_options).build());
        step(from_client(0x10).tcp_seq(isn + 1).tcp_ack(cookie + 1).tcp_window(502).build());
        if (c.kind == Kind::wrong_cookie) {
            t += 9 * kSecond / 1000;
            ++port;
            continue;
        }
        step(from_client(0x18)
                 .tcp_seq(isn + 1)
                 .tcp_ack(cookie + 1)
                 .tcp_window(502)
                 .payload(request)
                 .build());
        if (c.kind == Kind::refused) {
            step(from_server(0x14).tcp_seq(0).tcp_ack(isn + 1).tcp_window(0).build());
        } else {
            std::vector<uint8_t> opts = server_options;
            opts.resize(12, 0);  // NOP-free end-of-options padding to 3 words
            step(from_server(0x12)
                     .tcp_seq(server_isn)
                     .tcp_ack(isn + 1)
                     .tcp_window(65160)
                     .tcp_data_offset(8)
                     .payload(opts)
                     .build());
            step(from_server(0x18)
                     .tcp_seq(server_isn + 1)
                     .tcp_ack(isn + 1 + request)
                     .tcp_window(502)
                     .payload(response)
                     .build());
            step(from_client(0x11)
                     .tcp_seq(isn + 1 + request)
                     .tcp_ack(cookie + 1 + response)
                     .tcp_window(502)
                     .build());
            step(from_server(0x11)
                     .tcp_seq(server_isn + 1 + response)
                     .tcp_ack(isn + 2 + request)
                     .tcp_window(502)
                     .build());
            step(from_client(0x10)
                     .tcp_seq(isn + 2 + request)
                     .tcp_ack(cookie + 2 + response)
                     .tcp_window(502)
                     .build());
        }
        t += 3 * kSecond / 1000;
        ++port;
    }
    w.close();
    std::printf("wrote %llu frames to %s\n", static_cast<unsigned long long>(w.records_written()),
                out.c_str());
    return 0;
}

void usage(std::FILE *to) {
    std::fputs(
        "usage: floodgate-gen "
        "demo|lab|syn-flood|proxied|mix-a|mix-b|mix-b15|mix-c|mix-d|mix-e|mix-f "
        "--out "
        "FILE.pcap\n"
        "       floodgate-gen mix-held-out --seed N --out FILE.pcap\n",
        to);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 4 && std::strcmp(argv[2], "--out") == 0) {
        const std::string what = argv[1];
        try {
            if (what == "demo") return demo(argv[3]);
            if (what == "lab") return lab(argv[3]);
            if (what == "syn-flood") return syn_flood(argv[3]);
            if (what == "proxied") return proxied(argv[3]);
            int rc = mix(what, argv[3]);
            if (rc >= 0) return rc;
        } catch (const std::exception &e) {
            std::fprintf(stderr, "floodgate-gen: %s\n", e.what());
            return 1;
        }
    }
    if (argc == 6 && std::strcmp(argv[1], "mix-held-out") == 0 &&
        std::strcmp(argv[2], "--seed") == 0 && std::strcmp(argv[4], "--out") == 0) {
        char *end = nullptr;
        const uint64_t seed = std::strtoull(argv[3], &end, 10);
        if (end != argv[3] && *end == '\0') return held_out_mix(seed, argv[5]);
    }
    usage(stderr);
    return 2;
}
