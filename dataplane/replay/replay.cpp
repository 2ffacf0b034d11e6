#include "dataplane/replay/replay.h"

#include <rte_malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "dataplane/api/stats_text.h"
#include "dataplane/pipeline/core_parts.h"
#include "dataplane/pipeline/eal.h"
#include "dataplane/pipeline/merge.h"
#include "dataplane/pipeline/stats_json.h"
#include "dataplane/replay/boxes.h"
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

// Where decided frames go: passed ones to PASS.pcap; dropped ones, answered included, to
// DROP.pcap; and what was sent in place of an answered one to ANSWERS.pcap, with its time.
struct Outputs {
    PcapWriter *pass;
    PcapWriter *drop;     // may be null
    PcapWriter *answers;  // may be null
};

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

// Runs the trace through the cores; returns false with *error on an I/O failure.
//
// Frames are read into a window, each given to its core (round robin, or its source's owner
// under the steering; a frame going out, from --inside, its destination's owner; a frame with no
// IP address to read, core 0), and the window is decided core by core, in bursts of up to
// kMaxBurst frames of one direction in capture order, then written out in capture order.
// Deterministic, on packet time: a window is closed before the first frame at or past the
// next merge or the end of a --report bin, so every frame sees exactly the merges whose time
// it has passed, and is counted in its own bin. With one core this is the live worker's
// bursts; with several, each core decides its own frames in bursts as a live worker would.
class TraceRun {
  public:
    TraceRun(const std::vector<Pipeline *> &cores, const ReplayOptions &opt, const Outputs &out,
             BoxesSync *boxes)
        : cores_(cores),
          opt_(opt),
          out_(out),
          boxes_(boxes),
          steering_(cores.front()->rules().steering()),
          window_(std::min<size_t>(size_t{kMaxBurst} * cores.size(), kMaxWindow)),
          by_core_(cores.size()) {}

    bool run(PcapReader &in, BinRecorder *bins, std::string *error) {
        std::vector<Consumption> scratch;
        const bool merging = cores_.size() > 1 && boxes_ == nullptr;
        uint64_t clock_ns = 0, next_merge_ns = 0;
        uint64_t bin_end_ns = bins != nullptr ? bins->end_ns() : UINT64_MAX;
        for (uint64_t index = 0; in.next(&window_[n_].rec); ++index) {
            // Captures are not always in time order; the limiter's clock never runs backwards.
            clock_ns = std::max(clock_ns, window_[n_].rec.ts_ns);
            if (index == 0) {
                next_merge_ns = clock_ns + opt_.merge_interval_ns;
                if (boxes_ != nullptr) boxes_->start(cores_, clock_ns);
            }
            const bool merge_due = merging && clock_ns >= next_merge_ns;
            const bool sync_due = boxes_ != nullptr && clock_ns >= boxes_->next_sync_ns();
            if (merge_due || sync_due || clock_ns >= bin_end_ns) [[unlikely]] {
                decide_window_but_newest();
                while (sync_due && clock_ns >= boxes_->next_sync_ns())
                    if (!boxes_->sync(error)) return false;
                if (clock_ns >= bin_end_ns) {
                    bins->close_before(clock_ns);
                    bin_end_ns = bins->end_ns();
                }
                if (merge_due) {
                    merge_cores(cores_, next_merge_ns, &scratch);
                    // Idle gaps: no consumption to merge in between, so skip to the next one.
                    next_merge_ns += (clock_ns - next_merge_ns) / opt_.merge_interval_ns *
                                         opt_.merge_interval_ns +
                                     opt_.merge_interval_ns;
                }
            }
            place(index, clock_ns);
            if (n_ == window_.size()) decide_window();
        }
        decide_window();
        release_until(UINT64_MAX);  // what is still held leaves at its time, after the capture
        // syn-proxy's held frames whose server never answered within the capture: dropped.
        for (Pipeline *core : cores_)
            core->proxy_drop_held([&](uint64_t h) {
                if (out_.drop != nullptr) out_.drop->write(held_[h]);
                free_held_.push_back(h);
            });
        *error = in.error();
        return error->empty();
    }

  private:
    // At most this many frames wait: 32 per core up to 64 cores.
    static constexpr size_t kMaxWindow = 2048;

