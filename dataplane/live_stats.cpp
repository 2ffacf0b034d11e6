#include "dataplane/live_stats.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

#include "dataplane/stats_json.h"

namespace floodgate {

namespace {

using nlohmann::ordered_json;

ordered_json port_counters(const PortCounters &c) {
    return {{"rx", c.rx}, {"tx", c.tx}, {"tx_failed", c.tx_failed}};
}

// Per direction, summed over the workers: frames received, handed to the TX queue, and
// refused by the NIC (sent = tx - tx_failed).
ordered_json directions(const std::vector<std::unique_ptr<Worker>> &workers) {
    PortCounters in, back;
    for (const auto &w : workers) {
        in.rx += w->filtered().rx;
        in.tx += w->filtered().tx;
        in.tx_failed += w->filtered().tx_failed;
        back.rx += w->returning().rx;
        back.tx += w->returning().tx;
        back.tx_failed += w->returning().tx_failed;
    }
    return {{"outside_to_inside", port_counters(in)}, {"inside_to_outside", port_counters(back)}};
}

// The NIC's (or virtual device's) own counters, which include what never reached a worker.
ordered_json nic(uint16_t port, const char *role) {
    rte_eth_stats s{};
    ordered_json j = {{"port", port}, {"role", role}};
    if (rte_eth_stats_get(port, &s) != 0) return j;
    j["rx_packets"] = s.ipackets;
    j["rx_bytes"] = s.ibytes;
    j["rx_missed"] = s.imissed;
    j["rx_errors"] = s.ierrors;
    j["rx_nombuf"] = s.rx_nombuf;
    j["tx_packets"] = s.opackets;
    j["tx_bytes"] = s.obytes;
    j["tx_errors"] = s.oerrors;
    return j;
}

ordered_json core(unsigned index, unsigned lcore, const Worker &w) {
    const WorkerCounters &c = w.pipeline().counters();
    const LimitTable &t = w.pipeline().table();
    ordered_json j = {{"core", index}, {"lcore", lcore}};
#define FG_X(name) j[#name] = c.name;
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X
    j["table"] = {{"capacity", t.capacity()},
                  {"occupancy", t.stats().occupancy},
                  {"reclaims", t.stats().reclaims},
                  {"full_events", t.stats().full_events}};
    j["filtered"] = port_counters(w.filtered());
    j["returning"] = port_counters(w.returning());
    j["busy_tsc"] = w.busy_tsc();
    j["merge_max_lag_ns"] = w.merge_max_lag_ns();
    j["merge_records_lost"] = w.merge_records_lost();
    return j;
}

}  // namespace

ordered_json live_stats(const RuleSet &rules, const LiveView &view, unsigned top) {
    const auto &workers = *view.workers;
    std::vector<const Pipeline *> pipelines;
    for (const auto &w : workers) pipelines.push_back(&w->pipeline());
    ordered_json stats = stats_to_json(rules, pipelines, top);
    stats["ports"] = directions(workers);
    ordered_json nics = ordered_json::array();
    nics.push_back(nic(view.outside, "outside"));
    if (view.inside != view.outside) nics.push_back(nic(view.inside, "inside"));
    stats["nic"] = nics;
    ordered_json cores = ordered_json::array();
    uint64_t lost = view.merger != nullptr ? view.merger->dropped() : 0, lag = 0;
    for (size_t i = 0; i < workers.size(); ++i) {
        cores.push_back(core(static_cast<unsigned>(i), view.lcores[i], *workers[i]));
        lost += workers[i]->merge_records_lost();
        lag = std::max(lag, workers[i]->merge_max_lag_ns());
    }
    stats["cores"] = cores;
    uint64_t busy = 0, rx = 0;
    for (const auto &w : workers) {
        busy += w->busy_tsc();
        rx += w->filtered().rx;
    }
    stats["cycles"] = {{"tsc_hz", rte_get_tsc_hz()},
                       {"busy_tsc", busy},
                       {"per_packet", rx > 0 ? static_cast<double>(busy) / rx : 0.0}};
    stats["merge"] = {{"workers", workers.size()},
                      {"interval_ns", view.merge_interval_ns},
                      {"max_lag_ns", lag},
                      {"records_lost", lost}};
    return stats;
}

}  // namespace floodgate
