// `floodgate replay`'s command line; the replay itself is dataplane/replay/replay.h's.
#include <algorithm>
#include <optional>
#include <string>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/rules.h"
#include "dataplane/commands/commands.h"
#include "dataplane/commands/options.h"
#include "dataplane/replay/replay.h"

namespace floodgate {

namespace {

constexpr const char *kReplayCommand = "floodgate replay";

constexpr const char *kReplayUsage =
    "usage: floodgate replay --config RULES.yaml --in TRACE.pcap --pass PASS.pcap\n"
    "                        [--drop DROP.pcap] [--answers ANSWERS.pcap]\n"
    "                        [--stats STATS.json] [--report REPORT.html] [--quiet]\n"
    "                        [--inside PREFIX,...] [--shape-hold N]\n"
    "                        [--workers N [--spread steering|hash|rr]\n"
    "                         [--merge-interval-us US]]\n"
    "                        [--boxes N [--sync-ms MS] [--store-down FROM-TO]]\n"
    "Runs the dataplane's pipeline over a pcap, with packet timestamps as the clock,\n"
    "and writes the passed (and dropped) frames unchanged, in order, and the answers it\n"
    "would send (at the time of the frame each answers). --workers spreads the\n"
    "trace over N virtual cores, merged every --merge-interval-us of packet time (default\n"
    "1000), as the live path does: by the rules' steering prefix (default: each source\n"
    "prefix has one owner core, and only shared keys are merged), by the full source\n"
    "address (hash: as RSS on the whole address), or round robin (rr: every key shared).\n"
    "--inside names the protected side: frames from it are passed unjudged, and replies\n"
    "among them make their destinations established sources (aggregate rules' classes).\n"
    "--boxes runs N boxes of a cluster, one core each, each source on one box by its\n"
    "address (as ECMP), their `share: cluster` rules synced every --sync-ms of packet\n"
    "time (default: the rules file's cluster.sync_ms) through a model of the store,\n"
    "which --store-down takes away from FROM to TO seconds after the first frame.\n"
    "Frames a shape rule holds are written to PASS at their release time; those still held\n"
    "when the capture ends leave at their times after it. --shape-hold caps the frames held\n"
    "per core (65536), as the live path's share of its mbuf pool does.\n"
    "--report writes one self-contained HTML page: per rule, matched, passed, refused and\n"
    "answered per bin of packet time (at most 60 bins, of the 1-2-5 series' smallest width\n"
    "that covers the capture), the totals, the top refused sources and the rules file.\n";

// --inside PREFIX,...: every prefix, or the first one refused.
std::vector<Prefix> inside_prefixes(const std::string &list) {
    std::vector<Prefix> out;
    for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        std::string why;
        const std::optional<Prefix> p = parse_prefix(list.substr(at, comma - at), &why);
        if (!p) throw UsageError("--inside " + why);
        out.push_back(*p);
        at = comma + 1;
    }
    return out;
}

}  // namespace

int replay_main(int argc, char **argv) {
    ReplayOptions o;
    CommandLine cli(kReplayCommand, kReplayUsage);
    cli.text("-c,--config", &o.config);
    cli.text("-i,--in", &o.in);
    cli.text("-p,--pass", &o.pass);
    cli.text("-d,--drop", &o.drop);
    cli.text("-a,--answers", &o.answers);
    cli.text("-s,--stats", &o.stats);
    cli.text("-r,--report", &o.report);
    cli.flag("-q,--quiet", &o.quiet);
    cli.number("--workers", 1, 64, [&](uint64_t n) { o.workers = static_cast<unsigned>(n); });
    cli.value("--spread", [&](const std::string &v) {
        if (v == "steering")
            o.spread = Spread::steering;
        else if (v == "hash")
            o.spread = Spread::hash;
        else if (v == "rr")
            o.spread = Spread::round_robin;
        else
            throw UsageError("--spread takes steering, hash or rr, not '" + v + "'");
    });
    // As floodgate run's: up to 10 s, so that microseconds times 1000 cannot wrap.
    cli.number("--merge-interval-us", 1, 10000000,
               [&](uint64_t n) { o.merge_interval_ns = n * 1000; });
    cli.number("--shape-hold", 0, 1u << 24,
               [&](uint64_t n) { o.shape_hold = static_cast<uint32_t>(n); });
    cli.number("--boxes", 1, 64, [&](uint64_t n) { o.boxes = static_cast<unsigned>(n); });
    cli.number("--sync-ms", kMinClusterSyncNs / 1'000'000, kMaxClusterSyncNs / 1'000'000,
               [&](uint64_t n) { o.cluster_sync_ns = n * 1'000'000; });
    cli.value("--store-down", [&](const std::string &v) {
        const size_t dash = v.find('-');
        std::string why;
        std::optional<uint64_t> from, until;
        if (dash != std::string::npos) {
            from = parse_seconds_ns(v.substr(0, dash), 0, kMaxOverrideTtlSeconds * 1'000'000'000ull,
                                    &why);
            if (from)
                until = parse_seconds_ns(v.substr(dash + 1), *from,
                                         kMaxOverrideTtlSeconds * 1'000'000'000ull, &why);
        } else {
            why = "is not FROM-TO";
        }
        if (!from || !until) throw UsageError("--store-down '" + v + "' " + why);
        o.store_down_from_ns = *from;
        o.store_down_until_ns = *until;
    });
    cli.value("--inside", [&](const std::string &v) {
        const std::vector<Prefix> more = inside_prefixes(v);
        o.inside.insert(o.inside.end(), more.begin(), more.end());
    });
    if (const std::optional<int> done = cli.parse(argc, argv)) return *done;
    if (!cli.operands().empty())
        return cli.usage_error("unexpected argument '" + cli.operands().front() + "'");
    if (o.config.empty() || o.in.empty() || o.pass.empty())
        return cli.usage_error("--config, --in and --pass are required");
    if (o.boxes > 1 && o.workers > 1)
        return cli.usage_error("--boxes runs one core a box: leave --workers out");
    if ((o.cluster_sync_ns != 0 || o.store_down_until_ns != 0) && o.boxes < 2)
        return cli.usage_error("--sync-ms and --store-down need --boxes 2 or more");
    return replay(o, [&](const std::string &message) { cli.fail(message); });
}

}  // namespace floodgate
