// The Prometheus text exposition (format 0.0.4) that `floodctl daemon` serves: built from the
// dataplane's status, stats and overrides replies (dataplane/api/control_protocol.h) and the
// daemon's own counters. A plain function over JSON, so it is unit-tested without a dataplane.
//
// The replies come from another process: a missing field or one of the wrong type drops that
// sample, never throws. A family with no samples is left out whole (no HELP or TYPE line).
// Metric names are stable; each is documented in its HELP line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

struct MetricsInput {
    bool dataplane_up = false;
    const nlohmann::json *status = nullptr;     // dataplane status reply, or null
    const nlohmann::json *stats = nullptr;      // the "stats" object of the stats reply, or null
    const nlohmann::json *overrides = nullptr;  // dataplane overrides reply, or null
    uint64_t dataplane_connects = 0;            // daemon's own counter: successful (re)connections
};

// The whole scrape body, every line ending in "\n". floodgate_dataplane_up and
// floodgate_control_dataplane_connects_total are always present.
std::string prometheus_text(const MetricsInput &in);

}  // namespace floodgate
