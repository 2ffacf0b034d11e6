#include "dataplane/replay/bin_recorder.h"

#include <algorithm>

#include "dataplane/pipeline/stats_json.h"
#include "dataplane/replay/pcap_file.h"

namespace floodgate {

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

BinRecorder::BinRecorder(const BinLayout &layout, const RuleSet &rules,
                         const std::vector<Pipeline *> &cores)
    : layout_(layout), rules_(rules), cores_(cores), before_(read()) {
    bins_.reserve(layout.count);
}

void BinRecorder::close_before(uint64_t clock_ns) {
    if (end_ns() > clock_ns) return;
    const BinCounts now = read();
    bins_.push_back(difference(now, before_));
    before_ = now;
    while (end_ns() <= clock_ns) bins_.push_back(difference(now, now));  // idle bins
}

std::vector<BinCounts> BinRecorder::finish() {
    if (bins_.size() < layout_.count) close_before(UINT64_MAX - 1);
    return std::move(bins_);
}

BinCounts BinRecorder::read() const {
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

BinCounts BinRecorder::difference(const BinCounts &a, const BinCounts &b) {
    BinCounts d{a.packets - b.packets, a.passed - b.passed, a.dropped - b.dropped, {}};
    d.rules.resize(a.rules.size());
    for (size_t i = 0; i < a.rules.size(); ++i)
        d.rules[i] = {
            a.rules[i].matched - b.rules[i].matched, a.rules[i].passed - b.rules[i].passed,
            a.rules[i].refused - b.rules[i].refused, a.rules[i].overruled - b.rules[i].overruled,
            a.rules[i].answered - b.rules[i].answered};
    return d;
}

}  // namespace floodgate
