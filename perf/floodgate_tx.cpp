// floodgate-tx: the harness's traffic source for the two-process and kernel cases. Loads a
// pcap into mbufs once and sends it round and round on port 0 as fast as the port takes it,
// for --seconds, printing what it sent each second and a JSON summary at the end. With --pps it
// sends at most that many frames a second (paced per burst, sleeping between bursts): a lab
// flood that a shared machine can carry to the end, not one the receiver's ring loses.
//
//   floodgate-tx [EAL options] -- --pcap FILE [--seconds S] [--wait-link S] [--pps N]
//   floodgate-tx --memory-mb FILE     the EAL memory (-m) those options need for FILE
//
// Every frame is a template mbuf sent again by taking one more reference to it (the PMD
// copies it out, as net_memif and net_af_packet do, and drops the reference): no per-packet
// allocation or copy on this side, so the receiver is what is measured.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/api/numbers.h"
#include "dataplane/live/port.h"
#include "dataplane/live/port_plugins.h"
#include "dataplane/replay/pcap_file.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
    g_stop = 1;
}

// The port's receive side (unused, but every PMD wants one) has a pool of its own.
constexpr unsigned kRxMbufs = 4096;
// What the EAL and a software port take beside the two pools (memzones, rings, the
// malloc heap's own structures), and the share the hugepage allocator loses to page rounding
// and fragmentation. On 2 MiB pages, reserved anew for each try: mix d (1,000,000 frames)
// fails at -m 512 and runs at 600, for which this gives 681; the lab mix runs at 48 (gives 81).
constexpr uint64_t kEalOverheadMb = 64;
constexpr unsigned kFragmentationPercent = 10;

std::optional<std::vector<std::vector<uint8_t>>> load_frames(const std::string &pcap) {
    floodgate::PcapReader in(pcap);
    if (!in.ok()) {
        std::fprintf(stderr, "floodgate-tx: %s\n", in.error().c_str());
        return std::nullopt;
    }
    std::vector<std::vector<uint8_t>> frames;
    floodgate::PcapRecord r;
    while (in.next(&r)) frames.push_back(r.data);
    if (frames.empty()) {
        std::fprintf(stderr, "floodgate-tx: %s has no frames\n", pcap.c_str());
        return std::nullopt;
    }
    return frames;
}

// The templates' pool: one mbuf a frame plus room for the port's own rings, each just holding
// the largest frame (a million 64-byte frames take 400 MB, not 2.3 GB).
struct TemplatePool {
    unsigned mbufs;
    uint16_t data_room;
};

TemplatePool template_pool(const std::vector<std::vector<uint8_t>> &frames) {
    size_t largest = 0;
    for (const auto &f : frames) largest = std::max(largest, f.size());
    return {static_cast<unsigned>(frames.size()) + 4096,
            static_cast<uint16_t>(std::max<size_t>(largest, 256) + RTE_PKTMBUF_HEADROOM)};
}

// The EAL memory (-m, MB) a run with these frames needs: each pool's objects as the mempool
// lays them out (header, mbuf, data room, trailer), then the overheads above. The labs size
// their hugepages from this rather than a fixed number (a fixed 256 MB held mix d's 1,000,000
// frames only without hugepages, where nothing is reserved up front).
uint64_t eal_memory_mb(const TemplatePool &shape) {
    rte_mempool_objsz templates{}, rx{};
    rte_mempool_calc_obj_size(sizeof(rte_mbuf) + shape.data_room, 0, &templates);
    rte_mempool_calc_obj_size(sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 0, &rx);
    const uint64_t bytes =
        uint64_t{templates.total_size} * shape.mbufs + uint64_t{rx.total_size} * kRxMbufs;
    const uint64_t mb = (bytes * (100 + kFragmentationPercent) / 100 + (1u << 20) - 1) >> 20;
    return mb + kEalOverheadMb;
}

