#include "dataplane/replay/replay.h"

#include <rte_malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "dataplane/api/stats_text.h"
#include "dataplane/pipeline/eal.h"
#include "dataplane/pipeline/merge.h"
#include "dataplane/pipeline/pipeline.h"
#include "dataplane/pipeline/stats_json.h"
#include "dataplane/replay/output_files.h"
#include "dataplane/replay/pcap_file.h"
#include "dataplane/replay/report.h"
#include "rules/load.h"

namespace floodgate {

namespace {

// Replay uses a fixed hash seed so that even where the table fills up, which keys find room
// is the same on every run. A live dataplane draws a secret one (random_hash_seed()).
constexpr HashSeed kReplaySeed = {
    {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull}};

// And a fixed syn-auth cookie key, so that the SYN-ACKs written to --answers are the same on
// every run (syn_cookie.h).
constexpr CookieKey kReplayCookieKey = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull};

// Whether the frame went inside to outside (its source is in --inside).
bool returning(const PcapRecord &r, const ReplayOptions &opt) {
    if (opt.inside.empty()) return false;
    PacketInfo info;
    if (parse_packet(r.data.data(), r.wire_len(), &info, r.captured_len()) != ParseStatus::ip)
        return false;
    IpAddr src;
    std::memcpy(src.data(), info.src, src.size());
    for (const Prefix &p : opt.inside)
        if (prefix_contains(p, info.family, src)) return true;
    return false;
}

// DPDK memory an offline run needs: the limiter table, the prefix tables, and headroom for
// the EAL itself, in MiB.
uint64_t dpdk_memory_mb(const Config &config, unsigned workers) {
    uint64_t bytes = workers * LimitTable::bytes_for(config.table_entries_per_core) +
                     RuleSet::dpdk_memory_bytes(config);
    return (bytes >> 20) + 64;
}

// Where decided frames go: passed ones to PASS.pcap; dropped ones, answered included, to
// DROP.pcap; and what was sent in place of an answered one to ANSWERS.pcap, with its time.
struct Outputs {
    PcapWriter *pass;
    PcapWriter *drop;     // may be null
    PcapWriter *answers;  // may be null
};

void write_decided(const PcapRecord &r, Verdict v, const Pipeline &pipeline, uint16_t i,
                   const Outputs &out) {
    if (v == Verdict::pass) {
        out.pass->write(r);
        return;
    }
    if (out.drop != nullptr) out.drop->write(r);
    if (v != Verdict::answer || out.answers == nullptr) return;
    PcapRecord answer = r;  // an answered frame is whole: captured = wire length
    const uint32_t len = build_answer(pipeline.answer_plan(i), pipeline.packet_info(i),
                                      answer.data.data(), answer.captured_len());
    if (len == 0) return;  // the plan did not fit the frame (never expected): nothing to write
    answer.data.resize(len);
    answer.orig_len = len;
    out.answers->write(answer);
}

// The first and last value of the limiter's clock over a capture (its first timestamp and its
// largest), for --report's bins: a pass over the file before the run.
struct ClockRange {
    uint64_t frames = 0, first_ns = 0, last_ns = 0;
};

bool read_clock_range(const std::string &path, ClockRange *range, std::string *error) {
    PcapReader in(path);
    PcapRecord r;
    while (in.ok() && in.next(&r)) {
        if (range->frames++ == 0) range->first_ns = range->last_ns = r.ts_ns;
        range->last_ns = std::max(range->last_ns, r.ts_ns);
    }
    *error = in.error();
    return error->empty();
}

// --report's counts per bin (dataplane/replay/report.h): every core's cumulative counters
// read at each bin boundary, less the reading at the one before. Exact: offline, a core's
// counters change only inside decide(), and the runs below close a bin before deciding the
// first frame past it.
class BinRecorder {
  public:
    BinRecorder(const BinLayout &layout, const RuleSet &rules, const std::vector<Pipeline *> &cores)
        : layout_(layout), rules_(rules), cores_(cores), before_(read()) {
        bins_.reserve(layout.count);
    }

    // Where the open bin ends: a frame whose clock is there or later belongs to a later bin.
    uint64_t end_ns() const {
        return bins_.size() < layout_.count ? layout_.end_ns(bins_.size()) : UINT64_MAX;
    }

    // Closes every bin that ends at or before clock_ns; every frame decided so far is in them.
    void close_before(uint64_t clock_ns) {
        if (end_ns() > clock_ns) return;
        const BinCounts now = read();
        bins_.push_back(difference(now, before_));
        before_ = now;
        while (end_ns() <= clock_ns) bins_.push_back(difference(now, now));  // idle bins
    }

