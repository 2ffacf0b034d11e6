// The stats document of a running dataplane: replay's document (stats_json.h) plus the port
// directions, the NICs' own counters, per-core counters and table state, and the merge. Each
// worker's pipeline is read once, consistently (read_core), and the totals, the per-core rows
// and the port directions all come from that one reading, so they agree with one another.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/live/merge_rings.h"
#include "dataplane/live/port_watch.h"
#include "dataplane/live/worker.h"

namespace floodgate {

struct LiveView {
    const std::vector<std::unique_ptr<Worker>> *workers = nullptr;
    std::vector<unsigned> lcores;  // worker i runs on lcores[i]
    uint16_t outside = 0;
    uint16_t inside = 0;
    uint64_t merge_interval_ns = 0;
    const PortWatch *port_watch = nullptr;  // each port's link and losses, once it runs
    // How packets reach their owners (Dataplane::choose_steering): the mode's name, the
    // steering the rulesets are built with, and why the NIC does not steer, if it does not.
    std::string steering_mode = "none";
    Steering steering;
    std::string nic_refused;
};

// top: how many top refused sources per rule (stats_to_json). Throws std::runtime_error if a
// core could not be read consistently.
nlohmann::ordered_json live_stats(const RuleSet &rules, const LiveView &view, unsigned top);

}  // namespace floodgate
