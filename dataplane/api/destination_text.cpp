#include "dataplane/api/destination_text.h"

#include <algorithm>
#include <cstdio>

#include "dataplane/api/stats_text.h"

namespace floodgate {

using nlohmann::json;

std::vector<DestinationRow> nearest_destinations(const json &stats, const std::string &rule) {
    std::vector<DestinationRow> rows;
    for (const json &r : stats.value("rules", json::array())) {
        const std::string name = r.value("name", "");
        if (!rule.empty() && name != rule) continue;
        const double k = r.value("load_high_ratio", 0.0);
        for (const json &d : r.value("destinations", json::array())) {
            const double rate = d.value("rate", 0.0);
            const double limit = d.value("limit_per_s", 0.0);
            double nearness = k > 0 ? d.value("ratio", 0.0) / k : 0;
            if (limit > 0) nearness = std::max(nearness, rate / limit);
            rows.push_back({name, d, nearness});
        }
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const DestinationRow &a, const DestinationRow &b) {
                         const bool ha = a.destination.value("load_high", false);
                         const bool hb = b.destination.value("load_high", false);
                         if (ha != hb) return ha;
                         return a.nearness > b.nearness;
                     });
    return rows;
}

std::string destination_header(size_t rule_width) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%-*s %-24s %9s %9s %9s %9s %9s %7s",
                  static_cast<int>(rule_width), "RULE", "DESTINATION", "RATE/s", "PASS/s",
                  "LIMIT/s", "HEADROOM", "BASELINE", "RATIO");
    return buf;
}

std::string destination_line(const DestinationRow &row, size_t rule_width) {
    const json &d = row.destination;
    const bool limited = d.contains("limit_per_s");
    const bool based = d.value("epochs", 0u) >= 2;
    char ratio[32] = "-";
    if (based) std::snprintf(ratio, sizeof ratio, "x%.1f", d.value("ratio", 0.0));
    char buf[320];
    std::snprintf(buf, sizeof buf, "%-*s %-24s %9s %9s %9s %9s %9s %7s%s",
                  static_cast<int>(rule_width), row.rule.c_str(),
                  d.value("destination", "").c_str(), si(d.value("rate", 0.0)).c_str(),
                  si(d.value("passed_rate", 0.0)).c_str(),
                  limited ? si(d.value("limit_per_s", 0.0)).c_str() : "-",
                  limited ? si(d.value("headroom", 0.0)).c_str() : "-",
                  based ? si(d.value("baseline", 0.0)).c_str() : "-", ratio,
                  d.value("load_high", false) ? "  LOAD HIGH" : "");
    return buf;
}

}  // namespace floodgate
