#include "control/cli/commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "control/client/daemon_client.h"
#include "control/common/rules_diff.h"
#include "control/common/running_rules.h"
#include "dataplane/api/daemon_commands.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/prefix.h"
#include "dataplane/api/stats_text.h"
#include "rules/load.h"

namespace floodgate {

using nlohmann::json;

bool Ctl::ask(const json &request, json *reply) const {
    return ask_daemon(socket, json_out, request, reply);
}

namespace {

int failed(const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    return 1;
}

uint64_t u64(const json &j, const char *field) {
    auto it = j.find(field);
    return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

int print_json(const json &reply) {
    std::cout << reply.dump(2) << "\n";
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

// The cluster as the dataplane runs it (joined or alone) and as the daemon reaches the store.
void print_cluster(const json &c, const json &daemon) {
    if (!c.is_object() || !c.value("configured", false)) return;
    const bool joined = c.value("state", "") == "joined";
    std::printf("cluster:   %s, box %s, %s, %llu box(es) live, sync every %llu ms through %s\n",
                c.value("name", "").c_str(), daemon.value("box", "?").c_str(),
                joined ? "joined"
                       : ("ALONE (" + c.value("reason", std::string()) +
                          "): shared rules at their fallback")
                             .c_str(),
                static_cast<unsigned long long>(u64(c, "boxes")),
                static_cast<unsigned long long>(u64(c, "sync_ms")), c.value("redis", "").c_str());
    std::printf(
        "           alone %.1f s in all, %llu changes; %llu syncs, %llu without the store; "
        "told %llu packets, charged %llu; refused %llu here, %llu from the store\n",
        c.value("fallback_s", 0.0), static_cast<unsigned long long>(u64(c, "changes")),
        static_cast<unsigned long long>(u64(c, "syncs")),
        static_cast<unsigned long long>(u64(c, "failed_syncs")),
        static_cast<unsigned long long>(u64(c, "told_packets")),
        static_cast<unsigned long long>(u64(c, "charged_packets")),
        static_cast<unsigned long long>(u64(c, "refused_charges")),
        static_cast<unsigned long long>(daemon.value("refused", uint64_t{0})));
    // What other boxes sent past its bounds (a compromised box's, or a bug's): clamped or not
    // taken, by reason.
    const json esc = c.value("escalations", json::object()),
               allows = daemon.is_object() ? daemon.value("allows_bounded", json::object())
                                           : json::object();
    const auto n = [](const json &j, const char *k) {
        return static_cast<unsigned long long>(j.value(k, uint64_t{0}));
    };
    std::printf(
        "           bounded: %llu charges clamped (%llu packets left out); escalations "
        "%llu short, %llu past the count, %llu TTLs clamped; allows refused %llu (off), %llu "
        "(short), %llu (malformed), %llu (past the count), %llu TTLs clamped\n",
        n(c, "clamped_charges"), n(c, "clamped_packets"), n(esc, "short"), n(esc, "over_count"),
        n(esc, "ttl_clamped"), n(allows, "off"), n(allows, "short"), n(allows, "malformed"),
        n(allows, "over_count"), n(allows, "ttl_clamped"));
    if (daemon.is_object() && !daemon.value("store_ok", true))
        std::printf("           store: %s\n", daemon.value("last_error", "").c_str());
    // The store's round trip, as the seeds ask: its median, p99 and worst, and its timeouts.
    if (daemon.is_object() && daemon.contains("store_round_trip")) {
        const json t = daemon["store_round_trip"];
        std::printf(
            "           store round trip over the last %.0f s: p50 %.2f ms, p99 %.2f ms, "
            "max %.2f ms (%llu syncs); %llu timeouts in all\n",
            t.value("window_s", 0.0), t.value("p50_ms", 0.0), t.value("p99_ms", 0.0),
            t.value("max_ms", 0.0), n(t, "samples"),
            n(daemon.value("store", json::object()), "timeouts"));
    }
    // The store refusing this box's login or TLS is a configuration to fix, not an outage.
    const json store = daemon.is_object() ? daemon.value("store", json::object()) : json::object();
    const uint64_t login = store.value("auth_refused", uint64_t{0}),
                   tls = store.value("tls_refused", uint64_t{0});
    if (login + tls > 0)
        std::printf("           store refused: the login %llu times, TLS %llu times\n",
                    static_cast<unsigned long long>(login), static_cast<unsigned long long>(tls));
    // Entries not believed, by reason: forged, replayed or signed with a key not held here.
    std::string entries;
    const json by_reason = store.value("entries_refused", json::object());
    for (const auto &[reason, n] : by_reason.items())
        if (n.is_number_unsigned() && n.get<uint64_t>() > 0)
            entries += " " + reason + " " + std::to_string(n.get<uint64_t>());
    // The keys entries are signed and checked with (none: no sync), and a rotation's state.
    if (daemon.is_object() && daemon.contains("keys")) {
        std::string keys;
        for (const json &id : daemon["keys"])
            if (id.is_string()) keys += (keys.empty() ? "" : ", ") + id.get<std::string>();
        std::printf("           entries signed with %s (%llu key rotations read)%s%s\n",
                    keys.empty() ? "NO KEY (no --cluster-key-file: no sync)" : keys.c_str(),
                    n(daemon, "key_reloads"), entries.empty() ? "" : "; refused:", entries.c_str());
        const std::string refused = daemon.value("key_file_refused", std::string());
        if (!refused.empty())
            std::printf("           key file REFUSED, the keys above kept: %s\n", refused.c_str());
    }
}

// Upstream: what floodctl asked gobgpd to hold and what its RIB held when read back, apart,
// then each rule asked for (the missing first; -j status lists them all).
void print_flowspec(const json &f) {
    constexpr size_t kRulesShown = 20;
    const auto n = [&f](const char *field) {
        return static_cast<unsigned long long>(u64(f, field));
    };
    std::printf(
        "upstream:  FlowSpec rules %llu asked, %llu in gobgpd's RIB, %llu MISSING; RTBH routes "
        "%llu asked, %llu in the RIB, %llu missing; %llu announced, %llu withdrawn, %llu stale "
        "withdrawn, %llu missing after their add in all; withheld %llu (limit), %llu (rate); "
        "refused %llu (source too short), %llu (never_block); %llu failed calls%s%s\n",
        n("asked"), n("in_rib"), n("missing"), n("blackholes_asked"), n("blackholes_in_rib"),
        n("blackholes_missing"), n("announced"), n("withdrawn"), n("stale_withdrawn"),
        n("missing_after_add"), n("withheld_limit"), n("withheld_rate"), n("refused_short_source"),
        n("refused_never_block"), n("failed_calls"), f.value("last_error", "").empty() ? "" : ": ",
        f.value("last_error", "").c_str());
    const json &rules = f.contains("rules") && f["rules"].is_array() ? f["rules"] : json::array();
    size_t shown = 0;
    for (const bool in_rib : {false, true})
        for (const json &rule : rules) {
            if (!rule.is_object() || rule.value("in_rib", false) != in_rib) continue;
            if (shown++ < kRulesShown)
                std::printf("  %-8s %s (%s)\n", in_rib ? "in RIB" : "MISSING",
                            rule.value("match", "").c_str(), rule.value("origin", "").c_str());
        }
    if (shown > kRulesShown)
        std::printf("  ... %zu more (floodctl -j status lists them)\n", shown - kRulesShown);
}

}  // namespace

int cmd_status(const Ctl &ctl) {
    json r;
    if (!ctl.ask(daemon_request(DaemonCommand::status), &r)) return 1;
    // A dataplane that is down is a failure in either format.
    const bool up = r.value("dataplane_up", false);
    if (ctl.json_out) return print_json(r), up ? 0 : 1;
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
    if (const json &st = d["steering"]; st.is_object()) {
        std::printf("steering:  %s", st.value("mode", "").c_str());
        if (st.contains("ipv4_len"))
            std::printf(", each source prefix (IPv4 /%u, IPv6 /%u) on one worker",
                        st.value("ipv4_len", 0u), st.value("ipv6_len", 0u));
        std::printf("\n");
        for (const json &rule : st.value("rules", json::array()))
            std::printf("  rule %-20s %s\n", rule.value("name", "").c_str(),
                        rule.value("scope", "").c_str());
    }
    print_cluster(d["cluster"], r["cluster"]);
    if (const json &f = r["flowspec"]; f.is_object() && f.value("active", false)) print_flowspec(f);
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

int cmd_rules_check(const Ctl &ctl, const std::string &path) {
    Config c;
    std::optional<ConfigError> error;
    try {
        c = parse_config(read_config_file(path), path);
    } catch (const ConfigError &e) {
        error = e;
    }
    if (ctl.json_out) {
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
    if (!ctl.json_out)
        std::printf("%s: valid: %zu rules, %zu allow and %zu block prefixes\n", path.c_str(),
                    c.rules.size(), c.allow.size(), c.block.size());
    return 0;
}

int cmd_rules_load(const Ctl &ctl, const std::string &path, bool dry_run) {
    RulesFile file;
    try {
        file.text = read_config_file(path);
        file.config = parse_config(file.text, path);
    } catch (const ConfigError &e) {
        if (ctl.json_out)
            print_json({{"ok", false},
                        {"error", e.what()},
                        {"file", e.file()},
                        {"line", e.line()},
                        {"field", e.field()}});
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    json r;
    if (!ctl.ask(daemon_request(DaemonCommand::rules_load,
                                {{"source", path}, {"text", file.text}, {"dry_run", dry_run}}),
                 &r))
        return 1;
    if (ctl.json_out) return print_json(r);
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

int cmd_rules_show(const Ctl &ctl) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::rules), &r)) return 1;
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
    if (ctl.json_out) {
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
                           {"table",
                            {{"entries_per_core", c.table_entries_per_core},
                             {"proxy_connections_per_core", c.proxy_connections_per_core},
                             {"proxy_server_timeout_ns", c.proxy_server_timeout_ns},
                             {"proxy_idle_timeout_ns", c.proxy_idle_timeout_ns}}},
                           {"rules", rules},
                           {"text", r["text"]}});
    }
    std::printf("ruleset version %llu from %s (%s), loaded %s\n",
                static_cast<unsigned long long>(u64(r, "version")), r.value("source", "").c_str(),
                r.value("origin", "").c_str(), utc_text(r.value("loaded_unix", 0.0)).c_str());
    auto list = [](const std::vector<Prefix> &ps) {
        std::string s;
        for (const Prefix &p : ps) {
            if (!s.empty())
                s += ' ';  // appended: "literal" + std::string trips GCC 12's -Wrestrict
            s += format_prefix(p);
        }
        return s.empty() ? std::string("-") : s;
    };
    std::printf("allow: %s\nblock: %s\n", list(c.allow).c_str(), list(c.block).c_str());
    std::printf("table: %llu entries per core\n",
                static_cast<unsigned long long>(c.table_entries_per_core));
    // An adaptive rule's limit as it stands now: what it learned (from the stats).
    json stats;
    const bool adaptive = std::any_of(c.rules.begin(), c.rules.end(),
                                      [](const Rule &x) { return x.adaptive.enabled; });
    if (adaptive && !ctl.ask(dataplane_request(DataplaneCommand::stats), &stats))
        stats = json::object();
    for (const Rule &rule : c.rules) {
        std::string now;
        if (rule.adaptive.enabled && stats.contains("stats"))
            for (const json &x : stats["stats"].value("rules", json::array()))
                if (x.value("name", "") == rule.name)
                    now = ", now " + std::to_string(std::llround(x.value("limit_per_s", 0.0))) +
                          "/s (learned)";
        std::printf("rule %s: %s, %s%s, key %s, match %s\n", rule.name.c_str(),
                    rule.mode == RuleMode::shadow ? "shadow" : "enforce",
                    describe_limit(rule).c_str(), now.c_str(), describe_key(rule).c_str(),
                    describe_match(rule.match).c_str());
    }
    return 0;
}

int cmd_stats(const Ctl &ctl, const std::string &rule) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::stats), &r)) return 1;
    if (!only_rule(&r["stats"], rule)) return failed("no rule named \"" + rule + "\"");
    if (ctl.json_out) return print_json(r);
    std::fputs(stats_text(r["stats"]).c_str(), stdout);
    return 0;
}