int run(const std::string &pcap, double seconds, double wait_link_s, uint64_t pps) {
    using namespace floodgate;
    const auto loaded = load_frames(pcap);
    if (!loaded) return 1;
    const std::vector<std::vector<uint8_t>> &frames = *loaded;
    if (rte_eth_dev_count_avail() == 0) {
        std::fputs("floodgate-tx: no port (add one with --vdev)\n", stderr);
        return 1;
    }
    const TemplatePool shape = template_pool(frames);
    rte_mempool *pool = rte_pktmbuf_pool_create("fgtx", shape.mbufs, 0, 0, shape.data_room,
                                                static_cast<int>(rte_socket_id()));
    if (pool == nullptr) {
        std::fprintf(
            stderr,
            "floodgate-tx: mbuf pool: %s (floodgate-tx --memory-mb %s says how much -m it needs)\n",
            rte_strerror(rte_errno), pcap.c_str());
        return 1;
    }
    std::vector<rte_mbuf *> templates;
    for (const auto &f : frames) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        char *p = m != nullptr ? rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())) : nullptr;
        if (p == nullptr) {
            std::fputs("floodgate-tx: frame does not fit an mbuf\n", stderr);
            return 1;
        }
        std::memcpy(p, f.data(), f.size());
        templates.push_back(m);
    }
    // The port's receive side (unused, but every PMD wants one) gets its own pool of
    // full-size mbufs: net_af_packet and net_af_xdp refuse small ones.
    rte_mempool *rx_pool = rte_pktmbuf_pool_create(
        "fgtx_rx", kRxMbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, static_cast<int>(rte_socket_id()));
    PortFeatures features;
    std::string error;
    if (rx_pool == nullptr || !setup_port({0, 1}, rx_pool, &features, &error)) {
        std::fprintf(stderr, "floodgate-tx: %s\n",
                     rx_pool == nullptr ? rte_strerror(rte_errno) : error.c_str());
        return 1;
    }
    // For a harness: the frames are loaded and the port is started (a memif server now
    // accepts its client).
    std::printf("floodgate-tx: ready\n");
    std::fflush(stdout);
    // A memif server sends nothing until its client connects.
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t link_deadline = rte_rdtsc() + static_cast<uint64_t>(wait_link_s * hz);
    rte_eth_link link{};
    while (!g_stop && rte_rdtsc() < link_deadline) {
        rte_eth_link_get_nowait(0, &link);
        if (link.link_status == RTE_ETH_LINK_UP) break;
        rte_delay_ms(10);
    }
    if (link.link_status != RTE_ETH_LINK_UP) {
        std::fputs("floodgate-tx: link did not come up\n", stderr);
        close_port(0);
        return 1;
    }
    std::printf("floodgate-tx: sending %zu frames round robin for %.0f s\n", templates.size(),
                seconds);
    std::fflush(stdout);

    const uint64_t start = rte_rdtsc(), end = start + static_cast<uint64_t>(seconds * hz);
    uint64_t sent = 0, next_print = start + hz, last_sent = 0;
    uint64_t paced_from = start, paced_sent = 0;  // --pps: the pace's origin
    size_t at = 0;
    rte_mbuf *burst[32];
    for (uint64_t now = start; !g_stop && now < end; now = rte_rdtsc()) {
        if (pps != 0) {  // the next burst is due when the frames sent so far have had their time
            uint64_t due =
                paced_from +
                static_cast<uint64_t>(static_cast<unsigned __int128>(sent - paced_sent) * hz / pps);
            if (now > due + hz / 100) {  // more than 10 ms behind (descheduled): no catch-up burst
                paced_from = due = now;
                paced_sent = sent;
            }
            if (due > now) {
                rte_delay_us_sleep(static_cast<unsigned>((due - now) * 1000000 / hz) + 1);
                continue;
            }
        }
        for (unsigned i = 0; i < 32; ++i) {
            burst[i] = templates[at];
            rte_mbuf_refcnt_update(burst[i], 1);
            if (++at == templates.size()) at = 0;
        }
        uint16_t ok = rte_eth_tx_burst(0, 0, burst, 32);
        for (unsigned i = ok; i < 32; ++i) rte_mbuf_refcnt_update(burst[i], -1);
        // The unsent ones are sent next time round, in order.
        at = (at + templates.size() - (32 - ok) % templates.size()) % templates.size();
        sent += ok;
        if (now >= next_print) {
            std::printf("tx %llu pps\n", static_cast<unsigned long long>(sent - last_sent));
            std::fflush(stdout);
            last_sent = sent;
            next_print += hz;
        }
    }
    const double elapsed = static_cast<double>(rte_rdtsc() - start) / static_cast<double>(hz);
    std::printf("{\"sent\": %llu, \"seconds\": %.3f, \"pps\": %.0f}\n",
                static_cast<unsigned long long>(sent), elapsed,
                static_cast<double>(sent) / elapsed);
    close_port(0);
    for (rte_mbuf *m : templates) rte_pktmbuf_free(m);
    rte_mempool_free(pool);
    rte_mempool_free(rx_pool);
    return 0;
}

