// Rates, limits and durations: a rule's limit, the answer caps, the established class's TTL
// and escalation (rules/config_parser.h).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "dataplane/api/numbers.h"
#include "rules/config_parser.h"

namespace floodgate::validation {

namespace {

// burst * interval is the GCRA tolerance that the limiter adds to 64-bit timestamps; keeping
// it below 2^62 ns leaves headroom for that sum (a day's interval times 2^20 is past it).
constexpr uint64_t kMaxBurstWindowNs = 1ull << 62;

}  // namespace

// "10/s", "30/min", "1/h", "3/10m", "10000/d": a count, then a period as an optional
// multiplier and a unit.
void ConfigParser::rate(const Field &field, uint64_t *count_out, uint64_t *period_out) const {
    const std::string &text = scalar(field);
    const size_t slash = text.find('/');
    if (slash == std::string::npos)
        fail(field, "'" + text + "' has no unit (write N/s, N/min, N/h or N/d)");
    const std::string_view view = text;
    const std::string_view count_text = view.substr(0, slash);
    std::string_view unit = view.substr(slash + 1);
    uint64_t count = 0;
    auto [end, ec] =
        std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (count_text.empty() || end != count_text.data() + count_text.size() || ec != std::errc() ||
        count == 0)
        fail(field, "'" + text + "': the count must be a whole number of packets >= 1");
    const size_t digits = std::min(unit.find_first_not_of("0123456789"), unit.size());
    uint64_t multiplier = 1;
    if (digits > 0) {
        auto [m_end, m_ec] = std::from_chars(unit.data(), unit.data() + digits, multiplier);
        if (m_ec != std::errc() || multiplier == 0 || multiplier > kMaxRatePeriodNs)
            fail(field, "'" + text + "': the period's multiplier must be a whole number >= 1");
        unit.remove_prefix(digits);
    }
    uint64_t unit_ns = 0;
    for (const RateUnit &u : kRateUnits)
        if (u.name == unit) unit_ns = u.period_ns;
    if (unit_ns == 0) {
        fail(field, "'" + text + "': unknown unit '" + std::string(unit) + "' (expected " +
                        join_names(kRateUnits) + ")");
    }
    if (multiplier > kMaxRatePeriodNs / unit_ns)
        fail(field, "'" + text + "': the period is longer than 366 days");
    const uint64_t period_ns = multiplier * unit_ns;
    // The limiter counts whole nanoseconds between packets.
    if (count > period_ns) fail(field, "'" + text + "' is faster than one packet per nanosecond");
    *count_out = count;
    *period_out = period_ns;
}

// { rate, burst }, and for answers' caps the prefix fields named in extra.
RateLimit ConfigParser::rate_limit(const Field &field, const Fields &f) const {
    RateLimit l;
    rate(require(f, "rate"), &l.count, &l.period_ns);
    l.burst = static_cast<uint32_t>(integer(require(f, "burst"), 1, kMaxBurstPkts));
    if (l.interval_ns() > kMaxBurstWindowNs / l.burst)
        fail(field, "burst * interval exceeds 2^62 ns; lower the burst or raise the rate");
    return l;
}

void ConfigParser::limit(const Field &field, Rule *r) const {
    const Fields f = fields(field, {"rate", "burst", "adaptive"});
    if (!is_window(r->algorithm)) {  // gcra, token-bucket: a rate and a burst
        const RateLimit l = rate_limit(field, f);
        r->rate_count = l.count;
        r->rate_period_ns = l.period_ns;
        r->burst_pkts = l.burst;
        if (const Field *a = f.find("adaptive")) r->adaptive = adaptive(*a, *r);
        return;
    }
    if (const Field *a = f.find("adaptive"))
        fail(*a, std::string("adaptive moves a rate: it needs gcra or token-bucket, not ") +
                     rule_algorithm_name(r->algorithm));
    // A window: the rate's count is the window's limit N, its period the window W.
    const char *algorithm = rule_algorithm_name(r->algorithm);
    if (const Field *burst = f.find("burst"))
        fail(*burst, std::string("burst does not apply to ") + algorithm +
                         " (the rate's count is what one window admits)");
    const Field &rate_field = require(f, "rate");
    uint64_t n = 0, w_ns = 0;
    rate(rate_field, &n, &w_ns);
    const std::string &text = scalar(rate_field);
    if (w_ns < kMinWindowNs) fail(rate_field, "'" + text + "': a window must be >= 1 ms");
    if (n > kMaxWindowPkts)
        fail(rate_field, "'" + text + "': a window admits at most " +
                             std::to_string(kMaxWindowPkts) + " packets");
    // The encodings of window.h: a fixed window's count must be below W in ns, a sliding
    // window's two counts (N + 1)^2 at most W.
    if (r->algorithm == RuleAlgorithm::fixed_window && n >= w_ns)
        fail(rate_field, "'" + text +
                             "': a fixed window admits fewer packets than its "
                             "length in ns");
    if (r->algorithm == RuleAlgorithm::sliding_window && (n + 1) * (n + 1) > w_ns) {
        auto root = static_cast<uint64_t>(std::sqrt(static_cast<double>(w_ns)));
        while (root * root > w_ns) --root;
        while ((root + 1) * (root + 1) <= w_ns) ++root;
        const uint64_t largest = root - 1;  // the largest N with (N + 1)^2 <= W
        fail(rate_field, "'" + text + "': a sliding window of " + std::to_string(w_ns) +
                             " ns admits at most " + std::to_string(largest) +
                             " packets ((N + 1)^2 <= W in ns)");
    }
    r->rate_count = n;
    r->rate_period_ns = w_ns;
    r->burst_pkts = 0;
}

// established: { ttl, ipv4, ipv6 }: how long, and per what prefix, a source the protected
// side answered stays in the established class.
EstablishedOptions ConfigParser::established(const Field &field) const {
    EstablishedOptions e;
    const Fields f = fields(field, {"ttl", "ipv4", "ipv6"});
    if (const Field *ttl = f.find("ttl")) e.ttl_ns = duration_ns(*ttl, kMaxEstablishedTtlNs);
    // Not key_lengths(field): its own field list has no ttl.
    if (const Field *a = f.find("ipv4")) e.ipv4_len = static_cast<uint8_t>(integer(*a, 0, 32));
    if (const Field *a = f.find("ipv6")) e.ipv6_len = static_cast<uint8_t>(integer(*a, 0, 128));
    return e;
}

// escalate: { after, min_refused_rate, ttl }, each with its default (5s, 1000/s, 10m).
EscalateOptions ConfigParser::escalate(const Field &field, const Rule &r) const {
    if (r.key_kind != KeyKind::src)
        fail(field, std::string("escalate blocks sources: it needs a per-source key, not key ") +
                        key_kind_name(r.key_kind));
    EscalateOptions e;
    e.after_ns = 5'000'000'000ull;
    const Fields f = fields(field, {"after", "min_refused_rate", "ttl", "flowspec", "nic"});
    if (const Field *a = f.find("after")) e.after_ns = duration_ns(*a, kMaxEscalateNs);
    if (const Field *m = f.find("min_refused_rate"))
        rate(*m, &e.min_refused_count, &e.min_refused_period_ns);
    if (const Field *t = f.find("ttl")) e.ttl_ns = duration_ns(*t, kMaxEscalateNs);
    static constexpr std::pair<std::string_view, bool> kYesNo[] = {{"true", true},
                                                                   {"false", false}};
    if (const Field *fs = f.find("flowspec")) e.flowspec = choice(*fs, kYesNo);
    if (const Field *n = f.find("nic")) {
        e.nic = choice(*n, kYesNo);
        if (e.nic && !nic_tier_set_)
            fail(*n, "nic: true needs a nic_tier section at the top level");
    }
    return e;
}

// nic_tier: { max_rules, inserts_per_second, ttl }, each with its default (1000, 20, 10m).
NicTierOptions ConfigParser::nic_tier(const Field &field) const {
    NicTierOptions n;
    n.set = true;
    const Fields f = fields(field, {"max_rules", "inserts_per_second", "ttl"});
    if (const Field *m = f.find("max_rules"))
        n.max_rules = static_cast<uint32_t>(integer(*m, 1, kMaxNicRules));
    if (const Field *r = f.find("inserts_per_second"))
        n.inserts_per_second = static_cast<uint32_t>(integer(*r, 1, kMaxNicInsertsPerSecond));
    if (const Field *t = f.find("ttl")) n.ttl_ns = duration_ns(*t, kMaxEscalateNs);
    return n;
}

// A duration with its unit ("10m"), at least a second, at most max_ns.
uint64_t ConfigParser::duration_ns(const Field &field, uint64_t max_ns) const {
    std::string why;
    const std::optional<long long> s = parse_duration_s(scalar(field), &why);
    if (!s) fail(field, why);
    const auto ns = static_cast<uint64_t>(*s) * 1'000'000'000ull;  // s <= ten years
    if (ns > max_ns) fail(field, "'" + scalar(field) + "' is longer than a day");
    if (ns == 0) fail(field, "'" + scalar(field) + "' is no time at all");
    return ns;
}

// adaptive: { min, max, target, window, decrease, increase }: where the learned rate may go,
// the response time it keeps, and how it moves (rules.h, AdaptiveOptions).
AdaptiveOptions ConfigParser::adaptive(const Field &field, const Rule &r) const {
    const Fields f = fields(field, {"min", "max", "target", "window", "decrease", "increase"});
    AdaptiveOptions a;
    a.enabled = true;
    rate(require(f, "min"), &a.min_count, &a.min_period_ns);
    rate(require(f, "max"), &a.max_count, &a.max_period_ns);
    a.target_ns = short_duration_ns(require(f, "target"), kMaxAdaptiveTargetNs);
    if (const Field *w = f.find("window"))
        a.window = static_cast<uint32_t>(integer(*w, 1, kMaxAdaptiveWindow));
    if (const Field *d = f.find("decrease"))
        a.decrease_pct = static_cast<uint32_t>(percent(*d, 1, 90));
    if (const Field *i = f.find("increase"))
        a.increase_pct = static_cast<uint32_t>(percent(*i, 1, 100));
    // count / period compared as fractions: a * d <= c * b.
    const auto at_most = [](uint64_t a_count, uint64_t a_period, uint64_t b_count,
                            uint64_t b_period) {
        return static_cast<unsigned __int128>(a_count) * b_period <=
               static_cast<unsigned __int128>(b_count) * a_period;
    };
    if (!at_most(a.min_count, a.min_period_ns, a.max_count, a.max_period_ns))
        fail(field, "adaptive.min is above adaptive.max");
    if (!at_most(a.min_count, a.min_period_ns, r.rate_count, r.rate_period_ns) ||
        !at_most(r.rate_count, r.rate_period_ns, a.max_count, a.max_period_ns))
        fail(field, "the rate (where the limit starts) must lie between adaptive.min and max");
    return a;
}

// "20%" or "20": a whole percentage from lo to hi.
uint64_t ConfigParser::percent(const Field &field, uint64_t lo, uint64_t hi) const {
    std::string text = scalar(field);
    if (!text.empty() && text.back() == '%') text.pop_back();
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < lo || n > hi)
        fail(field, "'" + scalar(field) + "' must be a whole percentage from " +
                        std::to_string(lo) + "% to " + std::to_string(hi) + "%");
    return n;
}

