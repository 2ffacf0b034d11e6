// `floodgate replay --report REPORT.html`: the run as one self-contained HTML page, for an
// operator to read and to mail on. Nothing in it is fetched: inline CSS, inline SVG charts,
// <title> elements for tooltips, no script, no font or image. Everything that came from the
// user (rule names, file names, the rules text, addresses) is HTML-escaped.
//
// This file turns counts into the page; replay.cpp does the binning (it reads every core's
// cumulative counters at each bin boundary, which is exact offline).
//
// The bins, in packet time (the limiter's clock: in replay the largest timestamp seen so far,
// so it never runs backwards). With first and last the clock's first and last values over
// the capture (its first timestamp, and its largest), the bin width w is the smallest of the
// 1-2-5 series of nanoseconds (1, 2, 5, 10, 20, 50, ... ns, 1 s, 2 s, 5 s, 10 s, ...) for which
//     count = floor((last - first) / w) + 1
// is at most kMaxReportBins. Bin i is [first + i*w, first + (i+1)*w), and a frame is counted
// in the bin of its clock value. A capture of one frame (or of frames of one timestamp) has one
// bin of 1 ns; an empty capture has none.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace floodgate {

inline constexpr uint64_t kMaxReportBins = 60;

struct BinLayout {
    uint64_t first_ns = 0;  // the start of bin 0: the clock's first value
    uint64_t width_ns = 0;  // 0 when count is 0
    uint64_t count = 0;     // 0 for an empty capture
    uint64_t end_ns(uint64_t i) const { return first_ns + (i + 1) * width_ns; }
};

// The layout for a capture whose clock runs from first_ns to last_ns (last_ns >= first_ns).
BinLayout choose_bins(uint64_t first_ns, uint64_t last_ns);

// "50 ms", "2 s", "100 ns": a width of the 1-2-5 series in words.
std::string duration_words(uint64_t ns);

// What one rule counted in one bin (differences of its counters, all cores summed).
struct RuleBinCounts {
    uint64_t matched = 0, passed = 0, refused = 0, overruled = 0, answered = 0;
};

// One bin: the totals, and each rule's counts, by rule index (the order of the stats
// document's "rules").
struct BinCounts {
    uint64_t packets = 0, passed = 0, dropped = 0;
    std::vector<RuleBinCounts> rules;
};

struct ReportInput {
    std::string capture_path;  // as given to --in
    std::string rules_path;    // as given to --config
    std::string rules_text;    // the bytes the rules were read from
    uint64_t frames = 0;       // records in the capture, inside-to-outside ones included
    uint64_t last_ns = 0;      // the clock's last value
    BinLayout layout;
    std::vector<BinCounts> bins;  // layout.count of them
    // The run's stats document (stats_to_json): the totals and the top refused sources.
    const nlohmann::ordered_json *stats = nullptr;
};

std::string html_escape(const std::string &text);

// The whole page.
std::string report_html(const ReportInput &in);

// Writes the page to path; false if it could not be written whole.
bool write_report(const std::string &path, const std::string &html);

}  // namespace floodgate
