#include "dataplane/replay/report_destinations.h"

#include <cstdio>

#include "dataplane/replay/report.h"

namespace floodgate {

namespace {

std::string number(const nlohmann::ordered_json &d, const char *field) {
    const auto it = d.find(field);
    if (it == d.end() || !it->is_number()) return "&#8212;";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.2f", it->get<double>());
    return buf;
}

}  // namespace

std::string report_destinations(const nlohmann::ordered_json &rule) {
    std::string o = "<h3>Destinations in the last whole second</h3>\n";
    const auto rows = rule.find("destinations");
    if (rows == rule.end() || !rows->is_array() || rows->empty())
        return o + "<p class=\"note\">No packet in the last whole second.</p>\n";
    o += "<table class=\"destinations\" data-rule=\"" + html_escape(rule.value("name", "")) +
         "\">\n<thead><tr><th>Destination</th><th class=\"num\">Rate/s</th>"
         "<th class=\"num\">Passed/s</th><th class=\"num\">Limit/s</th>"
         "<th class=\"num\">Headroom/s</th><th class=\"num\">Baseline/s</th>"
         "<th class=\"num\">Ratio</th><th>Load high</th></tr></thead>\n<tbody>\n";
    for (const auto &d : *rows) {
        const bool high = d.value("load_high", false);
        const bool based = d.value("epochs", 0u) >= 2;
        o += std::string("<tr class=\"destination") + (high ? " high" : "") + "\"><td><code>" +
             html_escape(d.value("destination", "")) + "</code></td><td class=\"num\">" +
             number(d, "rate") + "</td><td class=\"num\">" + number(d, "passed_rate") +
             "</td><td class=\"num\">" + number(d, "limit_per_s") + "</td><td class=\"num\">" +
             number(d, "headroom") + "</td><td class=\"num\">" +
             (based ? number(d, "baseline") : "&#8212;") + "</td><td class=\"num\">" +
             (based ? number(d, "ratio") : "&#8212;") + "</td><td>" + (high ? "yes" : "") +
             "</td></tr>\n";
    }
    o += "</tbody>\n</table>\n";
    o += "<p class=\"note\">The busiest destinations of the rule, from a Space-Saving summary per "
         "rule and core; the baseline is each one&#39;s rate averaged over about 256 s. Load "
         "high: over 4 times its baseline (after 8 s) while the rule passes 99% of it.</p>\n";
    return o;
}

}  // namespace floodgate
