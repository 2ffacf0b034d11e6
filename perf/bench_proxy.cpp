// What syn-proxy adds to a data segment of a proxied connection (issue 29's target: at most 20 ns
// over a plain pass): the connection's lookup (rte_hash with the keyed hash) and the rewrite of
// its numbers and checksum (tcp_translate.h), per segment, over bursts of 32 segments of
// distinct open connections. Each connection is opened by the real handshake first (the
// cookie ACK, the server's SYN-ACK).
//   BM_ProxyParseOnly:  parse_packet alone on the same frames (what any pass pays anyway)
//   BM_ProxyClientData: parse_packet + SynProxy::from_client (client -> server: ACK, window)
//   BM_ProxyServerData: parse_packet + SynProxy::from_server (server -> client: SEQ, window)
//   BM_ProxyClientBulk: the burst's 32 connections found in one rte_hash bulk call (their
//                       lines prefetched), then each segment rewritten as from_client would:
//                       what a stage-1 lookup in the pipeline would cost
// The difference between the last three and the first is the translation's own cost.
//
//   build/perf/bench_proxy --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/pipeline/syn_proxy.h"
#include "perf/bench_common.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr uint64_t kNow = 100'000'000'000ull;
constexpr uint32_t kClientIsn = 1000, kServerIsn = 5'000'000;

struct Connections {
    std::unique_ptr<ProxyFlows> flows;
    std::unique_ptr<SynProxy> proxy;
    std::vector<std::vector<uint8_t>> client_data, server_data;
};

// A segment of connection `client`: its options, or else (data) 10 bytes of payload.
std::vector<uint8_t> segment(uint32_t client, bool from_client, uint8_t flags, uint32_t seq,
                             uint32_t ack, const std::vector<uint8_t> &options = {},
                             bool data = true) {
    test::PacketBuilder b;
    const std::string c =
        "198.18." + std::to_string(client >> 8 & 0xff) + "." + std::to_string(client & 0xff);
    const uint16_t port = static_cast<uint16_t>(1024 + (client >> 16));
    if (from_client)
        b.ipv4(c, "198.19.0.1").tcp(port, 443, flags);
    else
        b.ipv4("198.19.0.1", c).tcp(443, port, flags);
    b.tcp_data_offset(static_cast<uint8_t>(5 + options.size() / 4));
    std::vector<uint8_t> payload = options;
    if (options.empty() && data) payload.resize(10, 'x');
    std::vector<uint8_t> f = b.payload(payload).build();
    PacketInfo info;
    parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info);
    for (int i = 0; i < 4; ++i) {
        f[info.l4_offset + 4 + i] = static_cast<uint8_t>(seq >> (24 - 8 * i));
        f[info.l4_offset + 8 + i] = static_cast<uint8_t>(ack >> (24 - 8 * i));
    }
    return f;
}

// n connections opened through the handshake, and a data segment of each, both ways.
bool open_connections(benchmark::State &state, uint32_t n, Connections *c) {
    c->flows =
        std::make_unique<ProxyFlows>(n, 3'000'000'000ull, 60'000'000'000ull, random_hash_seed(), 0);
    if (!c->flows->ok()) {
        state.SkipWithError("cannot allocate the connections");
        return false;
    }
    const CookieKey key = proxy_cookie_key(CookieKey{1, 2});
    c->proxy = std::make_unique<SynProxy>(c->flows.get(), key);
    const std::vector<uint8_t> opts = {2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7};
    const ProxyAnnounce announce;
    for (uint32_t i = 0; i < n; ++i) {
        std::vector<uint8_t> syn = segment(i, true, 0x02, kClientIsn, 0, opts);
        PacketInfo info;
        parse_packet(syn.data(), static_cast<uint32_t>(syn.size()), &info);
        const AnswerPlan plan =
            plan_answer(AnswerKind::syn_proxy, syn.data(), static_cast<uint32_t>(syn.size()), info);
        const uint32_t cookie = proxy_cookie(key, info, kClientIsn, plan.client, cookie_slot(kNow));
        c->proxy->answering(info, kNow);
        std::vector<uint8_t> ack = segment(i, true, 0x10, kClientIsn + 1, cookie + 1, {}, false);
        parse_packet(ack.data(), static_cast<uint32_t>(ack.size()), &info);
        uint16_t window;
        uint32_t isn;
        ProxyFlow *flow;
        if (c->proxy->from_client(info, ack.data() + info.l4_offset, info.l4_len, announce, kNow,
                                  &window, &flow) != ProxyStep::server_syn) {
            state.SkipWithError("a handshake failed");
            return false;
        }
        std::vector<uint8_t> synack = segment(i, false, 0x12, kServerIsn, kClientIsn + 1, opts);
        parse_packet(synack.data(), static_cast<uint32_t>(synack.size()), &info);
        if (c->proxy->from_server(info, synack.data() + info.l4_offset, info.l4_len, kNow, &isn,
                                  &window, &flow) != ProxyStep::server_ack) {
            state.SkipWithError("a server handshake failed");
            return false;
        }
        c->client_data.push_back(segment(i, true, 0x18, kClientIsn + 1, cookie + 1));
        c->server_data.push_back(segment(i, false, 0x18, kServerIsn + 1, kClientIsn + 11));
    }
    return true;
}