// The NIC tier (the stats' "nic" section, dataplane/service/nic_feed.h): its counters, then each
// rte_flow rule the outside port holds with what it dropped.
int cmd_nic(const Ctl &ctl) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::stats), &r)) return 1;
    const json nic = r["stats"].value("nic_tier", json());
    if (ctl.json_out) return print_json({{"ok", true}, {"nic_tier", nic}});
    if (!nic.is_object()) {
        std::printf("no NIC tier (the rules file has no nic_tier section)\n");
        return 0;
    }
    const auto reasons = [](const json &by) {
        std::string s;
        for (const auto &[k, v] : by.items())
            if (v.get<uint64_t>() != 0) s += (s.empty() ? "" : ", ") + k + " " + v.dump();
        return s.empty() ? std::string("none") : s;
    };
    std::printf(
        "nic on %s: %llu rules of %llu (%llu block, %llu escalated), %llu waiting; dropped "
        "%llu frames, %llu bytes\n",
        nic.value("port", "").c_str(), nic.value("rules", 0ull), nic.value("max_rules", 0ull),
        nic["rules_by_origin"].value("block", 0ull),
        nic["rules_by_origin"].value("escalated", 0ull), nic.value("waiting", 0ull),
        nic.value("hits", 0ull), nic.value("bytes", 0ull));
    std::printf(
        "  inserted %llu (at most %llu a second, each at most %llu s); refused: %s; "
        "skipped: %s; withdrawn: %s; flushed at start %llu\n",
        nic.value("inserted", 0ull), nic.value("inserts_per_second", 0ull),
        nic.value("ttl_s", 0ull), reasons(nic["refused"]).c_str(), reasons(nic["skipped"]).c_str(),
        reasons(nic["withdrawn"]).c_str(), nic.value("flushed_at_start", 0ull));
    for (const json &x : nic.value("listed", json::array()))
        std::printf("  %-45s %-9s %-16s %12llu frames %14llu bytes  %6.0f s left\n",
                    x.value("prefix", "").c_str(), x.value("origin", "").c_str(),
                    x.value("rule", "").c_str(), x.value("hits", 0ull), x.value("bytes", 0ull),
                    x.value("ttl_left_s", 0.0));
    return 0;
}

