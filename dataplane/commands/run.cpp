// `floodgate run` once the EAL is up: what it holds (dataplane/live/dataplane.h), the control
// thread, the main lcore's loop and the stats on exit.
#include "dataplane/commands/run.h"

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include "dataplane/api/stats_rates.h"
#include "dataplane/api/stats_text.h"
#include "dataplane/api/unix_socket.h"
#include "dataplane/commands/options.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/live/dataplane.h"
#include "dataplane/live/live_stats.h"
#include "dataplane/live/port_plugins.h"
#include "dataplane/pipeline/refusal_samples.h"
#include "dataplane/pipeline/stats_json.h"
#include "dataplane/service/nic_feed.h"
#include "dataplane/service/service.h"
#include "dataplane/service/telemetry.h"

#if FG_HAVE_XDP
#include "dataplane/service/xdp_feed.h"
#endif

namespace floodgate {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop.store(true, std::memory_order_relaxed);
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

// The live stats escalation reads: every rule's top refused sources (empty when the counters
// are busy: no sample this second).
nlohmann::ordered_json escalation_stats(const LiveRuleSet &rules, const LiveView &view) {
    nlohmann::ordered_json stats;
    try {
        rules.with_current(
            [&](const RuleSet &rs) { stats = live_stats(rs, view, HeavyHitters::kCounters); });
    } catch (const std::exception &) {
    }
    return stats;
}

// The workers' sampled refusals, named by rule and source; samples of a ruleset swapped out
// since are left out (their rule index is the old ruleset's). Taken once a tick for both tiers.
RefusalBatch refusal_batch(const LiveRuleSet &rules, Dataplane &dataplane) {
    RefusalBatch batch;
    std::vector<RefusalSample> raw;
    dataplane.take_refusal_samples(&raw, &batch.taken, &batch.lost);
    if (raw.empty()) return batch;
    rules.with_current([&](const RuleSet &rs) {
        for (const RefusalSample &s : raw) {
            if (s.serial != static_cast<uint32_t>(rs.serial()) || s.rule >= rs.rules().size())
                continue;
            Prefix p{s.family, s.prefix_len, {}};
            std::memcpy(p.addr.data(), &s.addr_hi, 8);
            std::memcpy(p.addr.data() + 8, &s.addr_lo, 8);
            batch.samples.push_back({rs.rules()[s.rule].name, p, RefusalSampler::kMeanGap});
        }
    });
    return batch;
}

#if FG_HAVE_XDP
// The XDP feed with what its ticks need from the run: the live stats for escalation.
class XdpFeedHandle {
  public:
    explicit XdpFeedHandle(std::unique_ptr<XdpFeed> feed) : feed_(std::move(feed)) {}
    void tick(Service &service, const LiveRuleSet &rules, Dataplane &dataplane,
              const RefusalBatch &batch) {
        feed_->tick(
            monotonic_now_ns(), service.version(), [&] { return service.running(); },
            [&] { return escalation_stats(rules, dataplane.view()); }, [&] { return batch; });
    }
    nlohmann::ordered_json stats() const { return feed_->stats(); }
    // The cluster's shared escalations (XdpFeed::take_escalations, add_told).
    std::vector<std::pair<Prefix, uint64_t>> take_escalations() {
        std::vector<std::pair<Prefix, uint64_t>> out;
        for (const XdpFeed::Told &t : feed_->take_escalations()) out.emplace_back(t.key, t.ttl_ns);
        return out;
    }
    bool escalate(const Prefix &p, uint64_t ttl_ns) {
        return feed_->add_told({p, ttl_ns}, monotonic_now_ns());
    }

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
    void tick(Service &, const LiveRuleSet &, Dataplane &, const RefusalBatch &) {}
    nlohmann::ordered_json stats() const { return {}; }
    std::vector<std::pair<Prefix, uint64_t>> take_escalations() { return {}; }
    bool escalate(const Prefix &, uint64_t) { return false; }
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

// The NIC tier, when the rules file has a nic_tier section: on the outside port, what an earlier
// run left flushed before the workers run.
std::unique_ptr<NicFeed> open_nic_tier(uint16_t port, const Config &config) {
    if (!config.nic_tier.set) return nullptr;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    auto feed = std::make_unique<NicFeed>(port, name, config.nic_tier);
    feed->flush_at_start();
    const NicTierOptions &o = config.nic_tier;
    std::printf("nic: the tier on port %u (%s): at most %u rules, %u new a second, each %llu s\n",
                port, name, o.max_rules, o.inserts_per_second,
                static_cast<unsigned long long>(o.ttl_ns / 1'000'000'000ull));
    // What the port says of the tier's rule, before a source depends on it.
    std::string why;
    const NicAnswer a = NicFlowPort(port).validate(*parse_prefix("192.0.2.0/24", &why));
    if (!a.accepted)
        std::printf("nic: port %s refuses the tier's rules (%s: %s): sources stay below\n", name,
                    nic_refusal_name(a.refusal), a.message.c_str());
    return feed;
}

// The tiers a run may hold beside the dataplane: the XDP tier's feed and the NIC tier's.
struct Tiers {
    XdpFeedHandle *xdp = nullptr;
    NicFeed *nic = nullptr;
    void add_stats(nlohmann::ordered_json *stats) const {
        if (xdp) (*stats)["xdp"] = xdp->stats();
        if (nic) (*stats)["nic_tier"] = nic->stats();
    }
};

int failed(const std::string &message) {
    return fail(kRunCommand, message);
}

// Every override (floodctl allow or block add, another box's allow) rebuilds the rules' prefix
// tables beside the running ones, which stay until the workers let go of them. With --no-huge
// the EAL's memory is all there is (-m), so what that needs is found at start, once the ports,
// pools and tables hold theirs, by building the tables: those holding an override of each
// family (the longest: the most tbl8 groups), twice over (the running ones and their rebuild),
// less what the running tables take now. (Hugepage memory grows on demand: not checked. The
// bytes free, not one block: a heap too fragmented for a table still fails that rebuild.)
bool room_for_overrides(const Config &config, std::string *error) {
    if (rte_eal_has_hugepages()) return true;
    const int socket = static_cast<int>(rte_socket_id());
    std::string why;
    std::vector<PrefixOverride> overrides;
    for (const char *text : {"192.0.2.1/32", "2001:db8::1/128"})
        overrides.push_back({*parse_prefix(text, &why), PrefixVerdict::allow, 0});
    const std::optional<uint64_t> with =
        RuleSet::measured_table_bytes(config, overrides, socket, &why);
    const std::optional<uint64_t> without =
        with ? RuleSet::measured_table_bytes(config, {}, socket, &why) : std::nullopt;
    rte_malloc_socket_stats heap{};
    if (with && without && rte_malloc_get_socket_stats(socket, &heap) == 0 &&
        heap.heap_freesz_bytes >= 2 * *with - *without)
        return true;
    const std::string need =
        with && without ? std::to_string(((2 * *with - *without) >> 20) + 1) + " MiB" : "more";
    *error = "an override would not fit: the rules' prefix tables rebuilt for one need " + need +
             " of DPDK memory, and " + std::to_string(heap.heap_freesz_bytes >> 20) +
             " MiB is left" + (why.empty() ? "" : " (" + why + ")") + "; give more with -m";
    return false;
}

// Telemetry's commands read through the service while it lives.
class TelemetryAttached {
  public:
    explicit TelemetryAttached(Service *service) { attach_telemetry(service); }
    ~TelemetryAttached() { attach_telemetry(nullptr); }
    TelemetryAttached(const TelemetryAttached &) = delete;
    TelemetryAttached &operator=(const TelemetryAttached &) = delete;
};

// A thread of the run, joined on destruction: the run is stopped first (it already is, unless
// the run ends early).
class RunThread {
  public:
    explicit RunThread(std::function<void()> body) : thread_(std::move(body)) {}
    ~RunThread() {
        g_stop.store(true);
        thread_.join();
    }
    RunThread(const RunThread &) = delete;
    RunThread &operator=(const RunThread &) = delete;

  private:
    std::thread thread_;
};

// The stats a run writes to --stats: the live stats with every top offender it reports, and
// the tiers'.
nlohmann::ordered_json run_stats(const LiveRuleSet &rules, const LiveView &view,
                                 const Tiers &tiers) {
    nlohmann::ordered_json stats;
    rules.with_current(
        [&](const RuleSet &rs) { stats = live_stats(rs, view, kTopRefusedReported); });
    tiers.add_stats(&stats);
    return stats;
}

// --stats is written while the run goes on too, every --stats-interval (else every 10 s), so
// that a crash loses at most one interval's counts. By the control thread, so that a slow
// reading or disk never holds up the main lcore.
class StatsSaver {
  public:
    StatsSaver(const RunOptions &opt, const LiveRuleSet &rules, const LiveView &view,
               const Tiers &tiers)
        : opt_(opt), rules_(rules), view_(view), tiers_(tiers) {
        const double s = opt.stats_interval_s > 0 ? opt.stats_interval_s : 10.0;
        every_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(s));
        next_ = std::chrono::steady_clock::now() + every_;
    }
    void tick() {
        const auto now = std::chrono::steady_clock::now();
        if (opt_.stats.empty() || now < next_) return;
        next_ = now + every_;
        try {
            if (!write_stats(opt_.stats, run_stats(rules_, view_, tiers_)))
                std::printf("%s: cannot write stats\n", opt_.stats.c_str());
        } catch (const std::exception &e) {  // a core's counters busy: saved next time
            std::printf("%s: not saved this time: %s\n", opt_.stats.c_str(), e.what());
        }
    }

  private:
    const RunOptions &opt_;
    const LiveRuleSet &rules_;
    const LiveView &view_;
    const Tiers tiers_;
    std::chrono::steady_clock::duration every_;
    std::chrono::steady_clock::time_point next_;
};

// The main lcore does no packet work: it watches the ports and prints stats, until the run is
// stopped.
void main_loop(const RunOptions &opt, const LiveRuleSet &rules, Dataplane &dataplane) {
    IntervalPrinter interval;
    if (opt.stats_interval_s > 0) interval.print(rules, dataplane.view());
    const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(opt.stats_interval_s));
    auto next = std::chrono::steady_clock::now() + every;
    while (!g_stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        dataplane.port_watch()->poll(monotonic_now_ns());
        if (opt.stats_interval_s > 0 && std::chrono::steady_clock::now() >= next) {
            next += every;
            interval.print(rules, dataplane.view());
            std::fflush(stdout);
        }
    }
}

// While the workers run: the control thread builds and swaps rulesets for floodctl and, every
// 100 ms, expires overrides and feeds the XDP maps (it is not an lcore; the workers never wait
// for it), and the main lcore loops. Returns once the run is stopped and the thread joined.
void serve(const RunOptions &opt, const RulesFile &source, LiveRuleSet &rules, LineServer &control,
           Dataplane &dataplane, const Tiers &tiers) {
    XdpFeedHandle *xdp = tiers.xdp;
    const LiveView &view = dataplane.view();
    ServiceInfo info;
    info.workers = static_cast<unsigned>(view.lcores.size());
    info.instance = std::to_string(getpid()) + "-" + std::to_string(unix_now_ns());
    info.steering_mode = view.steering_mode;
    Service service(&rules, source, info, [&](const RuleSet &rs, unsigned top) {
        nlohmann::ordered_json j = live_stats(rs, view, top);
        tiers.add_stats(&j);
        return j;
    });
    ClusterHooks cluster{
        [&](std::vector<SharedRecord> *out) { return dataplane.take_shared(out); },
        [&](const std::vector<Consumption> &charges) { dataplane.charge_cluster(charges); },
        &dataplane.first_table(), nullptr, nullptr};
    if (xdp) {  // escalations are shared only where there is a tier to put them in
        cluster.take_escalations = [xdp] { return xdp->take_escalations(); };
        cluster.escalate = [xdp](const Prefix &p, uint64_t ttl_ns) {
            return xdp->escalate(p, ttl_ns);
        };
    }
    service.attach_cluster(std::move(cluster));
    StatsSaver saver(opt, rules, view, tiers);
    const auto housekeeping = [&] {
        service.expire_overrides();
        service.cluster_tick();
        const RefusalBatch batch =
            xdp || tiers.nic ? refusal_batch(rules, dataplane) : RefusalBatch{};
        if (xdp) xdp->tick(service, rules, dataplane, batch);
        if (tiers.nic)
            tiers.nic->tick(
                monotonic_now_ns(), service.version(), [&] { return service.running(); },
                [&] { return escalation_stats(rules, view); }, batch);
        saver.tick();
    };
    const TelemetryAttached telemetry(&service);  // detached after the thread is joined
    if (!control.path().empty()) std::printf("control socket %s\n", control.path().c_str());
    const RunThread control_thread([&] {
        if (control.path().empty()) {
            while (!g_stop.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                housekeeping();
            }
            return;
        }
        rte_thread_register();  // DPDK memory calls (rte_lpm_create) from this thread
        control.serve(
            g_stop, [&](const std::string &line) { return service.answer(line); }, housekeeping,
            100);
        rte_thread_unregister();
    });
    main_loop(opt, rules, dataplane);
}

// The first ruleset again, now that the ports say how packets reach the workers, before any
// worker runs (the swap waits for none).
bool steer_rules(const Steering &steering, LiveRuleSet *rules, std::string *error) {
    std::unique_ptr<RuleSet> steered;
    rules->with_current([&](const RuleSet &first) {
        RuleSetOptions o;
        o.cores = first.cores();
        o.steering = steering;
        o.overrides = first.overrides();
        o.version = first.version();
        steered = RuleSet::build(first.config(), o, error);
    });
    if (!steered) return false;
    rules->swap(std::move(steered));
    return true;
}

// The startup log's steering lines: how packets reach their owners, and each rule's scope.
void print_steering(const LiveView &view, const LiveRuleSet &rules) {
    const Steering &s = view.steering;
    std::printf("steering: %s", view.steering_mode.c_str());
    if (s.by_source)
        std::printf(", each source prefix (IPv4 /%u, IPv6 /%u) on one worker%s", s.ipv4_len,
                    s.ipv6_len, s.replies_by_destination ? ", replies too" : "");
    if (!view.nic_refused.empty()) std::printf("; the NIC does not: %s", view.nic_refused.c_str());
    std::printf("\n");
    rules.with_current([&](const RuleSet &rs) {
        for (const CompiledRule &r : rs.rules())
            std::printf("  rule %s: %s\n", r.name.c_str(),
                        rule_scope(r, rs.steering(), rs.cores()).c_str());
    });
}

// syn-proxy sees a connection's two sides on one worker only: with one port there is no inside
// side, and with several workers the inside port must steer the servers' replies to the
// client's owner (NIC steering on both ports). Otherwise the dataplane makes no connection
// table and syn-proxy rules challenge as syn-auth does, which the operator is told at start
// (the rules are not refused: they keep working, the same for a reload that adds one).
void tell_syn_proxy(const Config &config, const DataplaneSetup &setup, const LiveView &view,
                    unsigned n_workers) {
    if (!has_syn_proxy(config)) return;
    const char *why =
        setup.inside == setup.outside ? "one-port mode has no inside port for the servers' side"
        : n_workers > 1 && !view.steering.replies_by_destination
            ? "with several workers the inside port must steer replies to the "
              "client's worker: NIC steering on both ports, the same RETA size"
        : config.proxy_connections_per_core == 0 ? "table.proxy_connections_per_core is 0"
                                                 : nullptr;
    if (why != nullptr)
        std::printf("syn-proxy: off (%s); syn-proxy rules challenge as syn-auth does\n", why);
}

// On exit, once the workers have returned: the stats, to --stats and summed up on stdout.
int exit_stats(const RunOptions &opt, const LiveRuleSet &rules, const LiveView &view,
               const Tiers &tiers) {
    const nlohmann::ordered_json stats = run_stats(rules, view, tiers);
    int rc = 0;
    if (!opt.stats.empty() && !write_stats(opt.stats, stats))
        rc = failed(opt.stats + ": cannot write stats");
    std::fputs(stats_text(nlohmann::json(stats)).c_str(), stdout);
    return rc;
}

}  // namespace

void stop_on_signals() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

int run_dataplane(const RunOptions &opt, const RulesFile &source) {
    const Config &config = source.config;
    const unsigned n_workers = rte_lcore_count() - 1;
    if (n_workers == 0)
        return failed(
            "no worker lcore: give at least two cores (-l 0-1); the main lcore does no packet "
            "work");
    const uint16_t n_ports = rte_eth_dev_count_avail();
    if (n_ports == 0) return failed("no ports: bind a NIC to DPDK or add one with --vdev");
    DataplaneSetup setup;
    setup.outside = static_cast<uint16_t>(opt.outside);
    setup.inside =
        static_cast<uint16_t>(opt.inside >= 0 ? opt.inside : (n_ports > 1 ? 1 : opt.outside));
    setup.workers = n_workers;
    setup.mbufs = opt.mbufs;
    setup.mbuf_size = opt.mbuf_size;
    setup.shape_share = opt.shape_share;
    setup.merge_interval_ns = opt.merge_interval_ns;
    setup.steering = opt.steering;
    setup.steering_prefix = steering_prefix(config);

    // What the run holds, each released when this returns, in reverse order of declaration.
    std::string error;
    RuleSetOptions rule_options;
    rule_options.cores = n_workers;
    std::unique_ptr<RuleSet> first = RuleSet::build(config, rule_options, &error);
    if (!first)
        return failed(error + " (not enough hugepage memory? see scripts/hugepages.sh, -m)");
    LiveRuleSet rules(n_workers, std::move(first));
    if (!rules.ok()) return failed("cannot allocate the ruleset's RCU state");
    LineServer control;
    if (opt.control != "none" && !control.listen(opt.control, &error)) return failed(error);
    Dataplane dataplane(setup, &rules, &g_stop);
    if (!dataplane.create_pool(&error)) return failed(error);
    for (uint16_t port : dataplane.ports()) {
        PortFeatures features;
        if (!dataplane.start_port(port, &features, &error)) return failed(error);
        std::printf("port %u: %u queue pairs, %s%s%s, answers' checksums %s\n", port, n_workers,
                    features.rss.c_str(),
                    features.rss_refused.empty() ? "" : "; refused: ", features.rss_refused.c_str(),
                    features.tx_checksum_offload ? "offloaded to the port" : "in software");
        if (const std::string note = port_driver_note(port); !note.empty())
            std::printf("%s\n", note.c_str());
    }
    if (!dataplane.choose_steering(&error)) return failed(error);
    if (dataplane.steering().by_source && !steer_rules(dataplane.steering(), &rules, &error))
        return failed(error);
    print_steering(dataplane.view(), rules);
    // The XDP tier, when the outside port is net_af_xdp running floodgate's program: released
    // before the dataplane closes the port (closing it detaches the program).
    std::unique_ptr<XdpFeedHandle> xdp;
    if (!open_xdp_tier(setup.outside, opt, config, &xdp, &error)) return failed(error);
    // The NIC tier's rules: withdrawn before the dataplane closes the port.
    const std::unique_ptr<NicFeed> nic = open_nic_tier(setup.outside, config);
    const Tiers tiers{xdp.get(), nic.get()};
    if (!dataplane.create_workers(config, &error)) return failed(error);
    if (!room_for_overrides(config, &error)) return failed(error);
    if (xdp || nic) dataplane.enable_refusal_samples();  // escalation's besides the summaries

    tell_syn_proxy(config, setup, dataplane.view(), n_workers);
    std::printf("floodgate: %u workers, %s, %zu rules\n", n_workers,
                setup.inside == setup.outside ? "one-port mode" : "inline between two ports",
                config.rules.size());
    std::fflush(stdout);
    dataplane.launch();
    // An error that ends the run early still leaves its counts (the threads are stopped and
    // joined by then).
    int rc = 0;
    try {
        serve(opt, source, rules, control, dataplane, tiers);
    } catch (const std::exception &e) {
        g_stop.store(true);
        rc = failed(std::string("stopped by an error: ") + e.what());
    }
    if (nic) std::printf("nic: %zu rules withdrawn\n", nic->stop());
    dataplane.wait();
    const int stats_rc = exit_stats(opt, rules, dataplane.view(), tiers);
    return rc != 0 ? rc : stats_rc;
}

}  // namespace floodgate
