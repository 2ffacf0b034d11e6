#include "control/upstream/flowspec_feed.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "control/common/daemon_log.h"
#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/unix_socket.h"

namespace floodgate {

namespace {

using nlohmann::json;

uint64_t monotonic_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

}  // namespace

FlowspecFeed::FlowspecFeed(std::string dataplane, FlowspecOptions options)
    : dataplane_(std::move(dataplane)), exporter_(std::move(options)) {}

void FlowspecFeed::once() {
    std::string error;
    json rules, overrides, stats;
    if (!link_.connected() && !link_.connect(dataplane_, &error)) return;
    if (!link_.request(dataplane_request(DataplaneCommand::rules), &rules, &error) ||
        !link_.request(dataplane_request(DataplaneCommand::overrides), &overrides, &error) ||
        !link_.request(dataplane_request(DataplaneCommand::stats), &stats, &error))
        return;  // the dataplane away: what is announced stays until it answers again
    const std::string before = exporter_.last_error();
    exporter_.reconcile(desired_flowspec(rules, overrides, stats.value("stats", json::object())),
                        monotonic_ns());
    if (exporter_.last_error() != before && !exporter_.last_error().empty())
        daemon_log("flowspec: " + exporter_.last_error());
    const FlowspecExporter::Counters &c = exporter_.counters();
    json rules_state = json::array();
    for (const FlowspecExporter::RuleState &r : exporter_.rule_states())
        rules_state.push_back({{"match", r.match}, {"origin", r.origin}, {"in_rib", r.in_rib}});
    std::lock_guard<std::mutex> guard(lock_);
    status_ = {{"active", true},
               {"asked", c.asked},
               {"in_rib", c.in_rib},
               {"missing", c.missing},
               {"blackholes_asked", c.blackholes_asked},
               {"blackholes_in_rib", c.blackholes_in_rib},
               {"blackholes_missing", c.blackholes_missing},
               {"missing_after_add", c.missing_after_add},
               {"rules", std::move(rules_state)},
               {"announced", c.announced},
               {"withdrawn", c.withdrawn},
               {"stale_withdrawn", c.stale_withdrawn},
               {"withheld_limit", c.withheld_limit},
               {"withheld_rate", c.withheld_rate},
               {"invalid", c.invalid},
               {"refused_short_source", c.refused_short_source},
               {"refused_never_block", c.refused_never_block},
               {"failed_calls", c.failed_calls},
               {"last_error", exporter_.last_error()}};
}

void FlowspecFeed::run(const std::atomic<bool> &stop) {
    auto next = std::chrono::steady_clock::now();
    while (!stop.load()) {
        try {
            once();
        } catch (const nlohmann::json::exception &e) {  // a reply not of the protocol
            daemon_log(std::string("flowspec: the dataplane's reply was not read: ") + e.what());
            link_.close();
        }
        next += std::chrono::seconds(1);
        if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now();
        while (!stop.load() && std::chrono::steady_clock::now() < next)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    exporter_.withdraw_all();
    daemon_log("flowspec: withdrew every announcement (" +
               std::to_string(exporter_.counters().in_rib) + " left)");
}

json FlowspecFeed::status() const {
    std::lock_guard<std::mutex> guard(lock_);
    return status_;
}

}  // namespace floodgate