enum class Side { parse_only, client, server, client_bulk };

// One burst the bulk way: parse and key all 32, one lookup call, then the rewrites.
uint64_t client_burst_bulk(Connections &c, std::vector<std::vector<uint8_t>> &frames,
                           uint32_t *next) {
    const auto n = static_cast<uint32_t>(frames.size());
    PacketInfo infos[32];
    FlowKey keys[32];
    const FlowKey *ptrs[32];
    std::vector<uint8_t> *burst[32];
    for (unsigned k = 0; k < 32; ++k) {
        burst[k] = &frames[*next];
        *next = *next + 1 == n ? 0 : *next + 1;
        parse_packet(burst[k]->data(), static_cast<uint32_t>(burst[k]->size()), &infos[k]);
        keys[k] = flow_key(infos[k], true);
        ptrs[k] = &keys[k];
    }
    ProxyFlow *found[32];
    c.flows->find_bulk(ptrs, 32, found);
    uint64_t forwarded = 0;
    for (unsigned k = 0; k < 32; ++k) {
        const ProxyFlow *f = found[k];
        if (f == nullptr) continue;
        const uint8_t shift = f->client.wscale == kNoWindowScale ? 0 : f->client.wscale;
        const SegmentRewrite r{0, f->delta, shift,
                               f->server_wscale == kNoWindowScale ? uint8_t{0} : shift};
        forwarded += rewrite_segment(burst[k]->data() + infos[k].l4_offset, infos[k].l4_len, r);
    }
    return forwarded;
}

void run(benchmark::State &state, Side side) {
    Connections c;
    const auto n = static_cast<uint32_t>(state.range(0));
    if (!open_connections(state, n, &c)) return;
    const ProxyAnnounce announce;
    std::vector<std::vector<uint8_t>> &frames =
        side == Side::server ? c.server_data : c.client_data;
    uint32_t next = 0;
    uint64_t forwarded = 0;
    for (auto _ : state) {
        if (side == Side::client_bulk) {
            forwarded += client_burst_bulk(c, frames, &next);
            continue;
        }
        for (unsigned k = 0; k < 32; ++k) {
            std::vector<uint8_t> &f = frames[next];
            next = next + 1 == n ? 0 : next + 1;
            PacketInfo info;
            parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info);
            if (side == Side::parse_only) {
                benchmark::DoNotOptimize(info);
                continue;
            }
            uint16_t window;
            uint32_t isn;
            ProxyFlow *flow;
            const ProxyStep step =
                side == Side::client
                    ? c.proxy->from_client(info, f.data() + info.l4_offset, info.l4_len, announce,
                                           kNow, &window, &flow)
                    : c.proxy->from_server(info, f.data() + info.l4_offset, info.l4_len, kNow, &isn,
                                           &window, &flow);
            forwarded += step == ProxyStep::forward ? 1 : 0;
        }
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 32);
    state.counters["ns_per_segment"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * 32,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    if (side != Side::parse_only && forwarded != static_cast<uint64_t>(state.iterations()) * 32)
        state.SkipWithError("a segment was not forwarded");
}

void BM_ProxyParseOnly(benchmark::State &state) {
    run(state, Side::parse_only);
}
void BM_ProxyClientData(benchmark::State &state) {
    run(state, Side::client);
}
void BM_ProxyServerData(benchmark::State &state) {
    run(state, Side::server);
}
void BM_ProxyClientBulk(benchmark::State &state) {
    run(state, Side::client_bulk);
}
BENCHMARK(BM_ProxyParseOnly)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK(BM_ProxyClientBulk)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK(BM_ProxyClientData)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK(BM_ProxyServerData)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

}  // namespace
}  // namespace floodgate

int main(int argc, char **argv) {
    return floodgate::bench::run_with_eal(argc, argv, 2048);
}
