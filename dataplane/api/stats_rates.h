// Rates between two stats documents of one running dataplane (the "stats" of its control
// replies, which carry the monotonic instant they were read at, "sampled_ns"). One computation
// for every reader that shows rates: `floodgate run --stats-interval`, `floodctl status` (the
// daemon's samples) and `floodctl watch`.
//
// Every rate is (after - before) / interval for a counter that only grows; where a counter went
// down (the dataplane restarted, or a rule was removed and added again under the same name)
// the rate is left out rather than shown negative or huge.
#pragma once

#include <nlohmann/json.hpp>

namespace floodgate {

// {interval_s, packets, passed, dropped, rate_limited, block_hits, malformed, answered (each
//  per second), rules: [{name, matched, passed, refused, answered, shadow_refused}],
//  ports: [{port, role, rx_pps, rx_bps, tx_pps, tx_bps, rx_missed_pps, errors_pps}] (the
//  NICs, from "nic"), directions: {outside_to_inside, ...: {rx_pps, tx_pps, tx_failed_pps}}
//  (the workers' frames each way, from "ports")}
// A rule or port only in `after` is left out; the interval comes from sampled_ns when both
// documents have it, else from fallback_interval_s. Null when the interval is not positive.
nlohmann::json stats_rates(const nlohmann::json &before, const nlohmann::json &after,
                           double fallback_interval_s = 0);

// The same rates from a dataplane's start: its counters, which start at 0, over its uptime.
nlohmann::json stats_rates_since_start(const nlohmann::json &stats, double uptime_s);

}  // namespace floodgate
