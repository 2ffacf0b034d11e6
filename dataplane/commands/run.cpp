#include "dataplane/commands/run.h"

#include <getopt.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/stats_rates.h"
#include "dataplane/api/stats_text.h"
#include "dataplane/api/unix_socket.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/live/live_stats.h"
#include "dataplane/live/port.h"
#include "dataplane/live/worker.h"
#include "dataplane/pipeline/eal.h"
#include "dataplane/pipeline/stats_json.h"
#include "dataplane/service/service.h"
#include "dataplane/service/telemetry.h"
#include "rules/load.h"

#if FG_HAVE_XDP
#include "dataplane/service/xdp_feed.h"
#endif

namespace floodgate {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop.store(true, std::memory_order_relaxed);
}

struct RunOptions {
    std::string config;
    std::string stats;
    std::string control = kDefaultDataplaneSocket;
    int outside = 0;
    int inside = -1;  // -1: port 1 when there are two ports, else one-port mode
    double stats_interval_s = 0;
    uint64_t merge_interval_ns = 1000000;
    unsigned mbufs = 0;  // 0: enough for every RX ring, computed from the workers
    unsigned mbuf_size = RTE_MBUF_DEFAULT_BUF_SIZE;
    std::string xdp_pin_dir;  // empty: the default (bpf/xdp_tier.h)
};

void usage(std::FILE *to) {
    std::fputs(
        "usage: floodgate run [EAL options] -- --config RULES.yaml\n"
        "           [--outside PORT] [--inside PORT] [--stats-interval SECONDS]\n"
        "           [--stats STATS.json] [--merge-interval-us US] [--control SOCKET|none]\n"
        "           [--mbufs N] [--mbuf-size BYTES] [--xdp-pin-dir DIR]\n"
        "Filters frames received on the outside port and sends the passed ones out of the inside\n"
        "port unchanged; frames from the inside go out of the outside port unfiltered. With one\n"
        "port (or --inside equal to --outside) passed frames leave by the port they came in on.\n"
        "One worker per worker lcore, each with its own RX/TX queue pair on every port.\n"
        "SIGINT/SIGTERM stop it cleanly; --stats writes the same JSON as replay on exit.\n"
        "With several workers, their consumption is merged every --merge-interval-us (1000).\n"
        "floodctl's daemon changes rules and overrides through --control (default\n"
        "/run/floodgate/dataplane.sock, mode 0600); filtering never waits for it.\n"
        "--mbufs and --mbuf-size (data room, headroom included, like testpmd's) size the mbuf\n"
        "pool; by default it holds every RX ring full with 2176-byte mbufs.\n"
        "On net_af_xdp with xdp_prog=.../floodgate_xdp.bpf.o, the XDP tier: its maps (pinned\n"
        "in --xdp-pin-dir, /sys/fs/bpf/floodgate) hold the allow and block lists and overrides,\n"
        "and the sources that rules with `escalate` keep refusing.\n",
        to);
}

bool parse_options(int argc, char **argv, RunOptions *o) {
    static const option longopts[] = {{"config", required_argument, nullptr, 'c'},
                                      {"outside", required_argument, nullptr, 'o'},
                                      {"inside", required_argument, nullptr, 'i'},
                                      {"stats-interval", required_argument, nullptr, 'I'},
                                      {"stats", required_argument, nullptr, 's'},
                                      {"merge-interval-us", required_argument, nullptr, 'm'},
                                      {"control", required_argument, nullptr, 'C'},
                                      {"mbufs", required_argument, nullptr, 'N'},
                                      {"mbuf-size", required_argument, nullptr, 'S'},
                                      {"xdp-pin-dir", required_argument, nullptr, 'X'},
                                      {"help", no_argument, nullptr, 'h'},
                                      {nullptr, 0, nullptr, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "c:o:i:I:s:h", longopts, nullptr)) != -1;) {
        uint64_t n;
        switch (c) {
            case 'c':
                o->config = optarg;
                break;
            case 'o':
                if (!uint_option("floodgate run", "--outside", optarg, 0, RTE_MAX_ETHPORTS - 1, &n))
                    return false;
                o->outside = static_cast<int>(n);
                break;
            case 'i':
                if (!uint_option("floodgate run", "--inside", optarg, 0, RTE_MAX_ETHPORTS - 1, &n))
                    return false;
                o->inside = static_cast<int>(n);
                break;
            case 'I': {
                // From 0.1 s, a line per poll of the main loop at most, to a day. 0 is refused
                // rather than read as "never": leaving the option out says that.
                std::string why;
                const std::optional<uint64_t> ns =
                    parse_seconds_ns(optarg, 100000000, 86400 * 1000000000ull, &why);
                if (!ns) {
                    std::fprintf(stderr, "floodgate run: --stats-interval %s\n", why.c_str());
                    return false;
                }
                o->stats_interval_s = static_cast<double>(*ns) / 1e9;
                break;
            }
            case 's':
                o->stats = optarg;
                break;
            case 'C':
                o->control = optarg;
                break;
            case 'N':
                if (!uint_option("floodgate run", "--mbufs", optarg, 1024, 1ull << 30, &n))
                    return false;
                o->mbufs = static_cast<unsigned>(n);
                break;
            case 'S':
                if (!uint_option("floodgate run", "--mbuf-size", optarg, RTE_PKTMBUF_HEADROOM + 64,
                                 65535, &n))
                    return false;
                o->mbuf_size = static_cast<unsigned>(n);
                break;
            case 'X':
                o->xdp_pin_dir = optarg;
                break;
            case 'm':
                if (!uint_option("floodgate run", "--merge-interval-us", optarg, 1, 10000000, &n))
                    return false;
                o->merge_interval_ns = n * 1000;
                break;
            case 'h':
                usage(stdout);
                std::exit(0);
            default:
                return false;
        }
    }
    if (o->config.empty()) {
        std::fputs("floodgate run: --config is required\n", stderr);
        return false;
    }
    return true;
}

