#include "control/upstream/flowspec.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <utility>

#include "control/upstream/gobgp_cli.h"

namespace floodgate {

// The desired rules of one reconcile, each once, in order: rank is the place in that order.
struct FlowspecExporter::Desired {
    std::vector<std::pair<std::string, const FlowspecRule *>> order;  // match key, rule
    std::unordered_map<std::string, size_t> rank;
    std::set<Prefix> sources;  // their single-address sources, with rtbh
    size_t limit = 0;          // the first `limit` of order are to be in the RIB
};

namespace {

const char *family_name(RibFamily f) {
    switch (f) {
        case RibFamily::flowspec4:
            return "ipv4-flowspec";
        case RibFamily::flowspec6:
            return "ipv6-flowspec";
        case RibFamily::unicast4:
            return "ipv4";
        case RibFamily::unicast6:
            return "ipv6";
    }
    return "?";
}

uint8_t bit(RibFamily f) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(f));
}

RibFamily rule_family(const FlowspecRule &r) {
    return r.source.family == 4 ? RibFamily::flowspec4 : RibFamily::flowspec6;
}

bool is_host(const Prefix &p) {
    return p.len == (p.family == 4 ? 32 : 128);
}

// Host bits set would be masked by gobgp, and the route read back would not be this rule.
bool valid_prefix(const Prefix &p, uint8_t family) {
    if (p.family != family || p.len > (family == 4 ? 32 : 128)) return false;
    IpAddr masked = p.addr;
    mask_addr(&masked, p.len);
    return masked == p.addr;
}

bool valid(const FlowspecRule &r) {
    if (r.source.family != 4 && r.source.family != 6) return false;
    if (!valid_prefix(r.source, r.source.family)) return false;
    if (r.destination && !valid_prefix(*r.destination, r.source.family)) return false;
    return !r.destination_port || r.destination_port->lo <= r.destination_port->hi;
}

bool overlaps(const Prefix &a, const Prefix &b) {
    if (a.family != b.family) return false;
    return a.len <= b.len ? prefix_contains(a, b.family, b.addr)
                          : prefix_contains(b, a.family, a.addr);
}

std::string match_key(const FlowspecRule &r) {
    std::string key;
    for (const std::string &w : flowspec_words(r)) key.append(key.empty() ? "" : " ").append(w);
    return key;
}

std::vector<std::string> rule_call(const FlowspecRule &r, const char *verb) {
    std::vector<std::string> args = {
        "global", "rib", "-a", r.source.family == 4 ? "ipv4-flowspec" : "ipv6-flowspec", verb};
    for (std::string &w : flowspec_words(r)) args.push_back(std::move(w));
    return args;
}

}  // namespace

bool FlowspecRule::operator==(const FlowspecRule &o) const {
    auto ports = [](const std::optional<PortRange> &p) {
        return p ? std::optional(std::pair(p->lo, p->hi)) : std::nullopt;
    };
    return source == o.source && destination == o.destination && protocol == o.protocol &&
           ports(destination_port) == ports(o.destination_port);
}

std::vector<std::string> flowspec_words(const FlowspecRule &r) {
    std::vector<std::string> w = {"match", "source", format_prefix(r.source)};
    if (r.destination) {
        w.push_back("destination");
        w.push_back(format_prefix(*r.destination));
    }
    // Numbers, not gobgp's names: it has names for a dozen protocols only.
    if (r.protocol) {
        w.push_back("protocol");
        w.push_back("==" + std::to_string(*r.protocol));
    }
    if (const std::optional<PortRange> &p = r.destination_port) {
        w.push_back("destination-port");
        w.push_back(p->lo == p->hi ? "==" + std::to_string(p->lo)
                                   : ">=" + std::to_string(p->lo) + "&<=" + std::to_string(p->hi));
    }
    w.push_back("then");
    w.push_back("discard");
    return w;
}

FlowspecExporter::FlowspecExporter(FlowspecOptions o) : o_(std::move(o)) {
    o_.max_announced = std::min(o_.max_announced, kMaxAnnounced);
    if (!(o_.max_new_per_s > 0)) o_.max_new_per_s = 0;  // NaN too: nothing new
    tokens_ = burst();
}

