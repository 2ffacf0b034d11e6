#include "dataplane/pipeline/stats_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <tuple>

namespace floodgate {

namespace {
// What an adaptive rule learned, and from what: its bounds, its samples and whether they are
// stale (none for kAdaptiveStaleNs: the rate then stays where it is).
nlohmann::ordered_json adaptive_json(const CompiledRule &r, const AdaptiveOptions &a,
                                     uint64_t clock_ns) {
    const AdaptiveRate &learned = r.state->adaptive;
    const uint64_t samples = learned.samples.load(std::memory_order_relaxed);
    const uint64_t last = learned.last_sample_ns.load(std::memory_order_relaxed);
    const uint64_t age = samples > 0 && clock_ns > last ? clock_ns - last : 0;
    const auto per_s = [](uint64_t count, uint64_t period_ns) {
        return static_cast<double>(count) * 1e9 / static_cast<double>(period_ns);
    };
    return {{"min_per_s", per_s(a.min_count, a.min_period_ns)},
            {"max_per_s", per_s(a.max_count, a.max_period_ns)},
            {"target_ns", a.target_ns},
            {"samples", samples},
            {"late", learned.late.load(std::memory_order_relaxed)},
            {"decreases", learned.decreases.load(std::memory_order_relaxed)},
            {"last_response_ns", learned.last_signal_ns.load(std::memory_order_relaxed)},
            {"last_sample_age_ns", age},
            {"stale", samples == 0 || age > kAdaptiveStaleNs}};
}

template <class Counted>
std::string key_prefix(const Counted &h) {
    IpAddr a{};
    std::memcpy(a.data(), &h.addr_hi, 8);
    std::memcpy(a.data() + 8, &h.addr_lo, 8);
    return format_addr(h.family, a) + "/" + std::to_string(h.prefix_len);
}

// A rule's busiest destinations over every core, in the last whole epoch (a second) of the
// newest core (the others' summaries rolled to it: a core with no packet since had none), with
// their baselines and the signal (rate_baseline.h); limit: the rule's rate where it is kept per
// destination, else negative. Sets rule["load_high"] to how many destinations raise the signal,
// and the rule's keys in that second with what its limit (rule_limit) allows them in sum.
void destinations_json(nlohmann::ordered_json *rule, const CompiledRule &r,
                       const std::vector<CoreReading> &cores, double rule_limit, double limit,
                       unsigned top_n) {
    uint64_t epoch = 0;
    for (const CoreReading &core : cores)
        epoch = std::max(epoch, core.stats.destinations[r.index].epoch());
    std::vector<DestinationFigures> sum;
    EpochKeys keys;
    for (const CoreReading &core : cores) {
        DestinationSummary rolled = core.stats.destinations[r.index];
        EpochKeys core_keys = core.stats.keys[r.index];
        if (rolled.epoch() < epoch)
            core_keys.roll(core.stats.rules[r.index].matched, epoch - rolled.epoch() > 1);
        rolled.roll(epoch);
        add_figures(&sum, rolled.figures());
        keys.merge_last(core_keys);
    }
    std::sort(sum.begin(), sum.end(), [](const DestinationFigures &a, const DestinationFigures &b) {
        return std::tie(b.last_matched, b.matched, a.family, a.addr_hi, a.addr_lo) <
               std::tie(a.last_matched, a.matched, b.family, b.addr_hi, b.addr_lo);
    });
    unsigned high = 0;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const DestinationFigures &f : sum) {
        const double rate = static_cast<double>(f.last_matched);
        const double passed = static_cast<double>(f.last_passed);
        const bool signal = load_high(rate, passed, f.baseline);
        high += signal;
        if (rows.size() >= top_n) continue;
        nlohmann::ordered_json d = {
            {"destination", key_prefix(f)}, {"rate", rate}, {"passed_rate", passed}};
        if (limit >= 0) {
            d["limit_per_s"] = limit;
            d["headroom"] = limit - rate;
        }
        d["baseline"] = f.baseline.set() ? f.baseline.baseline : 0.0;
        d["ratio"] = std::min(baseline_ratio(rate, f.baseline), 1e9);
        d["epochs"] = f.baseline.epochs;
        d["load_high"] = signal;
        d["matched"] = f.matched;
        d["error"] = f.error;
        rows.push_back(d);
    }
    (*rule)["destinations_epoch_end_ns"] = epoch * kEpochNs;
    // Its keys in that second (replay's count; live, a HyperLogLog's estimate whose error is its
    // standard error, a fraction), what its limit allows them in sum, against what it matched.
    const double n_keys = std::round(keys.last_keys());
    (*rule)["keys"] = n_keys;
    (*rule)["keys_error"] = keys.exact() ? 0.0 : EpochKeys::kStandardError;
    (*rule)["allowance_per_s"] = n_keys * rule_limit;
    (*rule)["matched_per_s"] = keys.last_matched();
    (*rule)["load_high"] = high;
    (*rule)["load_high_ratio"] = kLoadHighRatio;
    (*rule)["destinations"] = rows;
}
}  // namespace

