#include "dataplane/replay/report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "dataplane/api/stats_text.h"
#include "dataplane/replay/report_destinations.h"

namespace floodgate {

BinLayout choose_bins(uint64_t first_ns, uint64_t last_ns) {
    const uint64_t span_ns = last_ns - first_ns;
    // 1, 2, 5 times 10^k: 5e18 covers any 64-bit span in 4 bins, so the search ends there.
    for (uint64_t decade = 1;; decade *= 10) {
        for (uint64_t m : {1, 2, 5}) {
            const uint64_t w = m * decade;
            const uint64_t count = span_ns / w + 1;
            if (count <= kMaxReportBins) return BinLayout{first_ns, w, count};
        }
    }
}

namespace {

// n / unit with up to three decimals, trailing zeros dropped: "0.5", "12", "1.25".
std::string decimal(uint64_t n, uint64_t unit) {
    char buf[48];
    const uint64_t whole = n / unit, rest = n % unit;
    if (rest == 0) {
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(whole));
        return buf;
    }
    // Thousandths of the unit, rounded down (units here are powers of ten of at least 1000,
    // or 1, which has no rest).
    const uint64_t milli = rest / (unit / 1000);
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(whole),
                  static_cast<unsigned long long>(milli));
    std::string s = buf;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
}

struct Unit {
    uint64_t ns;
    const char *name;
};

// The unit offsets are shown in, chosen by the span they cover.
Unit unit_for(uint64_t span_ns) {
    if (span_ns < 1000) return {1, "ns"};
    if (span_ns < 1000000) return {1000, "\xc2\xb5s"};
    if (span_ns < 1000000000) return {1000000, "ms"};
    return {1000000000, "s"};
}

std::string in_unit(uint64_t ns, const Unit &u) {
    return decimal(ns, u.ns) + " " + u.name;
}