double FlowspecExporter::burst() const {
    return o_.max_new_per_s > 0 ? std::max(1.0, o_.max_new_per_s) : 0;
}

void FlowspecExporter::refill(uint64_t now_ns) {
    if (refill_ns_ && now_ns > *refill_ns_)
        tokens_ = std::min(
            burst(), tokens_ + static_cast<double>(now_ns - *refill_ns_) * 1e-9 * o_.max_new_per_s);
    refill_ns_ = now_ns;  // a clock that went back refills nothing
}

bool FlowspecExporter::call(std::vector<std::string> args, std::string *out) {
    args.insert(args.begin(), {o_.gobgp, "--target", o_.api});
    std::string ignored, error;
    if (run_cli(args, o_.call_timeout_ms, kMaxOutputBytes, out != nullptr ? out : &ignored, &error))
        return true;
    ++counters_.failed_calls;
    last_error_ = error;
    synced_ = false;  // the call may or may not have changed the RIB: read it next time
    return false;
}

bool FlowspecExporter::read_family(RibFamily f, RibRead *read) {
    const char *name = family_name(f);
    std::string out, error;
    if (!call({"-j", "global", "rib", "-a", name}, &out)) return false;
    if (parse_rib(out, f, read, &error)) return true;
    ++counters_.failed_calls;
    last_error_ = std::string("gobgp -j global rib -a ") + name + ": " + error;
    synced_ = false;
    return false;
}

bool FlowspecExporter::read_rib() {
    synced_ = false;
    announced_.clear();
    blackholes_.clear();
    held_.clear();
    blackholes_held_.clear();
    just_added_.clear();
    touched_ = 0;
    for (RibFamily f :
         {RibFamily::flowspec4, RibFamily::flowspec6, RibFamily::unicast4, RibFamily::unicast6}) {
        const char *name = family_name(f);
        RibRead read;
        if (!read_family(f, &read)) return false;
        if (read.foreign > 0) {
            // No words of ours remove a path we cannot read: its whole family goes (only the
            // local paths), and what is desired of it is announced again.
            if (!call({"global", "rib", "-a", name, "del", "all"}, nullptr)) return false;
            counters_.stale_withdrawn += read.foreign + read.rules.size() + read.blackholes.size();
            continue;
        }
        for (FlowspecRule &r : read.rules) announced_.emplace(match_key(r), std::move(r));
        blackholes_.insert(read.blackholes.begin(), read.blackholes.end());
    }
    for (const auto &[key, rule] : announced_) held_.insert(key);
    blackholes_held_ = blackholes_;
    synced_ = true;
    return true;
}

// Reads back each family changed since the last read, and fails the reconcile's check where a
// route added was not there. It is not added again until the next resync reads the RIB:
// gobgpd refuses it the same way each time, and a call a second would only load it.
bool FlowspecExporter::read_back(uint8_t families) {
    for (RibFamily f :
         {RibFamily::flowspec4, RibFamily::flowspec6, RibFamily::unicast4, RibFamily::unicast6}) {
        if ((families & bit(f)) == 0) continue;
        RibRead read;
        if (!read_family(f, &read)) return false;
        if (f == RibFamily::flowspec4 || f == RibFamily::flowspec6) {
            const uint8_t ip = f == RibFamily::flowspec4 ? 4 : 6;
            std::erase_if(held_, [&](const std::string &key) {
                const auto it = announced_.find(key);
                return it == announced_.end() || it->second.source.family == ip;
            });
            for (const FlowspecRule &r : read.rules) held_.insert(match_key(r));
        } else {
            const uint8_t ip = f == RibFamily::unicast4 ? 4 : 6;
            std::erase_if(blackholes_held_, [ip](const Prefix &p) { return p.family == ip; });
            blackholes_held_.insert(read.blackholes.begin(), read.blackholes.end());
        }
        touched_ &= static_cast<uint8_t>(~bit(f));
    }
    std::string refused;
    size_t n = 0;
    for (const std::string &key : just_added_) {
        const auto it = announced_.find(key);
        if (it == announced_.end() || held_.contains(key)) continue;
        ++n;
        if (refused.empty()) refused = key.substr(sizeof "match") + " (" + it->second.origin + ")";
    }
    for (const Prefix &p : blackholes_)
        if (just_added_.contains(format_prefix(p)) && !blackholes_held_.contains(p)) {
            ++n;
            if (refused.empty()) refused = "blackhole " + format_prefix(p);
        }
    just_added_.clear();
    counters_.missing_after_add += n;
    if (n > 0)
        last_error_ = std::to_string(n) +
                      " route(s) added but not in gobgpd's RIB read back (its import policy "
                      "refused them?): " +
                      refused;
    return true;
}