CoreReading read_core(const RuleSet &rules, const Pipeline &core) {
    CoreReading r;
    r.table_capacity = core.table().capacity();
    if (!core.read_stats(rules, &r.stats))
        throw std::runtime_error("worker core " + std::to_string(core.core()) +
                                 " did not answer a stats reading within a second");
    return r;
}

nlohmann::ordered_json stats_to_json(const RuleSet &ruleset, const std::vector<CoreReading> &cores,
                                     unsigned top_n) {
    using nlohmann::ordered_json;
    WorkerCounters total;
    LimitTableStats table;
    uint64_t capacity = 0, memory_bytes = 0, clock_ns = 0;
    for (const CoreReading &core : cores) {
        clock_ns = std::max(clock_ns, core.stats.clock_ns);
        const WorkerCounters &c = core.stats.counters;
#define FG_X(name) total.name += c.name;
        FG_WORKER_COUNTERS(FG_X)
#undef FG_X
        for (unsigned i = 0; i < static_cast<unsigned>(MalformedReason::count); ++i)
            total.malformed_by_reason[i] += c.malformed_by_reason[i];
        for (unsigned i = 0; i < static_cast<unsigned>(AnswerKind::count); ++i)
            total.answers_by_kind[i] += c.answers_by_kind[i];
        total.held += c.held;
        total.proxy_connections += c.proxy_connections;
        total.proxy_withheld += c.proxy_withheld;
        table.occupancy += core.stats.table.occupancy;
        table.reclaims += core.stats.table.reclaims;
        table.full_events += core.stats.table.full_events;
        capacity += core.table_capacity;
        memory_bytes += LimitTable::bytes_for(core.table_capacity);
    }

    ordered_json j;
#define FG_X(name) j[#name] = total.name;
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X
    j["held"] = total.held;
    j["proxy_connections"] = total.proxy_connections;
    j["proxy_withheld"] = total.proxy_withheld;
    // Every reason, zeros included, so that a reader sees the same keys from the start.
    ordered_json reasons = ordered_json::object();
    for (unsigned i = 1; i < static_cast<unsigned>(MalformedReason::count); ++i)
        reasons[malformed_reason_name(static_cast<MalformedReason>(i))] =
            total.malformed_by_reason[i];
    j["malformed_reasons"] = reasons;
    ordered_json answers = ordered_json::object();
    for (unsigned i = 0; i < static_cast<unsigned>(AnswerKind::count); ++i)
        answers[answer_kind_name(static_cast<AnswerKind>(i))] = total.answers_by_kind[i];
    j["answers_by_kind"] = answers;
    j["table"] = {{"capacity", capacity},
                  {"occupancy", table.occupancy},
                  {"reclaims", table.reclaims},
                  {"full_events", table.full_events},
                  {"bytes_per_entry", sizeof(LimitEntry)},
                  {"memory_bytes", memory_bytes}};

    ordered_json rules = ordered_json::array();
    for (const CompiledRule &r : ruleset.rules()) {
        RuleCounters sum;
        HeavyHitters top;
        for (const CoreReading &core : cores) {
#define FG_X(name) sum.name += core.stats.rules[r.index].name;
            FG_RULE_COUNTERS(FG_X)
#undef FG_X
            sum.held += core.stats.rules[r.index].held;
            sum.longest_wait_ns =
                std::max(sum.longest_wait_ns, core.stats.rules[r.index].longest_wait_ns);
            top.merge(core.stats.top_refused[r.index]);
        }
        ordered_json rule;
        rule["name"] = r.name;
        rule["mode"] = r.shadow ? "shadow" : "enforce";
        rule["action"] = rule_action_name(r.action);
        // What the limit is kept per, hence what top_refused lists: sources, destinations
        // (dst), sources of pairs (src+dst), or the whole rule (none).
        rule["key"] = key_kind_name(r.key_kind);
        // Whether each key is one core's alone or shared through the merge (steering.h).
        rule["scope"] = rule_scope(r, ruleset.steering(), ruleset.cores());
#define FG_X(name) rule[#name] = sum.name;
        FG_RULE_COUNTERS(FG_X)
#undef FG_X
        rule["held"] = sum.held;
        rule["longest_wait_ns"] = sum.longest_wait_ns;
        // The rate the rule holds each key to now: the configured one, or what it learned.
        const Rule &written = ruleset.config().rules[r.index];
        rule["limit_per_s"] = r.adaptive ? static_cast<double>(r.state->adaptive.rate()) / 1000.0
                                         : static_cast<double>(written.rate_count) * 1e9 /
                                               static_cast<double>(written.rate_period_ns);
        if (r.adaptive) rule["adaptive"] = adaptive_json(r, written.adaptive, clock_ns);
        ordered_json offenders = ordered_json::array();
        for (const HeavyHitter &h : top.top(top_n)) {
            ordered_json o = {{"source", key_prefix(h)}, {"count", h.count}, {"error", h.error}};
            // Counted in part from samples (top_offenders: sampled): the estimate's error.
            if (h.sampling_error != 0) {
                o["sampling_error"] = h.sampling_error;
                o["confidence"] = kSamplingConfidence;
            }
            offenders.push_back(o);
        }
        rule["top_refused"] = offenders;
        const double limit = rule["limit_per_s"].get<double>();
        destinations_json(&rule, r, cores, limit, r.key_kind == KeyKind::dst ? limit : -1.0, top_n);
        rules.push_back(rule);
    }
    j["rules"] = rules;
    return j;
}

