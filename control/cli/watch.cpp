#include "control/cli/watch.h"

#include <langinfo.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/client/daemon_client.h"
#include "dataplane/api/daemon_commands.h"
#include "dataplane/api/destination_text.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/stats_rates.h"
#include "dataplane/api/stats_text.h"

namespace floodgate {

namespace {

using nlohmann::json;

volatile std::sig_atomic_t g_quit = 0;
volatile std::sig_atomic_t g_suspend = 0;
void on_quit(int) {
    g_quit = 1;
}
void on_suspend(int) {
    g_suspend = 1;
}

constexpr size_t kHistory = 60;      // sparkline samples
constexpr size_t kNearestShown = 3;  // destinations under the rules

// The terminal in the state the view needs, given back on every way out: q, Ctrl-C, SIGTERM,
// SIGHUP, SIGQUIT, an error; Ctrl-Z gives it back too, and takes it again on fg.
class Screen {
  public:
    explicit Screen(bool tty) : tty_(tty) {
        if (!tty_) return;
        have_saved_ = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0;
        enter();
    }
    ~Screen() { leave(); }
    Screen(const Screen &) = delete;
    Screen &operator=(const Screen &) = delete;

    // Columns and rows; 80x24 when the terminal does not say.
    std::pair<unsigned, unsigned> size() const {
        winsize w{};
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 && w.ws_row > 0)
            return {w.ws_col, w.ws_row};
        return {80, 24};
    }

    // Waits until the deadline or a key; true when the view should end (q or a signal).
    bool wait_key(std::chrono::steady_clock::time_point until) {
        for (;;) {
            if (g_quit) return true;
            if (g_suspend) suspend();
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            const int wait_ms = static_cast<int>(std::min<long long>(left.count(), 100));
            if (!raw_) {
                poll(nullptr, 0, wait_ms);
                continue;
            }
            pollfd p{STDIN_FILENO, POLLIN, 0};
            if (poll(&p, 1, wait_ms) > 0) {
                char c = 0;
                if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q')) return true;
            }
        }
    }