bool FlowspecExporter::withdraw_rule(std::map<std::string, FlowspecRule>::iterator it,
                                     uint64_t *count) {
    if (!call(rule_call(it->second, "del"), nullptr)) return false;
    ++*count;
    touched_ |= bit(rule_family(it->second));
    announced_.erase(it);
    return true;
}

bool FlowspecExporter::withdraw_undesired(const Desired &d, uint64_t *count) {
    for (auto it = announced_.begin(); it != announced_.end();) {
        auto next = std::next(it);
        if (!d.rank.contains(it->first) && !withdraw_rule(it, count)) return false;
        it = next;
    }
    return true;
}

// The announced rule last in the desired order (all announced rules are desired here).
bool FlowspecExporter::withdraw_least(const Desired &d) {
    auto least = announced_.begin();
    for (auto it = announced_.begin(); it != announced_.end(); ++it)
        if (d.rank.at(it->first) > d.rank.at(least->first)) least = it;
    return withdraw_rule(least, &counters_.withdrawn);
}

bool FlowspecExporter::set_blackholes(const std::set<Prefix> &wanted, uint64_t *withdrawn) {
    for (auto it = blackholes_.begin(); it != blackholes_.end();) {
        if (wanted.contains(*it)) {
            ++it;
            continue;
        }
        if (!call({"global", "rib", "-a", it->family == 4 ? "ipv4" : "ipv6", "del",
                   format_prefix(*it)},
                  nullptr))
            return false;
        ++*withdrawn;
        touched_ |= bit(it->family == 4 ? RibFamily::unicast4 : RibFamily::unicast6);
        it = blackholes_.erase(it);
    }
    for (const Prefix &p : wanted) {
        if (blackholes_.contains(p)) continue;
        const bool v4 = p.family == 4;
        if (!call({"global", "rib", "-a", v4 ? "ipv4" : "ipv6", "add", format_prefix(p), "nexthop",
                   v4 ? o_.rtbh_next_hop4 : o_.rtbh_next_hop6, "community", "65535:666"},
                  nullptr))
            return false;
        ++counters_.announced;
        touched_ |= bit(v4 ? RibFamily::unicast4 : RibFamily::unicast6);
        just_added_.insert(format_prefix(p));
        blackholes_.insert(p);
    }
    return true;
}

bool FlowspecExporter::apply(const Desired &d, uint64_t now_ns) {
    const uint64_t resync_ns =
        static_cast<uint64_t>(std::max(o_.resync_interval_ms, 0)) * 1'000'000;
    if (!synced_ || now_ns < synced_ns_ || now_ns - synced_ns_ >= resync_ns) {
        if (!read_rib()) return false;
        synced_ns_ = now_ns;
        // What was found there and is not desired is stale: a crash's leftovers.
        if (!withdraw_undesired(d, &counters_.stale_withdrawn)) return false;
        std::set<Prefix> keep;
        std::set_intersection(blackholes_.begin(), blackholes_.end(), d.sources.begin(),
                              d.sources.end(), std::inserter(keep, keep.end()));
        if (!set_blackholes(keep, &counters_.stale_withdrawn)) return false;
    }
    if (!withdraw_undesired(d, &counters_.withdrawn)) return false;
    // A RIB read holding more than max_announced (a smaller limit than a run before's).
    while (announced_.size() > o_.max_announced)
        if (!withdraw_least(d)) return false;
    for (size_t i = 0; i < d.limit; ++i) {
        const auto &[key, rule] = d.order[i];
        if (auto it = announced_.find(key); it != announced_.end()) {
            it->second.origin = rule->origin;
            continue;
        }
        if (tokens_ < 1) continue;
        // Full: one past the limit makes way (announced_ holds max_announced rules, this one
        // among the first limit is not one of them, so one of them is ranked past the limit).
        if (announced_.size() >= o_.max_announced && !withdraw_least(d)) return false;
        if (!call(rule_call(*rule, "add"), nullptr)) {
            last_error_ += " (" + rule->origin + ")";
            return false;
        }
        tokens_ -= 1;
        ++counters_.announced;
        touched_ |= bit(rule_family(*rule));
        just_added_.insert(key);
        announced_.emplace(key, *rule);
    }
    std::set<Prefix> wanted;
    for (const auto &[key, rule] : announced_)
        if (o_.rtbh && is_host(rule.source)) wanted.insert(rule.source);
    return set_blackholes(wanted, &counters_.withdrawn) && read_back(touched_);
}

