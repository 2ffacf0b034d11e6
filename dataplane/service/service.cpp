#include "dataplane/service/service.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/message.h"
#include "dataplane/pipeline/stats_json.h"
#include "rules/config_error_reply.h"

namespace floodgate {

using nlohmann::ordered_json;

uint64_t unix_now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

uint64_t monotonic_now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

namespace {

const char *list_name(PrefixVerdict v) {
    return v == PrefixVerdict::allow ? "allow" : "block";
}

}  // namespace

Service::Service(LiveRuleSet *live, RulesFile startup, ServiceInfo info, StatsFn stats,
                 ServiceClock clock)
    : live_(live),
      info_(std::move(info)),
      stats_(std::move(stats)),
      clock_(std::move(clock)),
      started_ns_(clock_.monotonic_ns()),
      started_unix_ns_(clock_.wall_ns()),
      rules_(std::move(startup)),
      loaded_unix_ns_(started_unix_ns_) {
    cluster_.configure(rules_.config.cluster, started_ns_);
}

void Service::attach_cluster(ClusterHooks hooks) {
    std::lock_guard<std::mutex> guard(lock_);
    const ClusterOptions options = rules_.config.cluster;
    cluster_ = ClusterLink(std::move(hooks));
    cluster_.configure(options, clock_.monotonic_ns());
    // The first rules were built before the box knew it is alone: its fallbacks, now.
    if (options.set) cluster_changed();
}

void Service::cluster_tick() {
    std::lock_guard<std::mutex> guard(lock_);
    if (cluster_.tick(clock_.monotonic_ns())) cluster_changed();
}

void Service::cluster_changed() {
    std::string error;
    std::fprintf(stderr, "floodgate: %s\n", cluster_.change_line().c_str());
    if (!apply(rules_, modes_, overrides_, origin_.c_str(), &error, false))
        std::fprintf(stderr, "floodgate: cluster: the rules could not be rebuilt: %s\n",
                     error.c_str());
}

void Service::check_cluster() const {
    if (!cluster_.attached()) throw MessageError("this dataplane takes no cluster sync");
    if (!rules_.config.cluster.set) throw MessageError("the running rules have no cluster section");
}

ordered_json Service::execute(const ClusterTakeRequest &) {
    check_cluster();
    ordered_json reply = {{"ok", true}};
    live_->with_current([&](const RuleSet &rs) { cluster_.take(rs, &reply); });
    return reply;
}

ordered_json Service::execute(const ClusterSyncRequest &request) {
    check_cluster();
    bool changed = false;
    live_->with_current(
        [&](const RuleSet &rs) { changed = cluster_.sync(rs, request, clock_.monotonic_ns()); });
    if (changed) cluster_changed();
    return {{"ok", true}, {"joined", cluster_.state().joined()}};
}

std::string Service::handle(const std::string &line) {
    return reply_to([&] { return decode_service_request(line); });
}

std::string Service::reply_to(const std::function<ServiceRequest()> &decode) {
    // Decoded off the lock (a load's rules are validated there); executed under it.
    std::optional<ServiceRequest> request;
    std::exception_ptr refused;
    try {
        request = decode();
    } catch (...) {
        refused = std::current_exception();
    }
    std::lock_guard<std::mutex> guard(lock_);
    ordered_json reply;
    try {
        if (refused) std::rethrow_exception(refused);
        reply = dispatch(*request);
    } catch (const MessageError &e) {
        ++requests_refused_;
        std::fprintf(stderr, "floodgate: control request refused: %s\n", e.what());
        reply = error_reply(e.what());
    } catch (const std::exception &e) {
        ++requests_refused_;
        std::fprintf(stderr, "floodgate: control request failed: %s\n", e.what());
        reply = error_reply(e.what());
    }
    // Rules files may hold any bytes; replace what is not UTF-8 rather than throw.
    return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

LineServer::Answer Service::answer(const std::string &line) {
    // Only a load's decoding can take long (its payload patterns compile): a line whose command
    // is load is decoded on its own thread, any other here. The command is read without
    // parsing the line (a load carries a whole ruleset), which only its decoding does.
    const std::optional<std::string_view> command = read_command(line);
    if (!command || parse_dataplane_command(*command) != DataplaneCommand::load)
        return handle(line);
    std::optional<LineServer::Answer> later =
        loading_.start([line] { return decode_service_request(line); },
                       [this](std::future<ServiceRequest> &decoded) {
                           return reply_to([&] { return decoded.get(); });
                       });
    if (later) return std::move(*later);
    {
        std::lock_guard<std::mutex> guard(lock_);
        ++reloads_failed_;
    }
    std::fprintf(stderr, "floodgate: load refused: another load is being compiled\n");
    return error_reply(
               "busy: another load is being compiled; send it again when that one is answered")
        .dump();
}

ordered_json Service::dispatch(const ServiceRequest &request) {
    return std::visit([this](const auto &r) { return execute(r); }, request);
}

ordered_json Service::execute(const StatsRequest &request) {
    ordered_json reply = {{"ok", true}, {"version", version_}};
    live_->with_current([&](const RuleSet &rs) { reply["stats"] = stats_(rs, request.top); });
    // The instant of the reading on the dataplane's monotonic clock, and its uptime: rates
    // between two readings (stats_rates.h), or since the start, need no clock of the reader's.
    const uint64_t now = clock_.monotonic_ns();
    reply["stats"]["sampled_ns"] = now;
    reply["stats"]["uptime_s"] = (now - started_ns_) / 1e9;
    return reply;
}

bool Service::apply(const RulesFile &rules, const std::map<std::string, RuleMode> &modes,
                    const std::vector<PrefixOverride> &overrides, const char *origin,
                    std::string *error, bool reload) {
    Config effective = rules.config;
    for (Rule &r : effective.rules) {
        auto it = modes.find(r.name);
        if (it != modes.end()) r.mode = it->second;
    }
    cluster_.configure(rules.config.cluster, clock_.monotonic_ns());
    cluster_.adjust(&effective);
    RuleSetOptions options;
    options.cores = info_.workers;
    options.socket_id = info_.socket_id;
    options.previous = live_->current();  // only this thread swaps, under lock_
    // The ports were set up for the first rules' steering: it stays until a restart.
    options.steering = options.previous->steering();
    options.overrides = overrides;
    options.version = version_ + 1;
    std::unique_ptr<RuleSet> next = RuleSet::build(effective, options, error);
    if (!next) {
        if (reload) ++reloads_failed_;
        return false;
    }
    live_->swap(std::move(next));
    if (&rules != &rules_) rules_ = rules;
    if (&modes != &modes_) modes_ = modes;
    if (&overrides != &overrides_) overrides_ = overrides;
    origin_ = origin;
    ++version_;
    if (reload) ++reloads_ok_;
    loaded_unix_ns_ = clock_.wall_ns();
    return true;
}

uint64_t Service::version() {
    std::lock_guard<std::mutex> guard(lock_);
    return version_;
}

RunningRules Service::running() {
    std::lock_guard<std::mutex> guard(lock_);
    RunningRules r;
    r.version = version_;
    r.allow = rules_.config.allow;
    r.block = rules_.config.block;
    r.overrides = overrides_;
    r.rules = rules_.config.rules;
    for (Rule &rule : r.rules)
        if (auto it = modes_.find(rule.name); it != modes_.end()) rule.mode = it->second;
    return r;
}

ordered_json Service::execute(const RefusedLoadRequest &request) {
    ++reloads_failed_;
    return config_error_reply<ordered_json>(request.error);
}

ordered_json Service::execute(const LoadRequest &request) {
    const RulesFile &next = request.rules;
    ordered_json warnings = ordered_json::array();
    if (next.config.table_entries_per_core != rules_.config.table_entries_per_core)
        warnings.push_back("table.entries_per_core changed from " +
                           std::to_string(rules_.config.table_entries_per_core) + " to " +
                           std::to_string(next.config.table_entries_per_core) +
                           ": the tables keep their size until floodgate restarts");
    // The file that runs, from the same place, again, with no mode switch to end (none left,
    // or each the file's own mode): nothing to do, and nothing done (the version stays). From
    // another path it is a load like any other: status and rules show name the new source.
    bool modes_as_written = true;  // every mode switch left is the file's own mode
    for (const Rule &r : next.config.rules)
        if (const auto m = modes_.find(r.name); m != modes_.end() && m->second != r.mode)
            modes_as_written = false;
    if (next.text == rules_.text && next.name == rules_.name && modes_as_written) {
        modes_.clear();  // each said what the file says: ending them changes nothing
        ordered_json reply = rules_locked();
        reply["changed"] = false;
        return reply;
    }
    std::string error;
    // A load is a whole declaration: it ends every earlier `floodctl rule NAME` mode switch.
    if (!apply(next, {}, overrides_, "floodctl", &error)) return error_reply(error);
    ordered_json reply = rules_locked();
    reply["changed"] = true;
    reply["warnings"] = warnings;
    reply["payload_databases"] = {{"precompiled", request.payload_precompiled},
                                  {"compiled_here", request.payload_compiled}};
    return reply;
}

ordered_json Service::execute(const ModeRequest &request) {
    const Rule *rule = nullptr;
    for (const Rule &r : rules_.config.rules)
        if (r.name == request.rule) rule = &r;
    if (rule == nullptr) throw MessageError("no rule named \"" + request.rule + "\"");
    const auto switched = modes_.find(request.rule);
    const RuleMode now = switched != modes_.end() ? switched->second : rule->mode;
    if (now == request.mode) {  // already so: no new ruleset, no new version
        ordered_json reply = rules_locked();
        reply["changed"] = false;
        return reply;
    }
    std::map<std::string, RuleMode> modes = modes_;
    modes[request.rule] = request.mode;
    std::string error;
    if (!apply(rules_, modes, overrides_, origin_.c_str(), &error)) return error_reply(error);
    ordered_json reply = rules_locked();
    reply["changed"] = true;
    return reply;
}

ordered_json Service::execute(const OverrideAddRequest &request) {
    PrefixOverride o;
    o.verdict = request.list;
    o.prefix = request.prefix;
    o.expires_ns = request.ttl_s == 0
                       ? 0
                       : clock_.monotonic_ns() + static_cast<uint64_t>(request.ttl_s) * 1000000000;
    std::vector<PrefixOverride> next;
    const PrefixOverride *replaced = nullptr;
    for (const PrefixOverride &old : overrides_) {
        if (!(old.prefix == o.prefix))
            next.push_back(old);
        else if (old.verdict != o.verdict)
            replaced = &old;  // one override per prefix: the other list's goes, and says so
    }
    if (next.size() >= kMaxOverrides)
        throw MessageError("too many overrides (" + std::to_string(kMaxOverrides) + ")");
    next.push_back(o);
    ordered_json was = nullptr;
    if (replaced != nullptr)
        was = {{"list", list_name(replaced->verdict)}, {"prefix", format_prefix(replaced->prefix)}};
    std::string error;
    if (!apply(rules_, modes_, next, origin_.c_str(), &error)) return error_reply(error);
    ordered_json reply = overrides_locked();
    if (!was.is_null()) reply["replaced"] = was;
    return reply;
}

ordered_json Service::execute(const OverrideDelRequest &request) {
    std::vector<PrefixOverride> next;
    for (const PrefixOverride &o : overrides_)
        if (!(o.prefix == request.prefix && o.verdict == request.list)) next.push_back(o);
    if (next.size() == overrides_.size())
        throw MessageError(std::string("no ") + list_name(request.list) + " override for " +
                           format_prefix(request.prefix));
    std::string error;
    if (!apply(rules_, modes_, next, origin_.c_str(), &error)) return error_reply(error);
    return overrides_locked();
}

void Service::expire_overrides() {
    std::lock_guard<std::mutex> guard(lock_);
    const uint64_t now = clock_.monotonic_ns();
    if (now < expiry_retry_ns_) return;
    std::vector<PrefixOverride> next;
    for (const PrefixOverride &o : overrides_)
        if (o.expires_ns == 0 || o.expires_ns > now) next.push_back(o);
    if (next.size() == overrides_.size()) return;
    const size_t expired = overrides_.size() - next.size();
    std::string error;
    if (apply(rules_, modes_, next, origin_.c_str(), &error)) {
        overrides_expired_ += expired;
        expiry_retry_ns_ = 0;
    } else {  // out of DPDK memory for a second ruleset: tried again every 10 s
        if (expiry_retry_ns_ == 0)
            std::fprintf(stderr, "floodgate: cannot remove expired overrides: %s\n", error.c_str());
        expiry_retry_ns_ = now + 10000000000ull;
    }
}

ordered_json Service::status_locked() const {
    ordered_json ruleset = {{"version", version_},
                            {"loaded_unix", loaded_unix_ns_ / 1e9},
                            {"source", rules_.name},
                            {"origin", origin_},
                            {"rules", rules_.config.rules.size()},
                            {"overrides", overrides_.size()}};
    // Which rules' keys are each one worker's, and which the merge shares (steering.h).
    ordered_json steering = {{"mode", info_.steering_mode}};
    live_->with_current([&](const RuleSet &rs) {
        if (rs.steering().by_source)
            steering.update(
                {{"ipv4_len", rs.steering().ipv4_len}, {"ipv6_len", rs.steering().ipv6_len}});
        ordered_json scopes = ordered_json::array();
        for (const CompiledRule &r : rs.rules())
            scopes.push_back(
                {{"name", r.name}, {"scope", rule_scope(r, rs.steering(), rs.cores())}});
        steering["rules"] = scopes;
    });
    return {{"ok", true},
            {"instance", info_.instance},
            {"started_unix", started_unix_ns_ / 1e9},
            {"uptime_s", (clock_.monotonic_ns() - started_ns_) / 1e9},
            {"workers", info_.workers},
            {"steering", steering},
            {"ruleset", ruleset},
            {"reloads", {{"ok", reloads_ok_}, {"failed", reloads_failed_}}},
            {"overrides_expired", overrides_expired_},
            {"requests_refused", requests_refused_},
            {"cluster", cluster_.status(clock_.monotonic_ns())}};
}

ordered_json Service::rules_locked() const {
    ordered_json rules = ordered_json::array();
    live_->with_current([&](const RuleSet &rs) {
        for (size_t i = 0; i < rs.rules().size(); ++i) {
            const Rule &r = rs.config().rules[i];
            rules.push_back({{"name", r.name},
                             {"mode", r.mode == RuleMode::shadow ? "shadow" : "enforce"},
                             {"algorithm", rule_algorithm_name(r.algorithm)},
                             {"rate", format_rate(r.rate_count, r.rate_period_ns)},
                             {"burst", r.burst_pkts},
                             {"key", {{"ipv4", r.key_ipv4_len}, {"ipv6", r.key_ipv6_len}}},
                             {"line", r.line},
                             {"state", rs.kept_state(i) ? "kept" : "new"}});
        }
    });
    ordered_json modes = ordered_json::object();
    for (const auto &[name, mode] : modes_)
        modes[name] = mode == RuleMode::shadow ? "shadow" : "enforce";
    return {{"ok", true},
            {"version", version_},
            {"source", rules_.name},
            {"origin", origin_},
            {"loaded_unix", loaded_unix_ns_ / 1e9},
            {"modes", modes},
            {"rules", rules},
            {"text", rules_.text},
            {"doc", rules_.doc}};
}

ordered_json Service::overrides_locked() const {
    const uint64_t now = clock_.monotonic_ns();
    const uint64_t wall = clock_.wall_ns();
    ordered_json list = ordered_json::array();
    for (const PrefixOverride &o : overrides_) {
        ordered_json row = {{"list", list_name(o.verdict)}, {"prefix", format_prefix(o.prefix)}};
        if (o.expires_ns == 0) {
            row["expires_unix"] = nullptr;
            row["ttl_left_s"] = nullptr;
        } else {
            // The TTL left is exact; the wall-clock instant it comes to is for people.
            const uint64_t left_ns = o.expires_ns > now ? o.expires_ns - now : 0;
            row["expires_unix"] = (wall + left_ns) / 1e9;
            row["ttl_left_s"] = left_ns / 1e9;
        }
        list.push_back(row);
    }
    return {{"ok", true}, {"version", version_}, {"overrides", list}};
}

ordered_json Service::status() {
    std::lock_guard<std::mutex> guard(lock_);
    return status_locked();
}

ordered_json Service::stats() {
    std::lock_guard<std::mutex> guard(lock_);
    ordered_json s;
    live_->with_current([&](const RuleSet &rs) { s = stats_(rs, kTopRefusedReported); });
    return s;
}

ordered_json Service::rules() {
    std::lock_guard<std::mutex> guard(lock_);
    return rules_locked();
}

ordered_json Service::overrides() {
    std::lock_guard<std::mutex> guard(lock_);
    return overrides_locked();
}

}  // namespace floodgate
