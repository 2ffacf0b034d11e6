#include "dataplane/api/stats_rates.h"

#include <optional>
#include <string>

namespace floodgate {

namespace {

using nlohmann::json;

std::optional<uint64_t> counter(const json &j, const char *field) {
    const auto it = j.find(field);
    if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
    return it->get<uint64_t>();
}

// Sets out[name] to the rate of j[field] between a and b; leaves it out if it went down.
void rate(json *out, const char *name, const json &a, const json &b, const char *field,
          double interval_s, double scale = 1) {
    const auto x = counter(a, field), y = counter(b, field);
    if (!x || !y || *y < *x) return;
    (*out)[name] = static_cast<double>(*y - *x) * scale / interval_s;
}

// The element of doc[list] whose key is value.
const json *find_named(const json &doc, const char *list, const char *key, const json &value) {
    const auto it = doc.find(list);
    if (it == doc.end() || !it->is_array()) return nullptr;
    for (const json &x : *it)
        if (x.is_object() && x.contains(key) && x[key] == value) return &x;
    return nullptr;
}

const char *const kTotals[] = {"packets",    "passed",    "dropped", "rate_limited",
                               "block_hits", "malformed", "answered"};
const char *const kRule[] = {"matched",        "passed", "refused",      "answered",
                             "shadow_refused", "shaped", "shape_dropped"};
const char *const kDirection[] = {"rx", "tx", "tx_failed"};

}  // namespace

json stats_rates(const json &before, const json &after, double fallback_interval_s) {
    double interval_s = fallback_interval_s;
    const auto t0 = counter(before, "sampled_ns"), t1 = counter(after, "sampled_ns");
    if (t0 && t1) interval_s = *t1 > *t0 ? static_cast<double>(*t1 - *t0) / 1e9 : 0;
    if (!(interval_s > 0)) return nullptr;
    json r = {{"interval_s", interval_s}};
    for (const char *f : kTotals) rate(&r, f, before, after, f, interval_s);
    json rules = json::array();
    for (const json &b : after.value("rules", json::array())) {
        const json name = b.value("name", json());
        const json *a = find_named(before, "rules", "name", name);
        if (a == nullptr) continue;
        json row = {{"name", name}};
        for (const char *f : kRule) rate(&row, f, *a, b, f, interval_s);
        rules.push_back(row);
    }
    r["rules"] = rules;
    json ports = json::array();
    for (const json &b : after.value("nic", json::array())) {
        const json port = b.value("port", json());
        const json *a = find_named(before, "nic", "port", port);
        if (a == nullptr) continue;
        json row = {{"port", port}, {"role", b.value("role", "")}};
        rate(&row, "rx_pps", *a, b, "rx_packets", interval_s);
        rate(&row, "rx_bps", *a, b, "rx_bytes", interval_s, 8);
        rate(&row, "tx_pps", *a, b, "tx_packets", interval_s);
        rate(&row, "tx_bps", *a, b, "tx_bytes", interval_s, 8);
        rate(&row, "rx_missed_pps", *a, b, "rx_missed", interval_s);
        json errors = json::object();
        rate(&errors, "rx", *a, b, "rx_errors", interval_s);
        rate(&errors, "tx", *a, b, "tx_errors", interval_s);
        if (errors.contains("rx") && errors.contains("tx"))
            row["errors_pps"] = errors["rx"].get<double>() + errors["tx"].get<double>();
        ports.push_back(row);
    }
    r["ports"] = ports;
    json directions = json::object();
    const json after_dirs = after.value("ports", json::object());
    const json before_dirs = before.value("ports", json::object());
    if (after_dirs.is_object() && before_dirs.is_object()) {
        for (const auto &[name, b] : after_dirs.items()) {
            const auto a = before_dirs.find(name);
            if (a == before_dirs.end() || !a->is_object() || !b.is_object()) continue;
            json row = json::object();
            for (const char *f : kDirection)
                rate(&row, (std::string(f) + "_pps").c_str(), *a, b, f, interval_s);
            directions[name] = row;
        }
    }
    r["directions"] = directions;
    return r;
}

json stats_rates_since_start(const json &stats, double uptime_s) {
    // Zero counters with the same names and ports as the stats: a start from nothing.
    json zero = json::object();
    for (const char *f : kTotals) zero[f] = uint64_t{0};
    zero["rules"] = json::array();
    for (const json &r : stats.value("rules", json::array())) {
        json row = {{"name", r.value("name", json())}};
        for (const char *f : kRule) row[f] = uint64_t{0};
        zero["rules"].push_back(row);
    }
    zero["nic"] = json::array();
    for (const json &n : stats.value("nic", json::array())) {
        json row = {{"port", n.value("port", json())}};
        for (const auto &[k, v] : n.items())
            if (v.is_number_unsigned() && k != "port") row[k] = uint64_t{0};
        zero["nic"].push_back(row);
    }
    zero["ports"] = json::object();
    const json dirs = stats.value("ports", json::object());
    if (dirs.is_object())
        for (const auto &[name, d] : dirs.items()) {
            zero["ports"][name] = json::object();
            for (const char *f : kDirection) zero["ports"][name][f] = uint64_t{0};
        }
    json s = stats;
    s.erase("sampled_ns");
    return stats_rates(zero, s, uptime_s);
}

}  // namespace floodgate
