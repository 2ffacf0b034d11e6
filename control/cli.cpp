#include "control/cli.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/daemon.h"
#include "control/daemon_client.h"
#include "control/listen_address.h"
#include "control/rules_diff.h"
#include "control/running_rules.h"
#include "control/watch.h"
#include "control/xdp_cli.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/prefix.h"
#include "dataplane/api/stats_text.h"
#include "rules/load.h"

namespace floodgate {

namespace {

using nlohmann::json;

// Each command's usage, shown alone with its usage errors and all together by --help.
struct CommandUsage {
    const char *name;
    const char *text;
};
constexpr CommandUsage kCommands[] = {
    {"daemon",
     "  daemon --config RULES.yaml [--dataplane SOCKET] [--metrics HOST:PORT|none]\n"
     "                         run the control plane (socket /run/floodgate/floodctl.sock)\n"},
    {"status", "  status                 dataplane, ruleset, rates, table occupancy\n"},
    {"watch",
     "  watch [--interval SECONDS] [--rule NAME] [-n N] [--count FRAMES]\n"
     "                         the live view: rates per rule and port, top refused sources;\n"
     "                         q or Ctrl-C quits (default every 1 s, 3 sources per rule)\n"},
    {"rules",
     "  rules check FILE       validate only; exit 0 when valid\n"
     "  rules load FILE [--dry-run]\n"
     "                         validate, show the difference, apply atomically\n"
     "  rules show             the running rules\n"},
    {"stats", "  stats [--rule NAME]    counters, per rule\n"},
    {"top",
     "  top [--rule NAME] [-n N]\n"
     "                         the sources (for key dst: destinations) refused most\n"
     "                         (N up to 64, default 10)\n"},
    {"block", "  block add PREFIX [--ttl DURATION] | block del PREFIX | block list\n"},
    {"allow",
     "  allow add PREFIX [--ttl DURATION] | allow del PREFIX | allow list\n"
     "                         runtime overrides; DURATION like 90s, 15m, 2h, 1d, 1h30m\n"
     "                         (a unit on every number: a bare 15 is refused)\n"},
    {"rule",
     "  rule NAME shadow|enforce\n"
     "                         switch one rule between shadow and enforce\n"},
    {"xdp", kXdpUsage},
};
constexpr const char *kUsageHead = "usage: floodctl [--socket PATH] [-j|--json] COMMAND\n";

void print_usage(std::FILE *to) {
    std::fputs(kUsageHead, to);
    for (const CommandUsage &c : kCommands) std::fputs(c.text, to);
    std::fputs("  --version              floodctl's version\n", to);
}

// The error, then the usage of the one command it is about (all of them when there is none).
int usage_error(const std::string &command, const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    for (const CommandUsage &c : kCommands)
        if (command == c.name) {
            std::fprintf(stderr, "usage: floodctl [--socket PATH] [-j] ...\n%s", c.text);
            return 2;
        }
    print_usage(stderr);
    return 2;
}

int failed(const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    return 1;
}

struct Cli {
    std::string socket = kDefaultDaemonSocket;
    bool json_out = false;
    std::vector<std::string> args;

