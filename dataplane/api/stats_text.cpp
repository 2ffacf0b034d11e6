#include "dataplane/api/stats_text.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "dataplane/api/destination_text.h"

namespace floodgate {

namespace {

constexpr size_t kDestinationsShown = 5;  // in the document's text: the nearest

using nlohmann::json;

uint64_t u64(const json &j, const char *field) {
    const auto it = j.find(field);
    return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

double num(const json &j, const char *field) {
    const auto it = j.find(field);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string str(const json &j, const char *field) {
    const auto it = j.find(field);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *format, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, format);
    std::vsnprintf(buf, sizeof buf, format, ap);
    va_end(ap);
    return buf;
}

using ull = unsigned long long;

// "1.23 Mpps" or "-" when the rate is not known (a counter went down).
std::string pps(const json &rates, const char *field) {
    return rates.contains(field) ? si(num(rates, field)) + "pps" : "-";
}

}  // namespace

std::string si(double v) {
    const char *units[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (std::fabs(v) >= 1000 && u < 4) v /= 1000, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

std::string refused_bound_text(const json &t) {
    const uint64_t count = u64(t, "count"), error = u64(t, "error");
    // An estimate from samples: its centre and half-width, Space-Saving's error included.
    if (const uint64_t sampling = u64(t, "sampling_error"); sampling != 0) {
        const uint64_t half = error / 2;
        return "about " + std::to_string(count - std::min(half, count)) + ", +-" +
               std::to_string(sampling + (error - half)) + " at confidence " +
               fmt("%g%%", t.value("confidence", 0.0) * 100);
    }
    if (error == 0) return std::to_string(count);
    return "at least " + std::to_string(count - std::min(error, count)) + ", at most " +
           std::to_string(count);
}

std::string utc_text(double unix_s) {
    const std::time_t t = static_cast<std::time_t>(unix_s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

std::string stats_text(const json &s) {
    std::string o;
    o +=
        fmt("packets %llu: passed %llu, dropped %llu (rate-limited %llu, blocked %llu, "
            "malformed %llu, syn-auth replies %llu); allow-listed %llu, non-IP %llu\n",
            (ull)u64(s, "packets"), (ull)u64(s, "passed"), (ull)u64(s, "dropped"),
            (ull)u64(s, "rate_limited"), (ull)u64(s, "block_hits"), (ull)u64(s, "malformed"),
            (ull)u64(s, "syn_auth_replies"), (ull)u64(s, "allow_hits"), (ull)u64(s, "non_ip"));
    if (const auto t = s.find("table"); t != s.end() && t->is_object()) {
        const double cap = static_cast<double>(u64(*t, "capacity"));
        o += fmt("table %llu of %llu keys (%.1f%%), %llu reclaimed, %llu full events\n",
                 (ull)u64(*t, "occupancy"), (ull)u64(*t, "capacity"),
                 cap > 0 ? 100.0 * static_cast<double>(u64(*t, "occupancy")) / cap : 0.0,
                 (ull)u64(*t, "reclaims"), (ull)u64(*t, "full_events"));
    }
    // Ports that were lost (a live run's port watch): the operator's first question after one.
    for (const json &n : s.value("nic", json::array()))
        if (u64(n, "losses") != 0 || str(n, "link") == "down")
            o += fmt("port %llu (%s): link %s, lost %llu time%s\n", (ull)u64(n, "port"),
                     str(n, "role").c_str(), str(n, "link").c_str(), (ull)u64(n, "losses"),
                     u64(n, "losses") == 1 ? "" : "s");
    const json reasons = s.value("malformed_reasons", json::object());
    for (const auto &[reason, n] : reasons.items())
        if (n.is_number() && n.get<uint64_t>() != 0)
            o += fmt("  malformed %s: %llu\n", reason.c_str(), (ull)n.get<uint64_t>());
    if (u64(s, "answered") != 0 || u64(s, "answer_capped") != 0 ||
        u64(s, "syn_auth_replies") != 0) {
        std::string kinds;
        const json by_kind = s.value("answers_by_kind", json::object());
        for (const auto &[kind, n] : by_kind.items())
            kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(n.get<uint64_t>());
        o += fmt("answered %llu (%s), %llu bytes; capped %llu; cookies failed %llu\n",
                 (ull)u64(s, "answered"), kinds.c_str(), (ull)u64(s, "answered_bytes"),
                 (ull)u64(s, "answer_capped"), (ull)u64(s, "cookie_failed"));
    }
    if (u64(s, "proxy_opened") != 0 || u64(s, "proxy_table_full") != 0 ||
        u64(s, "proxy_cookie_failed") != 0)
        o +=
            fmt("syn-proxy: %llu opened, %llu established, %llu refused by the server, %llu timed "
                "out, %llu table full, %llu cookies failed; %llu segments translated, %llu held "
                "(%llu dropped); %llu connections now\n",
                (ull)u64(s, "proxy_opened"), (ull)u64(s, "proxy_established"),
                (ull)u64(s, "proxy_server_refused"), (ull)u64(s, "proxy_server_timeout"),
                (ull)u64(s, "proxy_table_full"), (ull)u64(s, "proxy_cookie_failed"),
                (ull)u64(s, "proxy_translated"), (ull)u64(s, "proxy_held"),
                (ull)u64(s, "proxy_held_dropped"), (ull)u64(s, "proxy_connections"));
    if (u64(s, "established_marked") != 0 || u64(s, "established_full") != 0)
        o += fmt("established: %llu replies marked their destination, %llu found the table full\n",
                 (ull)u64(s, "established_marked"), (ull)u64(s, "established_full"));
    // The XDP tier, when the dataplane runs it: what died in the driver, before it counted in
    // "packets" above.
    if (const auto x = s.find("xdp"); x != s.end() && x->is_object()) {
        const json c = x->value("counters", json::object()),
                   e = x->value("escalations", json::object()),
                   n = x->value("entries", json::object());
        o +=
            fmt("xdp on %s: frames %llu, passed %llu, dropped in the driver %llu (blocked %llu, "
                "escalated %llu); entries: rules %llu, overrides %llu, operator %llu, escalated "
                "%llu; escalations %llu (expired %llu, failed %llu)\n",
                str(*x, "iface").c_str(), (ull)u64(c, "packets"), (ull)u64(c, "passed"),
                (ull)(u64(c, "block_hits") + u64(c, "escalated_hits")), (ull)u64(c, "block_hits"),
                (ull)u64(c, "escalated_hits"), (ull)u64(n, "rules"), (ull)u64(n, "override"),
                (ull)u64(n, "operator"), (ull)u64(n, "escalated"), (ull)u64(e, "total"),
                (ull)u64(e, "expired"), (ull)u64(e, "failed"));
    }
    const json rules = s.value("rules", json::array());
    // matched = passed + refused + overruled on every line (docs/replay.md, "Counters").
    o += fmt("%-20s %-8s %14s %14s %14s %14s %14s\n", "rule", "mode", "matched", "passed",
             "refused", "overruled", "shadow-refused");
    for (const json &x : rules)
        o += fmt("%-20s %-8s %14llu %14llu %14llu %14llu %14llu\n", str(x, "name").c_str(),
                 str(x, "mode").c_str(), (ull)u64(x, "matched"), (ull)u64(x, "passed"),
                 (ull)u64(x, "refused"), (ull)u64(x, "overruled"), (ull)u64(x, "shadow_refused"));
    // refused = answered + capped + skipped + unanswered, for the rules that answer.
    bool header = false;
    for (const json &x : rules) {
        if (x.value("action", "drop") == "drop") continue;
        if (!header)
            o += fmt("%-20s %-16s %14s %14s %14s %14s %14s\n", "rule", "action", "answered",
                     "capped", "skipped", "unanswered", "verified");
        header = true;
        o += fmt("%-20s %-16s %14llu %14llu %14llu %14llu %14llu\n", str(x, "name").c_str(),
                 str(x, "action").c_str(), (ull)u64(x, "answered"), (ull)u64(x, "answer_capped"),
                 (ull)u64(x, "answer_skipped"), (ull)u64(x, "unanswered"), (ull)u64(x, "verified"));
    }
    // Shape rules: delayed = shaped + flushed + held; dropped (a full queue) is of refused.
    header = false;
    for (const json &x : rules) {
        if (x.value("action", "drop") != "shape") continue;
        if (!header)
            o += fmt("%-20s %14s %14s %14s %14s %10s %14s\n", "rule", "delayed", "shaped",
                     "flushed", "queue-full", "held", "longest-wait");
        header = true;
        o += fmt("%-20s %14llu %14llu %14llu %14llu %10llu %12.3f s\n", str(x, "name").c_str(),
                 (ull)u64(x, "delayed"), (ull)u64(x, "shaped"), (ull)u64(x, "shape_flushed"),
                 (ull)u64(x, "shape_dropped"), (ull)u64(x, "held"),
                 static_cast<double>(u64(x, "longest_wait_ns")) / 1e9);
    }
    // Adaptive rules: the rate learned now, its bounds, and the samples that moved it.
    header = false;
    for (const json &x : rules) {
        const auto a = x.find("adaptive");
        if (a == x.end() || !a->is_object()) continue;
        if (!header)
            o += fmt("%-20s %12s %21s %10s %10s %10s %10s %12s %s\n", "rule", "limit/s",
                     "adaptive min-max/s", "target", "samples", "late", "cuts", "response", "");
        header = true;
        o += fmt("%-20s %12.1f %10.1f-%-10.1f %7.1f ms %10llu %10llu %10llu %9.1f ms %s\n",
                 str(x, "name").c_str(), x.value("limit_per_s", 0.0), a->value("min_per_s", 0.0),
                 a->value("max_per_s", 0.0), static_cast<double>(u64(*a, "target_ns")) / 1e6,
                 (ull)u64(*a, "samples"), (ull)u64(*a, "late"), (ull)u64(*a, "decreases"),
                 static_cast<double>(u64(*a, "last_response_ns")) / 1e6,
                 a->value("stale", false) ? "STALE (no samples: the rate holds)" : "");
    }
    // Aggregate rules: refused = the four classes' refusals; the reserve's admissions beside.
    header = false;
    for (const json &x : rules) {
        const std::string key = x.value("key", "src");
        if (key != "dst" && key != "none") continue;
        if (!header)
            o += fmt("%-20s %-5s %12s %12s %12s %12s | %14s %14s %14s\n", "rule", "key",
                     "refused:est", "verified", "known", "new", "reserve:est", "verified", "known");
        header = true;
        o += fmt("%-20s %-5s %12llu %12llu %12llu %12llu | %14llu %14llu %14llu\n",
                 str(x, "name").c_str(), key.c_str(), (ull)u64(x, "refused_established"),
                 (ull)u64(x, "refused_verified"), (ull)u64(x, "refused_known"),
                 (ull)u64(x, "refused_new"), (ull)u64(x, "reserve_established"),
                 (ull)u64(x, "reserve_verified"), (ull)u64(x, "reserve_known"));
    }
    for (const json &x : rules) {
        const json top = x.value("top_refused", json::array());
        if (top.empty()) continue;
        o += "top refused, rule " + str(x, "name") + ":\n";
        for (const json &t : top)
            o += fmt("  %-45s refused %s\n", str(t, "source").c_str(),
                     refused_bound_text(t).c_str());
    }
    // Destinations in the last whole second, nearest their limit or their signal first.
    const std::vector<DestinationRow> nearest = nearest_destinations(s);
    if (!nearest.empty()) o += "destinations, nearest first:\n" + destination_header() + "\n";
    for (size_t i = 0; i < nearest.size() && i < kDestinationsShown; ++i)
        o += destination_line(nearest[i]) + "\n";
    return o;
}

std::string rates_text(const json &r, const std::string &indent) {
    if (!r.is_object()) return indent + "no rates yet\n";
    std::string o;
    o += indent +
         fmt("decided %s: passed %s, dropped %s (rate-limited %s, blocked %s, malformed %s); "
             "answered %s\n",
             pps(r, "packets").c_str(), pps(r, "passed").c_str(), pps(r, "dropped").c_str(),
             pps(r, "rate_limited").c_str(), pps(r, "block_hits").c_str(),
             pps(r, "malformed").c_str(), pps(r, "answered").c_str());
    for (const json &x : r.value("rules", json::array()))
        o += indent + fmt("rule %-20s matched %12s  passed %12s  refused %12s  answered %12s\n",
                          str(x, "name").c_str(), pps(x, "matched").c_str(),
                          pps(x, "passed").c_str(), pps(x, "refused").c_str(),
                          pps(x, "answered").c_str());
    for (const json &p : r.value("ports", json::array()))
        o += indent + fmt("port %llu (%s): rx %s %sbit/s, tx %s %sbit/s, missed %s\n",
                          (ull)u64(p, "port"), str(p, "role").c_str(), pps(p, "rx_pps").c_str(),
                          si(num(p, "rx_bps")).c_str(), pps(p, "tx_pps").c_str(),
                          si(num(p, "tx_bps")).c_str(), pps(p, "rx_missed_pps").c_str());
    return o;
}

}  // namespace floodgate
