#include "dataplane/replay/replay.h"

#include <rte_malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "dataplane/api/stats_text.h"
#include "dataplane/pipeline/core_parts.h"
#include "dataplane/pipeline/eal.h"
#include "dataplane/pipeline/stats_json.h"
#include "dataplane/replay/bin_recorder.h"
#include "dataplane/replay/boxes.h"
#include "dataplane/replay/output_files.h"
#include "dataplane/replay/pcap_file.h"
#include "dataplane/replay/report.h"
#include "dataplane/replay/trace_run.h"
#include "rules/load.h"

namespace floodgate {

namespace {

// Replay uses a fixed hash seed so that even where the table fills up, which keys find room
// is the same on every run. A live dataplane draws a secret one (random_hash_seed()).
constexpr HashSeed kReplaySeed = {
    {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull}};

// syn-proxy's connection tables are made only for rules that need them (replay's memory is
// --no-huge, sized by what the config needs).
bool needs_proxy_tables(const Config &config) {
    return config.proxy_connections_per_core > 0 && has_syn_proxy(config);
}

// DPDK memory an offline run needs: the limiter table, the prefix tables, syn-proxy's
// connection tables, and headroom for the EAL itself, in MiB.
uint64_t dpdk_memory_mb(const Config &config, unsigned workers) {
    uint64_t bytes = workers * LimitTable::bytes_for(config.table_entries_per_core) +
                     RuleSet::dpdk_memory_bytes(config);
    if (needs_proxy_tables(config))
        bytes += workers * ProxyFlows::dpdk_bytes_for(config.proxy_connections_per_core);
    return (bytes >> 20) + 64;
}

// How the spread steers: the rules' steering prefix, the full address, or not at all.
Steering steering_of(const ReplayOptions &opt, const Config &config) {
    switch (opt.spread) {
        case Spread::steering:
            return software_steering(steering_prefix(config), true);
        case Spread::hash:
            return software_steering(SteeringOptions{true, 32, 128}, true);
        case Spread::round_robin:
        default:
            return Steering{};
    }
}

}  // namespace

int replay(const ReplayOptions &opt, const ReplayErrors &errors) {
    const auto fail = [&](const std::string &message) {
        errors(message);
        return 1;
    };
    Config config;
    std::string rules_text;  // for --report: the bytes the rules were read from
    try {
        rules_text = read_config_file(opt.config);
        config = parse_config(rules_text, opt.config);
    } catch (const ConfigError &e) {
        return fail(e.what());
    }

    PcapReader in(opt.in);
    if (!in.ok()) return fail(in.error());
    // --report's bins need the capture's last timestamp before the first frame is decided: the
    // file is read twice, so it must be one that reads the same twice.
    ClockRange range;
    if (!opt.report.empty()) {
        struct stat st;
        if (fstat(in.fd(), &st) != 0 || !S_ISREG(st.st_mode))
            return fail(opt.in + ": --report reads the capture twice: it must be a regular file");
        std::string error;
        if (!read_clock_range(opt.in, &range, &error)) return fail(error);
    }
    // Every output at once, none of them the input or another one
    // (dataplane/replay/output_files.h); two names of one file are a usage error.
    std::vector<NamedFile> names = {{"--pass", opt.pass}};
    if (!opt.drop.empty()) names.push_back({"--drop", opt.drop});
    if (!opt.answers.empty()) names.push_back({"--answers", opt.answers});
    if (!opt.stats.empty()) names.push_back({"--stats", opt.stats});
    if (!opt.report.empty()) names.push_back({"--report", opt.report});
    OpenedOutputs outputs = open_distinct_outputs({"--in", opt.in}, in.fd(), names);
    if (!outputs.error.empty()) {
        errors(outputs.error);
        return outputs.same_file ? 2 : 1;
    }
    size_t next = 0;
    PcapWriter pass(outputs.files[next++].release(), opt.pass, in.nanosecond(), in.linktype(),
                    in.snaplen());
    if (!pass.ok()) return fail(pass.error());
    std::unique_ptr<PcapWriter> drop;
    if (!opt.drop.empty()) {
        drop = std::make_unique<PcapWriter>(outputs.files[next++].release(), opt.drop,
                                            in.nanosecond(), in.linktype(), in.snaplen());
        if (!drop->ok()) return fail(drop->error());
    }
    std::unique_ptr<PcapWriter> answers;
    if (!opt.answers.empty()) {
        answers = std::make_unique<PcapWriter>(outputs.files[next++].release(), opt.answers,
                                               in.nanosecond(), in.linktype(), in.snaplen());
        if (!answers->ok()) return fail(answers->error());
    }
    // STATS.json and REPORT.html are written by name when the run ends (write_stats,
    // write_report); the files checked and emptied above are closed here. The check holds as long
    // as nobody renames files under a running replay.
    outputs.files.clear();

    Eal eal(offline_eal_args(
        static_cast<unsigned>(dpdk_memory_mb(config, std::max(opt.workers, opt.boxes)))));
    if (!eal.ok()) return fail(eal.error());

    int rc = 0;
    {
        std::string error;
        RuleSetOptions options;
        options.cores = opt.workers;
        options.exact_keys = true;
        if (opt.workers > 1) options.steering = steering_of(opt, config);
        std::unique_ptr<BoxesSync> boxes;
        std::unique_ptr<RuleSet> own_rules;
        const RuleSet *rules = nullptr;
        if (opt.boxes > 1) {
            // One core a box, each source on one box: by its full address, as ECMP hashes.
            options.cores = opt.boxes;
            options.steering = software_steering(SteeringOptions{true, 32, 128}, true);
            boxes = std::make_unique<BoxesSync>(
                config,
                BoxesOptions{opt.boxes, opt.cluster_sync_ns, opt.store_down_from_ns,
                             opt.store_down_until_ns},
                options, &error);
            if (!boxes->ok()) return fail(error);
            rules = boxes->rules();
        } else {
            own_rules = RuleSet::build(config, options, &error);
            if (!own_rules) return fail(error);
            rules = own_rules.get();
        }
        const CoreSizes sizes = core_sizes(config, needs_proxy_tables(config));
        const CoreSeeds seeds{kReplaySeed, kReplaySeed, kReplayCookieKey};
        const CoreMemory memory{dpdk_table_memory(SOCKET_ID_ANY), SOCKET_ID_ANY};
        std::vector<std::unique_ptr<CoreParts>> parts;
        std::vector<Pipeline *> cores;
        for (unsigned w = 0; w < options.cores; ++w) {
            parts.push_back(std::make_unique<CoreParts>(rules, sizes, seeds, memory, w));
            if (parts.back()->missing() == CoreParts::Missing::limit_table)
                return fail("cannot allocate the limiter table (" +
                            std::to_string(LimitTable::bytes_for(sizes.table_entries)) + " bytes)");
            if (parts.back()->missing() == CoreParts::Missing::proxy_table)
                return fail("cannot allocate syn-proxy's connection table (" +
                            std::to_string(sizes.proxy_connections) + " connections)");
            cores.push_back(&parts.back()->pipeline());
            cores.back()->set_hold_capacity(opt.shape_hold);
            if (opt.workers > 1) cores.back()->enable_merge();
        }

        const TraceOutputs out{&pass, drop.get(), answers.get()};
        const BinLayout layout =
            range.frames > 0 ? choose_bins(range.first_ns, range.last_ns) : BinLayout{};
        std::unique_ptr<BinRecorder> bins;
        if (!opt.report.empty()) bins = std::make_unique<BinRecorder>(layout, *rules, cores);
        bool ok = TraceRun(cores, opt, out, boxes.get()).run(in, bins.get(), &error);
        if (boxes) rules = boxes->rules();  // the last the boxes ran
        if (!ok) rc = fail(error);
        if (!pass.close()) rc = fail(pass.error());
        if (drop && !drop->close()) rc = fail(drop->error());
        if (answers && !answers->close()) rc = fail(answers->error());

        std::vector<CoreReading> readings;
        for (const Pipeline *core : cores) readings.push_back(read_core(*rules, *core));
        nlohmann::ordered_json stats = stats_to_json(*rules, readings);
        if (boxes) stats["cluster"] = boxes->stats();
        if (!opt.stats.empty()) {
            if (!write_stats(opt.stats, stats)) rc = fail(opt.stats + ": cannot write stats");
        }
        if (bins) {
            ReportInput report{opt.in,        opt.config, rules_text,     range.frames,
                               range.last_ns, layout,     bins->finish(), &stats};
            if (!write_report(opt.report, report_html(report)))
                rc = fail(opt.report + ": cannot write the report");
        }
        if (!opt.quiet) std::fputs(stats_text(nlohmann::json(stats)).c_str(), stdout);
    }
    return rc;
}

}  // namespace floodgate
