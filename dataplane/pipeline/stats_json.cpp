#include "dataplane/pipeline/stats_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace floodgate {

namespace {
std::string key_prefix(const HeavyHitter &h) {
    IpAddr a{};
    std::memcpy(a.data(), &h.addr_hi, 8);
    std::memcpy(a.data() + 8, &h.addr_lo, 8);
    return format_addr(h.family, a) + "/" + std::to_string(h.prefix_len);
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
    uint64_t capacity = 0, memory_bytes = 0;
    for (const CoreReading &core : cores) {
        const WorkerCounters &c = core.stats.counters;
#define FG_X(name) total.name += c.name;
        FG_WORKER_COUNTERS(FG_X)
#undef FG_X
        for (unsigned i = 0; i < static_cast<unsigned>(MalformedReason::count); ++i)
            total.malformed_by_reason[i] += c.malformed_by_reason[i];
        for (unsigned i = 0; i < static_cast<unsigned>(AnswerKind::count); ++i)
            total.answers_by_kind[i] += c.answers_by_kind[i];
        total.held += c.held;
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
        ordered_json offenders = ordered_json::array();
        for (const HeavyHitter &h : top.top(top_n))
            offenders.push_back(
                {{"source", key_prefix(h)}, {"count", h.count}, {"error", h.error}});
        rule["top_refused"] = offenders;
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