  private:
    void enter() {
        if (have_saved_) {
            termios raw = saved_;
            raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // keys one by one, unechoed
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // alternate screen, cursor hidden
        std::fflush(stdout);
    }
    void leave() {
        if (!tty_) return;
        std::fputs("\x1b[?25h\x1b[?1049l", stdout);
        std::fflush(stdout);
        if (raw_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
        raw_ = false;
    }
    // Ctrl-Z: the shell gets its terminal as it was; fg brings the view back.
    void suspend() {
        g_suspend = 0;
        if (!tty_) return;
        leave();
        std::signal(SIGTSTP, SIG_DFL);
        std::raise(SIGTSTP);  // stopped here until SIGCONT
        struct sigaction sa {};
        sa.sa_handler = on_suspend;
        sigaction(SIGTSTP, &sa, nullptr);
        enter();
    }

    bool tty_;
    bool have_saved_ = false;
    bool raw_ = false;
    termios saved_{};
};

// Display width of UTF-8 text (every code point one column: the view writes no wide ones).
size_t columns(const std::string &s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

std::string cut(const std::string &s, size_t width) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if ((c & 0xC0) != 0x80 && n++ == width) return s.substr(0, i);
    }
    return s;
}

std::string pad(const std::string &s, size_t width) {
    const size_t n = columns(s);
    return n >= width ? cut(s, width) : s + std::string(width - n, ' ');
}

std::string rpad(const std::string &s, size_t width) {
    const size_t n = columns(s);
    return n >= width ? s : std::string(width - n, ' ') + s;
}

// "9.15M", "0": one word each, so that a row splits into its columns.
std::string compact(double v) {
    std::string s = si(v);
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    return s;
}

std::string pps(const json &rates, const char *field) {
    return rates.is_object() && rates.contains(field) ? compact(rates[field].get<double>()) : "-";
}

// The last values as eight levels of blocks, scaled to their largest; ASCII without UTF-8.
std::string sparkline(const std::deque<double> &values, size_t width, bool unicode) {
    static const char *const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static const char kAscii[] = "_.-=+*#@";
    const size_t n = std::min(values.size(), width);
    double top = 0;
    for (size_t i = values.size() - n; i < values.size(); ++i) top = std::max(top, values[i]);
    std::string s;
    for (size_t i = values.size() - n; i < values.size(); ++i) {
        const int level = top > 0 ? std::min(7, static_cast<int>(values[i] / top * 7.999)) : 0;
        if (unicode)
            s += values[i] > 0 ? kBlocks[level] : " ";
        else
            s += values[i] > 0 ? kAscii[level] : ' ';
    }
    return s;
}

// "0.250 s"
std::string seconds_text(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
    return buf;
}

// What the view keeps between frames: the last reading and each rule's history.
struct WatchState {
    json last;                                          // the previous stats (with sampled_ns)
    std::map<std::string, std::deque<double>> refused;  // refusals per second, per rule
};

std::string offender_rate(const json &t, const json &last_rule, double interval_s) {
    if (!last_rule.is_object() || interval_s <= 0) return "-";
    for (const json &p : last_rule.value("top_refused", json::array()))
        if (p.value("source", "") == t.value("source", "")) {
            const uint64_t a = p.value("count", uint64_t{0}), b = t.value("count", uint64_t{0});
            return b >= a ? compact(static_cast<double>(b - a) / interval_s) + "/s" : "-";
        }
    return "new";
}

const json *rule_named(const json &stats, const std::string &name) {
    const auto rules = stats.find("rules");
    if (rules == stats.end() || !rules->is_array()) return nullptr;
    for (const json &r : *rules)
        if (r.value("name", "") == name) return &r;
    return nullptr;
}

std::vector<std::string> frame(const json &status, const json &stats, const json &rates,
                               const WatchState &state, const WatchOptions &o, unsigned width,
                               unsigned height, bool unicode) {
    std::vector<std::string> lines;
    const json &d = status.value("dataplane", json::object());
    const json &rs = d.value("ruleset", json::object());
    char buf[512];
    std::snprintf(buf, sizeof buf, "floodgate watch  %s  every %.1f s%s",
                  utc_text(std::time(nullptr)).c_str(), o.interval_s,
                  o.count == 0 ? "  (q: quit)" : "");
    lines.push_back(buf);
    const double lag_ms = stats.value("merge", json::object()).value("max_lag_ns", 0.0) / 1e6;
    const unsigned workers = d.value("workers", 0u);
    std::snprintf(buf, sizeof buf, "up %s, %u worker%s, ruleset v%llu (%s), merge lag %.1f ms",
                  format_duration_s(static_cast<long long>(d.value("uptime_s", 0.0))).c_str(),
                  workers, workers == 1 ? "" : "s",
                  static_cast<unsigned long long>(rs.value("version", uint64_t{0})),
                  rs.value("source", "").c_str(), lag_ms);
    lines.push_back(buf);
    std::snprintf(buf, sizeof buf, "decided %s pps: passed %s, dropped %s (blocked %s)",
                  pps(rates, "packets").c_str(), pps(rates, "passed").c_str(),
                  pps(rates, "dropped").c_str(), pps(rates, "block_hits").c_str());
    lines.push_back(rates.is_null() ? "decided: rates from the next frame on" : buf);
    const json &t = stats.value("table", json::object());
    const double cap = t.value("capacity", 0.0);
    std::snprintf(buf, sizeof buf, "table %llu of %llu keys (%.1f%%), %llu reclaimed, %llu full",
                  static_cast<unsigned long long>(t.value("occupancy", uint64_t{0})),
                  static_cast<unsigned long long>(t.value("capacity", uint64_t{0})),
                  cap > 0 ? 100.0 * t.value("occupancy", 0.0) / cap : 0.0,
                  static_cast<unsigned long long>(t.value("reclaims", uint64_t{0})),
                  static_cast<unsigned long long>(t.value("full_events", uint64_t{0})));
    lines.push_back(buf);
    const json ports = rates.is_object() ? rates.value("ports", json::array()) : json::array();
    for (const json &p : ports) {
        std::snprintf(buf, sizeof buf, "port %u %-8s rx %s pps  tx %s pps  missed %s pps",
                      p.value("port", 0u), p.value("role", "").c_str(), pps(p, "rx_pps").c_str(),
                      pps(p, "tx_pps").c_str(), pps(p, "rx_missed_pps").c_str());
        lines.push_back(buf);
    }

    // The rules: a row each, packets per second over the interval, then the history.
    const size_t name_w = 14, num_w = 9;
    const size_t fixed = name_w + 4 * (num_w + 1) + 2;
    const size_t spark_w = width > fixed + 8 ? std::min<size_t>(kHistory, width - fixed) : 0;
    lines.push_back(pad("RULE", name_w) + rpad("MATCH/s", num_w + 1) + rpad("PASS/s", num_w + 1) +
                    rpad("REFUSE/s", num_w + 1) + rpad("ANSWER/s", num_w + 1) + "  " +
                    (spark_w > 0 ? "refused, last " + std::to_string(spark_w) + " frames" : ""));
    const json rules = stats.value("rules", json::array());
    std::vector<const json *> shown;
    for (const json &r : rules)
        if (o.rule.empty() || r.value("name", "") == o.rule) shown.push_back(&r);
    // Every rule row first; the offenders get what is left of the screen.
    const size_t reserve_rows = 1;  // the "top refused" header
    size_t room = height > lines.size() + reserve_rows ? height - lines.size() - reserve_rows : 0;
    size_t rule_rows = std::min(shown.size(), room);
    if (rule_rows < shown.size() && rule_rows > 0) --rule_rows;  // one line says what is cut
    for (size_t i = 0; i < rule_rows; ++i) {
        const json &r = *shown[i];
        const std::string name = r.value("name", "");
        const json *rr = nullptr;
        if (rates.is_object()) rr = rule_named(rates, name);
        const json none;
        const json &x = rr ? *rr : none;
        const auto h = state.refused.find(name);
        std::string line = pad(name + (r.value("mode", "") == "shadow" ? " (sh)" : ""), name_w) +
                           rpad(pps(x, "matched"), num_w + 1) + rpad(pps(x, "passed"), num_w + 1) +
                           rpad(pps(x, "refused"), num_w + 1) +
                           rpad(pps(x, "answered"), num_w + 1) + "  ";
        if (spark_w > 0 && h != state.refused.end()) line += sparkline(h->second, spark_w, unicode);
        lines.push_back(line);
        // An adaptive rule's learned limit under its row.
        if (const auto a = r.find("adaptive"); a != r.end() && a->is_object()) {
            char buf[160];
            std::snprintf(
                buf, sizeof buf, "  limit %.1f/s (adaptive %.1f-%.1f/s), last response %.1f ms%s",
                r.value("limit_per_s", 0.0), a->value("min_per_s", 0.0), a->value("max_per_s", 0.0),
                static_cast<double>(a->value("last_response_ns", uint64_t{0})) / 1e6,
                a->value("stale", false) ? ", STALE" : "");
            lines.push_back(buf);
        }
        // A shape rule's queue under its row: what leaves, what waits, what finds it full.
        if (r.value("action", "") == "shape")
            lines.push_back("  shaped " + pps(x, "shaped") + "/s, queue full " +
                            pps(x, "shape_dropped") + "/s, held " +
                            std::to_string(r.value("held", uint64_t{0})) + ", longest wait " +
                            seconds_text(r.value("longest_wait_ns", uint64_t{0})));
    }
    if (rule_rows < shown.size())
        lines.push_back("... " + std::to_string(shown.size() - rule_rows) +
                        " more rules (a taller terminal, or --rule NAME)");

    // The destinations nearest their limit or far over their baseline: kNearestShown rows
    // under the top refused sources, kept free for them.
    const std::vector<DestinationRow> nearest = nearest_destinations(stats, o.rule);
    const size_t nearest_rows = nearest.empty() ? 0 : 1 + std::min(nearest.size(), kNearestShown);
    const size_t top_end = height > nearest_rows ? height - nearest_rows : 0;

    // Top refused sources: the count's bound (stats_text.h) and the rate since the last frame.
    if (lines.size() < top_end) lines.push_back("TOP REFUSED  source, refused in all, refused/s");
    const double interval = rates.is_object() ? rates.value("interval_s", 0.0) : 0.0;
    for (const json *r : shown) {
        for (const json &top : r->value("top_refused", json::array())) {
            if (lines.size() >= top_end) break;
            const json *before =
                state.last.is_null() ? nullptr : rule_named(state.last, r->value("name", ""));
            lines.push_back(pad(r->value("name", ""), 12) + " " + pad(top.value("source", ""), 24) +
                            " " + pad(refused_bound_text(top), 28) + " " +
                            offender_rate(top, before ? *before : json(), interval));
        }
    }
    if (!nearest.empty() && lines.size() < height) {
        lines.push_back("NEAREST DESTINATIONS  rule, rate/s, passed/s, limit, headroom, baseline");
        for (size_t i = 0; i < nearest.size() && i < kNearestShown && lines.size() < height; ++i)
            lines.push_back(destination_line(nearest[i]));
    }
    // Nothing from outside reaches the terminal raw: a file name may hold escape codes.
    for (std::string &l : lines) {
        for (char &c : l)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        l = cut(l, width);
    }
    if (lines.size() > height) lines.resize(height);
    return lines;
}

}  // namespace

int run_watch(const WatchOptions &o) {
    std::setlocale(LC_CTYPE, "");
    const bool unicode = std::string(nl_langinfo(CODESET)) == "UTF-8";
    const bool tty = !o.json_out && isatty(STDOUT_FILENO);
    struct sigaction sa {};
    sa.sa_handler = on_quit;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);  // the SSH session went: leave as after q
    sigaction(SIGQUIT, &sa, nullptr);
    struct sigaction suspend {};
    suspend.sa_handler = on_suspend;
    if (tty) sigaction(SIGTSTP, &suspend, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    WatchState state;
    std::string stopped;  // why it stopped, said once the terminal is back
    {
        Screen screen(tty);
        auto next = std::chrono::steady_clock::now();
        for (unsigned shown = 0; !g_quit && (o.count == 0 || shown < o.count);) {
            json status, reply;
            const int timeout_ms = static_cast<int>(std::max(5.0, 3 * o.interval_s) * 1000);
            if (!ask_daemon_quietly(o.socket, daemon_request(DaemonCommand::status), &status,
                                    &stopped, timeout_ms))
                break;
            if (!status.value("dataplane_up", false)) {
                stopped = "the dataplane is down: " + status.value("dataplane_error", "");
                break;
            }
            if (!ask_daemon_quietly(o.socket,
                                    dataplane_request(DataplaneCommand::stats, {{"top", o.top}}),
                                    &reply, &stopped, timeout_ms))
                break;
            const json &stats = reply["stats"];
            if (!o.rule.empty() && rule_named(stats, o.rule) == nullptr) {
                stopped = "no rule named \"" + o.rule + "\"";
                break;
            }
            const json rates =
                state.last.is_null() ? json(nullptr) : stats_rates(state.last, stats);
            if (rates.is_object())
                for (const json &r : rates.value("rules", json::array())) {
                    std::deque<double> &h = state.refused[r.value("name", "")];
                    h.push_back(r.value("refused", 0.0));
                    if (h.size() > kHistory) h.pop_front();
                }
            ++shown;
            if (o.json_out) {
                json frame_json = {{"version", reply.value("version", uint64_t{0})},
                                   {"stats", stats},
                                   {"rates", rates}};
                if (!o.rule.empty()) {  // --rule: that rule alone, as in the text
                    for (const char *part : {"stats", "rates"}) {
                        json &doc = frame_json[part];
                        if (!doc.is_object()) continue;
                        json only = json::array();
                        for (const json &r : doc.value("rules", json::array()))
                            if (r.value("name", "") == o.rule) only.push_back(r);
                        doc["rules"] = only;
                    }
                }
                std::printf("%s\n", frame_json.dump().c_str());
            } else {
                const auto [width, height] =
                    tty ? screen.size() : std::pair<unsigned, unsigned>{200, 1000};
                const std::vector<std::string> lines =
                    frame(status, stats, rates, state, o, width, height, unicode && tty);
                // On a terminal the last line ends without a newline: a full screen must not
                // scroll.
                std::string out = tty ? "\x1b[H" : "";
                for (size_t i = 0; i < lines.size(); ++i)
                    out += lines[i] + (!tty                   ? "\n"
                                       : i + 1 < lines.size() ? "\x1b[K\r\n"
                                                              : "\x1b[K");
                out += tty ? "\x1b[J" : "\n";
                std::fputs(out.c_str(), stdout);
            }
            // A reader that went away (`| head`): nothing more to show anyone.
            if (std::fflush(stdout) != 0 || std::ferror(stdout)) break;
            state.last = stats;
            if (o.count != 0 && shown >= o.count) break;
            // After a stall (Ctrl-Z, a slow daemon) the next frame waits a whole interval:
            // frames back to back would show rates over milliseconds.
            next = std::max(next + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(o.interval_s)),
                            std::chrono::steady_clock::now());
            if (screen.wait_key(next)) break;
        }
    }
    // Ctrl-C or SIGTERM while a request was under way ends it (EINTR): that is no error.
    if (stopped.empty() || g_quit) return 0;
    std::fprintf(stderr, "floodctl: watch: %s\n", stopped.c_str());
    return 1;
}

}  // namespace floodgate