    bool ask(const json &request, json *reply) const {
        return ask_daemon(socket, json_out, request, reply);
    }
};

uint64_t u64(const json &j, const char *field) {
    auto it = j.find(field);
    return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

int print_json(const json &reply) {
    std::cout << reply.dump(2) << "\n";
    return 0;
}

int cmd_status(const Cli &cli) {
    json r;
    if (!cli.ask({{"cmd", "status"}}, &r)) return 1;
    // A dataplane that is down is a failure in either format.
    const bool up = r.value("dataplane_up", false);
    if (cli.json_out) return print_json(r), up ? 0 : 1;
    if (!up) {
        std::printf("dataplane: DOWN (%s)\n", r.value("dataplane_error", "").c_str());
        return 1;
    }
    const json &d = r["dataplane"];
    const json &rs = d["ruleset"];
    const unsigned workers = d.value("workers", 0u);
    std::printf("dataplane: up, %u worker%s, up %s (instance %s)\n", workers,
                workers == 1 ? "" : "s",
                format_duration_s(static_cast<long long>(d.value("uptime_s", 0.0))).c_str(),
                d.value("instance", "").c_str());
    std::printf("ruleset:   version %llu, loaded %s from %s (%s), %zu rules, %zu overrides\n",
                static_cast<unsigned long long>(u64(rs, "version")),
                utc_text(rs.value("loaded_unix", 0.0)).c_str(), rs.value("source", "").c_str(),
                rs.value("origin", "").c_str(), static_cast<size_t>(u64(rs, "rules")),
                static_cast<size_t>(u64(rs, "overrides")));
    std::printf("reloads:   %llu ok, %llu failed; %llu overrides expired\n",
                static_cast<unsigned long long>(u64(d["reloads"], "ok")),
                static_cast<unsigned long long>(u64(d["reloads"], "failed")),
                static_cast<unsigned long long>(u64(d, "overrides_expired")));
    const json &rates = r["rates"];
    if (rates.is_object()) {
        std::printf("rates:     over the %s %.1f s\n",
                    r.value("rates_since_start", false) ? "dataplane's first" : "last",
                    rates.value("interval_s", 0.0));
        std::fputs(rates_text(rates, "  ").c_str(), stdout);
    } else {
        std::printf("rates:     none yet\n");
    }
    if (r["table"].is_object()) {
        const json &t = r["table"];
        const double cap = static_cast<double>(u64(t, "capacity"));
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

int cmd_rules_check(const Cli &cli, const std::string &path) {
    Config c;
    std::optional<ConfigError> error;
    try {
        c = parse_config(read_config_file(path), path);
    } catch (const ConfigError &e) {
        error = e;
    }
    if (cli.json_out) {
        json r = {{"ok", !error}, {"file", path}};
        if (error) {
            r["error"] = error->what();
            r["line"] = error->line();
            r["field"] = error->field();
        } else {
            r["rules"] = c.rules.size();
            r["allow"] = c.allow.size();
            r["block"] = c.block.size();
        }
        print_json(r);
    }
    if (error) {
        std::fprintf(stderr, "%s\n", error->what());
        return 1;
    }
    if (!cli.json_out)
        std::printf("%s: valid: %zu rules, %zu allow and %zu block prefixes\n", path.c_str(),
                    c.rules.size(), c.allow.size(), c.block.size());
    return 0;
}

int cmd_rules_load(const Cli &cli, const std::string &path, bool dry_run) {
    RulesFile file;
    try {
        file.text = read_config_file(path);
        file.config = parse_config(file.text, path);
    } catch (const ConfigError &e) {
        if (cli.json_out)
            print_json({{"ok", false},
                        {"error", e.what()},
                        {"file", e.file()},
                        {"line", e.line()},
                        {"field", e.field()}});
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    json r;
    if (!cli.ask(
            {{"cmd", "rules_load"}, {"source", path}, {"text", file.text}, {"dry_run", dry_run}},
            &r))
        return 1;
    if (cli.json_out) return print_json(r);
    if (!r.value("changed", true)) {
        std::printf("no change: the running rules are already %s's (ruleset version %llu)\n",
                    path.c_str(), static_cast<unsigned long long>(u64(r, "version")));
        return 0;
    }
    const json &diff = r["diff"];
    if (diff["changes"].empty()) std::printf("no changes\n");
    for (const json &line : diff["changes"]) std::printf("  %s\n", line.get<std::string>().c_str());
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
    if (!cli.ask({{"cmd", "rules"}}, &r)) return 1;
    Config c;
    try {
        c = running_rules(r);
    } catch (const ConfigError &e) {
        return failed(std::string("cannot read the running rules: ") + e.what());
    }
    auto prefixes = [](const std::vector<Prefix> &ps) {
        json a = json::array();
        for (const Prefix &p : ps) a.push_back(format_prefix(p));
        return a;
    };
    if (cli.json_out) {
        json rules = json::array();
        for (size_t i = 0; i < c.rules.size(); ++i) {
            json rule = rule_json(c.rules[i]);
            if (i < r["rules"].size()) rule["state"] = r["rules"][i].value("state", "");
            rules.push_back(rule);
        }
        return print_json({{"ok", true},
                           {"version", r["version"]},
                           {"source", r["source"]},
                           {"origin", r["origin"]},
                           {"loaded_unix", r["loaded_unix"]},
                           {"allow", prefixes(c.allow)},
                           {"block", prefixes(c.block)},
                           {"table", {{"entries_per_core", c.table_entries_per_core}}},
                           {"rules", rules},
                           {"text", r["text"]}});
    }
    std::printf("ruleset version %llu from %s (%s), loaded %s\n",
                static_cast<unsigned long long>(u64(r, "version")), r.value("source", "").c_str(),
                r.value("origin", "").c_str(), utc_text(r.value("loaded_unix", 0.0)).c_str());
    auto list = [](const std::vector<Prefix> &ps) {
        std::string s;
        for (const Prefix &p : ps) s += (s.empty() ? "" : " ") + format_prefix(p);
        return s.empty() ? std::string("-") : s;
    };
    std::printf("allow: %s\nblock: %s\n", list(c.allow).c_str(), list(c.block).c_str());
    std::printf("table: %llu entries per core\n",
                static_cast<unsigned long long>(c.table_entries_per_core));
    for (const Rule &rule : c.rules)
        std::printf("rule %s: %s, %s, key %s, match %s\n", rule.name.c_str(),
                    rule.mode == RuleMode::shadow ? "shadow" : "enforce",
                    describe_limit(rule).c_str(), describe_key(rule).c_str(),
                    describe_match(rule.match).c_str());
    return 0;
}

// Keeps only the rule named `rule` in stats["rules"]; false when there is none.
bool only_rule(json *stats, const std::string &rule) {
    if (rule.empty()) return true;
    json only = json::array();
    for (const json &x : (*stats)["rules"])
        if (x.value("name", "") == rule) only.push_back(x);
    (*stats)["rules"] = only;
    return !only.empty();
}

int cmd_stats(const Cli &cli, const std::string &rule) {
    json r;
    if (!cli.ask({{"cmd", "stats"}}, &r)) return 1;
    if (!only_rule(&r["stats"], rule)) return failed("no rule named \"" + rule + "\"");
    if (cli.json_out) return print_json(r);
    std::fputs(stats_text(r["stats"]).c_str(), stdout);
    return 0;
}

int cmd_top(const Cli &cli, const std::string &rule, int n) {
    json r;
    if (!cli.ask({{"cmd", "stats"}, {"top", n}}, &r)) return 1;
    if (!only_rule(&r["stats"], rule)) return failed("no rule named \"" + rule + "\"");
    json out = json::array();
    for (const json &x : r["stats"]["rules"])
        out.push_back({{"rule", x["name"]},
                       {"key", x.value("key", "src")},
                       {"top_refused", x["top_refused"]}});
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
            std::printf("  %-45s refused %s\n", t.value("source", "").c_str(),
                        refused_bound_text(t).c_str());
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
                utc_text(o.value("expires_unix", 0.0)).c_str());
    }
    if (!any) std::printf("no %s overrides\n", list.c_str());
}

// The reply's overrides of one list only: `block list` shows blocks, in either format.
json overrides_of(json reply, const std::string &list) {
    json only = json::array();
    for (const json &o : reply["overrides"])
        if (o.value("list", "") == list) only.push_back(o);
    reply["overrides"] = only;
    return reply;
}

int cmd_override(const Cli &cli, const std::string &list, const std::vector<std::string> &a) {
    // a: add|del|list [PREFIX] [--ttl D]
    if (a.empty()) return usage_error(list, list + ": add, del or list?");
    const std::string &verb = a[0];
    json r;
    if (verb == "list") {
        if (a.size() != 1) return usage_error(list, list + " list takes no arguments");
        if (!cli.ask({{"cmd", "overrides"}}, &r)) return 1;
        if (cli.json_out) return print_json(overrides_of(r, list));
        print_overrides(r, list);
        return 0;
    }
    if (verb != "add" && verb != "del")
        return usage_error(list, list + ": '" + verb + "' is not add, del or list");
    if (a.size() < 2) return usage_error(list, list + " " + verb + " needs a PREFIX");
    // Checked here, so that the error names what was typed, not the protocol's field.
    std::string why;
    if (!parse_prefix(a[1], &why))
        return usage_error(list, list + " " + verb + " " + a[1] + ": " + why);
    json request = {
        {"cmd", verb == "add" ? "override_add" : "override_del"}, {"list", list}, {"prefix", a[1]}};
    for (size_t i = 2; i < a.size(); ++i) {
        if (a[i] == "--ttl" && verb == "add") {
            if (i + 1 >= a.size()) return usage_error(list, "--ttl needs a DURATION");
            auto ttl = parse_duration_s(a[++i], &why);
            if (!ttl) return usage_error(list, "--ttl " + why);
            request["ttl_s"] = *ttl;
        } else {
            return usage_error(list, list + " " + verb + ": unexpected argument '" + a[i] + "'");
        }
    }
    if (!cli.ask(request, &r)) return 1;
    if (cli.json_out) return print_json(overrides_of(r, list));
    // One override per prefix: adding it to one list takes it off the other.
    if (const auto it = r.find("replaced"); it != r.end() && it->is_object())
        std::printf("note: %s %s replaces the %s override on it\n", list.c_str(), a[1].c_str(),
                    it->value("list", "").c_str());
    print_overrides(r, list);
    return 0;
}

int cmd_rule_mode(const Cli &cli, const std::string &rule, const std::string &mode) {
    if (mode != "shadow" && mode != "enforce")
        return usage_error("rule", "rule " + rule + ": '" + mode + "' is not shadow or enforce");
    json r;
    if (!cli.ask({{"cmd", "mode"}, {"rule", rule}, {"mode", mode}}, &r)) return 1;
    if (cli.json_out) return print_json(r);
    if (!r.value("changed", true))
        std::printf("rule %s: already %s, no change (ruleset version %llu)\n", rule.c_str(),
                    mode.c_str(), static_cast<unsigned long long>(u64(r, "version")));
    else
        std::printf("rule %s: %s (ruleset version %llu)\n", rule.c_str(), mode.c_str(),
                    static_cast<unsigned long long>(u64(r, "version")));
    return 0;
}

int cmd_daemon(const Cli &cli) {
    DaemonOptions o;
    o.socket = cli.socket;
    const auto &a = cli.args;
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] != "--config" && a[i] != "--dataplane" && a[i] != "--metrics")
            return usage_error("daemon", "daemon: unknown option " + a[i]);
        if (i + 1 >= a.size()) return usage_error("daemon", "daemon: " + a[i] + " needs a value");
        if (a[i] == "--config")
            o.config = a[++i];
        else if (a[i] == "--dataplane")
            o.dataplane = a[++i];
        else
            o.metrics = a[++i];
    }
    // Refused here, before the daemon starts anything, like every other bad option value.
    if (o.metrics != "none") {
        ListenAddress address;
        std::string why;
        if (!resolve_listen_address(o.metrics, &address, &why))
            return usage_error("daemon", "daemon: --metrics " + why);
    }
    return run_daemon(o);
}

int cmd_watch(const Cli &cli) {
    WatchOptions o;
    o.socket = cli.socket;
    o.json_out = cli.json_out;
    const auto &a = cli.args;
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] != "--interval" && a[i] != "--rule" && a[i] != "-n" && a[i] != "--count")
            return usage_error("watch", "watch: unknown option " + a[i]);
        if (i + 1 >= a.size()) return usage_error("watch", "watch: " + a[i] + " needs a value");
        std::string why;
        if (a[i] == "--interval") {
            const std::optional<uint64_t> ns =
                parse_seconds_ns(a[++i], 100000000, 3600 * 1000000000ull, &why);
            if (!ns) return usage_error("watch", "watch: --interval " + why);
            o.interval_s = static_cast<double>(*ns) / 1e9;
        } else if (a[i] == "--rule") {
            o.rule = a[++i];
        } else if (a[i] == "-n") {
            const std::optional<uint64_t> n = parse_uint(a[++i], 0, 64, &why);
            if (!n) return usage_error("watch", "watch: -n " + why);
            o.top = static_cast<unsigned>(*n);
        } else if (a[i] == "--count") {
            const std::optional<uint64_t> n = parse_uint(a[++i], 1, 1000000, &why);
            if (!n) return usage_error("watch", "watch: --count " + why);
            o.count = static_cast<unsigned>(*n);
        }
    }
    return run_watch(o);
}

}  // namespace