    // After the last frame: the open bin, and any left (none when the layout fits the trace).
    std::vector<BinCounts> finish() {
        if (bins_.size() < layout_.count) close_before(UINT64_MAX - 1);
        return std::move(bins_);
    }

  private:
    BinCounts read() const {
        BinCounts sum;
        sum.rules.resize(rules_.rules().size());
        for (const Pipeline *core : cores_) {
            const CoreReading c = read_core(rules_, *core);
            sum.packets += c.stats.counters.packets;
            sum.passed += c.stats.counters.passed;
            sum.dropped += c.stats.counters.dropped;
            for (size_t i = 0; i < sum.rules.size(); ++i) {
                const RuleCounters &r = c.stats.rules[i];
                sum.rules[i].matched += r.matched;
                sum.rules[i].passed += r.passed;
                sum.rules[i].refused += r.refused;
                sum.rules[i].overruled += r.overruled;
                sum.rules[i].answered += r.answered;
            }
        }
        return sum;
    }

    static BinCounts difference(const BinCounts &a, const BinCounts &b) {
        BinCounts d{a.packets - b.packets, a.passed - b.passed, a.dropped - b.dropped, {}};
        d.rules.resize(a.rules.size());
        for (size_t i = 0; i < a.rules.size(); ++i)
            d.rules[i] = {a.rules[i].matched - b.rules[i].matched,
                          a.rules[i].passed - b.rules[i].passed,
                          a.rules[i].refused - b.rules[i].refused,
                          a.rules[i].overruled - b.rules[i].overruled,
                          a.rules[i].answered - b.rules[i].answered};
        return d;
    }

