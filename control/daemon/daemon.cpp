#include "control/daemon/daemon.h"

#include "dataplane/api/base64.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "control/cluster/cluster_sync.h"
#include "control/common/daemon_log.h"
#include "control/common/rules_diff.h"
#include "control/common/running_rules.h"
#include "control/daemon/web_config.h"
#include "control/metrics/http_server.h"
#include "control/metrics/metrics.h"
#include "control/upstream/flowspec_feed.h"
#include "dataplane/api/daemon_commands.h"
#include "dataplane/api/message.h"
#include "dataplane/api/stats_rates.h"
#include "dataplane/api/unix_socket.h"
#include "rules/config_error_reply.h"
#include "rules/load.h"

namespace floodgate {

namespace {

using nlohmann::json;

std::atomic<bool> g_stop{false};
void on_signal(int) {
    g_stop.store(true);
}

double now_unix_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What the operator applied through the daemon, to apply again if the dataplane restarts.
struct Remembered {
    bool valid = false;
    std::string origin;  // "startup": the dataplane's own file; "floodctl": loaded through us
    std::string source, text;
    json doc;                     // the rules file's document, as the dataplane runs it
    json modes = json::object();  // rule name -> "shadow" | "enforce"
    json overrides = json::array();
    // When the overrides' ttl_left_s were read: TTLs count down on the monotonic clock.
    std::chrono::steady_clock::time_point read_at;
};

// The dataplane's load request: the file's document, which it validates again, and its text,
// which it only shows; with config (as validated here), the payload rules' compiled databases,
// so that the dataplane does not compile the patterns again.
json load_request(const std::string &source, const std::string &text, const json &doc,
                  const Config *config = nullptr) {
    json r = dataplane_request(DataplaneCommand::load,
                               {{"source", source}, {"text", text}, {"rules", doc}});
    if (config == nullptr) return r;
    // One entry per distinct list (rules that share one share its database): the first rule
    // holding it; the dataplane takes it for every rule with the same patterns.
    json dbs = json::object();
    std::set<const PayloadDatabase *> sent;
    for (size_t i = 0; i < config->rules.size(); ++i) {
        const PayloadMatch &p = config->rules[i].match.payload;
        if (!p.compiled || !sent.insert(p.compiled.get()).second) continue;
        dbs[std::to_string(i)] = {{"database", base64_encode(p.compiled->serialize())},
                                  {"fingerprint", payload_fingerprint(p.patterns)}};
    }
    if (dbs.empty()) return r;
    json with = r;
    with["payload_databases"] = std::move(dbs);
    // Past the message cap the request goes without them: the dataplane compiles.
    return with.dump().size() < kMaxMessageBytes ? with : r;
}

class Daemon {
  public:
    Daemon(const DaemonOptions &o, ClusterSync *cluster, const FlowspecFeed *flowspec)
        : options_(o), started_unix_s_(now_unix_s()), cluster_(cluster), flowspec_(flowspec) {}

    std::string handle_cli(const std::string &line);
    // handle_cli for the socket's server: a rules load (its patterns compile for up to seconds,
    // then the dataplane's reply) is answered on a thread of its own, so that status, stats
    // and the rest are answered meanwhile; a second load while one runs is refused as busy.
    LineServer::Answer answer_cli(const std::string &line);
    void sample();
    std::string metrics(std::optional<AuthRefusals> refusals);

  private:
    // One request to the dataplane, connecting (and reconciling) first if needed.
    bool call(const json &request, json *reply, std::string *error, int timeout_ms = 10000);
    bool raw(const json &request, json *reply, std::string *error, int timeout_ms = 10000);
    void reconcile();
    bool reapply(const Remembered &r, const json &running);
    bool adopt();
    json status();
    json rules_load(const json &request);

    const DaemonOptions options_;
    const double started_unix_s_;
    ClusterSync *cluster_;
    const FlowspecFeed *flowspec_;  // null without --flowspec

    std::recursive_mutex link_lock_;  // the dataplane connection and what depends on it
    LineClient link_;
    std::string instance_;  // the dataplane process we last spoke to
    uint64_t connects_ = 0;
    Remembered remembered_;

    std::mutex sample_lock_;
    json last_stats_ = nullptr;  // the latest sample's stats, with the dataplane's clock
    json rates_ = nullptr;       // between the last two samples (stats_rates.h)