int fail(const std::string &message) {
    std::fprintf(stderr, "floodgate run: %s\n", message.c_str());
    return 1;
}

uint64_t g_start_tsc = 0;

int launch_worker(void *arg) {
    static_cast<Worker *>(arg)->run(g_start_tsc);
    return 0;
}

// --stats-interval: what the interval since the last line did, as rates, under the time it
// ends; the counters' totals are for floodctl and the exit summary.
class IntervalPrinter {
  public:
    // Never throws: a line it cannot make is a line saying why (the run goes on).
    void print(const LiveRuleSet &rules, const LiveView &view) {
        const std::string when = utc_text(unix_now_ns() / 1e9);
        try {
            nlohmann::json now;
            rules.with_current([&](const RuleSet &rs) { now = live_stats(rs, view, 0); });
            now["sampled_ns"] = monotonic_now_ns();
            const nlohmann::json rates = stats_rates(last_, now);
            if (rates.is_null()) {
                std::printf("[%s] stats every interval from now on, as rates\n", when.c_str());
            } else {
                // The exact rate of frames the workers took from the outside port first, for
                // scripts (perf/harness.py reads it); what the port missed is on its own line.
                const nlohmann::json &d = rates["directions"];
                const auto pps = [&](const char *direction, const char *field) {
                    return d.value(direction, nlohmann::json::object()).value(field, 0.0);
                };
                std::printf(
                    "[%s] over %.2f s: outside rx %.0f pps; inside->outside %spps; tx failed "
                    "%spps\n%s",
                    when.c_str(), rates["interval_s"].get<double>(), rates.value("packets", 0.0),
                    si(pps("inside_to_outside", "rx_pps")).c_str(),
                    si(pps("outside_to_inside", "tx_failed_pps") +
                       pps("inside_to_outside", "tx_failed_pps") +
                       pps("answers_to_outside", "tx_failed_pps"))
                        .c_str(),
                    rates_text(rates).c_str());
            }
            last_ = std::move(now);
        } catch (const std::exception &e) {
            std::printf("[%s] stats: %s\n", when.c_str(), e.what());
        }
    }

  private:
    nlohmann::json last_;
};

#if FG_HAVE_XDP
// The XDP feed with what its ticks need from the run: the live stats for escalation.
class XdpFeedHandle {
  public:
    explicit XdpFeedHandle(std::unique_ptr<XdpFeed> feed) : feed_(std::move(feed)) {}
    void tick(Service &service, const LiveRuleSet &rules, const LiveView &view) {
        feed_->tick(
            monotonic_now_ns(), service.version(), [&] { return service.running(); },
            [&] {
                nlohmann::ordered_json stats;
                try {
                    rules.with_current([&](const RuleSet &rs) {
                        stats = live_stats(rs, view, HeavyHitters::kCounters);
                    });
                } catch (const std::exception &) {
                    // counters busy: no sample this second
                }
                return stats;
            });
    }
    nlohmann::ordered_json stats() const { return feed_->stats(); }

  private:
    std::unique_ptr<XdpFeed> feed_;
};