    struct Slot {
        PcapRecord rec;
        PcapRecord answer;  // what is sent in its place, when answered
        uint64_t now_ns = 0;
        unsigned core = 0;
        bool back = false;  // went inside to outside: passed unjudged
        bool answered = false;
        Verdict verdict = Verdict::pass;
        // syn-proxy's held frames this one lets go (the server answered: sent after it;
        // refused or timed out: dropped), by handle (keep()).
        std::vector<std::pair<uint64_t, bool>> then;
    };

    // Gives window slot n_ (just read) its core and direction.
    void place(uint64_t index, uint64_t now_ns) {
        Slot &s = window_[n_];
        s.now_ns = now_ns;
        s.back = false;
        s.core = steering_.by_source ? 0 : static_cast<unsigned>(index % cores_.size());
        FrameAddress address;
        if ((steering_.by_source || !opt_.inside.empty()) &&
            frame_address(s.rec.data.data(), s.rec.captured_len(), false, &address)) {
            s.back = from_inside(address);
            // A frame going out belongs to its destination's owner: the reply's source's.
            if (s.back) frame_address(s.rec.data.data(), s.rec.captured_len(), true, &address);
            if (steering_.by_source) s.core = address_owner(address, steering_, cores_.size());
        }
        by_core_[s.core].push_back(static_cast<uint32_t>(n_));
        ++n_;
    }

    bool from_inside(const FrameAddress &source) const {
        IpAddr src;
        std::memcpy(src.data(), source.addr, src.size());
        for (const Prefix &p : opt_.inside)
            if (prefix_contains(p, source.family, src)) return true;
        return false;
    }

    // Decides the window but for the frame just read into slot n_ (past a merge or a bin's
    // end), which then starts the next window.
    void decide_window_but_newest() {
        const size_t newest = n_;
        decide_window();
        std::swap(window_[0].rec, window_[newest].rec);
    }

    void decide_window() {
        for (size_t c = 0; c < cores_.size(); ++c) {
            const std::vector<uint32_t> &mine = by_core_[c];
            for (size_t at = 0; at < mine.size();) {
                const bool back = window_[mine[at]].back;
                size_t end = at;
                while (end < mine.size() && end - at < kMaxBurst && window_[mine[end]].back == back)
                    ++end;
                decide_burst(*cores_[c], &mine[at], static_cast<uint16_t>(end - at), back);
                at = end;
            }
            by_core_[c].clear();
        }
        for (size_t i = 0; i < n_; ++i) write(window_[i]);
        n_ = 0;
    }

    void decide_burst(Pipeline &core, const uint32_t *slots, uint16_t n, bool back) {
        // Zeroed: GCC's -O1 (the ASan build) cannot see that the first n are all written.
        const uint8_t *frames[kMaxBurst] = {};
        uint32_t wire[kMaxBurst] = {}, captured[kMaxBurst] = {};
        uint64_t now_ns[kMaxBurst] = {};
        Verdict verdicts[kMaxBurst] = {};
        for (uint16_t i = 0; i < n; ++i) {
            const Slot &s = window_[slots[i]];
            frames[i] = s.rec.data.data();
            wire[i] = s.rec.wire_len();
            captured[i] = s.rec.captured_len();
            now_ns[i] = s.now_ns;
        }
        if (back) {
            core.observe_returning(frames, wire, n, now_ns, captured);
            for (uint16_t i = 0; i < n; ++i) {
                Slot &s = window_[slots[i]];
                s.verdict = Verdict::pass;
                if (core.proxying()) proxy_from_server(core, s);
            }
            sweep_proxy(core, window_[slots[n - 1]]);
            return;
        }
        // With shape rules, frames of one time at a time, after what has left by then is
        // taken from the cores: a live worker releases every loop pass, so a held frame whose
        // time has come never counts against the share a later frame meets.
        const bool shaping = core.rules().has_shape();
        for (uint16_t at = 0, end; at < n; at = end) {
            end = n;
            if (shaping) {
                for (end = at; end < n && now_ns[end] == now_ns[at];) ++end;
                collect(now_ns[at]);
            }
            const auto m = static_cast<uint16_t>(end - at);
            core.decide(frames + at, wire + at, m, now_ns + at, verdicts, captured + at);
            for (uint16_t i = 0; i < m; ++i) {
                Slot &s = window_[slots[at + i]];
                s.verdict = verdicts[i];
                if (s.verdict == Verdict::delay) core.hold(i, keep(s.rec));
                if (s.verdict == Verdict::proxy) proxy_from_client(core, i, s);
                // The answer is built now: the plan lasts until the core's next burst.
                s.answered = verdicts[i] == Verdict::answer && out_.answers != nullptr &&
                             build_answer_record(core, i, s.rec, &s.answer);
            }
        }
        sweep_proxy(core, window_[slots[n - 1]]);
    }

