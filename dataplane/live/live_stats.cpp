#include "dataplane/live/live_stats.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

#include "dataplane/pipeline/stats_json.h"

namespace floodgate {

namespace {

// Top refused sources listed per core and rule (the whole document lists kTopRefusedReported
// per rule): enough to see which core holds a flood.
constexpr unsigned kTopRefusedPerCore = 3;

using nlohmann::ordered_json;

ordered_json port_counters(const PortCounters &c) {
    return {{"rx", c.rx}, {"tx", c.tx}, {"tx_failed", c.tx_failed}};
}

// A worker's own counters, each loaded once, before its pipeline is read: a TX failure
// counted by then is of a frame passed before the reading, so tx_failed <= tx holds.
struct WorkerReading {
    uint64_t filtered_tx_failed, returning_rx, returning_tx_failed, answers_tx_failed, busy_tsc,
        merge_max_lag_ns, merge_records_lost;
    uint64_t handed_out = 0, taken_in = 0, ring_full = 0;  // the steering stage
    uint64_t unhashed = 0;                                 // NIC steering's, on the outside port
    uint64_t returning_kept = 0;                           // syn-proxy's
};
WorkerReading read_worker(const Worker &w) {
    WorkerReading r{w.filtered_tx_failed(), w.returning_rx(), w.returning_tx_failed(),
                    w.answers_tx_failed(),  w.busy_tsc(),     w.merge_max_lag_ns(),
                    w.merge_records_lost()};
    r.returning_kept = w.returning_kept();
    if (const SteeringStage *s = w.steering()) {
        r.handed_out = s->handed_out();
        r.taken_in = s->taken_in();
        r.ring_full = s->ring_full();
        r.unhashed = s->unhashed();
    }
    return r;
}

// Outside to inside, rx is the frames this core decided (with software steering, some received
// by other cores; those its owner's ring had no room for are steering.ring_full, never decided)
// and tx the frames passed, all handed to the TX queue (one reading of the pipeline gives
// both); inside to outside is forwarded as it comes.
// Passed frames are handed to the TX queue when decided, or, held by a shape rule, when sent.
PortCounters filtered(const CoreReading &r, const WorkerReading &w) {
    const WorkerCounters &c = r.stats.counters;
    return {c.packets, c.passed - c.held - c.shape_flushed - c.proxy_withheld,
            w.filtered_tx_failed};
}
PortCounters returning(const WorkerReading &w) {
    return {w.returning_rx, w.returning_rx - w.returning_kept, w.returning_tx_failed};
}
// Answers leave by the outside port: each answered frame was received there and its answer
// handed to the TX queue; so do syn-proxy's RSTs to the clients of failed connections.
PortCounters answers(const CoreReading &r, const WorkerReading &w) {
    const WorkerCounters &c = r.stats.counters;
    return {c.answered + c.proxy_client_resets, c.answered + c.proxy_client_resets,
            w.answers_tx_failed};
}

void add(PortCounters *sum, const PortCounters &c) {
    sum->rx += c.rx;
    sum->tx += c.tx;
    sum->tx_failed += c.tx_failed;
}

// The NIC's (or virtual device's) own counters, which include what never reached a worker.
ordered_json nic(uint16_t port, const char *role, const PortWatch *watch) {
    rte_eth_stats s{};
    ordered_json j = {{"port", port}, {"role", role}};
    const PortHealth h = watch != nullptr ? watch->health(port) : PortHealth{};
    if (watch != nullptr) {
        j["link"] = h.up ? "up" : "down";
        j["losses"] = h.losses;
    }
    if (rte_eth_stats_get(port, &s) != 0) return j;
    j["rx_packets"] = s.ipackets;
    j["rx_bytes"] = s.ibytes;
    // What the port missed, the kernel ring's drops of a net_af_packet port among them (its PMD
    // counts none), so that every frame that reached the port is rx_packets or rx_missed.
    j["rx_missed"] = s.imissed + h.ring_drops;
    if (h.ring) j["rx_ring_drops"] = h.ring_drops;
    j["rx_errors"] = s.ierrors;
    j["rx_nombuf"] = s.rx_nombuf;
    j["tx_packets"] = s.opackets;
    j["tx_bytes"] = s.obytes;
    j["tx_errors"] = s.oerrors;
    return j;
}

// The steering stage's counts: frames handed to their owner's ring, taken from this one's,
// freed because the owner's ring was full (received, never decided), and under NIC steering
// received without the NIC's hash (each handed to its owner, or kept when this worker owns it).
ordered_json steering_counters(const WorkerReading &w) {
    return {{"handed_out", w.handed_out},
            {"taken_in", w.taken_in},
            {"ring_full", w.ring_full},
            {"unhashed", w.unhashed}};
}

ordered_json core(const RuleSet &rules, unsigned index, unsigned lcore, const CoreReading &r,
                  const WorkerReading &w) {
    const WorkerCounters &c = r.stats.counters;
    const LimitTableStats &t = r.stats.table;
    ordered_json j = {{"core", index}, {"lcore", lcore}};
#define FG_X(name) j[#name] = c.name;
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X
    j["proxy_connections"] = c.proxy_connections;
    j["proxy_withheld"] = c.proxy_withheld;
    j["table"] = {{"capacity", r.table_capacity},
                  {"occupancy", t.occupancy},
                  {"reclaims", t.reclaims},
                  {"full_events", t.full_events}};
    j["filtered"] = port_counters(filtered(r, w));
    j["returning"] = port_counters(returning(w));
    j["answers"] = port_counters(answers(r, w));
    j["busy_tsc"] = w.busy_tsc;
    j["merge_max_lag_ns"] = w.merge_max_lag_ns;
    j["merge_records_lost"] = w.merge_records_lost;
    j["steering"] = steering_counters(w);
    // Which sources this core refuses most: under steering, each source on its owner only.
    j["top_refused"] = core_top_refused(rules, r, kTopRefusedPerCore);
    return j;
}

}  // namespace

ordered_json live_stats(const RuleSet &rules, const LiveView &view, unsigned top) {
    const auto &workers = *view.workers;
    std::vector<WorkerReading> own;
    std::vector<CoreReading> readings;
    for (const auto &w : workers) {
        own.push_back(read_worker(*w));
        readings.push_back(read_core(rules, w->pipeline()));
    }
    ordered_json stats = stats_to_json(rules, readings, top);

    PortCounters in, back, ans;
    ordered_json cores = ordered_json::array();
    uint64_t lost = 0, lag = 0, busy = 0;
    WorkerReading steered{};
    for (size_t i = 0; i < workers.size(); ++i) {
        const WorkerReading &w = own[i];
        add(&in, filtered(readings[i], w));
        add(&back, returning(w));
        add(&ans, answers(readings[i], w));
        cores.push_back(core(rules, static_cast<unsigned>(i), view.lcores[i], readings[i], w));
        lost += w.merge_records_lost;
        lag = std::max(lag, w.merge_max_lag_ns);
        busy += w.busy_tsc;
        steered.handed_out += w.handed_out;
        steered.taken_in += w.taken_in;
        steered.ring_full += w.ring_full;
        steered.unhashed += w.unhashed;
    }
    stats["ports"] = {{"outside_to_inside", port_counters(in)},
                      {"inside_to_outside", port_counters(back)},
                      {"answers_to_outside", port_counters(ans)}};
    ordered_json nics = ordered_json::array();
    nics.push_back(nic(view.outside, "outside", view.port_watch));
    // The outside port's frames without the NIC's RSS hash, which NIC steering handed over.
    nics.back()["rx_unhashed"] = steered.unhashed;
    if (view.inside != view.outside) nics.push_back(nic(view.inside, "inside", view.port_watch));
    stats["nic"] = nics;
    stats["cores"] = cores;
    stats["cycles"] = {
        {"tsc_hz", rte_get_tsc_hz()},
        {"busy_tsc", busy},
        {"per_packet", in.rx > 0 ? static_cast<double>(busy) / static_cast<double>(in.rx) : 0.0}};
    ordered_json steering = {{"mode", view.steering_mode}};
    if (view.steering.by_source)
        steering.update({{"ipv4_len", view.steering.ipv4_len},
                         {"ipv6_len", view.steering.ipv6_len},
                         {"replies_by_destination", view.steering.replies_by_destination}});
    if (!view.nic_refused.empty()) steering["nic_refused"] = view.nic_refused;
    steering.update(steering_counters(steered));
    stats["steering"] = steering;
    stats["merge"] = {{"workers", workers.size()},
                      {"interval_ns", view.merge_interval_ns},
                      {"max_lag_ns", lag},
                      {"records_lost", lost}};
    return stats;
}

}  // namespace floodgate