    BackgroundAnswer<std::string> loading_;  // last: waited for before the rest goes
};

bool Daemon::raw(const json &request, json *reply, std::string *error, int timeout_ms) {
    if (!link_.request(request, reply, error, timeout_ms)) return false;
    if (!(*reply)["ok"].get<bool>()) {
        *error = reply->value("error", std::string("refused"));
        return false;
    }
    return true;
}

bool Daemon::call(const json &request, json *reply, std::string *error, int timeout_ms) {
    std::lock_guard<std::recursive_mutex> guard(link_lock_);
    if (!link_.connected()) {
        if (!link_.connect(options_.dataplane, error)) {
            *error = "dataplane not reachable: " + *error;
            return false;
        }
        reconcile();
        if (!link_.connected()) {
            *error = "dataplane connection lost";
            return false;
        }
    }
    if (!link_.request(request, reply, error, timeout_ms)) {
        *error = "dataplane connection lost: " + *error;
        return false;
    }
    return true;
}

// A load compiles a ruleset and waits for a grace period: give it longer than a query.
constexpr int kLoadTimeoutMs = 60000;

// Reads the running state of a (re)connected dataplane and decides whether to push anything
// (see daemon.h). The dataplane counts as reached only once that is done: if the connection
// fails midway, the next attempt starts over.
void Daemon::reconcile() {
    json status, running;
    std::string error;
    if (!raw(dataplane_request(DataplaneCommand::status), &status, &error) ||
        !raw(dataplane_request(DataplaneCommand::rules), &running, &error)) {
        daemon_log("cannot read the dataplane's state: " + error);
        link_.close();
        return;
    }
    const std::string instance = status.value("instance", "");
    if (instance == instance_) return;  // the same process; the connection had dropped
    const bool first = instance_.empty();
    const json &ruleset = status["ruleset"];
    const std::string origin = ruleset.value("origin", "");
    daemon_log("connected to dataplane " + instance + " (ruleset version " +
               std::to_string(ruleset.value("version", 0)) + ", " + origin + ")");
    // Mode switches and overrides keep the origin: "startup" with either is not a fresh start.
    const bool untouched = origin == "startup" && running.value("modes", json::object()).empty() &&
                           ruleset.value("overrides", 0) == 0;
    if (!first && remembered_.valid && untouched) {
        if (!reapply(remembered_, running)) return;
    } else if (first && untouched && !options_.config.empty()) {
        try {
            const RulesFile file = load_rules_file(options_.config);
            json reply;
            if (file.text != running.value("text", "")) {
                if (raw(load_request(file.name, file.text, file.doc, &file.config), &reply, &error,
                        kLoadTimeoutMs))
                    daemon_log("loaded " + options_.config);
                else if (!link_.connected())
                    return;
                else
                    daemon_log("cannot load " + options_.config + ": " + error);
            }
        } catch (const ConfigError &e) {
            daemon_log(std::string("--config refused, keeping the running rules: ") + e.what());
        }
    }
    if (!adopt()) return;
    instance_ = instance;
    ++connects_;
}

// After a dataplane restart: what was changed through floodctl, again. False when the
// connection failed (the whole reconcile is retried); a refusal is logged and skipped.
bool Daemon::reapply(const Remembered &r, const json &running) {
    json reply;
    std::string error;
    auto send = [&](const json &request, const std::string &what, int timeout_ms = 10000) {
        if (raw(request, &reply, &error, timeout_ms)) return true;
        if (!link_.connected()) return false;
        daemon_log("cannot apply " + what + " again: " + error);
        return true;
    };
    if (r.origin == "floodctl" && r.text != running.value("text", "")) {
        daemon_log("the dataplane restarted: loading " + r.source + " again");
        if (!send(load_request(r.source, r.text, r.doc), r.source, kLoadTimeoutMs)) return false;
    }
    for (const auto &[rule, mode] : r.modes.items())
        if (!send(dataplane_request(DataplaneCommand::mode, {{"rule", rule}, {"mode", mode}}),
                  "rule " + rule + " " + mode.get<std::string>()))
            return false;
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r.read_at).count();
    for (const json &o : r.overrides) {
        json request = dataplane_request(DataplaneCommand::override_add,
                                         {{"list", o["list"]}, {"prefix", o["prefix"]}});
        if (o["ttl_left_s"].is_number()) {
            double left = o["ttl_left_s"].get<double>() - elapsed_s;
            if (left < 1) continue;  // expired while the dataplane was down
            request["ttl_s"] = static_cast<long long>(left + 0.5);
        }
        if (!send(request, "override " + o["prefix"].get<std::string>())) return false;
    }
    if (!r.modes.empty() || !r.overrides.empty())
        daemon_log("the dataplane restarted: applied " + std::to_string(r.modes.size()) +
                   " mode switches and " + std::to_string(r.overrides.size()) + " overrides again");
    return true;
}

// Remembers the dataplane's current rules, modes and overrides; false if the link failed.
bool Daemon::adopt() {
    json rules, overrides;
    std::string error;
    if (!raw(dataplane_request(DataplaneCommand::rules), &rules, &error) ||
        !raw(dataplane_request(DataplaneCommand::overrides), &overrides, &error)) {
        daemon_log("cannot read the dataplane's rules: " + error);
        link_.close();
        return false;
    }
    remembered_.valid = true;
    remembered_.origin = rules.value("origin", "");
    remembered_.source = rules.value("source", "");
    remembered_.text = rules.value("text", "");
    remembered_.doc = rules.value("doc", json());
    remembered_.modes = rules.value("modes", json::object());
    remembered_.overrides = overrides.value("overrides", json::array());
    remembered_.read_at = std::chrono::steady_clock::now();
    return true;
}

void Daemon::sample() {
    json reply;
    std::string error;
    const bool ok = call(dataplane_request(DataplaneCommand::stats), &reply, &error) &&
                    reply.value("ok", false);
    std::lock_guard<std::mutex> guard(sample_lock_);
    if (!ok) {
        last_stats_ = rates_ = nullptr;
        return;
    }
    json &stats = reply["stats"];
    // Top offenders are not sampled; floodctl top and watch ask for them.
    for (json &r : stats["rules"]) r.erase("top_refused");
    if (!last_stats_.is_null()) {
        // status() samples too when it finds none: of two samples close together (or one
        // overtaken by the other) the later one a second after the last counts.
        const uint64_t last = last_stats_.value("sampled_ns", uint64_t{0});
        const uint64_t now = stats.value("sampled_ns", uint64_t{0});
        if (now < last + 500000000ull && now >= last) return;
    }
    // A restarted dataplane's counters start again: stats_rates leaves out what went down.
    rates_ = last_stats_.is_null() ? json(nullptr) : stats_rates(last_stats_, stats);
    last_stats_ = std::move(stats);
}

json Daemon::status() {
    json dataplane, reply = {{"ok", true}};
    std::string error;
    bool up = call(dataplane_request(DataplaneCommand::status), &dataplane, &error);
    {
        std::lock_guard<std::recursive_mutex> guard(link_lock_);
        reply["daemon"] = {{"pid", getpid()},
                           {"started_unix", started_unix_s_},
                           {"socket", options_.socket},
                           {"dataplane_socket", options_.dataplane},
                           {"metrics", options_.metrics},
                           {"dataplane_connects", connects_}};
    }
    reply["cluster"] = cluster_->status();
    reply["flowspec"] = flowspec_ != nullptr ? flowspec_->status() : json{{"active", false}};
    reply["dataplane_up"] = up;
    reply["dataplane"] = up ? dataplane : json(nullptr);
    if (!up) reply["dataplane_error"] = error;
    if (!up) {
        reply["rates"] = reply["table"] = nullptr;
        return reply;
    }
    bool sampled;
    {
        std::lock_guard<std::mutex> guard(sample_lock_);
        sampled = !last_stats_.is_null();
    }
    if (!sampled) sample();  // asked before the first sample: take it now
    std::lock_guard<std::mutex> guard(sample_lock_);
    // Until two samples a second apart exist, the rates since the dataplane started: its
    // counters start at zero, so that is exact too, over a longer interval.
    reply["rates_since_start"] = rates_.is_null();
    reply["rates"] = rates_.is_null() && !last_stats_.is_null()
                         ? stats_rates_since_start(last_stats_, last_stats_.value("uptime_s", 0.0))
                         : rates_;
    reply["table"] = last_stats_.is_null() ? json(nullptr) : last_stats_.value("table", json());
    return reply;
}

json Daemon::rules_load(const json &request) {
    const std::string source = get_string(request, "source");
    const std::string text = get_string(request, "text");
    const bool dry_run = get_bool(request, "dry_run", false);
    RulesFile next;
    try {
        next = parse_rules_file(text, source);
    } catch (const ConfigError &e) {
        return config_error_reply(e);
    }
    json running;
    std::string error;
    if (!call(dataplane_request(DataplaneCommand::rules), &running, &error))
        return error_reply(error);
    Config current;
    try {
        current = running_rules(running);
    } catch (const ConfigError &e) {
        return error_reply(std::string("cannot read the running rules: ") + e.what());
    }
    RulesDiff d = diff_rules(current, next.config);
    json diff = {
        {"changes", d.changes}, {"kept", d.kept}, {"reset", d.reset}, {"removed", d.removed}};
    if (dry_run) return {{"ok", true}, {"dry_run", true}, {"diff", diff}};

    json reply;
    if (!call(load_request(source, text, next.doc, &next.config), &reply, &error, kLoadTimeoutMs))
        return error_reply(error);
    if (reply.value("ok", false)) {
        std::lock_guard<std::recursive_mutex> guard(link_lock_);
        adopt();
    }
    reply["diff"] = diff;
    reply["dry_run"] = false;
    return reply;
}

std::string Daemon::handle_cli(const std::string &line) {
    json reply;
    try {
        json request = parse_request(line);
        const std::string name = get_string(request, kCommandField);
        const std::optional<DaemonCommand> own = parse_daemon_command(name);
        const std::optional<DataplaneCommand> passed = parse_dataplane_command(name);
        const std::optional<PassedCommand> passing =
            passed ? passed_to_dataplane(*passed) : std::nullopt;
        if (own == DaemonCommand::status) {
            reply = status();
        } else if (own == DaemonCommand::rules_load) {
            reply = rules_load(request);
        } else if (passing) {
            std::string error;
            if (!call(request, &reply, &error, kLoadTimeoutMs)) {
                reply = error_reply(error);
            } else if (reply.value("ok", false) && passing == PassedCommand::changes) {
                std::lock_guard<std::recursive_mutex> guard(link_lock_);
                adopt();
                // An allow lifts the same sources on every box of a cluster.
                if (passed == DataplaneCommand::override_add &&
                    request.value("list", "") == "allow")
                    cluster_->tell_allow(get_string(request, "prefix"),
                                         request.value("ttl_s", 0ll));
            }
        } else {
            throw MessageError("unknown command \"" + name + "\"");
        }
    } catch (const std::exception &e) {
        daemon_log(std::string("CLI request refused: ") + e.what());
        reply = error_reply(e.what());
    }
    return reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

LineServer::Answer Daemon::answer_cli(const std::string &line) {
    // A rules load by its command, read without parsing the line (dataplane/api/message.h).
    const std::optional<std::string_view> command = read_command(line);
    if (!command || parse_daemon_command(*command) != DaemonCommand::rules_load)
        return handle_cli(line);
    std::optional<LineServer::Answer> later =
        loading_.start([this, line] { return handle_cli(line); },
                       [](std::future<std::string> &reply) { return reply.get(); });
    if (later) return std::move(*later);
    daemon_log("CLI request refused: another rules load is being compiled");
    return error_reply(
               "busy: another rules load is being compiled; send it again when that one "
               "is answered")
        .dump();
}

std::string Daemon::metrics(std::optional<AuthRefusals> refusals) {
    json status, stats, overrides;
    std::string error;
    MetricsInput in;
    in.auth_refusals = refusals;
    in.nic_top_rules = options_.nic_top_rules;
    in.dataplane_up = call(dataplane_request(DataplaneCommand::status), &status, &error) &&
                      status.value("ok", false);
    if (in.dataplane_up) {
        in.status = &status;
        if (call(dataplane_request(DataplaneCommand::stats), &stats, &error) &&
            stats.value("ok", false))
            in.stats = &stats["stats"];
        if (call(dataplane_request(DataplaneCommand::overrides), &overrides, &error) &&
            overrides.value("ok", false))
            in.overrides = &overrides;
    }
    {
        std::lock_guard<std::recursive_mutex> guard(link_lock_);
        in.dataplane_connects = connects_;
    }
    const json cluster = cluster_->status();
    in.cluster = &cluster;
    const json flowspec = flowspec_ != nullptr ? flowspec_->status() : json(nullptr);
    if (flowspec_ != nullptr) in.flowspec = &flowspec;
    return prometheus_text(in);
}

}  // namespace

int run_daemon(const DaemonOptions &options) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    if (!options.config.empty()) {
        try {
            load_config(options.config);
        } catch (const ConfigError &e) {
            daemon_log(std::string("--config: ") + e.what());
            return 1;
        }
    }
    std::string error;
    WebAuth web;
    if (!options.web_config_file.empty()) {
        const std::optional<WebAuth> read = load_web_config(options.web_config_file, &error);
        if (!read) {
            daemon_log("--web-config-file " + error);
            return 1;
        }
        web = *read;
    }
    HttpServer http;
    const bool serve_metrics = options.metrics != "none";
    if (serve_metrics && !http.listen(options.metrics, &error)) {
        daemon_log("--metrics " + error);
        return 1;
    }
    LineServer cli;
    if (!cli.listen(options.socket, &error)) {
        daemon_log(error);
        return 1;
    }
    DaemonOptions effective = options;
    if (serve_metrics)
        effective.metrics = http.address();  // as bound: the address, the chosen port
    ClusterSync cluster({options.dataplane, options.box, options.redis, options.store_auth});
    std::unique_ptr<FlowspecFeed> flowspec;
    if (!options.flowspec.empty()) {
        FlowspecOptions fo;
        fo.api = options.flowspec;
        fo.max_announced = options.flowspec_max;
        fo.max_new_per_s = options.flowspec_rate;
        fo.rtbh = options.rtbh;
        fo.min_source_len4 = options.flowspec_min_source4;
        fo.min_source_len6 = options.flowspec_min_source6;
        fo.never_block = options.flowspec_never_block;
        flowspec = std::make_unique<FlowspecFeed>(options.dataplane, fo);
        daemon_log("announcing blocks upstream through gobgpd at " + options.flowspec);
    }
    Daemon daemon(effective, &cluster, flowspec.get());
    const bool web_config = !options.web_config_file.empty();
    daemon_log("serving floodctl on " + options.socket +
               (serve_metrics ? std::string(", metrics on ") + (web.tls_on ? "https" : "http") +
                                    "://" + effective.metrics + "/metrics"
                              : "") +
               (serve_metrics && !web.users.empty() ? " (basic auth)" : "") + "; dataplane at " +
               options.dataplane);
    // Without TLS and credentials, serving the endpoint beyond this machine is the operator's
    // explicit choice (--metrics with a non-loopback address), and said so.
    if (serve_metrics && !http.loopback() && (!web.tls_on || web.users.empty()))
        daemon_log("warning: the metrics endpoint " + effective.metrics +
                   " is reachable from other hosts (--metrics " + options.metrics +
                   " is not a loopback address) " +
                   (web.tls_on ? "without basic auth" : "without TLS (--web-config-file)"));
    if (serve_metrics && !web.tls_on && !web.users.empty())
        daemon_log("warning: basic auth without TLS: the password crosses the network in clear");

    if (serve_metrics && !http.start(
                             [&] {
                                 return daemon.metrics(web_config ? std::optional(http.refusals())
                                                                  : std::nullopt);
                             },
                             &error, web)) {
        daemon_log(error);
        return 1;
    }
    std::thread cluster_thread([&] { cluster.run(g_stop); });
    std::thread flowspec_thread([&] {
        if (flowspec) flowspec->run(g_stop);  // withdraws everything once stopped
    });
    std::thread cli_thread([&] {
        cli.serve(
            g_stop, [&](const std::string &line) { return daemon.answer_cli(line); }, {}, 200);
    });

    // Samples once a second: keeps the connection (reconnecting and reconciling after either
    // side restarts) and the per-port rates current.
    while (!g_stop.load()) {
        daemon.sample();
        for (int i = 0; i < 10 && !g_stop.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // Before the Daemon goes: the endpoint's threads call into it.
    http.stop();
    cli_thread.join();
    cluster_thread.join();
    flowspec_thread.join();
    daemon_log("stopped");
    return 0;
}

}  // namespace floodgate