nlohmann::ordered_json core_top_refused(const RuleSet &ruleset, const CoreReading &core,
                                        unsigned top) {
    using nlohmann::ordered_json;
    ordered_json j = ordered_json::object();
    for (const CompiledRule &r : ruleset.rules()) {
        ordered_json offenders = ordered_json::array();
        for (const HeavyHitter &h : core.stats.top_refused[r.index].top(top))
            offenders.push_back({{"source", key_prefix(h)}, {"count", h.count}});
        if (!offenders.empty()) j[r.name] = offenders;
    }
    return j;
}

bool write_stats(const std::string &path, const nlohmann::ordered_json &stats) {
    const std::string text = stats.dump(2) + "\n";
    const auto write_text = [&](const std::string &to) {
        std::ofstream out(to);
        out << text;
        out.close();
        return static_cast<bool>(out);
    };
    // A regular file (or none yet) is replaced whole, so that a reader or a crash never finds
    // half a document: a file of its own in the same directory, renamed over it. Anything
    // else (/dev/null, a pipe, a link) is written to as it is.
    struct stat st {};
    const bool exists = lstat(path.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) return write_text(path);
    std::string partial = path + ".XXXXXX";
    const int fd = mkstemp(partial.data());
    if (fd < 0) return false;
    bool ok = fchmod(fd, exists ? st.st_mode & 07777 : 0644) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && write_text(partial) && std::rename(partial.c_str(), path.c_str()) == 0;
    if (!ok) unlink(partial.c_str());
    return ok;
}

}  // namespace floodgate