bool open_xdp_tier(uint16_t port, const RunOptions &opt, const Config &config,
                   std::unique_ptr<XdpFeedHandle> *out, std::string *error) {
    const AfXdpPort a = af_xdp_port(port);
    bool escalates = false;
    for (const Rule &r : config.rules) escalates = escalates || r.escalate.enabled();
    if (!a.af_xdp || !a.custom_program) {
        if (escalates)
            std::printf(
                "note: rules escalate, but there is no XDP tier (the outside port is not "
                "net_af_xdp with xdp_prog=.../floodgate_xdp.bpf.o): nothing is escalated\n");
        return true;
    }
    // Someone else's program: theirs to run; floodgate filters what reaches it as always.
    if (const std::string name = XdpTier::attached_program(a.iface); name != kXdpProgramName) {
        std::printf("note: %s runs the XDP program '%s', not floodgate's: no XDP tier\n",
                    a.iface.c_str(), name.c_str());
        return true;
    }
    const std::string pin_dir = opt.xdp_pin_dir.empty() ? kXdpPinDir : opt.xdp_pin_dir;
    std::unique_ptr<XdpTier> tier = XdpTier::adopt(a.iface, pin_dir, error);
    if (!tier) {
        *error = "the XDP tier: " + *error;
        return false;
    }
    std::printf("xdp: floodgate's program on %s, maps pinned in %s\n", a.iface.c_str(),
                pin_dir.c_str());
    *out = std::make_unique<XdpFeedHandle>(
        std::make_unique<XdpFeed>(std::move(tier), a.iface, pin_dir));
    return true;
}
#else
class XdpFeedHandle {
  public:
    void tick(Service &, const LiveRuleSet &, const LiveView &) {}
    nlohmann::ordered_json stats() const { return {}; }
};
bool open_xdp_tier(uint16_t port, const RunOptions &, const Config &config,
                   std::unique_ptr<XdpFeedHandle> *, std::string *) {
    if (af_xdp_port(port).custom_program)
        std::printf(
            "note: this floodgate was built without the XDP tier (no clang, bpftool or "
            "libbpf): the port's program gets no maps from it\n");
    (void)config;
    return true;
}
#endif