struct Options {
    std::string pcap;
    double seconds = 10, wait_link_s = 30;
    uint64_t pps = 0;  // 0: as fast as the port takes them
};

constexpr uint64_t kNsPerSecond = 1000000000;

// Our options, after "--": each takes a value, and times are read strictly
// (dataplane/api/numbers.h). False, with the reason printed, on anything else.
bool parse_options(int argc, char **argv, Options *o) {
    for (int i = 0; i < argc; i += 2) {
        const std::string option = argv[i];
        if (option != "--pcap" && option != "--seconds" && option != "--wait-link" &&
            option != "--pps") {
            std::fprintf(stderr, "floodgate-tx: unknown option '%s'\n", option.c_str());
            return false;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "floodgate-tx: %s needs a value\n", option.c_str());
            return false;
        }
        if (option == "--pcap") {
            o->pcap = argv[i + 1];
            continue;
        }
        if (option == "--pps") {  // 1 frame a second up to 100 Mpps
            if (!floodgate::uint_option("floodgate-tx", "--pps", argv[i + 1], 1, 100000000,
                                        &o->pps))
                return false;
            continue;
        }
        // Up to a day of sending, up to an hour of waiting for the link.
        const uint64_t hi_ns = (option == "--seconds" ? 86400 : 3600) * kNsPerSecond;
        std::string why;
        const std::optional<uint64_t> ns =
            floodgate::parse_seconds_ns(argv[i + 1], kNsPerSecond / 10, hi_ns, &why);
        if (!ns) {
            std::fprintf(stderr, "floodgate-tx: %s %s\n", option.c_str(), why.c_str());
            return false;
        }
        (option == "--seconds" ? o->seconds : o->wait_link_s) = static_cast<double>(*ns) / 1e9;
    }
    if (o->pcap.empty()) {
        std::fputs("floodgate-tx: --pcap is required\n", stderr);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 3 && std::string_view(argv[1]) == "--memory-mb") {  // before any EAL
        const auto frames = load_frames(argv[2]);
        if (!frames) return 1;
        std::printf("%llu\n",
                    static_cast<unsigned long long>(eal_memory_mb(template_pool(*frames))));
        return 0;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    // A memif server, as floodgate-tx is in perf/harness.py, sends while its peer goes away.
    if (const std::string note = floodgate::preload_port_plugins(); !note.empty())
        std::fprintf(stderr, "floodgate-tx: warning: %s\n", note.c_str());
    int used = rte_eal_init(argc, argv);
    if (used < 0) {
        std::fprintf(stderr, "floodgate-tx: EAL: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    Options opt;
    int rc = 2;
    if (!parse_options(argc - used - 1, argv + used + 1, &opt))
        std::fputs(
            "usage: floodgate-tx [EAL options] -- --pcap FILE [--seconds S] "
            "[--wait-link S] [--pps N]\n",
            stderr);
    else
        rc = run(opt.pcap, opt.seconds, opt.wait_link_s, opt.pps);
    rte_eal_cleanup();
    return rc;
}