    BinLayout layout_;
    const RuleSet &rules_;
    std::vector<Pipeline *> cores_;
    BinCounts before_;  // the reading at the end of the last closed bin
    std::vector<BinCounts> bins_;
};

// Runs the trace through one pipeline; returns false with *error on an I/O failure. A burst
// holds frames of one direction (--inside), so that each is seen in capture order, and, with
// --report (bins not null), of one bin, so that each is counted in its own.
bool run_trace(PcapReader &in, Pipeline &pipeline, const ReplayOptions &opt, const Outputs &out,
               BinRecorder *bins, std::string *error) {
    std::vector<PcapRecord> burst(kMaxBurst);
    PcapRecord next;  // read for the next burst: its direction differs from this one's
    bool have_next = false;
    const uint8_t *frames[kMaxBurst];
    uint32_t wire_lens[kMaxBurst];
    uint32_t captured_lens[kMaxBurst];
    uint64_t now_ns[kMaxBurst];
    Verdict verdicts[kMaxBurst];
    uint64_t clock_ns = 0;
    uint64_t bin_end_ns = bins != nullptr ? bins->end_ns() : UINT64_MAX;  // never, without bins
    for (;;) {
        uint16_t n = 0;
        bool back = false;  // this burst went inside to outside
        while (n < kMaxBurst) {
            if (have_next) {
                std::swap(burst[n], next);
                have_next = false;
            } else if (!in.next(&burst[n])) {
                break;
            }
            // Captures are not always in time order; the limiter's clock never runs backwards.
            const uint64_t at_ns = std::max(clock_ns, burst[n].ts_ns);
            if (at_ns >= bin_end_ns) [[unlikely]] {
                if (n > 0) {  // the frame starts the next burst, after this one is counted
                    std::swap(burst[n], next);
                    have_next = true;
                    break;
                }
                bins->close_before(at_ns);
                bin_end_ns = bins->end_ns();
            }
            const bool r = returning(burst[n], opt);
            if (n == 0) {
                back = r;
            } else if (r != back) {
                std::swap(burst[n], next);
                have_next = true;
                break;
            }
            clock_ns = at_ns;
            frames[n] = burst[n].data.data();
            captured_lens[n] = burst[n].captured_len();
            wire_lens[n] = burst[n].wire_len();
            now_ns[n] = clock_ns;
            ++n;
        }
        if (!in.error().empty()) {
            *error = in.error();
            return false;
        }
        if (n == 0) return true;
        if (back) {
            pipeline.observe_returning(frames, wire_lens, n, now_ns, captured_lens);
            for (uint16_t i = 0; i < n; ++i) out.pass->write(burst[i]);
            continue;
        }
        pipeline.decide(frames, wire_lens, n, now_ns, verdicts, captured_lens);
        for (uint16_t i = 0; i < n; ++i) write_decided(burst[i], verdicts[i], pipeline, i, out);
    }
}

// The virtual core a frame goes to: round robin, or a hash of the full source address as RSS
// on the whole address would do (non-IP and malformed frames go to core 0).
unsigned core_for(const PcapRecord &r, uint64_t index, const ReplayOptions &opt) {
    if (opt.spread == Spread::round_robin) return static_cast<unsigned>(index % opt.workers);
    PacketInfo info;
    if (parse_packet(r.data.data(), r.wire_len(), &info, r.captured_len()) != ParseStatus::ip)
        return 0;
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the 16 address bytes
    for (uint8_t b : info.src) h = (h ^ b) * 1099511628211ull;
    return static_cast<unsigned>(h % opt.workers);
}

// Several virtual cores, one frame at a time so that every frame sees exactly the merges
// whose time it has passed: deterministic, on packet time, like the live merge on the TSC.
bool run_trace_on_cores(PcapReader &in, const std::vector<Pipeline *> &cores,
                        const ReplayOptions &opt, const Outputs &out, BinRecorder *bins,
                        std::string *error) {
    PcapRecord r;
    std::vector<Consumption> scratch;
    uint64_t clock_ns = 0, next_merge_ns = 0;
    uint64_t bin_end_ns = bins != nullptr ? bins->end_ns() : UINT64_MAX;
    for (uint64_t index = 0; in.next(&r); ++index) {
        clock_ns = std::max(clock_ns, r.ts_ns);
        if (clock_ns >= bin_end_ns) [[unlikely]] {
            bins->close_before(clock_ns);
            bin_end_ns = bins->end_ns();
        }
        if (index == 0) next_merge_ns = clock_ns + opt.merge_interval_ns;
        if (clock_ns >= next_merge_ns) {
            merge_cores(cores, next_merge_ns, &scratch);
            // Idle gaps: no consumption to merge in between, so skip to the next boundary.
            next_merge_ns +=
                (clock_ns - next_merge_ns) / opt.merge_interval_ns * opt.merge_interval_ns +
                opt.merge_interval_ns;
        }
        const uint8_t *frame = r.data.data();
        uint32_t captured = r.captured_len(), wire = r.wire_len();
        Verdict v;
        Pipeline *core = cores[core_for(r, index, opt)];
        if (returning(r, opt)) {
            core->observe_returning(&frame, &wire, 1, &clock_ns, &captured);
            out.pass->write(r);
            continue;
        }
        core->decide(&frame, &wire, 1, &clock_ns, &v, &captured);
        write_decided(r, v, *core, 0, out);
    }
    if (!in.error().empty()) {
        *error = in.error();
        return false;
    }
    return true;
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

    Eal eal(offline_eal_args(static_cast<unsigned>(dpdk_memory_mb(config, opt.workers))));
    if (!eal.ok()) return fail(eal.error());

    int rc = 0;
    {
        std::string error;
        RuleSetOptions options;
        options.cores = opt.workers;
        std::unique_ptr<RuleSet> rules = RuleSet::build(config, options, &error);
        if (!rules) return fail(error);
        std::vector<std::unique_ptr<LimitTable>> tables;
        std::vector<std::unique_ptr<Pipeline>> pipelines;
        std::vector<Pipeline *> cores;
        for (unsigned w = 0; w < opt.workers; ++w) {
            tables.push_back(std::make_unique<LimitTable>(
                config.table_entries_per_core, kReplaySeed, dpdk_table_memory(SOCKET_ID_ANY)));
            if (!tables.back()->ok())
                return fail("cannot allocate the limiter table (" +
                            std::to_string(LimitTable::bytes_for(config.table_entries_per_core)) +
                            " bytes)");
            pipelines.push_back(std::make_unique<Pipeline>(rules.get(), tables.back().get(), w));
            cores.push_back(pipelines.back().get());
            cores.back()->set_cookie_key(kReplayCookieKey);
            if (opt.workers > 1) cores.back()->enable_merge();
        }

        const Outputs out{&pass, drop.get(), answers.get()};
        const BinLayout layout =
            range.frames > 0 ? choose_bins(range.first_ns, range.last_ns) : BinLayout{};
        std::unique_ptr<BinRecorder> bins;
        if (!opt.report.empty()) bins = std::make_unique<BinRecorder>(layout, *rules, cores);
        bool ok = opt.workers == 1 ? run_trace(in, *cores[0], opt, out, bins.get(), &error)
                                   : run_trace_on_cores(in, cores, opt, out, bins.get(), &error);
        if (!ok) rc = fail(error);
        if (!pass.close()) rc = fail(pass.error());
        if (drop && !drop->close()) rc = fail(drop->error());
        if (answers && !answers->close()) rc = fail(answers->error());

        std::vector<CoreReading> readings;
        for (const Pipeline *core : cores) readings.push_back(read_core(*rules, *core));
        nlohmann::ordered_json stats = stats_to_json(*rules, readings);
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