// Everything after EAL init, so that every DPDK resource is released before rte_eal_cleanup.
int run_dataplane(const RunOptions &opt, const RulesFile &source) {
    const Config &config = source.config;
    const unsigned n_workers = rte_lcore_count() - 1;
    if (n_workers == 0)
        return fail(
            "no worker lcore: give at least two cores (-l 0-1); the main lcore does no packet "
            "work");
    const uint16_t n_ports = rte_eth_dev_count_avail();
    if (n_ports == 0) return fail("no ports: bind a NIC to DPDK or add one with --vdev");
    WorkerPorts ports;
    ports.outside = static_cast<uint16_t>(opt.outside);
    ports.inside =
        static_cast<uint16_t>(opt.inside >= 0 ? opt.inside : (n_ports > 1 ? 1 : opt.outside));
    const bool one_port = ports.inside == ports.outside;

    std::string error;
    RuleSetOptions rule_options;
    rule_options.cores = n_workers;
    std::unique_ptr<RuleSet> first = RuleSet::build(config, rule_options, &error);
    if (!first) return fail(error + " (not enough hugepage memory? see scripts/hugepages.sh, -m)");
    LiveRuleSet rules(n_workers, std::move(first));
    if (!rules.ok()) return fail("cannot allocate the ruleset's RCU state");
    LineServer control;
    if (opt.control != "none" && !control.listen(opt.control, &error)) return fail(error);

    // Mbufs: every RX ring full on both ports, plus a burst in flight and a cache per worker.
    const unsigned n_mbufs =
        opt.mbufs != 0 ? opt.mbufs : 2 * n_workers * (1024 + 1024 + kMaxBurst + 256) + 1024;
    std::unique_ptr<rte_mempool, void (*)(rte_mempool *)> pool(
        rte_pktmbuf_pool_create("fg_mbufs", n_mbufs, 256, 0, static_cast<uint16_t>(opt.mbuf_size),
                                static_cast<int>(rte_socket_id())),
        rte_mempool_free);
    if (!pool)
        return fail(std::string("cannot create the mbuf pool of ") + std::to_string(n_mbufs) +
                    " mbufs: " + rte_strerror(rte_errno) + " (not enough hugepage memory?)");

    std::vector<uint16_t> started;
    int rc = 0;
    for (uint16_t port : {ports.outside, ports.inside}) {
        if (!started.empty() && port == started[0]) continue;
        PortFeatures features;
        if (!setup_port({port, static_cast<uint16_t>(n_workers)}, pool.get(), &features, &error)) {
            if (rte_eth_dev_is_valid_port(port)) close_port(port);  // configured, maybe not started
            rc = fail(error);
            break;
        }
        started.push_back(port);
        std::printf("port %u: %u queue pairs, RSS %s, answers' checksums %s\n", port, n_workers,
                    rss_mode_name(features.rss),
                    features.tx_checksum_offload ? "offloaded to the port" : "in software");
        if (port == ports.outside) ports.outside_checksum_offload = features.tx_checksum_offload;
    }

    // The XDP tier, when the outside port is net_af_xdp running floodgate's program.
    std::unique_ptr<XdpFeedHandle> xdp;
    if (rc == 0 && !open_xdp_tier(ports.outside, opt, config, &xdp, &error)) rc = fail(error);

    // One table per worker, allocated on its socket; one secret hash seed for the process
    // (so per-core top-offender summaries can be merged).
    const HashSeed seed = random_hash_seed();
    // And one secret syn-auth cookie key, drawn the same way: every worker must accept the
    // RST to a SYN-ACK another worker sent.
    const HashSeed cookie_seed = random_hash_seed();
    const CookieKey cookie_key{cookie_seed.k[0], cookie_seed.k[1]};
    // Records a worker may publish per merge: one per key it admitted since the last one.
    std::unique_ptr<LiveMerger> merger;
    if (rc == 0 && n_workers > 1) {
        merger = std::make_unique<LiveMerger>(n_workers, 2 * kMaxUnpublishedKeys);
        if (!merger->ok())
            rc = fail(std::string("cannot create the merge rings: ") + rte_strerror(rte_errno));
    }
    std::vector<std::unique_ptr<LimitTable>> tables;
    std::vector<std::unique_ptr<Pipeline>> pipelines;
    std::vector<std::unique_ptr<Worker>> workers;
    LiveView view;
    view.workers = &workers;
    view.merger = merger.get();
    view.outside = ports.outside;
    view.inside = ports.inside;
    view.merge_interval_ns = opt.merge_interval_ns;
    if (rc == 0) {
        uint16_t queue = 0;
        unsigned lcore;
        RTE_LCORE_FOREACH_WORKER(lcore) {
            TableMemory mem = dpdk_table_memory(static_cast<int>(rte_lcore_to_socket_id(lcore)));
            tables.push_back(
                std::make_unique<LimitTable>(config.table_entries_per_core, seed, mem));
            if (!tables.back()->ok()) {
                rc = fail("cannot allocate a limiter table of " +
                          std::to_string(LimitTable::bytes_for(config.table_entries_per_core)) +
                          " bytes for lcore " + std::to_string(lcore) +
                          " (not enough hugepage memory?)");
                break;
            }
            pipelines.push_back(
                std::make_unique<Pipeline>(rules.current(), tables.back().get(), queue));
            pipelines.back()->set_cookie_key(cookie_key);
            const MergeRings *rings = merger ? &merger->rings(queue) : nullptr;
            workers.push_back(std::make_unique<Worker>(
                WorkerPorts{ports.outside, ports.inside, queue, ports.outside_checksum_offload},
                pipelines.back().get(), &rules, &g_stop, rings, opt.merge_interval_ns));
            view.lcores.push_back(lcore);
            ++queue;
            if (!workers.back()->ok()) {
                rc = fail("cannot allocate TX buffers");
                break;
            }
        }
    }

    if (rc == 0) {
        std::printf("floodgate: %u workers, %s, %zu rules\n", n_workers,
                    one_port ? "one-port mode" : "inline between two ports", config.rules.size());
        std::fflush(stdout);
        g_start_tsc = rte_rdtsc();
        size_t w = 0;
        unsigned lcore;
        RTE_LCORE_FOREACH_WORKER(lcore) {
            rte_eal_remote_launch(launch_worker, workers[w++].get(), lcore);
        }

        // The control thread: builds and swaps rulesets for floodctl and expires overrides.
        // It is not an lcore; the workers never wait for it.
        ServiceInfo info;
        info.workers = n_workers;
        info.instance = std::to_string(getpid()) + "-" + std::to_string(unix_now_ns());
        Service service(&rules, source, info, [&](const RuleSet &rs, unsigned top) {
            nlohmann::ordered_json j = live_stats(rs, view, top);
            if (xdp) j["xdp"] = xdp->stats();
            return j;
        });
        // The control thread's housekeeping, every 100 ms: overrides' expiry, the XDP maps.
        const auto housekeeping = [&] {
            service.expire_overrides();
            if (xdp) xdp->tick(service, rules, view);
        };
        attach_telemetry(&service);
        std::thread service_thread;
        if (!control.path().empty()) {
            std::printf("control socket %s\n", control.path().c_str());
            service_thread = std::thread([&] {
                rte_thread_register();  // DPDK memory calls (rte_lpm_create) from this thread
                control.serve(
                    g_stop, [&](const std::string &line) { return service.handle(line); },
                    housekeeping, 100);
                rte_thread_unregister();
            });
        } else {
            service_thread = std::thread([&] {
                while (!g_stop.load()) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    housekeeping();
                }
            });
        }

        IntervalPrinter interval;
        if (opt.stats_interval_s > 0) interval.print(rules, view);
        auto next = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(opt.stats_interval_s));
        // The main lcore does no packet work: it forwards merge records and prints stats.
        const auto poll = std::chrono::nanoseconds(
            merger ? std::min<uint64_t>(opt.merge_interval_ns / 2, 100000000) : 100000000);
        while (!g_stop.load()) {
            std::this_thread::sleep_for(poll);
            if (merger) merger->forward();
            if (opt.stats_interval_s > 0 && std::chrono::steady_clock::now() >= next) {
                next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(opt.stats_interval_s));
                interval.print(rules, view);
                std::fflush(stdout);
            }
        }
        service_thread.join();
        attach_telemetry(nullptr);
        rte_eal_mp_wait_lcore();
        nlohmann::ordered_json stats;
        rules.with_current(
            [&](const RuleSet &rs) { stats = live_stats(rs, view, kTopRefusedReported); });
        if (xdp) stats["xdp"] = xdp->stats();
        if (!opt.stats.empty()) {
            if (!write_stats(opt.stats, stats)) rc = fail(opt.stats + ": cannot write stats");
        }
        std::fputs(stats_text(nlohmann::json(stats)).c_str(), stdout);
    }

    // Release in reverse order of creation: workers, merge rings, tables, ports, then the pool
    // and the rules.
    workers.clear();
    merger.reset();
    xdp.reset();  // before the port: closing it detaches the program
    pipelines.clear();
    tables.clear();
    for (auto it = started.rbegin(); it != started.rend(); ++it) close_port(*it);
    return rc;
}

