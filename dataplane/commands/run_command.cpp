// `floodgate run`'s command line: the EAL's options first, floodgate's after "--", as in every
// DPDK application. The run itself is run.cpp's.
#include <rte_ethdev.h>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "dataplane/api/numbers.h"
#include "dataplane/commands/commands.h"
#include "dataplane/commands/options.h"
#include "dataplane/commands/run.h"
#include "dataplane/live/dataplane.h"

namespace floodgate {

namespace {

constexpr const char *kRunUsage =
    "usage: floodgate run [EAL options] -- --config RULES.yaml\n"
    "           [--outside PORT] [--inside PORT] [--stats-interval SECONDS]\n"
    "           [--stats STATS.json] [--merge-interval-us US] [--control SOCKET|none]\n"
    "           [--steering auto|nic|software|none]\n"
    "           [--mbufs N] [--mbuf-size BYTES] [--shape-share PERCENT] [--xdp-pin-dir DIR]\n"
    "Filters frames received on the outside port and sends the passed ones out of the inside\n"
    "port unchanged; frames from the inside go out of the outside port unfiltered. With one\n"
    "port (or --inside equal to --outside) passed frames leave by the port they came in on.\n"
    "One worker per worker lcore, each with its own RX/TX queue pair on every port.\n"
    "SIGINT/SIGTERM stop it cleanly; --stats writes the same JSON as replay on exit, and\n"
    "while it runs every --stats-interval (else every 10 s). A port whose link or kernel\n"
    "interface goes away is logged, counted and shown in the stats; the others go on.\n"
    "With several workers, each source prefix has one owner worker (--steering): the NIC's\n"
    "RSS where the outside port honours a source-prefix key, else software (auto); keys no\n"
    "one worker owns (aggregates, coarser prefixes; all with none) are merged every\n"
    "--merge-interval-us (1000).\n"
    "floodctl's daemon changes rules and overrides through --control (default\n"
    "/run/floodgate/dataplane.sock, mode 0600); filtering never waits for it.\n"
    "--mbufs and --mbuf-size (data room, headroom included, like testpmd's) size the mbuf\n"
    "pool; by default it holds every RX ring full with 2176-byte mbufs, plus --shape-share\n"
    "percent (25) for the packets shape rules hold, split evenly between the workers.\n"
    "On net_af_xdp with xdp_prog=.../floodgate_xdp.bpf.o, the XDP tier: its maps (pinned\n"
    "in --xdp-pin-dir, /sys/fs/bpf/floodgate) hold the allow and block lists and overrides,\n"
    "and the sources that rules with `escalate` keep refusing.\n";

// After the usage, for --help only: the EAL's own help is `dpdk-testpmd --help`'s.
constexpr const char *kEalHelp =
    "EAL options (before --): -l CORES or --lcores MAP, -a PCI (--allow), --vdev "
    "DEVICE,\n--no-huge -m MB, --file-prefix NAME, ...; DPDK's list: "
    "https://doc.dpdk.org/guides-22.11/linux_gsg/linux_eal_parameters.html\n";

// floodgate run's options, read into *o.
void define_options(CommandLine &cli, RunOptions *o) {
    cli.text("-c,--config", &o->config);
    cli.number("-o,--outside", 0, RTE_MAX_ETHPORTS - 1,
               [o](uint64_t n) { o->outside = static_cast<int>(n); });
    cli.number("-i,--inside", 0, RTE_MAX_ETHPORTS - 1,
               [o](uint64_t n) { o->inside = static_cast<int>(n); });
    cli.value("-I,--stats-interval", [o](const std::string &v) {
        // From 0.1 s, a line per poll of the main loop at most, to a day. 0 is refused rather
        // than read as "never": leaving the option out says that.
        std::string why;
        const std::optional<uint64_t> ns =
            parse_seconds_ns(v, 100000000, 86400 * 1000000000ull, &why);
        if (!ns) throw UsageError("--stats-interval " + why);
        o->stats_interval_s = static_cast<double>(*ns) / 1e9;
    });
    cli.text("-s,--stats", &o->stats);
    cli.number("--merge-interval-us", 1, 10000000,
               [o](uint64_t n) { o->merge_interval_ns = n * 1000; });
    cli.value("--steering", [o](const std::string &v) {
        if (v == "auto")
            o->steering = SteeringMode::automatic;
        else if (v == "nic")
            o->steering = SteeringMode::nic;
        else if (v == "software")
            o->steering = SteeringMode::software;
        else if (v == "none")
            o->steering = SteeringMode::none;
        else
            throw UsageError("--steering takes auto, nic, software or none, not '" + v + "'");
    });
    cli.text("--control", &o->control);
    cli.number("--mbufs", 1024, 1ull << 30,
               [o](uint64_t n) { o->mbufs = static_cast<unsigned>(n); });
    cli.number("--mbuf-size", RTE_PKTMBUF_HEADROOM + 64, 65535,
               [o](uint64_t n) { o->mbuf_size = static_cast<unsigned>(n); });
    cli.number("--shape-share", 0, 90,
               [o](uint64_t n) { o->shape_share = static_cast<unsigned>(n); });
    cli.text("--xdp-pin-dir", &o->xdp_pin_dir);
}

// One of floodgate run's own options before any "--" (the EAL would refuse it with its whole
// help text, which says nothing of floodgate's), or nullptr.
const char *own_option_before_separator(const CommandLine &cli, int argc, char **argv) {
    const std::vector<std::string> own = cli.long_names();
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") return nullptr;
        for (const std::string &o : own)
            if (a == o || (a.starts_with(o) && a[o.size()] == '=')) return argv[i];
    }
    return nullptr;
}

}  // namespace

int run_main(int argc, char **argv) {
    RunOptions opt;
    CommandLine cli(kRunCommand, kRunUsage);
    define_options(cli, &opt);
    // Help is floodgate's own, wherever it is asked for: the EAL would read it as its own.
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
            std::fputs(kRunUsage, stdout);
            std::fputs(kEalHelp, stdout);
            return 0;
        }
    if (const char *own = own_option_before_separator(cli, argc, argv)) {
        std::fprintf(stderr,
                     "floodgate run: %s is floodgate's option: put it after `--`, the EAL's "
                     "before it (floodgate run [EAL options] -- --config RULES.yaml ...)\n",
                     own);
        return 2;
    }
    stop_on_signals();
    const EalSession eal(argc, argv);  // released last, after every DPDK resource of the run
    if (!eal.ok()) return cli.fail(eal.error());
    // The EAL left the program's name just before our options ("--" was its).
    if (const std::optional<int> done = cli.parse(argc - eal.consumed(), argv + eal.consumed()))
        return *done;
    if (opt.config.empty()) return cli.usage_error("--config is required");
    try {
        return run_dataplane(opt, load_rules_file(opt.config));
    } catch (const ConfigError &e) {
        return cli.fail(e.what());
    }
}

}  // namespace floodgate