int cmd_top(const Ctl &ctl, const std::string &rule, int n) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::stats, {{"top", n}}), &r)) return 1;
    if (!only_rule(&r["stats"], rule)) return failed("no rule named \"" + rule + "\"");
    json out = json::array();
    for (const json &x : r["stats"]["rules"])
        out.push_back({{"rule", x["name"]},
                       {"key", x.value("key", "src")},
                       {"top_refused", x["top_refused"]}});
    if (ctl.json_out) return print_json({{"ok", true}, {"top", out}});
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

int cmd_override_list(const Ctl &ctl, const std::string &list) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::overrides), &r)) return 1;
    if (ctl.json_out) return print_json(overrides_of(r, list));
    print_overrides(r, list);
    return 0;
}

int cmd_override(const Ctl &ctl, const std::string &list, const std::string &verb,
                 const std::string &prefix, std::optional<long long> ttl_s) {
    json request = dataplane_request(
        verb == "add" ? DataplaneCommand::override_add : DataplaneCommand::override_del,
        {{"list", list}, {"prefix", prefix}});
    if (ttl_s) request["ttl_s"] = *ttl_s;
    json r;
    if (!ctl.ask(request, &r)) return 1;
    if (ctl.json_out) return print_json(overrides_of(r, list));
    // One override per prefix: adding it to one list takes it off the other.
    if (const auto it = r.find("replaced"); it != r.end() && it->is_object())
        std::printf("note: %s %s replaces the %s override on it\n", list.c_str(), prefix.c_str(),
                    it->value("list", "").c_str());
    print_overrides(r, list);
    return 0;
}

int cmd_rule_mode(const Ctl &ctl, const std::string &rule, const std::string &mode) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::mode, {{"rule", rule}, {"mode", mode}}), &r))
        return 1;
    if (ctl.json_out) return print_json(r);
    if (!r.value("changed", true))
        std::printf("rule %s: already %s, no change (ruleset version %llu)\n", rule.c_str(),
                    mode.c_str(), static_cast<unsigned long long>(u64(r, "version")));
    else
        std::printf("rule %s: %s (ruleset version %llu)\n", rule.c_str(), mode.c_str(),
                    static_cast<unsigned long long>(u64(r, "version")));
    return 0;
}

}  // namespace floodgate