// Whether argv names one of floodgate run's own options before any "--" (the EAL would refuse
// it with its whole help text, which says nothing of floodgate's).
const char *own_option_before_separator(int argc, char **argv) {
    static const char *const kOwn[] = {
        "--config",  "--outside", "--inside",    "--stats-interval", "--stats",
        "--control", "--mbufs",   "--mbuf-size", "--xdp-pin-dir",    "--merge-interval-us"};
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") return nullptr;
        for (const char *own : kOwn)
            if (a == own || (a.starts_with(own) && a[std::strlen(own)] == '=')) return argv[i];
    }
    return nullptr;
}

}  // namespace

int run_main(int argc, char **argv) {
    // EAL options come first, ours after "--", as in every DPDK application. Help is
    // floodgate's own, wherever it is asked for (the EAL's is `dpdk-testpmd --help`'s).
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            std::fputs(
                "EAL options (before --): -l CORES or --lcores MAP, -a PCI (--allow), --vdev "
                "DEVICE,\n--no-huge -m MB, --file-prefix NAME, ...; DPDK's list: "
                "https://doc.dpdk.org/guides-22.11/linux_gsg/linux_eal_parameters.html\n",
                stdout);
            return 0;
        }
    if (const char *own = own_option_before_separator(argc, argv)) {
        std::fprintf(stderr,
                     "floodgate run: %s is floodgate's option: put it after `--`, the EAL's "
                     "before it (floodgate run [EAL options] -- --config RULES.yaml ...)\n",
                     own);
        return 2;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    int eal_argc = rte_eal_init(argc, argv);
    if (eal_argc < 0)
        return fail(std::string("DPDK EAL initialisation failed: ") + rte_strerror(rte_errno));
    int app_argc = argc - eal_argc;
    char **app_argv = argv + eal_argc;
    // getopt wants a program name first; "--" (consumed by the EAL) left us at argv[eal_argc].
    app_argv[0] = argv[0];

    RunOptions opt;
    int rc;
    if (!parse_options(app_argc, app_argv, &opt)) {
        usage(stderr);
        rc = 2;
    } else {
        try {
            rc = run_dataplane(opt, load_rules_file(opt.config));
        } catch (const ConfigError &e) {
            rc = fail(e.what());
        }
    }
    rte_eal_cleanup();
    return rc;
}

}  // namespace floodgate