    // Room syn-proxy may need past a frame: its SYN to the server carries up to 12 bytes of
    // options over an ACK that may have none.
    static constexpr uint32_t kProxyRoom = 64;

    // A client's frame the pipeline gave to syn-proxy, as a live worker sends it: on
    // (rewritten, or as the server's SYN), held until the server answers, answered with a RST
    // (its connection failed), or dropped.
    void proxy_from_client(Pipeline &core, uint16_t i, Slot &s) {
        PcapRecord original = s.rec;  // for --drop, should it be rewritten into a RST
        const uint32_t len = s.rec.captured_len();
        s.rec.data.resize(len + kProxyRoom);
        const Pipeline::ProxyOut out = core.proxy_client(i, s.rec.data.data(), len + kProxyRoom);
        // The SYN may be longer than the ACK it was written over; nothing else is.
        s.rec.data.resize(out.step == ProxyStep::server_syn ? out.len : len);
        s.verdict = Verdict::pass;
        switch (out.step) {
            case ProxyStep::server_syn:
                s.rec.orig_len = out.len;
                break;
            case ProxyStep::hold:
                core.proxy_hold(out.flow, keep(s.rec));
                s.verdict = Verdict::delay;  // written when the server answers
                break;
            case ProxyStep::reset_client:
                s.answer = s.rec;
                set_len(&s.answer, out.len);
                s.answered = out_.answers != nullptr;
                s.rec = std::move(original);
                s.verdict = Verdict::drop;
                break;
            case ProxyStep::drop:
                s.rec = std::move(original);
                s.verdict = Verdict::drop;
                break;
            default:
                break;
        }
    }

    // A frame from the inside while syn-proxy has connections: the server's SYN-ACK becomes
    // the ACK back to it (the held frames follow it), its RST goes to the client rewritten (the
    // held frames are dropped), its segments are rewritten.
    void proxy_from_server(Pipeline &core, Slot &s) {
        const uint32_t len = s.rec.captured_len();
        s.rec.data.resize(len + kProxyRoom);
        const Pipeline::ProxyOut out = core.proxy_server(
            {s.rec.data.data(), s.rec.wire_len(), len, len + kProxyRoom}, s.now_ns);
        s.rec.data.resize(len);
        switch (out.step) {
            case ProxyStep::server_ack:
                set_len(&s.rec, out.len);
                take_held(core, out.flow, true, s);
                break;
            case ProxyStep::refused:
                take_held(core, out.flow, false, s);
                break;
            case ProxyStep::drop:
                s.verdict = Verdict::drop;
                break;
            default:
                break;
        }
    }

    void take_held(Pipeline &core, ProxyFlow *flow, bool send, Slot &s) {
        uint64_t held[kHeldPerFlow];
        const unsigned n = core.proxy_take_held(flow, held);
        for (unsigned k = 0; k < n; ++k) {
            bool sent = false;
            if (send) {
                PcapRecord &r = held_[held[k]];
                const uint32_t len = r.captured_len();
                r.data.resize(len + kProxyRoom);
                sent =
                    core.proxy_held({r.data.data(), r.wire_len(), len, len + kProxyRoom}, s.now_ns)
                        .step == ProxyStep::forward;
                r.data.resize(len);
            }
            s.then.emplace_back(held[k], sent);
        }
    }

    // Connections past their timeouts, a few slots a burst; what they held is dropped after s.
    void sweep_proxy(Pipeline &core, Slot &s) {
        core.proxy_sweep(s.now_ns, 64, [&](uint64_t h) { s.then.emplace_back(h, false); });
    }