// A short time, in whole milliseconds or seconds ("200ms", "2s"), from 1 ms to max_ns: a shape
// queue's wait, an adaptive limit's latency target.
uint64_t ConfigParser::short_duration_ns(const Field &field, uint64_t max_ns) const {
    const std::string &text = scalar(field);
    const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
    const std::string_view unit = std::string_view(text).substr(digits);
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, n);
    const uint64_t unit_ns = unit == "ms" ? 1'000'000ull : unit == "s" ? 1'000'000'000ull : 0;
    if (digits == 0 || ec != std::errc() || unit_ns == 0)
        fail(field, "'" + text + "' is not a time in whole ms or s (like 200ms, 2s)");
    if (n == 0 || n > max_ns / unit_ns)
        fail(field,
             "'" + text + "' must be from 1ms to " + std::to_string(max_ns / 1'000'000) + "ms");
    return n * unit_ns;
}

AnswerCaps ConfigParser::answer_caps(const Field &field) const {
    AnswerCaps caps;
    const Fields f = fields(field, {"per_destination", "per_core"});
    if (const Field *d = f.find("per_destination")) {
        const Fields df = fields(*d, {"rate", "burst", "ipv4", "ipv6"});
        caps.per_destination = rate_limit(*d, df);
        if (const Field *v4 = df.find("ipv4"))
            caps.destination_ipv4_len = static_cast<uint8_t>(integer(*v4, 0, 32));
        if (const Field *v6 = df.find("ipv6"))
            caps.destination_ipv6_len = static_cast<uint8_t>(integer(*v6, 0, 128));
    }
    if (const Field *c = f.find("per_core"))
        caps.per_core = rate_limit(*c, fields(*c, {"rate", "burst"}));
    return caps;
}

}  // namespace floodgate::validation