// 1234567 -> "1,234,567".
std::string grouped(uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string fixed2(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

// "2026-12-01 20:00:00.123456789 UTC" from nanoseconds since the epoch.
std::string utc_time(uint64_t ns) {
    const time_t s = static_cast<time_t>(ns / 1000000000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[80];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%09llu UTC", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<unsigned long long>(ns % 1000000000));
    return buf;
}

std::string base_name(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

uint64_t u64(const nlohmann::ordered_json &j, const char *field) {
    const auto it = j.find(field);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string str(const nlohmann::ordered_json &j, const char *field) {
    const auto it = j.find(field);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The y axis: a step of the 1-2-5 series giving at most 4 gridlines above 0, and the top of
// the scale, a whole number of steps at or above the largest bar.
struct Scale {
    uint64_t step, top;
};
Scale scale_for(uint64_t max) {
    for (uint64_t decade = 1;; decade *= 10)
        for (uint64_t m : {1, 2, 5}) {
            const uint64_t step = m * decade;
            const uint64_t steps = std::max<uint64_t>(1, (max + step - 1) / step);
            if (steps <= 4) return {step, steps * step};
        }
}

// Chart geometry, in the SVG's own units (it is drawn at the page's width).
constexpr double kChartW = 960, kChartH = 230;
constexpr double kLeft = 64, kRight = 12, kTop = 14, kBottom = 38;
constexpr double kPlotW = kChartW - kLeft - kRight, kPlotH = kChartH - kTop - kBottom;

struct Segment {
    uint64_t value;
    const char *css_class;
};

// One chart: a bar per bin of stacked segments; attrs(i) gives the bin's data- attributes,
// segments(i) its stack from the bottom up, tooltip(i) the words shown on hover, marks(i) an
// inner bar drawn from the bottom of segment marked_segment (answered within refused).
template <typename Attrs, typename Segments, typename Tooltip, typename Mark>
std::string chart(const std::string &attrs, const std::string &label, const ReportInput &in,
                  Attrs bin_attrs, Segments segments, Tooltip tooltip, Mark mark,
                  size_t marked_segment) {
    const BinLayout &l = in.layout;
    uint64_t max = 0;
    for (uint64_t i = 0; i < l.count; ++i) {
        uint64_t sum = 0;
        for (const Segment &s : segments(i)) sum += s.value;
        max = std::max(max, sum);
    }
    const Scale sc = scale_for(max);
    const double y_per = kPlotH / static_cast<double>(sc.top);
    const double slot = l.count > 0 ? kPlotW / static_cast<double>(l.count) : kPlotW;
    const double gap = slot >= 6 ? slot * 0.18 : 0;
    const Unit u = unit_for(l.count * l.width_ns);

    std::string o;
    o += "<svg class=\"chart\" " + attrs + " data-bins=\"" + std::to_string(l.count) +
         "\" viewBox=\"0 0 " + fixed2(kChartW) + " " + fixed2(kChartH) +
         "\" role=\"img\" aria-label=\"" + label + "\" preserveAspectRatio=\"xMidYMid meet\">\n";
    // Gridlines and the count axis.
    for (uint64_t v = 0; v <= sc.top; v += sc.step) {
        const double y = kTop + kPlotH - static_cast<double>(v) * y_per;
        o += "<line class=\"grid\" x1=\"" + fixed2(kLeft) + "\" x2=\"" + fixed2(kLeft + kPlotW) +
             "\" y1=\"" + fixed2(y) + "\" y2=\"" + fixed2(y) + "\"/>";
        o += "<text class=\"ylab\" x=\"" + fixed2(kLeft - 8) + "\" y=\"" + fixed2(y + 4) + "\">" +
             grouped(v) + "</text>\n";
    }
    o += "<text class=\"axis-title\" transform=\"translate(14 " + fixed2(kTop + kPlotH / 2) +
         ") rotate(-90)\">packets per bin</text>\n";
    // The bars.
    for (uint64_t i = 0; i < l.count; ++i) {
        const double x = kLeft + static_cast<double>(i) * slot;
        o += "<g class=\"bin\" " + bin_attrs(i) + " data-start-ns=\"" +
             std::to_string(l.first_ns + i * l.width_ns) + "\"><title>" + tooltip(i, u) +
             "</title>";
        o += "<rect class=\"hit\" x=\"" + fixed2(x) + "\" y=\"" + fixed2(kTop) + "\" width=\"" +
             fixed2(slot) + "\" height=\"" + fixed2(kPlotH) + "\"/>";
        double base = kTop + kPlotH;
        const std::vector<Segment> segs = segments(i);
        for (size_t k = 0; k < segs.size(); ++k) {
            if (segs[k].value == 0) continue;
            const double h = static_cast<double>(segs[k].value) * y_per;
            o += "<rect class=\"" + std::string(segs[k].css_class) + "\" x=\"" +
                 fixed2(x + gap / 2) + "\" y=\"" + fixed2(base - h) + "\" width=\"" +
                 fixed2(slot - gap) + "\" height=\"" + fixed2(h) + "\"/>";
            if (k == marked_segment && mark(i) > 0) {
                const double mh = static_cast<double>(mark(i)) * y_per;
                o += "<rect class=\"s-answered\" x=\"" + fixed2(x + gap / 2 + (slot - gap) / 4) +
                     "\" y=\"" + fixed2(base - mh) + "\" width=\"" + fixed2((slot - gap) / 2) +
                     "\" height=\"" + fixed2(mh) + "\"/>";
            }
            base -= h;
        }
        o += "</g>\n";
    }
    o += "<line class=\"axis\" x1=\"" + fixed2(kLeft) + "\" x2=\"" + fixed2(kLeft + kPlotW) +
         "\" y1=\"" + fixed2(kTop + kPlotH) + "\" y2=\"" + fixed2(kTop + kPlotH) + "\"/>\n";
    // Time offsets from the first bin's start: at most 7 labels, every k bins (k of 1-2-5).
    uint64_t every = 1;
    for (uint64_t decade = 1; every * 6 < l.count; decade *= 10)
        for (uint64_t m : {1, 2, 5})
            if (every * 6 < l.count) every = m * decade;
    for (uint64_t i = 0; i <= l.count && l.count > 0; i += every) {
        const double x = kLeft + static_cast<double>(i) * slot;
        o += "<line class=\"tick\" x1=\"" + fixed2(x) + "\" x2=\"" + fixed2(x) + "\" y1=\"" +
             fixed2(kTop + kPlotH) + "\" y2=\"" + fixed2(kTop + kPlotH + 5) + "\"/>";
        o += "<text class=\"xlab\" x=\"" + fixed2(x) + "\" y=\"" + fixed2(kTop + kPlotH + 18) +
             "\">" + (i == 0 ? "0" : "+" + in_unit(i * l.width_ns, u)) + "</text>\n";
    }
    o += "<text class=\"axis-title xt\" x=\"" + fixed2(kLeft + kPlotW) + "\" y=\"" +
         fixed2(kChartH - 3) + "\">packet time since the first frame</text>\n";
    if (l.count == 0)
        o += "<text class=\"empty\" x=\"" + fixed2(kLeft + kPlotW / 2) + "\" y=\"" +
             fixed2(kTop + kPlotH / 2) + "\">no frames</text>\n";
    o += "</svg>\n";
    return o;
}

std::string bin_span(const ReportInput &in, uint64_t i, const Unit &u) {
    const BinLayout &l = in.layout;
    return "bin " + std::to_string(i + 1) + " of " + std::to_string(l.count) + ": +" +
           in_unit(i * l.width_ns, u) + " to +" + in_unit((i + 1) * l.width_ns, u);
}

std::string legend(std::initializer_list<std::pair<const char *, const char *>> items) {
    std::string o = "<p class=\"legend\">";
    for (const auto &[css, words] : items)
        o += "<span><i class=\"sw " + std::string(css) + "\"></i>" + words + "</span>";
    return o + "</p>\n";
}

std::string cell(const std::string &attrs, uint64_t v) {
    return "<td class=\"num\" " + attrs + " data-value=\"" + std::to_string(v) + "\">" +
           grouped(v) + "</td>";
}

constexpr const char *kStyle = R"css(
:root { --ink: #1a202c; --muted: #5a6472; --rule: #d9dee5; --bg: #f6f7f9;
  --passed: #2f855a; --refused: #c53030; --answered: #63171b; --overruled: #a0aec0; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 40px; }
header { border-bottom: 3px solid var(--ink); padding-bottom: 12px; margin-bottom: 20px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--rule); }
h3 { font-size: 15px; margin: 0 0 6px; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; }
.sub { color: var(--muted); margin: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid var(--rule); border-radius: 6px; padding: 8px 12px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card.minor .v { font-size: 15px; font-weight: 500; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border: 1px solid var(--rule); padding: 4px 8px; text-align: left; }
th { background: #eef1f5; font-weight: 600; font-size: 13px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
section.rule { background: #fff; border: 1px solid var(--rule); border-radius: 6px;
  padding: 14px 16px; margin: 0 0 16px; break-inside: avoid; page-break-inside: avoid; }
.meta { color: var(--muted); font-size: 13px; margin: 0 0 8px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-size: 11px; fill: var(--muted); }
svg.chart .ylab { text-anchor: end; } svg.chart .xlab { text-anchor: middle; }
svg.chart .axis-title { font-size: 11px; text-anchor: middle; }
svg.chart .xt { text-anchor: end; }
svg.chart .empty { font-size: 14px; text-anchor: middle; }
svg.chart .grid { stroke: #e6e9ee; stroke-width: 1; }
svg.chart .axis, svg.chart .tick { stroke: #8a94a3; stroke-width: 1; }
svg.chart .hit { fill: transparent; }
svg.chart g.bin:hover .hit { fill: rgba(26, 32, 44, .06); }
.s-passed { fill: var(--passed); } .s-refused { fill: var(--refused); }
.s-answered { fill: var(--answered); } .s-overruled { fill: var(--overruled); }
.legend { margin: 4px 0 10px; font-size: 12px; color: var(--muted); }
.legend span { margin-right: 16px; white-space: nowrap; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 5px;
  vertical-align: -1px; }
i.s-passed { background: var(--passed); } i.s-refused { background: var(--refused); }
i.s-answered { background: var(--answered); } i.s-overruled { background: var(--overruled); }
table.top { width: auto; min-width: 55%; margin-top: 6px; }
.note { color: var(--muted); font-size: 12px; }
pre.rules { background: #fff; border: 1px solid var(--rule); border-radius: 6px; padding: 12px;
  overflow-x: auto; font-size: 12.5px; white-space: pre-wrap; word-break: break-word; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--rule);
  padding-top: 8px; }
@media print {
  body { background: #fff; font-size: 10pt; }
  main { max-width: none; padding: 0; }
  section.rule, .card, pre.rules { border-color: #bbb; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; page-break-after: avoid; }
}
)css";

}  // namespace

std::string duration_words(uint64_t ns) {
    return in_unit(ns, unit_for(ns));
}

std::string html_escape(const std::string &text) {
    std::string o;
    o.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            case '\'':
                o += "&#39;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

std::string report_html(const ReportInput &in) {
    const nlohmann::ordered_json &s = *in.stats;
    const BinLayout &l = in.layout;
    const std::string capture = html_escape(base_name(in.capture_path));
    const std::string rules_file = html_escape(base_name(in.rules_path));
    const std::string bins_words = l.count == 0 ? "no bins (the capture is empty)"
                                                : std::to_string(l.count) +
                                                      (l.count == 1 ? " bin of " : " bins of ") +
                                                      duration_words(l.width_ns);
    const std::string rule_words =
        "The bin width w is the smallest of the 1-2-5 series of nanoseconds (1, 2, 5, 10, 20, "
        "50 ns, &#8230;, 1, 2, 5, 10 s, &#8230;) for which floor((last &#8722; first) / w) + 1 "
        "is at most " +
        std::to_string(kMaxReportBins) +
        ", where first and last are the first and the last value of the limiter&#39;s clock "
        "over the capture (the largest timestamp seen so far). Bin i covers [first + i&#183;w, "
        "first + (i+1)&#183;w); each frame is counted in the bin of its clock value.";

    std::string o;
    o.reserve(64 * 1024 + l.count * 2048 * (s["rules"].size() + 1));
    o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    // No favicon to fetch (a browser asks for one otherwise, and logs its absence).
    o += "<link rel=\"icon\" href=\"data:,\">\n";
    o += "<title>floodgate replay report: " + capture + " under " + rules_file + "</title>\n";
    o += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<main>\n";

    // What was replayed, when, and how it was cut into bins.
    o += "<header>\n<h1>Replay report: <code>" + capture + "</code></h1>\n";
    o += "<p class=\"sub\">floodgate replay of <code>" + html_escape(in.capture_path) +
         "</code> under the rules of <code>" + html_escape(in.rules_path) + "</code></p>\n";
    o += "<dl class=\"facts\">\n";
    if (in.frames > 0) {
        o += "<dt>First frame</dt><dd>" + utc_time(l.first_ns) + "</dd>\n";
        o += "<dt>Last frame</dt><dd>" + utc_time(in.last_ns) + " (" +
             in_unit(in.last_ns - l.first_ns, unit_for(in.last_ns - l.first_ns)) +
             " of packet time)</dd>\n";
    }
    o += "<dt>Frames</dt><dd>" + grouped(in.frames) + "</dd>\n";
    o += "<dt>Bins</dt><dd id=\"bins\" data-bins=\"" + std::to_string(l.count) +
         "\" data-width-ns=\"" + std::to_string(l.width_ns) + "\">" + bins_words + "</dd>\n";
    o += "</dl>\n</header>\n";

    // Totals.
    o += "<h2>Totals</h2>\n<div class=\"cards\">\n";
    const std::pair<const char *, const char *> major[] = {
        {"packets", "Packets"},           {"passed", "Passed"},      {"dropped", "Dropped"},
        {"rate_limited", "Rate-limited"}, {"block_hits", "Blocked"}, {"malformed", "Malformed"},
        {"answered", "Answered"}};
    const std::pair<const char *, const char *> minor[] = {{"allow_hits", "Allow-listed"},
                                                           {"non_ip", "Non-IP passed"},
                                                           {"syn_auth_replies", "Syn-auth replies"},
                                                           {"answer_capped", "Answer capped"}};
    for (const auto &[field, words] : major)
        o += "<div class=\"card\"><div class=\"k\">" + std::string(words) +
             "</div><div class=\"v\" data-field=\"" + field + "\" data-value=\"" +
             std::to_string(u64(s, field)) + "\">" + grouped(u64(s, field)) + "</div></div>\n";
    for (const auto &[field, words] : minor)
        o += "<div class=\"card minor\"><div class=\"k\">" + std::string(words) +
             "</div><div class=\"v\" data-field=\"" + field + "\" data-value=\"" +
             std::to_string(u64(s, field)) + "\">" + grouped(u64(s, field)) + "</div></div>\n";
    o += "</div>\n";

    o += "<h2>Rules</h2>\n<table class=\"rules\">\n<thead><tr><th>Rule</th><th>Mode</th>"
         "<th>Action</th><th>Key</th><th class=\"num\">Matched</th><th class=\"num\">Passed</th>"
         "<th class=\"num\">Refused</th><th class=\"num\">Overruled</th>"
         "<th class=\"num\">Answered</th><th class=\"num\">Shadow-refused</th></tr></thead>\n"
         "<tbody>\n";
    for (const auto &r : s["rules"]) {
        const std::string name = html_escape(str(r, "name"));
        o += "<tr><td><a href=\"#rule-" + name + "\">" + name + "</a></td><td>" +
             html_escape(str(r, "mode")) + "</td><td>" + html_escape(str(r, "action")) +
             "</td><td>" + html_escape(str(r, "key")) + "</td>";
        for (const char *field :
             {"matched", "passed", "refused", "overruled", "answered", "shadow_refused"})
            o += cell("data-rule=\"" + name + "\" data-field=\"" + field + "\"", u64(r, field));
        o += "</tr>\n";
    }
    o += "</tbody>\n</table>\n";
    o += "<p class=\"note\">Matched = passed + refused + overruled (overruled: another rule "
         "dropped the packet). Answered packets are among the refused.</p>\n";

    // All traffic over time.
    o += "<h2>Over time</h2>\n<p class=\"meta\">" + bins_words + ". " + rule_words + "</p>\n";
    o += "<section class=\"rule\" id=\"all\">\n<h3>All decided packets</h3>\n";
    o += chart(
        "data-series=\"totals\"", "all packets per bin", in,
        [&](uint64_t i) {
            const BinCounts &b = in.bins[i];
            return "data-packets=\"" + std::to_string(b.packets) + "\" data-passed=\"" +
                   std::to_string(b.passed) + "\" data-dropped=\"" + std::to_string(b.dropped) +
                   "\"";
        },
        [&](uint64_t i) {
            return std::vector<Segment>{{in.bins[i].passed, "s-passed"},
                                        {in.bins[i].dropped, "s-refused"}};
        },
        [&](uint64_t i, const Unit &u) {
            const BinCounts &b = in.bins[i];
            return bin_span(in, i, u) + "\npackets " + grouped(b.packets) + ", passed " +
                   grouped(b.passed) + ", dropped " + grouped(b.dropped);
        },
        [](uint64_t) { return uint64_t{0}; }, 99);
    o += legend({{"s-passed", "passed"}, {"s-refused", "dropped (any reason)"}});
    o += "</section>\n";

    // Per rule: its chart and its top refused keys.
    size_t index = 0;
    for (const auto &r : s["rules"]) {
        const size_t ri = index++;
        const std::string name = html_escape(str(r, "name"));
        const std::string key = str(r, "key");
        o += "<section class=\"rule\" id=\"rule-" + name + "\" data-rule=\"" + name + "\">\n";
        o += "<h3>Rule <code>" + name + "</code></h3>\n";
        o += "<p class=\"meta\">" + html_escape(str(r, "mode")) + ", action " +
             html_escape(str(r, "action")) + ", key " + html_escape(key) + ": matched " +
             grouped(u64(r, "matched")) + ", passed " + grouped(u64(r, "passed")) + ", refused " +
             grouped(u64(r, "refused")) + ", answered " + grouped(u64(r, "answered")) + "</p>\n";
        if (str(r, "action") == "shape")
            o += "<p class=\"meta shape\">Shaped: delayed " + grouped(u64(r, "delayed")) +
                 " (sent at their time " + grouped(u64(r, "shaped")) + ", dropped held " +
                 grouped(u64(r, "shape_flushed")) + "), queue full " +
                 grouped(u64(r, "shape_dropped")) + ", longest wait " +
                 fixed2(static_cast<double>(u64(r, "longest_wait_ns")) / 1e6) + " ms</p>\n";
        if (const auto a = r.find("adaptive"); a != r.end() && a->is_object())
            o += "<p class=\"meta adaptive\">Adaptive limit: " +
                 fixed2(r.value("limit_per_s", 0.0)) + "/s at the end (from " +
                 fixed2(a->value("min_per_s", 0.0)) + " to " + fixed2(a->value("max_per_s", 0.0)) +
                 "/s), " + grouped(u64(*a, "samples")) + " response samples, " +
                 grouped(u64(*a, "late")) + " over the target, " + grouped(u64(*a, "decreases")) +
                 " decreases" +
                 (a->value("stale", false) ? "; stale (no sample in its last 5 s)" : "") + "</p>\n";
        auto at = [&](uint64_t i) -> const RuleBinCounts & {
            static const RuleBinCounts none;
            return ri < in.bins[i].rules.size() ? in.bins[i].rules[ri] : none;
        };
        o += chart(
            "data-rule=\"" + name + "\"", "rule " + name + " per bin", in,
            [&](uint64_t i) {
                const RuleBinCounts &c = at(i);
                return "data-matched=\"" + std::to_string(c.matched) + "\" data-passed=\"" +
                       std::to_string(c.passed) + "\" data-refused=\"" + std::to_string(c.refused) +
                       "\" data-overruled=\"" + std::to_string(c.overruled) +
                       "\" data-answered=\"" + std::to_string(c.answered) + "\"";
            },
            [&](uint64_t i) {
                const RuleBinCounts &c = at(i);
                return std::vector<Segment>{
                    {c.passed, "s-passed"}, {c.refused, "s-refused"}, {c.overruled, "s-overruled"}};
            },
            [&](uint64_t i, const Unit &u) {
                const RuleBinCounts &c = at(i);
                return bin_span(in, i, u) + "\nmatched " + grouped(c.matched) + ", passed " +
                       grouped(c.passed) + ", refused " + grouped(c.refused) + " (answered " +
                       grouped(c.answered) + "), overruled " + grouped(c.overruled);
            },
            [&](uint64_t i) { return at(i).answered; }, 1);
        o += legend({{"s-passed", "passed"},
                     {"s-refused", "refused"},
                     {"s-answered", "answered (of the refused)"},
                     {"s-overruled", "overruled (dropped by another rule)"}});

        const char *what = key == "dst" ? "destinations" : key == "none" ? "keys" : "sources";
        o += "<h3>Top refused " + std::string(what) + "</h3>\n";
        const auto top = r.find("top_refused");
        if (top == r.end() || !top->is_array() || top->empty()) {
            o += "<p class=\"note\">None refused.</p>\n";
        } else {
            o += "<table class=\"top\" data-rule=\"" + name +
                 "\">\n<thead><tr><th class=\"num\">#</th><th>" +
                 (key == "dst" ? "Destination" : "Source") +
                 "</th><th>Refused (guaranteed range)</th></tr></thead>\n<tbody>\n";
            unsigned rank = 0;
            bool sampled = false;
            for (const auto &t : *top) {
                const uint64_t count = u64(t, "count"), error = u64(t, "error");
                const uint64_t least = count >= error ? count - error : 0;
                // Counted from samples (top_offenders: sampled): the estimate and its error.
                const uint64_t sampling = u64(t, "sampling_error");
                sampled = sampled || sampling != 0;
                const std::string range =
                    sampling != 0 ? html_escape(refused_bound_text(nlohmann::json(t)))
                                  : "at least " + grouped(least) + ", at most " + grouped(count);
                o += "<tr class=\"offender\" data-count=\"" + std::to_string(count) +
                     "\" data-error=\"" + std::to_string(error) + "\"><td class=\"num\">" +
                     std::to_string(++rank) + "</td><td><code>" + html_escape(str(t, "source")) +
                     "</code></td><td class=\"range\">" + range + "</td></tr>\n";
            }
            o += "</tbody>\n</table>\n";
            o += "<p class=\"note\">From a Space-Saving summary per rule and core: a key&#39;s "
                 "count never undercounts it, and count &#8722; error never overcounts it, so "
                 "the true count lies in the range shown.</p>\n";
            if (sampled)
                o += "<p class=\"note\">This rule counts a core&#39;s first 1,024 refusals a "
                     "second, then one in about 16 (top_offenders: sampled): a count past those "
                     "is an estimate, shown with its error at 99% confidence.</p>\n";
        }
        o += report_destinations(r);
        o += "</section>\n";
    }

    o += "<h2>Rules file <code>" + rules_file + "</code></h2>\n<pre class=\"rules\">" +
         html_escape(in.rules_text) + "</pre>\n";
    o += "<footer>Written by <code>floodgate replay --report</code>. One self-contained file: "
         "nothing is fetched; hover a bar for its numbers.</footer>\n";
    o += "</main>\n</body>\n</html>\n";
    return o;
}

bool write_report(const std::string &path, const std::string &html) {
    std::ofstream out(path, std::ios::binary);
    out << html;
    out.close();
    return static_cast<bool>(out);
}

}  // namespace floodgate