    static void set_len(PcapRecord *r, uint32_t len) {
        r->data.resize(len);
        r->orig_len = len;
    }

    static bool build_answer_record(const Pipeline &core, uint16_t i, const PcapRecord &r,
                                    PcapRecord *answer) {
        *answer = r;  // an answered frame is whole: captured = wire length
        const uint32_t len = build_answer(core.answer_plan(i), core.packet_info(i),
                                          answer->data.data(), answer->captured_len());
        if (len == 0) return false;  // the plan did not fit the frame (never expected)
        answer->data.resize(len);
        answer->orig_len = len;
        return true;
    }

    void write(Slot &s) {
        release_until(s.now_ns);
        if (s.verdict == Verdict::pass) {
            out_.pass->write(s.rec);
        } else if (s.verdict != Verdict::delay) {  // delay: written when released
            if (out_.drop != nullptr) out_.drop->write(s.rec);
            if (s.answered) out_.answers->write(s.answer);
        }
        for (const auto &[handle, sent] : s.then) {
            if (sent)
                out_.pass->write_at(held_[handle], s.now_ns);
            else if (out_.drop != nullptr)
                out_.drop->write(held_[handle]);
            free_held_.push_back(handle);
        }
        s.then.clear();
    }

    // A frame a shape rule holds, kept until it is released: its handle.
    uint64_t keep(const PcapRecord &r) {
        if (free_held_.empty()) {
            held_.push_back(r);
            return held_.size() - 1;
        }
        const uint64_t h = free_held_.back();
        free_held_.pop_back();
        held_[h] = r;
        return h;
    }

    // Takes from every core the held frames due by now_ns: before a burst is decided (so
    // that what has left no longer counts against the core's share, as on a live worker, which
    // releases every loop pass), and before a frame is written.
    void collect(uint64_t now_ns) {
        Pipeline::Released out[kMaxBurst];
        for (Pipeline *core : cores_) {
            if (core->holding() == 0) continue;
            unsigned n;
            while ((n = core->release(now_ns, false, out, kMaxBurst)) > 0) {
                for (unsigned i = 0; i < n; ++i)
                    leaving_.push_back({out[i].release_ns, out[i].handle, out[i].sent});
                leaving_sorted_ = false;
            }
        }
    }

    // Writes the frames that left by now_ns, in order of their times (a core gives them in
    // slot order, two keys' of one slot in the order they were held), each stamped with its
    // time.
    void release_until(uint64_t now_ns) {
        collect(now_ns);
        if (leaving_.size() == leaving_at_) return;
        if (!leaving_sorted_) {
            std::stable_sort(
                leaving_.begin() + static_cast<std::ptrdiff_t>(leaving_at_), leaving_.end(),
                [](const auto &a, const auto &b) { return a.release_ns < b.release_ns; });
            leaving_sorted_ = true;
        }
        for (; leaving_at_ < leaving_.size() && leaving_[leaving_at_].release_ns <= now_ns;
             ++leaving_at_) {
            const Leaving &l = leaving_[leaving_at_];
            PcapRecord &r = held_[l.handle];
            if (l.sent)
                out_.pass->write_at(r, l.release_ns);
            else if (out_.drop != nullptr)
                out_.drop->write(r);
            free_held_.push_back(l.handle);
        }
        if (leaving_at_ == leaving_.size()) {
            leaving_.clear();
            leaving_at_ = 0;
        }
    }

    const std::vector<Pipeline *> &cores_;
    const ReplayOptions &opt_;
    const Outputs &out_;
    BoxesSync *boxes_;  // --boxes: the cores are boxes, synced instead of merged
    const Steering &steering_;
    std::vector<Slot> window_;
    size_t n_ = 0;                                // slots in the window
    std::vector<std::vector<uint32_t>> by_core_;  // each core's slots, in capture order
    std::vector<PcapRecord> held_;                // frames shape rules hold, by handle
    std::vector<uint64_t> free_held_;
    struct Leaving {
        uint64_t release_ns;
        uint64_t handle;
        bool sent;
    };
    std::vector<Leaving> leaving_;  // taken from the cores, written from leaving_at_ on
    size_t leaving_at_ = 0;
    bool leaving_sorted_ = true;
};

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

        const Outputs out{&pass, drop.get(), answers.get()};
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