void FlowspecExporter::tally(const Desired *d) {
    counters_.asked = announced_.size();
    counters_.in_rib = counters_.missing = 0;
    for (const auto &[key, rule] : announced_)
        ++(held_.contains(key) ? counters_.in_rib : counters_.missing);
    counters_.blackholes_asked = blackholes_.size();
    counters_.blackholes_in_rib = counters_.blackholes_missing = 0;
    for (const Prefix &p : blackholes_)
        ++(blackholes_held_.contains(p) ? counters_.blackholes_in_rib
                                        : counters_.blackholes_missing);
    counters_.withheld_limit = counters_.withheld_rate = 0;
    if (d == nullptr) return;
    for (size_t i = 0; i < d->order.size(); ++i)
        if (!announced_.contains(d->order[i].first))
            ++(i < d->limit ? counters_.withheld_rate : counters_.withheld_limit);
}

std::vector<FlowspecExporter::RuleState> FlowspecExporter::rule_states() const {
    std::vector<RuleState> states;
    states.reserve(announced_.size());
    for (const auto &[key, rule] : announced_)
        states.push_back({key, rule.origin, held_.contains(key)});
    return states;
}

void FlowspecExporter::reconcile(const std::vector<FlowspecRule> &desired, uint64_t now_ns) {
    try {
        refill(now_ns);
        Desired d;
        counters_.invalid = counters_.refused_short_source = counters_.refused_never_block = 0;
        for (const FlowspecRule &r : desired) {
            if (!valid(r)) {
                ++counters_.invalid;
                continue;
            }
            if (r.source.len < (r.source.family == 4 ? o_.min_source_len4 : o_.min_source_len6)) {
                ++counters_.refused_short_source;
                continue;
            }
            if (std::any_of(o_.never_block.begin(), o_.never_block.end(),
                            [&r](const Prefix &p) { return overlaps(p, r.source); })) {
                ++counters_.refused_never_block;
                continue;
            }
            std::string key = match_key(r);
            if (!d.rank.emplace(key, d.order.size()).second) continue;
            d.order.emplace_back(std::move(key), &r);
            if (o_.rtbh && is_host(r.source)) d.sources.insert(r.source);
        }
        d.limit = std::min(d.order.size(), o_.max_announced);
        apply(d, now_ns);
        tally(&d);
    } catch (const std::exception &e) {  // memory: the next call reads the RIB again
        last_error_ = e.what();
        synced_ = false;
    }
}

void FlowspecExporter::withdraw_all() {
    try {
        if (synced_ || read_rib()) {
            for (RibFamily f : {RibFamily::flowspec4, RibFamily::flowspec6}) {
                const uint8_t ip = f == RibFamily::flowspec4 ? 4 : 6;
                const size_t n =
                    std::count_if(announced_.begin(), announced_.end(),
                                  [ip](const auto &a) { return a.second.source.family == ip; });
                if (n == 0) continue;
                if (!call({"global", "rib", "-a", family_name(f), "del", "all"}, nullptr)) break;
                counters_.withdrawn += n;
                std::erase_if(announced_,
                              [ip](const auto &a) { return a.second.source.family == ip; });
            }
            if (announced_.empty()) set_blackholes({}, &counters_.withdrawn);
        }
        tally(nullptr);
    } catch (const std::exception &e) {
        last_error_ = e.what();
        synced_ = false;
    }
}

}  // namespace floodgate