int floodctl_main(int argc, char **argv) {
    Cli cli;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-j" || a == "--json") {
            cli.json_out = true;
        } else if (a == "--socket") {
            if (++i >= argc) return usage_error("", "--socket needs a path");
            cli.socket = argv[i];
        } else if (a == "-h" || a == "--help" || a == "help") {
            print_usage(stdout);
            return 0;
        } else if (a == "--version") {
            std::printf("floodctl %s\n", FG_VERSION);
            return 0;
        } else {
            cli.args.push_back(a);
        }
    }
    const auto &a = cli.args;
    if (a.empty()) return usage_error("", "no command");
    const std::string &cmd = a[0];
    try {
        if (cmd == "daemon") return cmd_daemon(cli);
        if (cmd == "status") {
            if (a.size() != 1) return usage_error(cmd, "status takes no arguments");
            return cmd_status(cli);
        }
        if (cmd == "watch") return cmd_watch(cli);
        if (cmd == "rules") {
            if (a.size() == 3 && a[1] == "check") return cmd_rules_check(cli, a[2]);
            if (a.size() >= 3 && a[1] == "load") {
                const bool dry_run = a.size() == 4 && a[3] == "--dry-run";
                if (a.size() > 4 || (a.size() == 4 && !dry_run))
                    return usage_error(cmd, "rules load: unexpected argument '" + a[3] + "'");
                return cmd_rules_load(cli, a[2], dry_run);
            }
            if (a.size() == 2 && a[1] == "show") return cmd_rules_show(cli);
            return usage_error(cmd, a.size() == 1 ? "rules: check, load or show?"
                                                  : "rules " + a[1] + ": wrong arguments");
        }
        if (cmd == "stats") {
            if (a.size() == 1) return cmd_stats(cli, "");
            if (a.size() == 3 && a[1] == "--rule") return cmd_stats(cli, a[2]);
            return usage_error(cmd, "stats: wrong arguments");
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
                    if (!top) return usage_error(cmd, "top: -n " + why);
                    n = static_cast<int>(*top);
                } else {
                    return usage_error(cmd, "top: unexpected argument '" + a[i] + "'");
                }
            }
            return cmd_top(cli, rule, n);
        }
        if (cmd == "block" || cmd == "allow")
            return cmd_override(cli, cmd, std::vector<std::string>(a.begin() + 1, a.end()));
        if (cmd == "rule") {
            if (a.size() != 3) return usage_error(cmd, "rule: NAME and a mode");
            return cmd_rule_mode(cli, a[1], a[2]);
        }
        if (cmd == "xdp")
            return cmd_xdp(std::vector<std::string>(a.begin() + 1, a.end()), cli.json_out);
    } catch (const std::exception &e) {
        return failed(e.what());
    }
    return usage_error("", "unknown command '" + cmd + "'");
}

}  // namespace floodgate
