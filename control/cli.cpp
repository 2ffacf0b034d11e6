#include "control/cli.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/daemon.h"
#include "control/listen_address.h"
#include "control/rules_diff.h"
#include "control/xdp_cli.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/unix_socket.h"
#include "rules/load.h"

namespace floodgate {

namespace {

using nlohmann::json;

constexpr const char *kUsage =
    "usage: floodctl [--socket PATH] [-j|--json] COMMAND\n"
    "  daemon --config RULES.yaml [--dataplane SOCKET] [--metrics HOST:PORT|none]\n"
    "                         run the control plane (socket /run/floodgate/floodctl.sock)\n"
    "  status                 dataplane, ruleset, per-port rates, table occupancy\n"
    "  rules check FILE       validate only; exit 0 when valid\n"
    "  rules load FILE [--dry-run]\n"
    "                         validate, show the difference, apply atomically\n"
    "  rules show             the running rules\n"
    "  stats [--rule NAME]    counters, per rule\n"
    "  top [--rule NAME] [-n N]\n"
    "                         the sources (for key dst: destinations) refused most\n"
    "                         (N up to 64, default 10)\n"
    "  block add PREFIX [--ttl DURATION] | block del PREFIX | block list\n"
    "  allow add PREFIX [--ttl DURATION] | allow del PREFIX | allow list\n"
    "                         runtime overrides; DURATION like 90s, 15m, 2h, 1d, 1h30m\n"
    "                         (a unit on every number: a bare 15 is refused)\n"
    "  rule NAME shadow|enforce\n"
    "                         switch one rule between shadow and enforce\n";

struct Cli {
    std::string socket = kDefaultDaemonSocket;
    bool json_out = false;
    std::vector<std::string> args;
};

int usage_error(const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n%s%s", why.c_str(), kUsage, kXdpUsage);
    return 2;
}

int failed(const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    return 1;
}

std::string utc(double unix_s) {
    std::time_t t = static_cast<std::time_t>(unix_s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

// 1234567 -> "1.23 M"
std::string si(double v) {
    const char *units[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (std::fabs(v) >= 1000 && u < 4) v /= 1000, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

uint64_t u64(const json &j, const char *field) {
    auto it = j.find(field);
    return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

// Sends one request to the daemon; prints the refusal and returns false when it is refused.
bool ask(const Cli &cli, const json &request, json *reply) {
    LineClient client;
    std::string error;
    if (!client.connect(cli.socket, &error)) {
        std::fprintf(stderr,
                     "floodctl: cannot reach the daemon: %s (is `floodctl daemon` running?)\n",
                     error.c_str());
        return false;
    }
    if (!client.request(request, reply, &error, 90000)) {  // a load may take a while
        std::fprintf(stderr, "floodctl: %s\n", error.c_str());
        return false;
    }
    if (!(*reply)["ok"].get<bool>()) {
        if (cli.json_out) std::cout << reply->dump(2) << "\n";
        std::fprintf(stderr, "floodctl: %s\n",
                     reply->value("error", std::string("refused")).c_str());
        return false;
    }
    return true;
}

int print_json(const json &reply) {
    std::cout << reply.dump(2) << "\n";
    return 0;
}

int cmd_status(const Cli &cli) {
    json r;
    if (!ask(cli, {{"cmd", "status"}}, &r)) return 1;
    if (cli.json_out) return print_json(r);
    if (!r.value("dataplane_up", false)) {
        std::printf("dataplane: DOWN (%s)\n", r.value("dataplane_error", "").c_str());
        return 1;
    }
    const json &d = r["dataplane"];
    const json &rs = d["ruleset"];
    std::printf("dataplane: up, %u workers, up %s (instance %s)\n", d.value("workers", 0u),
                format_duration_s(static_cast<long long>(d.value("uptime_s", 0.0))).c_str(),
                d.value("instance", "").c_str());
    std::printf("ruleset:   version %llu, loaded %s from %s (%s), %zu rules, %zu overrides\n",
                static_cast<unsigned long long>(u64(rs, "version")),
                utc(rs.value("loaded_unix", 0.0)).c_str(), rs.value("source", "").c_str(),
                rs.value("origin", "").c_str(), static_cast<size_t>(u64(rs, "rules")),
                static_cast<size_t>(u64(rs, "overrides")));
    std::printf("reloads:   %llu ok, %llu failed; %llu overrides expired\n",
                static_cast<unsigned long long>(u64(d["reloads"], "ok")),
                static_cast<unsigned long long>(u64(d["reloads"], "failed")),
                static_cast<unsigned long long>(u64(d, "overrides_expired")));
    if (r["rates"].empty())
        std::printf("ports:     no rates yet (the daemon samples once a second)\n");
    for (const json &p : r["rates"])
        std::printf("port %u (%s): rx %spps %sbit/s, tx %spps %sbit/s\n", p.value("port", 0u),
                    p.value("role", "").c_str(), si(p.value("rx_pps", 0.0)).c_str(),
                    si(p.value("rx_bps", 0.0)).c_str(), si(p.value("tx_pps", 0.0)).c_str(),
                    si(p.value("tx_bps", 0.0)).c_str());
    if (r["table"].is_object()) {
        const json &t = r["table"];
        double cap = static_cast<double>(u64(t, "capacity"));
        std::printf("table:     %llu of %llu keys (%.1f%%), %llu reclaimed, %llu full events\n",
                    static_cast<unsigned long long>(u64(t, "occupancy")),
                    static_cast<unsigned long long>(u64(t, "capacity")),
                    cap > 0 ? 100.0 * static_cast<double>(u64(t, "occupancy")) / cap : 0.0,
                    static_cast<unsigned long long>(u64(t, "reclaims")),
                    static_cast<unsigned long long>(u64(t, "full_events")));
    }
    const json &dm = r["daemon"];
    std::printf("daemon:    pid %d, metrics %s\n", dm.value("pid", 0),
                dm.value("metrics", "").c_str());
    return 0;
}

// Validates locally; prints file:line: field: reason on error.
bool validate(const std::string &path, Config *config, std::string *text) {
    try {
        *text = read_config_file(path);
        *config = parse_config(*text, path);
        return true;
    } catch (const ConfigError &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return false;
    }
}

int cmd_rules_check(const Cli &cli, const std::string &path) {
    Config c;
    std::string text;
    bool ok = validate(path, &c, &text);
    if (cli.json_out) {
        json r = {{"ok", ok}, {"file", path}};
        if (ok) r["rules"] = c.rules.size();
        return print_json(r), ok ? 0 : 1;
    }
    if (!ok) return 1;
    std::printf("%s: valid: %zu rules, %zu allow and %zu block prefixes\n", path.c_str(),
                c.rules.size(), c.allow.size(), c.block.size());
    return 0;
}

void print_diff(const json &diff) {
    if (diff["changes"].empty()) std::printf("no changes\n");
    for (const json &line : diff["changes"]) std::printf("  %s\n", line.get<std::string>().c_str());
}

int cmd_rules_load(const Cli &cli, const std::string &path, bool dry_run) {
    Config c;
    std::string text;
    if (!validate(path, &c, &text)) return 1;
    json r;
    if (!ask(cli, {{"cmd", "rules_load"}, {"source", path}, {"text", text}, {"dry_run", dry_run}},
             &r))
        return 1;
    if (cli.json_out) return print_json(r);
    print_diff(r["diff"]);
    if (dry_run) {
        std::printf("dry run: nothing applied\n");
        return 0;
    }
    for (const json &w : r.value("warnings", json::array()))
        std::printf("warning: %s\n", w.get<std::string>().c_str());
    std::printf("applied: ruleset version %llu\n",
                static_cast<unsigned long long>(u64(r, "version")));
    return 0;
}

int cmd_rules_show(const Cli &cli) {
    json r;
    if (!ask(cli, {{"cmd", "rules"}}, &r)) return 1;
    if (cli.json_out) return print_json(r);
    Config c;
    try {
        const std::string source = r.value("source", "");
        c = config_from_doc(json_to_doc(r.value("doc", json()), source), source);
    } catch (const ConfigError &e) {
        return failed(std::string("cannot read the running rules: ") + e.what());
    }
    std::printf("ruleset version %llu from %s (%s), loaded %s\n",
                static_cast<unsigned long long>(u64(r, "version")), r.value("source", "").c_str(),
                r.value("origin", "").c_str(), utc(r.value("loaded_unix", 0.0)).c_str());
    auto list = [](const std::vector<Prefix> &ps) {
        std::string s;
        for (const Prefix &p : ps) s += (s.empty() ? "" : " ") + format_prefix(p);
        return s.empty() ? std::string("-") : s;
    };
    std::printf("allow: %s\nblock: %s\n", list(c.allow).c_str(), list(c.block).c_str());
    std::printf("table: %llu entries per core\n",
                static_cast<unsigned long long>(c.table_entries_per_core));
    for (size_t i = 0; i < c.rules.size(); ++i) {
        const Rule &rule = c.rules[i];
        const json &running = i < r["rules"].size() ? r["rules"][i] : json::object();
        std::printf("rule %s: %s, %s, key %s, match %s\n", rule.name.c_str(),
                    running.value("mode", "enforce").c_str(), describe_limit(rule).c_str(),
                    describe_key(rule).c_str(), describe_match(rule.match).c_str());
    }
    return 0;
}

int cmd_stats(const Cli &cli, const std::string &rule) {
    json r;
    if (!ask(cli, {{"cmd", "stats"}}, &r)) return 1;
    json &s = r["stats"];
    if (!rule.empty()) {
        json only = json::array();
        for (const json &x : s["rules"])
            if (x.value("name", "") == rule) only.push_back(x);
        if (only.empty()) return failed("no rule named \"" + rule + "\"");
        s["rules"] = only;
    }
    if (cli.json_out) return print_json(r);
    if (rule.empty()) {
        std::printf(
            "packets %llu: passed %llu, dropped %llu (rate-limited %llu, blocked %llu, "
            "malformed %llu); allow-listed %llu, non-IP %llu\n",
            static_cast<unsigned long long>(u64(s, "packets")),
            static_cast<unsigned long long>(u64(s, "passed")),
            static_cast<unsigned long long>(u64(s, "dropped")),
            static_cast<unsigned long long>(u64(s, "rate_limited")),
            static_cast<unsigned long long>(u64(s, "block_hits")),
            static_cast<unsigned long long>(u64(s, "malformed")),
            static_cast<unsigned long long>(u64(s, "allow_hits")),
            static_cast<unsigned long long>(u64(s, "non_ip")));
        std::printf(
            "answered %llu (%llu bytes), capped %llu; syn-auth replies %llu, cookies failed "
            "%llu\n",
            static_cast<unsigned long long>(u64(s, "answered")),
            static_cast<unsigned long long>(u64(s, "answered_bytes")),
            static_cast<unsigned long long>(u64(s, "answer_capped")),
            static_cast<unsigned long long>(u64(s, "syn_auth_replies")),
            static_cast<unsigned long long>(u64(s, "cookie_failed")));
        // The XDP tier, when the dataplane runs it: what died in the driver, before it counted
        // in "packets" above.
        if (const auto x = s.find("xdp"); x != s.end() && x->is_object()) {
            const json &c = (*x)["counters"], &e = (*x)["escalations"], &n = (*x)["entries"];
            std::printf(
                "xdp on %s: frames %llu, passed %llu, dropped in the driver %llu (blocked %llu, "
                "escalated %llu); entries: rules %llu, overrides %llu, operator %llu, escalated "
                "%llu; escalations %llu (expired %llu, failed %llu)\n",
                x->value("iface", "").c_str(), static_cast<unsigned long long>(u64(c, "packets")),
                static_cast<unsigned long long>(u64(c, "passed")),
                static_cast<unsigned long long>(u64(c, "block_hits") + u64(c, "escalated_hits")),
                static_cast<unsigned long long>(u64(c, "block_hits")),
                static_cast<unsigned long long>(u64(c, "escalated_hits")),
                static_cast<unsigned long long>(u64(n, "rules")),
                static_cast<unsigned long long>(u64(n, "override")),
                static_cast<unsigned long long>(u64(n, "operator")),
                static_cast<unsigned long long>(u64(n, "escalated")),
                static_cast<unsigned long long>(u64(e, "total")),
                static_cast<unsigned long long>(u64(e, "expired")),
                static_cast<unsigned long long>(u64(e, "failed")));
        }
    }
    // matched = passed + refused + overruled on every line (README, "Counters").
    std::printf("%-20s %-8s %14s %14s %14s %14s %14s\n", "rule", "mode", "matched", "passed",
                "refused", "overruled", "shadow-refused");
    for (const json &x : s["rules"])
        std::printf("%-20s %-8s %14llu %14llu %14llu %14llu %14llu\n", x.value("name", "").c_str(),
                    x.value("mode", "").c_str(), static_cast<unsigned long long>(u64(x, "matched")),
                    static_cast<unsigned long long>(u64(x, "passed")),
                    static_cast<unsigned long long>(u64(x, "refused")),
                    static_cast<unsigned long long>(u64(x, "overruled")),
                    static_cast<unsigned long long>(u64(x, "shadow_refused")));
    // refused = answered + capped + skipped + unanswered, for the rules that answer.
    bool header = false;
    for (const json &x : s["rules"]) {
        if (x.value("action", "drop") == "drop") continue;
        if (!header)
            std::printf("%-20s %-16s %14s %14s %14s %14s %14s\n", "rule", "action", "answered",
                        "capped", "skipped", "unanswered", "verified");
        header = true;
        std::printf("%-20s %-16s %14llu %14llu %14llu %14llu %14llu\n", x.value("name", "").c_str(),
                    x.value("action", "").c_str(),
                    static_cast<unsigned long long>(u64(x, "answered")),
                    static_cast<unsigned long long>(u64(x, "answer_capped")),
                    static_cast<unsigned long long>(u64(x, "answer_skipped")),
                    static_cast<unsigned long long>(u64(x, "unanswered")),
                    static_cast<unsigned long long>(u64(x, "verified")));
    }
    // Aggregate rules: refused = the four classes' refusals; the reserve's admissions beside.
    header = false;
    for (const json &x : s["rules"]) {
        const std::string key = x.value("key", "src");
        if (key != "dst" && key != "none") continue;
        if (!header)
            std::printf("%-20s %-5s %12s %12s %12s %12s | %14s %14s %14s\n", "rule", "key",
                        "refused:est", "verified", "known", "new", "reserve:est", "verified",
                        "known");
        header = true;
        std::printf("%-20s %-5s %12llu %12llu %12llu %12llu | %14llu %14llu %14llu\n",
                    x.value("name", "").c_str(), key.c_str(),
                    static_cast<unsigned long long>(u64(x, "refused_established")),
                    static_cast<unsigned long long>(u64(x, "refused_verified")),
                    static_cast<unsigned long long>(u64(x, "refused_known")),
                    static_cast<unsigned long long>(u64(x, "refused_new")),
                    static_cast<unsigned long long>(u64(x, "reserve_established")),
                    static_cast<unsigned long long>(u64(x, "reserve_verified")),
                    static_cast<unsigned long long>(u64(x, "reserve_known")));
    }
    return 0;
}

int cmd_top(const Cli &cli, const std::string &rule, int n) {
    json r;
    if (!ask(cli, {{"cmd", "stats"}, {"top", n}}, &r)) return 1;
    json out = json::array();
    for (const json &x : r["stats"]["rules"])
        if (rule.empty() || x.value("name", "") == rule)
            out.push_back({{"rule", x["name"]},
                           {"key", x.value("key", "src")},
                           {"top_refused", x["top_refused"]}});
    if (!rule.empty() && out.empty()) return failed("no rule named \"" + rule + "\"");
    if (cli.json_out) return print_json({{"ok", true}, {"top", out}});
    for (const json &x : out) {
        // A dst key's offenders are the destinations at their limit, the most refused first.
        const std::string key = x["key"].get<std::string>();
        std::printf("rule %s%s:\n", x["rule"].get<std::string>().c_str(),
                    key == "dst"    ? " (per destination: the destinations held at their limit)"
                    : key == "none" ? " (one bucket for the whole rule)"
                                    : "");
        if (x["top_refused"].empty()) std::printf("  (nothing refused)\n");
        for (const json &t : x["top_refused"])
            std::printf("  %-45s %14llu refused\n", t.value("source", "").c_str(),
                        static_cast<unsigned long long>(u64(t, "count")));
    }
    return 0;
}

void print_overrides(const json &reply, const std::string &list) {
    bool any = false;
    for (const json &o : reply["overrides"]) {
        if (o.value("list", "") != list) continue;
        any = true;
        if (o["expires_unix"].is_null())
            std::printf("%s %-45s never expires\n", list.c_str(), o.value("prefix", "").c_str());
        else
            std::printf(
                "%s %-45s expires in %s (%s)\n", list.c_str(), o.value("prefix", "").c_str(),
                format_duration_s(static_cast<long long>(std::ceil(o.value("ttl_left_s", 0.0))))
                    .c_str(),
                utc(o.value("expires_unix", 0.0)).c_str());
    }
    if (!any) std::printf("no %s overrides\n", list.c_str());
}

int cmd_override(const Cli &cli, const std::string &list, const std::vector<std::string> &a) {
    // a: add|del|list [PREFIX] [--ttl D]
    if (a.empty()) return usage_error(list + ": add, del or list");
    const std::string &verb = a[0];
    json r;
    if (verb == "list") {
        if (a.size() != 1) return usage_error(list + " list takes no arguments");
        if (!ask(cli, {{"cmd", "overrides"}}, &r)) return 1;
        if (cli.json_out) return print_json(r);
        print_overrides(r, list);
        return 0;
    }
    if (verb != "add" && verb != "del") return usage_error(list + ": add, del or list");
    if (a.size() < 2) return usage_error(list + " " + verb + " needs a PREFIX");
    json request = {
        {"cmd", verb == "add" ? "override_add" : "override_del"}, {"list", list}, {"prefix", a[1]}};
    for (size_t i = 2; i < a.size(); ++i) {
        if (a[i] == "--ttl" && verb == "add" && i + 1 < a.size()) {
            std::string why;
            auto ttl = parse_duration_s(a[++i], &why);
            if (!ttl) return usage_error("--ttl " + why);
            request["ttl_s"] = *ttl;
        } else {
            return usage_error("unexpected argument '" + a[i] + "'");
        }
    }
    if (!ask(cli, request, &r)) return 1;
    if (cli.json_out) return print_json(r);
    print_overrides(r, list);
    return 0;
}

int cmd_rule_mode(const Cli &cli, const std::string &rule, const std::string &mode) {
    if (mode != "shadow" && mode != "enforce") return usage_error("rule NAME shadow|enforce");
    json r;
    if (!ask(cli, {{"cmd", "mode"}, {"rule", rule}, {"mode", mode}}, &r)) return 1;
    if (cli.json_out) return print_json(r);
    std::printf("rule %s: %s (ruleset version %llu)\n", rule.c_str(), mode.c_str(),
                static_cast<unsigned long long>(u64(r, "version")));
    return 0;
}

int cmd_daemon(const Cli &cli) {
    DaemonOptions o;
    o.socket = cli.socket;
    const auto &a = cli.args;
    for (size_t i = 1; i < a.size(); ++i) {
        if (i + 1 >= a.size()) return usage_error("daemon: " + a[i] + " needs a value");
        if (a[i] == "--config")
            o.config = a[++i];
        else if (a[i] == "--dataplane")
            o.dataplane = a[++i];
        else if (a[i] == "--metrics")
            o.metrics = a[++i];
        else
            return usage_error("daemon: unknown option " + a[i]);
    }
    // Refused here, before the daemon starts anything, like every other bad option value.
    if (o.metrics != "none") {
        ListenAddress address;
        std::string why;
        if (!resolve_listen_address(o.metrics, &address, &why))
            return usage_error("daemon: --metrics " + why);
    }
    return run_daemon(o);
}

}  // namespace

int floodctl_main(int argc, char **argv) {
    Cli cli;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-j" || a == "--json") {
            cli.json_out = true;
        } else if (a == "--socket") {
            if (++i >= argc) return usage_error("--socket needs a path");
            cli.socket = argv[i];
        } else if (a == "-h" || a == "--help" || a == "help") {
            std::fputs(kUsage, stdout);
            std::fputs(kXdpUsage, stdout);
            return 0;
        } else {
            cli.args.push_back(a);
        }
    }
    const auto &a = cli.args;
    if (a.empty()) return usage_error("no command");
    const std::string &cmd = a[0];
    try {
        if (cmd == "daemon") return cmd_daemon(cli);
        if (cmd == "status" && a.size() == 1) return cmd_status(cli);
        if (cmd == "rules" && a.size() == 3 && a[1] == "check") return cmd_rules_check(cli, a[2]);
        if (cmd == "rules" && a.size() >= 3 && a[1] == "load") {
            bool dry_run = a.size() == 4 && a[3] == "--dry-run";
            if (a.size() > 4 || (a.size() == 4 && !dry_run))
                return usage_error("rules load FILE [--dry-run]");
            return cmd_rules_load(cli, a[2], dry_run);
        }
        if (cmd == "rules" && a.size() == 2 && a[1] == "show") return cmd_rules_show(cli);
        if (cmd == "stats") {
            if (a.size() == 1) return cmd_stats(cli, "");
            if (a.size() == 3 && a[1] == "--rule") return cmd_stats(cli, a[2]);
            return usage_error("stats [--rule NAME]");
        }
        if (cmd == "top") {
            std::string rule;
            int n = 10;
            for (size_t i = 1; i < a.size(); ++i) {
                if (a[i] == "--rule" && i + 1 < a.size()) {
                    rule = a[++i];
                } else if (a[i] == "-n" && i + 1 < a.size()) {
                    std::string why;
                    const std::optional<uint64_t> top = parse_uint(a[++i], 1, 64, &why);
                    if (!top) return usage_error("-n " + why);
                    n = static_cast<int>(*top);
                } else {
                    return usage_error("top [--rule NAME] [-n N]");
                }
            }
            return cmd_top(cli, rule, n);
        }
        if (cmd == "block" || cmd == "allow")
            return cmd_override(cli, cmd, std::vector<std::string>(a.begin() + 1, a.end()));
        if (cmd == "rule" && a.size() == 3) return cmd_rule_mode(cli, a[1], a[2]);
        if (cmd == "xdp")
            return cmd_xdp(std::vector<std::string>(a.begin() + 1, a.end()), cli.json_out);
    } catch (const std::exception &e) {
        return failed(e.what());
    }
    return usage_error("unknown command or wrong arguments: " + cmd);
}

}  // namespace floodgate
